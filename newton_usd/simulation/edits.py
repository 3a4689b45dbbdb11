"""Live edits: the edits made on the stage while it runs, applied to the running model, state and solver at the next
frame: values written in place and bodies moved, with no import (:mod:`~newton_usd.simulation.in_place`,
:mod:`~newton_usd.simulation.teleport`), or, where the edit changes what is simulated, the model rebuilt from a fresh
import, the bodies going on from their simulated state."""

from __future__ import annotations

import contextlib
import logging

import numpy as np
import warp as wp

from ..core.builder import ModelBuilder
from ..core.quat import quat_rotate
from ..core.types import JointType
from ..errors import NewtonUsdError
from ..sync import JointStateSync
from ..sync.live_edits import model_differences
from ..usd import add_usd, read_scenes
from ..usd.live_values import NotInPlace
from ..usd.resolver import DIALECTS
from .in_place import ModelIndex, Planner
from .stepping import kinematic_bodies
from .teleport import hold_bodies, move_bodies
from .worlds import stage_sync

logger = logging.getLogger("newton_usd")
_CONTROL_TARGETS = ("joint_target_pos", "joint_target_vel")
"""Model arrays whose edits also go into the running Control (the drive targets a step reads)."""
_BOUND_BY = frozenset(
    {"gravity", "joint_target_pos", "joint_target_vel", "joint_target_ke", "joint_target_kd", "joint_target_mode",
     "joint_limit_lower", "joint_limit_upper", "joint_limited"}
)  # fmt: skip
"""Model values the flung check's bound reads (:mod:`~newton_usd.simulation.runaway`): an edit of one measures anew."""


def import_stage(stage, order=None, worlds=1, env_root=None, scene=None):
    """A new builder holding ``stage``'s model (replicated into ``worlds`` worlds, or one world per
    environment under ``env_root``; ``scene``: of that PhysicsScene only), and the import record."""
    builder = ModelBuilder()
    kw = {"order": tuple(order)} if order else {}
    imported = add_usd(builder, stage, env_root=env_root, scene=scene, **kw)
    if worlds > 1:
        builder.replicate(worlds)
    return builder, imported


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


class LiveEdits:
    """:class:`~newton_usd.sim.Simulation`'s live edits (its :attr:`watcher` sees them; its own writes are muted)."""

    def _own_writes(self):
        watcher = getattr(self, "watcher", None)  # (none yet while the constructor copies the environment)
        return watcher.muted() if watcher is not None else contextlib.nullcontext()

    edit_worlds = "all"
    """Which worlds an edit of a prim that several worlds share (a stage replicated with ``worlds``) reaches: "all"
    (every world), or "first" (world 0 only). An environment's prim (``env_root``) feeds its own world only."""

    def apply_edits(self) -> str | None:
        """Apply the edits made on the stage since the last frame to the running simulation.

        In place, with no import, where every edit sets values or moves bodies (see
        :mod:`~newton_usd.simulation.in_place`): each edited property's new value is read as the import reads it
        (units, degrees, schema precedence, mass rules) and written into the rows of the model it sets, in every
        world the prim feeds; the solver takes them (:meth:`~newton_usd.solvers.solver.SolverBase.update_parameters`,
        or, for values its engine compiles, a new solver of the edited model); an edited body transform or velocity
        teleports the body (:mod:`~newton_usd.simulation.teleport`). Otherwise (a prim added or removed, a body or
        joint disabled or retyped, a kinematic body, a collider's shape) the stage is imported again and compared
        with the running model:

        - same bodies, joints and shapes: the values that differ go into the running solver without
          rebuilding it, and the run goes on from its state;
        - otherwise: the model and solver are rebuilt, and every body that remains keeps its
          simulated pose and velocity.

        An edit the import refuses (a negative mass, a NaN position, a transform of zero scale) is said once
        (logged, naming the file, prim and attribute) and not applied; the run goes on.
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
        """:meth:`apply_edits` for this scene's model: in place where the edits set values or move bodies (no
        import), else through an import of the stage."""
        try:
            return self._apply_in_place(edits)
        except NotInPlace as why:
            logger.info("%s: frame %d: importing the stage again (%s)", self.source_file, self.frame, why)
        return self._apply_by_import()

    def _model_index(self) -> ModelIndex:
        index = getattr(self, "_index", None)
        if index is None or index.model is not self.model:
            index = self._index = ModelIndex(self.model)
        return index

    def _apply_in_place(self, edits) -> str | None:
        """The edits as values written into the model's rows and bodies moved in the state (see
        :mod:`~newton_usd.simulation.in_place`); raises NotInPlace where they need an import."""
        index = self._model_index()
        plan = Planner(self, index, first_world=self.edit_worlds == "first").add(edits)
        said = self.__dict__.setdefault("_said_refused", set())
        for key, message in plan.refused:  # (once per prim and attribute, until one of its edits is taken)
            if key not in said:
                said.add(key)
                logger.warning("%s: an edit was not applied: %s", self.source_file, message)
        said -= plan.applied - {key for key, _ in plan.refused}
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
            leftover = self.solver.update_parameters(self.model, changed, rows)
            if leftover:  # (values the engine compiles: a new solver of the edited model, no import)
                self._rebuild_solver(leftover)
        moved = bool(plan.poses or plan.velocities)
        if moved:
            refused = move_bodies(self.model, index.tree, self.state, plan.poses, plan.velocities)
            for b, why in refused:
                key = (self.model.body_label[b], "xformOp")
                if key not in said:
                    said.add(key)
                    logger.warning("%s: %s was not moved: %s", self.source_file, key[0], why)
            self.solver.joint_states_written(self.state)
        if plan.placed:
            self._place_held(plan.placed, index.tree)
        if plan.moved_ancestors:
            self._refresh_sync()
        if not (changed or moved or plan.placed):
            return None
        self.edits_applied += 1
        logger.info("%s: frame %d: applied edits in place (%s)", self.source_file, self.frame,
                    ", ".join(sorted(changed | ({"body poses"} if moved else set())
                                     | ({"kinematic body poses"} if plan.placed else set()))))  # fmt: skip
        if changed & _BOUND_BY or moved:  # (what bounds how far a body goes changed: measured anew)
            self.restart_flung_check(model_changed=self._reach_changed(changed, rows))
        if "body_kinematic" in changed:
            self.restart_flung_check(model_changed=True)  # (a check of a model with kinematic bodies: none)
        return "values"

    def _place_held(self, placed, tree) -> None:
        """Kinematic bodies the user moved (``placed``: body -> pose, SI) put there at once, at rest (MuJoCo's welded
        body with its mocap body), and shown there: where the run wrote one's prim (a body made kinematic during the
        run), its ops on the output layer get the new pose, which they would hide."""
        rows = np.fromiter(placed, dtype=np.int64, count=len(placed))
        body_q = np.array(self.state.body_q.numpy(), dtype=np.float32)
        body_q[rows] = np.array([np.concatenate(p) for p in placed.values()], dtype=np.float32)
        self.state.body_q.assign(body_q)
        hold_bodies(tree, self.state, rows)
        self.solver.joint_states_written(self.state)
        if self._display_offset is not None:
            body_q[:, :3] += self._display_offset[: len(body_q)]
        with self._own_writes():
            self.sync.place(body_q[: self.sync.body_count], rows, self.time_code if self.record else None)

    def _switched(self, bodies, tree) -> None:
        """``bodies`` were switched between held (kinematic, or disabled) and simulated (their flags written): each
        stays where it is, at rest (:func:`~.teleport.hold_bodies`); the held ones are moved by their prims from the
        next step on (the stage shows them where they are: the frame written first, where it was not), no longer
        written, and the others written again."""
        held = self.model.body_kinematic.numpy().astype(bool)
        if held[bodies].any():
            self.flush()
        hold_bodies(tree, self.state, bodies)
        self.solver.joint_states_written(self.state)
        self._kinematic = kinematic_bodies(self.stage, self.model)
        with self._own_writes():  # (the sync's batch flushed: the run's own writes)
            self.sync.hold(held)

    def _write_values(self, plan) -> set:
        """Write ``plan``'s values into the model's arrays (and the drive targets into the controls); the names of
        the arrays written."""
        changed = set()
        if plan.gravity is not None:
            gravity = plan.gravity.astype(np.float32)
            if not np.array_equal(np.array(self.model.gravity, dtype=np.float32), gravity):
                self.model.gravity = wp.vec3(*gravity)
                changed.add("gravity")
        for name, values in plan.values.items():
            if not values:
                continue
            rows = np.fromiter(values, dtype=np.int64, count=len(values))
            new = list(values.values())
            if name.startswith("mujoco."):
                array = getattr(self.model.mujoco, name[len("mujoco.") :])
                array[rows] = new
            else:
                owners = (self.model, self.control) if name in _CONTROL_TARGETS else (self.model,)
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
        reach = getattr(self, "_reach", None)
        if reach is None or reach[0] is not self.model:
            return True
        return bool(reach[1].linear[rows.get("dof", np.zeros(0, dtype=np.int64))].any())

    def _rebuild_solver(self, why) -> None:
        """A new solver of the (edited) running model: for values its engine compiles (``why``); every body goes on
        from its state, no import."""
        logger.info("%s: frame %d: a new solver of the edited model (%s)", self.source_file, self.frame,
                    ", ".join(sorted(why)))  # fmt: skip
        arrays = {n: getattr(self.state, n).numpy().copy() for n in ("joint_q", "joint_qd", "body_q", "body_qd")}
        self.solver = self.solver.rebuilt(self.model)
        self.state, self._next = self.model.state(), self.model.state()
        for name, values in arrays.items():
            getattr(self.state, name).assign(values)

    def _refresh_sync(self) -> None:
        """The stage sync anew (prims whose parents moved: their local transforms are of the new places), going on
        with what the old one wrote."""
        with self._own_writes():  # (the old sync's batch flushed: the run's own writes, not the user's edits)
            self.sync = stage_sync(self.stage, self.output_layer, self.model, self.copies, self.imported.frame,
                                   self.sync.xform_ops, old=self.sync)  # fmt: skip

    def _apply_by_import(self) -> str | None:
        """The edits through an import of the stage, compared with the running model (see :meth:`apply_edits`)."""
        try:
            builder, imported = import_stage(self.stage, self._order, self._replicas, self.env_root, self._scene)
            model = builder.finalize(self.model.device)
        except NewtonUsdError as e:
            logger.warning("%s: an edit was not applied: %s", self.source_file, e)
            return None
        same, changed = model_differences(self.model, model)
        if same and not changed:
            return None
        self.edits_applied += 1
        # (a body switched beside edits only the import takes: rebuilt, so that its hold starts as at an import)
        taken = same and "body_kinematic" not in changed
        leftover = self.solver.update_parameters(model, changed) if taken else changed
        if same and not leftover:
            self._take_values(model, changed)
            logger.info("%s: frame %d: applied edits of %s", self.source_file, self.frame, ", ".join(sorted(changed)))
            self.restart_flung_check(model_changed=True)
            return "values"
        why = "the bodies, joints or shapes changed" if not same else f"{', '.join(sorted(leftover))} changed"
        logger.info("%s: frame %d: rebuilding the model (%s)", self.source_file, self.frame, why)
        self._rebuild(builder, imported, keep_state=True)
        self.rebuilds += 1
        self.restart_flung_check(model_changed=True)
        return "rebuilt"

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
        with self._own_writes():  # (the old sync's batch flushed: the run's own writes, not the user's edits)
            sync = stage_sync(self.stage, self.output_layer, model, self.copies, imported.frame, self.sync.xform_ops,
                              old=self.sync if keep_state else None)  # fmt: skip
        self._kinematic = kinematic_bodies(self.stage, model)
        if self.joint_sync is not None:
            self._retired_joint_syncs.append(self.joint_sync)
            self.joint_sync = JointStateSync(self.output_layer, model, imported.frame.meters_per_unit)
        self.imported, self.model, self.solver, self.sync = imported, model, solver, sync
        self.state, self._next, self.control = model.state(), model.state(), model.control()
