"""MuJoCo's ``<option>`` as a PhysicsScene with MjcSceneAPI: gravity, the exact time step, every option and flag."""

from __future__ import annotations

import mujoco
import numpy as np
from pxr import Gf, Usd, UsdPhysics

from ..importer import (
    OPTION_ENUMS,
    OPTION_VALUES,
    OPTION_VECTORS,
    enum_token,
)
from .prims import T, set_attr


def write_scene(stage, m):
    scene = UsdPhysics.Scene.Define(stage, "/PhysicsScene")
    g = np.array(m.opt.gravity, dtype=np.float64)
    n = float(np.linalg.norm(g))
    scene.CreateGravityDirectionAttr(Gf.Vec3f(*map(float, g / n)) if n > 0 else Gf.Vec3f(0, 0, -1))
    scene.CreateGravityMagnitudeAttr(n)
    prim = scene.GetPrim()
    prim.ApplyAPI("MjcSceneAPI")
    set_attr(prim, "mjc:compiler:angle", T.Token, "radian")  # every angle written here is in radians
    for name, (prefix, enum) in OPTION_ENUMS.items():
        set_attr(prim, f"mjc:option:{name}", T.Token, enum_token(getattr(m.opt, name), enum, prefix))
    for name in OPTION_VALUES:
        value = getattr(m.opt, name)
        is_int = isinstance(value, (int, np.integer))
        set_attr(prim, f"mjc:option:{name}", T.Int if is_int else T.Double, int(value) if is_int else float(value))
    for name in OPTION_VECTORS:
        value = [float(x) for x in getattr(m.opt, name)]
        if name in ("wind", "magnetic"):
            set_attr(prim, f"mjc:option:{name}", T.Double3, Gf.Vec3d(*value))
        else:
            set_attr(prim, f"mjc:option:{name}", T.DoubleArray, value)
    schema = Usd.SchemaRegistry().FindAppliedAPIPrimDefinition("MjcSceneAPI")
    flag_names = [p.split(":")[-1] for p in schema.GetPropertyNames() if p.startswith("mjc:flag:")] if schema else []
    for flag in flag_names:
        disable = getattr(mujoco.mjtDisableBit, f"mjDSBL_{flag.upper()}", None)
        enable = getattr(mujoco.mjtEnableBit, f"mjENBL_{flag.upper()}", None)
        if disable is not None:
            set_attr(prim, f"mjc:flag:{flag}", T.Bool, not (m.opt.disableflags & int(disable)))
        elif enable is not None:
            set_attr(prim, f"mjc:flag:{flag}", T.Bool, bool(m.opt.enableflags & int(enable)))
