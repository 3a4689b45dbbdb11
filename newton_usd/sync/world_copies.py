"""Copies of the environment for replicated worlds, so that every world can be written and seen.

With ``worlds=N`` the stage's physics is simulated N times, but the stage holds one set of prims: world 0
moves them. :class:`WorldCopies` adds, in a layer of its own (under the output layer), one copy of the
environment per other world: the prims that hold the simulated bodies and static colliders, flattened
(every layer and reference composed) and stripped of physics (no PhysicsScene, joints, physics API
schemas or physics attributes; no lights or cameras either), so that a copy is a picture of its world
and nothing any importer would simulate again. World k's copy of ``/World`` is ``/World_world<k>``, placed
``offsets[k]`` away (stage units, world axes: a grid across the ground plane by default), and the sync
writes world k's bodies onto it. :meth:`remove` takes every copy away.
"""

from __future__ import annotations

import math
import re

import numpy as np
from pxr import Gf, Sdf, Usd, UsdGeom

from .instancer_sync import instance_of
from .specs import op_order_spec

_PHYSICS_SCHEMA = re.compile(r"^(Physics|Physx|PhysX|Mjc|Newton)")
"""Applied API schemas and prim types of physics (UsdPhysics, PhysX, MuJoCo, Newton)."""
_PHYSICS_PROPERTY = re.compile(r"^(physics:|physx|newton:|mjc:|material:binding:physics)")
_NOT_COPIED_TYPES = re.compile(r"(Light|^Camera)$|^LightFilter$")
"""Prim types left out of a copy besides physics ones: a copy should not light the scene twice."""
_OFFSET_OP = "xformOp:translate:worldOffset"


def environment_roots(stage: Usd.Stage, paths) -> list[Sdf.Path]:
    """The prims to copy for a world holding the prims ``paths`` (bodies and static colliders): their
    deepest common ancestor, or, when that is the pseudo-root, each root prim holding one of them."""
    paths = [Sdf.Path(p) for p in paths]
    if not paths:
        return []
    common = paths[0]
    for p in paths[1:]:
        common = common.GetCommonPrefix(p)
    if common != Sdf.Path.absoluteRootPath:
        return [common]
    return sorted({p.GetPrefixes()[0] for p in paths})


def grid_offsets(worlds: int, spacing: float, up_axis: str) -> np.ndarray:
    """World k's place on a square grid across the ground plane (the axes other than ``up_axis``),
    ``spacing`` apart, world 0 at the origin: (worlds, 3) in stage units."""
    side = max(1, math.ceil(math.sqrt(worlds)))
    plane = [a for a in range(3) if a != "XYZ".index(up_axis)]
    out = np.zeros((worlds, 3))
    for k in range(worlds):
        out[k, plane[0]] = (k % side) * spacing
        out[k, plane[1]] = (k // side) * spacing
    return out


def default_spacing(stage: Usd.Stage, roots) -> float:
    """A grid spacing that keeps the copies apart: the environment's widest horizontal extent (of its
    bounding box at the default time) and a quarter more; 1 stage unit when it has no extent."""
    cache = UsdGeom.BBoxCache(Usd.TimeCode.Default(), [UsdGeom.Tokens.default_, UsdGeom.Tokens.render])
    box = Gf.Range3d()
    for root in roots:
        box.UnionWith(cache.ComputeWorldBound(stage.GetPrimAtPath(root)).ComputeAlignedRange())
    if box.IsEmpty():
        return 1.0
    size = np.array(box.GetSize())
    up = "XYZ".index(str(UsdGeom.GetStageUpAxis(stage)))
    width = max(float(size[a]) for a in range(3) if a != up)
    return 1.25 * width if width > 0 else 1.0


class WorldCopies:
    """The environment copied for worlds 1 .. n-1 into ``layer`` (see the module's docstring).

    Args:
        stage: the simulated stage (flattened once, here).
        layer: the layer holding the copies (a sublayer of the session layer, under the output layer).
        roots: the prims to copy (:func:`environment_roots`).
        offsets: (worlds, 3) where each world is placed, stage units and world axes (row 0: world 0,
            unused).
    """

    def __init__(self, stage: Usd.Stage, layer: Sdf.Layer, roots, offsets):
        self.layer = layer
        self.roots = [Sdf.Path(r) for r in roots]
        self.offsets = np.asarray(offsets, dtype=np.float64)
        self.worlds = len(self.offsets)
        flat = stage.Flatten(addSourceFileComment=False)
        cache = UsdGeom.XformCache(Usd.TimeCode.Default())
        with Sdf.ChangeBlock():
            prototypes = set()
            for k in range(1, self.worlds):
                for root in self.roots:
                    dst = self.copy_path(root, k)
                    Sdf.CreatePrimInLayer(layer, dst.GetParentPath())
                    if not Sdf.CopySpec(flat, root, layer, dst):
                        raise RuntimeError(f"could not copy {root} for world {k}")
                    prototypes |= _strip_physics(layer.GetPrimAtPath(dst))
                    parent = stage.GetPrimAtPath(root.GetParentPath())
                    to_parent = (
                        np.linalg.inv(np.array(cache.GetLocalToWorldTransform(parent)))
                        if parent and parent.GetPath() != Sdf.Path.absoluteRootPath
                        else np.eye(4)
                    )
                    _add_offset(layer.GetPrimAtPath(dst), self.offsets[k] @ to_parent[:3, :3])
            for path in sorted(prototypes):  # flattened instancing: the prototypes the copies reference
                if layer.GetPrimAtPath(path) is None and flat.GetPrimAtPath(path) is not None:
                    Sdf.CopySpec(flat, path, layer, path)
                    _strip_physics(layer.GetPrimAtPath(path))

    @staticmethod
    def copy_path(root: Sdf.Path, world: int) -> Sdf.Path:
        """World ``world``'s copy of the environment prim ``root``: a sibling named ``<name>_world<k>``."""
        return root.GetParentPath().AppendChild(f"{root.name}_world{world}")

    def label(self, label: str, world: int) -> str | None:
        """The prim path that shows world ``world``'s element ``label`` (a prim path of world 0, or a
        PointInstancer instance ``"/Path[i]"``); None when it lies outside the copied prims."""
        if world == 0:
            return label
        of = instance_of(label)
        path = Sdf.Path(of[0] if of else label)
        for root in self.roots:
            if path.HasPrefix(root):
                moved = str(path.ReplacePrefix(root, self.copy_path(root, world)))
                return f"{moved}[{of[1]}]" if of else moved
        return None

    def remove(self) -> None:
        """Take every copy out of the layer."""
        with Sdf.ChangeBlock():
            for root in list(self.layer.rootPrims):
                del self.layer.rootPrims[root.name]


def _strip_physics(spec: Sdf.PrimSpec) -> set:
    """Remove physics from the copied prim ``spec`` and its descendants: physics prims (and lights and
    cameras) go, physics API schemas and properties are taken off. Returns the paths of the flattened
    prototypes the copy references (instanceable prims)."""
    prototypes = set()
    for child in list(spec.nameChildren):
        if _PHYSICS_SCHEMA.match(child.typeName) or _NOT_COPIED_TYPES.search(child.typeName):
            del spec.nameChildren[child.name]
        else:
            prototypes |= _strip_physics(child)
    schemas = spec.GetInfo("apiSchemas") if spec.HasInfo("apiSchemas") else None
    if schemas is not None:

        def keep(items):
            return [s for s in items if not _PHYSICS_SCHEMA.match(s)]

        if schemas.isExplicit:
            kept = Sdf.TokenListOp.CreateExplicit(keep(schemas.explicitItems))
        else:
            kept = Sdf.TokenListOp.Create(
                prependedItems=keep(schemas.prependedItems),
                appendedItems=keep(schemas.appendedItems),
                deletedItems=keep(schemas.deletedItems),
            )
        # (nothing weaker composes under a copy: an empty list is no list)
        if kept.explicitItems or kept.prependedItems or kept.appendedItems or kept.deletedItems:
            spec.SetInfo("apiSchemas", kept)
        else:
            spec.ClearInfo("apiSchemas")
    for prop in list(spec.properties):
        if _PHYSICS_PROPERTY.match(prop.name):
            spec.RemoveProperty(prop)
    for item in spec.referenceList.GetAddedOrExplicitItems():
        if not item.assetPath and item.primPath.IsAbsolutePath() and item.primPath.IsRootPrimPath():
            prototypes.add(item.primPath)
    return prototypes


def _add_offset(spec: Sdf.PrimSpec, offset) -> None:
    """Move a copy's root by ``offset`` (in its parent's frame): a translate op first in its op order."""
    attr = Sdf.AttributeSpec(spec, _OFFSET_OP, Sdf.ValueTypeNames.Double3)
    attr.default = Gf.Vec3d(*(float(v) for v in offset))
    order_spec = op_order_spec(spec)
    order = list(order_spec.default or [])
    reset = order[:1] == ["!resetXformStack!"]
    order_spec.default = (order[:1] if reset else []) + [_OFFSET_OP] + (order[1:] if reset else order)
    if not spec.typeName:
        spec.typeName = "Xform"
