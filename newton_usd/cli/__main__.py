"""``python -m newton_usd.cli ...``: the ``usdsim`` command."""

import sys

from . import main

if __name__ == "__main__":  # (imported by the docs' API reference too: then it runs nothing)
    sys.exit(main())
