"""``usdsim batch``: a sweep from the command line or a sweep file.

    usdsim batch STAGE... [--vary PRIM.ATTR=V1,V2,... ...] -o DIR [--jobs N] [--ray auto|ADDRESS]
    usdsim batch --sweep SWEEP.toml [-o DIR] ...

Exit status: 0 every run ended with exit 0; 1 some did not (their rows say why); 2 bad input (the
sweep, an option; nothing runs); 130 interrupted (the finished runs' rows are written).
"""

from __future__ import annotations

import argparse
import logging
import sys

from ..batch.spec import RUN_OPTIONS, split_values
from ..run_options import run_parser
from .common import EXIT_INPUT, EXIT_INTERRUPTED

EXIT_RUNS_FAILED = 1


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="usdsim batch",
        description="Simulate many runs: every STAGE with every combination of the --vary values (and the "
        "sweep file's grid and random samples), each run in a process of its own, on this machine's cores "
        "(or as Ray tasks with --ray). Each run writes its output stage under DIR/runs/; one row per run goes "
        "into DIR/runs.csv (and DIR/runs.parquet with pyarrow).",
    )
    p.add_argument("stages", nargs="*", metavar="STAGE", help="stages to run (paths or globs)")
    p.add_argument("--sweep", metavar="FILE", help="a sweep file (TOML or JSON): stages, grid, random, options")
    p.add_argument("-o", "--output", metavar="DIR", help="the output directory (runs/, runs.csv)")
    p.add_argument(
        "--vary", action="append", default=[], metavar="PRIM.ATTR=V1,V2,...",
        help="one axis of the grid: the attribute's values, parsed by its type as --set does (repeatable; "
        "vectors in brackets: --vary '/World.v=(0,0,1),(0,1,0)')",
    )  # fmt: skip
    p.add_argument(
        "--record", action="append", default=[], metavar="PRIM|PRIM.ATTR",
        help="columns of the final world pose of PRIM (x y z qx qy qz qw) or the final value of PRIM.ATTR "
        "(repeatable)",
    )  # fmt: skip
    p.add_argument("-j", "--jobs", type=int, help="runs at once on this machine (default: its cores)")
    p.add_argument(
        "--ray", metavar="auto|ADDRESS",
        help="run each run as a Ray task: auto (the running Ray cluster, else a local one) or a cluster address",
    )  # fmt: skip
    p.add_argument("--timeout", type=float, metavar="S", help="kill a run after S seconds (its row says so)")
    p.add_argument("--resume", action="store_true", help="skip runs already done in DIR whose inputs are unchanged")
    p.add_argument(
        "--isolation", choices=("fork", "subprocess"),
        help="each run's process: forked from a server that has imported usdsim once (fork, default), or a "
        "fresh interpreter (subprocess)",
    )  # fmt: skip
    p.add_argument("--retries", type=int, help="Ray: retries of a task whose worker died (default 3)")
    p.add_argument("--cpus-per-run", type=float, help="Ray: CPUs each task declares (default 1)")
    p.add_argument("--gpus-per-run", type=float, help="Ray: GPUs each task declares (default 1 on cuda, else 0)")
    p.add_argument("--format", choices=("human", "json"), default="human", help="the closing summary's format")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary")
    p.add_argument("-v", "--verbose", action="store_true", help="tracebacks on errors")
    run = p.add_argument_group("run options (as usdsim run's, the same for every run)")
    for action in run_parser()._actions:
        if action.dest in RUN_OPTIONS or action.dest == "set":
            run._add_action(action)
    return p


def main(argv) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(format="usdsim: warning: %(message)s", level=logging.WARNING)
    from ..batch.plan import run_option_actions  # noqa: PLC0415
    from ..batch.spec import Sweep, check_sweep, load_sweep  # noqa: PLC0415
    from ..batch.sweep import run_sweep  # noqa: PLC0415
    from ..errors import NewtonUsdError  # noqa: PLC0415

    try:
        sweep = load_sweep(args.sweep) if args.sweep else Sweep()
        sweep.stages += args.stages
        sweep.overrides += args.set
        sweep.record += args.record
        for text in args.vary:
            attr, sep, values = text.partition("=")
            if not sep or not values.strip():
                raise NewtonUsdError(f"--vary wants PRIM.ATTR=V1,V2,..., got {text!r}")
            sweep.grid[attr.strip()] = split_values(values)
        for name, action in run_option_actions().items():
            if getattr(args, name) != action.default:  # given on the command line: over the sweep file's
                sweep.options[name] = getattr(args, name)
        check_sweep(sweep)
        result = run_sweep(
            sweep, args.output, jobs=args.jobs, ray=args.ray, timeout=args.timeout, resume=args.resume,
            isolation=args.isolation, retries=args.retries, cpus_per_run=args.cpus_per_run,
            gpus_per_run=args.gpus_per_run, progress=not args.quiet,
        )  # fmt: skip
    except NewtonUsdError as e:
        if args.verbose:
            import traceback  # noqa: PLC0415

            traceback.print_exc()
        print(f"usdsim: error: {e}", file=sys.stderr)
        return EXIT_INPUT
    _report(result, args)
    if result.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_RUNS_FAILED if result.failed else 0


def _report(result, args) -> None:
    failed = result.failed
    if args.format == "json":
        import json  # noqa: PLC0415

        record = {"runs": len(result.rows), "ran": result.ran, "resumed": len(result.rows) - result.ran,
                  "failed": len(failed), "interrupted": result.interrupted, "csv": result.csv,
                  "parquet": result.parquet}  # fmt: skip
        print(json.dumps(record, indent=2))
        return
    if args.quiet:
        return
    resumed = len(result.rows) - result.ran
    print(f"usdsim batch: {len(result.rows)} runs ({result.ran} ran, {resumed} resumed), {len(failed)} failed"
          + (" (interrupted: the finished runs' rows are kept)" if result.interrupted else ""))  # fmt: skip
    for row in failed[:5]:
        print(f"  run {row['index']} ({row['run']}): {row['status']}, exit {row['exit_code']}: {row['error']}")
    if len(failed) > 5:
        print(f"  and {len(failed) - 5} more (see the table)")
    print(f"usdsim batch: wrote {result.csv}" + (f" and {result.parquet}" if result.parquet else ""))
