"""ArticulationView: the joints and links of matched articulations, one row per match and world."""

from __future__ import annotations

import numpy as np
import warp as wp

from ..core.types import JointType
from ..errors import NewtonUsdError
from ..kinematics import jacobians, mass_matrix
from .kernels import reciprocal
from .pattern import relative_name, under
from .view import View, as_rows

_BALL_COORDS = ("qx", "qy", "qz", "qw")


class ArticulationView(View):
    """Articulations selected by prim pattern (``"/World/envs/env_*/Robot"``): a row per matched prim and world.

    A row holds the joints whose prims are the matched prim or below it (or whose articulation root is it) and
    the bodies they move, with the bodies below the matched prim; columns follow the model's order, which is
    the same in every row. The root joint, when it is a free joint, is not a DOF: it is the root transform
    (:meth:`get_root_transforms`). Position columns (:attr:`position_names`) are joint coordinates, DOF columns
    (:attr:`dof_names`) velocities, targets, gains and limits: they are the same columns unless a ball joint
    has 4 coordinates (its quaternion x, y, z, w) for 3 DOFs.

    Args:
        target: a :class:`~newton_usd.sim.Simulation` (the view follows its current state, control, model
            and solver), or a :class:`~newton_usd.core.Model` with ``state``, ``control`` and ``solver``.
        pattern: prim-path pattern, matched segment by segment (``fnmatch``: ``*``, ``?``, ``[...]``).

    Every getter returns a new Warp array ``(count, columns)`` on the model's device (``wp.to_torch`` or
    DLPack share it without a copy); every setter writes in Warp kernels, into the rows ``indices`` only.
    Model values (masses, gains, limits, friction) go to the solver with ``update_parameters``.
    """

    # ------------------------------------------------------------------ rows
    def _select(self, model, bodies, joints, path):
        art = getattr(model, "articulation_label", [])
        joint_art = model.joint_articulation.numpy()
        mine = [
            j for j in joints
            if under(model.joint_label[j], path) or (joint_art[j] >= 0 and art[joint_art[j]] == path)
        ]  # fmt: skip
        child = self._joint_child
        body_set = [b for b in bodies if under(model.body_label[b], path)]
        moved = {int(child[j]) for j in mine}
        body_list = sorted(set(body_set) | moved)
        jt = self._joint_type
        q_start, qd_start = self._q_start, self._qd_start
        parent = self._joint_parent
        in_row = set(body_list)
        root_joint = [j for j in mine if parent[j] < 0 or parent[j] not in in_row]
        articulated = [j for j in mine if jt[j] != JointType.FREE]
        coords = [q for j in articulated for q in range(q_start[j], q_start[j + 1])]
        dofs = [d for j in articulated for d in range(qd_start[j], qd_start[j + 1])]
        roots = [int(child[root_joint[0]])] if root_joint else [b for b in body_list if b not in moved][:1]
        if not roots:
            raise NewtonUsdError(f"{path}: no root body (the articulation has no link)")
        free = root_joint[:1] if root_joint and jt[root_joint[0]] == JointType.FREE else []
        return {
            "body": body_list,
            "joint": mine,
            "dof": dofs,
            "coord": coords,
            "root": roots,
            "free_coord": [q for j in free for q in range(q_start[j], q_start[j + 1])],
            "free_dof": [d for j in free for d in range(qd_start[j], qd_start[j + 1])],
            "articulated_joint": articulated,
        }

    def _built(self, model):
        rows = self._rows
        path = rows.paths[0]
        names = []
        position_names = []
        for j in rows.columns["articulated_joint"][0]:
            name = relative_name(model.joint_label[j], path)
            nd = int(self._qd_start[j + 1] - self._qd_start[j])
            names += [name] if nd == 1 else [f"{name}:{k}" for k in range(nd)]
            if self._joint_type[j] == JointType.BALL:
                position_names += [f"{name}:{c}" for c in _BALL_COORDS]
            else:
                position_names += [name] if nd == 1 else [f"{name}:{k}" for k in range(nd)]
        self._dof_names = names
        self._position_names = position_names
        self._body_names = [relative_name(model.body_label[b], path) for b in rows.columns["body"][0]]
        self._joint_names = [relative_name(model.joint_label[j], path) for j in rows.columns["joint"][0]]
        free = rows.columns["free_coord"]
        self.is_floating = bool(free.shape[1])

    # ------------------------------------------------------------------ names and sizes
    @property
    def dof_names(self) -> list:
        """Names of the DOF columns: the joint's prim path relative to the matched prim (``:k`` for the k-th DOF
        of a multi-DOF joint)."""
        self._sync()
        return list(self._dof_names)

    @property
    def position_names(self) -> list:
        """Names of the position columns (a ball joint's quaternion as ``joint:qx`` .. ``joint:qw``)."""
        self._sync()
        return list(self._position_names)

    @property
    def body_names(self) -> list:
        """Names of the link columns (prim paths relative to the matched prim; the prim itself by its name)."""
        self._sync()
        return list(self._body_names)

    @property
    def joint_names(self) -> list:
        self._sync()
        return list(self._joint_names)

    @property
    def dof_count(self) -> int:
        return len(self.dof_names)

    @property
    def body_count(self) -> int:
        return len(self.body_names)

    # ------------------------------------------------------------------ state
    def get_dof_positions(self):
        """Joint coordinates ``(count, positions)`` (rad, m)."""
        return self._gather(self._source.state.joint_q, "coord")

    def set_dof_positions(self, values, indices=None):
        """Write joint coordinates (the solver takes them at its next step; link transforms follow then, or at
        once with :func:`newton_usd.kinematics.eval_fk`)."""
        self._scatter(self._source.state.joint_q, "coord", values, indices)

    def get_dof_velocities(self):
        return self._gather(self._source.state.joint_qd, "dof")

    def set_dof_velocities(self, values, indices=None):
        self._scatter(self._source.state.joint_qd, "dof", values, indices)

    def get_dof_position_targets(self):
        """Drive position targets (the Control's)."""
        return self._gather(self._source.control.joint_target_pos, "dof")

    def set_dof_position_targets(self, values, indices=None):
        self._scatter(self._source.control.joint_target_pos, "dof", values, indices)

    def get_dof_velocity_targets(self):
        return self._gather(self._source.control.joint_target_vel, "dof")

    def set_dof_velocity_targets(self, values, indices=None):
        self._scatter(self._source.control.joint_target_vel, "dof", values, indices)

    def get_dof_actuation_forces(self):
        """Generalized forces applied on the DOFs (the Control's ``joint_f``)."""
        return self._gather(self._source.control.joint_f, "dof")

    def set_dof_actuation_forces(self, values, indices=None):
        self._scatter(self._source.control.joint_f, "dof", values, indices)

    def get_root_transforms(self):
        """The root link's pose ``(count, 7)``: position and quaternion (x, y, z, w), world frame."""
        return self._gather(self._source.state.body_q, "root").reshape((self.count, 7))

    def set_root_transforms(self, values, indices=None):
        """Move a floating root (its free joint's coordinates and the root body pose); a fixed base cannot be
        moved this way."""
        self._floating("set_root_transforms")
        state = self._source.state
        self._scatter(state.joint_q, "free_coord", values, indices)
        self._scatter(state.body_q, "root", values, indices)

    def get_root_velocities(self):
        """The root's free-joint velocities ``(count, 6)``: linear velocity of the root origin, angular
        velocity, world frame (a fixed base: zeros)."""
        if not self.is_floating:
            return wp.zeros((self.count, 6), dtype=wp.float32, device=self.device)
        return self._gather(self._source.state.joint_qd, "free_dof")

    def set_root_velocities(self, values, indices=None):
        self._floating("set_root_velocities")
        self._scatter(self._source.state.joint_qd, "free_dof", values, indices)

    def _floating(self, what):
        self._sync()
        if not self.is_floating:
            raise NewtonUsdError(f"{self.prim_paths[0]}: {what} needs a floating base (a free root joint)")

    def get_link_transforms(self):
        """Link poses ``(count, links, 7)``, world frame, as the last step (or ``eval_fk``) left them."""
        return self._gather(self._source.state.body_q, "body")

    def get_link_velocities(self):
        """Link velocities ``(count, links, 6)``: linear velocity of the center of mass, angular velocity."""
        return self._gather(self._source.state.body_qd, "body")

    # ------------------------------------------------------------------ dynamics
    def _dynamics_dofs(self) -> np.ndarray:
        """Each row's DOFs ``(count, n)`` within its world: the free root's 6 (when floating), then the DOF
        columns (the Jacobians' and mass matrices' columns)."""
        model = self._sync()
        per_world = model.joint_dof_count // model.num_worlds
        dofs = np.concatenate([self.columns("free_dof"), self.columns("dof")], axis=1)
        return dofs - self._rows.world[:, None].astype(np.int64) * per_world

    def get_jacobians(self):
        """Link Jacobians ``(count, links, 6, 6 + dofs)`` (without the 6 root columns for a fixed base): rows
        0-2 the linear velocity of the link origin, 3-5 its angular velocity, world frame; columns the free
        root's velocity (origin linear, angular, world frame) then :attr:`dof_names`. From the State's joint
        coordinates (:func:`newton_usd.kinematics.jacobians`)."""
        model = self._sync()
        per_world = model.body_count // model.num_worlds
        local = self.columns("body") - self._rows.world[:, None].astype(np.int64) * per_world
        links = np.unique(local)
        jac = jacobians(model, self._source.state, [int(b) for b in links])  # (worlds, links, 6, dofs)
        W, U, _, D = jac.shape
        link = np.searchsorted(links, local)  # (count, links): index into the computed links
        dofs = self._dynamics_dofs()
        world = self._rows.world.astype(np.int64)[:, None, None, None]
        index = ((world * U + link[:, :, None, None]) * 6 + np.arange(6)[None, None, :, None]) * D + dofs[
            :, None, None, :
        ]
        out = self._gather(jac, "jacobian", index.reshape(self.count, -1))
        return out.reshape((self.count, local.shape[1], 6, dofs.shape[1]))

    def get_generalized_mass_matrices(self):
        """Joint-space mass matrices ``(count, n, n)`` over the Jacobians' columns (see :meth:`get_jacobians`),
        from the State's joint coordinates (:func:`newton_usd.kinematics.mass_matrix`)."""
        model = self._sync()
        M = mass_matrix(model, self._source.state)  # (worlds, dofs, dofs)
        D = M.shape[1]
        dofs = self._dynamics_dofs()
        world = self._rows.world.astype(np.int64)[:, None, None]
        index = (world * D + dofs[:, :, None]) * D + dofs[:, None, :]
        out = self._gather(M, "mass matrix", index.reshape(self.count, -1))
        return out.reshape((self.count, dofs.shape[1], dofs.shape[1]))

    # ------------------------------------------------------------------ model values
    def get_masses(self):
        return self._gather(self._source.model.body_mass, "body")

    def set_masses(self, values, indices=None):
        """Link masses (kg); the inverse masses follow. The solver takes them without a rebuild where it can."""
        model = self._sync()
        self._scatter(model.body_mass, "body", values, indices)
        inv = self.get_masses()
        wp.launch(reciprocal, dim=inv.shape, inputs=[inv], device=model.device)
        self._scatter(model.body_inv_mass, "body", inv, indices)
        self._source.push_parameters({"body_mass", "body_inv_mass"})

    def get_inertias(self):
        """Link inertia tensors about the center of mass ``(count, links, 3, 3)``, body axes."""
        return self._gather(self._source.model.body_inertia, "body")

    def get_coms(self):
        return self._gather(self._source.model.body_com, "body")

    def get_dof_stiffnesses(self):
        return self._gather(self._source.model.joint_target_ke, "dof")

    def set_dof_stiffnesses(self, values, indices=None):
        self._set_model(("joint_target_ke",), (values,), "dof", indices)

    def get_dof_dampings(self):
        return self._gather(self._source.model.joint_target_kd, "dof")

    def set_dof_dampings(self, values, indices=None):
        self._set_model(("joint_target_kd",), (values,), "dof", indices)

    def get_dof_limits(self):
        """Joint limits ``(count, dofs, 2)``: lower, upper (``-inf``/``inf`` where unlimited)."""
        model = self._source.model
        lower = self._gather(model.joint_limit_lower, "dof")
        upper = self._gather(model.joint_limit_upper, "dof")
        out = wp.empty((self.count, lower.shape[1], 2), dtype=wp.float32, device=lower.device)
        wp.launch(_pair, dim=lower.shape, inputs=[lower, upper], outputs=[out], device=lower.device)
        return out

    def set_dof_limits(self, values, indices=None):
        """Joint limits ``(rows, dofs, 2)``: lower, upper; a DOF with finite bounds becomes limited."""
        model = self._sync()
        pairs = as_rows(values, 2 * len(self._dof_names), wp.float32, model.device)
        n = pairs.shape[0]
        lower = wp.empty((n, len(self._dof_names)), dtype=wp.float32, device=model.device)
        upper = wp.empty_like(lower)
        limited = wp.empty((n, len(self._dof_names)), dtype=wp.bool, device=model.device)
        if lower.size:
            wp.launch(
                _split_pair, dim=lower.shape, inputs=[pairs], outputs=[lower, upper, limited], device=model.device
            )
        self._scatter(model.joint_limit_lower, "dof", lower, indices)
        self._scatter(model.joint_limit_upper, "dof", upper, indices)
        self._scatter(model.joint_limited, "dof", limited, indices)
        self._source.push_parameters({"joint_limit_lower", "joint_limit_upper", "joint_limited"})

    def get_dof_armatures(self):
        return self._gather(self._source.model.joint_armature, "dof")

    def set_dof_armatures(self, values, indices=None):
        self._set_model(("joint_armature",), (values,), "dof", indices)

    def get_dof_friction_coefficients(self):
        """Joint dry friction (friction loss, N m or N) per DOF."""
        return self._gather(self._source.model.joint_friction, "dof")

    def set_dof_friction_coefficients(self, values, indices=None):
        self._set_model(("joint_friction",), (values,), "dof", indices)

    def get_dof_max_forces(self):
        return self._gather(self._source.model.joint_effort_limit, "dof")

    def set_dof_max_forces(self, values, indices=None):
        self._set_model(("joint_effort_limit",), (values,), "dof", indices)


@wp.kernel
def _pair(lower: wp.array2d(dtype=wp.float32), upper: wp.array2d(dtype=wp.float32), out: wp.array3d(dtype=wp.float32)):
    i, j = wp.tid()
    out[i, j, 0] = lower[i, j]
    out[i, j, 1] = upper[i, j]


@wp.kernel
def _split_pair(
    pairs: wp.array2d(dtype=wp.float32),
    lower: wp.array2d(dtype=wp.float32),
    upper: wp.array2d(dtype=wp.float32),
    limited: wp.array2d(dtype=wp.bool),
):
    i, j = wp.tid()
    lo = pairs[i, 2 * j]
    hi = pairs[i, 2 * j + 1]
    lower[i, j] = lo
    upper[i, j] = hi
    limited[i, j] = not (wp.isinf(lo) and wp.isinf(hi))
