"""``usdsim compare MODEL.xml STAGE``: native MuJoCo's model of an MJCF against ours of the stage (see
:mod:`newton_usd.compare`)."""

from __future__ import annotations

from .common import init_warp


def main(argv) -> int:
    """Warp started quietly (unless only help is asked), then :func:`newton_usd.compare.main`."""
    from ..compare import main as compare  # noqa: PLC0415

    if not {"-h", "--help"} & set(argv):
        init_warp(bool({"-v", "--verbose"} & set(argv)))
    return compare(argv)
