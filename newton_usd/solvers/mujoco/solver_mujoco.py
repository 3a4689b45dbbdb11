"""SolverMuJoCo: steps a Model with C MuJoCo (``backend="cpu"``) or MuJoCo-Warp (``backend="warp"``).

Both backends compile the same ``mujoco.MjSpec`` (see :mod:`~.mujoco.spec`). Every step pushes the model
coordinates of ``state_in`` (skipped when the engine holds them: ``state_in`` is the state this solver
wrote last, unchanged, so the engine keeps its own double-precision state), the drive controls and joint
forces (when they changed), steps the engine once, and gives ``state_out`` the new joint coordinates and
body poses and velocities. The warp backend writes them at once; the cpu backend leaves ``state_out``
pending and writes an array when it is read (see :mod:`~.mujoco.exchange`), so that a step costs what MuJoCo's
does plus a few microseconds.

This module is the story (build and compile the MjSpec, pick the backend, start from the model's state, step);
each job is a module whose methods the class takes: the host-side exchange (:mod:`~.mujoco.host_exchange`), the
C MuJoCo backend (:mod:`~.mujoco.cpu_backend`) and the MuJoCo-Warp one (:mod:`~.mujoco.warp_backend`), an MjModel
per world (:mod:`~.mujoco.worlds`), values changed in place (:mod:`~.mujoco.parameters`), acceleration drives
(:mod:`~.mujoco.acceleration_drives`), keyframes (:mod:`~.mujoco.keyframes`) and contacts
(:mod:`~.mujoco.contacts`).
"""

from __future__ import annotations

import logging

import mujoco
import numpy as np

from ...diagnostics import Diagnostics
from ...errors import NewtonUsdError
from ..solver import SolverBase
from ..velocity_limits import MuJoCoSpeedBounds
from .acceleration_drives import AccelerationDrives
from .actuator_forces import ActuatorForces
from .contacts import ContactsReport
from .convert import CoordinateMap
from .cpu_backend import CpuBackend
from .host_exchange import HostExchange
from .keyframes import Keyframes
from .parameters import Parameters, kinematic_flags, switched_bodies
from .spec import build_spec, compile_spec
from .warp_backend import WarpBackend
from .worlds import WorldModels, world_placements

logger = logging.getLogger("newton_usd")

BACKENDS = ("auto", "cpu", "warp")


def _log_mujoco_warning(message: str) -> None:
    """MuJoCo's warnings (``Nan, Inf or huge value in QACC ...``) through our logger, not printed raw."""
    logger.warning("MuJoCo: %s", message.strip())


def route_mujoco_warnings() -> None:
    """Send MuJoCo's warnings to ``logging.getLogger("newton_usd")`` (MuJoCo prints them to stdout and appends them
    to MUJOCO_LOG.TXT in the working directory otherwise); a handler someone else installed is left alone."""
    if mujoco.get_mju_user_warning() is None:
        mujoco.set_mju_user_warning(_log_mujoco_warning)


class SolverMuJoCo(
    HostExchange,
    CpuBackend,
    WarpBackend,
    WorldModels,
    Parameters,
    AccelerationDrives,
    Keyframes,
    ContactsReport,
    SolverBase,
):
    """MuJoCo backend.

    Args:
        model: the Model to simulate.
        backend: ``"cpu"`` steps C MuJoCo (double precision); ``"warp"`` steps mujoco_warp on the
            model's Warp device (also on Warp's CPU device, slowly); ``"auto"`` picks ``"warp"`` on a
            CUDA device and ``"cpu"`` otherwise.
        nconmax: contacts per world for the warp backend (default: from the geom count).
        njmax: constraint rows per world for the warp backend (default: from nconmax and joints).
        memory: bytes of C MuJoCo's arena per world (contacts, constraints, solver stack; default: from the
            model, see :func:`~newton_usd.solvers.mujoco.spec.arena_bytes`); a run that fills it stops.
        switchable: labels of free bodies to compile switchable between kinematic and dynamic at run time (a mocap
            body welded to each while it is kinematic: :func:`~newton_usd.solvers.mujoco.spec.build_spec`); a body
            whose flag differs between worlds is made so too. :meth:`rebuilt` adds the bodies switched since.
        **options: MuJoCo options by MuJoCo's name (``integrator="euler"``, ``iterations=50``,
            ``cone="elliptic"``, ``o_solref=(0.02, 1)``, ...; tokens or enum values). They override the
            model's ``mjc:option:*`` values, which override the defaults (implicitfast integrator,
            MuJoCo's defaults otherwise). See ``spec.OPTION_NAMES``.

    The engine objects are reachable as ``mj_model``/``mj_data`` (both backends),
    ``mjw_model``/``mjw_data`` (warp backend) and ``mj_batch`` (cpu backend with several worlds, or RK4:
    the ``mujoco.batch.Batch``; one world steps one MjData and ``mj_batch`` is None).

    On the cpu backend a step's ``state_out`` is pending: ``joint_q``, ``joint_qd``, ``body_q`` and
    ``body_qd`` are converted from MuJoCo's values when read (arrays someone holds are written at every
    step), and a pending State stepped from again goes back into MuJoCo exactly, with nothing pushed when
    MuJoCo still holds it. What a user reads is as if every step wrote the four arrays; arrays edited in
    place are pushed, as before (see :mod:`~.mujoco.exchange`). A pending State keeps its solver alive.

    The methods of each job are documented with their base class: values changed in place
    (:meth:`~newton_usd.solvers.mujoco.parameters.Parameters.update_parameters`), contacts
    (:meth:`~newton_usd.solvers.mujoco.contacts.ContactsReport.update_contacts`) and keyframes
    (:meth:`~newton_usd.solvers.mujoco.keyframes.Keyframes.reset_to_keyframe`).
    """

    def __init__(
        self,
        model,
        backend: str = "auto",
        *,
        nconmax: int | None = None,
        njmax: int | None = None,
        memory: int | None = None,
        switchable=None,
        **options,
    ):
        super().__init__(model)
        route_mujoco_warnings()
        self.options = {"backend": backend, "nconmax": nconmax, "njmax": njmax, "memory": memory, **options}
        if switchable:
            self.options["switchable"] = frozenset(switchable)
        if backend not in BACKENDS:
            raise NewtonUsdError(f"unknown MuJoCo backend {backend!r}; valid: {', '.join(BACKENDS)}")
        if backend == "auto":
            backend = "warp" if model.device.is_cuda else "cpu"
        self.backend = backend
        self.num_worlds = model.num_worlds
        self.diagnostics = Diagnostics()
        # One MuJoCo model for world 0; every world is a copy of it (ModelBuilder.replicate).
        world0 = model.world_view(0)
        if memory is not None and not (isinstance(memory, int) and memory > 0):
            raise NewtonUsdError(f"memory must be a number of bytes > 0, got {memory!r}")
        self._kinematic = kinematic_flags(model)  # (as compiled: see rebuilt)
        switchable = frozenset(switchable or ()) | switched_bodies(model, self._kinematic)
        spec, handles = build_spec(world0, self.diagnostics, options, memory, switchable)
        self._spec = spec
        self.mj_model, self.spec_map = compile_spec(spec, handles, world0, file=model.source)
        if self.mj_model.opt.solver == mujoco.mjtSolver.mjSOL_PGS and backend == "warp":
            self.diagnostics.add("MuJoCo-Warp has no PGS solver: the warp backend uses Newton", "PhysicsScene")
            self.mj_model.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
        self.diagnostics.emit(model.source)
        self.map = CoordinateMap(world0, self.mj_model, self.spec_map)
        self.actuators = ActuatorForces.of(self, model)
        """The joint actuators (NewtonActuator prims) as applied forces each step (:mod:`.actuator_forces`); None
        without."""
        self._speed_bounds = MuJoCoSpeedBounds.of(self, model)
        """The bodies' speed bounds (PhysX's; :mod:`~newton_usd.solvers.velocity_limits`), kept after each step (on
        the warp backend through :class:`~newton_usd.solvers.velocity_limits.MuJoCoWarpSpeedBounds`, made from it);
        None without."""
        self._mjc_ctrl = self.spec_map.mjc_actuator_ctrl
        self._mjc_built = self._mjc_ctrl >= 0
        self._ctl = None  # the Control last pushed, its arrays, views and bytes (see _push_controls)
        self._exchange = None  # the cpu backend's StateExchange
        self._dev = None  # the warp backend's DeviceExchange (the exchange in Warp kernels)
        self._dev_last = None  # (state, joint_q, joint_qd) as the device exchange wrote them last
        self._graphs = {}  # the warp backend's captured steps on CUDA: see _step_warp_device
        self._use_graphs = self.device.is_cuda  # (False once a capture failed; tests set it on Warp's CPU device)
        # Two phases (see _advance_warp) need the position and velocity stages done again on the device when a
        # state was written, a conditional graph node (wp.capture_if) in a captured step. MuJoCo-Warp allocates
        # scratch arrays in some of them (the cartpole sample's, an ant's), which CUDA does not allow in a
        # conditional node's body: once such a capture fails, the step is one phase (as RK4's), and captured so.
        self._conditional_step1 = True
        self._init_keyframes(world0)
        mocap = self.spec_map.body_mocap
        self._mocap_body = np.nonzero(mocap >= 0)[0]  # kinematic bodies, moved from State.body_q
        self._mocap_id = mocap[self._mocap_body]
        self._dt = None
        self._last_out = None  # (state, joint_q bytes, joint_qd bytes) as this solver wrote them at once
        self._views = {}  # id(Warp array) -> (array, numpy view): see _host_view
        self._contacts_truncated = False  # (update_contacts said once that a buffer was too small)
        # Worlds share one MjModel until their parameters differ (per-world values, acceleration drives).
        self.mj_models = [self.mj_model] * self.num_worlds
        self._data = mujoco.MjData(self.mj_model)  # world 0 (warp: the host copy), and scratch
        self.mj_batch = self.mjw_model = self.mjw_data = None
        self._engine = None  # the cpu backend's DataEngine or BatchEngine
        self._set_gains(model)
        self._init_acceleration_drives(world0)
        self._has_accel = bool(len(self._accel))
        self._placements = world_placements(model, self.mj_model, self.spec_map)
        if (
            self._worlds_differ(model, self._IN_PLACE - {"gravity"})
            or (self.num_worlds > 1 and len(self._accel))
            or self._placements
        ):
            self._split_models(model)
        # Start from the model's initial state.
        qpos, qvel = self._to_mujoco(model.joint_q, model.joint_qd)
        self._data.qpos[:], self._data.qvel[:] = qpos[0], qvel[0]
        mujoco.mj_forward(self.mj_model, self._data)
        if backend == "cpu":
            self._init_cpu(qpos, qvel)
        else:
            self._init_warp(nconmax, njmax, qpos, qvel)
        self._scale_acceleration_drives()
        self._write_switches(model)

    name = "mujoco"
    applies_body_f = False
    """Whether each step applies the State's ``body_f`` (force and torque about each body's centre of mass, world
    frame) as MuJoCo's ``xfrc_applied`` (C MuJoCo; set by the grains' coupling, :mod:`~.newton.grain_coupling`)."""

    keeps_speed_bounds = True
    """The bodies' speed bounds are kept (:mod:`~newton_usd.solvers.velocity_limits`), by both backends."""

    def rebuilt(self, model) -> "SolverMuJoCo":
        """A solver of the same options for ``model``, compiled with the bodies switched between kinematic and
        dynamic since this one was (and those switchable before) switchable at run time: a body switched once is
        switched again in place (see :func:`~newton_usd.solvers.mujoco.spec.build_spec`)."""
        options = dict(self.options)
        switched = switched_bodies(model, self._kinematic)
        if switched:
            options["switchable"] = frozenset(options.get("switchable") or ()) | switched
        return type(self)(model, **options)

    @classmethod
    def options_from_scene(cls, settings: dict) -> dict:
        return {"backend": settings.get("mujoco_backend") or "auto"}

    @property
    def mj_data(self) -> mujoco.MjData:
        """World 0's ``MjData``: on the cpu backend a copy of the engine's as of the last step (positions,
        velocities and contacts current), on the warp backend the host data it started from."""
        if self._engine is not None:
            self._engine.get_data(0, self._data)
        return self._data

    def step(self, state_in, state_out, control, contacts, dt: float) -> None:
        if dt != self._dt:
            self._set_timestep(float(dt))
        e = self._engine
        if e is None:
            self._step_warp(state_in, state_out, control)
            return
        self._exchange.take(state_in)
        if self.applies_body_f:  # (our bodies' rows of every world, onto MuJoCo's bodies)
            e.xfrc_applied[:, self.map.body_mj] = state_in.body_f.numpy().reshape(self.num_worlds, -1, 6)
        pushed = control is not None and self._push_controls(control)
        if self.actuators is not None:  # (on top of the Control's joint forces: those just pushed, or kept)
            self.actuators.apply(self._qpos, self._qvel, self._qfrc, self._ctrl, control, dt, pushed=pushed)
        if self._has_accel:
            if e.stale:
                e.forward()  # M at the pushed state
            self._scale_acceleration_drives()
        e.step()
        if self._warnings_raw.tobytes() != self._warnings_seen_raw:
            self._check_warnings()
        if self._speed_bounds is not None:
            _, _, xipos, cvel, com = e.body
            if self._speed_bounds.apply(self._qvel, cvel, e.cdof, xipos, com):
                e.forward()  # (the stages at the scaled velocities)
        if not self._exchange.give(state_out):
            self._pull(self._qpos, self._qvel, self._body_out, state_out)

    def save_mjcf(self, path) -> None:
        """Write the MuJoCo model this solver built (world 0) as MJCF, for debugging."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self._spec.to_xml())
