"""Keyframes: the compiled model's ``key_*`` rows filled from the model's keyframes, and every world put into
one (``mj_resetDataKeyframe``'s meaning, on both backends)."""

from __future__ import annotations

import numpy as np
import warp as wp

from ...core.quat import xyzw_to_wxyz
from .host_exchange import store


class Keyframes:
    """:class:`~newton_usd.solvers.mujoco.SolverMuJoCo`'s keyframes."""

    def _init_keyframes(self, world0):
        """Fill the compiled model's keyframes (``key_*``) from the model's keyframes (model coordinates)
        and their MuJoCo extras (``model.mujoco.keyframe``: MjcActuator controls and activations, mocap
        poses), so that ``mj_resetDataKeyframe`` and :meth:`reset_to_keyframe` agree."""
        m = self.mj_model
        if not m.nkey:
            return
        qpos, qvel = np.array(m.key_qpos), np.array(m.key_qvel)
        self.map.to_mujoco(world0.keyframe_joint_q, world0.keyframe_joint_qd, qpos, qvel)
        m.key_qpos[:], m.key_qvel[:] = qpos, qvel
        extras = getattr(world0.mujoco, "keyframe", None) or {}
        actuators = {e["path"]: i for i, e in enumerate(getattr(world0.mujoco, "actuator", None) or [])}
        bodies = {label: b for b, label in enumerate(world0.body_label)}
        for k, label in enumerate(world0.keyframe_label):
            extra = extras.get(label, {})
            for path, value in extra.get("ctrl", {}).items():
                a = self._mjc_ctrl[actuators[path]] if path in actuators else -1
                if a >= 0:
                    m.key_ctrl[k, a] = value
            for path, value in extra.get("act", {}).items():
                a = self._mjc_ctrl[actuators[path]] if path in actuators else -1
                if a >= 0 and m.actuator_actnum[a]:
                    adr = m.actuator_actadr[a]
                    m.key_act[k, adr : adr + m.actuator_actnum[a]] = value
            for body, (pos, quat) in extra.get("mocap", {}).items():
                mocap = self.spec_map.body_mocap[bodies[body]] if body in bodies else -1
                if mocap >= 0:
                    m.key_mpos[k, 3 * mocap : 3 * mocap + 3] = pos  # nmocap positions in a row
                    m.key_mquat[k, 4 * mocap : 4 * mocap + 4] = xyzw_to_wxyz(quat)

    def reset_to_keyframe(self, state, key, control=None) -> None:
        """Put every world into keyframe ``key`` (index or label), as ``mj_resetDataKeyframe`` does: joint
        coordinates and velocities, actuator activations and mocap (kinematic) poses, and, when
        ``control`` is given, the MjcActuator controls; ``state`` gets the keyframe's body poses."""
        k = self.keyframe_index(key)
        m = self.mj_model
        W = self.num_worlds
        # Each world's own row (worlds placed elsewhere have their own free-joint poses).
        qpos = np.broadcast_to(m.key_qpos[k], (W, m.nq)).copy()
        qvel = np.broadcast_to(m.key_qvel[k], (W, m.nv)).copy()
        rows_q = self.model.keyframe_joint_q[k].reshape(W, -1)
        rows_qd = self.model.keyframe_joint_qd[k].reshape(W, -1)
        self.map.to_mujoco(rows_q, rows_qd, qpos, qvel)
        if self.backend == "cpu":
            e = self._engine
            if self._exchange.live is not None:
                self._exchange.freeze(self._exchange.live)  # (a pending state keeps its values)
            e.qpos[:], e.qvel[:] = qpos, qvel
            if m.na:
                e.act[:] = m.key_act[k]
            if len(self._mocap_body):
                e.mocap_pos[:], e.mocap_quat[:] = m.key_mpos[k], m.key_mquat[k]
            e.forward()
            if not self._exchange.give(state):
                self._pull(qpos, qvel, self._body_out, state)
        else:
            w = self.mjw_data
            w.qpos.assign(qpos.astype(np.float32))
            w.qvel.assign(qvel.astype(np.float32))
            if m.na:
                w.act.assign(np.broadcast_to(m.key_act[k], (W, m.na)).astype(np.float32))
            if len(self._mocap_body):
                w.mocap_pos.assign(np.broadcast_to(m.key_mpos[k], (W, m.nmocap, 3)).astype(np.float32))
                w.mocap_quat.assign(np.broadcast_to(m.key_mquat[k], (W, m.nmocap, 4)).astype(np.float32))
            with wp.ScopedDevice(self.device):
                for stage in (self._mjw.kinematics, self._mjw.com_pos, self._mjw.com_vel):
                    stage(self.mjw_model, w)
            self._warp_stale = True
            self._dev_last = None
            body = tuple(getattr(w, n).numpy() for n in self._BODY_FIELDS)
            self._pull(qpos, qvel, body, state)
        if control is not None and len(self._mjc_ctrl):
            built = self._mjc_ctrl >= 0
            ctrl = self._per_world(control.mujoco.ctrl)
            ctrl[:, built] = m.key_ctrl[k, self._mjc_ctrl[built]]
            store(control.mujoco.ctrl, ctrl.reshape(-1).astype(np.float32))
