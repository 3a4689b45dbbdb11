"""Prim specs in an output layer, shared by the syncs that write there."""

from __future__ import annotations

from pxr import Sdf


def over_prim_spec(layer: Sdf.Layer, path: Sdf.Path) -> Sdf.PrimSpec:
    """The prim spec at ``path`` in ``layer``, created as an ``over`` (opinions on an existing prim)."""
    prim_spec = Sdf.CreatePrimInLayer(layer, path)
    if prim_spec.specifier != Sdf.SpecifierDef:
        prim_spec.specifier = Sdf.SpecifierOver
    return prim_spec


def op_order_spec(prim_spec: Sdf.PrimSpec) -> Sdf.AttributeSpec:
    """The prim spec's ``xformOpOrder`` attribute spec (uniform token[]), declared when missing."""
    return prim_spec.attributes.get("xformOpOrder") or Sdf.AttributeSpec(
        prim_spec, "xformOpOrder", Sdf.ValueTypeNames.TokenArray, variability=Sdf.VariabilityUniform
    )
