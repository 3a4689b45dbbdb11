"""``usdsim ARGS`` for the tests, each run in a process forked from a server that has imported what a run needs.

A fresh ``usdsim`` spends seconds importing USD's plugins, Warp and Newton before it opens the stage; the
tests run it dozens of times. Here each run is a process of its own as before (its exit status, its stdout and
stderr, nothing shared with the test or another run), forked from multiprocessing's forkserver preloaded with
the modules a run imports: the server ``usdsim batch`` uses for the same reason (``newton_usd.batch.worker.PRELOAD``).
The tests that are about the console script itself (Ctrl-C, the installed entry point) still start it.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import tempfile
import traceback


def _usdsim(argv, cwd, env, out_path, err_path):  # (in the forked process)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    for fd, path in ((1, out_path), (2, err_path)):
        with open(path, "w") as f:
            os.dup2(f.fileno(), fd)
    sys.argv = ["usdsim", *argv]
    try:
        from newton_usd.cli import main  # noqa: PLC0415

        code = main(argv)
    except SystemExit as e:  # argparse's usage errors, as the console script ends
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001  (an uncaught exception: its traceback and 1, as Python's own exit)
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def run_usdsim(argv, timeout=600.0) -> subprocess.CompletedProcess:
    """``usdsim argv`` in the current directory and environment: a ``CompletedProcess`` with its exit status,
    stdout and stderr (``subprocess.TimeoutExpired`` after ``timeout`` seconds, the run killed)."""
    from newton_usd.batch.launch import _main_module_hidden  # noqa: PLC0415  (pytest's __main__ left out)
    from newton_usd.batch.worker import PRELOAD  # noqa: PLC0415

    argv = [str(a) for a in argv]
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    with tempfile.TemporaryDirectory(prefix="usdsim-") as streams:
        out_path, err_path = os.path.join(streams, "stdout"), os.path.join(streams, "stderr")
        process = context.Process(target=_usdsim, args=(argv, os.getcwd(), dict(os.environ), out_path, err_path))
        with _main_module_hidden():
            process.start()
        process.join(timeout)
        if process.exitcode is None:
            process.kill()
            process.join()
            raise subprocess.TimeoutExpired(["usdsim", *argv], timeout)
        with open(out_path) as out, open(err_path) as err:
            return subprocess.CompletedProcess(["usdsim", *argv], process.exitcode, out.read(), err.read())
