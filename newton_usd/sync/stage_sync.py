"""StageSync: writes simulated body poses back onto the user's prims, into a layer of its own.

Each body prim gets, in the output layer only, the ops ``xformOp:translate:physics``,
``xformOp:orient:physics`` (quatd: a float quaternion would lose rotations under ~5e-4 rad) and
(when the prim is scaled) ``xformOp:scale:physics``, and an
``xformOpOrder`` that lists them; the ops the user authored stay untouched in their own layer and
come back when the output layer is removed (:meth:`restore`). Where a scaled parent would shear the
local transform, the prim gets one ``xformOp:transform:physics`` matrix instead.

The local transform is the body's simulated world pose relative to its parent prim: the parent's
simulated pose when the parent is itself a body, otherwise the parent's world transform, read once.
``!resetXformStack!`` is honoured. Poses are converted back to the stage's units and up axis.
Writes happen at the Sdf level inside one ``Sdf.ChangeBlock`` per frame; a recording may instead be
written :attr:`StageSync.batch_frames` frames at a time (each attribute's samples of those frames in a
row: USD's data for it stays in the CPU caches, about twice as fast), the stage then showing the
latest frames only after :meth:`StageSync.flush`.
"""

from __future__ import annotations

import numpy as np
from pxr import Gf, Sdf, Usd, UsdGeom, Vt

from ..core.quat import matrix_to_quat, quat_conjugate, quat_multiply, quat_rotate, quat_to_matrix
from .instancer_sync import InstancerSync, instance_of
from .specs import op_order_spec, over_prim_spec

OP_TRANSLATE = "xformOp:translate:physics"
OP_ORIENT = "xformOp:orient:physics"
OP_SCALE = "xformOp:scale:physics"
OP_MATRIX = "xformOp:transform:physics"
RESET = "!resetXformStack!"
XFORM_OPS = ("trs", "matrix")
_TRS, _MATRIX = 1, 2  # how a prim's pose is written (0: not prepared yet)
_OP_TYPES = {
    OP_TRANSLATE: Sdf.ValueTypeNames.Double3,
    OP_ORIENT: Sdf.ValueTypeNames.Quatd,
    OP_SCALE: Sdf.ValueTypeNames.Float3,
    OP_MATRIX: Sdf.ValueTypeNames.Matrix4d,
}


def _rigid_row_matrices(pos, quat):
    """Row-vector (USD) 4x4 matrices of rigid poses: points map as p' = p @ M."""
    n = len(pos)
    m = np.zeros((n, 4, 4))
    m[:, :3, :3] = np.swapaxes(quat_to_matrix(quat), -1, -2)
    m[:, 3, :3] = pos
    m[:, 3, 3] = 1.0
    return m


class StageSync:
    """Writes a State's body poses onto the prims of ``stage``.

    Args:
        stage: the stage the model was imported from.
        layer: the ``Sdf.Layer`` to write into (it must be part of the stage's layer stack, stronger
            than the authored opinions, e.g. a sublayer of the session layer).
        body_paths: the prim path of each model body, in body order (None: a body not to write).
        frame: the :class:`~newton_usd.usd.StageFrame` of the stage (units and up axis).
        xform_ops: ``"trs"`` (translate, orient and, on scaled prims, scale ops: readable, and what
            other tools expect) or ``"matrix"`` (one ``xformOp:transform:physics`` per prim: one value
            per body and frame instead of two, the fastest to write).
        held: per body (body order), whether the stage moves it (a kinematic body): not written, until
            :meth:`hold` says otherwise (None: none).
    """

    def __init__(self, stage: Usd.Stage, layer: Sdf.Layer, body_paths, frame, xform_ops: str = "trs", held=None):
        if xform_ops not in XFORM_OPS:
            raise ValueError(f"xform_ops must be one of {', '.join(XFORM_OPS)}, got {xform_ops!r}")
        self.stage = stage
        self.layer = layer
        self.frame = frame
        self.xform_ops = xform_ops
        self.body_count = len(body_paths)
        # Bodies that are PointInstancer instances ("/Instancer[i]") move their instancer's arrays.
        rows, instances = [], []
        for row, label in enumerate(body_paths):
            if label is None:  # not written (e.g. a kinematic body: the stage moves it)
                continue
            of = instance_of(label)
            if of is None:
                rows.append(row)
            else:
                instances.append((row, *of))
        self.paths = [Sdf.Path(str(body_paths[r])) for r in rows]
        self._rows = None if len(rows) == self.body_count else np.array(rows, dtype=np.int64)
        self._held = np.zeros(len(rows), dtype=bool)  # per prim row: the stage moves it (not written)
        if held is not None:
            self._held[:] = np.asarray(held, dtype=bool)[rows]
        self.instancers = InstancerSync(stage, layer, instances, self._stage_world) if instances else None
        n = len(self.paths)
        index = {p: i for i, p in enumerate(self.paths)}
        cache = UsdGeom.XformCache(Usd.TimeCode.Default())
        r_inv = quat_conjugate(frame.rotation)
        self._r_inv = r_inv
        # A body's parent prim transform is chain[i] @ world(parent_body[i]) when a body is among its
        # ancestors, else the constant chain[i] (the static parent's world matrix).
        self.parent_body = np.full(n, -1, dtype=np.int64)
        self.chain = np.tile(np.eye(4), (n, 1, 1))
        self.world_scale = np.ones((n, 3))
        self.local_scale = np.ones((n, 3))
        self.reset_stack = np.zeros(n, dtype=bool)
        for i, path in enumerate(self.paths):
            prim = stage.GetPrimAtPath(path)
            xf = UsdGeom.Xformable(prim)
            self.reset_stack[i] = bool(xf) and xf.GetResetXformStack()
            world = cache.GetLocalToWorldTransform(prim)
            self.world_scale[i] = _row_scales(world)
            self.local_scale[i] = _row_scales(cache.GetLocalTransformation(prim)[0])
            if self.reset_stack[i]:
                continue
            parent = prim.GetParent()
            if not parent or parent.GetPath() == Sdf.Path.absoluteRootPath:
                continue
            parent_world = np.array(cache.GetLocalToWorldTransform(parent))
            ancestor = parent
            while ancestor and ancestor.GetPath() != Sdf.Path.absoluteRootPath and ancestor.GetPath() not in index:
                ancestor = ancestor.GetParent()
            if ancestor and ancestor.GetPath() in index:
                self.parent_body[i] = index[ancestor.GetPath()]
                ancestor_world = np.array(cache.GetLocalToWorldTransform(ancestor))
                self.chain[i] = parent_world @ np.linalg.inv(ancestor_world)
            else:
                self.chain[i] = parent_world
        self.scaled = ~np.all(np.isclose(self.local_scale, 1.0, atol=1e-6), axis=1)
        self._nested = self.parent_body >= 0
        self._static_parent_inv = np.linalg.inv(self.chain)  # the parent transform of the bodies not nested
        # A prim is written as translate/orient(/scale) when its parent transform is a rotation times a
        # uniform scale (then no pose of the body shears its local transform), else as one matrix: decided
        # once, so that a recording never switches the ops of a prim.
        conformal = _conformal(self.chain)
        nested = np.flatnonzero(self._nested)
        conformal[nested] &= _uniform(self.world_scale[self.parent_body[nested]])
        self._op_mode = np.where(conformal & (xform_ops == "trs"), _TRS, _MATRIX).astype(np.int8)
        self._prepare_rigid()
        self._specs = [None] * n  # per body: [(path, spec)] of the animated ops
        self._prepared = np.zeros(n, dtype=np.int8)  # _TRS or _MATRIX once prepared
        self._needs_default = np.ones(n, dtype=bool)  # the first pose written after preparing is also the default
        self._groups = None  # per mode: (rows, paths, specs), rebuilt when a mode changes
        self._retired = []  # syncs of earlier models of this stage (see carry_over)
        self.frames_written = 0
        self.batch_frames = 1
        """Time-sampled frames kept and written together (1: each frame at once). With more, the layer
        lags up to ``batch_frames - 1`` frames behind until :meth:`flush` (what ``usdsim`` does: no one
        looks at the stage while it runs). Default values (``time`` None) are always written at once."""
        self._batch = []  # [(time, {mode: value arrays of that mode's rows})] not written yet

    def _prepare_rigid(self) -> None:
        """Find the bodies whose local pose is quaternion algebra (not nested in a body, their parent's
        transform a rotation and translation, the body unscaled) and precompute their constants."""
        rot = self.chain[:, :3, :3]
        unit = np.all(np.abs(np.linalg.norm(rot, axis=2) - 1.0) < 1e-9, axis=1)
        unit &= np.all(np.abs(self.world_scale - 1.0) < 1e-9, axis=1)
        self._rigid = _conformal(self.chain) & unit & ~self._nested
        rows = np.flatnonzero(self._rigid)
        # local = conj(q_parent) * (stage world): q_local = q_pre * q_sim, and
        # p_local = rotate(q_pre, p_sim) / metersPerUnit - rotate(conj(q_parent), t_parent).
        q_parent_inv = quat_conjugate(matrix_to_quat(np.swapaxes(rot[rows], -1, -2)))
        self._rigid_rows = rows
        self._rigid_q = quat_multiply(q_parent_inv, np.broadcast_to(self._r_inv, q_parent_inv.shape))
        self._rigid_t = quat_rotate(q_parent_inv, self.chain[rows, 3, :3])

    # ------------------------------------------------------------------ pose math
    def _stage_world(self, body_q: np.ndarray) -> np.ndarray:
        """Row-vector rigid world matrices, in stage units and axes, of simulated poses ``body_q``."""
        body_q = np.asarray(body_q, dtype=np.float64)
        pos = quat_rotate(self._r_inv, body_q[:, :3]) / self.frame.meters_per_unit
        quat = quat_multiply(np.broadcast_to(self._r_inv, body_q[:, 3:].shape), body_q[:, 3:])
        return _rigid_row_matrices(pos, quat)

    def _prim_rows(self, body_q: np.ndarray) -> np.ndarray:
        body_q = np.asarray(body_q, dtype=np.float64)
        return body_q if self._rows is None else body_q[self._rows]

    def local_transforms(self, body_q: np.ndarray) -> np.ndarray:
        """Row-vector local 4x4 matrices (stage units) of every body prim for simulated ``body_q`` (the
        rows of the body prims: instance bodies left out)."""
        return self._local_matrices(self._prim_rows(body_q), None)

    def _local_matrices(self, body_q: np.ndarray, rows) -> np.ndarray:
        """Local matrices of the prims ``rows`` (None: all) of ``body_q`` (one row per prim)."""
        rows = np.arange(len(self.paths)) if rows is None else rows
        nested = self._nested[rows]
        # World poses (with the prims' scale): of every prim when a nested row needs its ancestor's.
        every = bool(nested.any())
        world = self._stage_world(body_q if every else body_q[rows])
        world[:, :3, :3] *= (self.world_scale if every else self.world_scale[rows])[:, :, None]  # S @ X, row form
        mine = world[rows] if every else world
        local = mine @ self._static_parent_inv[rows]
        if every:
            pick = rows[nested]
            parent = self.chain[pick] @ world[self.parent_body[pick]]
            local[nested] = mine[nested] @ np.linalg.inv(parent)
        return local

    def hold(self, held) -> None:
        """Which bodies the stage moves from now on (``held``: per body, body order): those are not written (what
        was written of them stays, so a body made kinematic stays where it was shown), the others are."""
        held = np.asarray(held, dtype=bool)
        rows = held if self._rows is None else held[self._rows]
        if np.array_equal(rows, self._held):
            return
        self.flush()  # (the kept frames are of the prims written so far)
        self._held = rows.copy()
        self._groups = None

    # ------------------------------------------------------------------ writing
    def _prepare(self, i: int, mode: int):
        prim_spec = over_prim_spec(self.layer, self.paths[i])
        names = [OP_MATRIX] if mode == _MATRIX else [OP_TRANSLATE, OP_ORIENT] + ([OP_SCALE] if self.scaled[i] else [])
        specs = {}
        for name in names:
            spec = prim_spec.attributes.get(name) or Sdf.AttributeSpec(prim_spec, name, _OP_TYPES[name])
            specs[name] = spec
        order = op_order_spec(prim_spec)
        order.default = ([RESET] if self.reset_stack[i] else []) + names
        if OP_SCALE in specs:
            specs[OP_SCALE].default = Gf.Vec3f(*self.local_scale[i])
        # (path, spec) of the animated ops: translate and orient, or the matrix.
        self._specs[i] = [(specs[n].path, specs[n]) for n in names if n != OP_SCALE]
        self._prepared[i] = mode
        self._needs_default[i] = True
        self._groups = None

    def _local_poses(self, body_q: np.ndarray):
        """The local pose of every body prim: (translations, quaternions (x, y, z, w), 4x4 matrices); a
        prim has a translation and quaternion when written as trs, a matrix when written as a matrix."""
        body_q = self._prim_rows(body_q)
        n = len(self.paths)
        trans, quats = np.zeros((n, 3)), np.zeros((n, 4))
        matrices = np.zeros((n, 4, 4)) if (self._op_mode == _MATRIX).any() else None  # (none in a plain trs scene)
        rigid = self._rigid_rows
        if len(rigid):
            q = quat_multiply(self._rigid_q, body_q[rigid, 3:])
            q *= np.where(q[:, 3:] < 0.0, -1.0, 1.0)  # w >= 0, as matrix_to_quat gives
            t = quat_rotate(self._rigid_q, body_q[rigid, :3]) / self.frame.meters_per_unit - self._rigid_t
            if self.xform_ops == "trs":
                trans[rigid], quats[rigid] = t, q
            else:
                matrices[rigid] = _rigid_row_matrices(t, q)
        rows = np.flatnonzero(~self._rigid)
        if len(rows):
            local = self._local_matrices(body_q, rows)
            if matrices is not None:
                matrices[rows] = local
            trs = self._op_mode[rows] == _TRS
            if trs.any():  # the scale off the rows of a conformal transform leaves a rotation
                rot_t = local[trs, :3, :3] / np.linalg.norm(local[trs, :3, :3], axis=2)[:, :, None]
                trans[rows[trs]] = local[trs, 3, :3]
                quats[rows[trs]] = matrix_to_quat(np.swapaxes(rot_t, -1, -2))
        return trans, quats, matrices

    def _write_groups(self):
        """Per mode that some prim has, the rows and the prepared (path, spec) pairs of its prims, in row order."""
        if self._groups is None:
            self._groups = {}
            for mode in (_TRS, _MATRIX):
                rows = np.flatnonzero((self._prepared == mode) & ~self._held)
                if not len(rows):
                    continue
                self._groups[mode] = (
                    rows,
                    [tuple(p for p, _ in self._specs[i]) for i in rows],
                    [tuple(s for _, s in self._specs[i]) for i in rows],
                )
        return self._groups

    def write(self, body_q: np.ndarray, time: float | None = None) -> None:
        """Write the poses ``body_q`` (simulation frame, (n, 7), one row per body given to the constructor)
        at time code ``time`` (None: default value)."""
        time = None if time is None else float(time)
        if self.instancers is not None:
            with Sdf.ChangeBlock():
                self.instancers.write(np.asarray(body_q, dtype=np.float64), time)
        trans, quats, matrices = self._local_poses(body_q)
        new = np.flatnonzero((self._op_mode != self._prepared) & ~self._held)  # prims new to this sync (or restored)
        if len(new) and self._batch:
            self.flush()  # (the batch is in the prims' rows as they were)
        for i in new:
            self._prepare(int(i), int(self._op_mode[i]))
        groups = self._write_groups()
        batched = time is not None and self.batch_frames > 1

        def values(mode: int, rows: np.ndarray):
            """Per row, the tuple of Gf values of its animated ops. Vt makes them from numpy in one call
            per array: much cheaper than one Gf constructor per value."""
            if mode == _TRS:  # Gf.Quatd's memory is (x, y, z, w), as ours
                t = Vt.Vec3dArray.FromNumpy(np.ascontiguousarray(trans[rows]))
                return zip(t, Vt.QuatdArray.FromNumpy(np.ascontiguousarray(quats[rows])), strict=True)
            return zip(Vt.Matrix4dArray.FromNumpy(np.ascontiguousarray(matrices[rows])), strict=True)

        with Sdf.ChangeBlock():
            if time is not None and self._needs_default.any():
                # With time samples, the first pose (the authored one) is also the default, so that a query
                # at the default time finds the body where it was authored.
                for mode, (rows, _, specs) in groups.items():
                    first = self._needs_default[rows]
                    for spec_tuple, value_tuple in zip(_compress(specs, first), values(mode, rows[first]), strict=True):
                        for spec, value in zip(spec_tuple, value_tuple, strict=True):
                            spec.default = value
                self._needs_default[:] = False
            set_sample = self.layer.SetTimeSample
            for mode, (rows, paths, specs) in () if batched else groups.items():  # (batched: flush writes them)
                if time is None:
                    for spec_tuple, value_tuple in zip(specs, values(mode, rows), strict=True):
                        for spec, value in zip(spec_tuple, value_tuple, strict=True):
                            spec.default = value
                elif mode == _TRS:  # the hot loop of a recording: two calls per body
                    for (t_path, q_path), (t, q) in zip(paths, values(mode, rows), strict=True):
                        set_sample(t_path, time, t)
                        set_sample(q_path, time, q)
                else:
                    for (m_path,), (m,) in zip(paths, values(mode, rows), strict=True):
                        set_sample(m_path, time, m)
        self.frames_written += 1
        if batched:
            kept = {
                mode: (trans[rows], quats[rows]) if mode == _TRS else (matrices[rows],)
                for mode, (rows, _, _) in groups.items()
            }
            self._batch.append((time, kept))
            if len(self._batch) >= self.batch_frames:
                self.flush()

    def place(self, body_q: np.ndarray, bodies, time: float | None = None) -> None:
        """Write the poses of ``bodies`` (body indices) alone from ``body_q`` (as :meth:`write` takes it), held or not,
        where this sync wrote them before (their ops on the layer show them): a held body the user moved goes where
        it was put, the layer's ops no longer hiding the move."""
        rows = np.asarray(bodies, dtype=np.int64)
        if self._rows is not None:
            at = np.searchsorted(self._rows, rows)
            rows = at[(at < len(self._rows)) & (self._rows[np.minimum(at, len(self._rows) - 1)] == rows)]
        rows = rows[self._prepared[rows] != 0]
        if not len(rows):
            return
        self.flush()
        trans, quats, matrices = self._local_poses(body_q)
        with Sdf.ChangeBlock():
            for i in rows.tolist():
                if self._prepared[i] == _TRS:
                    values = (Vt.Vec3dArray.FromNumpy(trans[i : i + 1])[0],
                              Vt.QuatdArray.FromNumpy(quats[i : i + 1])[0])  # fmt: skip
                else:
                    values = (Vt.Matrix4dArray.FromNumpy(np.ascontiguousarray(matrices[i : i + 1]))[0],)
                for (path, spec), value in zip(self._specs[i], values, strict=True):
                    if time is None:
                        spec.default = value
                    else:
                        self.layer.SetTimeSample(path, float(time), value)

    def flush(self) -> None:
        """Write the frames kept by :attr:`batch_frames`: attribute by attribute, each with its samples of
        every kept frame in a row, in one change block. The frames are forgotten once written (a flush
        interrupted, by Ctrl-C say, writes them all again the next time)."""
        batch = self._batch
        if not batch:
            return
        times = [t for t, _ in batch]
        set_sample = self.layer.SetTimeSample
        with Sdf.ChangeBlock():
            for mode, (_, paths, _) in self._write_groups().items():
                # Per op: (prims, frames, values), each prim's frames contiguous for Vt.
                per_op = [
                    np.ascontiguousarray(np.stack([v[mode][k] for _, v in batch], axis=1))
                    for k in range(len(batch[0][1][mode]))
                ]
                if mode == _TRS:
                    vt_t, vt_q = Vt.Vec3dArray.FromNumpy, Vt.QuatdArray.FromNumpy
                    for (t_path, q_path), t_rows, q_rows in zip(paths, per_op[0], per_op[1], strict=True):
                        for t, v in zip(times, vt_t(t_rows), strict=True):
                            set_sample(t_path, t, v)
                        for t, v in zip(times, vt_q(q_rows), strict=True):
                            set_sample(q_path, t, v)
                else:
                    vt_m = Vt.Matrix4dArray.FromNumpy
                    for (m_path,), m_rows in zip(paths, per_op[0], strict=True):
                        for t, v in zip(times, vt_m(m_rows), strict=True):
                            set_sample(m_path, t, v)
        self._batch = []

    def carry_over(self, old: "StageSync") -> None:
        """Go on where ``old`` (a sync of the same layer, before the model was rebuilt) left off: the
        bodies both write keep their prepared specs (a recording goes on, its first pose stays the
        default); :meth:`restore` also removes what ``old`` wrote for bodies no longer simulated."""
        old.flush()
        self.batch_frames = old.batch_frames
        index = {p: i for i, p in enumerate(old.paths)}
        for i, path in enumerate(self.paths):
            j = index.get(path)
            if j is not None and old._specs[j] is not None:
                self._specs[i], self._prepared[i], self._needs_default[i] = old._specs[j], old._prepared[j], False
        self._groups = None
        self.frames_written = old.frames_written
        self._retired = [*old._retired, old]

    def restore(self) -> None:
        """Remove everything this sync wrote (and forget what it kept): the stage shows the authored poses
        again."""
        self._batch = []
        for old in self._retired:
            old.restore()
        self._retired = []
        with Sdf.ChangeBlock():
            if self.instancers is not None:
                self.instancers.restore()
            for i, path in enumerate(self.paths):
                prim_spec = self.layer.GetPrimAtPath(path)
                if prim_spec is None:
                    continue
                for name in (OP_TRANSLATE, OP_ORIENT, OP_SCALE, OP_MATRIX, "xformOpOrder"):
                    if name in prim_spec.attributes:
                        prim_spec.RemoveProperty(prim_spec.attributes[name])
                self._specs[i] = None
            self._prepared[:] = 0
            self._needs_default[:] = True
            self._groups = None
            _remove_empty_overs(self.layer)
        self.frames_written = 0


def _conformal(matrices: np.ndarray) -> np.ndarray:
    """Whether each row-vector 4x4 matrix's linear part is a rotation times a uniform scale."""
    linear = matrices[:, :3, :3]
    scale = np.linalg.norm(linear, axis=2)
    unit = linear / np.maximum(scale, 1e-300)[:, :, None]
    ortho = np.abs(np.einsum("nij,nkj->nik", unit, unit) - np.eye(3)).max(axis=(1, 2), initial=0.0) < 1e-6
    return ortho & _uniform(scale) & (np.linalg.det(linear) > 0)


def _uniform(scales: np.ndarray) -> np.ndarray:
    """Whether each row of per-axis ``scales`` (n, 3) is one scale on every axis (to 1e-6, relative)."""
    return np.ptp(scales, axis=1) < 1e-6 * np.max(scales, axis=1, initial=1.0)


def _compress(items: list, mask: np.ndarray) -> list:
    return [item for item, keep in zip(items, mask.tolist(), strict=True) if keep]


def _row_scales(matrix) -> np.ndarray:
    m = np.array(matrix)
    return np.linalg.norm(m[:3, :3], axis=1)


def _remove_empty_overs(layer: Sdf.Layer) -> None:
    """Delete ``over`` prim specs left with no properties and no children."""

    def prune(spec):
        for child in list(spec.nameChildren):
            prune(child)
        if spec.specifier == Sdf.SpecifierOver and not spec.properties and not spec.nameChildren:
            parent = spec.nameParent if spec.nameParent else None
            if parent is not None:
                del parent.nameChildren[spec.name]
            else:
                del layer.rootPrims[spec.name]

    for root in list(layer.rootPrims):
        prune(root)
