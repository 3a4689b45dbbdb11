"""Contacts reporting: every world's contacts and their constraint forces at the current state, into a
``Contacts`` buffer (:meth:`~ContactsReport.update_contacts`), on either backend."""

from __future__ import annotations

import logging

import mujoco
import numpy as np
import warp as wp

logger = logging.getLogger("newton_usd")


class ContactsReport:
    """:class:`~newton_usd.solvers.mujoco.SolverMuJoCo`'s contacts (:meth:`update_contacts`)."""

    def update_contacts(self, contacts) -> None:
        """Fill ``contacts`` with every world's contacts at the current state (world after world, up to its
        capacity) and their forces: the constraint forces the solve gives at that state (what the next step
        applies). cpu: each world's MjData copied, its forces computed (``mj_forwardSkip`` past the velocity
        stage) and read with ``mj_contactForce``; the engine is untouched. warp: actuation, acceleration and the
        constraint solve run again on the engine's data (the next step solves the same problem, warm started
        from it) and ``mujoco_warp.contact_force`` reads the forces."""
        if self.backend == "cpu":
            parts = self._cpu_contacts()
        else:
            parts = self._warp_contacts()
        world, geom, pos, frame, dist, force = parts
        n = min(len(world), contacts.capacity)
        if n < len(world) and not self._contacts_truncated:
            self._contacts_truncated = True
            logger.warning(
                "SolverMuJoCo.update_contacts: %d contacts, a Contacts buffer of %d: the later worlds' are left out "
                "(make it with model.contacts(capacity))", len(world), contacts.capacity,
            )  # fmt: skip
        contacts.rigid_contact_count = n
        pad = contacts.capacity - n
        # MuJoCo's geoms are world 0's shapes; world w's are as many shapes further (worlds one after another).
        gs = self.spec_map.geom_shape
        per_world = self.model.shape_count // self.num_worlds

        def shapes(side):
            s = gs[geom[:n, side]]
            return np.where(s >= 0, s + world[:n] * per_world, -1)

        def fill(array, values, fill_value=0):
            values = np.asarray(values)[:n]
            rest = np.full((pad,) + values.shape[1:], fill_value, dtype=values.dtype)
            scalar = getattr(array.dtype, "_wp_scalar_type_", array.dtype)
            array.assign(np.concatenate([values, rest]).astype(wp.dtype_to_numpy(scalar)))

        fill(contacts.rigid_contact_shape0, shapes(0), -1)
        fill(contacts.rigid_contact_shape1, shapes(1), -1)
        fill(contacts.rigid_contact_world, world)
        fill(contacts.rigid_contact_point, pos.reshape(-1, 3))
        fill(contacts.rigid_contact_normal, frame.reshape(-1, 9)[:, :3])
        fill(contacts.rigid_contact_depth, -dist)
        fill(contacts.rigid_contact_force, force.reshape(-1, 3))

    def _cpu_contacts(self):
        """Every world's contacts (world, geom pairs, points, frames, distances, world-frame forces) on the cpu
        backend."""
        e = self._engine
        if e.stale:
            e.forward()
        data = mujoco.MjData(self.mj_model)
        out = [[] for _ in range(6)]
        f6 = np.zeros(6)
        for w in range(self.num_worlds):
            e.get_data(w, data)
            m = self.mj_models[w]
            mujoco.mj_forwardSkip(m, data, int(mujoco.mjtStage.mjSTAGE_VEL), 1)
            n = data.ncon
            c = data.contact
            frames = np.array(c.frame[:n]).reshape(n, 3, 3)
            forces = np.zeros((n, 3))
            for i in range(n):
                mujoco.mj_contactForce(m, data, i, f6)
                forces[i] = f6[:3] @ frames[i]  # contact frame (normal, tangents) rows -> world
            world = (np.full(n, w), np.array(c.geom[:n]), np.array(c.pos[:n]), frames, np.array(c.dist[:n]), forces)
            for part, values in zip(out, world, strict=True):
                part.append(values)
        return tuple(np.concatenate(p) for p in out)

    def _warp_contacts(self):
        """:meth:`_cpu_contacts` on the warp backend (the forces from ``mujoco_warp.contact_force``)."""
        mjw, m, d = self._mjw, self.mjw_model, self.mjw_data
        with wp.ScopedDevice(self.device):
            if self._warp_stale:
                mjw.step1(m, d)
            mjw.fwd_actuation(m, d)
            mjw.fwd_acceleration(m, d)
            mjw.solve(m, d)
            n = int(d.nacon.numpy()[0])
            ids = wp.array(np.arange(n, dtype=np.int32), dtype=int)
            force = wp.zeros(n, dtype=wp.spatial_vector)
            if n:
                mjw.contact_force(m, d, ids, True, force)
        world = d.contact.worldid.numpy()[:n]
        order = np.argsort(world, kind="stable")
        return (
            world[order],
            d.contact.geom.numpy()[:n][order],
            d.contact.pos.numpy()[:n][order].astype(np.float64),
            d.contact.frame.numpy()[:n][order].reshape(n, 3, 3).astype(np.float64),
            d.contact.dist.numpy()[:n][order].astype(np.float64),
            force.numpy()[order][:, :3].astype(np.float64),
        )
