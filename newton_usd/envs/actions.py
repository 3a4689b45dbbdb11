"""Actions: the DOFs an environment drives (by prim pattern), what it drives (efforts, position or velocity targets),
their bounds, and the kernel writing a batch of actions into the Control."""

from __future__ import annotations

import numpy as np
import warp as wp

from ..core.types import DriveMode
from ..errors import NewtonUsdError
from ..selection import ArticulationView
from .kernels import Launches, write_actions

ACTION_MODES = ("effort", "position", "velocity")
UNBOUNDED = 1e10
"""A model bound at or beyond this (finalize's clamp of an infinite one) is no bound."""

# (the Control array each mode writes, the model array of its authored bounds, what the bound is called)
_TARGET = {"effort": "joint_f", "position": "joint_target_pos", "velocity": "joint_target_vel"}


def _actuated_dofs(model) -> dict:
    """The DOFs joint actuators drive (NewtonActuator prims): DOF -> its actuator's spec."""
    joints = model.actuator_joint.numpy() if getattr(model, "actuator_count", 0) else ()
    starts = model.joint_qd_start.numpy()
    return {int(starts[j]): spec for j, spec in zip(joints, model.actuator_spec, strict=True)}


def per_env_columns(view, kind: str, num_envs: int, what: str) -> np.ndarray:
    """A view's element indices of ``kind`` regrouped one row per environment ``(num_envs, n)``: each world's rows
    side by side (a pattern that matches several prims in a world gives them all)."""
    cols = view.columns(kind)
    worlds = view.worlds
    per = np.bincount(worlds, minlength=num_envs)
    if len(per) != num_envs or (per != per[0]).any():
        raise NewtonUsdError(f"{what} {view.pattern!r} matches {sorted(set(per.tolist()))} prims per environment: "
                             "every environment needs the same")  # fmt: skip
    order = np.argsort(worlds, kind="stable")
    return cols[order].reshape(num_envs, -1)


class Actions:
    """The action term of an environment: a row of values per environment, one column per selected DOF.

    Args:
        sim: the :class:`~newton_usd.sim.Simulation` (its model's worlds are the environments).
        joints: prim patterns of the joints (or the articulations, all their joints) whose DOFs are driven, in
            order; None: every DOF that has a drive (``joint_target_mode`` not NONE).
        mode: "effort" (generalized forces into ``Control.joint_f``, N or N m), "position" or "velocity" (drive
            targets: ``joint_target_pos`` / ``joint_target_vel``, m or rad, m/s or rad/s).
        bounds: ``(low, high)`` scalars or one value per DOF, over the authored ones (effort: the drive's max
            force; position: the joint limits; velocity: none authored); None: the authored ones (infinite where
            none is authored). Actions outside are clipped.
    """

    def __init__(self, sim, joints, mode: str, bounds=None):
        if mode not in ACTION_MODES:
            raise NewtonUsdError(f"unknown actions {mode!r}; valid: {', '.join(ACTION_MODES)}")
        self.mode = mode
        model = sim.model
        n_env = model.num_worlds
        self.num_envs = n_env
        mode_of = model.joint_target_mode.numpy()
        self._actuated = _actuated_dofs(model)
        if joints is None:
            drives = mode_of != DriveMode.NONE
            drives[list(self._actuated)] = True
            driven = np.nonzero(drives)[0].reshape(n_env, -1)
            if driven.shape[1] == 0:
                raise NewtonUsdError(f"{model.source}: no DOF has a drive; name the DOFs to act on with joints=[...] "
                                     "(prim patterns of joints or articulations)")  # fmt: skip
            dofs = driven
        else:
            if isinstance(joints, str):
                joints = [joints]
            parts = [per_env_columns(ArticulationView(sim, p), "dof", n_env, "joints pattern") for p in joints]
            dofs = np.concatenate(parts, axis=1)
        if dofs.shape[1] == 0:
            raise NewtonUsdError(f"joints {list(joints)}: the matched prims have no DOF to act on")
        self.dofs = dofs  # (num_envs, actions): model DOF indices
        labels = model.joint_label
        qd_start = model.joint_qd_start.numpy()
        dof_joint = np.searchsorted(qd_start, dofs[0], side="right") - 1
        self.names = [
            labels[j] + ("" if qd_start[j + 1] - qd_start[j] == 1 else f":{d - qd_start[j]}")
            for j, d in zip(dof_joint, dofs[0], strict=True)
        ]
        if mode != "effort":
            self._check_drives(model, mode_of, dofs[0], dof_joint)
        self.low, self.high = self._bounds(model, dofs[0], bounds)
        device = model.device
        self.index = wp.array(dofs.astype(np.int32), dtype=wp.int32, device=device)
        self._low = wp.array(self.low, dtype=wp.float32, device=device)
        self._high = wp.array(self.high, dtype=wp.float32, device=device)
        self.bad = wp.zeros(1, dtype=wp.int32, device=device)  # NaN/infinite device actions (write_actions)
        self._launch = Launches()

    @property
    def size(self) -> int:
        return self.dofs.shape[1]

    def _check_drives(self, model, mode_of, dofs, dof_joint) -> None:
        """Targets need a drive that acts on them: a position target a stiffness, a velocity target a damping."""
        gain = (model.joint_target_ke if self.mode == "position" else model.joint_target_kd).numpy()
        wanted = (DriveMode.POSITION, DriveMode.POSITION_VELOCITY)
        if self.mode == "velocity":
            wanted = (DriveMode.VELOCITY, DriveMode.POSITION_VELOCITY, DriveMode.POSITION)
        for d, j in zip(dofs, dof_joint, strict=True):
            spec = self._actuated.get(int(d))  # (a NewtonActuator's law acts on the targets too)
            if spec is not None and (spec.kp if self.mode == "position" else spec.kd) > 0:
                continue
            if spec is not None and spec.drive == "neural" and self.mode == "position":  # (its network reads them)
                continue
            if mode_of[d] not in wanted or not gain[d] > 0:
                what = "stiffness" if self.mode == "position" else "damping"
                raise NewtonUsdError(
                    f"{model.joint_label[j]}: {self.mode} targets need a drive with a {what} on this DOF "
                    f"(PhysicsDriveAPI drive:*:physics:{what} > 0, or a NewtonActuator's newton:"
                    f"{'kp' if self.mode == 'position' else 'kd'} > 0), and it has none; act on it with "
                    "actions='effort', or author the drive"
                )

    def _bounds(self, model, dofs, bounds):
        n = len(dofs)
        if self.mode == "effort":
            limit = model.joint_effort_limit.numpy()[dofs].astype(np.float64)
            low, high = -limit, limit
        elif self.mode == "position":
            low = model.joint_limit_lower.numpy()[dofs].astype(np.float64)
            high = model.joint_limit_upper.numpy()[dofs].astype(np.float64)
            limited = model.joint_limited.numpy()[dofs].astype(bool)
            low, high = np.where(limited, low, -np.inf), np.where(limited, high, np.inf)
        else:
            low, high = np.full(n, -np.inf), np.full(n, np.inf)
        if bounds is not None:
            try:
                given_low, given_high = (np.broadcast_to(np.asarray(b, dtype=np.float64), (n,)) for b in bounds)
            except (TypeError, ValueError):
                raise NewtonUsdError(f"action_bounds must be (low, high), each a number or {n} numbers (one per "
                                     f"DOF: {', '.join(self.names)}), got {bounds!r}") from None  # fmt: skip
            if not (given_low <= given_high).all():
                raise NewtonUsdError(f"action_bounds: low must not exceed high, got {bounds!r}")
            low, high = given_low.copy(), given_high.copy()
        # (finalize stores "no bound" as 1e10: an unbounded DOF's actions are too)
        low = np.where(np.isfinite(low) & (low > -UNBOUNDED), low, -np.inf).astype(np.float32)
        high = np.where(np.isfinite(high) & (high < UNBOUNDED), high, np.inf).astype(np.float32)
        return low, high

    def load(self, actions, buffer: wp.array) -> None:
        """Copy ``actions`` into ``buffer`` (``(num_envs, size)`` float32, on the model's device); a clear error for a
        wrong shape or NaN (checked on the host for host arrays; a device array's NaN or infinite values are
        counted in :attr:`bad` by the kernel and written as 0: reading them would wait for the device every step)."""
        shape = (self.num_envs, self.size)
        if isinstance(actions, wp.array) or (hasattr(actions, "__dlpack__") and not isinstance(actions, np.ndarray)):
            arr = actions if isinstance(actions, wp.array) else wp.from_dlpack(actions)
            if arr.ndim == 1 and self.num_envs * self.size == arr.shape[0]:
                arr = arr.reshape(shape)
            if tuple(arr.shape) != shape:
                raise NewtonUsdError(self._shape_message(tuple(arr.shape)))
            if arr.dtype != wp.float32 or not arr.is_contiguous:
                arr = wp.array(arr.numpy().astype(np.float32), dtype=wp.float32, device=buffer.device)
            wp.copy(buffer, arr)
            return
        a = np.asarray(actions, dtype=np.float32)
        if a.shape != shape:
            if a.size == self.num_envs * self.size and a.ndim <= 1:
                a = a.reshape(shape)
            else:
                raise NewtonUsdError(self._shape_message(a.shape))
        finite = np.isfinite(a)
        if not finite.all():
            rows = np.nonzero(~finite.all(axis=1))[0]
            raise NewtonUsdError(f"actions are NaN or infinite in environment(s) {rows[:8].tolist()}"
                                 f"{' ...' if len(rows) > 8 else ''} (columns: {', '.join(self.names)})")  # fmt: skip
        if buffer.device.is_cpu:
            buffer.numpy()[...] = a
        else:
            buffer.assign(a)

    def _shape_message(self, got) -> str:
        return (f"actions of shape {got}: expected ({self.num_envs}, {self.size}), one row per environment, one "
                f"column per DOF ({', '.join(self.names)})")  # fmt: skip

    def write(self, actions: wp.array, control) -> None:
        """``actions`` (clipped to the bounds) into the Control's targets or forces of the selected DOFs."""
        target = getattr(control, _TARGET[self.mode])
        self._launch(write_actions, actions.shape, (actions, self._low, self._high, self.index), (target, self.bad),
                     target.device)  # fmt: skip
