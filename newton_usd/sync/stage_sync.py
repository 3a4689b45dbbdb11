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
Writes happen at the Sdf level inside one ``Sdf.ChangeBlock`` per frame.
"""

from __future__ import annotations

import numpy as np
from pxr import Gf, Sdf, Usd, UsdGeom

from ..core.quat import matrix_to_quat, quat_conjugate, quat_multiply, quat_rotate, quat_to_matrix
from .instancer_sync import InstancerSync, instance_of
from .specs import over_prim_spec

OP_TRANSLATE = "xformOp:translate:physics"
OP_ORIENT = "xformOp:orient:physics"
OP_SCALE = "xformOp:scale:physics"
OP_MATRIX = "xformOp:transform:physics"
RESET = "!resetXformStack!"


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
    """

    def __init__(self, stage: Usd.Stage, layer: Sdf.Layer, body_paths, frame):
        self.stage = stage
        self.layer = layer
        self.frame = frame
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
        self._specs = [None] * n
        self._mode = [None] * n  # "trs" or "matrix", decided on first write
        self._needs_default = [True] * n  # the first pose written after (re)preparing is also the default
        self._retired = []  # syncs of earlier models of this stage (see carry_over)
        self.frames_written = 0

    # ------------------------------------------------------------------ pose math
    def _stage_world(self, body_q: np.ndarray) -> np.ndarray:
        """Row-vector rigid world matrices, in stage units and axes, of simulated poses ``body_q``."""
        body_q = np.asarray(body_q, dtype=np.float64)
        pos = quat_rotate(self._r_inv, body_q[:, :3]) / self.frame.meters_per_unit
        quat = quat_multiply(np.broadcast_to(self._r_inv, body_q[:, 3:].shape), body_q[:, 3:])
        return _rigid_row_matrices(pos, quat)

    def local_transforms(self, body_q: np.ndarray) -> np.ndarray:
        """Row-vector local 4x4 matrices (stage units) of every body prim for simulated ``body_q`` (the
        rows of the body prims: instance bodies left out)."""
        body_q = np.asarray(body_q, dtype=np.float64)
        if self._rows is not None:
            body_q = body_q[self._rows]
        world = self._stage_world(body_q)
        world[:, :3, :3] *= self.world_scale[:, :, None]  # scale rows: S @ X in row-vector form
        parent = self.chain.copy()
        nested = self.parent_body >= 0
        if nested.any():
            parent[nested] = self.chain[nested] @ world[self.parent_body[nested]]
        return world @ np.linalg.inv(parent)

    # ------------------------------------------------------------------ writing
    def _prepare(self, i: int, mode: str):
        prim_spec = over_prim_spec(self.layer, self.paths[i])
        names = [OP_MATRIX] if mode == "matrix" else [OP_TRANSLATE, OP_ORIENT] + ([OP_SCALE] if self.scaled[i] else [])
        types = {
            OP_TRANSLATE: Sdf.ValueTypeNames.Double3,
            OP_ORIENT: Sdf.ValueTypeNames.Quatd,
            OP_SCALE: Sdf.ValueTypeNames.Float3,
            OP_MATRIX: Sdf.ValueTypeNames.Matrix4d,
        }
        specs = {}
        for name in names:
            spec = prim_spec.attributes.get(name) or Sdf.AttributeSpec(prim_spec, name, types[name])
            specs[name] = spec
        order = prim_spec.attributes.get("xformOpOrder") or Sdf.AttributeSpec(
            prim_spec, "xformOpOrder", Sdf.ValueTypeNames.TokenArray, variability=Sdf.VariabilityUniform
        )
        order.default = ([RESET] if self.reset_stack[i] else []) + names
        if OP_SCALE in specs:
            specs[OP_SCALE].default = Gf.Vec3f(*self.local_scale[i])
        # (path, spec) of the animated ops: translate and orient, or the matrix.
        self._specs[i] = [(specs[n].path, specs[n]) for n in names if n != OP_SCALE]
        self._mode[i] = mode
        self._needs_default[i] = True

    def write(self, body_q: np.ndarray, time: float | None = None) -> None:
        """Write the poses ``body_q`` (simulation frame, (n, 7), one row per body given to the constructor)
        at time code ``time`` (None: default value)."""
        time = None if time is None else float(time)
        if self.instancers is not None:
            with Sdf.ChangeBlock():
                self.instancers.write(np.asarray(body_q, dtype=np.float64), time)
        local = self.local_transforms(body_q)
        t = local[:, 3, :3]
        rows = local[:, :3, :3]
        scale = np.linalg.norm(rows, axis=2)
        rot_t = rows / np.maximum(scale[:, :, None], 1e-12)  # rows of R^T
        ortho = np.abs(np.einsum("nij,nkj->nik", rot_t, rot_t) - np.eye(3)).max(axis=(1, 2)) < 1e-4
        ortho &= np.linalg.det(rot_t) > 0
        quats = matrix_to_quat(np.swapaxes(rot_t, -1, -2)).tolist()
        translations = t.tolist()
        set_sample = self.layer.SetTimeSample
        with Sdf.ChangeBlock():
            for i in range(len(self.paths)):
                mode = "trs" if ortho[i] else "matrix"
                if self._mode[i] != mode:
                    self._prepare(i, mode)
                specs = self._specs[i]
                if mode == "trs":
                    x, y, z, w = quats[i]
                    values = ((specs[0], Gf.Vec3d(*translations[i])), (specs[1], Gf.Quatd(w, x, y, z)))
                else:
                    values = ((specs[0], Gf.Matrix4d(*local[i].ravel().tolist())),)
                # With time samples, the first pose (the authored one) is also the default, so that a
                # query at the default time finds the body where it was authored.
                set_default = time is None or self._needs_default[i]
                self._needs_default[i] = False
                for (path, spec), value in values:
                    if set_default:
                        spec.default = value
                    if time is not None:
                        set_sample(path, time, value)
        self.frames_written += 1

    def carry_over(self, old: "StageSync") -> None:
        """Go on where ``old`` (a sync of the same layer, before the model was rebuilt) left off: the
        bodies both write keep their prepared specs (a recording goes on, its first pose stays the
        default); :meth:`restore` also removes what ``old`` wrote for bodies no longer simulated."""
        index = {p: i for i, p in enumerate(old.paths)}
        for i, path in enumerate(self.paths):
            j = index.get(path)
            if j is not None and old._specs[j] is not None:
                self._specs[i], self._mode[i], self._needs_default[i] = old._specs[j], old._mode[j], False
        self.frames_written = old.frames_written
        self._retired = [*old._retired, old]

    def restore(self) -> None:
        """Remove everything this sync wrote: the stage shows the authored poses again."""
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
                self._mode[i] = None
            _remove_empty_overs(self.layer)
        self.frames_written = 0


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
