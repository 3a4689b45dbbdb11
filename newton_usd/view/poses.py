"""World matrices of prims at many time codes, fast for what recordings hold.

``UsdGeom.XformCache`` costs about 20 microseconds per prim and time code (12 s for 1,000 bodies over 600
frames). A recording's bodies are *movers*: prims whose own ops are time-sampled under static parents,
with the ops ``usdsim`` writes (translate, orient, optional scale; or one transform matrix). For those the
samples are read in one call per attribute (the layer's ``timeSamples`` dictionary) and composed with
numpy; a mover that does not fit (value clips, layer offsets, other ops, a moving parent) is read through
the XformCache, and the result is the same.
"""

from __future__ import annotations

import numpy as np
from pxr import Sdf, Usd, UsdGeom, Vt

_FAST_OPS = {
    UsdGeom.XformOp.TypeTranslate,
    UsdGeom.XformOp.TypeOrient,
    UsdGeom.XformOp.TypeScale,
    UsdGeom.XformOp.TypeTransform,
}


def mover_of(prim) -> Usd.Prim | None:
    """The nearest ancestor-or-self of ``prim`` whose transform may vary in time (None: a static prim)."""
    p = prim
    found = None
    while p and p.GetPath() != Sdf.Path.absoluteRootPath:
        xf = UsdGeom.Xformable(p)
        if xf and xf.TransformMightBeTimeVarying():
            found = found or p
        p = p.GetParent()
    return found


def world_matrices(prims, times) -> np.ndarray:
    """(T, N, 4, 4) row-vector local-to-world matrices of ``prims`` at ``times`` (NaN: the default time)."""
    out = np.empty((len(times), len(prims), 4, 4))
    if not len(prims):
        return out
    slow = []
    for j, prim in enumerate(prims):
        fast = _fast(prim, times)
        if fast is None:
            slow.append(j)
        else:
            out[:, j] = fast
    if slow:
        cache = UsdGeom.XformCache()
        chosen = [prims[j] for j in slow]
        for f, t in enumerate(times):
            cache.SetTime(code(t))
            out[f, slow] = np.array(Vt.Matrix4dArray([cache.GetLocalToWorldTransform(p) for p in chosen]))
    return out


def code(t) -> Usd.TimeCode:
    return Usd.TimeCode.Default() if np.isnan(t) else Usd.TimeCode(float(t))


def _fast(prim, times):
    """The mover's world matrices from its raw time samples, or None where that is not exact."""
    xf = UsdGeom.Xformable(prim)
    if not xf or np.isnan(times[0]):
        return None
    ops = xf.GetOrderedXformOps()
    if xf.GetResetXformStack() or not ops or any(op.GetOpType() not in _FAST_OPS for op in ops):
        return None
    parent = prim.GetParent()
    if mover_of(parent) is not None:
        return None
    parent_world = np.array(UsdGeom.XformCache().GetLocalToWorldTransform(parent)) if parent else np.eye(4)
    local = np.broadcast_to(np.eye(4), (len(times), 4, 4)).copy()
    for op in reversed(ops):  # row vectors: M = op_last ... op_first, so the first op is rightmost
        values = _samples(op, times)
        if values is None:
            return None
        m = _op_matrices(op, values)
        if m is None:
            return None
        if op.IsInverseOp():
            m = np.linalg.inv(m)
        local = local @ m
    return local @ parent_world


def _samples(op, times):
    """The op's values at ``times`` (an array of T values), read from its strongest spec in one call."""
    attr = op.GetAttr()
    if not attr.ValueMightBeTimeVarying():
        value = attr.Get(Usd.TimeCode.Default())
        if value is None:
            return None
        one = np.array(_vt_array([value]), dtype=np.float64)
        return np.broadcast_to(one[0], (len(times),) + one.shape[1:])
    info = attr.GetResolveInfo(code(times[0]))
    if info.GetSource() != Usd.ResolveInfoSourceTimeSamples:
        return None  # value clips, or a default stronger than the samples
    spec = None
    for s in attr.GetPropertyStack(code(times[0])):
        if s.HasInfo("timeSamples") or s.HasInfo("default"):
            spec = s
            break
    if spec is None or not spec.HasInfo("timeSamples"):
        return None
    samples = spec.GetInfo("timeSamples")  # a dict sorted by time: one call for every sample
    keys = np.fromiter(samples.keys(), float, len(samples))
    start = int(np.searchsorted(keys, times[0]))
    if start + len(times) > len(keys) or not np.array_equal(keys[start : start + len(times)], times):
        return None  # a frame between samples: USD interpolates; the XformCache does it right
    values = list(samples.values())[start : start + len(times)]
    array = np.array(_vt_array(values))
    # A layer offset (a sublayer or reference retimed) would map these keys elsewhere: check two frames.
    for k in (0, len(times) - 1):
        expect = np.array(_vt_array([attr.Get(code(times[k]))]))[0]
        if np.abs(expect - array[k]).max() > 1e-9 * (1.0 + np.abs(expect).max()):
            return None
    return array


def _vt_array(values):
    first = values[0]
    kinds = {
        "Vec3d": Vt.Vec3dArray,
        "Vec3f": Vt.Vec3fArray,
        "Quatd": Vt.QuatdArray,
        "Quatf": Vt.QuatfArray,
        "Quath": Vt.QuathArray,
        "Matrix4d": Vt.Matrix4dArray,
    }
    kind = kinds.get(type(first).__name__)
    return kind(values) if kind else values


def _op_matrices(op, values) -> np.ndarray | None:
    t = op.GetOpType()
    n = len(values)
    m = np.broadcast_to(np.eye(4), (n, 4, 4)).copy()
    if t == UsdGeom.XformOp.TypeTranslate:
        m[:, 3, :3] = values
    elif t == UsdGeom.XformOp.TypeScale:
        m[:, 0, 0], m[:, 1, 1], m[:, 2, 2] = values[:, 0], values[:, 1], values[:, 2]
    elif t == UsdGeom.XformOp.TypeOrient:
        # Gf quaternions read as arrays are (i, j, k, real).
        x, y, z, w = (values[:, k] for k in range(4))
        norm = np.sqrt(x * x + y * y + z * z + w * w)
        x, y, z, w = x / norm, y / norm, z / norm, w / norm
        # The row-vector rotation matrix (the transpose of the column-vector one).
        m[:, 0, :3] = np.stack([1 - 2 * (y * y + z * z), 2 * (x * y + z * w), 2 * (x * z - y * w)], axis=1)
        m[:, 1, :3] = np.stack([2 * (x * y - z * w), 1 - 2 * (x * x + z * z), 2 * (y * z + x * w)], axis=1)
        m[:, 2, :3] = np.stack([2 * (x * z + y * w), 2 * (y * z - x * w), 1 - 2 * (x * x + y * y)], axis=1)
    elif t == UsdGeom.XformOp.TypeTransform:
        m[:] = values.reshape(n, 4, 4)
    else:
        return None
    return m
