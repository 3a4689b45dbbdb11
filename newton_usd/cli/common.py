"""What every ``usdsim`` subcommand shares: exit statuses, the one-line error, Warp's quiet start, counted nouns."""

from __future__ import annotations

import os
import sys

EXIT_INTERNAL = 1  # an unexpected exception: a bug of newton_usd (NEWTON_USD_DEBUG=1 or -v: the traceback)
EXIT_INPUT = 2
EXIT_SIMULATION = 3
EXIT_INTERRUPTED = 130
WRITE_BATCH = 32  # recorded frames written onto the stage together (Simulation.write_batch)


def forward_only_kernels() -> None:
    """usdsim never differentiates, so Warp compiles the kernels it runs (ours, Newton's) without their adjoints:
    about 40% less compile time on an empty kernel cache (Newton's XPBD path on the CPU: 95 s instead of 165 s).

    Warp reads ``config.enable_backward`` when a kernel module is created (imported), so this runs before any
    is; a process that imported Warp itself (a notebook calling :func:`newton_usd.cli.main`, the tests) keeps
    its own choice. MuJoCo-Warp's modules already compile forward only."""
    if "warp" in sys.modules:
        return
    import warp as wp  # noqa: PLC0415

    wp.config.enable_backward = False


def init_warp(verbose: bool) -> None:
    """Initialize Warp without its banner; without --verbose, also without the native CUDA driver
    warning that every run on a machine without a GPU would otherwise print."""
    import warp as wp  # noqa: PLC0415  (slow imports after argument checks, so --help is instant)

    if verbose:
        wp.init()
        return
    wp.config.log_level = wp.LOG_WARNING
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            wp.init()
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def count(n: int, noun: str) -> str:
    """``n`` and the noun, plural unless ``n`` is 1: "1 body", "3 bodies", "0 equalities"."""
    if n == 1:
        return f"1 {noun}"
    return f"{n} {noun[:-1] + 'ies' if noun.endswith('y') and noun[-2:-1] not in 'aeiou' else noun + 's'}"


def listed(items, most: int = 3) -> str:
    """``items`` joined by commas, the first ``most`` and the last when there are more."""
    items = list(items)
    return ", ".join(items if len(items) <= most else [*items[: most - 1], "...", items[-1]])


def fail(message: str, args) -> int:
    if args.verbose:
        import traceback  # noqa: PLC0415

        traceback.print_exc()
    print(f"usdsim: error: {message}", file=sys.stderr)
    return EXIT_INPUT
