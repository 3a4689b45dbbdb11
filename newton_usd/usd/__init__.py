"""USD in: opening stages, their units, and the UsdPhysics importer.

The names load on first use (the importer pulls in Warp and the builder): ``import newton_usd``, which
registers the schemas through :mod:`newton_usd.usd.schemas`, stays light, so that ``usdsim`` handles a
Ctrl-C during its slow imports itself."""

import importlib

_EXPORTS = {
    "Scenes": ".scenes",
    "StageFrame": ".stage",
    "UsdImport": ".importer",
    "add_usd": ".importer",
    "open_stage": ".stage",
    "physics_scenes": ".scenes",
    "read_scenes": ".scenes",
    "scenes_to_import": ".scenes",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
