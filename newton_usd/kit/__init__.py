"""newton_usd inside an Omniverse Kit app: the extension ``newton_usd.kit``.

Add the extension folder to a Kit app and enable it::

    kit my.app.kit --ext-folder "$(python -m newton_usd.kit)" --enable newton_usd.kit

``python -m newton_usd.kit`` prints :data:`EXT_FOLDER`. Inside Kit this package is the extension's
Python module: Kit finds :class:`~newton_usd.kit.extension.NewtonUsdExtension` here. Outside Kit it
imports without Kit (only the folder constants and :mod:`newton_usd.kit.playback`, which is
Kit-free).
"""

from __future__ import annotations

import os

EXT_NAME = "newton_usd.kit"
EXT_FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exts")
"""The folder to give Kit's ``--ext-folder``: it holds the extension ``newton_usd.kit``."""
EXT_PATH = os.path.join(EXT_FOLDER, EXT_NAME)
"""The extension itself (``--ext-path``): config/extension.toml and docs/."""

try:  # Kit looks for the omni.ext.IExt subclass in this module.
    import omni.ext  # noqa: F401
except ImportError:  # plain Python: no Kit
    pass
else:
    from .extension import NewtonUsdExtension, get_extension  # noqa: F401
