"""The ``usdsim`` console script: a module outside the ``newton_usd`` package, so that a Ctrl-C while
Python imports newton_usd (USD's libraries take about a second) ends with "usdsim: interrupted" and
exit 130, as a Ctrl-C at any later moment does, not with a traceback."""

import sys


def main() -> int:
    try:
        from newton_usd.cli import main as usdsim  # noqa: PLC0415
    except KeyboardInterrupt:
        print("usdsim: interrupted", file=sys.stderr)
        return 130  # newton_usd.cli.EXIT_INTERRUPTED (not imported: importing it is what was interrupted)
    return usdsim()


if __name__ == "__main__":
    sys.exit(main())
