"""Parameters: model values written into the compiled MuJoCo model(s) without rebuilding (live edits, domain
randomization, the time step, drive gains), and the edited models handed to the engine."""

from __future__ import annotations

import numpy as np
import warp as wp

from ...core.types import DriveMode
from .set_const import frames_hold, set_const_trees
from .spec import UNLIMITED_EFFORT, mj_inertial

_SET_CONST = ("body_subtreemass", "body_invweight0", "dof_invweight0", "tendon_invweight0", "actuator_acc0")
"""MjModel fields ``mj_setConst`` derives from the masses and armature (what MuJoCo itself recomputes)."""
_PER_WORLD_FIELDS = frozenset(
    {
        "body_mass", "body_inertia", "body_iquat", "body_ipos", "jnt_range", "actuator_biasprm",
        "actuator_forcerange", "dof_armature", "dof_frictionloss", "geom_friction", *_SET_CONST,
    }
)  # fmt: skip
"""The MjModel fields :meth:`Parameters.update_parameters` writes that MuJoCo-Warp holds per world (or shared), which
it takes in place: the same arrays, new values (a captured step or frame replays them). The contact bits
(:data:`_CONTACT_BITS`) go in by filtering its pair lists again (:mod:`.warp_pairs`). Any other (a joint's
``jnt_limited``, an actuator's ``forcelimited``: MuJoCo-Warp builds index lists from them) puts the model anew."""
_MASS_PROPERTIES = frozenset({"body_mass", "body_inertia", "body_com", "body_inv_mass", "body_inv_inertia"})
"""What a pending state's body velocities are computed with (``mj_kinematics``, ``mj_comPos``, ``mj_comVel``)."""
_CONTACT_BITS = frozenset({"geom_contype", "geom_conaffinity", "body_contype", "body_conaffinity"})


class Parameters:
    """:class:`~newton_usd.solvers.mujoco.SolverMuJoCo`'s values changed in place (:meth:`update_parameters`)."""

    _IN_PLACE = frozenset(
        {
            "gravity", "body_mass", "body_inertia", "body_com", "body_inv_mass", "body_inv_inertia",
            "joint_limit_lower", "joint_limit_upper", "joint_limited", "joint_target_ke", "joint_target_kd",
            "joint_target_pos", "joint_target_vel", "joint_effort_limit", "joint_armature", "joint_friction",
            "shape_material_mu", "shape_material_mu_torsional", "shape_material_mu_rolling",
            "shape_material_restitution", "shape_collision_enabled", "body_kinematic",
        }
    )  # fmt: skip
    """Model values :meth:`update_parameters` writes into the compiled MuJoCo model (the targets are
    controls, read each step; restitution is not simulated by MuJoCo: taken, nothing to write). They may differ
    between worlds (domain randomization)."""

    def update_parameters(self, model, names, rows=None) -> set:
        """Take the values of ``model`` named in ``names`` into the compiled MuJoCo model(s), in every world
        (:attr:`_IN_PLACE`); a drive switching between position and velocity modes keeps its actuator. ``rows``:
        element kind ("body", "dof", "shape") -> the model rows that changed (None: any may have). Returns the names
        it cannot take in place (the caller then rebuilds the solver).

        The masses and the armature are followed by what ``mj_setConst`` derives from them, for the kinematic trees
        they are in (:mod:`~.mujoco.set_const`); a body whose inertial frame leaves the class its compile gave it
        (a center of mass moved off the body origin) is not taken (``body_com`` returned: a new compile). On the
        warp backend the changed fields are written into MuJoCo-Warp's arrays in place."""
        names = set(names)
        if "joint_target_mode" in names:
            # A drive switching between position, velocity and both keeps its actuator (the gains are
            # its parameters); a DOF gaining or losing its drive changes the actuators.
            driven = model.joint_target_mode.numpy() != int(DriveMode.NONE)
            if np.array_equal(driven, self._driven):
                names.discard("joint_target_mode")
        leftover = names - self._IN_PLACE
        if "body_kinematic" in names and np.any(self._unswitchable(model)):
            leftover.add("body_kinematic")  # (a mocap body made dynamic, a free body made one: a new compile)
        if leftover:
            return leftover
        if not self._frames_hold(model, names, rows):
            return {"body_com"}  # (a body's inertial frame moved out of the class its compile gave it)
        if self._exchange is not None and names & _MASS_PROPERTIES:  # (pending states: their body velocities are
            self._exchange.fill_pending()  # computed with the model's masses and centers of mass: as they were)
        split = self._worlds_differ(model, names)
        if split:
            self._split_models(model)
        self._set_gains(model)
        shared = self.mj_models[-1] is self.mj_model
        fields = set()
        for w in range(1 if shared else self.num_worlds):
            fields |= self._write_parameters(w, model.world_view(w), names, _world_rows(model, w, rows, shared))
        self._models_changed(fields=fields)
        if "body_kinematic" in names:
            self._write_switches(model)
        self.model = model
        return set()

    def _unswitchable(self, model) -> np.ndarray:
        """Per body (every world's row): its kinematic flag differs from what the compiled model can hold (a mocap
        body, a body without a switch: see :func:`~.spec.build_spec`)."""
        switch = np.tile(self.spec_map.body_switch >= 0, self.num_worlds)
        compiled = np.array(list(self._kinematic.values()), dtype=bool)  # (the same model: its rows, in order)
        return (model.body_kinematic.numpy().astype(bool) != compiled) & ~switch

    def _write_switches(self, model) -> None:
        """The switchable bodies held kinematic or let go as ``model`` says, in every world: their welds'
        ``eq_active`` in the engine's data (and the MjModel's ``eq_active0``, world 0's, for a data made anew)."""
        switch = self.spec_map.body_switch
        bodies = np.nonzero(switch >= 0)[0]
        if not len(bodies):
            return
        active = self._per_world(model.body_kinematic, bool)[:, bodies]
        eqs = switch[bodies]
        for m in {id(m): m for m in self.mj_models}.values():
            m.eq_active0[eqs] = active[0]
        self._data.eq_active[eqs] = active[0]
        if self._engine is not None:
            self._engine.eq_active[:, eqs] = active
            self._engine.constraints_changed()
        elif self.mjw_data is not None:  # (in place: a captured step reads the same array)
            values = self.mjw_data.eq_active.numpy()
            values[:, eqs] = active
            self.mjw_data.eq_active.assign(values)
            self._warp_stale = True

    def _write_parameters(self, w, world, names, rows=None) -> set:
        """Write the values named in ``names`` of the one-world model ``world`` into world ``w``'s MjModel (``rows``:
        kind -> that world's rows that changed; None: all). Returns the MjModel fields written."""
        m, smap = self.mj_models[w], self.spec_map
        rows = rows or {}
        fields = set()
        if "gravity" in names:
            m.opt.gravity[:] = np.array(world.gravity, dtype=np.float64)
            fields.add("opt.gravity")
        touched = set()  # MuJoCo bodies whose trees' constants change
        if names & {"body_mass", "body_inertia", "body_com"}:
            mass, inertia, com = (
                getattr(world, n).numpy().astype(np.float64) for n in ("body_mass", "body_inertia", "body_com")
            )
            for b in rows.get("body", range(len(smap.body_mj))):
                mb = smap.body_mj[b]
                if mb < 0:
                    continue
                m.body_mass[mb] = mass[b]
                m.body_inertia[mb], m.body_iquat[mb] = mj_inertial(mass[b], inertia[b])
                m.body_ipos[mb] = com[b]
                touched.add(int(mb))
            fields |= {"body_mass", "body_inertia", "body_iquat", "body_ipos"}
        dofs = rows.get("dof")
        dofs = np.arange(len(smap.dof_mj)) if dofs is None else np.asarray(dofs, dtype=np.int64)
        built = dofs[smap.dof_mj[dofs] >= 0]
        mj = smap.dof_mj[built]
        if names & {"joint_limit_lower", "joint_limit_upper", "joint_limited"}:
            lower, upper = world.joint_limit_lower.numpy()[built], world.joint_limit_upper.numpy()[built]
            limited = world.joint_limited.numpy()[built].astype(bool)
            ref = self.map.dof_ref[built]
            if not np.array_equal(m.jnt_limited[mj].astype(bool), limited):
                fields.add("jnt_limited")
            m.jnt_limited[mj] = limited
            m.jnt_range[mj] = np.where(limited[:, None], np.stack([lower + ref, upper + ref], axis=1), 0.0)
            fields.add("jnt_range")
        n_drives = len(self.map.actuator_dof)
        if names & {"joint_target_ke", "joint_target_kd"}:
            m.actuator_biasprm[:n_drives, 1] = -self._ke[w, self.map.actuator_dof]
            m.actuator_biasprm[:n_drives, 2] = -self._kd[w, self.map.actuator_dof]
            fields.add("actuator_biasprm")
        if "joint_effort_limit" in names:
            limit = world.joint_effort_limit.numpy().astype(np.float64)[self.map.actuator_dof]
            limited = limit < UNLIMITED_EFFORT
            if not np.array_equal(m.actuator_forcelimited[:n_drives].astype(bool), limited):
                fields.add("actuator_forcelimited")
            m.actuator_forcelimited[:n_drives] = limited
            m.actuator_forcerange[:n_drives] = np.stack([-limit, limit], axis=1)
            fields.add("actuator_forcerange")
        for name, field, key in (("joint_armature", m.dof_armature, "dof_armature"),
                                 ("joint_friction", m.dof_frictionloss, "dof_frictionloss")):  # fmt: skip
            if name in names:
                field[m.jnt_dofadr[mj]] = getattr(world, name).numpy()[built]
                fields.add(key)
                if name == "joint_armature":
                    touched.update(int(b) for b in m.jnt_bodyid[mj])
        if names & {"shape_material_mu", "shape_material_mu_torsional", "shape_material_mu_rolling"}:
            mu = np.stack(
                [
                    getattr(world, n).numpy()
                    for n in ("shape_material_mu", "shape_material_mu_torsional", "shape_material_mu_rolling")
                ],
                axis=1,
            )
            built_shapes = smap.shape_mj >= 0
            m.geom_friction[smap.shape_mj[built_shapes]] = mu[built_shapes]
            fields.add("geom_friction")
        if "shape_collision_enabled" in names:
            fields |= self._write_collision_enabled(m, world, rows.get("shape"))
        if touched:  # subtree masses, inverse weights: MuJoCo's, for the trees of the bodies touched
            set_const_trees(m, self._data, touched)
            fields.update(_SET_CONST)
        return fields

    def _write_collision_enabled(self, m, world, shapes) -> set:
        """Colliders switched on or off: their geoms' contact bits (the model's ``mjc:contype``/``conaffinity``, else
        MuJoCo's 1; 0 when off) and their bodies' (what any of its geoms collides with, as MuJoCo compiles them)."""
        smap = self.spec_map
        shapes = np.arange(len(smap.shape_mj)) if shapes is None else np.asarray(shapes, dtype=np.int64)
        shapes = shapes[smap.shape_mj[shapes] >= 0]
        on = world.shape_collision_enabled.numpy()[shapes].astype(bool)
        geoms = smap.shape_mj[shapes]
        for field, name in ((m.geom_contype, "geom_contype"), (m.geom_conaffinity, "geom_conaffinity")):
            authored = getattr(world.mujoco, name, None)
            bits = np.ones(len(shapes)) if authored is None else np.nan_to_num(np.asarray(authored)[shapes], nan=1.0)
            field[geoms] = np.where(on, bits, 0).astype(field.dtype)
        for b in set(m.geom_bodyid[geoms].tolist()):
            mine = slice(m.body_geomadr[b], m.body_geomadr[b] + m.body_geomnum[b])
            m.body_contype[b] = np.bitwise_or.reduce(m.geom_contype[mine], initial=0)
            m.body_conaffinity[b] = np.bitwise_or.reduce(m.geom_conaffinity[mine], initial=0)
        return {"geom_contype", "geom_conaffinity", "body_contype", "body_conaffinity"}

    def _frames_hold(self, model, names, rows) -> bool:
        """Whether every body whose mass properties change keeps the inertial-frame classes the compiler gave it and
        its geoms (see :func:`~.set_const.frames_hold`); else only a new compile is right."""
        if not names & {"body_mass", "body_inertia", "body_com"}:
            return True
        for w in range(self.num_worlds if self.mj_models[-1] is not self.mj_model else 1):
            world = model.world_view(w)
            mass, inertia, com = (
                getattr(world, n).numpy().astype(np.float64) for n in ("body_mass", "body_inertia", "body_com")
            )
            body_rows = (_world_rows(model, w, rows, False) or {}).get("body", range(len(self.spec_map.body_mj)))
            for b in body_rows:
                mb = self.spec_map.body_mj[b]
                if mb >= 0 and not frames_hold(self.mj_models[w], mb, com[b], mj_inertial(mass[b], inertia[b])[1]):
                    return False
        return True

    def _set_gains(self, model):
        self._ke = self._per_world(model.joint_target_ke)
        self._kd = self._per_world(model.joint_target_kd)
        self._driven = model.joint_target_mode.numpy() != int(DriveMode.NONE)  # (the DOFs that have an actuator)
        self._ctl = None  # the controls depend on the gains: push them at the next step
        if self._dev is not None:
            self._dev.set_gains(self._ke, self._kd)  # (in place)

    def _models_changed(self, stages: bool = True, fields=None):
        """Hand the edited MjModel(s) to the engine; ``stages``: whether the edit can change the position and
        velocity stages (the cpu backend then recomputes them before the next step). ``fields``: the MjModel fields
        written (the warp backend writes them into MuJoCo-Warp's arrays in place where it can; None: put the model
        anew)."""
        if self._engine is not None:
            split = self.mj_models[-1] is not self.mj_model
            self._engine.set_models(self.mj_models if split else self.mj_model, stages)
        elif self.mjw_model is not None:
            if fields is None or not self._write_warp_fields(fields):
                with wp.ScopedDevice(self.device):
                    self._put_warp_model()
                self._drop_graphs("the model's parameters changed")
            self._warp_stale = True

    def _write_warp_fields(self, fields) -> bool:
        """Write the MjModel ``fields`` into MuJoCo-Warp's arrays in place (per world, or shared where every world
        has the same values); False where one cannot be (the model is then put anew)."""
        if fields & _CONTACT_BITS:
            if not self._switch_warp_pairs():
                return False
            fields = fields - _CONTACT_BITS
        if not fields <= _PER_WORLD_FIELDS | {"opt.gravity"}:
            return False
        split = self.mj_models[-1] is not self.mj_model
        for name in fields:
            owner, key = (self.mjw_model.opt, "gravity") if name == "opt.gravity" else (self.mjw_model, name)
            target = getattr(owner, key, None)
            if target is None:
                continue
            source = (lambda m: m.opt.gravity) if name == "opt.gravity" else (lambda m, k=key: getattr(m, k))
            values = np.stack([np.asarray(source(m)) for m in (self.mj_models if split else self.mj_models[:1])])
            inner = tuple(getattr(target.dtype, "_shape_", ()))
            if target.shape[0] != values.shape[0]:
                if target.shape[0] != 1 or not np.array_equal(values, np.broadcast_to(values[:1], values.shape)):
                    self._batch_warp_fields([key])  # (worlds that differ now: a batch of its own, a new array)
                    continue
                values = values[:1]
            target.assign(values.reshape(target.shape + inner).astype(np.float32))
        return True

    def _set_timestep(self, dt: float):
        if dt == self._dt:
            return
        self._dt = dt
        for m in {id(m): m for m in self.mj_models}.values():
            m.opt.timestep = dt
        if self._engine is not None:
            self._models_changed()
        elif self.mjw_model is not None:
            self.mjw_model.opt.timestep.fill_(dt)
            self._warp_stale = True  # (constraint references depend on the timestep)
            self._drop_graphs("a new time step")


def kinematic_flags(model) -> dict:
    """``(world, body label) -> kinematic`` of ``model``'s bodies (what a solver was compiled with)."""
    per = max(1, model.body_count // model.num_worlds)
    flags = model.body_kinematic.numpy().astype(bool).tolist()
    return {(b // per, label): flag for b, (label, flag) in enumerate(zip(model.body_label, flags, strict=True))}


def switched_bodies(model, compiled: dict) -> frozenset:
    """World 0's labels of the bodies whose kinematic flag differs, in some world, from world 0's or from
    ``compiled`` (:func:`kinematic_flags` of the model a solver was compiled from)."""
    now = model.body_kinematic.numpy().astype(bool)
    if not len(now):
        return frozenset()
    worlds = now.reshape(model.num_worlds, -1)
    per = worlds.shape[1]
    pairs = enumerate(zip(model.body_label, now.tolist(), strict=True))
    before = np.array([compiled.get((b // per, label), k) for b, (label, k) in pairs], dtype=bool)
    differ = (worlds != worlds[:1]).any(axis=0) | (now != before).reshape(worlds.shape).any(axis=0)
    return frozenset(model.body_label[b] for b in np.nonzero(differ)[0])


def _world_rows(model, w, rows, shared) -> dict | None:
    """``rows`` (kind -> model rows) of world ``w``, indexed from the world's first element (every world's, folded
    into world 0's, where the worlds share one MjModel); None: all."""
    if rows is None:
        return None
    out = {}
    per_world = model.num_worlds
    for kind, values in rows.items():
        values = np.asarray(values, dtype=np.int64)
        if kind in ("body", "shape"):
            per = getattr(model, f"{kind}_count") // per_world
            out[kind] = (
                np.array(sorted(set((values % per).tolist()))) if shared else values[values // per == w] - w * per
            )
        elif kind == "dof":
            lo, hi = model.world_ranges(w)["dof"]
            per = hi - lo
            out[kind] = (
                np.array(sorted(set((values % per).tolist())))
                if shared
                else values[(values >= lo) & (values < hi)] - lo
            )
    return out
