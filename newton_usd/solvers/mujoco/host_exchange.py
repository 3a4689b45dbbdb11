"""The solver's exchange through numpy on the host: model arrays as per-world numpy views (cached), MuJoCo's
``qpos``/``qvel``/``ctrl``/``qfrc_applied`` from a State and a Control, kinematic (mocap) poses, and MuJoCo's
state written into a State at once. The cpu backend's pending states (:mod:`~.mujoco.exchange`) and the warp backend's
host path build on it; the warp backend's device path is :mod:`~.mujoco.warp_exchange`."""

from __future__ import annotations

import operator

import numpy as np
import warp as wp

from ...core.quat import xyzw_to_wxyz
from .exchange import discard_pending


class HostExchange:
    """:class:`~newton_usd.solvers.mujoco.SolverMuJoCo`'s conversions between model arrays and MuJoCo's, on the
    host."""

    def _per_world(self, array, dtype=np.float64) -> np.ndarray:
        """A model-sized Warp array as numpy ``(num_worlds, per world, ...)``."""
        a = array.numpy()
        return a.reshape((self.num_worlds, -1) + a.shape[1:]).astype(dtype, copy=False)

    def _bundle_views(self, holder, names):
        """:meth:`_host_view` of the arrays ``names`` of a State or Control (cached per holder while it
        keeps the same arrays), or None if one is not on the CPU."""
        key = (id(holder), names)
        hit = self._views.get(key)
        arrays = tuple(getattr(holder, n) for n in names)
        if hit is not None and all(a is b for a, b in zip(hit[0], arrays, strict=True)):
            return hit[1]
        views = tuple(self._host_view(a) for a in arrays)
        if any(v is None for v in views):
            return None
        self._views[key] = (arrays, views)
        return views

    def _host_view(self, array):
        """A ``(num_worlds, per world, ...)`` numpy view sharing a CPU Warp array's memory (cached: the
        per-step exchange writes and reads through it), or None for an array on another device."""
        hit = self._views.get(id(array))
        if hit is not None and hit[0] is array:
            return hit[1]
        if not array.device.is_cpu:
            return None
        if len(self._views) > 256:  # states come and go (resets): drop the old views
            self._views.clear()
        a = array.numpy()
        view = a.reshape((self.num_worlds, -1) + a.shape[1:])
        self._views[id(array)] = (array, view)
        return view

    def _to_mujoco(self, joint_q, joint_qd):
        """MuJoCo ``(qpos, qvel)``, ``(num_worlds, nq|nv)``, from model coordinate arrays."""
        qpos = np.zeros((self.num_worlds, self.mj_model.nq))
        qvel = np.zeros((self.num_worlds, self.mj_model.nv))
        self.map.to_mujoco(self._per_world(joint_q), self._per_world(joint_qd), qpos, qvel)
        return qpos, qvel

    def _needs_push(self, state_in) -> bool:
        """Whether ``state_in``'s coordinates must go into MuJoCo: not when it is the state this solver
        wrote last (at once), unchanged (MuJoCo then goes on from its own double-precision state)."""
        last = self._last_out
        if last is None or last[0] is not state_in:
            return True
        return _raw(self, state_in.joint_q) != last[1] or _raw(self, state_in.joint_qd) != last[2]

    def _mocap_poses(self, state):
        """``(mocap_pos, mocap_quat)``, ``(num_worlds, n, 3|4)``, of the kinematic bodies in ``state``."""
        return self._mocap_poses_of(self._per_world(state.body_q))

    def _mocap_poses_of(self, body_q):
        """``(mocap_pos, mocap_quat)`` of the kinematic bodies in ``body_q`` rows ``(num_worlds, n, 7)``."""
        rows = body_q[:, self._mocap_body]
        return rows[..., :3], xyzw_to_wxyz(rows[..., 3:])

    _CONTROLS = ("joint_target_pos", "joint_target_vel", "joint_f")

    def _push_controls(self, control) -> bool:
        """The cpu backend's controls into the batch's ``ctrl`` and ``qfrc_applied`` rows (as :meth:`_controls`
        computes them), when they changed: skipped while ``control`` is the Control pushed last with the
        same arrays holding the same bytes (the gains unchanged). Returns whether it wrote them."""
        cached = self._ctl
        if cached is not None and cached[0] is control:
            try:
                for get, array, view, raw in cached[1]:
                    if get(control) is not array or view.tobytes() != raw:
                        break
                else:
                    return False
            except AttributeError:  # (an array it lacks, or None: not cached)
                pass
        mjc = getattr(getattr(control, "mujoco", None), "ctrl", None) if len(self._mjc_ctrl) else None
        arrays = tuple(getattr(control, n) for n in self._CONTROLS) + (mjc,)
        views = tuple(None if a is None else self._host_view(a) for a in arrays)
        if any(v is None for a, v in zip(arrays, views, strict=True) if a is not None):  # not on the CPU
            self._ctrl[:], self._qfrc[:] = self._controls(control)
            self._ctl = None
            return True
        target_pos, target_vel, joint_f, mjc_view = views
        if len(self.map.actuator_dof):
            self._ctrl[:, : len(self.map.actuator_dof)] = self.map.ctrl(self._ke, self._kd, target_pos, target_vel)
        self.map.qfrc(joint_f, self._qfrc)
        if mjc_view is not None:
            built = self._mjc_built
            self._ctrl[:, self._mjc_ctrl[built]] = mjc_view[:, built]
        # What the next step compares: the drive targets only where there are drives.
        watched = [2] + ([0, 1] if len(self.map.actuator_dof) else []) + ([3] if len(self._mjc_ctrl) else [])
        self._ctl = (
            control,
            tuple(
                (self._CONTROL_GETTERS[i], arrays[i], views[i], None if views[i] is None else views[i].tobytes())
                for i in watched
            ),
        )
        return True

    _CONTROL_GETTERS = tuple(operator.attrgetter(n) for n in _CONTROLS + ("mujoco.ctrl",))

    def _controls(self, control):
        """MuJoCo ``(ctrl, qfrc_applied)``, ``(num_worlds, nu|nv)``, from a Control: the drive actuators
        first (``ke * target_pos + kd * target_vel``), then the MjcActuator prims' controls."""
        ctrl = np.zeros((self.num_worlds, self.mj_model.nu))
        n_drives = len(self.map.actuator_dof)
        if n_drives:
            targets = self._per_world(control.joint_target_pos), self._per_world(control.joint_target_vel)
            ctrl[:, :n_drives] = self.map.ctrl(self._ke, self._kd, *targets)
        qfrc = np.zeros((self.num_worlds, self.mj_model.nv))
        self.map.qfrc(self._per_world(control.joint_f), qfrc)
        mjc = getattr(getattr(control, "mujoco", None), "ctrl", None)
        if mjc is not None and len(self._mjc_ctrl):
            built = self._mjc_ctrl >= 0
            ctrl[:, self._mjc_ctrl[built]] = self._per_world(mjc)[:, built]
        return ctrl, qfrc

    _BODY_FIELDS = ("xpos", "xquat", "xipos", "cvel", "subtree_com")

    def _pull(self, qpos, qvel, body, state_out):
        """MuJoCo's state into ``state_out`` at once (the warp backend, and States the cpu backend cannot leave
        pending): straight into views of its arrays on the CPU."""
        discard_pending(state_out)
        views = self._bundle_views(state_out, ("joint_q", "joint_qd", "body_q", "body_qd"))
        if views is not None:
            jq, jqd, body_q, body_qd = views
            cpu_rows = self._engine is not None and qpos is self._qpos  # (the engine's: its xmat is current)
            xmat = self._xmat.reshape(self._xmat.shape[:-1] + (3, 3)) if cpu_rows else None
            self.map.from_mujoco(qpos, qvel, jq, jqd, xmat)
            self.map.body_state_into(*body, body_q, body_qd)
            self._last_out = (state_out, jq.tobytes(), jqd.tobytes())
            return
        W = self.num_worlds
        jq = np.zeros((W, self.map.model_nq))
        jqd = np.zeros((W, self.map.model_nv))
        self.map.from_mujoco(np.asarray(qpos, dtype=np.float64), np.asarray(qvel, dtype=np.float64), jq, jqd)
        body_q, body_qd = self.map.body_state(*(np.asarray(x, dtype=np.float64) for x in body))
        jq32, jqd32 = jq.reshape(-1).astype(np.float32), jqd.reshape(-1).astype(np.float32)
        store(state_out.joint_q, jq32)
        store(state_out.joint_qd, jqd32)
        store(state_out.body_q, body_q.reshape(-1, 7))
        store(state_out.body_qd, body_qd.reshape(-1, 6))
        self._last_out = (state_out, jq32.tobytes(), jqd32.tobytes())


def _raw(solver, array) -> bytes:
    """The bytes of a Warp array (through the solver's cached view on the CPU): a cheap equality key."""
    view = solver._host_view(array)
    return view.tobytes() if view is not None else array.numpy().astype(np.float32).tobytes()


def store(array: wp.array, values: np.ndarray) -> None:
    """Copy ``values`` into a Warp array: in place through a numpy view on the CPU, else a transfer."""
    if array.device.is_cpu:
        array.numpy().reshape(values.shape)[...] = values
    else:
        array.assign(values.astype(np.float32))
