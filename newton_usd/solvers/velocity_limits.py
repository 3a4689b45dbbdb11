"""Bounds on the bodies' speeds (``model.body_max_velocity``: PhysX's ``physxRigidBody:maxLinearVelocity`` and
``maxAngularVelocity``, and PhysX's own 100 rad/s on a stage PhysX wrote), kept at the end of every step.

PhysX scales a body's velocity down to its bounds each step: the speed of its center of mass to the linear bound, its
angular speed to the angular one, each on its own. Where the body is a free body that is what is done here. An
articulation link's velocity is its parent's plus what its own joints add: its joints' velocities are scaled (by one
factor in [0, 1], the largest that keeps the link within its bounds, the links taken from the root outward), so that
the bound holds in the engine's own coordinates without touching the rest of the tree.

- :class:`MuJoCoSpeedBounds`: C MuJoCo (the cpu backend), on ``qvel`` from the velocities (``cvel``) and motion axes
  (``cdof``) MuJoCo computed at the end of the step; where nothing is over its bound (the usual case) it costs a
  few numpy operations on the bounded bodies.
- :class:`MuJoCoWarpSpeedBounds`: the same on MuJoCo-Warp (the warp backend), one kernel after each step (a thread a
  world), the step taken in one phase so that the next starts from the scaled velocities.
- :class:`BodySpeedBounds`: Newton's maximal-coordinate solvers (XPBD, semi-implicit, VBD), one kernel on each step's
  output body velocities (center of mass linear, angular), captured with the frame on CUDA; on Kamino (whose joint
  velocities are reported from its bodies') followed by the joint velocities of what it scaled
  (:class:`~.joint_speed_bounds.BodyJointSpeedBounds`).
- :class:`~.joint_speed_bounds.JointSpeedBounds`: Newton's Featherstone (joint coordinates), the articulation links'
  own joint velocities scaled from the root outward as on C MuJoCo, in one kernel (a thread an articulation).

The other engines (those coupling a rigid engine with vbd) do not keep them yet: :func:`unkept_message` is what they
say once.
"""

from __future__ import annotations

import numpy as np
import warp as wp

from .kernel_loading import modules_named

ENGINES_KEEPING = ("mujoco", "xpbd", "semi_implicit", "featherstone", "kamino", "vbd")
"""The engines that keep the bounds (for the message of those that do not)."""


def bounded_bodies(model) -> np.ndarray:
    """The indices of ``model``'s bodies with a finite speed bound (``(0,)`` where the model has no such body)."""
    bounds = getattr(model, "body_max_velocity", None)
    if bounds is None or model.body_count == 0:
        return np.zeros(0, dtype=np.int64)
    values = bounds.numpy().reshape(-1, 2)
    return np.nonzero(np.isfinite(values).any(axis=1))[0]


def unkept_message(model, engine: str) -> tuple[str, list[str]] | None:
    """``(message, body labels)`` for an engine that does not keep the bodies' speed bounds, None where the model has
    none."""
    bodies = bounded_bodies(model)
    if not len(bodies):
        return None
    labels = sorted({model.body_label[int(b)] for b in bodies})
    return (
        f"bounds on the bodies' speeds (physxRigidBody:maxLinearVelocity, maxAngularVelocity; PhysX's own 100 rad/s "
        f"on a stage PhysX wrote) are not kept by the {engine} solver: its bodies may move faster than under PhysX "
        f"(kept by {', '.join(ENGINES_KEEPING)})",
        labels,
    )


def _as_slice(indices: np.ndarray):
    """``indices`` as a slice where they are consecutive (cheaper to index with), else as they are."""
    if len(indices) and np.array_equal(indices, np.arange(indices[0], indices[0] + len(indices))):
        return slice(int(indices[0]), int(indices[0]) + len(indices))
    return indices


def _largest_scale(a: np.ndarray, r: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """Per row, the largest ``s`` in [0, 1] with ``|a + s r| <= bound`` (``a``, ``r``: ``(n, 3)``); where ``|a|`` alone
    is over the bound, the ``s`` that brings ``a + s r`` nearest to it (the least speed the joints can give)."""
    rr = np.einsum("ij,ij->i", r, r)
    ar = np.einsum("ij,ij->i", a, r)
    c = np.einsum("ij,ij->i", a, a) - bound * bound
    s = np.ones(len(a))
    with np.errstate(divide="ignore", invalid="ignore"):
        inside = c <= 0
        root = (-ar + np.sqrt(np.maximum(ar * ar - rr * c, 0.0))) / rr
        nearest = -ar / rr
    s = np.where(inside, root, nearest)
    s = np.where(rr > 0, s, 1.0)
    return np.clip(np.nan_to_num(s, nan=1.0), 0.0, 1.0)


class MuJoCoSpeedBounds:
    """The bodies' speed bounds under C MuJoCo (see the module's docstring).

    Args:
        mj_model: the compiled ``MjModel`` (world 0's: every world has its structure).
        body_mj: each of our bodies' MuJoCo body id (-1: none), world 0's.
        bounds: ``(linear m/s, angular rad/s)`` per our body, world 0's (inf: none).
    """

    def __init__(self, mj_model, body_mj, bounds):
        self.nbody = mj_model.nbody
        lin = np.full(self.nbody, np.inf)
        ang = np.full(self.nbody, np.inf)
        for ours, mj in enumerate(np.asarray(body_mj)):
            if mj > 0:
                lin[mj], ang[mj] = bounds[ours]
        self.lin, self.ang = lin, ang
        self.bounded = np.nonzero(np.isfinite(lin) | np.isfinite(ang))[0]
        self._lin_idx = _as_slice(np.nonzero(np.isfinite(lin))[0])  # (a slice where they follow one another)
        self._ang_sq_all = (ang * (1 + 1e-6)) ** 2  # (squared, with a tolerance for round-off; inf: none)
        self._lin_sq = (lin[self._lin_idx] * (1 + 1e-6)) ** 2
        self.parent = np.asarray(mj_model.body_parentid)
        self.root = np.asarray(mj_model.body_rootid)
        self._lin_root = self.root[self._lin_idx]
        self.dofs = [
            np.arange(mj_model.body_dofadr[b], mj_model.body_dofadr[b] + mj_model.body_dofnum[b])
            for b in range(self.nbody)
        ]
        # From the first bounded body on, every body is visited (a bounded link's change reaches its subtree).
        self.first = int(self.bounded.min()) if len(self.bounded) else self.nbody

    @classmethod
    def of(cls, solver, model) -> MuJoCoSpeedBounds | None:
        bodies = bounded_bodies(model)
        if not len(bodies):
            return None
        world0 = model.world_view(0)
        bounds = world0.body_max_velocity.numpy().reshape(-1, 2).astype(np.float64)
        made = cls(solver.mj_model, solver.spec_map.body_mj, bounds)
        return made if len(made.bounded) else None

    def _com_velocity(self, vel6, xipos, com, bodies, roots):
        """Linear velocity of the bodies' centers of mass (``bodies``: indices or a slice, ``roots``: their trees'
        roots) from their com-based velocities (``(w, n, 6)``)."""
        w, r = vel6[:, bodies, :3], xipos[:, bodies] - com[:, roots]
        out = vel6[:, bodies, 3:].copy()  # (+ w x r, written out: np.cross costs tens of us on a few bodies)
        out[..., 0] += w[..., 1] * r[..., 2] - w[..., 2] * r[..., 1]
        out[..., 1] += w[..., 2] * r[..., 0] - w[..., 0] * r[..., 2]
        out[..., 2] += w[..., 0] * r[..., 1] - w[..., 1] * r[..., 0]
        return out

    def over(self, cvel, xipos, com) -> bool:
        """Whether some bounded body of some world is over a bound (at the state MuJoCo's stages were computed at):
        run after every step, so squared speeds of the bodies with a finite bound of each kind only (most stages
        bound the angular speed alone)."""
        w = cvel[..., :3]  # (a view: every body's, against inf where a body has no angular bound)
        if ((w * w).sum(axis=-1) > self._ang_sq_all).any():
            return True
        return self._lin_root.size > 0 and self._over(
            self._com_velocity(cvel, xipos, com, self._lin_idx, self._lin_root), self._lin_sq
        )

    @staticmethod
    def _over(vectors, bound_sq) -> bool:
        return bool((np.einsum("wbk,wbk->wb", vectors, vectors) > bound_sq).any())

    def apply(self, qvel, cvel, cdof, xipos, com) -> bool:
        """Scale ``qvel`` (``(worlds, nv)``, in place) so every bounded body is within its bounds; ``cvel``
        (``(worlds, nbody, 6)``), ``cdof`` (``(worlds, nv, 6)``), ``xipos`` and ``com`` (``subtree_com``) as MuJoCo
        computed them at the state. Returns whether anything was scaled (MuJoCo's velocity stage is then stale)."""
        if not self.over(cvel, xipos, com):
            return False
        vel = cvel.copy()  # (each body's velocity as scaled so far)
        for b in range(self.first, self.nbody):
            dofs = self.dofs[b]
            parent = vel[:, self.parent[b]]
            if not len(dofs):
                vel[:, b] = parent
                continue
            own = np.einsum("wdk,wd->wdk", cdof[:, dofs], qvel[:, dofs])  # (w, dofs, 6): each DOF's part
            if not (np.isfinite(self.lin[b]) or np.isfinite(self.ang[b])):
                vel[:, b] = parent + own.sum(axis=1)
                continue
            rotating = np.any(cdof[0, dofs, :3] != 0, axis=-1)  # (a free joint's first three DOFs only translate)
            offset = xipos[:, b] - com[:, self.root[b]]

            def at_com(v6, offset=offset):
                return v6[..., 3:] + np.cross(v6[..., :3], offset)

            rot = own[:, rotating].sum(axis=1)
            s_rot = _largest_scale(parent[:, :3], rot[:, :3], np.full(len(parent), self.ang[b]))
            if not rotating.all():  # translating DOFs: the linear bound on them, after the rotation's scale
                moved = parent + s_rot[:, None] * rot
                trans = own[:, ~rotating].sum(axis=1)
                s_trans = _largest_scale(at_com(moved), at_com(trans), np.full(len(parent), self.lin[b]))
            else:
                s_lin = _largest_scale(at_com(parent), at_com(rot), np.full(len(parent), self.lin[b]))
                s_rot = np.minimum(s_rot, s_lin)
                s_trans = s_rot
            scale = np.where(rotating[None, :], s_rot[:, None], s_trans[:, None])  # (w, dofs)
            qvel[:, dofs] *= scale
            vel[:, b] = parent + np.einsum("wdk,wd->wk", own, scale)
        return True


@wp.func
def _scale_within(a: wp.vec3, r: wp.vec3, bound: float) -> float:
    """:func:`_largest_scale` of one body: the largest ``s`` in [0, 1] with ``|a + s r| <= bound`` (the nearest where
    ``|a|`` alone is over it; 1 where the bound is infinite or ``r`` is zero)."""
    rr = wp.dot(r, r)
    if rr <= 0.0:
        return 1.0
    ar = wp.dot(a, r)
    c = wp.dot(a, a) - bound * bound
    s = -ar / rr
    if c <= 0.0:
        s = (-ar + wp.sqrt(wp.max(ar * ar - rr * c, 0.0))) / rr
    return wp.clamp(s, 0.0, 1.0)


@wp.func
def _at_com(v: wp.spatial_vector, offset: wp.vec3) -> wp.vec3:
    """The linear velocity at ``offset`` from the reference point of a com-based velocity (MuJoCo's [angular;
    linear])."""
    return wp.spatial_bottom(v) + wp.cross(wp.spatial_top(v), offset)


@wp.kernel
def _bound_mujoco_warp(
    first: int,
    parent: wp.array[wp.int32],
    root: wp.array[wp.int32],
    dofadr: wp.array[wp.int32],
    dofnum: wp.array[wp.int32],
    lin: wp.array[float],
    ang: wp.array[float],
    bounded: wp.array[wp.int32],
    qvel: wp.array2d(dtype=float),
    cvel: wp.array2d(dtype=wp.spatial_vector),
    cdof: wp.array2d(dtype=wp.spatial_vector),
    xipos: wp.array2d(dtype=wp.vec3),
    subtree_com: wp.array2d(dtype=wp.vec3),
):
    """One world (a thread): :meth:`MuJoCoSpeedBounds.apply` on MuJoCo-Warp's data, the bodies from the first bounded
    one outward; ``cvel`` is rewritten with the scaled velocities (what the state is pulled from)."""
    w = wp.tid()
    for b in range(first, parent.shape[0]):
        pv = cvel[w, parent[b]]  # (a parent comes before its children: as scaled, where it was)
        rot = wp.spatial_vector()
        trans = wp.spatial_vector()
        translating = int(0)
        for k in range(dofnum[b]):
            j = dofadr[b] + k
            part = cdof[w, j] * qvel[w, j]
            if wp.length_sq(wp.spatial_top(cdof[w, j])) > 0.0:
                rot = rot + part
            else:
                trans = trans + part
                translating = 1
        s_rot = float(1.0)
        s_trans = float(1.0)
        if bounded[b] != 0:
            offset = xipos[w, b] - subtree_com[w, root[b]]
            s_rot = _scale_within(wp.spatial_top(pv), wp.spatial_top(rot), ang[b])
            if translating != 0:
                s_trans = _scale_within(_at_com(pv + rot * s_rot, offset), _at_com(trans, offset), lin[b])
            else:
                s_rot = wp.min(s_rot, _scale_within(_at_com(pv, offset), _at_com(rot, offset), lin[b]))
                s_trans = s_rot
            if s_rot < 1.0 or s_trans < 1.0:
                for k in range(dofnum[b]):
                    j = dofadr[b] + k
                    if wp.length_sq(wp.spatial_top(cdof[w, j])) > 0.0:
                        qvel[w, j] = qvel[w, j] * s_rot
                    else:
                        qvel[w, j] = qvel[w, j] * s_trans
        v = pv + rot * s_rot + trans * s_trans
        cvel[w, b] = v


class MuJoCoWarpSpeedBounds:
    """The bodies' speed bounds under MuJoCo-Warp: :class:`MuJoCoSpeedBounds`'s scaling in one kernel (a thread a
    world), after each step at the new state's kinematics; capturable (kernel launches only)."""

    def __init__(self, host: MuJoCoSpeedBounds, mj_model, num_worlds: int, device):
        def ints(values):
            return wp.array(np.asarray(values, dtype=np.int32), dtype=wp.int32, device=device)

        self.first = int(host.first)
        self.parent, self.root = ints(mj_model.body_parentid), ints(mj_model.body_rootid)
        self.dofadr, self.dofnum = ints(mj_model.body_dofadr), ints(mj_model.body_dofnum)
        self.lin = wp.array(host.lin.astype(np.float32), dtype=float, device=device)
        self.ang = wp.array(host.ang.astype(np.float32), dtype=float, device=device)
        self.bounded = ints(np.isfinite(host.lin) | np.isfinite(host.ang))
        self.device = device
        self.num_worlds = num_worlds

    def kernel_modules(self) -> list:
        return modules_named([__name__])

    def apply(self, d) -> None:
        """Scale MuJoCo-Warp's ``d.qvel`` so every bounded body is within its bounds (``d``'s kinematics and
        velocities computed at the state), ``d.cvel`` rewritten to match."""
        wp.launch(
            _bound_mujoco_warp, self.num_worlds, device=self.device,
            inputs=(self.first, self.parent, self.root, self.dofadr, self.dofnum, self.lin, self.ang, self.bounded,
                    d.qvel, d.cvel, d.cdof, d.xipos, d.subtree_com),
        )  # fmt: skip


@wp.func
def _within(qd: wp.spatial_vector, bound: wp.vec2) -> wp.spatial_vector:
    """A body velocity (center of mass linear, angular) with each part scaled down to its bound (linear, angular)."""
    v = wp.spatial_top(qd)
    w = wp.spatial_bottom(qd)
    speed = wp.length(v)
    if speed > bound[0]:
        v = v * (bound[0] / speed)
    spin = wp.length(w)
    if spin > bound[1]:
        w = w * (bound[1] / spin)
    return wp.spatial_vector(v, w)


@wp.kernel
def _bound_body_velocities(bodies: wp.array[wp.int32], bounds: wp.array[wp.vec2], body_qd: wp.array[wp.spatial_vector]):
    b = bodies[wp.tid()]
    body_qd[b] = _within(body_qd[b], bounds[b])


class BodySpeedBounds:
    """The bodies' speed bounds on Newton's body velocities (linear of the center of mass, angular), in one kernel:
    for the maximal-coordinate solvers, whose body velocities are their state."""

    def __init__(self, model, bodies: np.ndarray):
        self.bodies = wp.array(bodies.astype(np.int32), dtype=wp.int32, device=model.device)
        self.bounds = model.body_max_velocity

    @classmethod
    def of(cls, model) -> BodySpeedBounds | None:
        bodies = bounded_bodies(model)
        return cls(model, bodies) if len(bodies) else None

    def kernel_modules(self) -> list:
        """The Warp module of its kernel (loaded before the first frame, with the solver's)."""
        return modules_named([__name__])

    def apply(self, body_qd) -> None:
        wp.launch(_bound_body_velocities, len(self.bodies), inputs=(self.bodies, self.bounds, body_qd),
                  device=body_qd.device)  # fmt: skip

    def apply_to(self, state) -> None:
        """:meth:`apply` on a step's output ``state`` (Newton's)."""
        self.apply(state.body_qd)


def report_unkept_speed_bounds(model, solver, diagnostics) -> None:
    """Add to ``diagnostics`` the bodies of ``model`` whose speed bounds ``solver`` does not keep (its
    ``keeps_speed_bounds``), with why: said once per run."""
    if getattr(solver, "keeps_speed_bounds", False):
        return
    engine = solver.name + (f" ({solver.backend})" if getattr(solver, "backend", None) else "")
    said = unkept_message(model, engine)
    if said is not None:
        for label in said[1]:
            diagnostics.add(said[0], label)
