"""Prim specs in an output layer, shared by the syncs that write there."""

from __future__ import annotations

from pxr import Sdf


def over_prim_spec(layer: Sdf.Layer, path: Sdf.Path) -> Sdf.PrimSpec:
    """The prim spec at ``path`` in ``layer``, created as an ``over`` (opinions on an existing prim)."""
    prim_spec = Sdf.CreatePrimInLayer(layer, path)
    if prim_spec.specifier != Sdf.SpecifierDef:
        prim_spec.specifier = Sdf.SpecifierOver
    return prim_spec
