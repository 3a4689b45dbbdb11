"""Several PhysicsScenes on one stage: which scene simulates each object.

UsdPhysics' ``physics:simulationOwner`` (on rigid bodies and colliders) names the PhysicsScene that
simulates a prim; a prim without one belongs to the default scene, the first PhysicsScene in traversal
order. Scenes are independent: each has its own gravity, time step and solver settings, and bodies of
different scenes never touch. USD's parser reads the objects of one scene when it is given that scene's
owners (:meth:`Scenes.owners`): rigid bodies by their own owner, colliders of a body with their body,
static colliders in every scene they name, joints where both of their bodies are.

This module finds the scenes and which scene each rigid body and joint belongs to, and rejects what
cannot be simulated: an owner that is not a PhysicsScene, a rigid body owned by several scenes, a joint
between bodies of different scenes (USD's parser would drop it silently from every scene); and it imports
a scene's gravity and its runtime and MuJoCo settings (:func:`import_scene`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from pxr import Sdf, UsdPhysics

from ..diagnostics import Diagnostics
from ..errors import UsdInputError
from . import properties as props
from .descriptors import AXIS_VECTORS, DEG, load_descriptors
from .resolver import DIALECTS, Context, Resolved, Resolver
from .stage import StageFrame, open_stage

OWNER = "physics:simulationOwner"
OT = UsdPhysics.ObjectType
JOINT_OBJECT_TYPES = (
    OT.RevoluteJoint,
    OT.PrismaticJoint,
    OT.SphericalJoint,
    OT.FixedJoint,
    OT.D6Joint,
    OT.DistanceJoint,
    OT.CustomJoint,
)
"""Every UsdPhysics joint object type (the importer simulates all but CustomJoint, which it reports)."""
_OWNED_TYPED = ("MjcActuator", "MjcTendon", "NewtonUsdContactPair", "NewtonActuator")
"""Typed prims that belong to the scene of the objects they target (their relationships)."""


def physics_scenes(stage) -> list[str]:
    """The PhysicsScene prims of ``stage`` in traversal order (one traversal, no physics parsing)."""
    return [str(p.GetPath()) for p in stage.Traverse() if p.IsA(UsdPhysics.Scene)]


@dataclass
class Scenes:
    """The PhysicsScenes of a stage and what each simulates.

    Attributes:
        paths: the PhysicsScene prim paths in traversal order; the first is the default scene.
        descs: path -> the scene's ``UsdPhysics.SceneDesc``.
        body_scene: rigid body prim path -> the scene that simulates it.
        joint_scene: joint prim path -> the scene of its bodies (the default scene for a joint between
            world frames only).
        gravity: path -> the scene's gravity in simulation units (m/s^2, Z up), where computed
            (:func:`read_scenes`).
    """

    paths: list = field(default_factory=list)
    descs: dict = field(default_factory=dict)
    body_scene: dict = field(default_factory=dict)
    joint_scene: dict = field(default_factory=dict)
    gravity: dict = field(default_factory=dict)

    @property
    def default(self) -> str | None:
        """The default scene: the first PhysicsScene (it also simulates the objects no scene owns)."""
        return self.paths[0] if self.paths else None

    def bodies(self, scene: str) -> list:
        """The rigid bodies ``scene`` simulates, in traversal order."""
        return [b for b, s in self.body_scene.items() if s == scene]

    def simulated(self) -> list:
        """The scenes that simulate at least one rigid body, in traversal order."""
        owning = set(self.body_scene.values())
        return [p for p in self.paths if p in owning]

    def owners(self, scene: str) -> list:
        """The ``simulationOwners`` argument of USD's parser that reads ``scene``'s objects (the default
        scene's also include those without an owner: the empty path)."""
        return [Sdf.Path(scene)] + ([Sdf.Path()] if scene == self.default else [])

    def check(self, scene, file=None) -> str:
        """``scene`` as a PhysicsScene path of this stage, or a UsdInputError naming the valid ones."""
        path = str(scene)
        if path not in self.descs:
            valid = ", ".join(self.paths) or "none: the stage has no PhysicsScene"
            raise UsdInputError(f"scene {path} is not a PhysicsScene of the stage (its scenes: {valid})", file=file)
        return path

    def scene_of(self, path) -> str | None:
        """The scene of the rigid body or joint at ``path`` or of its nearest rigid-body ancestor; None
        for a prim on no rigid body."""
        p = Sdf.Path(str(path))
        if str(p) in self.joint_scene:
            return self.joint_scene[str(p)]
        while p != Sdf.Path.absoluteRootPath and not p.isEmpty:
            scene = self.body_scene.get(str(p))
            if scene is not None:
                return scene
            p = p.GetParentPath()
        return None


def any_owner(descs) -> bool:
    """Whether a rigid body or collider of the parsed ``descs`` authors a ``physics:simulationOwner``."""
    for obj_type, entries in descs.items():
        if obj_type == OT.RigidBody or obj_type.name.endswith("Shape"):
            for _, d in entries:
                if d.simulationOwners:
                    return True
    return False


def analyse(stage, descs, file, diag) -> Scenes:
    """The scenes of a stage and the scene of every rigid body and joint, from USD's parse of the whole
    stage (``descs``: object type -> [(path, desc)]).

    Raises:
        UsdInputError: an owner that is not a PhysicsScene, a rigid body owned by several scenes, or a joint
            between bodies of different scenes (naming the prim and ``physics:simulationOwner``).
    """
    out = Scenes()
    for path, d in descs.get(OT.Scene, []):
        out.paths.append(str(path))
        out.descs[str(path)] = d

    def owners_of(path, targets) -> list:
        targets = [str(t) for t in targets]
        for t in targets:
            if t not in out.descs:
                prim = stage.GetPrimAtPath(t)
                what = f"a {prim.GetTypeName() or 'typeless'} prim" if prim else "no prim"
                valid = ", ".join(out.paths) or "the stage has none"
                raise UsdInputError(
                    f"targets {t} ({what}), not a PhysicsScene: a simulation owner is a PhysicsScene "
                    f"(the stage's: {valid}; no target: the default scene)",
                    file=file,
                    prim=str(path),
                    attribute=OWNER,
                )
        return targets

    for path, d in descs.get(OT.RigidBody, []):
        owners = owners_of(path, d.simulationOwners)
        if len(owners) > 1:
            raise UsdInputError(
                f"a rigid body is simulated by one PhysicsScene; it targets {len(owners)} ({', '.join(owners)})",
                file=file,
                prim=str(path),
                attribute=OWNER,
            )
        out.body_scene[str(path)] = owners[0] if owners else out.default
    for obj_type, entries in descs.items():
        if not obj_type.name.endswith("Shape"):
            continue
        for path, d in entries:
            owners = owners_of(path, d.simulationOwners)
            body = str(d.rigidBody) if d.rigidBody and not d.rigidBody.isEmpty else None
            if owners and body in out.body_scene and out.body_scene[body] not in owners:
                diag.add(f"collider whose {OWNER} differs from its rigid body's: simulated in the body's scene", path)
    for obj_type in JOINT_OBJECT_TYPES:
        for path, d in descs.get(obj_type, []):
            out.joint_scene[str(path)] = _joint_scene(stage, path, d, out, file, diag)
    return out


def _joint_scene(stage, path, d, scenes, file, diag) -> str | None:
    ends = [str(b) for b in (d.body0, d.body1) if b and not b.isEmpty]
    owned = [(b, scenes.body_scene[b]) for b in ends if b in scenes.body_scene]
    if len({s for _, s in owned}) > 1:
        (b0, s0), (b1, s1) = owned
        raise UsdInputError(
            f"joins {b0} (simulated by {s0}) and {b1} (simulated by {s1}): a joint connects bodies of one "
            f"PhysicsScene (give both bodies the same {OWNER})",
            file=file,
            prim=str(path),
            attribute=OWNER,
        )
    scene = owned[0][1] if owned else scenes.default
    rel = stage.GetPrimAtPath(path).GetRelationship(OWNER)
    targets = rel.GetTargets() if rel else []
    if targets:
        for t in targets:
            if str(t) not in scenes.descs:
                raise UsdInputError(
                    f"targets {t}, not a PhysicsScene (the stage's: {', '.join(scenes.paths) or 'none'})",
                    file=file,
                    prim=str(path),
                    attribute=OWNER,
                )
        if scene not in [str(t) for t in targets]:
            diag.add(f"joint whose {OWNER} differs from its bodies' scene: simulated in its bodies' scene", path)
    return scene


def keep_scene_prims(typed, scenes: Scenes, scene: str) -> None:
    """Keep in ``typed`` (importer scan: type name -> prims) the prims ``scene`` simulates: sites and
    visual geoms by their rigid body, actuators, tendons and contact pairs by the objects they target,
    keyframes (whole-model state vectors) in the default scene; prims on no body, and those that target
    nothing simulated, in the default scene."""
    default = scenes.default

    def by_body(prim):
        return (scenes.scene_of(prim.GetPath()) or default) == scene

    def by_targets(prim):
        found = set()
        for rel in prim.GetRelationships():
            for t in rel.GetTargets():
                s = scenes.scene_of(t)
                if s is not None:
                    found.add(s)
        return (found.pop() if len(found) == 1 else default) == scene

    for key in ("sites", "visuals"):
        typed[key] = [p for p in typed.get(key, []) if by_body(p)]
    for key in _OWNED_TYPED:
        typed[key] = [p for p in typed.get(key, []) if by_targets(p)]
    if scene != default:
        typed["MjcKeyframe"] = []


def import_scene(builder, stage, scenes, frame, result):
    """Gravity and the scene's runtime and MuJoCo settings; returns the Context for the other prims."""
    ctx = Context(meters_per_unit=frame.meters_per_unit, kilograms_per_unit=frame.kilograms_per_unit)
    if not scenes:
        builder.gravity = np.array([0.0, 0.0, -9.81])
        return ctx
    path, d = scenes[0]  # (several: see add_usd's scene)
    builder.gravity = _gravity(d, frame)
    prim = stage.GetPrimAtPath(path)
    resolver = result.resolver
    for prop in (
        props.SCENE_SOLVER,
        props.SCENE_BACKEND,
        props.SCENE_SUBSTEPS,
        props.SCENE_FPS,
        props.SCENE_COLLIDE_ON_SUBSTEPS,
        props.SCENE_TIMESTEP,
        props.SCENE_GRAVITY_ENABLED,
    ):
        result.scene[prop.name] = resolver.resolve(prim, prop, ctx)
    if not result.scene[props.SCENE_GRAVITY_ENABLED.name].value:
        builder.gravity = np.zeros(3)
    result.scene.update(resolver.resolve_all(prim, props.SCENE_NEWTON_SOLVER, ctx))
    solver = result.scene[props.SCENE_SOLVER.name]
    chosen = _newton_solver_api(prim, result) if solver.kind != "authored" else None
    if chosen is not None:  # Newton's stage-driven runtime: NewtonSolver<Name>API applied to the scene
        api, name = chosen
        result.scene[props.SCENE_SOLVER.name] = resolver.record(
            prim, props.SCENE_SOLVER.name, Resolved(name, "fallback", "newton:usd:solver", schema=api)
        )
    elif solver.kind != "authored":
        # A scene made for one engine (its settings' API applied, one engine's only) runs that engine unless it
        # names another solver.
        applied = resolver.view(prim).applied
        made_for = [(api, engine) for api, engine in ENGINE_SCENE_APIS.items() if api in applied]
        if len(made_for) == 1:
            api, engine = made_for[0]
            result.scene[props.SCENE_SOLVER.name] = resolver.record(
                prim, props.SCENE_SOLVER.name, Resolved(engine, "fallback", "newton:usd:solver", schema=api)
            )
    angle = resolver.resolve(prim, props.SCENE_COMPILER_ANGLE, ctx).value
    ctx.angle_unit = DEG if angle == "degree" else 1.0
    option, flag = {}, {}
    for out, table in ((option, props.SCENE_OPTIONS), (flag, props.SCENE_FLAGS)):
        resolved = resolver.resolve_all(prim, table.values(), ctx)
        for name, prop in table.items():
            if resolved[prop.name].kind != "default":
                out[name] = resolved[prop.name].value
    builder.mujoco["option"] = option
    builder.mujoco["flag"] = flag
    return ctx


ENGINE_SCENE_APIS = {
    props.XPBD_SCENE_API: "xpbd",
    props.KAMINO_SCENE_API: "kamino",
    "NewtonMPMSceneAPI": "implicit_mpm",
    "NewtonVbdSceneAPI": "vbd",
}
"""A PhysicsScene API holding one engine's settings -> that engine, which a scene applying it (and no other of these)
runs where it names no solver."""


NEWTON_SOLVER_APIS = {"xpbd": "xpbd", "mujoco": "mujoco", "featherstone": "featherstone",
                      "semiimplicit": "semi_implicit", "vbd": "vbd"}  # fmt: skip
"""Newton's ``NewtonSolver<Name>API`` (its stage-driven runtime's solver choice, on the PhysicsScene; <Name> read
without regard to case) -> our solver (None: none of ours simulates what it names)."""


def _newton_solver_api(prim, result):
    """``(schema name, solver)`` of the ``NewtonSolver<Name>API`` applied to the scene ``prim``, or None. Read
    from the prim's ``apiSchemas`` (the schemas are not registered here, so USD does not list them as applied)."""
    listed = prim.GetMetadata("apiSchemas")
    names = listed.ApplyOperations([]) if listed is not None else []
    for api in names:
        if api.startswith("NewtonSolver") and api.endswith("API"):
            key = api[len("NewtonSolver") : -len("API")].lower()
            if key in NEWTON_SOLVER_APIS and NEWTON_SOLVER_APIS[key] is not None:
                return api, NEWTON_SOLVER_APIS[key]
            why = f"{api}: no such solver here: the scene's solver is chosen as if it were not applied"
            result.diagnostics.add(why, str(prim.GetPath()))
    return None


def _gravity(d, frame) -> np.ndarray:
    """A SceneDesc's gravity in simulation units (unauthored: Earth gravity along -upAxis)."""
    return scene_gravity(d.gravityDirection, d.gravityMagnitude, frame)


def scene_gravity(direction, magnitude, frame) -> np.ndarray:
    """A PhysicsScene's gravity in simulation units from its ``physics:gravityDirection`` and
    ``physics:gravityMagnitude`` (stage units; a zero direction: -upAxis; a non-finite magnitude, the
    schema's fallback -inf: Earth gravity)."""
    direction = np.array(direction, dtype=np.float64)
    magnitude = float(magnitude)
    if not np.isfinite(magnitude):
        magnitude = 9.81 / frame.meters_per_unit
    n = np.linalg.norm(direction)
    direction = direction / n if n > 0 else -np.array(AXIS_VECTORS[frame.up_axis])
    return frame.world_vector_to_sim(direction * magnitude)


def read_scenes(source, order=DIALECTS) -> Scenes:
    """The PhysicsScenes of ``source`` (a path or ``Usd.Stage``), which scene simulates each rigid body and
    joint, and each scene's gravity (simulation units; zero where gravity is disabled).

    Raises:
        UsdInputError: as :func:`add_usd` for owners and joints across scenes.
    """
    stage, file = open_stage(source)
    frame = StageFrame.of(stage)
    diag = Diagnostics()
    scenes = analyse(stage, load_descriptors(stage), file, diag)
    resolver = Resolver(order=tuple(order), file=file)
    ctx = Context(meters_per_unit=frame.meters_per_unit, kilograms_per_unit=frame.kilograms_per_unit)
    for path, d in scenes.descs.items():
        enabled = resolver.resolve(stage.GetPrimAtPath(path), props.SCENE_GRAVITY_ENABLED, ctx).value
        scenes.gravity[path] = _gravity(d, frame) if enabled else np.zeros(3)
    return scenes


def scenes_to_import(stage, order=DIALECTS) -> list:
    """The ``scene`` arguments of :func:`add_usd` that import every PhysicsScene of ``stage`` that simulates
    rigid bodies or grains, each into a builder of its own: with several PhysicsScenes, those that simulate bodies
    (:meth:`Scenes.simulated`, the first the default scene when it simulates any) or grains
    (:func:`~newton_usd.usd.granular.grain_scenes`) or deformable bodies
    (:func:`~newton_usd.usd.deformables.deformable_scenes`); else, or when none
    simulates a body, ``[None]`` (add_usd's default: the stage's scene). Costs one traversal, and a parse
    of the stage's physics when it has several PhysicsScenes.

    Raises:
        UsdInputError: as :func:`read_scenes`.
    """
    paths = physics_scenes(stage)
    if len(paths) < 2:
        return [None]
    from .deformables import deformable_scenes  # noqa: PLC0415  (as granular)
    from .granular import grain_scenes  # noqa: PLC0415  (granular reads scenes' paths: imported when needed)

    simulated = set(read_scenes(stage, order).simulated()) | grain_scenes(stage, paths[0])
    simulated |= deformable_scenes(stage, paths[0])
    return [p for p in paths if p in simulated] or [None]


def choose_scene(stage, scene, others, result):
    """USD's parse of the objects :func:`~newton_usd.usd.importer.add_usd` imports: with several PhysicsScenes,
    ``scene`` given or a ``physics:simulationOwner`` authored, only those of the chosen scene (``scene``, else
    the default scene, with a warning naming the others). Sets ``result.scene_path`` (and ``result.scenes``
    where the scenes were analysed). ``others``: subtrees to leave out (the environments after the first).
    Returns ``(descriptors, owners)``, owners None where every object is imported."""
    file, diag = result.file, result.diagnostics
    descs = load_descriptors(stage, exclude=others)
    scene_descs = descs.get(OT.Scene, [])
    owners = None
    if scene is not None or len(scene_descs) > 1 or any_owner(descs):
        scenes = result.scenes = analyse(stage, descs, file, diag)
        chosen = scenes.check(scene, file) if scene is not None else scenes.default
        if scene is None and len(scenes.paths) > 1:
            for other in scenes.paths[1:]:
                diag.add(
                    f"several PhysicsScenes: only the default scene {chosen} (and the objects no scene owns) is "
                    "imported, not these; import one with add_usd(stage, scene=PATH) into a builder of its own "
                    "(Simulation.open and usdsim simulate every scene)",
                    other,
                )
        if chosen is not None and (scene is not None or len(scenes.paths) > 1):
            owners = scenes.owners(chosen)
            descs = load_descriptors(stage, exclude=others, owners=owners)
        result.scene_path = chosen
    elif scene_descs:
        result.scene_path = str(scene_descs[0][0])
    return descs, owners
