"""``usdsim``: simulate a USD stage headless and write the motion to an output stage::

    usdsim STAGE [-o OUT | --flatten | --in-place] [-n FRAMES | --duration S] [--fps F] [--dt S | --substeps N]
                 [--device cpu|cuda] [--solver mujoco|xpbd|featherstone|semi_implicit|kamino]
                 [--backend auto|cpu|warp] [--worlds N | --envs PRIM]
                 [--write-worlds first|all [--world-spacing D]] [--record-every N] [--xform-ops trs|matrix]
                 [--clip-frames K] [--set PRIM.ATTR=VALUE ...] [--benchmark] [--format human|json] [-q]
                 [--max-distance M] [--max-speed V] [--mujoco-memory MIB]
    usdsim explain STAGE [PRIM ...]     each resolved and UsdPhysics value (SI) and where it came from
    usdsim check STAGE [--solver NAME]  what is ignored or approximated, colliders that start in each other,
                                        and authored values not used
    usdsim convert MODEL.xml [-o OUT]   an MJCF model to a USD asset (UsdPhysics + mjc:* schemas)
                 [--fix-base source|fixed|floating] [--no-scene] [--no-self-collision]
                 [--collision-from-visuals convexHull|convexDecomposition|boundingSphere|boundingCube]
                 [--merge-meshes]
    usdsim compare MODEL.xml STAGE      native MuJoCo's model of the MJCF against ours of the stage: the fields
                 [--format human|json]  that differ and the dynamics beside native's own sensitivity
    usdsim info STAGE [--envs PRIM]     units, time range, what the model holds (per world), how it would be simulated,
                                        the PhysicsScenes (gravity, bodies) when there are several
    usdsim batch STAGE... [--vary PRIM.ATTR=V1,V2,...] -o DIR [--jobs N] [--ray auto|ADDRESS] [run options]
    usdsim batch --sweep SWEEP.toml -o DIR   many runs: a grid and random samples of overrides, a table of results
    usdsim view STAGE [-o PAGE.html] [--colliders] [--serve [--port N]]   a web page playing a recording
    usdsim video STAGE [-o OUT.mp4] [--size 640x480] [--fps F]            an MP4 of a recording (offscreen, CPU)

(``usdsim run STAGE ...`` is the same as ``usdsim STAGE ...``.) Errors in the input print one line
naming the file and what is wrong, and exit with status 2; ``--verbose`` adds the traceback and
warnings' detail. A simulation that blows up (NaN, a body beyond --max-distance or --max-speed, MuJoCo's
arena full) saves what it recorded, names the frame and body, and exits with status 3; Ctrl-C, at any
moment, saves the frames so far and exits with status 130. An unexpected exception (a bug) is one line
and exit 1 (-v or NEWTON_USD_DEBUG=1: the traceback).
"""

from __future__ import annotations

import importlib
import os
import sys

from ..run_options import DEFAULT_CLIP_FRAMES
from .common import EXIT_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_SIMULATION, WRITE_BATCH, forward_only_kernels

__all__ = ["COMMANDS", "DEFAULT_CLIP_FRAMES", "EXIT_INPUT", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_SIMULATION",
           "WRITE_BATCH", "main"]  # fmt: skip

COMMANDS = {
    "run": "run:main",
    "explain": "explain:explain",
    "check": "explain:check",
    "convert": "convert:main",
    "compare": "compare:main",
    "info": "info:main",
    "batch": "batch:main",
    "view": "view:view",
    "video": "view:video",
}
"""``usdsim COMMAND`` -> ``"module:function"`` in this package that runs it: ``function(argv) -> exit status``.
A new subcommand is a new module here and one line in this table. The module is imported when its command runs
(``usdsim --help`` and a Ctrl-C during the slow imports stay the command's own business)."""


def main(argv=None) -> int:
    """Run ``usdsim`` with ``argv`` (default: the process's arguments) and return its exit status: 0, 1 (a bug of
    ours, one line), 2 (bad input), 3 (the simulation blew up) or 130 (interrupted)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _main(argv)
    except KeyboardInterrupt:  # before the simulation started: nothing to save
        print("usdsim: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader went away (`usdsim explain ... | head`): its choice, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when Python flushes
        return 0
    except Exception as e:  # a bug of ours, not the input's: one line, the traceback on request
        if os.environ.get("NEWTON_USD_DEBUG") or "-v" in argv or "--verbose" in argv:
            raise
        print(f"usdsim: internal error: {type(e).__name__}: {e} (-v or NEWTON_USD_DEBUG=1 shows the traceback; "
              "please report it with the stage)", file=sys.stderr)  # fmt: skip
        return EXIT_INTERNAL


def _main(argv) -> int:
    command = argv[0] if argv and argv[0] in COMMANDS else "run"
    if argv and argv[0] == command:
        argv = argv[1:]
    if not {"-h", "--help"} & set(argv):  # (--help stays instant: no Warp import)
        forward_only_kernels()
    module, function = COMMANDS[command].split(":")
    return getattr(importlib.import_module(f".{module}", __name__), function)(argv)
