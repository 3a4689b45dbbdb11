"""The live editor: the edits made on the stage while it runs, applied to the running model, state and solver at the
next frame: values written in place and bodies moved, with no import (:mod:`~newton_usd.simulation.in_place`,
:mod:`~newton_usd.simulation.teleport`), or, where the edit changes what is simulated, the model rebuilt from a fresh
import (:mod:`~newton_usd.simulation.opening`), the bodies going on from their simulated state."""

from __future__ import annotations

import contextlib
import logging

import numpy as np
import warp as wp

from ..core.quat import quat_rotate
from ..core.types import JointType
from ..errors import NewtonUsdError
from ..sync.live_edits import StageWatcher, model_differences
from ..usd import read_scenes
from ..usd.live_values import NotInPlace
from ..usd.resolver import DIALECTS
from . import opening
from .in_place import ModelIndex, Planner
from .particle_moves import follow, move_particles
from .teleport import hold_bodies, move_bodies

logger = logging.getLogger("newton_usd")
_CONTROL_TARGETS = ("joint_target_pos", "joint_target_vel")
"""Model arrays whose edits also go into the running Control (the drive targets a step reads)."""
_BOUND_BY = frozenset(
    {"gravity", "joint_target_pos", "joint_target_vel", "joint_target_ke", "joint_target_kd", "joint_target_mode",
     "joint_limit_lower", "joint_limit_upper", "joint_limited"}
)  # fmt: skip
"""Model values the flung check's bound reads (:mod:`~newton_usd.simulation.runaway`): an edit of one measures anew."""


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


class LiveEditor:
    """A Simulation's part that applies the edits made on its stage while it runs: its :attr:`watcher` sees them (the
    run's own writes muted, :meth:`muted`), and :meth:`apply` takes them into the run, through the other parts'
    methods (the physics' model, solver and state; the recorder's sync; the stepper's kinematic bodies; the blow-up
    check's start). See :meth:`~newton_usd.sim.Simulation.apply_edits`.

    Args:
        run: the :class:`~newton_usd.sim.Simulation` edited (its parts, and what the in-place planner reads: the
            stage, import, model, time code).
        live: watch the stage (else edits are applied only when handed to :meth:`apply`: another scene's).
    """

    edit_worlds = "all"
    """Which worlds an edit of a prim that several worlds share (a stage replicated with ``worlds``) reaches: "all"
    (every world), or "first" (world 0 only). An environment's prim (``env_root``) feeds its own world only."""

    def __init__(self, run, live: bool):
        self._run = run
        self.watcher = StageWatcher(run.stage) if live else None
        self.edits_applied = 0  # edits applied to the running model (values, or a rebuild)
        self.rebuilds = 0  # of which rebuilt the model (prims added or removed)
        self._said_refused = set()  # (prim, attribute) of the refused edits said, until one of theirs is taken
        self._index = None  # the ModelIndex of the running model

    def muted(self):
        """A context in which the stage's changes are the run's own writes, not edits."""
        return self.watcher.muted() if self.watcher is not None else contextlib.nullcontext()

    @property
    def pending(self) -> bool:
        """Whether edits wait for the next frame."""
        return self.watcher is not None and self.watcher.pending

    def take(self):
        """The edits made since the last frame (None: none, or not watching)."""
        return self.watcher.take() if self.watcher is not None else None

    def close(self) -> None:
        if self.watcher is not None:
            self.watcher.close()
            self.watcher = None

    def apply(self, edits) -> str | None:
        """The edits applied to this scene's run: in place where they set values or move bodies (no import), else
        through an import of the stage; "values", "rebuilt" or None (nothing applied)."""
        try:
            return self._apply_in_place(edits)
        except NotInPlace as why:
            logger.info("%s: frame %d: importing the stage again (%s)", self._run.source_file, self._run.frame, why)
        return self._apply_by_import()

    def _model_index(self) -> ModelIndex:
        model = self._run.physics.model
        if self._index is None or self._index.model is not model:
            self._index = ModelIndex(model)
        return self._index

    def _say(self, key, message: str) -> None:
        """Warn of an edit not applied, once per (prim, attribute) until one of its edits is taken."""
        if key not in self._said_refused:
            self._said_refused.add(key)
            logger.warning("%s: %s", self._run.source_file, message)

    def _apply_in_place(self, edits) -> str | None:
        """The edits as values written into the model's rows and bodies moved in the state (see
        :mod:`~newton_usd.simulation.in_place`); raises NotInPlace where they need an import."""
        run, physics = self._run, self._run.physics
        index = self._model_index()
        plan = Planner(run, index, first_world=self.edit_worlds == "first").add(edits)
        for key, message in plan.refused:
            self._say(key, f"an edit was not applied: {message}")
        self._said_refused -= plan.applied - {key for key, _ in plan.refused}
        changed = self._write_values(plan)
        rows = {}
        for name in changed:
            kind = plan.kinds.get(name)
            if kind is not None:
                rows.setdefault(kind, set()).update(plan.values[name])
        rows = {k: np.array(sorted(v), dtype=np.int64) for k, v in rows.items()}
        if "body_kinematic" in changed:
            self._switched(np.fromiter(plan.values["body_kinematic"], dtype=np.int64), index.tree)
        if changed:
            leftover = physics.solver.update_parameters(physics.model, changed, rows)
            if leftover:  # (values the engine compiles: a new solver of the edited model, no import)
                logger.info("%s: frame %d: a new solver of the edited model (%s)", run.source_file, run.frame,
                            ", ".join(sorted(leftover)))  # fmt: skip
                physics.new_solver()
        moved = bool(plan.poses or plan.velocities)
        if moved:
            refused = move_bodies(physics.model, index.tree, physics.state, plan.poses, plan.velocities)
            for b, why in refused:
                label = physics.model.body_label[b]
                self._say((label, "xformOp"), f"{label} was not moved: {why}")
            physics.solver.joint_states_written(physics.state)
        if plan.placed:
            self._place_held(plan.placed, index.tree)
        particles = self._move_particles(plan.particle_moves)
        if plan.moved_ancestors:
            run.recorder.resync()  # (prims whose parents moved: their local transforms are of the new places)
        if not (changed or moved or plan.placed or particles):
            return None
        self.edits_applied += 1
        logger.info("%s: frame %d: applied edits in place (%s)", run.source_file, run.frame,
                    ", ".join(sorted(changed | ({"body poses"} if moved else set())
                                     | ({"kinematic body poses"} if plan.placed else set())
                                     | {f"{p} moved" for p in particles})))  # fmt: skip
        check = run.blow_up_check
        if changed & _BOUND_BY or moved:  # (what bounds how far a body goes changed: measured anew)
            check.restart_flung_check(model_changed=self._reach_changed(changed, rows))
        if "body_kinematic" in changed:
            check.restart_flung_check(model_changed=True)  # (a check of a model with kinematic bodies: none)
        return "values"

    def _move_particles(self, paths) -> list:
        """Particle prims moved by hand (``paths``): their points teleported with them
        (:func:`~.particle_moves.move_particles`); the prims moved."""
        run, physics = self._run, self._run.physics
        sync = run.recorder.points_sync
        if not paths or sync is None:
            return []
        moved = move_particles(run.stage, physics.model, physics.state, sync, paths, physics.imported.frame,
                               first_world=self.edit_worlds == "first")  # fmt: skip
        graphics = getattr(run.recorder, "graphics_sync", None)
        if moved and graphics is not None:  # (graphics meshes under a moved body prim: written in their new space)
            follow(run.stage, graphics.points)
        return moved

    def _place_held(self, placed, tree) -> None:
        """Kinematic bodies the user moved (``placed``: body -> pose, SI) put there at once, at rest (MuJoCo's welded
        body with its mocap body), and shown there: where the run wrote one's prim (a body made kinematic during the
        run), its ops on the output layer get the new pose, which they would hide."""
        physics = self._run.physics
        rows = np.fromiter(placed, dtype=np.int64, count=len(placed))
        body_q = np.array(physics.state.body_q.numpy(), dtype=np.float32)
        body_q[rows] = np.array([np.concatenate(p) for p in placed.values()], dtype=np.float32)
        physics.state.body_q.assign(body_q)
        hold_bodies(tree, physics.state, rows)
        physics.solver.joint_states_written(physics.state)
        self._run.recorder.place(body_q, rows)

    def _switched(self, bodies, tree) -> None:
        """``bodies`` were switched between held (kinematic, or disabled) and simulated (their flags written): each
        stays where it is, at rest (:func:`~.teleport.hold_bodies`); the held ones are moved by their prims from the
        next step on (the stage shows them where they are: the frame written first, where it was not), no longer
        written, and the others written again."""
        run, physics = self._run, self._run.physics
        held = physics.model.body_kinematic.numpy().astype(bool)
        if held[bodies].any():
            run.flush()
        hold_bodies(tree, physics.state, bodies)
        physics.solver.joint_states_written(physics.state)
        run.stepper.refresh_kinematic()
        run.recorder.hold(held)

    def _write_values(self, plan) -> set:
        """Write ``plan``'s values into the model's arrays (and the drive targets into the controls); the names of
        the arrays written."""
        model, control = self._run.physics.model, self._run.physics.control
        changed = set()
        if plan.gravity is not None:
            gravity = plan.gravity.astype(np.float32)
            if not np.array_equal(np.array(model.gravity, dtype=np.float32), gravity):
                model.gravity = wp.vec3(*gravity)
                changed.add("gravity")
        for name, values in plan.values.items():
            if not values:
                continue
            rows = np.fromiter(values, dtype=np.int64, count=len(values))
            new = list(values.values())
            if name.startswith("mujoco."):
                array = getattr(model.mujoco, name[len("mujoco.") :])
                array[rows] = new
            else:
                owners = (model, control) if name in _CONTROL_TARGETS else (model,)
                for owner in owners:
                    array = getattr(owner, name)
                    full = array.numpy().copy()
                    full[rows] = np.asarray(new, dtype=full.dtype).reshape((len(rows),) + full.shape[1:])
                    array.assign(full)
            changed.add(name)
        return changed

    def _reach_changed(self, changed, rows) -> bool:
        """Whether what the flung check measures of the model's structure (the travel of limited linear DOFs)
        changed: a limit of a linear DOF."""
        if not changed & {"joint_limit_lower", "joint_limit_upper", "joint_limited"}:
            return False
        reach = self._run.blow_up_check.reach_of(self._run.physics.model)
        if reach is None:
            return True
        return bool(reach.linear[rows.get("dof", np.zeros(0, dtype=np.int64))].any())

    def _apply_by_import(self) -> str | None:
        """The edits through an import of the stage, compared with the running model (see
        :meth:`~newton_usd.sim.Simulation.apply_edits`)."""
        run, physics = self._run, self._run.physics
        try:
            builder, imported = opening.reimport(run.stage, run.options)
            model = builder.finalize(physics.device)
        except NewtonUsdError as e:
            logger.warning("%s: an edit was not applied: %s", run.source_file, e)
            return None
        same, changed = model_differences(physics.model, model)
        if same and not changed:
            return None
        self.edits_applied += 1
        # (a body switched beside edits only the import takes: rebuilt, so that its hold starts as at an import)
        taken = same and "body_kinematic" not in changed
        leftover = physics.solver.update_parameters(model, changed) if taken else changed
        if same and not leftover:
            self._take_values(model, changed)
            logger.info("%s: frame %d: applied edits of %s", run.source_file, run.frame, ", ".join(sorted(changed)))
            run.blow_up_check.restart_flung_check(model_changed=True)
            return "values"
        why = "the bodies, joints or shapes changed" if not same else f"{', '.join(sorted(leftover))} changed"
        logger.info("%s: frame %d: rebuilding the model (%s)", run.source_file, run.frame, why)
        self.rebuild(builder, imported, keep_state=True)
        self.rebuilds += 1
        run.blow_up_check.restart_flung_check(model_changed=True)
        return "rebuilt"

    def _take_values(self, model, changed) -> None:
        """The running model takes the edited values; the controls take the edited drive targets."""
        running, control = self._run.physics.model, self._run.physics.control
        for name in _CONTROL_TARGETS:
            if name in changed:
                new = getattr(model, name).numpy()
                dofs = np.nonzero(getattr(running, name).numpy() != new)[0]
                array = getattr(control, name)
                values = array.numpy().copy()
                values[dofs] = new[dofs]
                array.assign(values)
        for name in changed:
            if name.startswith("mujoco."):
                key = name[len("mujoco.") :]
                setattr(running.mujoco, key, getattr(model.mujoco, key))
            else:
                setattr(running, name, getattr(model, name))

    def rebuild(self, builder, imported, keep_state: bool) -> None:
        """A new model and solver from ``builder``; with ``keep_state``, the bodies that were simulated
        before go on from their simulated poses and velocities."""
        run, physics = self._run, self._run.physics
        if keep_state:
            _carry_body_state(builder, physics.model, physics.state)
        model = builder.finalize(physics.device)
        physics.replace(imported, model, physics.solver.rebuilt(model))
        run.recopy_environment()  # (the environment changed: copied again, where it is shown in copies)
        run.recorder.rebuilt(keep=keep_state)
        run.stepper.refresh_kinematic()


def check_scenes(stage, order, running: list, source_file) -> None:
    """Warn when the edits changed which PhysicsScenes simulate bodies (``running``: the scene paths simulated; not
    applied while running)."""
    try:
        now = read_scenes(stage, tuple(order) if order else DIALECTS).simulated()
    except NewtonUsdError:
        return
    if now != running:
        logger.warning(
            "%s: the PhysicsScenes that simulate bodies are now %s (running: %s): open the stage again to "
            "simulate them", source_file, ", ".join(now) or "none", ", ".join(running),
        )  # fmt: skip
