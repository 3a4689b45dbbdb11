"""Live edits in place: each edited property mapped to the model rows it sets, their new values read as the import
reads them (:mod:`newton_usd.usd.live_values`), and the bodies it moves; no import of the stage.

An edited property of a prim sets the rows of every element labelled with that prim in every world it feeds (an
environment's prim: its world; a replicated stage's prim: every world, or world 0 with ``edit_worlds="first"``):

- a rigid body's ``xformOp:*`` / ``xformOpOrder`` (its own ops, or the ``xformOp:*:physics`` ops the run writes, on
  any layer, at the current time or the default): the body is teleported there (:mod:`.teleport`); an edited
  ancestor prim moves every body under it;
- its ``physics:velocity`` / ``physics:angularVelocity``: its velocity;
- the mass properties (``physics:mass``, ``density``, ``centerOfMass``, ``diagonalInertia``, ``principalAxes``) of
  a body or of one of its colliders, a material's friction, restitution and density: the body's mass properties,
  the colliders' friction and restitution;
- a material binding (``material:binding``, ``material:binding:physics``, collection bindings, a collection's
  members) on a collider or an ancestor of colliders, and MaterialBindingAPI applied or removed (as Kit binds: the
  API, then the binding): the colliders at and below that prim read their materials again as USD's parser binds
  them (a collider with the API applied takes the material bound to it or above it), whether the material was there
  or defined during the run: their friction and restitution rows, and their bodies' mass properties where the
  material's density changes them;
- a prim defined that the import simulates nothing of (a Material, a Shader, a Scope: no physics, MuJoCo or Newton
  schema but a material's): nothing, but the colliders bound to a material defined there take it;
- a collider's ``physics:collisionEnabled``: whether it collides;
- a free body's ``physics:kinematicEnabled`` / ``physics:rigidBodyEnabled``: whether it is held (moved by its prim:
  a kinematic body, or a disabled one, whose colliders UsdPhysics makes static) or simulated;
- any property of a joint: its limits, drive gains, targets and force limits, friction, armature and MuJoCo values
  (the joint is added again as the import adds it, into a builder of its own, and its rows compared);
- the simulated PhysicsScene's gravity.

What changes more than values (a prim added with a schema the import reads, a prim removed or retyped, another schema
applied to the model's prims, a jointed body made kinematic or disabled, a joint disabled or locked, a collider's
shape) raises :class:`~newton_usd.usd.live_values.NotInPlace`: the caller imports the
stage again. An edit the import refuses (a negative mass, a NaN position, a transform of zero scale) is said once
(:attr:`Plan.refused`) and left out.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade

from ..core.quat import gf_to_xyzw
from ..core.types import JointType
from ..errors import UsdInputError
from ..sync.live_edits import user_world_transform, xform_edit
from ..sync.stage_sync import OP_MATRIX, OP_ORIENT, OP_SCALE, OP_TRANSLATE
from ..usd.live_values import LiveValues, NotInPlace, bound_materials, collider_prim
from ..usd.resolver import DIALECTS
from ..usd.scenes import scene_gravity
from .particle_moves import placed_particles
from .teleport import JointTree

GRAVITY_ATTRIBUTES = ("physics:gravityDirection", "physics:gravityMagnitude")
MASS_ATTRIBUTES = frozenset(
    ("physics:mass", "physics:density", "physics:centerOfMass", "physics:diagonalInertia", "physics:principalAxes")
)
VELOCITY_ATTRIBUTES = frozenset(("physics:velocity", "physics:angularVelocity"))
SWITCH_ATTRIBUTES = frozenset(("physics:kinematicEnabled", "physics:rigidBodyEnabled"))
_COLLISION_ENABLED = "physics:collisionEnabled"
_PHYSICS_OPS = frozenset((OP_TRANSLATE, OP_ORIENT, OP_SCALE, OP_MATRIX))
_SCHEMA_PREFIXES = ("Physics", "Mjc", "Newton", "Physx")
_BINDING = "material:binding"  # (its relationships: material:binding, material:binding:physics, ...:collection:*)
_BINDING_API = "MaterialBindingAPI"
_COLLECTION = "collection:"
_PRIM_FIELDS_KEPT = frozenset(
    {"specifier", "documentation", "comment", "customData", "assetInfo", "displayName", "displayGroupOrder", "hidden",
     "kind", "propertyOrder", "primOrder"}
)  # fmt: skip
"""Prim metadata whose change simulates nothing new (an ``over`` made in another layer to hold an edit changes the
``specifier`` field of the prim and its parents)."""
_PRIM_FIELDS_SCHEMAS = frozenset({"apiSchemas", "typeName"})
"""Prim metadata whose change (a resync) is read here: what the prim is (a prim defined, a schema applied)."""

DOF_VALUES = (
    "joint_limit_lower", "joint_limit_upper", "joint_limited", "joint_target_ke", "joint_target_kd",
    "joint_target_mode", "joint_target_pos", "joint_target_vel", "joint_effort_limit", "joint_drive_acceleration",
    "joint_armature", "joint_friction", "joint_limit_ke", "joint_limit_kd",
)  # fmt: skip
"""The model's per-DOF values a joint edit may set in place."""
_BOUNDED = {
    "joint_limit_lower": (-1e10, np.inf),
    "joint_limit_upper": (-np.inf, 1e10),
    "joint_effort_limit": (-np.inf, 1e10),
}
"""How finalize bounds them (the builder's infinities)."""
SHAPE_MATERIAL_VALUES = (
    "shape_material_mu", "shape_material_restitution", "shape_material_mu_torsional", "shape_material_mu_rolling"
)  # fmt: skip
_TOLERANCE = dict(rtol=1e-6, atol=1e-9)


@dataclass
class Plan:
    """What a frame's edits change in place.

    Attributes:
        values: model array name (``"mujoco.<name>"`` for MuJoCo-only values) -> {row: new value}.
        kinds: the element kind of each name's rows ("body", "shape", "dof", ...).
        poses: body index -> (position, Warp quaternion), SI: where it is teleported.
        placed: kinematic body index -> its pose, SI: where the user put it (the stage shows it there).
        velocities: body index -> origin velocity (6, world frame).
        gravity: the new gravity (SI), or None.
        moved_ancestors: an ancestor prim of bodies was moved (the stage sync reads its parents again).
        particle_moves: particle prims (or deformables' body prims) moved by hand: their points teleported.
        refused: ``[(key, message)]`` of the edits not applied (bad values), each said once by the caller.
        applied: the ``(prim, attribute)`` keys of the edits taken.
    """

    values: dict = field(default_factory=dict)
    kinds: dict = field(default_factory=dict)
    poses: dict = field(default_factory=dict)
    placed: dict = field(default_factory=dict)
    velocities: dict = field(default_factory=dict)
    gravity: np.ndarray | None = None
    moved_ancestors: bool = False
    particle_moves: set = field(default_factory=set)
    refused: list = field(default_factory=list)
    applied: set = field(default_factory=set)

    def set(self, kind: str, name: str, rows, value) -> None:
        self.kinds[name] = kind
        target = self.values.setdefault(name, {})
        for r in np.atleast_1d(rows):
            target[int(r)] = value


class ModelIndex:
    """A model's elements by label (their rows in every world), its joint tree and its bodies' ancestors; made
    once per model."""

    def __init__(self, model):
        self.model = model
        self.body = _rows(model.body_label)
        self.shape = _rows(model.shape_label)
        self.joint = _rows(model.joint_label)
        self.body_world = model.body_world.numpy()
        self.shape_body = model.shape_body.numpy()
        self.shapes_of = defaultdict(list)
        for s, b in enumerate(self.shape_body):
            if b >= 0:
                self.shapes_of[int(b)].append(s)
        self.tree = JointTree(model)
        self.ancestors = _ancestors(set(model.body_label), self_too=False)
        static = {label for label, b in zip(model.shape_label, self.shape_body, strict=True) if b < 0}
        static |= {label for label, b in zip(model.site_label, model.site_body.numpy(), strict=True) if b < 0}
        self.static_places = _ancestors(static, self_too=True)
        """The static colliders' and sites' prims and their ancestors: a move of one moves what the import places
        in the world (only an import places it anew)."""
        self.materials = None  # shape label -> its material's path (see shape_materials)
        self._collider_prims = None  # (sorted collider prim paths, their shape labels): see colliders_under

    def rows(self, kind: str, label: str, first: bool) -> np.ndarray:
        """The rows of the elements of ``kind`` labelled ``label``; ``first``: world 0's only."""
        rows = getattr(self, kind).get(label, _NONE)
        if first and len(rows):
            world = self.body_world if kind == "body" else None
            rows = rows[:1] if world is None else rows[world[rows] == world[rows[0]]]
        return rows

    def shape_materials(self, stage) -> dict:
        """Shape label -> the path of the material bound to its prim (read once, then kept by :meth:`rebound`)."""
        if self.materials is None:
            self.materials = bound_materials(stage, self.model.shape_label)
        return self.materials

    def rebound(self, stage, labels) -> None:
        """The bindings of the colliders ``labels`` (shape labels) changed: their materials are read again."""
        if self.materials is not None and labels:
            self.materials.update(bound_materials(stage, labels))

    def colliders_under(self, path: str) -> list:
        """The shape labels of the colliders at prim ``path`` or below it (an instancer's: ``<path>[i]/...``)."""
        if self._collider_prims is None:
            by_prim = defaultdict(list)
            for label in self.shape:
                by_prim[collider_prim(label)].append(label)
            self._collider_prims = (sorted(by_prim), by_prim)
        prims, by_prim = self._collider_prims
        out = []
        for i in range(bisect.bisect_left(prims, path), len(prims)):  # (the paths that start with it: in a row)
            prim = prims[i]
            if not prim.startswith(path):
                break
            if len(prim) == len(path) or prim[len(path)] in "/[" or path.endswith("/"):
                out.extend(by_prim[prim])
        return out


_NONE = np.zeros(0, dtype=np.int64)


def _ancestors(labels, self_too: bool) -> set:
    """The prim paths above the prims ``labels`` (and theirs, with ``self_too``)."""
    out = set()
    for label in labels:
        label = label.partition("[")[0]  # (an instance's: its PointInstancer)
        path = Sdf.Path(label) if Sdf.Path.IsValidPathString(label) else None
        if path is not None and self_too:
            out.add(str(path.GetPrimPath()))
        while path is not None and path != Sdf.Path.absoluteRootPath and str(path.GetParentPath()) not in out:
            path = path.GetParentPath()
            out.add(str(path))
    return out


def _rows(labels) -> dict:
    out = defaultdict(list)
    for i, label in enumerate(labels):
        out[label].append(i)
    return {k: np.array(v, dtype=np.int64) for k, v in out.items()}


class Planner:
    """Plans one batch of edits (see the module) of a Simulation ``sim`` (its model, stage, output layer, time)."""

    def __init__(self, sim, index: ModelIndex, first_world: bool = False):
        self.sim, self.index, self.first = sim, index, first_world
        self.model, self.stage = sim.model, sim.stage
        self.read = LiveValues(sim.imported, sim.options.order or DIALECTS)
        self.plan = Plan()
        self._arrays = {}
        self._rebound = set()  # prim paths whose colliders (at or below them) are bound anew
        self._rebound_all = False  # a collection changed: every collider's binding is read again

    def array(self, name: str) -> np.ndarray:
        """The model's values of ``name`` (numpy; a ``mujoco.<name>`` array of the MuJoCo namespace)."""
        hit = self._arrays.get(name)
        if hit is None:
            owner, key = (self.model.mujoco, name[7:]) if name.startswith("mujoco.") else (self.model, name)
            value = getattr(owner, key, None)
            hit = self._arrays[name] = (
                None if value is None else np.asarray(value.numpy() if hasattr(value, "numpy") else value)
            )
        return hit

    def _set_if_changed(self, kind: str, name: str, rows, value) -> None:
        old = self.array(name)
        if old is None:
            raise NotInPlace(f"the model has no {name} values")
        value = np.asarray(value, dtype=old.dtype) if old.dtype != object else value
        rows = np.atleast_1d(rows)
        current = old[rows]
        if old.dtype.kind in "fc":
            same = np.allclose(current, np.broadcast_to(value, current.shape), equal_nan=True, **_TOLERANCE)
        else:
            same = np.array_equal(current, np.broadcast_to(value, current.shape))
        if not same:
            self.plan.set(kind, name, rows, value)
        elif name in self.plan.values:  # (read again in this batch: the latest reading holds)
            planned = self.plan.values[name]
            for r in rows:
                planned.pop(int(r), None)

    # ------------------------------------------------------------------ planning
    def add(self, edits) -> Plan:
        """Plan ``edits`` (:class:`~newton_usd.sync.live_edits.Edits`); raises NotInPlace where they need the import."""
        by_prim = defaultdict(set)
        resynced = {path for path in edits.resynced if not path.IsPropertyPath()}
        for path in resynced:
            self._resynced(path, edits.prim_fields.get(path) or {"?"})
        for path in edits.changed | edits.resynced:
            if not path.IsPropertyPath():
                fields = edits.prim_fields.get(path, {"?"})
                if path not in resynced and fields - _PRIM_FIELDS_KEPT:
                    raise NotInPlace(f"{path}'s {', '.join(sorted(fields - _PRIM_FIELDS_KEPT))} changed")
                continue
            by_prim[str(path.GetPrimPath())].add(path.name)
        for prim_path, names in by_prim.items():
            self._prim(prim_path, names)
        self._rebind()
        return self.plan

    def _resynced(self, path: Sdf.Path, fields: set) -> None:
        """A prim defined, or its schemas changed (USD recomposes it): in place where nothing the model simulates
        comes or goes: a prim that is no physics body, collider or joint (a Material, a Shader, a Scope; a material's
        bound colliders read it), or MaterialBindingAPI applied to (or removed from) the model's prims or their
        ancestors (their colliders' bindings read again); else NotInPlace."""
        where, prim = str(path), self.stage.GetPrimAtPath(path)
        if path == Sdf.Path.absoluteRootPath or not _present(prim) or fields - _PRIM_FIELDS_KEPT - _PRIM_FIELDS_SCHEMAS:
            raise NotInPlace(f"{path} was added, removed or recomposed")
        index = self.index
        if any(where in labels for labels in (index.body, index.shape, index.joint, index.ancestors,
                                               index.static_places)):  # fmt: skip
            if "typeName" in fields:
                raise NotInPlace(f"{path} was retyped")
            if "apiSchemas" in fields:
                self._schemas_changed(where, prim)
            return
        if self._other_scene(where):
            return
        for p in Usd.PrimRange(prim, Usd.TraverseInstanceProxies()):
            if _simulated(p):
                raise NotInPlace(f"{p.GetPath()} may be simulated now (a physics type or schema)")
            if p.IsA(UsdShade.Material):  # (colliders bound to its path before it was defined, or before it was
                self._material(str(p.GetPath()), {"physics:density"})  # a physics material, read it now)

    def _schemas_changed(self, path: str, prim) -> None:
        """Schemas applied to or removed from the model's prim ``path`` (or an ancestor of its prims): in place where
        only MaterialBindingAPI came or went since the import (it changes no value by itself; the bindings of the
        colliders below are read again, as a binding the API now makes count), else NotInPlace."""
        resolver = self.sim.imported.resolver
        then = resolver.schemas_read(path) if resolver is not None else None
        now = (str(prim.GetTypeName()), *prim.GetAppliedSchemas())
        if then is None:  # (a prim the import read no schema of: an ancestor)
            if _simulated(prim) or path in set(getattr(self.model, "articulation_label", ())):
                raise NotInPlace(f"{path}: its schemas changed")
        elif set(then) - {"", _BINDING_API} != set(now) - {"", _BINDING_API}:
            changed = sorted((set(then) ^ set(now)) - {"", _BINDING_API})
            raise NotInPlace(f"{path}: {', '.join(changed)} applied or removed")
        self._rebound.add(path)

    def _prim(self, path: str, names: set) -> None:
        prim = self.stage.GetPrimAtPath(path)
        if not prim:
            raise NotInPlace(f"{path} is gone")
        bindings = {n for n in names if n.startswith(_BINDING)}
        collections = set() if prim.IsA(UsdPhysics.CollisionGroup) else {n for n in names if n.startswith(_COLLECTION)}
        if bindings or collections:  # (read at the end of the batch: once per collider)
            if bindings:
                self._rebound.add(path)
            self._rebound_all |= bool(collections)
            self.plan.applied.update((path, n) for n in bindings | collections)
            names = names - bindings - collections
            if not names:
                return
        index = self.index
        xform = {n for n in names if xform_edit(Sdf.Path(path).AppendProperty(n))}
        if path == self.sim.scene_path:
            if not names <= set(GRAVITY_ATTRIBUTES):
                raise NotInPlace(f"{path}: scene settings other than gravity changed")
            self._gravity(prim)
        elif path in index.body:
            self._body(path, prim, names, xform)
        elif path in index.joint:
            if names - xform:
                self._joint(path)
        elif path in index.shape:
            self._collider(path, names - xform, xform)
        elif xform and xform == names and placed_particles(self.sim.physics.model, path):
            self.plan.particle_moves.add(path)  # (a cloth, soft volume or grains moved: their points teleported)
        elif _deformable_edit(self.sim.physics.model, prim):
            why = (
                "live edits of deformable bodies (cloth, soft volumes, cables) and their materials are not taken yet "
                "(but a move of a cloth's or soft volume's prim)"
            )
            self.plan.refused.extend(((path, n), f"{path}.{n}: {why}") for n in sorted(names))
        elif prim.HasAPI(UsdPhysics.MaterialAPI):
            self._material(path, names)
        elif xform and path in index.static_places:
            raise NotInPlace(f"{path} moved static colliders")
        elif xform and xform == names and path in index.ancestors:
            self._ancestor(path, prim)
        elif xform == names or not _physics_prim(prim) or self._other_scene(path):
            return  # (a camera moved, a look changed, another scene's prim: nothing this model simulates)
        else:
            raise NotInPlace(f"{path}: {', '.join(sorted(names))} changed")
        self.plan.applied.update((path, n) for n in names)

    def _other_scene(self, path: str) -> bool:
        """Whether ``path`` is a body or joint (or on one) of another PhysicsScene than this model's."""
        scenes = self.sim.imported.scenes
        if scenes is None:
            return False
        owner = scenes.scene_of(path)
        return owner is not None and owner != self.sim.scene_path

    def _refuse(self, error: UsdInputError, key) -> None:
        self.plan.refused.append((key, str(error)))

    # ------------------------------------------------------------------ gravity
    def _gravity(self, prim) -> None:
        enabled = self.sim.imported.scene.get("gravity_enabled")
        if enabled is None or not enabled.value:
            raise NotInPlace("gravity is off in the scene: an edit of it goes through the import")
        scene = UsdPhysics.Scene(prim)
        direction, magnitude = scene.GetGravityDirectionAttr().Get(), scene.GetGravityMagnitudeAttr().Get()
        if direction is None or magnitude is None:
            raise NotInPlace("the gravity is not authored")
        if not (all(math.isfinite(c) for c in direction) and (math.isfinite(magnitude) or magnitude < 0)):
            key = (str(prim.GetPath()), "physics:gravityMagnitude")
            self._refuse(UsdInputError(f"gravity {tuple(direction)} x {magnitude} is not finite",
                                       file=self.sim.source_file, prim=key[0], attribute=key[1]), key)  # fmt: skip
            return
        self.plan.gravity = scene_gravity(direction, magnitude, self.sim.imported.frame)

    # ------------------------------------------------------------------ bodies
    def _body(self, path, prim, names, xform) -> None:
        rows = self.index.rows("body", path, self.first)
        rest = names - xform
        if xform:
            self._pose(path, prim, rows, xform)
        if rest & VELOCITY_ATTRIBUTES:
            self._velocity(path, rows)
        if rest & MASS_ATTRIBUTES:
            self._mass(path, rows)
        if rest & SWITCH_ATTRIBUTES:
            self._switch(path, rows)
        rest -= VELOCITY_ATTRIBUTES | MASS_ATTRIBUTES | SWITCH_ATTRIBUTES
        if rest and path in self.index.shape:
            self._collider(path, rest, set())
        elif rest:
            raise NotInPlace(f"{path}: {', '.join(sorted(rest))} changed")

    def _pose(self, path, prim, rows, names) -> None:
        """Where the user put body ``path``: its rows go there (see :mod:`.teleport`)."""
        time = Usd.TimeCode(self.sim.time_code)
        try:
            world = user_world_transform(prim, time, self.sim.output_layer, bool(names & _PHYSICS_OPS))
            pose = self._sim_pose(world, path, sorted(names)[0])
        except UsdInputError as e:
            self._refuse(e, (path, e.attribute))
            return
        kinematic = self.array("body_kinematic")
        for r in rows:  # (a kinematic body follows its prim's transform, step by step: placed there, not teleported)
            (self.plan.placed if kinematic[r] else self.plan.poses)[int(r)] = pose

    def _sim_pose(self, world: Gf.Matrix4d, path: str, attribute: str) -> tuple:
        """A world transform in stage units and axes as a pose in SI; a transform of no finite, invertible pose is
        refused (UsdInputError)."""
        m = np.array(world, dtype=np.float64)
        if not np.isfinite(m).all():
            raise UsdInputError("the prim's transform is not finite (NaN or infinity): a body needs a finite pose",
                                file=self.sim.source_file, prim=path, attribute=attribute)  # fmt: skip
        if abs(np.linalg.det(m[:3, :3])) < 1e-12:
            raise UsdInputError("the prim's transform has zero scale: it places no body (scale every axis by > 0)",
                                file=self.sim.source_file, prim=path, attribute=attribute)  # fmt: skip
        xf = Gf.Transform(world)
        pos = np.array(xf.GetTranslation(), dtype=np.float64)
        return self.sim.imported.frame.world_pose_to_sim(pos, gf_to_xyzw(Gf.Quatd(xf.GetRotation().GetQuat())))

    def _ancestor(self, path, prim) -> None:
        """An ancestor of bodies moved: every body under it goes where the stage now shows it."""
        cache = UsdGeom.XformCache(Usd.TimeCode(self.sim.time_code))
        prefix = path.rstrip("/") + "/"
        for label, rows in self.index.body.items():
            if not label.startswith(prefix):
                continue
            body_prim = self.stage.GetPrimAtPath(label)
            if not body_prim:
                continue
            try:
                pose = self._sim_pose(cache.GetLocalToWorldTransform(body_prim), path, "xformOp")
            except UsdInputError as e:
                self._refuse(e, (path, "xformOp"))
                return
            for r in rows if not self.first else self.index.rows("body", label, True):
                self.plan.poses[int(r)] = pose
        self.plan.moved_ancestors = True

    def _velocity(self, path, rows) -> None:
        try:
            body = self.read.body(path)
        except UsdInputError as e:
            self._refuse(e, (path, "physics:velocity"))
            return
        if bool(body.body_kinematic[0]) != bool(self.array("body_kinematic")[rows[0]]):
            raise NotInPlace(f"{path} became kinematic or dynamic")
        for r in rows:
            self.plan.velocities[int(r)] = np.asarray(body.body_qd[0], dtype=np.float64)

    def _switch(self, path, rows) -> None:
        """Body ``path`` made kinematic or dynamic, disabled or enabled: held where it is (a kinematic body, moved by
        its prim; a disabled one, whose colliders UsdPhysics makes static, likewise), or let go. In place where it is a
        free body (one free joint from the world: the flag flips, no joint changes), else through the import."""
        enabled, kinematic = self.read.body_switches(path)
        held = kinematic or not enabled
        tree, now = self.index.tree, self.array("body_kinematic")
        for r in rows:
            joints = tree.joints_of.get(int(r), [])
            free = len(joints) == 1 and tree.type[joints[0]] == JointType.FREE and tree.parent[joints[0]] < 0
            if bool(now[r]) != held and not free:
                raise NotInPlace(f"{path} was made {'kinematic' if held else 'dynamic'}: its joints change")
        self._set_if_changed("body", "body_kinematic", rows, held)

    def _mass(self, path, rows, only_changed: bool = False) -> None:
        """The mass properties of body ``path`` (every row: the same prims), as the import computes them;
        ``only_changed``: written where they differ from the model's (a material's density that may feed them)."""
        if not len(rows):
            return
        shapes = self.index.shapes_of.get(int(rows[0]), [])
        labels = [self.model.shape_label[s] for s in shapes]
        try:
            materials = self.read.collider_materials(labels)
            mass, com, inertia = self.read.mass(path, self.model, shapes, [materials[lab] for lab in labels])
        except UsdInputError as e:
            self._refuse(e, (path, e.attribute or "physics:mass"))
            return
        det = np.linalg.det(inertia)
        put = self._set_if_changed if only_changed else self.plan.set
        put("body", "body_mass", rows, mass)
        put("body", "body_inv_mass", rows, 1.0 / mass if mass > 0 else 0.0)
        put("body", "body_com", rows, com)
        put("body", "body_inertia", rows, inertia)
        put("body", "body_inv_inertia", rows, np.linalg.inv(inertia) if det > 0 else np.zeros((3, 3)))

    # ------------------------------------------------------------------ colliders and materials
    def _collider(self, path, names, xform) -> None:
        if xform:
            raise NotInPlace(f"{path}: a collider moved on its body")
        mass = names & MASS_ATTRIBUTES
        other = names - mass - {_COLLISION_ENABLED}
        if other:
            raise NotInPlace(f"{path}: {', '.join(sorted(other))} changed")
        shapes = np.concatenate([self.index.rows("shape", label, self.first) for label in self._parts(path)])
        if _COLLISION_ENABLED in names:
            self._set_if_changed("shape", "shape_collision_enabled", shapes, self.read.collision_enabled(path))
        bodies = {int(self.index.shape_body[s]) for s in shapes}
        if mass:
            for label in {self.model.body_label[b] for b in bodies if b >= 0}:
                self._mass(label, self.index.rows("body", label, self.first))

    def _parts(self, path) -> list:
        """The shape labels of collider ``path`` (a decomposed mesh: one per convex part, ``<path>:partN``)."""
        labels = [path]
        while f"{path}:part{len(labels)}" in self.index.shape:
            labels.append(f"{path}:part{len(labels)}")
        return labels

    def _material(self, path, names) -> None:
        labels = [lab for lab, m in self.index.shape_materials(self.stage).items() if m == path]
        if not labels:
            return
        shapes = np.concatenate([self.index.rows("shape", lab, self.first) for lab in labels])
        self._friction(shapes, path)
        if "physics:density" in names:
            bodies = {int(self.index.shape_body[s]) for s in shapes}
            for label in {self.model.body_label[b] for b in bodies if b >= 0}:
                self._mass(label, self.index.rows("body", label, self.first), only_changed=True)

    def _rebind(self) -> None:
        """The colliders bound anew in this batch (at or below a prim whose bindings or MaterialBindingAPI changed;
        every collider whose binding differs, where a collection changed) take their materials (see
        :meth:`_rematerial`)."""
        if self._rebound_all:
            labels, old = list(self.index.shape), self.index.materials
            new = self.index.materials = bound_materials(self.stage, labels)
            self._rematerial([label for label in labels if old is None or old.get(label) != new[label]])
            return
        roots = sorted(self._rebound)
        kept = [r for i, r in enumerate(roots) if not any(r.startswith(o.rstrip("/") + "/") for o in roots[:i])]
        self._rematerial(list(dict.fromkeys(lab for root in kept for lab in self.index.colliders_under(root))))

    def _rematerial(self, labels) -> None:
        """The colliders ``labels`` (shape labels) with their materials read again as the import reads their
        bindings: their friction and restitution rows, and their bodies' mass properties where they differ (a
        material's density feeds them where no mass is authored)."""
        if not labels:
            return
        if any("[" in label for label in labels):
            raise NotInPlace("the materials of an instancer's colliders changed")
        self.index.rebound(self.stage, labels)
        by_material = defaultdict(list)
        for label, material in self.read.collider_materials(labels).items():
            by_material[material].append(label)
        bodies = set()
        for material, group in by_material.items():
            shapes = np.concatenate([self.index.rows("shape", label, self.first) for label in group])
            self._friction(shapes, material)
            bodies.update(int(b) for b in self.index.shape_body[shapes] if b >= 0)
        for label in {self.model.body_label[b] for b in bodies}:
            self._mass(label, self.index.rows("body", label, self.first), only_changed=True)

    def _friction(self, shapes, material) -> None:
        values = self.read.material(material)
        for name, value in zip(SHAPE_MATERIAL_VALUES, values, strict=True):
            self._set_if_changed("shape", name, shapes, value)

    # ------------------------------------------------------------------ joints
    def _joint(self, path) -> None:
        """Joint ``path`` added again as the import adds it: its DOF rows in every world it feeds."""
        rows = self.index.rows("joint", path, self.first)
        tree, labels = self.index.tree, self.model.body_label
        j = int(rows[0])
        parent = int(tree.parent[j])
        try:
            new = self.read.joint(path, labels[int(tree.child[j])], labels[parent] if parent >= 0 else None,
                                  lambda label: label in self.index.body)  # fmt: skip
        except UsdInputError as e:
            self._refuse(e, (path, e.attribute or "joint"))
            return
        n = tree.qd_start[j + 1] - tree.qd_start[j]
        if int(new.joint_type[0]) != int(tree.type[j]) or len(new.joint_qd[0]) != n:
            raise NotInPlace(f"{path} imports as another joint now (locked, or its axes changed)")
        for mine, theirs in ((new.joint_X_p[0], tree.X_p[j]), (new.joint_X_c[0], tree.X_c[j])):
            if not np.allclose(np.concatenate(mine), theirs, atol=1e-5):
                raise NotInPlace(f"{path}: its frames changed")
        if n and not np.allclose(np.asarray(new.joint_axis), tree.axis[tree.qd_start[j] : tree.qd_start[j + 1]],
                                 atol=1e-6):  # fmt: skip
            raise NotInPlace(f"{path}: its axis changed")
        dofs = np.concatenate([np.arange(tree.qd_start[r], tree.qd_start[r + 1]) for r in rows])
        for k in range(n):
            at = dofs[k::n]
            for name in DOF_VALUES:
                value = getattr(new, name)[k]
                value = float(np.clip(value, *_BOUNDED[name])) if name in _BOUNDED else value
                self._set_if_changed("dof", name, at, value)
        self._mujoco_dof_values(path, new, dofs, n)

    def _mujoco_dof_values(self, path, new, dofs, n) -> None:
        """The joint's MuJoCo-only DOF values (``mjc:damping``, ...: ``model.mujoco.dof_*``); a value no DOF of the
        model had before makes a new array: the import's."""
        new_values = {name: values for (kind, name), values in new.mujoco_elements.items() if kind == "dof"}
        known = {name for name, kind in getattr(self.model, "mujoco_element_kind", {}).items() if kind == "dof"}
        known |= {name for name in vars(self.model.mujoco) if name.startswith("dof_")}
        for name in set(new_values) - known:
            raise NotInPlace(f"{path}: {name} is authored for the first time")
        for name in known:
            old = self.array("mujoco." + name)
            if old is None or old.shape[0] != self.model.joint_dof_count:
                continue
            values = new_values.get(name, {})
            for k in range(n):
                value = values.get(k, np.full(old.shape[1:], np.nan))
                self._set_if_changed("dof", "mujoco." + name, dofs[k::n], value)


def _present(prim) -> bool:
    """Whether ``prim`` is on the stage as the import traverses it (defined, active, not abstract)."""
    return bool(prim) and prim.IsActive() and prim.IsDefined() and not prim.IsAbstract()


def _simulated(prim) -> bool:
    """Whether the import may simulate something of ``prim``: a physics, MuJoCo or Newton type or applied schema
    other than a material's (a body, a collider, a joint, a scene, an actuator, ...)."""
    if str(prim.GetTypeName()).startswith(_SCHEMA_PREFIXES):
        return True
    return any(s.startswith(_SCHEMA_PREFIXES) and not s.endswith("MaterialAPI") for s in prim.GetAppliedSchemas())


def _physics_prim(prim) -> bool:
    """Whether ``prim`` has a schema that the import may read (a physics, MuJoCo or Newton one)."""
    if str(prim.GetTypeName()).startswith(_SCHEMA_PREFIXES):
        return True
    return any(str(s).startswith(_SCHEMA_PREFIXES) for s in prim.GetAppliedSchemas())


_DEFORMABLE_MATERIALS = {"PhysicsSurfaceDeformableMaterialAPI", "PhysicsVolumeDeformableMaterialAPI",
                         "PhysicsCurvesDeformableMaterialAPI", "NewtonCurvesDeformableMaterialAPI"}  # fmt: skip


def _deformable_edit(model, prim) -> bool:
    """Whether ``prim`` is a simulated deformable's prim or body prim, or a deformable material (not edited live)."""
    path = str(prim.GetPath())
    groups = getattr(model, "cloth", []) + getattr(model, "volumes", []) + getattr(model, "cables", [])
    if any(d.label == path or d.label.startswith(path + "/") and d.label.count("/") == path.count("/") + 1
           for d in groups):  # fmt: skip
        return True
    schemas = prim.GetMetadata("apiSchemas")
    names = {str(n) for n in schemas.ApplyOperations([])} if schemas is not None else set()
    return bool(names & _DEFORMABLE_MATERIALS)
