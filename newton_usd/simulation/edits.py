"""Live edits: the edits made on the stage while it runs, applied to the running model and solver (a few values
set in place, or the model rebuilt from a fresh import, the bodies going on from their simulated state)."""

from __future__ import annotations

import contextlib
import logging
import math

import numpy as np
import warp as wp
from pxr import UsdPhysics

from ..core.builder import ModelBuilder
from ..core.quat import quat_rotate
from ..core.types import JointType
from ..errors import NewtonUsdError
from ..sync import JointStateSync, StageSync
from ..sync.live_edits import model_differences
from ..usd import add_usd, read_scenes
from ..usd.importer import scene_gravity
from ..usd.resolver import DIALECTS
from .stepping import kinematic_bodies
from .worlds import written_labels

logger = logging.getLogger("newton_usd")
_DRIVE_TARGETS = {"targetPosition": "joint_target_pos", "targetVelocity": "joint_target_vel"}
"""UsdPhysics drive target attributes, and the control arrays they set."""
_DRIVE_JOINTS = {"angular": JointType.REVOLUTE, "linear": JointType.PRISMATIC}
"""The one-axis joint a drive instance (``drive:<instance>:physics:*``) of that name sits on."""
_GRAVITY_ATTRIBUTES = ("physics:gravityDirection", "physics:gravityMagnitude")


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
        for one in (self, *self.scenes):
            if applied is not None:  # (new drives, gravity or bodies: how far a body may go is measured anew)
                one.restart_flung_check(model_changed=True)
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
            builder, imported = import_stage(self.stage, self._order, self._replicas, self.env_root, self._scene)
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
            self.stage, self.output_layer, written_labels(model, self.copies), imported.frame, self.sync.xform_ops
        )
        self._kinematic = kinematic_bodies(self.stage, model)
        if keep_state:
            sync.carry_over(self.sync)
        if self.joint_sync is not None:
            self._retired_joint_syncs.append(self.joint_sync)
            self.joint_sync = JointStateSync(self.output_layer, model, imported.frame.meters_per_unit)
        self.imported, self.model, self.solver, self.sync = imported, model, solver, sync
        self.state, self._next, self.control = model.state(), model.state(), model.control()
