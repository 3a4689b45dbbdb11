"""USD's UsdPhysics parse of a stage: object type -> [(prim path, descriptor)].

``UsdPhysics.LoadUsdPhysicsFromRange`` reads the standard schemas (bodies, colliders with their poses
relative to their body, joints with their local frames) into descriptors; the other modules of the
importer turn those into builder calls. Also the object types and axis tokens they share.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict

from pxr import Tf, UsdPhysics

from ..errors import UsdInputError

DEG = math.pi / 180.0
OT = UsdPhysics.ObjectType
SHAPE_TYPES = (
    OT.CubeShape,
    OT.SphereShape,
    OT.CapsuleShape,
    OT.Capsule1Shape,
    OT.CylinderShape,
    OT.Cylinder1Shape,
    OT.ConeShape,
    OT.PlaneShape,
    OT.MeshShape,
    OT.SpherePointsShape,
    OT.CustomShape,
)
AXIS_VECTORS = {"X": (1.0, 0.0, 0.0), "Y": (0.0, 1.0, 0.0), "Z": (0.0, 0.0, 1.0)}

_LOAD = getattr(UsdPhysics, "UsdPhysicsLoadStageFromPrimRange", None) or UsdPhysics.LoadUsdPhysicsFromRange

_TOKENS = getattr(UsdPhysics, "UsdPhysicsCustomTokens", None) or UsdPhysics.CustomUsdPhysicsTokens


def load_descriptors(stage, roots=("/",), exclude=(), owners=None):
    """USD's parse of ``roots`` (less ``exclude``): object type -> [(path, desc)]; with ``owners`` (scene
    paths, the empty path for "no owner"), only the objects those scenes simulate."""
    try:
        if owners is not None:
            result = _LOAD(stage, list(roots), list(exclude), _TOKENS(), list(owners))
        elif exclude:
            result = _LOAD(stage, list(roots), list(exclude))
        else:
            result = _LOAD(stage, list(roots))
    except Tf.ErrorException as e:  # USD's parser met a value it cannot use (e.g. an xformOp of the wrong type)
        said = re.findall(r"Error in '[^']*' at line \d+ in file [^:]*: '(.*)'", str(e))
        file = stage.GetRootLayer().identifier
        raise UsdInputError(f"USD's UsdPhysics parser: {said[0] if said else str(e).strip()}", file=file) from None
    out = defaultdict(list)
    for obj_type, (paths, descs) in result.items():
        for path, desc in zip(paths, descs, strict=True):
            out[obj_type].append((path, desc))
    return out


def axis_token(axis) -> str:
    key = (type(axis), axis)
    name = _AXIS_TOKENS.get(key)
    if name is None:
        name = str(axis).split(".")[-1]
        name = _AXIS_TOKENS[key] = name if name in AXIS_VECTORS else "Z"
    return name


_AXIS_TOKENS = {}  # UsdPhysics.Axis value -> "X", "Y" or "Z" (str() of a Boost.Python enum is slow)
