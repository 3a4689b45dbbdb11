import os
import pathlib
import signal
import subprocess
import sys
import threading
import time

import pytest
import warp as wp

wp.config.log_level = wp.LOG_WARNING
# The tests compile Warp's kernels as usdsim does (newton_usd.cli.common.forward_only_kernels): without their adjoints,
# about 40% less compile time on an empty cache, and one compiled copy that the tests and their usdsim processes
# share. The one test that differentiates (a wp.Tape through Newton's steps) runs in a process of its own.
wp.config.enable_backward = False
# usdsim turns an unexpected exception (a bug of ours) into one line; the tests want its traceback.
os.environ.setdefault("NEWTON_USD_DEBUG", "1")

REPO = pathlib.Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample_stages"
# The sample stages themselves: not what usdsim writes next to them (the README's first command writes
# sample_stages/boxes_on_ground.sim.usda, and a long run its .sim.clips/ directory).
SAMPLE_STAGES = sorted(p.name for p in SAMPLES.glob("*.usda") if not p.name.endswith(".sim.usda"))


USDSIM = os.path.join(os.path.dirname(sys.executable), "usdsim")


def usdsim_command() -> list:
    """The installed console script when there is one, else the module (same code path)."""
    return [USDSIM] if os.path.exists(USDSIM) else [sys.executable, "-m", "newton_usd.cli"]


def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class UsdsimProcess:
    """``usdsim ARGS`` running in the background, its stderr and stdout read as they come by threads of
    their own (a chatty run never blocks on a full pipe, and no line goes to another reader); stderr's
    lines are kept in :attr:`lines`."""

    def __init__(self, *args):
        cmd = usdsim_command() + [str(a) for a in args]
        # Ctrl-C as a terminal delivers it: a shell runs background jobs with SIGINT ignored, and a child
        # inherits that (pytest started with `cmd &` would see usdsim ignore the tests' SIGINT).
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint
        )
        self.lines, self._out = [], []
        self._readers = [
            threading.Thread(target=self._read, args=(pipe, into), daemon=True)
            for pipe, into in ((self.proc.stderr, self.lines), (self.proc.stdout, self._out))
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(pipe, into):
        for line in pipe:
            into.append(line)

    def wait_for(self, ready, timeout=600.0) -> None:
        """Until ``ready()`` holds (polled; no fixed sleep), or fail after ``timeout`` seconds (a cold
        Warp kernel cache on a busy machine is slow: generous) or when usdsim exits first."""
        deadline = time.monotonic() + timeout
        while not ready():
            if self.proc.poll() is not None:
                pytest.fail(f"usdsim exited ({self.proc.returncode}) first:\n{''.join(self.lines)}")
            if time.monotonic() > deadline:
                self.proc.kill()
                pytest.fail(f"not ready after {timeout} s:\n{''.join(self.lines)}")
            time.sleep(0.05)

    def said(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    def finish(self, timeout=120.0):
        """(exit code, stdout, stderr) once it exits (killed after ``timeout`` seconds: the test fails)."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        for reader in self._readers:
            reader.join(timeout)
        return self.proc.returncode, "".join(self._out), "".join(self.lines)


def _compile_one_at_a_time():
    """Under pytest-xdist, a Warp module is compiled by one test process while the others wait for it.

    With an empty kernel cache, two workers that reach the same module (Newton's solvers, MuJoCo-Warp, our own
    kernels) would each compile it, on a machine whose cores they already share. Warp checks its cache before
    compiling (``Module._compile`` returns at once when the module's binary is there), so holding a lock file
    per module directory around that check and the compile makes the second worker load the first one's binary.
    Warp's own file handling stays as it is (it writes into a private directory and renames it into place).
    Without xdist, or on a Warp without ``Module._compile``, nothing changes.
    """
    import fcntl  # noqa: PLC0415

    from warp._src import context  # noqa: PLC0415

    compile_module = getattr(context.Module, "_compile", None)
    if compile_module is None or getattr(compile_module, "_one_at_a_time", False):
        return

    def _compile(self, device=None, output_dir=None, *args, **kwargs):
        if output_dir is None:
            return compile_module(self, device, output_dir, *args, **kwargs)
        os.makedirs(os.path.dirname(os.path.normpath(output_dir)), exist_ok=True)
        with open(os.path.normpath(output_dir) + ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return compile_module(self, device, output_dir, *args, **kwargs)

    _compile._one_at_a_time = True
    context.Module._compile = _compile


if os.environ.get("PYTEST_XDIST_WORKER"):
    _compile_one_at_a_time()


def has_cuda() -> bool:
    try:
        return wp.get_cuda_device_count() > 0
    except Exception:  # noqa: BLE001
        return False


# The test files that take minutes (compiling Newton's or MuJoCo-Warp's kernels on the CPU, many solver steps, starting
# a browser or Kit, many usdsim processes), longest first: they start first, so that under pytest-xdist (a file per
# worker) no worker is left with a long file when the others are done. The first two compile different kernels
# (Newton's solvers', MuJoCo-Warp's) side by side, each worker its own, on an empty kernel cache.
LONG_FILES = (
    "test_newton_solvers.py",
    "test_live_edits.py",
    "test_foreign_stages.py",
    "test_warp_backend.py",
    "test_newton_actuators.py",
    "test_view_browser.py",
    "test_cli.py",
    "test_cone_limit.py",
    "test_kit.py",
    "test_gym_capture.py",
    "test_device_check.py",
    "test_frame_capture.py",
    "test_soft_limits.py",
    "test_solver_mujoco.py",
)


def pytest_configure(config):
    # pytest-xdist's --dist loadfile hands out the files with the most tests first (its --loadscope-reorder, on by
    # default), which undid the order below: a long file of few tests (a browser's, Kit's) started last and ran on
    # alone at the end. Its files go out in the order collected instead. (Without xdist: no such option, nothing.)
    if getattr(config.option, "loadscopereorder", None):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    first = {name: rank for rank, name in enumerate(LONG_FILES)}
    items.sort(key=lambda item: first.get(item.path.name, len(first)))  # stable: the others keep their order
    if has_cuda():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if item.get_closest_marker("gpu") is not None:  # (not item.keywords: a checkout in a folder named gpu)
            item.add_marker(skip)


@pytest.fixture(params=("cpu", pytest.param("cuda", marks=pytest.mark.gpu)))
def device(request):
    """The Warp device a test's model lives on: Warp's CPU device, and CUDA (``gpu``-marked: skipped without
    one; ``pytest -m gpu`` runs only those)."""
    return request.param


@pytest.fixture
def samples():
    return SAMPLES


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    # Tests never write next to the sample stages.
    monkeypatch.chdir(tmp_path)
