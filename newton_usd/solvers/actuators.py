"""Joint actuators stepped for every solver: Newton's actuator library (``newton.actuators``: its drives, clampings
and delay, in Warp kernels) driven from our arrays, their efforts added to the joint forces of each step.

:class:`JointActuators` groups a model's actuators by what their Newton objects share (the control law, the
clampings, a lookup table, whether a delay is kept) into one ``newton.actuators.Actuator`` each, with the
per-actuator values as arrays: one launch per stage of a group a step, whatever the number of worlds; a neural law
(Newton's ``DriveNeuralMLP``, ``DriveNeuralLSTM``, ``DriveNeuralGRU``: an ONNX network run in Warp by warp-nn) is a
group per model file, its network run once a step on all its actuators' inputs. Stateful actuators (a PID's integral,
a delay's buffer, a network's history or hidden state) keep one state, advanced in place each step (no Python-side
swap), so that a step captured in a CUDA graph replays alike.

Each solver hands it the positions, velocities and targets it has, with the indices into them
(:meth:`JointActuators.step`): Newton's solvers our State and Control themselves (``joint_q`` by coordinate,
the rest by DOF), MuJoCo on the CPU compact rows gathered from ``qpos``/``qvel``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import warp as wp
from newton.actuators import (
    Actuator,
    ClampingDCMotor,
    ClampingMaxEffort,
    ClampingPositionBased,
    Delay,
    DriveNeuralGRU,
    DriveNeuralLSTM,
    DriveNeuralMLP,
    DrivePD,
    DrivePID,
)

from ..errors import UsdInputError
from .kernel_loading import modules_named

_CLAMP_CLASSES = {"max_effort": ClampingMaxEffort, "dc_motor": ClampingDCMotor}
_NETWORKS = {"mlp": DriveNeuralMLP, "lstm": DriveNeuralLSTM, "gru": DriveNeuralGRU}  # (a neural law's drive)

_ACTUATORS = "newton._src.actuators."
_MODULES = {  # (a group's law, clamping or delay -> the Python module of its kernels, Newton 1.8)
    "pd": "drives.drive_pd",
    "pid": "drives.drive_pid",
    "mlp": "drives.drive_neural_mlp",
    "lstm": "drives.drive_neural_lstm",
    "gru": "drives.drive_neural_gru",
    "max_effort": "clamping.clamping_max_effort",
    "dc_motor": "clamping.clamping_dc_motor",
    "position_based": "clamping.clamping_position_based",
    "delay": "delay",
}


@dataclass
class _Group:
    actuator: Actuator
    members: np.ndarray  # our actuator indices, in the group's order
    state: object = None  # Actuator.State (advanced in place), or None
    scratch: object = None  # the next state, copied back after each step
    world: wp.array = None  # each member's world
    mask: wp.array = None  # each member's reset flag (see JointActuators.reset)


@wp.kernel
def _members_of_worlds(worlds: wp.array[wp.bool], member_world: wp.array[wp.int32], mask: wp.array[wp.bool]):
    i = wp.tid()
    mask[i] = worlds[member_world[i]]


def _group_key(spec) -> tuple:
    clamps = tuple(
        (kind, tuple(values["lookup_positions"]), tuple(values["lookup_efforts"])) if kind == "position_based" else kind
        for kind, values in spec.clamps
    )
    law = (spec.drive, spec.network, spec.model_path) if spec.drive == "neural" else spec.drive  # (a network each)
    return law, clamps, spec.delay_steps > 0


class JointActuators:
    """A model's joint actuators (``model.actuator_*``) as Newton actuator groups on ``device``.

    Args:
        specs: each actuator's :class:`~newton_usd.core.actuators.ActuatorSpec`.
        pos_index: each actuator's index into the positions it is stepped with.
        vel_index: its index into the velocities, the target positions and velocities and the output forces.
        device: the Warp device of the arrays it is stepped with.
        world: each actuator's world (for :meth:`reset` of some worlds; None: all in world 0).
        labels: each actuator's prim path, for an error that names it.
    """

    def __init__(self, specs, pos_index, vel_index, device, world=None, labels=None):
        self.device = wp.get_device(device)
        self.count = len(specs)
        labels = list(labels) if labels is not None else [s.model_path or f"actuator {i}" for i, s in enumerate(specs)]
        # (a network trained at one step runs at that step only: a GRU's sample_dt_s) -> the first actuator of each
        self._fixed_steps = {s.sample_dt: labels[i] for i, s in reversed(list(enumerate(specs))) if s.sample_dt > 0}
        pos_index = np.asarray(pos_index, dtype=np.uint32)
        vel_index = np.asarray(vel_index, dtype=np.uint32)
        self._world = np.zeros(self.count, np.int32) if world is None else np.asarray(world, dtype=np.int32)
        keys = {}
        for i, spec in enumerate(specs):
            keys.setdefault(_group_key(spec), []).append(i)
        self.groups = [self._group(specs, np.array(members), pos_index, vel_index) for members in keys.values()]
        self._keys = tuple(keys)
        self.stateful = any(g.state is not None for g in self.groups)

    def _group(self, specs, members, pos_index, vel_index) -> _Group:
        chosen = [specs[i] for i in members]
        d = self.device

        def values(name):
            return wp.array(np.array([getattr(s, name) for s in chosen], dtype=np.float32), dtype=wp.float32, device=d)

        first = chosen[0]
        if first.drive == "neural":  # (its network loaded into Warp and run once on the group's inputs: warp-nn)
            drive = _NETWORKS[first.network](model_path=first.model_path)
        elif first.drive == "pd":
            drive = DrivePD(kp=values("kp"), kd=values("kd"), const_effort=values("const_effort"))
        else:
            drive = DrivePID(kp=values("kp"), ki=values("ki"), kd=values("kd"), integral_max=values("integral_max"),
                             const_effort=values("const_effort"))  # fmt: skip
        clamping = []
        for k, (kind, table) in enumerate(first.clamps):
            if kind == "position_based":
                clamping.append(ClampingPositionBased(lookup_positions=tuple(table["lookup_positions"]),
                                                      lookup_efforts=tuple(table["lookup_efforts"])))  # fmt: skip
                continue
            columns = {
                name: wp.array(np.array([s.clamps[k][1][name] for s in chosen], dtype=np.float32), device=d)
                for name in table
            }
            clamping.append(_CLAMP_CLASSES[kind](**columns))
        delay = None
        if first.delay_steps > 0:
            steps = np.array([s.delay_steps for s in chosen], dtype=np.int32)
            delay = Delay(delay_steps=wp.array(steps, dtype=wp.int32, device=d), max_delay=int(steps.max()))
        actuator = Actuator(
            indices=wp.array(vel_index[members], dtype=wp.uint32, device=d),
            pos_indices=wp.array(pos_index[members], dtype=wp.uint32, device=d),
            target_pos_indices=wp.array(vel_index[members], dtype=wp.uint32, device=d),
            drive=drive,
            delay=delay,
            clamping=clamping,
            control_feedforward_attr=None,
        )
        group = _Group(actuator, members, actuator.state(), actuator.state())
        if group.state is not None:
            group.world = wp.array(self._world[members], dtype=wp.int32, device=d)
            group.mask = wp.zeros(len(members), dtype=wp.bool, device=d)
        return group

    def kernel_modules(self) -> list:
        """The Warp modules a step launches kernels of (Newton's actuator, its groups' laws, clampings and delays),
        for the parallel load beside the first frame (:mod:`~newton_usd.solvers.kernel_loading`)."""
        names = {_ACTUATORS + "actuator"}
        for key in self._keys:
            law, clamps, delayed = key
            names.add(_ACTUATORS + _MODULES[law[1] if isinstance(law, tuple) else law])
            names.update(_ACTUATORS + _MODULES[c if isinstance(c, str) else c[0]] for c in clamps)
            if delayed:
                names.add(_ACTUATORS + _MODULES["delay"])
        return modules_named(sorted(names))

    def step(self, positions, velocities, target_pos, target_vel, forces, dt: float) -> None:
        """Every actuator's effort at this state added into ``forces`` (Warp arrays on :attr:`device`, indexed as
        given to the constructor), and the stateful ones advanced by one step of ``dt``.

        Raises:
            UsdInputError: ``dt`` is not the step a network was trained at (naming its actuator and model file).
        """
        for step, label in self._fixed_steps.items():
            if not math.isclose(dt, step, rel_tol=1e-5, abs_tol=1e-9):
                raise UsdInputError(
                    f"its network was trained at steps of {step:g} s (the model file's sample_dt_s) and runs at "
                    f"that step only; this run steps {dt:g} s: set the time step to {step:g} s (the scene's, or "
                    "usdsim --dt)",
                    prim=label,
                    attribute="newton:modelPath",
                )
        sim_state = {"joint_q": positions, "joint_qd": velocities}
        sim_control = {"joint_target_q": target_pos, "joint_target_qd": target_vel, "joint_f": forces}
        for g in self.groups:
            g.actuator.step(sim_state, sim_control, g.state, g.scratch, dt=float(dt))
            if g.state is not None:
                g.state.assign(g.scratch)

    def reset(self, worlds=None) -> None:
        """The stateful actuators back to their start (a PID's integral zero, a delay's buffer empty, a network's
        history and hidden state zero): those of the worlds flagged in ``worlds`` (a bool Warp array, one per world:
        kernels only, so that a captured step may hold it), or every one (None)."""
        if worlds is not None and worlds.device != self.device:
            worlds = worlds.to(self.device)
        for g in self.groups:
            if g.state is None:
                continue
            if worlds is None:
                g.state.reset()
                continue
            wp.launch(_members_of_worlds, dim=len(g.members), inputs=[worlds, g.world], outputs=[g.mask],
                      device=self.device)  # fmt: skip
            g.state.reset(g.mask)
