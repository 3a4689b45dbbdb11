"""RigidBodyView: matched rigid bodies, one row per body prim and world."""

from __future__ import annotations

import warp as wp

from ..core.types import JointType
from ..errors import NewtonUsdError
from .kernels import reciprocal
from .view import View, as_rows


class RigidBodyView(View):
    """Rigid bodies selected by prim pattern (``"/World/envs/env_*/box"``): a row per matched body prim and
    world. Poses ``(count, 7)`` (position, quaternion x, y, z, w), velocities ``(count, 6)`` (linear velocity of
    the center of mass, angular velocity), world frame. See :class:`ArticulationView` for the arguments and
    the ``indices`` of writes.
    """

    def _select(self, model, bodies, joints, path):
        hits = [b for b in bodies if model.body_label[b] == path]
        if not hits:
            if any(model.body_label[b].startswith(path + "/") for b in bodies):
                raise NewtonUsdError(f"{path} (matched by {self.pattern!r}) is not a rigid body: match the body prims")
            return {"body": [], "free_coord": [], "free_dof": []}
        b = hits[0]
        free = [j for j in joints if self._joint_child[j] == b and self._joint_type[j] == JointType.FREE]
        q = [q for j in free[:1] for q in range(self._q_start[j], self._q_start[j + 1])]
        d = [d for j in free[:1] for d in range(self._qd_start[j], self._qd_start[j + 1])]
        return {"body": [b], "free_coord": q, "free_dof": d}

    def _built(self, model):
        self.body_names = [model.body_label[b] for b in self._rows.columns["body"][:, 0]]
        self.is_free = bool(self._rows.columns["free_coord"].shape[1])

    def _rows_of(self, array, kind="body"):
        out = self._gather(array, kind)  # (count, 1, ...): one body per row
        return out.reshape((out.shape[0], *out.shape[2:]))

    # ------------------------------------------------------------------ state
    def get_transforms(self):
        return self._rows_of(self._source.state.body_q)

    def set_transforms(self, values, indices=None):
        """Poses of free bodies (their free joints' coordinates and the body poses); a jointless body's pose
        (a kinematic body's target) is the State's ``body_q`` alone."""
        state = self._source.state
        if self.is_free:
            self._scatter(state.joint_q, "free_coord", values, indices)
        self._scatter(state.body_q, "body", values, indices)

    def get_velocities(self):
        return self._rows_of(self._source.state.body_qd)

    def set_velocities(self, values, indices=None):
        """Velocities ``(rows, 6)`` (center of mass linear, angular) of free bodies."""
        model = self._sync()
        if not self.is_free:
            raise NewtonUsdError(f"{self.prim_paths[0]}: set_velocities needs a free body (a free joint)")
        state = self._source.state
        vals = as_rows(values, 6, wp.float32, model.device)
        poses = self.get_transforms()
        coms = self._rows_of(model.body_com)
        rows, value_rows = self._row_indices(indices, vals.shape[0])
        origin = wp.empty((self.count, 6), dtype=wp.float32, device=model.device)
        wp.launch(
            _com_to_origin_velocity, dim=rows.shape[0], inputs=[vals, value_rows, rows, poses, coms],
            outputs=[origin], device=model.device,
        )  # fmt: skip
        self._scatter(state.joint_qd, "free_dof", origin, rows)
        self._scatter(state.body_qd, "body", values, indices)

    # ------------------------------------------------------------------ model values
    def get_masses(self):
        return self._rows_of(self._source.model.body_mass)

    def set_masses(self, values, indices=None):
        model = self._sync()
        self._scatter(model.body_mass, "body", values, indices)
        inv = self._gather(model.body_mass, "body")
        wp.launch(reciprocal, dim=inv.shape, inputs=[inv], device=model.device)
        self._scatter(model.body_inv_mass, "body", inv, indices)
        self._source.push_parameters({"body_mass", "body_inv_mass"})

    def get_coms(self):
        return self._rows_of(self._source.model.body_com)

    def get_inertias(self):
        return self._rows_of(self._source.model.body_inertia)


@wp.kernel
def _com_to_origin_velocity(
    values: wp.array2d(dtype=wp.float32),
    value_rows: wp.array(dtype=wp.int32),
    rows: wp.array(dtype=wp.int32),
    poses: wp.array2d(dtype=wp.float32),
    coms: wp.array2d(dtype=wp.float32),
    out: wp.array2d(dtype=wp.float32),
):
    i = wp.tid()
    r = rows[i]
    v = value_rows[i]
    lin = wp.vec3(values[v, 0], values[v, 1], values[v, 2])
    ang = wp.vec3(values[v, 3], values[v, 4], values[v, 5])
    q = wp.quat(poses[r, 3], poses[r, 4], poses[r, 5], poses[r, 6])
    arm = wp.quat_rotate(q, wp.vec3(coms[r, 0], coms[r, 1], coms[r, 2]))
    origin = lin - wp.cross(ang, arm)  # the origin's velocity from the center of mass's
    for k in range(3):
        out[r, k] = origin[k]
        out[r, 3 + k] = ang[k]
