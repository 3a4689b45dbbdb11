"""Simulation: the stage-driven loop (open a stage, step frames, write poses back, save the output)."""

from __future__ import annotations

import math
import os
import time

import numpy as np
import warp as wp
from pxr import Sdf

from .core.builder import ModelBuilder
from .errors import NewtonUsdError, SimulationError
from .solvers import SOLVERS
from .sync import JointStateSync, StageSync
from .usd import add_usd, open_stage

MAX_PHYSICS_DT = 1.0 / 480.0
"""Default upper bound of the physics step: substeps per frame = ceil(frame_dt / MAX_PHYSICS_DT)."""
DEFAULT_FRAMES = 120
_STAGE_METADATA = ("upAxis", "metersPerUnit", "kilogramsPerUnit")


def default_output(stage_path: str) -> str:
    """Where a run of ``stage_path`` is saved by default: its name with ``.sim.usda``, next to it."""
    base = os.path.basename(stage_path)
    stem = base.rsplit(".", 1)[0] if "." in base else base
    return os.path.join(os.path.dirname(stage_path), f"{stem}.sim.usda")


def resolve_device(device):
    """A ``wp.context.Device`` for ``device`` ("cpu", "cuda", "cuda:N" or None: Warp's default)."""
    if str(device).startswith("cuda") and not wp.is_cuda_available():
        raise NewtonUsdError(
            f"device {device!r} is not available: Warp finds no CUDA device or driver "
            f"(devices: {', '.join(d.alias for d in wp.get_devices())})"
        )
    try:
        return wp.get_device(device)
    except (RuntimeError, ValueError) as e:
        raise NewtonUsdError(
            f"device {device!r} is not available ({e}); Warp sees: {', '.join(d.alias for d in wp.get_devices())}"
        ) from None


class Simulation:
    """A stage being simulated: model, solver, state, and the sync writing poses onto its prims.

    Create one with :meth:`open`. Output goes to an in-memory layer under the stage's session layer
    (the source file is never modified); :meth:`save` writes it as a file that sublayers the source.

    Attributes:
        stage, model, solver, state, control, sync: the pieces, reachable for inspection.
        fps: frames per second (the stage's timeCodesPerSecond unless given).
        substeps: physics steps per frame; dt: the physics step in seconds.
        frame: frames simulated since the start; start_time: the time code of frame 0.
        steps: physics steps taken.
    """

    def __init__(
        self, stage, source_file, imported, model, solver, *, fps, substeps, dt=None, record=True, joint_states=False
    ):
        self.stage = stage
        self.source_file = source_file
        self.imported = imported
        self.model = model
        self.solver = solver
        self.fps = float(fps)
        self.substeps = int(substeps)
        self.dt = float(dt) if dt else 1.0 / self.fps / self.substeps
        self.record = record
        self.start_time = stage.GetStartTimeCode() if stage.HasAuthoredTimeCodeRange() else 0.0
        self.output_layer = Sdf.Layer.CreateAnonymous("newton_usd_output.usda")
        # Same time-code rate as the stage, or USD rescales the output's time samples.
        self.output_layer.timeCodesPerSecond = stage.GetTimeCodesPerSecond()
        stage.GetSessionLayer().subLayerPaths.insert(0, self.output_layer.identifier)
        self.sync = StageSync(stage, self.output_layer, model.body_label, imported.frame)
        self.joint_sync = (
            JointStateSync(self.output_layer, model, imported.frame.meters_per_unit) if joint_states else None
        )
        self.state = model.state()
        self._next = model.state()
        self.control = model.control()
        self.frame = 0
        self.steps = 0
        self.sim_seconds = 0.0
        self.wall_seconds = 0.0

    @classmethod
    def open(
        cls,
        source,
        *,
        solver: str | None = None,
        device=None,
        backend: str | None = None,
        fps: float | None = None,
        substeps: int | None = None,
        record: bool = True,
        joint_states: bool = False,
        order=None,
    ) -> "Simulation":
        """Open ``source`` (a path or ``Usd.Stage``), import it and make the solver.

        Each setting comes from its argument, else from the stage's PhysicsScene (NewtonUsdSceneAPI,
        and the physics time step from ``mjc:option:timestep``, ``newton:timeStepsPerSecond`` or
        ``physxScene:timeStepsPerSecond``), else from the default.

        Args:
            solver: a name from ``newton_usd.solvers.SOLVERS`` (default "mujoco").
            device: Warp device for the model ("cpu", "cuda", ...; None: Warp's default).
            backend: solver backend (for "mujoco": "auto", "cpu" or "warp").
            fps: frames per second (default: the stage's timeCodesPerSecond).
            substeps: physics steps per frame (default: the stage's time step, else enough for a step
                of at most 1/480 s).
            record: write one time sample per frame (else overwrite the default pose).
            joint_states: also write joint positions and velocities onto the joint prims
                (PhysicsJointStateAPI attributes ``state:<axis>:physics:position``/``velocity``).
            order: the resolver's dialect order (default newton > mjc > physx > physics).
        """
        dev = resolve_device(device)
        stage, file = open_stage(source)
        builder = ModelBuilder()
        imported = add_usd(builder, stage, **({"order": tuple(order)} if order else {}))
        scene = {k: r.value for k, r in imported.scene.items()}
        solver = solver or scene.get("solver") or "mujoco"
        if solver not in SOLVERS:
            raise NewtonUsdError(f"unknown solver {solver!r}; valid: {', '.join(SOLVERS)}")
        model = builder.finalize(dev)
        solver_obj = SOLVERS[solver](model, backend=backend or scene.get("mujoco_backend") or "auto")
        fps = float(fps or scene.get("frames_per_second") or stage.GetTimeCodesPerSecond() or 24.0)
        if fps <= 0:
            raise NewtonUsdError(f"{file}: frames per second must be positive, got {fps}")
        substeps = substeps or scene.get("substeps") or None
        timestep = scene.get("timestep")
        if substeps is None and timestep:
            # The stage's own step, exactly: frames advance by whole steps (time codes follow the
            # simulated time, so a step that does not divide the frame time is still recorded truly).
            substeps = max(1, round(1.0 / fps / timestep))
            return cls(
                stage, file, imported, model, solver_obj, fps=fps, substeps=substeps, dt=timestep, record=record,
                joint_states=joint_states,
            )  # fmt: skip
        if substeps is None:
            substeps = max(1, math.ceil(1.0 / fps / MAX_PHYSICS_DT - 1e-9))
        return cls(
            stage,
            file,
            imported,
            model,
            solver_obj,
            fps=fps,
            substeps=substeps,
            record=record,
            joint_states=joint_states,
        )

    # ------------------------------------------------------------------ stepping
    @property
    def time_code(self) -> float:
        """The time code of the current frame: the simulated time in frames since the start."""
        return self.start_time + round(self.sim_seconds * self.fps, 6)

    def default_frames(self) -> int:
        """The stage's authored frame range, or 120 frames when it has none."""
        if self.stage.HasAuthoredTimeCodeRange():
            n = int(round(self.stage.GetEndTimeCode() - self.stage.GetStartTimeCode()))
            if n > 0:
                return n
        return DEFAULT_FRAMES

    def step_frame(self) -> None:
        """Simulate one frame (``substeps`` physics steps) and write the poses onto the prims."""
        if self.frame == 0 and self.sync.frames_written == 0:
            self._write()
        t0 = time.perf_counter()
        try:
            for _ in range(self.substeps):
                self.solver.step(self.state, self._next, self.control, None, self.dt)
                self.state, self._next = self._next, self.state
                self.steps += 1
        except SimulationError as e:
            raise SimulationError(e.reason, frame=self.frame + 1, label=e.label) from None
        self.frame += 1
        self.sim_seconds = self.steps * self.dt
        body_q = self.state.body_q.numpy()
        self.wall_seconds += time.perf_counter() - t0
        bad = ~np.isfinite(body_q).all(axis=1)
        if bad.any():
            label = self.model.body_label[int(np.argmax(bad))]
            raise SimulationError(
                "body pose became NaN or infinite (the simulation blew up)", frame=self.frame, label=label
            )
        self._write(body_q)

    def _write(self, body_q=None):
        if body_q is None:
            body_q = self.state.body_q.numpy()
        time = self.time_code if self.record else None
        self.sync.write(body_q, time)
        if self.joint_sync is not None:
            self.joint_sync.write(self.state.joint_q.numpy(), self.state.joint_qd.numpy(), time)

    def run(self, frames: int | None = None, progress=None) -> None:
        """Simulate ``frames`` frames (default: :meth:`default_frames`); ``progress(n)`` after each."""
        for _ in range(self.default_frames() if frames is None else int(frames)):
            self.step_frame()
            if progress is not None:
                progress(1)

    def reset(self) -> None:
        """Back to the authored state: initial model state, frame 0, authored poses on the stage."""
        self.state = self.model.state()
        self._next = self.model.state()
        self.control = self.model.control()
        self.frame = self.steps = 0
        self.sim_seconds = self.wall_seconds = 0.0
        if self.joint_sync is not None:
            self.joint_sync.restore()
        self.sync.restore()  # also prunes the prim specs left empty

    # ------------------------------------------------------------------ output
    def save(self, path) -> str:
        """Write the output layer to ``path`` as a stage that sublayers the source file.

        Opening ``path`` shows the source with the simulated motion on top; the source is not touched.
        """
        path = os.fspath(path)
        src = self.stage.GetRootLayer()
        if os.path.exists(path) and os.path.realpath(path) == os.path.realpath(src.realPath or ""):
            raise NewtonUsdError(f"{path}: refusing to overwrite the source stage; choose another output path")
        out = Sdf.Layer.Find(path) or Sdf.Layer.CreateNew(path)
        if src.realPath:
            out.TransferContent(self.output_layer)
            rel = os.path.relpath(src.realPath, os.path.dirname(os.path.abspath(path)))
            out.subLayerPaths = [rel.replace(os.sep, "/")]
        else:  # an in-memory source has no file to sublayer: write the whole composed stage
            out.TransferContent(self.stage.Flatten(addSourceFileComment=False))
        for key in _STAGE_METADATA:
            if src.pseudoRoot.HasInfo(key):
                out.pseudoRoot.SetInfo(key, src.pseudoRoot.GetInfo(key))
        if src.defaultPrim:
            out.defaultPrim = src.defaultPrim
        out.timeCodesPerSecond = self.fps
        out.framesPerSecond = self.fps
        if self.record:
            out.startTimeCode = self.start_time
            out.endTimeCode = self.time_code
        out.comment = f"Simulated by newton_usd from {os.path.basename(src.realPath or src.identifier)}"
        if not out.Save():
            raise NewtonUsdError(f"{path}: could not write the output stage")
        return path

    def close(self) -> None:
        """Detach the output layer from the stage (the stage shows the authored poses again)."""
        subs = self.stage.GetSessionLayer().subLayerPaths
        if self.output_layer.identifier in subs:
            subs.remove(self.output_layer.identifier)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
