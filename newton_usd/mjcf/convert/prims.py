"""Writing the converter's prims: unique valid prim names (the MJCF name kept as displayName), attributes,
transforms, quaternions in Gf's order."""

from __future__ import annotations

import math

import mujoco
import numpy as np
from pxr import Gf, Sdf, Tf, UsdGeom

T = Sdf.ValueTypeNames

DEG = 180.0 / math.pi


def gf_quat(q_xyzw, gf=Gf.Quatf):
    return gf(float(q_xyzw[3]), float(q_xyzw[0]), float(q_xyzw[1]), float(q_xyzw[2]))


def quat_from_to(source, axis) -> np.ndarray:
    """A Warp-order quaternion rotating unit vector ``source`` onto the direction ``axis``."""
    a = np.asarray(axis, dtype=np.float64)
    a = a / np.linalg.norm(a)
    x = np.asarray(source, dtype=np.float64)
    c = float(np.dot(x, a))
    if c < -1.0 + 1e-12:  # opposite: half a turn about any perpendicular axis
        perp = np.cross(x, [1.0, 0.0, 0.0] if abs(x[0]) < 0.9 else [0.0, 1.0, 0.0])
        return np.append(perp / np.linalg.norm(perp), 0.0)
    v = np.cross(x, a)
    q = np.array([v[0], v[1], v[2], 1.0 + c])
    return q / np.linalg.norm(q)


def quat_x_to(axis) -> np.ndarray:
    """A Warp-order quaternion rotating +X onto unit ``axis``."""
    return quat_from_to((1.0, 0.0, 0.0), axis)


class MjcfName(str):
    """An MJCF element's own name (not one made up here for an unnamed element)."""


def mjcf_name(m, obj, i, fallback):
    n = mujoco.mj_id2name(m, obj, i)
    return MjcfName(n) if n else f"{fallback}_{i}"


class PrimNames:
    """Unique, valid prim names; where a prim's name is not its MJCF element's name (made a valid
    identifier, or made unique with a ``_<n>`` suffix), the MJCF name is kept as its displayName."""

    def __init__(self):
        self.used = set()
        self.display = {}

    def child(self, parent: Sdf.Path, name: str) -> Sdf.Path:
        base = Tf.MakeValidIdentifier(name) or "prim"
        candidate, n = base, 1
        while parent.AppendChild(candidate) in self.used:
            n += 1
            candidate = f"{base}_{n}"
        path = parent.AppendChild(candidate)
        self.used.add(path)
        if isinstance(name, MjcfName) and candidate != name:
            self.display[path] = str(name)
        return path

    def set_display_names(self, stage) -> None:
        for path, name in self.display.items():
            prim = stage.GetPrimAtPath(path)
            if prim:
                prim.SetDisplayName(name)


def set_attr(prim, name, type_name, value):
    prim.CreateAttribute(name, type_name, custom=False).Set(value)


def set_xform(prim, pose):
    xf = UsdGeom.Xformable(prim)
    xf.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Vec3d(*map(float, pose[0])))
    xf.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(gf_quat(pose[1], Gf.Quatd))


def materials_scope(stage, root):
    path = root.AppendChild("PhysicsMaterials")
    if not stage.GetPrimAtPath(path):
        UsdGeom.Scope.Define(stage, path)
    return path


def warn_tracking(mode, what, path, diag):
    mode = mujoco.mjtCamLight(int(mode)).name.split("_", 1)[1].lower()
    if mode != "fixed":
        diag.add(f"{what} mode {mode!r} is not converted: the {what} stays fixed to its body", path)
