"""``python -m newton_usd.kit``: print the extension folder to give Kit's ``--ext-folder``."""

from . import EXT_FOLDER

print(EXT_FOLDER)
