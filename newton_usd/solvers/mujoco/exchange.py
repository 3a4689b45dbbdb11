"""The cpu backend's state exchange between States and the engine's MuJoCo state (:mod:`.engine`), lazily.

A step leaves its output State *pending* (``State._pending`` is a :class:`PendingState`): MuJoCo's values
become ``joint_q``, ``joint_qd``, ``body_q`` and ``body_qd`` when one of those is read, not at every step.
While the engine has not moved on they come from its state and derived fields (``xpos``, ``cvel``, ...,
current since every step ends with the position and velocity stages); before it moves on (the next step,
a reset) the pending state gets a copy of its state (qpos, qvel, mocap poses: the batch's whole rows),
and its body fields are then computed from that copy on a scratch ``MjData`` by the same functions
(``mj_kinematics``, ``mj_comPos``, ``mj_comVel``), so they are the same values.

A pending State that comes back as ``state_in`` is not converted back: if the engine still holds it nothing
is pushed, else its copied qpos/qvel go back exactly (and its mocap poses: from ``body_q`` where that array
was written, else from the copy).

What a user can reach stays as if every step wrote all four arrays:

- reading an array as an attribute writes it first;
- an array something else references (a kept ``wp.array``, a numpy view of it, a Warp slice: its reference
  count shows them) or that does not own its memory (a view into another array) is written at every step,
  as before;
- an array read through its attribute, held, or not owning its memory is compared byte for byte, before
  its State is stepped from, with what was written into it: edited joint coordinates are pushed as the
  user left them (the State stops being pending), an edited ``body_q`` moves the kinematic (mocap) bodies.
"""

from __future__ import annotations

import sys
import weakref

import mujoco
import numpy as np
import warp as wp

from ...core.model import State
from .engine import BODY_FIELDS

NAMES = ("joint_q", "joint_qd", "body_q", "body_qd")
JOINT_Q, JOINT_QD, BODY_Q, BODY_QD = 1, 2, 4, 8
JOINTS = JOINT_Q | JOINT_QD
BODIES = BODY_Q | BODY_QD
ALL = JOINTS | BODIES
_BIT = {name: 1 << i for i, name in enumerate(NAMES)}

_refcount = getattr(sys, "getrefcount", None)  # (CPython; elsewhere every array counts as held)


def _held(arrays, base: int) -> int:
    """Bits of the four ``arrays`` referenced from more places than ``base`` counts (see :func:`_base_count`)."""
    if _refcount is None:
        return ALL
    return (
        (_refcount(arrays[0]) > base)
        | ((_refcount(arrays[1]) > base) << 1)
        | ((_refcount(arrays[2]) > base) << 2)
        | ((_refcount(arrays[3]) > base) << 3)
    )


def _base_count() -> int:
    """The reference count :func:`_held` sees for an array that only its State's ``__dict__``, its
    PendingState's ``arrays`` and one numpy view reference (measured through the same code)."""
    if _refcount is None:
        return 0
    probes = tuple(object() for _ in NAMES)
    holders = ({i: p for i, p in enumerate(probes)}, list(probes))  # noqa: F841  (a State's __dict__, the views)
    base = 0
    while _held(probes, base):
        base += 1
    return base


_BASE = _base_count()


def _copy_parts(n: int):
    """``copy(dst, src)`` copying ``src[i]`` into ``dst[i]`` for ``n`` parts (unrolled: a step makes one)."""
    if n == 1:

        def copy(dst, src):
            dst[0][...] = src[0]

    elif n == 2:

        def copy(dst, src):
            dst[0][...] = src[0]
            dst[1][...] = src[1]

    elif n == 4:

        def copy(dst, src):
            dst[0][...] = src[0]
            dst[1][...] = src[1]
            dst[2][...] = src[2]
            dst[3][...] = src[3]

    else:

        def copy(dst, src):
            for d, s in zip(dst, src, strict=True):
                d[...] = s

    return copy


class PendingState:
    """One State's values as a SolverMuJoCo (cpu backend) computed them, written into its arrays when read.

    ``stale``: bits of the arrays that do not hold these values yet; ``handed``: arrays read through their
    attribute since their bytes were recorded (``synced``); ``live``: the engine still holds these
    values; else ``snap`` is a copy of that state (one array per part of the engine's ``snapshot_parts``)."""

    __slots__ = ("exchange", "arrays", "views", "always", "stale", "handed", "synced", "live", "snap", "kin")
    __slots__ += ("__weakref__",)

    def __init__(self, exchange, arrays, views):
        self.exchange = exchange
        self.arrays = arrays  # the State's joint_q, joint_qd, body_q, body_qd
        self.views = views  # (num_worlds, per world, ...) numpy views of them
        # Arrays that do not own their memory (views of something a user may write): treated as held.
        self.always = sum(1 << i for i, a in enumerate(arrays) if a.deleter is None)
        self.stale = 0
        self.handed = 0
        self.synced = [None] * len(NAMES)
        self.live = False
        self.snap = None
        self.kin = None  # body fields and xmat computed from snap, once needed

    def read(self, state, name):
        bit = _BIT[name]
        if self.stale & bit:
            self.exchange.fill(self, bit)
        self.handed |= bit
        return state.__dict__[name]

    def release(self, state):
        if self.stale:
            self.exchange.fill(self, self.stale)
        self.drop()
        state.__dict__.pop("_pending", None)

    def drop(self):
        """Forget these values (their State was released, or is being overwritten)."""
        self.stale = 0
        if self.exchange.live is self:
            self.exchange.live = None


def discard_pending(state) -> None:
    """Detach a pending output from ``state`` before its arrays are overwritten (written first when another
    kind of solver left it)."""
    pending = getattr(state, "_pending", None)
    if pending is None:
        return
    if isinstance(pending, PendingState):
        pending.drop()
        state.__dict__.pop("_pending", None)
    else:
        pending.release(state)


class StateExchange:
    """States <-> the cpu backend's engine (see the module's docstring)."""

    def __init__(self, solver):
        self.solver = solver
        self.map = solver.map
        self.engine = e = solver._engine
        self.num_worlds = solver.num_worlds
        self.parts = e.snapshot_parts  # what a copy of the engine's state is made of
        self.copy_parts = _copy_parts(len(self.parts))
        self.columns = e.columns  # name -> (part, columns)
        self.qpos, self.qvel, self.mocap_pos, self.mocap_quat = e.qpos, e.qvel, e.mocap_pos, e.mocap_quat
        self.body = e.body
        self.xmat = e.xmat.reshape(e.xmat.shape[:-1] + (3, 3))
        self.nmocap = solver.mj_model.nmocap
        self.mocap_body, self.mocap_id = solver._mocap_body, solver._mocap_id
        # Arrays whose edits are pushed: joint coordinates, and body_q where it moves kinematic bodies.
        self.watch = JOINTS | (BODY_Q if len(self.mocap_body) else 0)
        self.free = bool(len(self.map.free_q))
        self.live = None  # the PendingState the engine holds
        self.pending = weakref.WeakSet()  # every PendingState made, for fill_pending
        self.scratch = None

    # ------------------------------------------------------------------ a step's input
    def take(self, state) -> bool:
        """Put ``state`` (a step's input) into the engine's state, unless it holds it; returns whether it
        wrote anything (then the engine's stages are stale). First the live pending state gets its copy."""
        rec = getattr(state, "_pending", None)
        if rec is not None and rec.exchange is self:
            edited = self.edited(rec) if self.watch & ~rec.stale else 0
            if not edited & JOINTS:
                live = self.live
                if live is not None:
                    self.freeze(live)  # (also when it is this state: a failing step may leave a mix)
                if live is not rec:
                    self.restore(rec)
                    return True
                if edited:  # body_q edited: the kinematic bodies move
                    self.push_mocap(*self.solver._mocap_poses_of(rec.views[2]))
                    return True
                return False
            rec.release(state)  # edited joint coordinates: pushed as the user left them
        solver = self.solver
        if not solver._needs_push(state):
            if self.live is not None:
                self.freeze(self.live)
            if len(self.mocap_body):
                self.push_mocap(*solver._mocap_poses(state))
                return True
            return False
        qpos, qvel = solver._to_mujoco(state.joint_q, state.joint_qd)
        mocap = solver._mocap_poses(state) if len(self.mocap_body) else None
        if self.live is not None:
            self.freeze(self.live)
        self.qpos[:], self.qvel[:] = qpos, qvel
        self.engine.stale = True
        if mocap is not None:
            self.push_mocap(*mocap)
        return True

    def edited(self, rec) -> int:
        """Bits of the watched arrays of ``rec`` that were written since their bytes were recorded (only
        arrays that were read through their attribute, are held, or do not own their memory are compared)."""
        check = self.watch & ~rec.stale
        if not check:
            return 0
        check &= rec.handed | rec.always | _held(rec.arrays, _BASE)
        if not check:
            return 0
        out = 0
        for i in range(len(NAMES)):
            bit = 1 << i
            if check & bit:
                raw = rec.views[i].tobytes()
                if raw != rec.synced[i]:
                    rec.synced[i] = raw
                    out |= bit
        rec.handed &= ~check
        return out

    def freeze(self, rec) -> None:
        """Give the live pending state ``rec`` its copy of the engine's state (about to change)."""
        if rec.snap is None:
            rec.snap = tuple(np.empty(p.shape) for p in self.parts)
        self.copy_parts(rec.snap, self.parts)
        rec.live = False
        rec.kin = None
        self.live = None

    def restore(self, rec) -> None:
        """The engine's qpos, qvel (and mocap poses) from a pending state that is not live."""
        self.qpos[...] = self.copied(rec, "qpos")
        self.qvel[...] = self.copied(rec, "qvel")
        self.engine.stale = True
        if len(self.mocap_body):
            if rec.stale & BODY_Q:
                self.mocap_pos.reshape(self.num_worlds, -1)[...] = self.copied(rec, "mocap_pos")
                self.mocap_quat.reshape(self.num_worlds, -1)[...] = self.copied(rec, "mocap_quat")
            else:  # body_q was written (and maybe edited): it says where the kinematic bodies are
                self.push_mocap(*self.solver._mocap_poses_of(rec.views[2]))

    def copied(self, rec, name) -> np.ndarray:
        """``(num_worlds, n)``: field ``name`` of the state copied into ``rec``."""
        part, columns = self.columns[name]
        return rec.snap[part][:, columns]

    def push_mocap(self, pos, quat) -> None:
        self.mocap_pos[:, self.mocap_id], self.mocap_quat[:, self.mocap_id] = pos, quat
        self.engine.stale = True

    # ------------------------------------------------------------------ a step's output
    def give(self, state) -> bool:
        """Make ``state`` the pending output of the engine's state (its held arrays written now); False when it
        cannot be pending (not a :class:`State`, or arrays not on the CPU): then the caller writes it."""
        rec = getattr(state, "_pending", None)
        if rec is None or rec.exchange is not self:
            discard_pending(state)
            rec = self.attach(state)
            if rec is None:
                return False
        rec.live = True  # (its copy, and what was computed from it, are only used once frozen again)
        rec.stale = ALL
        rec.handed = 0
        self.live = rec
        self.solver._last_out = None
        held = rec.always | _held(rec.arrays, _BASE)
        if held:
            self.fill(rec, held)
        return True

    def attach(self, state):
        """A new PendingState for ``state``, or None where it cannot be one."""
        if not isinstance(state, State):
            return None
        arrays = tuple(state.__dict__.get(n) for n in NAMES)
        if not all(isinstance(a, wp.array) and a.device.is_cpu and a.is_contiguous for a in arrays):
            return None
        W, smap = self.num_worlds, self.map
        views = []
        for a, per in zip(arrays, (smap.model_nq, smap.model_nv, len(smap.body_mj), len(smap.body_mj)), strict=True):
            host = a.numpy()
            if host.shape[0] != W * per:
                return None  # (the eager path reports the mismatch)
            views.append(host.reshape((W, per) + host.shape[1:]))
        rec = PendingState(self, arrays, tuple(views))
        state.__dict__["_pending"] = rec
        self.pending.add(rec)
        return rec

    # ------------------------------------------------------------------ reads
    def fill(self, rec, bits: int) -> None:
        """Write the values of ``rec`` into its arrays named by ``bits``."""
        v = rec.views
        xmat = body = None
        if rec.live:
            qpos, qvel, xmat, body = self.qpos, self.qvel, self.xmat, self.body
        else:
            qpos, qvel = self.copied(rec, "qpos"), self.copied(rec, "qvel")
            if bits & BODIES or (bits & JOINT_QD and self.free):
                body, xmat = self.kinematics(rec)
        if bits & JOINTS:
            jq = v[0] if bits & JOINT_Q else None
            jqd = v[1] if bits & JOINT_QD else None
            self.map.from_mujoco(qpos, qvel, jq, jqd, xmat)
        if bits & BODIES:
            self.map.body_state_into(*body, v[2] if bits & BODY_Q else None, v[3] if bits & BODY_QD else None)
        for i in range(len(NAMES)):
            if bits & self.watch & (1 << i):
                rec.synced[i] = v[i].tobytes()
        rec.stale &= ~bits

    def kinematics(self, rec):
        """``(body fields, xmat)`` of the state copied into ``rec``: MuJoCo's kinematics, COM positions and
        COM velocities on a scratch MjData, world by world (each with its own MjModel)."""
        if rec.kin is not None:
            return rec.kin
        models = self.solver.mj_models
        if self.scratch is None:
            self.scratch = mujoco.MjData(self.solver.mj_model)
        d = self.scratch
        W = self.num_worlds
        body = tuple(np.empty((W,) + f.shape[1:]) for f in self.body)
        xmat = np.empty(self.xmat.shape)
        qpos, qvel = self.copied(rec, "qpos"), self.copied(rec, "qvel")
        if self.nmocap:
            mocap_pos, mocap_quat = self.copied(rec, "mocap_pos"), self.copied(rec, "mocap_quat")
        for w in range(W):
            d.qpos[:], d.qvel[:] = qpos[w], qvel[w]
            if self.nmocap:
                d.mocap_pos[:] = mocap_pos[w].reshape(-1, 3)
                d.mocap_quat[:] = mocap_quat[w].reshape(-1, 4)
            m = models[w]
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
            mujoco.mj_comVel(m, d)
            for out, name in zip(body, BODY_FIELDS, strict=True):
                out[w] = getattr(d, name)
            xmat[w] = d.xmat.reshape(-1, 3, 3)
        rec.kin = (body, xmat)
        return rec.kin

    def fill_pending(self) -> None:
        """Write every pending state's arrays now (before the model's parameters change, which the body
        velocities of a copied state would otherwise be computed with)."""
        for rec in list(self.pending):
            if rec.stale:
                self.fill(rec, rec.stale)
