"""Joint actuators: an effort computed outside the engine from a control law, clamped, and applied to one DOF.

What a ``NewtonActuator`` prim authors, in SI units (joint space: N·m and rad for a revolute DOF, N and m for a
prismatic one). The solvers step them (``newton_usd.solvers.actuators``); this module only describes them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

DRIVES = ("pd", "pid", "neural")
"""The control laws an actuator may have (one each)."""

NETWORKS = ("mlp", "lstm", "gru")
"""The kinds of network a neural law may run (its model file's ``model_type``)."""

CLAMPS = ("max_effort", "dc_motor", "position_based")
"""The clampings an actuator may stack on its control law's effort."""


@dataclass(frozen=True)
class ActuatorSpec:
    """One actuator's control law, clampings and delay.

    Attributes:
        drive: "pd", "pid" or "neural". PD and PID: ``effort = const_effort + kp (target_pos - q) + ki integral +
            kd (target_vel - qd)``; ``ki`` and ``integral_max`` (the integral of the position error is kept within
            +-integral_max) for PID. Neural: a trained network's output from the position error and the velocity
            (the gains unused).
        model_path: a neural law's network, an ONNX file (absolute path).
        network: its kind, one of :data:`NETWORKS` (Newton's ``DriveNeuralMLP``, ``DriveNeuralLSTM``,
            ``DriveNeuralGRU``).
        sample_dt: the step (s) a GRU was trained at, the only one it runs at (its ``sample_dt_s``); 0: any step.
        clamps: ``(kind, values)`` in the order applied, kind one of :data:`CLAMPS`: "max_effort" ``{"max_effort"}``,
            "dc_motor" ``{"saturation_effort", "velocity_limit", "max_motor_effort"}``, "position_based"
            ``{"lookup_positions", "lookup_efforts"}`` (tuples, positions non-decreasing).
        delay_steps: the targets the law sees are those of this many steps ago (0: the current ones).
    """

    drive: str = "pd"
    kp: float = 0.0
    kd: float = 0.0
    ki: float = 0.0
    const_effort: float = 0.0
    integral_max: float = math.inf
    clamps: tuple = field(default_factory=tuple)
    delay_steps: int = 0
    model_path: str = ""
    network: str = ""
    sample_dt: float = 0.0

    def __post_init__(self):
        if self.drive not in DRIVES:
            raise ValueError(f"unknown actuator drive {self.drive!r}; valid: {', '.join(DRIVES)}")
        if self.drive == "neural" and (not self.model_path or self.network not in NETWORKS):
            raise ValueError(f"a neural law needs a model_path and a network, one of {', '.join(NETWORKS)}")
        for kind, _ in self.clamps:
            if kind not in CLAMPS:
                raise ValueError(f"unknown actuator clamping {kind!r}; valid: {', '.join(CLAMPS)}")

    def clamp(self, kind: str):
        """The values of the clamping ``kind`` (None where it has none)."""
        return next((values for k, values in self.clamps if k == kind), None)

    def max_effort(self) -> float:
        """The largest effort its clampings allow at any state (inf: unbounded)."""
        bound = math.inf
        for kind, values in self.clamps:
            if kind == "max_effort":
                bound = min(bound, values["max_effort"])
            elif kind == "dc_motor":  # (moving against its direction, a motor gives more than at stall, up to this)
                bound = min(bound, values["max_motor_effort"])
            elif kind == "position_based":
                bound = min(bound, max(values["lookup_efforts"], default=0.0))
        return bound
