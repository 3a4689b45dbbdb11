"""``python -m newton_usd.cli ...``: the ``usdsim`` command."""

import sys

from . import main

sys.exit(main())
