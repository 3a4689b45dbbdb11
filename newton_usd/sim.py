"""Simulation: the stage-driven loop (open a stage, step frames, write poses back, save the output)."""

from __future__ import annotations

import contextlib
import logging
import math
import os
import time

import numpy as np
import warp as wp
from pxr import Gf, Sdf, UsdGeom, UsdPhysics, UsdUtils

from .core.builder import ModelBuilder
from .core.quat import gf_to_xyzw, quat_rotate
from .core.types import JointType
from .diagnostics import Diagnostics
from .errors import NewtonUsdError, SimulationError
from .solvers import SOLVERS
from .solvers.newton.frame import BoundsCheck
from .solvers.stability import auto_substeps, step_advice
from .sync import JointStateSync, StageSync
from .sync.clips import DEFAULT_CLIP_FRAMES, ClipStream, remove_clips
from .sync.instancer_sync import instance_of
from .sync.live_edits import StageWatcher, model_differences
from .sync.readback import PoseReadback
from .sync.stage_sync import XFORM_OPS
from .sync.world_copies import WorldCopies, default_spacing, environment_roots, grid_offsets
from .usd import add_usd, open_stage, read_scenes, scenes_to_import
from .usd.importer import scene_gravity
from .usd.overrides import apply_overrides
from .usd.resolver import DIALECTS

logger = logging.getLogger("newton_usd")
_DRIVE_TARGETS = {"targetPosition": "joint_target_pos", "targetVelocity": "joint_target_vel"}
"""UsdPhysics drive target attributes, and the control arrays they set."""
_DRIVE_JOINTS = {"angular": JointType.REVOLUTE, "linear": JointType.PRISMATIC}
_GRAVITY_ATTRIBUTES = ("physics:gravityDirection", "physics:gravityMagnitude")
"""The one-axis joint a drive instance (``drive:<instance>:physics:*``) of that name sits on."""

MAX_PHYSICS_DT = 1.0 / 480.0
"""Default upper bound of the physics step: substeps per frame = ceil(frame_dt / MAX_PHYSICS_DT)."""
DEFAULT_FRAMES = 120
MAX_SUBSTEPS = 100_000
"""Physics steps per frame beyond which the time step is taken for a mistake (NewtonUsdError)."""
MAX_DISTANCE = 1e6
"""m: a body farther than this from the origin stops the run (SimulationError; usdsim exits 3)."""
MAX_SPEED = 1e4
"""m/s: a body whose center of mass moves faster than this stops the run (SimulationError; usdsim exits 3)."""
_STAGE_METADATA = ("upAxis", "metersPerUnit", "kilogramsPerUnit")
WRITE_WORLDS = ("first", "all")


def _import_stage(stage, order=None, worlds=1, env_root=None, scene=None):
    """A new builder holding ``stage``'s model (replicated into ``worlds`` worlds, or one world per
    environment under ``env_root``; ``scene``: of that PhysicsScene only), and the import record."""
    builder = ModelBuilder()
    kw = {"order": tuple(order)} if order else {}
    imported = add_usd(builder, stage, env_root=env_root, scene=scene, **kw)
    if worlds > 1:
        builder.replicate(worlds)
    return builder, imported


def frame_rate(stage, imported, fps=None) -> float:
    """The frames per second of a run: ``fps`` when given, else the ``newton:usd:framesPerSecond`` of the
    imported PhysicsScene (``imported``: the first scene's :class:`UsdImport`), else the stage's
    timeCodesPerSecond (24 without one)."""
    authored = imported.scene.get("frames_per_second")
    return float(fps or (authored.value if authored else 0.0) or stage.GetTimeCodesPerSecond() or 24.0)


def physics_steps(fps: float, timestep=None, substeps=None) -> tuple:
    """(physics steps per frame, the step in s or None) of a run at ``fps`` frames per second: the stage's own
    ``timestep`` exactly when it gives one and not ``substeps`` (frames advance by whole steps; time codes
    follow the simulated time, so a step that does not divide the frame time is still recorded truly), else
    ``substeps`` (or as many as keep the step at most :data:`MAX_PHYSICS_DT`) of the frame time (None)."""
    if substeps:
        return int(substeps), None
    if timestep:
        return max(1, round(1.0 / fps / timestep)), timestep
    return max(1, math.ceil(1.0 / fps / MAX_PHYSICS_DT - 1e-9)), None


def scene_clocks(imports, fps, diag) -> None:
    """Add to ``diag`` each PhysicsScene of ``imports`` (the scenes after the first) that authors a frame rate
    other than ``fps``, the first scene's: every scene steps on the first scene's clock, so it is not used."""
    for imported in imports:
        r = imported.scene.get("frames_per_second")
        if r is not None and r.kind == "authored" and r.value and not math.isclose(r.value, fps):
            diag.add(
                f"{r.attribute} = {r.value:g} of a PhysicsScene other than the first is not used: every scene "
                f"steps on the first scene's clock, {fps:g} frames per second",
                imported.scene_path,
            )


def _carry_body_state(builder, model, state) -> None:
    """Set the builder's body poses and velocities from the simulated ``state`` of ``model`` (by world
    and body label), then its joint coordinates and velocities from those."""
    per_old = model.body_count // model.num_worlds
    per_new = builder.body_count // builder.num_worlds
    index = {(i // per_old, label): i for i, label in enumerate(model.body_label)}
    body_q, body_qd, com = state.body_q.numpy(), state.body_qd.numpy(), model.body_com.numpy()
    for b, label in enumerate(builder.body_label):
        i = index.get((b // per_new, label))
        if i is None:
            continue
        pos, quat = body_q[i, :3].astype(np.float64), body_q[i, 3:].astype(np.float64)
        lin, ang = body_qd[i, :3].astype(np.float64), body_qd[i, 3:].astype(np.float64)
        # The state holds the velocity of the center of mass; the builder that of the body origin.
        lin = lin - np.cross(ang, quat_rotate(quat, com[i].astype(np.float64)))
        builder.body_q[b] = (pos, quat)
        builder.body_qd[b] = np.concatenate([lin, ang])
    builder.joint_q_from_body_q()
    for j, jt in enumerate(builder.joint_type):
        if jt == JointType.FREE:
            builder.joint_qd[j] = np.asarray(builder.body_qd[builder.joint_child[j]], dtype=np.float64).copy()
    builder.joint_qd_from_body_qd()


def _written_labels(model, copies=None) -> list:
    """Body labels for the StageSync, for the bodies of every world: None for the kinematic bodies (the
    stage moves them) and for a label met before (a replicated world's copy of a prim: only its first
    world is written, unless ``copies`` (:class:`WorldCopies`) has a copy of it for that world; worlds of
    environments have labels of their own, so each is written)."""
    kinematic = model.body_kinematic.numpy()
    world = model.body_world.numpy()
    seen = set()
    out = []
    for b, label in enumerate(model.body_label):
        if kinematic[b]:
            out.append(None)
        elif label in seen:
            out.append(copies.label(label, int(world[b])) if copies is not None else None)
        else:
            out.append(label)
        seen.add(label)
    return out


def _environment_paths(model) -> list:
    """The prims of world 0's bodies and static colliders (an instance body: its PointInstancer)."""
    labels = [lab for lab, w in zip(model.body_label, model.body_world.numpy(), strict=True) if w == 0]
    static = (model.shape_body.numpy() < 0) & (model.shape_world.numpy() == 0)
    labels += [lab for lab, s in zip(model.shape_label, static, strict=True) if s]
    out = []
    for label in labels:
        of = instance_of(label)
        path = of[0] if of else label
        if Sdf.Path.IsValidPathString(path) and Sdf.Path(path).IsAbsolutePath():
            out.append(path)
    return out


def _kinematic_bodies(stage, model) -> list:
    """``[(rows in body_q of every world, prim)]`` of the kinematic bodies (welded mocap bodies)."""
    kinematic = np.nonzero(model.body_kinematic.numpy())[0]
    if not len(kinematic):
        return []
    out = {}
    for b in kinematic:
        label = model.body_label[b]
        prim = stage.GetPrimAtPath(label) if Sdf.Path.IsValidPathString(label) else None
        if prim:
            out.setdefault(label, ([], prim))[0].append(int(b))
    return [(np.array(rows), prim) for rows, prim in out.values()]


def _attach_output_layer(stage) -> Sdf.Layer:
    """A new in-memory layer, strongest in the stage (first sublayer of the session layer)."""
    layer = Sdf.Layer.CreateAnonymous("newton_usd_output.usda")
    # Same time-code rate as the stage, or USD rescales the output's time samples.
    layer.timeCodesPerSecond = stage.GetTimeCodesPerSecond()
    stage.GetSessionLayer().subLayerPaths.insert(0, layer.identifier)
    return layer


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
    A long recording can be streamed to value clips on disk as it runs (:meth:`stream_recording`).

    Several PhysicsScenes: each scene that simulates rigid bodies (``physics:simulationOwner``; the first
    scene also simulates the unowned ones) is a model and solver of its own, with its own gravity, time
    step and settings. This Simulation is the first such scene's; it holds the others' in :attr:`scenes`
    (Simulations of the same stage and output layer, without a watcher of their own) and steps them from
    :meth:`step_frame` after its own frame, each taking the steps that keep it at this one's simulated
    time (its own ``dt``; the same frame rate, the first scene's: another scene's own
    ``newton:usd:framesPerSecond`` is not used, with a warning; :meth:`open`'s solver, backend, substeps, dt,
    worlds and env_root apply to every scene, a keyframe to the first). Edits, :meth:`reset`, :meth:`flush`,
    :meth:`save` and :meth:`close` cover them; an edit re-imports every scene, each applying its own
    differences (a gravity edit of one scene changes that scene only). A stage with one scene has no :attr:`scenes`.

    Attributes:
        stage, model, solver, state, control, sync: the pieces, reachable for inspection.
        worlds: the model's worlds; env_root: the parent of the environment prims simulated as worlds
            (None: none).
        fps: frames per second (the stage's timeCodesPerSecond unless given).
        substeps: physics steps per frame; dt: the physics step in seconds.
        frame: frames simulated since the start; start_time: the time code of frame 0.
        steps: physics steps taken.
        scene_path: the PhysicsScene this Simulation simulates (None: the stage has none).
        scenes: the Simulations of the stage's other PhysicsScenes (empty with one scene).
        clips: the :class:`~newton_usd.sync.clips.ClipStream` of a recording streamed to value clips
            (None: not streamed).
    """

    def __init__(
        self,
        stage,
        source_file,
        imported,
        model,
        solver,
        *,
        fps,
        substeps,
        dt=None,
        record=True,
        joint_states=False,
        live=True,
        order=None,
        output_layer=None,
        overrides=(),
        xform_ops="trs",
        env_root=None,
        write_worlds="first",
        world_spacing=None,
        scene=None,
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
        self.output_layer = output_layer or _attach_output_layer(stage)
        self.overrides = list(overrides)  # [(property path, value)] authored into the output layer
        self.worlds = model.num_worlds
        self.env_root = env_root
        self._replicas = 1 if env_root is not None else self.worlds  # worlds of replicate(), on a re-import
        # Every prim is written from the first world that has it: world 0 for replicated copies (and the
        # other worlds onto copies of the environment, when asked), each environment's own world for
        # environments.
        self.copies = None
        self._copies_layer = None
        self._display_offset = None
        self.scenes = []  # the Simulations of the other PhysicsScenes (see the class docstring)
        self._first_scene = None  # another scene's: the first scene's Simulation (None: this is the first)
        if write_worlds == "all" and env_root is None and self.worlds > 1:
            self._copy_environment(world_spacing)
        self.sync = StageSync(stage, self.output_layer, _written_labels(model, self.copies), imported.frame, xform_ops)
        self._kinematic = _kinematic_bodies(stage, model)
        self.joint_sync = (
            JointStateSync(self.output_layer, model, imported.frame.meters_per_unit) if joint_states else None
        )
        self.state = model.state()
        self._next = model.state()
        self.control = model.control()
        self._order = order
        self.watcher = StageWatcher(stage) if live else None
        self.edits_applied = 0  # edits applied to the running model (values, or a rebuild)
        self.rebuilds = 0  # of which rebuilt the model (prims added or removed)
        self._retired_joint_syncs = []
        self.frame = 0
        self.steps = 0
        self.sim_seconds = 0.0
        self.wall_seconds = 0.0  # in the solver (stepping, state exchange included)
        self.sync_seconds = 0.0  # writing poses onto the stage
        self.first_step_seconds = None  # the first physics step (MuJoCo-Warp: kernels compiled or loaded)
        self.record_every = 1  # write every n-th frame (the first and the last are always written)
        self.write = True  # False: simulate only (benchmarking), nothing goes onto the stage
        self.clips = None  # the ClipStream of a recording streamed to value clips (stream_recording)
        self.max_distance = MAX_DISTANCE  # m from the origin: beyond, the run stops (see _check_bounds)
        self.max_speed = MAX_SPEED  # m/s of a body's center of mass: beyond, the run stops
        self._scene = scene  # the import's scene argument (None: the stage's only scene)
        self._bounds = None  # the device-side bounds check of frame functions (see _as_frame)
        self._readback = None  # run()'s poses read back behind the device (see _run_pipelined)

    @property
    def scene_path(self) -> str | None:
        return self.imported.scene_path

    def _copy_environment(self, spacing=None) -> None:
        """Copies of the environment for worlds 1 .. n-1 (see :class:`WorldCopies`), in a layer under
        the output layer, ``spacing`` stage units apart on a grid (None: kept apart by their size).

        The first scene's Simulation copies it for every scene (:attr:`scenes`): one copy per world holds
        every scene's bodies of that world, and each scene writes its own onto it (see :meth:`_resync`)."""
        sims = (self, *self.scenes)
        roots = environment_roots(self.stage, [p for s in sims for p in _environment_paths(s.model)])
        if not roots:
            return
        if self._copies_layer is None:
            self._copies_layer = Sdf.Layer.CreateAnonymous("newton_usd_world_copies.usda")
            self._copies_layer.timeCodesPerSecond = self.stage.GetTimeCodesPerSecond()
            subs = self.stage.GetSessionLayer().subLayerPaths
            subs.insert(list(subs).index(self.output_layer.identifier) + 1, self._copies_layer.identifier)
        if spacing is None:
            spacing = default_spacing(self.stage, roots)
        self.world_spacing = float(spacing)
        offsets = grid_offsets(self.worlds, self.world_spacing, self.imported.frame.up_axis)
        with self._own_writes():
            self.copies = WorldCopies(self.stage, self._copies_layer, roots, offsets)
        # World k's bodies are shown offsets[k] away: added to their simulated positions when written.
        frame = self.imported.frame
        per_world = np.stack([frame.world_vector_to_sim(o) for o in offsets])
        for s in sims:
            s.copies = self.copies
            s._display_offset = per_world[s.model.body_world.numpy()].astype(np.float32)

    def _resync(self) -> None:
        """A new sync of this scene's bodies, onto the prims and the copies of the environment as they are
        now (:attr:`copies`, made by the first scene's Simulation), going on from the old one."""
        sync = StageSync(
            self.stage, self.output_layer, _written_labels(self.model, self.copies), self.imported.frame,
            self.sync.xform_ops,
        )  # fmt: skip
        sync.carry_over(self.sync)
        self.sync = sync

    @classmethod
    def open(
        cls,
        source,
        *,
        solver: str | None = None,
        solver_options: dict | None = None,
        device=None,
        backend: str | None = None,
        fps: float | None = None,
        substeps: int | None = None,
        record: bool = True,
        joint_states: bool = False,
        live: bool = True,
        order=None,
        worlds: int = 1,
        env_root: str | None = None,
        dt: float | None = None,
        overrides=(),
        keyframe=None,
        xform_ops: str = "trs",
        write_worlds: str = "first",
        world_spacing: float | None = None,
        stream_to=None,
        clip_frames: int = DEFAULT_CLIP_FRAMES,
        max_distance: float = MAX_DISTANCE,
        max_speed: float = MAX_SPEED,
        mujoco_memory: int | None = None,
    ) -> "Simulation":
        """Open ``source`` (a path or ``Usd.Stage``), import it and make the solver.

        Each setting comes from its argument, else from the stage's PhysicsScene (NewtonUsdSceneAPI,
        and the physics time step from ``mjc:option:timestep``, ``newton:timeStepsPerSecond`` or
        ``physxScene:timeStepsPerSecond``), else from the default.

        Args:
            solver: a name from ``newton_usd.solvers.SOLVERS``: "mujoco", "xpbd", "featherstone",
                "semi_implicit" or "kamino" (default: the scene's ``newton:usd:solver``; a scene applying
                NewtonXpbdSceneAPI runs "xpbd"; else "mujoco").
            solver_options: keyword arguments of the solver's class, over the scene's settings (e.g.
                ``{"requires_grad": True}`` for a Newton solver under ``wp.Tape``, ``{"iterations": 8}``).
            device: Warp device for the model ("cpu", "cuda", ...; None: Warp's default).
            backend: solver backend (for "mujoco": "auto", "cpu" or "warp").
            fps: frames per second (default: the stage's timeCodesPerSecond).
            substeps: physics steps per frame (default: the stage's time step, else enough for a step
                of at most 1/480 s); "auto": more where the solver estimates a shorter step stable.
            record: write one time sample per frame (else overwrite the default pose).
            joint_states: also write joint positions and velocities onto the joint prims
                (PhysicsJointStateAPI attributes ``state:<axis>:physics:position``/``velocity``).
            live: apply the edits made on the stage while it runs, at the next frame (see
                :meth:`apply_edits`).
            order: the resolver's dialect order (default newton > mjc > physx > physics).
            worlds: simulate this many independent copies of the stage's physics
                (:meth:`ModelBuilder.replicate`); world 0 is written onto the prims.
            env_root: the parent of identical environment prims (e.g. ``"/World/envs"``): one world per
                environment, the first imported and replicated at each one's place (see
                :func:`newton_usd.usd.add_usd`); every environment's prims are written.
            dt: the physics time step in seconds (default: the stage's); each frame takes
                ``round(1 / (fps * dt))`` steps (``substeps`` wins when both are given).
            overrides: ``"/Prim.attribute=VALUE"`` strings, authored into the output layer before
                importing (so they are simulated and saved with the motion; the source is untouched).
            keyframe: start from this keyframe (MjcKeyframe; see :meth:`start_from_keyframe`).
            xform_ops: how poses go onto the prims (see :class:`~newton_usd.sync.StageSync`): "trs"
                (translate and orient ops) or "matrix" (one transform op per prim: about twice as fast to
                write, for big scenes).
            write_worlds: "first" (world 0 moves the prims) or "all": with ``worlds`` > 1, every other
                world is written onto a copy of the environment made in the output (physics stripped,
                so nothing simulates the copies again; see :class:`~newton_usd.sync.WorldCopies`); with
                several PhysicsScenes, a world's copy shows that world's bodies of every scene.
            world_spacing: how far apart the copies are laid out on a grid across the ground plane, in
                stage units (None: by the environment's size; 0: all in place).
            stream_to: the output path the recording will be saved as: stream it to value clips beside
                that path as it runs, ``clip_frames`` recorded frames per clip, so that memory stays
                bounded however long the run (see :meth:`stream_recording`).
            mujoco_memory: bytes of C MuJoCo's arena (contacts, constraints, solver stack) per world (default:
                sized from the model; see :func:`newton_usd.solvers.mujoco.spec.arena_bytes`).
            max_distance, max_speed: bounds of a sane state (m from the origin, m/s): a body beyond either
                stops the run with a :class:`SimulationError` naming it and the frame (also NaN or infinity).
        """
        dev = resolve_device(device)
        if int(worlds) < 1:
            raise NewtonUsdError(f"worlds must be at least 1, got {worlds}")
        if env_root is not None and int(worlds) != 1:
            raise NewtonUsdError("worlds and env_root both make worlds: give one of them (env_root: one per env)")
        if dt is not None and not dt > 0:
            raise NewtonUsdError(f"the physics time step must be positive, got {dt}")
        if xform_ops not in XFORM_OPS:
            raise NewtonUsdError(f"unknown xform_ops {xform_ops!r}; valid: {', '.join(XFORM_OPS)}")
        if write_worlds not in WRITE_WORLDS:
            raise NewtonUsdError(f"unknown write_worlds {write_worlds!r}; valid: {', '.join(WRITE_WORLDS)}")
        if world_spacing is not None and not (math.isfinite(world_spacing) and world_spacing >= 0):
            raise NewtonUsdError(f"world_spacing must be a finite distance >= 0, got {world_spacing}")
        for name, bound in (("max_distance", max_distance), ("max_speed", max_speed)):
            if not bound > 0:
                raise NewtonUsdError(f"{name} must be > 0, got {bound}")
        stage, file = open_stage(source)
        output_layer = _attach_output_layer(stage)
        try:
            sim = cls._open(
                stage, file, output_layer, solver=solver, solver_options=solver_options, device=dev, backend=backend,
                fps=fps, substeps=substeps,
                record=record, joint_states=joint_states, live=live, order=order, worlds=int(worlds), dt=dt,
                overrides=overrides, xform_ops=xform_ops, env_root=env_root, write_worlds=write_worlds,
                world_spacing=world_spacing, mujoco_memory=mujoco_memory,
            )  # fmt: skip
            for one in (sim, *sim.scenes):
                one.max_distance, one.max_speed = float(max_distance), float(max_speed)
            if keyframe is not None:
                sim.start_from_keyframe(keyframe)
            if stream_to is not None:
                sim.stream_recording(stream_to, clip_frames)
            return sim
        except BaseException:
            stage.GetSessionLayer().subLayerPaths.remove(output_layer.identifier)
            raise

    @classmethod
    def _open(
        cls, stage, file, output_layer, *, solver, device, backend, fps, substeps, record, joint_states, live, order,
        worlds, dt, overrides, env_root, xform_ops="trs", write_worlds="first", world_spacing=None, scene=None,
        solver_options=None, mujoco_memory=None,
    ):  # fmt: skip
        applied = apply_overrides(stage, overrides, output_layer, file) if overrides else []
        asked = {"solver": solver, "solver_options": solver_options, "backend": backend, "substeps": substeps}
        asked["dt"], asked["mujoco_memory"] = dt, mujoco_memory
        others = []
        if scene is None:
            scene, *others = scenes_to_import(stage, tuple(order) if order else DIALECTS)
        builder, imported = _import_stage(stage, order, worlds, env_root, scene)
        settings = {k: r.value for k, r in imported.scene.items()}
        solver = solver or settings.get("solver") or "mujoco"
        if solver not in SOLVERS:
            raise NewtonUsdError(f"unknown solver {solver!r}; valid: {', '.join(SOLVERS)}")
        model = builder.finalize(device)
        options = dict(solver_options or {})
        if mujoco_memory is not None:
            if solver != "mujoco":
                raise NewtonUsdError(f"mujoco_memory is C MuJoCo's arena: the {solver} solver has none")
            options["memory"] = int(mujoco_memory)
        solver_obj = SOLVERS[solver].from_scene(model, settings, backend=backend, **options)
        given_fps = fps
        fps = frame_rate(stage, imported, fps)
        if fps <= 0:
            raise NewtonUsdError(f"{file}: frames per second must be positive, got {fps}")
        auto, substeps = substeps == "auto", None if substeps == "auto" else substeps
        substeps, step = physics_steps(fps, dt or settings.get("timestep"), substeps or settings.get("substeps"))
        substeps, step = auto_substeps(solver_obj, fps, substeps, step) if auto else (substeps, step)
        if substeps > MAX_SUBSTEPS:  # e.g. a time step of 1e-30 s: one frame would never end
            source = imported.scene.get("timestep")
            where = f"{source.prim}.{source.attribute}: " if source is not None and source.attribute and not dt else ""
            raise NewtonUsdError(f"{file}: {where}{substeps:.3g} physics steps per frame (more than {MAX_SUBSTEPS:,}): "
                                 "the time step is too small for the frame rate")  # fmt: skip
        sim = cls(
            stage, file, imported, model, solver_obj, fps=fps, substeps=substeps, dt=step, record=record,
            joint_states=joint_states, live=live, order=order, output_layer=output_layer, overrides=applied,
            xform_ops=xform_ops, env_root=env_root, write_worlds="first" if others else write_worlds,
            world_spacing=world_spacing, scene=scene,
        )  # fmt: skip
        for other in others:  # same stage, output layer, frame rate and worlds; the scene's own step and settings
            sim.scenes.append(cls._open(
                stage, file, output_layer, device=device, fps=fps, record=record, joint_states=joint_states,
                live=False, order=order, worlds=worlds, overrides=(), env_root=env_root, xform_ops=xform_ops,
                scene=other, **asked,
            ))  # fmt: skip
            sim.scenes[-1]._first_scene = sim
        if others and write_worlds == "all" and env_root is None and worlds > 1:
            sim._copy_environment(world_spacing)  # one copy per world, of every scene's bodies
            for s in (sim, *sim.scenes):
                s._resync()
        if others and given_fps is None:
            diag = Diagnostics()
            scene_clocks([s.imported for s in sim.scenes], fps, diag)
            diag.emit(file)
        return sim

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

    def step_frame(self, last: bool = True, until: float | None = None) -> None:
        """Simulate one frame (``substeps`` physics steps) and write the poses onto the prims; then the
        other scenes' frames (:attr:`scenes`).

        Edits made on the stage since the last frame are applied first (see :meth:`apply_edits`).
        With :attr:`record_every` > 1 only every n-th frame is written, and the frame with ``last``.
        ``until`` (seconds of simulated time): take the steps that end closest to it instead of
        ``substeps`` (another scene's frame: it keeps to the first scene's clock).
        """
        if self.watcher is not None and self.watcher.pending:
            self.apply_edits()
        self._write_start()
        n = self.substeps if until is None else max(0, round((until - self.sim_seconds) / self.dt))
        t0 = time.perf_counter()
        as_frame = self._as_frame(n)
        try:
            if as_frame:  # one frame function (a CUDA graph where the device allows), the bounds checked in it
                self._simulate_frame(n)
            for _ in range(0 if as_frame else n):
                if self._kinematic:
                    self._move_kinematic(self.start_time + (self.steps + 1) * self.dt * self.fps)
                self.solver.step(self.state, self._next, self.control, None, self.dt)
                self.state, self._next = self._next, self.state
                self.steps += 1
                if self.first_step_seconds is None:
                    self.first_step_seconds = time.perf_counter() - t0
        except SimulationError as e:
            raise SimulationError(e.reason, frame=self.frame + 1, label=e.label) from None
        self.frame += 1
        self.sim_seconds = self.steps * self.dt
        if as_frame:
            body_q = self.state.body_q.numpy() if self._bounds.tripped() else None  # (waits for the frame)
            if self.first_step_seconds is None:
                self.first_step_seconds = time.perf_counter() - t0
        else:
            body_q = self.state.body_q.numpy()
        self.wall_seconds += time.perf_counter() - t0
        if body_q is not None:
            self._check_bounds(body_q)
        if self._records_frame(last):
            self._write(body_q)
        if self.scenes:
            with self._own_writes():
                for other in self.scenes:
                    other.record_every, other.write = self.record_every, self.write
                    other.step_frame(last, until=self.sim_seconds)

    def _write_start(self) -> None:
        """Before the first frame: the starting poses written as frame 0 (once)."""
        if self.frame == 0 and self.sync.frames_written == 0 and self.write:
            self._write()

    def _records_frame(self, last: bool) -> bool:
        """Whether the frame just simulated is written: every :attr:`record_every`-th, and the ``last``."""
        return self.write and (last or self.frame % max(1, self.record_every) == 0)

    def _as_frame(self, n: int) -> bool:
        """Whether ``n`` steps run as one frame function (:meth:`SolverNewton.simulate_frame`): a Newton solver,
        no kinematic body (their poses are read from the stage between the steps)."""
        if n < 1 or self._kinematic or not hasattr(self.solver, "simulate_frame"):
            return False
        if self._bounds is None or self._bounds.flag.device != self.model.device:
            self._bounds = BoundsCheck(self.model.device)
        return True

    def _simulate_frame(self, n: int) -> None:
        """``n`` steps as the solver's frame function (see :meth:`_as_frame`), the bounds checked on the device."""
        self.solver.simulate_frame(
            self.state, self._next, self.control, self.dt, n,
            after=self._check_on_device, after_key=(self.max_distance, self.max_speed),
        )  # fmt: skip
        self.steps += n

    def _check_on_device(self, state) -> None:
        """The frame function's last kernel: :meth:`_check_bounds`'s test on the device, one flag read back."""
        self._bounds.launch(state, self.max_distance, self.max_speed)

    def _check_bounds(self, body_q, frame=None) -> None:
        """Stop (SimulationError naming the body and frame) when a body's pose is NaN or infinite, it is
        farther than :attr:`max_distance` from the origin or faster than :attr:`max_speed`: a simulation that
        blew up, caught here rather than left to MuJoCo's own check (which fires near 1e10 only)."""
        problem, rows = None, None
        bad = ~np.isfinite(body_q).all(axis=1)
        if bad.any():
            problem, rows = "body pose became NaN or infinite", bad
        else:
            dist2 = np.einsum("ij,ij->i", body_q[:, :3], body_q[:, :3])
            rows = dist2 > self.max_distance**2
            if rows.any():
                d = math.sqrt(float(dist2[int(np.argmax(rows))]))
                problem = f"body is {d:.3g} m from the origin, beyond max_distance {self.max_distance:g} m"
            else:
                v = self.state.body_qd.numpy()[:, :3]
                speed2 = np.einsum("ij,ij->i", v, v)
                rows = ~(speed2 <= self.max_speed**2)  # (NaN too)
                if rows.any():
                    speed = math.sqrt(float(speed2[int(np.argmax(rows))]))
                    problem = f"body moves at {speed:.3g} m/s, beyond max_speed {self.max_speed:g} m/s"
        if problem is not None:
            label = self.model.body_label[int(np.argmax(rows))]
            advice = step_advice(self.solver, self.dt, self.fps)  # (a step the solver estimates stable, if it has one)
            raise SimulationError(f"{problem} (the simulation blew up){advice}", frame=frame or self.frame, label=label)

    def _move_kinematic(self, time_code: float) -> None:
        """Kinematic bodies to their prims' (animated) world transforms at ``time_code``."""
        cache = UsdGeom.XformCache(time_code)
        frame = self.imported.frame
        body_q = self.state.body_q.numpy()
        for rows, prim in self._kinematic:
            xf = Gf.Transform(cache.GetLocalToWorldTransform(prim))
            pos, rot = frame.world_pose_to_sim(
                np.array(xf.GetTranslation(), dtype=np.float64), gf_to_xyzw(xf.GetRotation().GetQuat())
            )
            body_q[rows] = np.concatenate([pos, rot])
        if not self.model.device.is_cpu:  # numpy() was a copy
            self.state.body_q.assign(body_q)

    def _write(self, body_q=None, at=None):
        """Write ``body_q`` (None: the state's) onto the stage as the current frame, or as ``at`` (frame, time
        code): a frame read back late (:meth:`_run_pipelined`)."""
        t0 = time.perf_counter()
        if body_q is None:
            body_q = self.state.body_q.numpy()
        if self._display_offset is not None:  # worlds written onto their copies, at their places
            body_q = np.array(body_q, dtype=np.float32)
            body_q[:, :3] += self._display_offset[: len(body_q)]
        time_code = (self.time_code if at is None else at[1]) if self.record else None
        with self._own_writes():
            self.sync.write(body_q[: self.sync.body_count], time_code)
            if self.joint_sync is not None:
                self.joint_sync.write(self.state.joint_q.numpy(), self.state.joint_qd.numpy(), time_code)
            if self.clips is not None and time_code is not None:
                if self.clips.moves_at_next_frame():
                    self._flush_syncs()  # the chunk holds every frame written so far
                self.clips.frame_written(time_code)  # once per chunk: moves it to a clip file
        self.sync_seconds += time.perf_counter() - t0
        self._written_frame = self.frame if at is None else at[0]

    def flush(self) -> None:
        """Write the current frame if it was not written (e.g. with ``record_every`` > 1, when a run
        stops early), and the frames kept by :attr:`write_batch`: the stage shows the whole run."""
        if self.write and getattr(self, "_written_frame", None) != self.frame:
            self._write()
        with self._own_writes():
            for other in self.scenes:
                other.flush()
        self._flush_syncs()

    @property
    def write_batch(self) -> int:
        """Recorded frames written onto the stage together (default 1: every frame at once). More is
        about twice as fast to write (see :attr:`~newton_usd.sync.StageSync.batch_frames`), but the stage
        shows a frame only once its batch is written (:meth:`flush`, :meth:`save` and the value clips
        write what is kept): for runs no one watches, as ``usdsim run``'s 32."""
        return self.sync.batch_frames

    @write_batch.setter
    def write_batch(self, frames: int) -> None:
        if int(frames) < 1:
            raise NewtonUsdError(f"write_batch must be at least 1 frame, got {frames}")
        self._flush_syncs()
        for sim in (self, *self.scenes):
            sim.sync.batch_frames = int(frames)

    def _flush_syncs(self) -> None:
        """Write the frames the syncs of every scene keep (counted as time spent in the sync)."""
        with self._own_writes():
            for sim in (self, *self.scenes):
                t0 = time.perf_counter()
                sim.sync.flush()
                sim.sync_seconds += time.perf_counter() - t0

    def _own_writes(self):
        watcher = getattr(self, "watcher", None)  # (none yet while the constructor copies the environment)
        return watcher.muted() if watcher is not None else contextlib.nullcontext()

    def run(self, frames: int | None = None, progress=None) -> None:
        """Simulate ``frames`` frames (default: :meth:`default_frames`); ``progress(n)`` after each."""
        n = self.default_frames() if frames is None else int(frames)
        if self._pipelines():
            self._run_pipelined(n, progress)
            return
        for i in range(n):
            self.step_frame(last=i == n - 1)
            if progress is not None:
                progress(1)

    def _pipelines(self) -> bool:
        """Whether :meth:`run` overlaps the stage write with the next frame's steps (:meth:`_run_pipelined`): the
        frames are frame functions, and nothing else reads the state between them (joint states, other scenes)."""
        return self.joint_sync is None and not self.scenes and self._as_frame(self.substeps)

    def _run_pipelined(self, n: int, progress=None) -> None:
        """:meth:`run`, the write-back behind the device: frame k+1 is queued (its steps, then its poses' copy into
        host memory, :class:`~newton_usd.sync.readback.PoseReadback`) before frame k's poses are checked and written
        onto the stage, so that on CUDA the stage write overlaps the GPU's steps. The stage gets the same time samples
        as frame after frame (:meth:`step_frame`); on the CPU the copies are plain, the same code path."""
        pending = None
        try:
            for i in range(n):
                last = i == n - 1
                if self.watcher is not None and self.watcher.pending:
                    pending = self._finish_frame(pending)
                    self.apply_edits()
                if not self._pipelines():  # (an edit rebuilt the model into one that cannot)
                    pending = self._finish_frame(pending)
                    self.step_frame(last=last)
                else:
                    pending, previous = self._queue_frame(last), pending
                    self._finish_frame(previous)
                    if self.first_step_seconds is None:  # (the first frame: waited for, timed)
                        pending = self._finish_frame(pending)
                if progress is not None:
                    progress(1)
        except SimulationError:
            raise  # (the frame queued after the one that blew up is not written)
        except BaseException:
            self._finish_frame(pending)  # (interrupted: the frames simulated are written)
            raise
        self._finish_frame(pending)

    def _queue_frame(self, last: bool) -> tuple:
        """Queue a frame's steps and its readback (no wait); (readback slot, frame, time code, written, start)."""
        self._write_start()
        t0 = time.perf_counter()
        try:
            self._simulate_frame(self.substeps)
        except SimulationError as e:
            raise SimulationError(e.reason, frame=self.frame + 1, label=e.label) from None
        self.frame += 1
        self.sim_seconds = self.steps * self.dt
        write = self._records_frame(last)
        rows = self.sync.body_count if write else 0
        if self._readback is None or self._readback.rows < rows or self._readback.device != self.model.device:
            self._readback = PoseReadback(self.model.device, self.sync.body_count)
        slot = self._readback.start(self.state.body_q, self._bounds.flag, rows)
        self.wall_seconds += time.perf_counter() - t0
        return slot, self.frame, self.time_code, write, t0

    def _finish_frame(self, pending) -> None:
        """Wait for a queued frame's readback, check its bounds and write it (see :meth:`_run_pipelined`)."""
        if pending is None:
            return None
        slot, frame, time_code, write, started = pending
        t0 = time.perf_counter()
        body_q, tripped = self._readback.finish(slot)
        self.wall_seconds += time.perf_counter() - t0
        if self.first_step_seconds is None:
            self.first_step_seconds = time.perf_counter() - started
        if tripped:  # (the message from the state now: the frames after keep a blown-up body's state blown up)
            self._check_bounds(self.state.body_q.numpy(), frame=frame)
            raise SimulationError(
                "a body's pose became NaN or infinite, or it went beyond max_distance or max_speed "
                "(the simulation blew up)", frame=frame,
            )  # fmt: skip
        if write:
            self._write(body_q, at=(frame, time_code))
        return None

    def reset(self, keyframe=None) -> None:
        """Back to the authored state: initial model state, frame 0, authored poses on the stage; with
        ``keyframe``, then into that keyframe (see :meth:`start_from_keyframe`)."""
        self.state = self.model.state()
        self._next = self.model.state()
        self.control = self.model.control()
        capture = getattr(self.solver, "frame_capture", None)
        if capture is not None:  # (new arrays: a graph of the old ones is not replayed, whatever their addresses)
            capture.invalidate("reset")
        self.frame = self.steps = 0
        self.sim_seconds = self.wall_seconds = self.sync_seconds = 0.0
        with self._own_writes():
            if self.joint_sync is not None:
                self.joint_sync.restore()
            for old in self._retired_joint_syncs:
                old.restore()
            self._retired_joint_syncs = []
            self.sync.restore()  # also prunes the prim specs left empty
        if self.clips is not None:
            self.clips.restart()  # the recording starts over: a new run of clips
        if self.rebuilds:  # the model holds the state of the last rebuild: import the authored one again
            imported = _import_stage(self.stage, self._order, self._replicas, self.env_root, self._scene)
            self._rebuild(*imported, keep_state=False)
            self.rebuilds = 0
        with self._own_writes():
            for other in self.scenes:
                other.reset()
        if keyframe is not None:
            self.start_from_keyframe(keyframe)

    def start_from_keyframe(self, keyframe) -> None:
        """Put every world into ``keyframe`` (an index, a label such as the MjcKeyframe prim path, or its
        last name) before the first frame: joint positions and velocities, activations, kinematic
        (mocap) poses and the keyframe's controls. The recording still starts at the stage's start time
        (a keyframe's own time is not added)."""
        if self.frame:
            raise NewtonUsdError("a keyframe can only start a simulation: call reset() first")
        reset = getattr(self.solver, "reset_to_keyframe", None)
        if reset is None:
            raise NewtonUsdError(f"{type(self.solver).__name__} cannot reset to a keyframe")
        reset(self.state, keyframe, self.control)

    # ------------------------------------------------------------------ live edits
    def apply_edits(self) -> str | None:
        """Apply the edits made on the stage since the last frame to the running simulation.

        The stage is imported again (so every value is read exactly as at the start: units, schema
        precedence, mass rules) and compared with the running model:

        - same bodies, joints and shapes: the values that differ go into the running solver without
          rebuilding it (gravity, masses and inertia, joint limits, drive gains, targets and force
          limits, armature, joint friction, contact friction), and the run goes on from its state;
        - otherwise (a prim added or removed, a body or joint disabled, a value the solver cannot
          change in place): the model and solver are rebuilt, and every body that remains keeps its
          simulated pose and velocity.

        An edit that makes the stage invalid is reported (logged) and not applied; the run goes on.
        With several PhysicsScenes every scene applies the edits to its own model. Returns "values",
        "rebuilt", or None when nothing was applied (the strongest of the scenes').
        """
        edits = self.watcher.take() if self.watcher is not None else None
        if not edits:
            return None
        applied = self._apply(edits)
        for other in self.scenes:
            result = other._apply(edits)
            if result == "rebuilt" or (result == "values" and applied is None):
                applied = result
        if self.scenes and edits.resynced:
            self._check_scenes()
        return applied

    def _check_scenes(self) -> None:
        """Warn when the edits changed which PhysicsScenes simulate bodies (not applied while running)."""
        try:
            now = read_scenes(self.stage, tuple(self._order) if self._order else DIALECTS).simulated()
        except NewtonUsdError:
            return
        running = [s.scene_path for s in (self, *self.scenes)]
        if now != running:
            logger.warning(
                "%s: the PhysicsScenes that simulate bodies are now %s (running: %s): open the stage again to "
                "simulate them", self.source_file, ", ".join(now) or "none", ", ".join(running),
            )  # fmt: skip

    def _apply(self, edits) -> str | None:
        """:meth:`apply_edits` for this scene's model."""
        targets = self._drive_target_edits(edits)
        if targets is not None:  # the fast path: no import, a few values set
            self._set_drive_targets(targets)
            self.edits_applied += 1
            logger.info("%s: frame %d: applied drive target edits", self.source_file, self.frame)
            return "values"
        gravity = self._gravity_edit(edits)
        if gravity is not None:  # the other fast path: the scene's gravity
            gravity = gravity.astype(np.float32)
            if np.array_equal(np.array(self.model.gravity, dtype=np.float32), gravity):
                return None
            self.model.gravity = wp.vec3(*gravity)
            self.solver.update_parameters(self.model, {"gravity"})
            self.edits_applied += 1
            logger.info("%s: frame %d: applied the gravity edit", self.source_file, self.frame)
            return "values"
        try:
            builder, imported = _import_stage(self.stage, self._order, self._replicas, self.env_root, self._scene)
            model = builder.finalize(self.model.device)
        except NewtonUsdError as e:
            logger.warning("%s: an edit was not applied: %s", self.source_file, e)
            return None
        same, changed = model_differences(self.model, model)
        if same and not changed:
            return None
        self.edits_applied += 1
        leftover = self.solver.update_parameters(model, changed) if same else changed
        if same and not leftover:
            self._take_values(model, changed)
            logger.info("%s: frame %d: applied edits of %s", self.source_file, self.frame, ", ".join(sorted(changed)))
            return "values"
        why = "the bodies, joints or shapes changed" if not same else f"{', '.join(sorted(leftover))} changed"
        logger.info("%s: frame %d: rebuilding the model (%s)", self.source_file, self.frame, why)
        self._rebuild(builder, imported, keep_state=True)
        self.rebuilds += 1
        return "rebuilt"

    def _drive_target_edits(self, edits) -> list | None:
        """``[(control array name, DOF rows in every world, value in SI)]`` when every edit is the drive
        target (``drive:angular|linear:physics:targetPosition|targetVelocity``) of an active drive on a
        revolute or prismatic joint, else None (the edits go through a full re-import)."""
        model, joint_rows = getattr(self, "_joint_rows", (None, None))
        if model is not self.model:  # joint rows by label (every world), once per model
            joint_rows = {}
            for j, label in enumerate(self.model.joint_label):
                joint_rows.setdefault(label, []).append(j)
            self._joint_rows = (self.model, joint_rows)
        types = self.model.joint_type.numpy()
        qd_start = self.model.joint_qd_start.numpy()
        modes = self.model.joint_target_mode.numpy()
        out = []
        for path in edits.changed | edits.resynced:  # a target authored for the first time is a resync
            parts = path.name.split(":") if path.IsPropertyPath() else ()
            if len(parts) != 4 or parts[0] != "drive" or parts[2] != "physics" or parts[3] not in _DRIVE_TARGETS:
                return None
            rows = joint_rows.get(str(path.GetPrimPath()))
            kind = _DRIVE_JOINTS.get(parts[1])
            if not rows or kind is None or any(types[j] != kind for j in rows):
                return None
            dofs = qd_start[rows]
            value = self.stage.GetAttributeAtPath(path).Get()
            if not np.all(modes[dofs]) or not isinstance(value, float | int) or not math.isfinite(value):
                return None  # a drive the model does not run, or a value the import judges
            unit = math.pi / 180.0 if kind == JointType.REVOLUTE else self.imported.frame.meters_per_unit
            out.append((_DRIVE_TARGETS[parts[3]], dofs, float(value) * unit))
        return out

    def _gravity_edit(self, edits) -> np.ndarray | None:
        """The gravity (simulation units) when every edit is the ``physics:gravityDirection`` or
        ``physics:gravityMagnitude`` of this Simulation's PhysicsScene, gravity enabled; else None (the edits
        go through a full re-import)."""
        scene = self.scene_path
        enabled = self.imported.scene.get("gravity_enabled")
        if scene is None or enabled is None or not enabled.value:
            return None
        for path in edits.changed | edits.resynced:
            if str(path.GetPrimPath()) != scene or path.name not in _GRAVITY_ATTRIBUTES:
                return None
        physics_scene = UsdPhysics.Scene(self.stage.GetPrimAtPath(scene))
        direction = physics_scene.GetGravityDirectionAttr().Get()
        magnitude = physics_scene.GetGravityMagnitudeAttr().Get()
        if direction is None or magnitude is None:
            return None
        if not (all(math.isfinite(c) for c in direction) and (math.isfinite(magnitude) or magnitude < 0)):
            return None  # (NaN: the import judges it)
        return scene_gravity(direction, magnitude, self.imported.frame)

    def _set_drive_targets(self, targets) -> None:
        """The model and the controls take edited drive targets (as a re-import would give them)."""
        for name, dofs, value in targets:
            for owner in (self.model, self.control):
                array = getattr(owner, name)
                values = array.numpy().copy()
                values[dofs] = value
                array.assign(values)

    def _take_values(self, model, changed) -> None:
        """The running model takes the edited values; the controls take the edited drive targets."""
        for name in ("joint_target_pos", "joint_target_vel"):
            if name in changed:
                new = getattr(model, name).numpy()
                dofs = np.nonzero(getattr(self.model, name).numpy() != new)[0]
                control = getattr(self.control, name)
                values = control.numpy().copy()
                values[dofs] = new[dofs]
                control.assign(values)
        for name in changed:
            if name.startswith("mujoco."):
                key = name[len("mujoco.") :]
                setattr(self.model.mujoco, key, getattr(model.mujoco, key))
            else:
                setattr(self.model, name, getattr(model, name))

    def _rebuild(self, builder, imported, keep_state: bool) -> None:
        """A new model and solver from ``builder``; with ``keep_state``, the bodies that were simulated
        before go on from their simulated poses and velocities."""
        if keep_state:
            _carry_body_state(builder, self.model, self.state)
        model = builder.finalize(self.model.device)
        solver = self.solver.rebuilt(model)
        self.imported, self.model = imported, model
        if self.copies is not None:  # the environment changed: copy it again (the first scene, for every scene)
            first = self._first_scene or self
            with first._own_writes():
                first.copies.remove()
            first._copy_environment(first.world_spacing)
            for s in (first, *first.scenes):
                if s is not self:
                    s._resync()
        sync = StageSync(
            self.stage, self.output_layer, _written_labels(model, self.copies), imported.frame, self.sync.xform_ops
        )
        self._kinematic = _kinematic_bodies(self.stage, model)
        if keep_state:
            sync.carry_over(self.sync)
        if self.joint_sync is not None:
            self._retired_joint_syncs.append(self.joint_sync)
            self.joint_sync = JointStateSync(self.output_layer, model, imported.frame.meters_per_unit)
        self.imported, self.model, self.solver, self.sync = imported, model, solver, sync
        self.state, self._next, self.control = model.state(), model.state(), model.control()

    # ------------------------------------------------------------------ output
    def stream_recording(self, path, frames_per_clip: int = DEFAULT_CLIP_FRAMES) -> str:
        """Stream the recording to USD value clips as it runs, for a run of any length in bounded memory.

        ``path`` is where the recording will be saved (:meth:`save` with that path). Every
        ``frames_per_clip`` recorded frames, the time samples the output layer holds (body poses, joint
        states, PointInstancer arrays: every time-sampled attribute) move into a clip file,
        ``<path stem>.clips/clip.<run>.<NNNN>.usdc``, and leave memory: the output layer holds one chunk
        at most, and so does the stage in memory (earlier frames are on disk only). ``save(path)`` then
        writes the last chunk as the last clip and ``path`` as a stage that shows them: opened with
        pxr, it has the same values at every time code as an unstreamed recording (see
        :mod:`newton_usd.sync.clips` for its layout). Saving elsewhere, ``flatten=True`` and
        :meth:`save_in_place` bake the clips back into time samples (the whole recording in memory
        once). :meth:`reset` starts a new run of clips; :meth:`close` removes the clips that no saved
        output refers to. Returns the clip directory.
        """
        if not self.record:
            raise NewtonUsdError("only a recording (record=True) can be streamed to value clips")
        path = os.path.abspath(os.fspath(path))
        if self.clips is not None:
            if path != self.clips.output_path:
                raise NewtonUsdError(f"the recording is already streamed to clips of {self.clips.output_path}")
            self.clips.frames_per_clip = max(1, int(frames_per_clip))
            return self.clips.directory
        src = self.stage.GetRootLayer()
        if os.path.exists(path) and os.path.realpath(path) == os.path.realpath(src.realPath or ""):
            raise NewtonUsdError(f"{path}: refusing to overwrite the source stage; choose another output path")
        if Sdf.FileFormat.FindByExtension(path) is None:
            raise NewtonUsdError(f"{path}: cannot stream the recording there: not a USD file name")
        self.clips = ClipStream(self.output_layer, path, frames_per_clip, time_codes_per_second=self.fps)
        return self.clips.directory

    def _streams_to(self, path, flatten: bool) -> bool:
        """Whether a save to ``path`` writes the streamed recording as clips (else it bakes them)."""
        return self.clips is not None and not flatten and os.path.abspath(path) == self.clips.output_path

    def save(self, path, flatten: bool = False) -> str:
        """Write the output layer to ``path`` as a stage that sublayers the source file (``flatten``:
        one self-contained file holding the whole composed stage).

        Opening ``path`` shows the source with the simulated motion on top; the source is not touched.
        A recording streamed to ``path`` (:meth:`stream_recording`) is saved as value clips beside it;
        saved to another path, or flattened, its clips are baked into time samples.
        """
        path = os.fspath(path)
        self._flush_syncs()
        src = self.stage.GetRootLayer()
        if os.path.exists(path) and os.path.realpath(path) == os.path.realpath(src.realPath or ""):
            raise NewtonUsdError(f"{path}: refusing to overwrite the source stage; choose another output path")
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise NewtonUsdError(f"{path}: cannot write the output: no directory {directory}")
        clips = self._streams_to(path, flatten)
        if clips:
            with self._own_writes():
                self.clips.close_chunk()  # the last chunk becomes the last clip
        layer = self.clips.baked() if self.clips is not None and not clips else self.output_layer
        out = Sdf.Layer.Find(path) or Sdf.Layer.CreateNew(path)
        if out is None:
            raise NewtonUsdError(f"{path}: cannot write the output (not a USD file name, or not writable)")
        if src.realPath and not flatten:
            out.TransferContent(layer)
            if self._copies_layer is not None:  # the other worlds' copies of the environment
                UsdUtils.StitchLayers(out, self._copies_layer)
            rel = os.path.relpath(src.realPath, directory)
            out.subLayerPaths = [rel.replace(os.sep, "/")]
        else:  # one file: the whole composed stage (an in-memory source has no file to sublayer)
            out.TransferContent(self._flattened(layer))
        if clips:
            self.clips.write_output(out)
        self._stamp(out, src)
        out.comment = f"Simulated by newton_usd from {os.path.basename(src.realPath or src.identifier)}"
        if not out.Save():
            raise NewtonUsdError(f"{path}: could not write the output stage")
        if clips:
            self.clips.saved()  # and the clips of earlier runs go
        else:  # the clips of an earlier output at this path (a stream to it keeps this run's, for a later save)
            streaming = self.clips is not None and os.path.abspath(path) == self.clips.output_path
            if streaming:
                self.clips.overwritten()
            remove_clips(path, keep_run=self.clips.run if streaming else None)
        return path

    def _flattened(self, layer) -> Sdf.Layer:
        """The composed stage flattened, with ``layer`` in place of the output layer."""
        if layer is self.output_layer:
            return self.stage.Flatten(addSourceFileComment=False)
        subs = self.stage.GetSessionLayer().subLayerPaths
        at = list(subs).index(self.output_layer.identifier)
        with self._own_writes():
            subs[at] = layer.identifier
            try:
                return self.stage.Flatten(addSourceFileComment=False)
            finally:
                subs[at] = self.output_layer.identifier

    def save_in_place(self) -> str:
        """Write the simulated motion (and the ``overrides``) into the source file itself: every
        attribute of the output layer replaces the source's (a streamed recording's clips are baked
        into time samples). Only when the user asks for it."""
        self._flush_syncs()
        src = self.stage.GetRootLayer()
        if not src.realPath:
            raise NewtonUsdError("the stage has no file to write in place (it was made in memory)")
        if self.copies is not None:
            raise NewtonUsdError(
                f"{src.realPath}: will not write copies of the other worlds into the source; write to an output file"
            )
        if not os.access(src.realPath, os.W_OK):
            raise NewtonUsdError(f"{src.realPath}: cannot write in place: the file is not writable")
        if src.HasTimeCodesPerSecond() and src.timeCodesPerSecond != self.fps:
            raise NewtonUsdError(
                f"{src.realPath}: cannot write in place at {self.fps:g} fps: the stage's timeCodesPerSecond is "
                f"{src.timeCodesPerSecond:g} (its other animation would change speed); write to an output file"
            )
        layer = self.clips.baked() if self.clips is not None else self.output_layer

        def copy(path):
            if path.IsPropertyPath():
                Sdf.CreatePrimInLayer(src, path.GetPrimPath())
                Sdf.CopySpec(layer, path, src, path)

        with Sdf.ChangeBlock():
            layer.Traverse(Sdf.Path.absoluteRootPath, copy)
            self._stamp(src, src)
        if not src.Save():
            raise NewtonUsdError(f"{src.realPath}: could not write the stage in place")
        return src.realPath

    def _stamp(self, out, src) -> None:
        """Stage metadata of an output layer: units and up axis of the source, the frame rate and range."""
        if out is not src:
            for key in _STAGE_METADATA:
                if src.pseudoRoot.HasInfo(key):
                    out.pseudoRoot.SetInfo(key, src.pseudoRoot.GetInfo(key))
            if src.defaultPrim:
                out.defaultPrim = src.defaultPrim
        out.timeCodesPerSecond = self.fps
        out.framesPerSecond = self.fps
        if self.record:
            out.startTimeCode = self.start_time
            out.endTimeCode = max(s.time_code for s in (self, *self.scenes))

    def close(self) -> None:
        """Detach the output layer from the stage (the stage shows the authored poses again); a streamed
        recording's clips that no saved output refers to are removed."""
        self._flush_syncs()
        if self.clips is not None:
            self.clips.close()
        if self.watcher is not None:
            self.watcher.close()
            self.watcher = None
        for other in self.scenes:
            other.close()
        subs = self.stage.GetSessionLayer().subLayerPaths
        for layer in (self.output_layer, self._copies_layer):
            if layer is not None and layer.identifier in subs:
                subs.remove(layer.identifier)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
