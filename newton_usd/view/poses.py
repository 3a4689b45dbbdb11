"""Rigid world poses of prims at many time codes, fast for what recordings hold.

``UsdGeom.XformCache`` costs about 20 microseconds per prim and time code (12 s for 1,000 bodies over 600
frames), ``Usd.Attribute.Get(time)`` about 3 per value. A recording's bodies are *movers*: prims whose own
xform ops are time-sampled under static parents. For each mover:

- each time-varying op's values are read in one call (the ``timeSamples`` of the one layer USD resolves
  them from) where that is exact: they come from time samples (not value clips, a spline or a default),
  the strongest layer holding them is not retimed (no layer offset or scale on the sublayer or reference
  that brings it), and it has a sample at every frame read (nothing to interpolate). Otherwise they are
  read with ``Get(time)`` frame by frame, which is USD's own resolution (clips, offsets, interpolation);
- a mover whose time-varying ops are a run of translate and orient ops (what ``usdsim`` writes) is
  composed as rigid transforms, quaternions vectorized over frames and prims, its constant ops and its
  static parents folded into one matrix on each side; other time-varying ops (scale, rotateXYZ,
  transform, ...) are composed as 4x4 matrices;
- a mover under a moving parent, or one that resets the xform stack, is read through the XformCache.

Whichever way, the result is the same (tests/test_view.py compares them with the XformCache's).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from pxr import Sdf, Usd, UsdGeom, Vt

from ..core.quat import matrix_to_quat, quat_conjugate, quat_multiply, quat_rotate, quat_to_matrix

_T = UsdGeom.XformOp
_RIGID_OPS = {_T.TypeTranslate, _T.TypeOrient}
_AXES = {
    _T.TypeRotateX: "X",
    _T.TypeRotateY: "Y",
    _T.TypeRotateZ: "Z",
    _T.TypeRotateXYZ: "XYZ",
    _T.TypeRotateXZY: "XZY",
    _T.TypeRotateYXZ: "YXZ",
    _T.TypeRotateYZX: "YZX",
    _T.TypeRotateZXY: "ZXY",
    _T.TypeRotateZYX: "ZYX",
}
_CHUNK = 64  # frames composed at a time (bounds the temporaries: 10,000 prims x 64 frames)


@dataclass
class Poses:
    """What :func:`part_poses` found.

    Attributes:
        positions: (T, P, 3) float32 world position of each prim's frame.
        wxyz: (T, P, 4) float32 world orientation (w, x, y, z), w >= 0.
        baked: (P, 3, 3) the rest of each prim's world matrix at the first frame (its scale, any shear):
            row vectors, ``v @ baked`` in the prim's frame, then the pose.
        how: per mover path, how it was read: ``"rigid"`` or ``"matrix"`` (composed here) with ``"layer"``
            (its samples read in one call per attribute) or ``"resolved"`` (``Get`` per frame), or
            ``"xformcache"``.
    """

    positions: np.ndarray
    wxyz: np.ndarray
    baked: np.ndarray
    how: dict = field(default_factory=dict)


def mover_of(prim) -> Usd.Prim | None:
    """The nearest ancestor-or-self of ``prim`` whose transform may vary in time (None: a static prim)."""
    p = prim
    while p and p.GetPath() != Sdf.Path.absoluteRootPath:
        xf = UsdGeom.Xformable(p)
        if xf and xf.TransformMightBeTimeVarying():
            return p
        p = p.GetParent()
    return None


def code(t) -> Usd.TimeCode:
    return Usd.TimeCode.Default() if np.isnan(t) else Usd.TimeCode(float(t))


def part_poses(prims, times, to_si, xform_cache: bool = False) -> Poses:
    """The rigid world poses of ``prims`` at ``times`` (NaN: the default time), through ``to_si``.

    Args:
        prims: The prims (each pose is that of the prim's own frame).
        times: (T,) time codes.
        to_si: Row-vector 4x4 applied after the world matrix (stage units and up axis to meters, Z up).
        xform_cache: Read every prim through ``UsdGeom.XformCache`` (the reference the fast paths match).
    """
    times = np.asarray(times, float)
    n_t, n_p = len(times), len(prims)
    out = Poses(np.empty((n_t, n_p, 3), np.float32), np.empty((n_t, n_p, 4), np.float32), np.empty((n_p, 3, 3)))
    if not n_p:
        return out
    cache = UsdGeom.XformCache(code(times[0]))
    groups = {}  # mover path (None: static) -> (mover, part indices)
    for j, prim in enumerate(prims):
        mover = mover_of(prim)
        groups.setdefault(mover.GetPath() if mover else None, (mover, []))[1].append(j)
    static = groups.pop(None, (None, []))[1]
    if static:
        _fill(out, static, (_matrices(cache, [prims[j] for j in static]) @ to_si)[None])
    rigid, matrix, through_cache = [], [], []
    for mover, idx in groups.values():
        # Each part relative to its mover (constant: the mover is the nearest prim that moves), the product
        # of the local transforms between them: exact (the identity for the mover itself), not a world
        # matrix times an inverse, whose rounding would reach every frame's pose (and the page's size).
        entry = (mover, idx, np.array([_relative(cache, prims[j], mover) for j in idx]))
        form = None if xform_cache or np.isnan(times[0]) else _mover_form(mover, times, cache)
        if form is None:
            through_cache.append(entry)
        else:
            (rigid if form.rigid is not None else matrix).append((form, *entry))
    if rigid:  # rigid motion, and the matrix after it a similarity (else composed as matrices)
        scale = _similarity(np.array([form.after for form, *_ in rigid]) @ to_si)
        matrix += [r for r, c in zip(rigid, scale, strict=True) if c is None]
        rigid = [r for r, c in zip(rigid, scale, strict=True) if c is not None]
        if rigid:
            _fill_rigid(out, rigid, to_si)
    for kind, forms in (("rigid", rigid), ("matrix", matrix)):
        for form, mover, *_ in forms:
            out.how[str(mover.GetPath())] = f"{kind} {form.source}"
    for form, _, idx, rels in matrix:
        _fill(out, idx, rels[None] @ form.matrices()[:, None] @ to_si)
    if through_cache:
        worlds = np.empty((n_t, len(through_cache), 4, 4))
        cached = [m for m, _, _ in through_cache]
        for f, t in enumerate(times):
            cache.SetTime(code(t))
            worlds[f] = _matrices(cache, cached)
        for k, (mover, idx, rels) in enumerate(through_cache):
            out.how[str(mover.GetPath())] = "xformcache"
            _fill(out, idx, rels[None] @ worlds[:, k, None] @ to_si)
    return out


def _relative(cache, prim, ancestor) -> np.ndarray:
    """The row-vector transform of ``prim`` in ``ancestor``'s frame."""
    if prim == ancestor:
        return np.eye(4)
    matrix, _ = cache.ComputeRelativeTransform(prim, ancestor)
    return np.array(matrix)


def _matrices(cache, prims) -> np.ndarray:
    """(N, 4, 4) local-to-world matrices of ``prims`` at the cache's time."""
    return np.array(Vt.Matrix4dArray([cache.GetLocalToWorldTransform(p) for p in prims])).reshape(-1, 4, 4)


def decompose(worlds) -> tuple:
    """(positions (T, N, 3), wxyz (T, N, 4), baked (N, 3, 3)) of row-vector world matrices (T, N, 4, 4):
    the rigid part of each (its rotation: the 3x3's rows normalized, or the nearest proper rotation where
    there is shear or mirroring), and the rest of the first frame's (scale, shear), to bake."""
    lin = worlds[..., :3, :3]
    rot = _rotation_of(lin)
    q = matrix_to_quat(np.swapaxes(rot, -1, -2)) + 0.0  # (x, y, z, w) column-vector rotations, w >= 0; no -0.0
    baked = lin[0] @ np.swapaxes(rot[0], -1, -2)  # lin = baked @ rot (row vectors: v_world = v @ baked @ rot)
    return worlds[..., 3, :3] + 0.0, np.concatenate([q[..., 3:], q[..., :3]], axis=-1), baked


def _rotation_of(lin) -> np.ndarray:
    """Row-vector rotations of 3x3 matrices: the rows normalized (exact for a scale then a rotation,
    ``S R``), or the nearest proper rotation where that is not orthonormal (shear, a mirroring scale)."""
    rot = lin / np.linalg.norm(lin, axis=-1, keepdims=True)
    bad = np.abs(rot @ np.swapaxes(rot, -1, -2) - np.eye(3)).max(axis=(-1, -2)) > 1e-6
    bad |= np.linalg.det(rot) < 0
    if np.any(bad):
        u, _, vt = np.linalg.svd(lin[bad])
        u[np.linalg.det(u @ vt) < 0, :, 2] *= -1
        rot[bad] = u @ vt
    return rot


def _fill(out: Poses, idx, worlds) -> None:
    """Store the decomposition of ``worlds`` (T or 1, n, 4, 4) for the parts ``idx``."""
    positions, wxyz, baked = decompose(worlds)
    out.positions[:, idx] = positions
    out.wxyz[:, idx] = wxyz
    out.baked[idx] = baked


def _similarity(mats) -> list:
    """Per row-vector 4x4 of ``mats`` (N, 4, 4), the scale ``c`` when its 3x3 is ``c`` times a proper
    rotation, else None."""
    lin = mats[:, :3, :3]
    gram = lin @ np.swapaxes(lin, -1, -2)
    c2 = np.trace(gram, axis1=1, axis2=2) / 3.0
    ok = (c2 > 0) & (np.abs(gram - c2[:, None, None] * np.eye(3)).max(axis=(1, 2)) <= 1e-9 * c2)
    ok &= np.linalg.det(lin) > 0
    return [float(np.sqrt(c)) if good else None for c, good in zip(c2, ok, strict=True)]


def _fill_rigid(out: Poses, rigid, to_si) -> None:
    """The parts of movers whose motion is rigid, vectorized: a part's world matrix is
    ``K @ (q(t), p(t)) @ Q`` (row vectors), with ``K`` its constant transform to the rigid motion (the
    part in its mover, the mover's ops after the run) and ``Q`` the mover's ops before the run, its
    parents and ``to_si``: a scale ``c`` times a rotation ``R_Q``. Then the part's rotation is
    ``rot(K) q(t) R_Q``, its position ``(rotate(q, K's origin) + p) @ Q's 3x3 + Q's origin``, and its
    baked scale ``c K rot(K)^T``, the same at every frame."""
    idx = np.concatenate([np.asarray(i) for _, _, i, _ in rigid])
    mover = np.concatenate([np.full(len(i), k) for k, (_, _, i, _) in enumerate(rigid)])
    k_mats = np.concatenate([rels @ form.before for form, _, _, rels in rigid])  # (P, 4, 4)
    q_mats = np.array([form.after for form, *_ in rigid]) @ to_si  # (M, 4, 4)
    scale = np.array(_similarity(q_mats))
    k_rot = _rotation_of(k_mats[:, :3, :3])
    baked = scale[mover, None, None] * k_mats[:, :3, :3] @ np.swapaxes(k_rot, -1, -2)
    q_k = matrix_to_quat(np.swapaxes(k_rot, -1, -2))  # column-vector quaternions (x, y, z, w)
    q_q = matrix_to_quat(np.swapaxes(q_mats[:, :3, :3], -1, -2) / scale[:, None, None])[mover]
    k_origin = k_mats[:, 3, :3]
    q_lin, q_origin = q_mats[mover, :3, :3], q_mats[mover, 3, :3]
    motion_q = np.stack([form.rigid[0] for form, *_ in rigid], axis=1)  # (T, M, 4)
    motion_p = np.stack([form.rigid[1] for form, *_ in rigid], axis=1)  # (T, M, 3)
    out.baked[idx] = baked
    for s in range(0, out.positions.shape[0], _CHUNK):
        q = motion_q[s : s + _CHUNK, mover]
        p = quat_rotate(q, k_origin) + motion_p[s : s + _CHUNK, mover]
        out.positions[s : s + _CHUNK, idx] = np.einsum("tpj,pjk->tpk", p, q_lin) + q_origin + 0.0
        world = quat_multiply(quat_multiply(q_q, q), q_k)  # rot(K) first, then q(t), then R_Q
        world *= np.where(world[..., 3:] < 0.0, -1.0, 1.0)
        world += 0.0  # -0.0 to 0.0: the same value the same bytes (the page compresses repeats)
        out.wxyz[s : s + _CHUNK, idx] = np.concatenate([world[..., 3:], world[..., :3]], axis=-1)


@dataclass
class _Form:
    """A mover's world matrix as ``before @ motion(t) @ after`` (row vectors: ``before`` is applied
    first): ``motion`` is rigid, ``(q (T, 4), p (T, 3))`` in ``rigid``, or else the (T, 4, 4) matrices
    ``middle``."""

    before: np.ndarray
    after: np.ndarray
    rigid: tuple | None
    middle: np.ndarray | None
    source: str

    def matrices(self) -> np.ndarray:
        """(T, 4, 4) the mover's world matrices."""
        if self.middle is not None:
            middle = self.middle
        else:
            q, p = self.rigid
            middle = np.broadcast_to(np.eye(4), (len(q), 4, 4)).copy()
            middle[:, :3, :3] = _row_rotation(q)
            middle[:, 3, :3] = p
        return self.before @ middle @ self.after


def _mover_form(mover, times, cache) -> _Form | None:
    """The mover's ops read at ``times`` and composed, or None where it needs the XformCache (a moving
    parent, a reset xform stack, an op without a value)."""
    xf = UsdGeom.Xformable(mover)
    if xf.GetResetXformStack():
        return None
    parent = mover.GetParent()
    if parent and mover_of(parent) is not None:
        return None
    parent_world = np.array(cache.GetLocalToWorldTransform(parent)) if parent else np.eye(4)
    n = len(times)
    entries = []  # in op order: (kind, value); kind "const" (4x4), "rigid" ((q, p)), "matrix" ((T, 4, 4))
    sources = set()
    for op in xf.GetOrderedXformOps():
        attr = op.GetAttr()
        if not attr.ValueMightBeTimeVarying():
            if attr.Get(code(times[0])) is None:
                return None
            entries.append(("const", np.array(op.GetOpTransform(code(times[0])))))
            continue
        values, source = _values(attr, times)
        if values is None:
            return None
        sources.add(source)
        entry = _op_entry(op, values, times)
        if entry is None:
            return None
        entries.append(entry)
    varying = [i for i, (kind, _) in enumerate(entries) if kind != "const"]
    source = "resolved" if "resolved" in sources else "layer"
    if varying and all(entries[i][0] == "rigid" for i in varying) and varying[-1] - varying[0] + 1 == len(varying):
        # Row vectors: the last op applies first. before = ops after the run, after = ops before it.
        before = _product([v for _, v in entries[varying[-1] + 1 :]])
        after = _product([v for _, v in entries[: varying[0]]]) @ parent_world
        q, p = None, None  # the run composed, v -> rotate(q, v) + p (None: identity, zero)
        for i in reversed(varying):
            oq, op_p = entries[i][1]  # this op after what is composed: (oq q, rotate(oq, p) + op_p)
            if oq is not None:
                q = oq if q is None else quat_multiply(oq, q)
                p = None if p is None else quat_rotate(oq, p)
            if op_p is not None:
                p = op_p if p is None else p + op_p
        q = np.broadcast_to(np.array([0.0, 0.0, 0.0, 1.0]) if q is None else q, (n, 4))
        p = np.broadcast_to(np.zeros(3) if p is None else p, (n, 3))
        return _Form(before, after, (q, p), None, source)
    middle = np.broadcast_to(np.eye(4), (n, 4, 4)).copy()
    for kind, value in reversed(entries):
        if kind == "rigid":
            m = np.broadcast_to(np.eye(4), (n, 4, 4)).copy()
            if value[0] is not None:
                m[:, :3, :3] = _row_rotation(value[0])
            if value[1] is not None:
                m[:, 3, :3] = value[1]
            value = m
        middle = middle @ value
    return _Form(np.eye(4), parent_world, None, middle, source)


def _product(mats) -> np.ndarray:
    """Row-vector product of op matrices given in op order (the last op applies first)."""
    m = np.eye(4)
    for v in reversed(mats):
        m = m @ v
    return m


def _values(attr, times) -> tuple:
    """(values (T, ...) float64, ``"layer"`` or ``"resolved"``) of ``attr`` at ``times``; (None, None)
    where it has no value at some time."""
    values = _layer_samples(attr, times)
    if values is not None:
        return values, "layer"
    query = Usd.AttributeQuery(attr)
    got = [query.Get(Usd.TimeCode(float(t))) for t in times]
    if any(v is None for v in got):
        return None, None
    return np.array(_vt_array(got), np.float64), "resolved"


def _layer_samples(attr, times) -> np.ndarray | None:
    """The values of ``attr`` at ``times`` read from its strongest spec's ``timeSamples`` in one call, or
    None where that would not be what USD resolves."""
    if attr.GetResolveInfo().GetSource() != Usd.ResolveInfoSourceTimeSamples:
        return None  # value clips, a spline, a default
    strongest = None  # the strongest spec with a value: USD resolves from it
    for spec, offset in attr.GetPropertyStackWithLayerOffsets(Usd.TimeCode(float(times[0]))):
        if spec.HasInfo("timeSamples") or spec.HasInfo("default"):
            strongest = spec, offset
            break
    if strongest is None or not strongest[0].HasInfo("timeSamples"):
        return None
    spec, offset = strongest
    if not offset.IsIdentity():
        return None  # a retimed layer: its sample keys are not stage times
    samples = spec.GetInfo("timeSamples")  # a dict sorted by time: every sample in one call
    keys = np.fromiter(samples.keys(), float, len(samples))
    at = np.searchsorted(keys, times)
    if at.max() >= len(keys) or not np.array_equal(keys[at], times):
        return None  # a frame between samples: USD interpolates it
    values = list(samples.values())
    if len(at) != len(values) or at[0] != 0:
        values = [values[i] for i in at]
    return np.array(_vt_array(values), np.float64)


def _vt_array(values):
    kinds = {
        "Vec3d": Vt.Vec3dArray,
        "Vec3f": Vt.Vec3fArray,
        "Vec3h": Vt.Vec3hArray,
        "Quatd": Vt.QuatdArray,
        "Quatf": Vt.QuatfArray,
        "Quath": Vt.QuathArray,
        "Matrix4d": Vt.Matrix4dArray,
    }
    kind = kinds.get(type(values[0]).__name__)
    return kind(values) if kind else values


def _op_entry(op, values, times) -> tuple | None:
    """``("rigid", (q, p))`` for a translate or orient op's values, else ``("matrix", (T, 4, 4))``."""
    t = op.GetOpType()
    n = len(values)
    inverse = op.IsInverseOp()
    if t == _T.TypeTranslate:
        p = -values if inverse else values
        return "rigid", (None, p)
    if t == _T.TypeOrient:  # Gf quaternions read as arrays are (i, j, k, real)
        q = values / np.linalg.norm(values, axis=1, keepdims=True)
        return "rigid", (quat_conjugate(q) if inverse else q, None)
    m = np.broadcast_to(np.eye(4), (n, 4, 4)).copy()
    if t == _T.TypeScale:
        m[:, 0, 0], m[:, 1, 1], m[:, 2, 2] = values[:, 0], values[:, 1], values[:, 2]
    elif t == _T.TypeTransform:
        m[:] = values.reshape(n, 4, 4)
    elif t in _AXES:
        angles = np.radians(values.reshape(n, -1))
        rot = np.broadcast_to(np.eye(3), (n, 3, 3))
        for k, axis in enumerate(_AXES[t]):  # the first named axis applies first: leftmost in row form
            rot = rot @ _axis_rotation(axis, angles[:, k])
        m[:, :3, :3] = rot
    else:  # an op type of a later USD: USD's own matrix, frame by frame
        m[:] = np.array(Vt.Matrix4dArray([op.GetOpTransform(Usd.TimeCode(float(x))) for x in times]))
        return "matrix", m
    return "matrix", (np.linalg.inv(m) if inverse else m)


def _axis_rotation(axis: str, angles) -> np.ndarray:
    """(T, 3, 3) row-vector rotations by ``angles`` (radians) about the axis named."""
    c, s = np.cos(angles), np.sin(angles)
    m = np.broadcast_to(np.eye(3), (len(angles), 3, 3)).copy()
    i, j = {"X": (1, 2), "Y": (2, 0), "Z": (0, 1)}[axis]
    m[:, i, i], m[:, i, j], m[:, j, i], m[:, j, j] = c, s, -s, c
    return m


def _row_rotation(q) -> np.ndarray:
    """(T, 3, 3) row-vector rotation matrices of unit quaternions (x, y, z, w): :func:`quat_to_matrix`'s, transposed."""
    return np.swapaxes(quat_to_matrix(q), -1, -2)
