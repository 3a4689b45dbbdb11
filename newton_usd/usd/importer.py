"""UsdPhysics stage to ModelBuilder.

USD's own parser (``UsdPhysics.LoadUsdPhysicsFromRange``) reads the standard schemas into
descriptors (bodies, shapes with their poses relative to their body, joints with local frames);
this module turns those into builder calls, converting units and the up axis once, computing mass
properties with the UsdPhysics precedence, and orienting joints into a tree rooted at the world.
"""

from __future__ import annotations

import functools
import gc
import math
import re
from collections import defaultdict, deque
from dataclasses import dataclass, field

import numpy as np
from pxr import Gf, Sdf, Tf, Usd, UsdGeom, UsdPhysics

from ..core import inertia as mass_props
from ..core.builder import JointAxis, Mesh, ModelBuilder
from ..core.quat import (
    gf_to_xyzw,
    quat_multiply,
    quat_rotate,
    quat_to_matrix,
    transform_inverse,
    transform_multiply,
)
from ..core.types import MESH_INERTIA_MODES, DriveMode, GeoType, JointType
from ..diagnostics import Diagnostics
from ..errors import UsdInputError
from . import properties as props
from .envs import Environments, check_identical, check_references, find_environments
from .equalities import import_joint_equalities, import_tendon_equalities
from .gprims import (
    AXIS_TO_Z,
    HEIGHTFIELD_API,
    VISUAL_API,
    cone_mesh,
    import_visual_geoms,
    read_heightfield,
    read_mesh,
)
from .keyframes import import_keyframes
from .resolver import DIALECTS, Context, Resolved, Resolver
from .scenes import JOINT_OBJECT_TYPES, Scenes, analyse, any_owner, keep_scene_prims, physics_scenes
from .stage import StageFrame, open_stage

DEFAULT_DENSITY = 1000.0  # kg/m^3, the UsdPhysics specification's default
DEG = math.pi / 180.0

OT = UsdPhysics.ObjectType
_SHAPE_TYPES = (
    OT.CubeShape,
    OT.SphereShape,
    OT.CapsuleShape,
    OT.Capsule1Shape,
    OT.CylinderShape,
    OT.Cylinder1Shape,
    OT.ConeShape,
    OT.PlaneShape,
    OT.MeshShape,
    OT.SpherePointsShape,
    OT.CustomShape,
)
_JOINT_TYPES = {
    OT.RevoluteJoint: JointType.REVOLUTE,
    OT.PrismaticJoint: JointType.PRISMATIC,
    OT.SphericalJoint: JointType.BALL,
    OT.FixedJoint: JointType.FIXED,
    OT.D6Joint: JointType.D6,
}
_UNSUPPORTED_JOINTS = (OT.CustomJoint,)

_AXIS_VEC = {"X": (1.0, 0.0, 0.0), "Y": (0.0, 1.0, 0.0), "Z": (0.0, 0.0, 1.0)}
# (axis token, reversed joint) -> the joint's axis as floats (reversed: negated, zeros included: -0.0)
_AXIS_TUPLES = {(k, rev): tuple((-np.array(v) if rev else np.array(v)).tolist()) for k, v in _AXIS_VEC.items()
                for rev in (False, True)}  # fmt: skip


@dataclass
class UsdImport:
    """What :func:`add_usd` imported, for the stage sync and for messages.

    Attributes:
        stage: the opened stage. file: its root layer path.
        frame: units and up axis of the stage.
        body_index: prim path -> builder body index (for the bodies added by this import).
        shape_index, joint_index, distance_index: prim path -> builder index (distance joints are
            distance constraints).
        diagnostics: what was ignored or approximated, per kind.
        resolver: the :class:`Resolver` used, with the provenance of every resolved property.
        scene: the scene's resolved runtime settings (name -> Resolved): timestep, solver,
            mujoco_backend, substeps, frames_per_second, collide_on_substeps.
        environments: with ``env_root``, the :class:`~newton_usd.usd.envs.Environments` imported as
            worlds (their prim paths in world order and placements); else None.
        scene_path: the PhysicsScene whose settings were imported (None: the stage has none).
        scenes: the stage's :class:`~newton_usd.usd.scenes.Scenes` (which scene simulates each body),
            when the stage has several scenes, ``scene`` was given or an owner is authored; else None.
    """

    stage: Usd.Stage
    file: str
    frame: StageFrame
    body_index: dict = field(default_factory=dict)
    shape_index: dict = field(default_factory=dict)
    joint_index: dict = field(default_factory=dict)
    distance_index: dict = field(default_factory=dict)
    diagnostics: Diagnostics = field(default_factory=Diagnostics)
    resolver: Resolver | None = None
    scene: dict = field(default_factory=dict)
    environments: Environments | None = None
    scene_path: str | None = None
    scenes: Scenes | None = None


_LOAD = getattr(UsdPhysics, "UsdPhysicsLoadStageFromPrimRange", None) or UsdPhysics.LoadUsdPhysicsFromRange
_TOKENS = getattr(UsdPhysics, "UsdPhysicsCustomTokens", None) or UsdPhysics.CustomUsdPhysicsTokens


def _load_descriptors(stage, roots=("/",), exclude=(), owners=None):
    """USD's parse of ``roots`` (less ``exclude``): object type -> [(path, desc)]; with ``owners`` (scene
    paths, the empty path for "no owner"), only the objects those scenes simulate."""
    try:
        if owners is not None:
            result = _LOAD(stage, list(roots), list(exclude), _TOKENS(), list(owners))
        elif exclude:
            result = _LOAD(stage, list(roots), list(exclude))
        else:
            result = _LOAD(stage, list(roots))
    except Tf.ErrorException as e:  # USD's parser met a value it cannot use (e.g. an xformOp of the wrong type)
        said = re.findall(r"Error in '[^']*' at line \d+ in file [^:]*: '(.*)'", str(e))
        file = stage.GetRootLayer().identifier
        raise UsdInputError(f"USD's UsdPhysics parser: {said[0] if said else str(e).strip()}", file=file) from None
    out = defaultdict(list)
    for obj_type, (paths, descs) in result.items():
        for path, desc in zip(paths, descs, strict=True):
            out[obj_type].append((path, desc))
    return out


def _collector_paused(func):
    """Run ``func`` with Python's cyclic garbage collector paused (restored after, as it was).

    An import allocates hundreds of thousands of container objects (USD's descriptors and paths, builder
    rows) that are not garbage: the collector's passes over them found next to nothing and took about a tenth
    of a 1,024-robot import. Reference counting frees memory as usual; the few cycles an import may leave are
    collected by the next pass after it."""

    @functools.wraps(func)
    def paused(*args, **kwargs):
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return func(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()

    return paused


@_collector_paused
def add_usd(
    builder: ModelBuilder, source, *, order=DIALECTS, env_root: str | None = None, scene: str | None = None
) -> UsdImport:
    """Import the UsdPhysics content of ``source`` (a file path or ``Usd.Stage``) into ``builder``.

    Bodies (PhysicsRigidBodyAPI) become builder bodies labelled by prim path, colliders become shapes,
    revolute, prismatic, spherical and fixed joints become joints; a body that no joint connects to
    the world gets a free joint. Initial joint coordinates follow the authored body poses.
    Properties that several dialects can author (``newton:*``, ``mjc:*``, ``physx*``, ``physics:*``)
    are resolved in ``order``, highest priority first (see :mod:`newton_usd.usd.resolver`).

    ``env_root`` (e.g. ``"/World/envs"``): its child prims are identical environments, one world each
    (see :mod:`newton_usd.usd.envs`). Only the first environment and what lies outside the environments
    are read and built; the builder is then replicated into one world per environment
    (:meth:`ModelBuilder.replicate`), each world placed at its environment prim's transform relative to
    the first's and labelled with its own prim paths. What lies outside the environments (a ground) is in
    every world, where it is. The builder must not be replicated yet; what it already holds is in every
    world too.

    ``scene`` (a PhysicsScene prim path): import that scene only, its gravity and settings and the objects
    it simulates (``physics:simulationOwner``; the default scene, the first PhysicsScene, also simulates
    the objects no scene owns). Scenes are independent models: to simulate several, import each into a
    builder of its own (:class:`~newton_usd.sim.Simulation` does). None: the stage's scene; when it has
    several, the default scene, with a warning that names the others.

    Raises:
        UsdInputError: the file cannot be read, or it has nothing to simulate; with ``env_root``, an
            environment that differs from the first (naming the prim and attribute), or a prim that
            ties environments together; ``scene`` that is not a PhysicsScene; a ``physics:simulationOwner``
            that is not a PhysicsScene, or a joint between bodies of different scenes.
    """
    stage, file = open_stage(source)
    frame = StageFrame.of(stage)
    labels_before = set(builder.labels())
    result = UsdImport(stage=stage, file=file, frame=frame, resolver=Resolver(order=tuple(order), file=file))
    diag = result.diagnostics
    others = ()
    if env_root is not None:
        if builder.num_worlds != 1:
            raise ValueError("env_root replicates the builder into worlds: it was already replicated")
        envs = result.environments = find_environments(stage, env_root, frame, file)
        check_identical(stage, envs, file)
        others = envs.paths[1:]
    descs = _load_descriptors(stage, exclude=others)
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
            descs = _load_descriptors(stage, exclude=others, owners=owners)
        result.scene_path = chosen
    elif scene_descs:
        result.scene_path = str(scene_descs[0][0])
    if builder.source is None:
        builder.source = file
    joint_paths = {p for t in JOINT_OBJECT_TYPES for p, _ in descs.get(t, [])}
    body_paths = {p for p, _ in descs.get(OT.RigidBody, [])}
    types = _MJC_TYPED + ("MjcKeyframe", "PointInstancer")
    order, typed = _scan(stage, joint_paths | body_paths, types, exclude=others, resolver=result.resolver)
    if owners is not None:
        keep_scene_prims(typed, result.scenes, result.scene_path)
    instanced = _instancer_prototypes(stage, typed["PointInstancer"], result, owners)

    bodies = descs.get(OT.RigidBody, [])
    if not bodies and not instanced:
        if owners is not None:
            elsewhere = [p for p in result.scenes.simulated() if p != result.scene_path]
            raise UsdInputError(
                f"no physics to simulate in PhysicsScene {result.scene_path}: it simulates no rigid body"
                + (f" (the stage's bodies are simulated by {', '.join(elsewhere)}: import with scene=PATH)"
                   if elsewhere else ""),
                file=file,
            )  # fmt: skip
        raise UsdInputError(
            "no physics to simulate: no prim has PhysicsRigidBodyAPI applied (author UsdPhysics rigid bodies)",
            file=file,
        )

    ctx = _import_scene(builder, stage, descs.get(OT.Scene, []), frame, result)
    materials = {str(p): d for p, d in descs.get(OT.RigidBodyMaterial, [])}

    # ---- bodies (disabled bodies are not simulated: their colliders become static)
    body_pose = {}
    kinematic = set()
    for path, d in bodies:
        label = str(path)
        pos, rot = frame.world_pose_floats(_floats(d.position), gf_to_xyzw(d.rotation).tolist())
        pos, rot = np.array(pos), np.array(rot)
        body_pose[label] = (pos, rot)
        if not d.rigidBodyEnabled:
            diag.add("rigid body disabled (physics:rigidBodyEnabled = false): its colliders are static", path)
            continue
        is_kinematic = bool(d.kinematicBody)
        if is_kinematic:
            kinematic.add(label)
        lin = frame.world_vector_floats(_floats(d.linearVelocity))
        ax, ay, az = frame.world_vector_floats(_floats(d.angularVelocity), length=False)
        velocity = np.array((*lin, ax * DEG, ay * DEG, az * DEG))
        idx = builder.add_body((pos, rot), velocity=velocity, label=label, kinematic=is_kinematic)
        result.body_index[label] = idx
        gravcomp = result.resolver.resolve(stage.GetPrimAtPath(path), props.BODY_GRAVCOMP, path=path)
        if gravcomp.kind != "default":
            builder.set_mujoco("body", "body_gravcomp", idx, gravcomp.value)

    # ---- shapes
    shape_parts = defaultdict(list)  # body index -> [(shape index, prim, material or None, prim path)]
    frictions = {}  # what the colliders share: their materials' values, read once (see _import_shape)
    for obj_type in _SHAPE_TYPES:
        for path, d in descs.get(obj_type, []):
            _import_shape(builder, stage, obj_type, path, d, frame, materials, body_pose, result, shape_parts, ctx,
                          frictions=frictions)  # fmt: skip

    # ---- PointInstancer instances of rigid-body prototypes: a body each, with the prototype's colliders
    mass_source = {b: p for p, b in result.body_index.items()}  # (the enabled bodies so far, in their order)
    for proto in instanced:
        materials.update(proto.materials)
        for i, pos, rot, lin, ang in proto.instances(frame):
            label = f"{proto.instancer}[{i}]"
            b = builder.add_body((pos, rot), velocity=np.concatenate([lin, ang]), label=label)
            result.body_index[label] = b
            mass_source[b] = proto.body
            for obj_type, path, d in proto.shapes:
                below = str(path)[len(proto.body) :]
                _import_shape(builder, stage, obj_type, path, d, frame, materials, body_pose, result, shape_parts,
                              ctx, body=b, label=label + below, frictions=frictions)  # fmt: skip

    # ---- mass properties, with the UsdPhysics precedence
    massless = []
    memo = {}
    for b, path in mass_source.items():
        _import_mass(builder, stage, b, path, shape_parts[b], materials, frame, diag, file, massless, result.resolver,
                     memo)  # fmt: skip

    # ---- joints, oriented into trees rooted at the world
    _import_joints(builder, stage, descs, frame, result, kinematic, ctx, order)
    _import_distance_joints(builder, descs.get(OT.DistanceJoint, []), frame, result)
    _resolve_massless(builder, massless, diag)
    builder.joint_q_from_body_q()
    if any(np.any(v) for v in builder.body_qd):
        builder.joint_qd_from_body_qd()
    if _import_joint_states(builder, stage, result, frame):
        builder.body_q_from_joint_q()
    _import_sites(builder, typed["sites"], result, frame, ctx)
    import_visual_geoms(builder, typed["visuals"], result, frame, ctx)
    _import_mjc_typed(builder, typed, result, ctx)
    import_joint_equalities(builder, stage, result, ctx)
    import_tendon_equalities(builder, typed["MjcTendon"], result)
    import_keyframes(builder, typed["MjcKeyframe"], result, frame, order)
    _import_collision_filters(builder, stage, descs, result)
    _record_display_names(builder, typed["display_names"], labels_before)
    if result.environments is not None:
        _replicate_environments(builder, stage, descs, typed, result)
    diag.emit(file)
    return result


def _record_display_names(builder, display_names, labels_before) -> None:
    """The source's name of each element this import labelled with a prim that has an authored
    displayName (converters keep a name there where the prim name had to differ: ``tn__leftwaist_1_sY0``
    holds ``left\\waist``): MuJoCo element names are the source's names (``builder.element_names``).
    ``display_names``: prim path -> its authored displayName, of the prims that author one (:func:`_scan`)."""
    if not display_names:
        return
    for label in builder.labels():
        name = display_names.get(label)
        if name is not None and label not in labels_before:
            builder.element_names[label] = name


def _floats(vec) -> list:
    """A Gf vector's components as Python floats (as ``np.array(vec, dtype=np.float64)`` holds them)."""
    return np.array(vec, dtype=np.float64).tolist()


def _replicate_environments(builder, stage, descs, typed, result):
    """One world per environment: the builder (the first environment and what lies outside) replicated,
    each world's copy of the first environment placed and labelled as its own environment."""
    envs = result.environments
    imported = [str(p) for entries in descs.values() for p, _ in entries]
    imported += [str(prim.GetPath()) for key in _MJC_TYPED + ("MjcKeyframe",) for prim in typed[key]]
    check_references(stage, envs, imported, result.file)
    for path, b in result.body_index.items():
        if not envs.local(path) and not builder.body_kinematic[b]:
            result.diagnostics.add(
                "rigid body outside the environments: every world simulates its own copy (world 0's is written)",
                path,
            )
    n_before = {"body": builder.body_count, "shape": builder.shape_count, "joint": builder.joint_count,
                "distance": len(builder.distance_label)}  # fmt: skip
    builder.replicate(len(envs), placements=envs.placements, local=envs.local, relabel=envs.relabel)
    for index, kind in ((result.body_index, "body"), (result.shape_index, "shape"), (result.joint_index, "joint"),
                        (result.distance_index, "distance")):  # fmt: skip
        first = [(p, i) for p, i in index.items() if envs.local(p)]
        for w in range(1, len(envs)):
            for p, i in first:
                index[envs.relabel(p, w)] = i + w * n_before[kind]


@dataclass
class _InstancedBody:
    """A rigid-body prototype of a PointInstancer: its body and collider descriptors (as parsed from the
    prototype), and the instances that use it."""

    instancer: str  # the PointInstancer's path
    body: str  # the rigid body prim path: the prototype's root prim
    desc: object  # the body's RigidBodyDesc
    shapes: list  # [(object type, path, ShapeDesc)] of the body's colliders
    materials: dict  # physics materials the colliders bind
    ids: list  # the instancer's indices of the instances of this prototype
    transforms: list  # per instance: the body's world matrix (Gf.Matrix4d, stage units), None if inactive
    velocities: list  # per instance: (linear, angular deg/s) world velocity authored on the instancer, or None

    def instances(self, frame):
        """Per active instance: (instance index, position, Warp quat, linear velocity, angular velocity) in
        simulation units."""
        d = self.desc
        for i, m, vel in zip(self.ids, self.transforms, self.velocities, strict=True):
            if m is None:
                continue
            xf = Gf.Transform(m)
            pos, rot = frame.world_pose_to_sim(
                np.array(xf.GetTranslation(), dtype=np.float64), gf_to_xyzw(xf.GetRotation().GetQuat())
            )
            lin, ang = vel if vel is not None else (d.linearVelocity, d.angularVelocity)
            yield (
                i,
                pos,
                rot,
                frame.world_vector_to_sim(np.array(lin, dtype=np.float64)),
                frame.world_vector_to_sim(np.array(ang, dtype=np.float64), length=False) * DEG,
            )


def _instancer_prototypes(stage, instancers, result, owners=None) -> list:
    """The rigid-body prototypes of the PointInstancers (UsdPhysics' parser skips prototypes): each
    prototype whose root prim is a rigid body is parsed on its own, and every active instance becomes a
    body at its instance transform, with the prototype's colliders (sized as in the prototype)."""
    out = []
    diag = result.diagnostics
    cache = UsdGeom.XformCache(Usd.TimeCode.Default())
    for prim in instancers:
        pi = UsdGeom.PointInstancer(prim)
        protos = pi.GetPrototypesRel().GetTargets()
        if not protos:
            continue
        descs = _load_descriptors(stage, [str(p) for p in protos], owners=owners)
        bodies = descs.get(OT.RigidBody, [])
        if not bodies:
            continue
        for t in JOINT_OBJECT_TYPES:
            for path, _ in descs.get(t, []):
                diag.add("joints inside PointInstancer prototypes are not simulated yet (each body is free)", path)
        materials = {str(p): d for p, d in descs.get(OT.RigidBodyMaterial, [])}
        # Instance transforms (prototype root's own transform included) in the instancer's space.
        time = Usd.TimeCode.Default()
        matrices = pi.ComputeInstanceTransformsAtTime(
            time, time, UsdGeom.PointInstancer.IncludeProtoXform, UsdGeom.PointInstancer.IgnoreMask
        )
        proto_index = list(pi.GetProtoIndicesAttr().Get() or [])
        if len(matrices) != len(proto_index):
            raise UsdInputError(
                "protoIndices, positions and orientations do not describe the same number of instances",
                file=result.file,
                prim=str(prim.GetPath()),
                attribute="protoIndices",
            )
        mask = list(pi.ComputeMaskAtTime(time) or [])  # empty: every instance active (inactiveIds)
        inactive = {i for i, on in enumerate(mask) if not on}
        vels, angs = pi.GetVelocitiesAttr().Get(), pi.GetAngularVelocitiesAttr().Get()
        instancer_world = cache.GetLocalToWorldTransform(prim)
        rot_instancer = Gf.Matrix4d(instancer_world).RemoveScaleShear().ExtractRotationMatrix()  # row vectors
        for path, d in bodies:
            if not d.rigidBodyEnabled:
                continue
            k = next((k for k, p in enumerate(protos) if p == path), None)
            if k is None:
                diag.add("rigid bodies below a PointInstancer prototype's root prim are not simulated yet", path)
                continue
            shapes = [(t, p, sd) for t in _SHAPE_TYPES for p, sd in descs.get(t, []) if sd.rigidBody == path]
            ids, transforms, velocities = [], [], []
            for i, proto_i in enumerate(proto_index):
                if proto_i != k:
                    continue
                ids.append(i)
                transforms.append(None if i in inactive else matrices[i] * instancer_world)
                if vels is not None and i < len(vels):
                    ang = Gf.Vec3d(angs[i]) if angs is not None and i < len(angs) else Gf.Vec3d(0.0)
                    velocities.append((tuple(Gf.Vec3d(vels[i]) * rot_instancer), tuple(ang * rot_instancer)))
                else:
                    velocities.append(None)
            out.append(_InstancedBody(str(prim.GetPath()), str(path), d, shapes, materials, ids,
                                      transforms, velocities))  # fmt: skip
    return out


def _import_scene(builder, stage, scenes, frame, result):
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
    if solver.kind != "authored" and props.XPBD_SCENE_API in resolver.view(prim).applied:
        # A scene made for XPBD runs XPBD unless it names another solver.
        result.scene[props.SCENE_SOLVER.name] = resolver.record(
            prim,
            props.SCENE_SOLVER.name,
            Resolved("xpbd", "fallback", "newton:usd:solver", schema=props.XPBD_SCENE_API),
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
    direction = direction / n if n > 0 else -np.array(_AXIS_VEC[frame.up_axis])
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
    scenes = analyse(stage, _load_descriptors(stage), file, diag)
    resolver = Resolver(order=tuple(order), file=file)
    ctx = Context(meters_per_unit=frame.meters_per_unit, kilograms_per_unit=frame.kilograms_per_unit)
    for path, d in scenes.descs.items():
        enabled = resolver.resolve(stage.GetPrimAtPath(path), props.SCENE_GRAVITY_ENABLED, ctx).value
        scenes.gravity[path] = _gravity(d, frame) if enabled else np.zeros(3)
    return scenes


def scenes_to_import(stage, order=DIALECTS) -> list:
    """The ``scene`` arguments of :func:`add_usd` that import every PhysicsScene of ``stage`` that simulates
    rigid bodies, each into a builder of its own: with several PhysicsScenes, those that simulate bodies
    (:meth:`Scenes.simulated`, the first the default scene when it simulates any); else, or when none
    simulates a body, ``[None]`` (add_usd's default: the stage's scene). Costs one traversal, and a parse
    of the stage's physics when it has several PhysicsScenes.

    Raises:
        UsdInputError: as :func:`read_scenes`.
    """
    if len(physics_scenes(stage)) < 2:
        return [None]
    return read_scenes(stage, order).simulated() or [None]


def _material(d, materials):
    for m in d.materials:
        md = materials.get(str(m))
        if md is not None:
            return md
    return None


_SIZE_ATTRIBUTES = {  # what authors a collider's size, by its UsdPhysics object type (for messages)
    OT.CubeShape: "size",
    OT.SphereShape: "radius",
    OT.CapsuleShape: "radius, height",
    OT.CylinderShape: "radius, height",
    OT.Capsule1Shape: "radius, height",
    OT.Cylinder1Shape: "radius, height",
    OT.ConeShape: "radius, height",
}


def _check_finite_collider(path, obj_type, pos, parts, file) -> None:
    """A collider's size and place must be finite numbers (NaN or infinity in a size, a scale or a
    transform would reach MuJoCo's compiler or the inertia computation as garbage)."""
    if not np.isfinite(pos).all():
        raise UsdInputError(
            f"the collider's position is {tuple(map(float, pos))}: the transform (xformOp:*, or a parent's) must be "
            "finite",
            file=file,
            prim=str(path),
            attribute="xformOpOrder",
        )
    for _, size, _, _ in parts:
        if not np.isfinite(np.asarray(size, dtype=np.float64)).all():
            raise UsdInputError(
                f"the collider's size is {tuple(map(float, size))}: sizes and scales must be finite",
                file=file,
                prim=str(path),
                attribute=_SIZE_ATTRIBUTES.get(obj_type),
            )


def _import_shape(
    builder, stage, obj_type, path, d, frame, materials, body_pose, result, shape_parts, ctx, body=None, label=None,
    frictions=None,
):  # fmt: skip
    """One collider. ``body`` and ``label`` are given for the colliders of PointInstancer instances
    (the descriptor is the prototype's). ``frictions``: a dict the colliders of one import share, to read
    each material once (filled here)."""
    diag = result.diagnostics
    rigid_body = d.rigidBody
    body_path = str(rigid_body) if rigid_body else ""  # (an empty Sdf.Path is false)
    if body is None:
        body = result.body_index.get(body_path, -1)
    s = frame.meters_per_unit
    local_pos = np.array(d.localPos, dtype=np.float64) * s
    local_rot = gf_to_xyzw(d.localRot)
    if body < 0:
        if body_path in body_pose:  # collider of a disabled body: static, at the body's pose
            bp, bq = body_pose[body_path]
            local_pos, local_rot = transform_multiply((bp, bq), (local_pos, local_rot))
        else:  # a static collider: its pose is a world pose
            local_pos, local_rot = frame.world_pose_to_sim(np.array(d.localPos, dtype=np.float64), local_rot)

    prim = stage.GetPrimAtPath(path)
    mesh = None
    if obj_type == OT.CubeShape:
        geo, scale = GeoType.BOX, np.array(d.halfExtents, dtype=np.float64) * s
    elif obj_type == OT.SphereShape:
        # The parser folds scale into the radius (its largest component); a non-uniform scale is an ellipsoid.
        local_scale = np.abs(np.array(d.localScale, dtype=np.float64))
        if np.ptp(local_scale) > 1e-6 * local_scale.max():
            geo, scale = GeoType.ELLIPSOID, tuple(d.radius / local_scale.max() * local_scale * s)
        else:
            geo, scale = GeoType.SPHERE, (d.radius * s, 0.0, 0.0)
    elif obj_type in (OT.CapsuleShape, OT.CylinderShape, OT.Capsule1Shape, OT.Cylinder1Shape):
        geo = GeoType.CAPSULE if obj_type in (OT.CapsuleShape, OT.Capsule1Shape) else GeoType.CYLINDER
        if obj_type in (OT.Capsule1Shape, OT.Cylinder1Shape):
            radius = max(d.topRadius, d.bottomRadius) if hasattr(d, "topRadius") else d.radius
            diag.add("tapered capsule/cylinder approximated with its larger radius", path)
        else:
            radius = d.radius
        scale = (radius * s, d.halfHeight * s, 0.0)
        local_rot = quat_multiply(local_rot, AXIS_TO_Z[_axis_token(d.axis)])
    elif obj_type == OT.ConeShape:  # MuJoCo has no cone: a convex mesh of the cone's volume
        geo, scale, mesh = GeoType.MESH, (1.0, 1.0, 1.0), cone_mesh(d.radius * s, d.halfHeight * s)
        local_rot = quat_multiply(local_rot, AXIS_TO_Z[_axis_token(d.axis)])
    elif obj_type == OT.PlaneShape:
        geo, scale = GeoType.PLANE, (0.0, 0.0, 0.0)
        local_rot = quat_multiply(local_rot, AXIS_TO_Z[_axis_token(d.axis)])
    elif obj_type == OT.MeshShape and prim.HasAPI(HEIGHTFIELD_API):  # a height field, not the mesh's hull
        size, field = read_heightfield(prim, result, ctx)
        parts = [(GeoType.HFIELD, size[:3], None, field)]
    elif obj_type == OT.MeshShape and prim.HasAPI("NewtonUsdEllipsoidAPI"):
        radii = prim.GetAttribute(_ELLIPSOID_RADII).Get()
        if radii is None or min(radii) <= 0:
            raise UsdInputError(f"must be > 0 in every component, got {radii}", file=result.file, prim=str(path),
                                attribute=_ELLIPSOID_RADII)  # fmt: skip
        result.resolver.used.add((str(path), _ELLIPSOID_RADII))
        scale = tuple(float(r) * abs(float(k)) * s for r, k in zip(radii, d.meshScale, strict=True))
        parts = [(GeoType.ELLIPSOID, scale, None, None)]
    elif obj_type == OT.MeshShape:
        mesh = read_mesh(prim, np.array(d.meshScale, dtype=np.float64) * s, result.file)
        if mesh is None:
            diag.add("mesh collider without points or faces ignored", path)
            return
        approx = str(d.approximation) if d.approximation else "none"
        parts = _mesh_parts(prim, mesh, approx, path, diag)
        geo, scale, offset, mesh = parts[0]
    else:
        diag.add(f"{obj_type.name} colliders are not supported yet and were ignored", path)
        return

    if obj_type != OT.MeshShape:
        parts = [(geo, scale, None, mesh)]
    _check_finite_collider(path, obj_type, local_pos, parts, result.file)
    resolver = result.resolver
    md = _material(d, materials)
    if md is None:
        mu, restitution = 0.5, 0.0
        mu_torsional, mu_rolling = props.MATERIAL_TORSIONAL.default, props.MATERIAL_ROLLING.default
    else:
        known = frictions.get(("material", id(md))) if frictions is not None else None
        if known is None:
            rolling = resolver.resolve_all(stage.GetPrimAtPath(md.primPath), _MATERIAL_PROPERTIES, ctx)
            known = (float(md.dynamicFriction), float(md.restitution), rolling["torsional_friction"].value,
                     rolling["rolling_friction"].value, md)  # fmt: skip
            if frictions is not None:
                frictions[("material", id(md))] = known  # (keeps md: its id is not reused meanwhile)
        mu, restitution, mu_torsional, mu_rolling, _ = known
    if restitution > 0.0:
        diag.add("restitution is not simulated by the MuJoCo solver", path)
    resolved = resolver.resolve_all(prim, props.SHAPE_PROPERTIES, ctx, path)
    label = label or str(path)
    for k, (geo, scale, offset, mesh) in enumerate(parts):  # a decomposed mesh: one shape per convex part
        pose = (local_pos, local_rot) if offset is None else transform_multiply((local_pos, local_rot), offset)
        idx = builder.add_shape(
            body,
            geo,
            pose,
            scale,
            mesh=mesh,
            mu=mu,
            restitution=restitution,
            mu_torsional=mu_torsional,
            mu_rolling=mu_rolling,
            margin=resolved["margin"].value,
            gap=resolved["gap"].value,
            collision_enabled=bool(d.collisionEnabled),
            label=label if k == 0 else f"{label}:part{k}",
        )
        for name in _mujoco_shape_values(resolved, frictions):
            builder.set_mujoco("shape", f"geom_{name}", idx, resolved[name].value)
        mass_model = resolved["mass_model"].value
        if resolved["mass_model"].kind == "authored" and geo == GeoType.MESH:  # (unauthored: MuJoCo's default)
            builder.set_mujoco("shape", "mesh_inertia", idx, MESH_INERTIA_MODES.index(mass_model))
        elif mass_model == "shell" and geo != GeoType.MESH:
            diag.add("shell mass models are applied to mesh colliders only: this one is solid", path)
        result.shape_index[label if k == 0 else f"{label}:part{k}"] = idx
        if body >= 0:
            by_mujoco = mass_model in ("convex", "shell") and geo == GeoType.MESH  # else our solid volume
            mujoco_mass = (mass_model, resolved["shell_thickness"].value) if by_mujoco else None
            shape_parts[body].append((idx, prim, md, path, mujoco_mass))


_MATERIAL_PROPERTIES = (props.MATERIAL_TORSIONAL, props.MATERIAL_ROLLING)
_MUJOCO_SHAPE_VALUES = ("condim", "priority", "solmix", "solref", "solimp", "group")


def _mujoco_shape_values(resolved, cache=None) -> tuple:
    """The names of :data:`_MUJOCO_SHAPE_VALUES` that ``resolved`` (a collider's resolved properties) does not
    leave at their defaults. ``cache``: a dict to remember them per result (colliders that author none of
    their properties share one)."""
    hit = cache.get(("mujoco", id(resolved))) if cache is not None else None
    if hit is not None and hit[0] is resolved:
        return hit[1]
    names = tuple(name for name in _MUJOCO_SHAPE_VALUES if resolved[name].kind != "default")
    if cache is not None:
        cache[("mujoco", id(resolved))] = (resolved, names)
    return names


_IDENTITY_ROT = np.array([0.0, 0.0, 0.0, 1.0])
_ELLIPSOID_RADII = "newton:usd:ellipsoid:radii"  # NewtonUsdEllipsoidAPI: a Mesh collider that is an ellipsoid
_DECOMPOSITION = "physxConvexDecompositionCollision:"


def _mesh_parts(prim, mesh, approx, path, diag) -> list:
    """A mesh collider as the shapes its ``physics:approximation`` asks for: ``[(geo type, scale, offset
    (pos, quat) in the mesh frame or None, Mesh or None)]``.

    none, convexHull: the mesh (MuJoCo collides with its convex hull, computed by MuJoCo's qhull);
    boundingSphere: the sphere about the bounding box's center through the farthest vertex;
    boundingCube: the mesh-frame bounding box; convexDecomposition: CoACD's convex parts
    (``physxConvexDecompositionCollision:maxConvexHulls`` and ``hullVertexLimit`` are honoured);
    meshSimplification: the convex hull.
    """
    v = mesh.vertices
    if approx == "boundingSphere":
        center = 0.5 * (v.min(axis=0) + v.max(axis=0))
        radius = float(np.linalg.norm(v - center, axis=1).max())
        return [(GeoType.SPHERE, (radius, 0.0, 0.0), (center, _IDENTITY_ROT), None)]
    if approx == "boundingCube":
        lo, hi = v.min(axis=0), v.max(axis=0)
        return [(GeoType.BOX, tuple(np.maximum(0.5 * (hi - lo), 1e-9)), (0.5 * (lo + hi), _IDENTITY_ROT), None)]
    if approx == "convexDecomposition":
        return [(GeoType.MESH, (1.0, 1.0, 1.0), None, part) for part in _decompose(prim, mesh, path, diag)]
    if approx not in ("none", "convexHull", ""):
        diag.add(f"mesh collision approximation '{approx}' simulated as the mesh's convex hull", path)
    return [(GeoType.MESH, (1.0, 1.0, 1.0), None, mesh)]


def _decompose(prim, mesh, path, diag) -> list:
    """Convex parts of ``mesh`` by CoACD (collision-aware approximate convex decomposition)."""
    try:
        import coacd  # noqa: PLC0415  (loaded only for meshes that ask for a decomposition)
    except ImportError:  # pragma: no cover - a dependency; kept working without it
        diag.add("convexDecomposition needs the coacd package: simulated as the mesh's convex hull", path)
        return [mesh]
    options = {}
    for attr, key in (("maxConvexHulls", "max_convex_hull"), ("hullVertexLimit", "max_ch_vertex")):
        a = prim.GetAttribute(_DECOMPOSITION + attr)
        if a and a.HasAuthoredValue():
            options[key] = int(a.Get())
    coacd.set_log_level("error")
    parts = coacd.run_coacd(coacd.Mesh(mesh.vertices, mesh.indices.reshape(-1, 3)), **options)
    out = [Mesh(np.asarray(pv), np.asarray(pf)) for pv, pf in parts if len(pf)]
    return out or [mesh]


def _axis_token(axis) -> str:
    key = (type(axis), axis)
    name = _AXIS_TOKENS.get(key)
    if name is None:
        name = str(axis).split(".")[-1]
        name = _AXIS_TOKENS[key] = name if name in _AXIS_VEC else "Z"
    return name


_AXIS_TOKENS = {}  # UsdPhysics.Axis value -> "X", "Y" or "Z" (str() of a Boost.Python enum is slow)


_MASS_ATTRIBUTES = frozenset(
    ("physics:mass", "physics:density", "physics:centerOfMass", "physics:diagonalInertia", "physics:principalAxes")
)
_NO_MASS = (0.0, 0.0, None, None, None)
_MASS_TYPES = {  # the Python types of the MassAPI attributes' values, and their USD types for messages
    "physics:mass": (float, int),
    "physics:density": (float, int),
    "physics:centerOfMass": (Gf.Vec3f, Gf.Vec3d, Gf.Vec3h),
    "physics:diagonalInertia": (Gf.Vec3f, Gf.Vec3d, Gf.Vec3h),
    "physics:principalAxes": (Gf.Quatf, Gf.Quatd, Gf.Quath),
}
_MASS_TYPE_NAMES = {
    "physics:mass": "a float",
    "physics:density": "a float",
    "physics:centerOfMass": "a point3f",
    "physics:diagonalInertia": "a float3",
    "physics:principalAxes": "a quatf",
}


def _mass_api(prim, file=None, authored=None, applied=None):
    """(mass, density, com or None, diagonal inertia or None, principal axes quat) authored on ``prim``
    (``authored``: the prim's authored property names, when known, to skip prims that author none;
    ``applied``: its applied schemas, when known)."""
    if authored is not None and authored.isdisjoint(_MASS_ATTRIBUTES):
        return _NO_MASS
    if not ("PhysicsMassAPI" in applied if applied is not None else prim.HasAPI(UsdPhysics.MassAPI)):
        return _NO_MASS
    if authored is None:
        authored = _MASS_ATTRIBUTES

    def get(name):  # the value, checked to be of the MassAPI schema's type (a layer can author any type)
        attr = prim.GetAttribute(name)
        value = attr.Get()
        kind = _MASS_TYPES[name]
        if value is not None and not isinstance(value, kind):
            raise UsdInputError(
                f"authored as {type(value).__name__} {value!r}, expected {_MASS_TYPE_NAMES[name]}",
                file=file,
                prim=str(prim.GetPath()),
                attribute=name,
            )
        return value

    mass = (get("physics:mass") or 0.0) if "physics:mass" in authored else 0.0
    density = (get("physics:density") or 0.0) if "physics:density" in authored else 0.0
    for name, value in (("physics:mass", mass), ("physics:density", density)):
        if value < 0 or not math.isfinite(value):
            raise UsdInputError(
                f"must be a finite number >= 0 (0: not set), got {value}",
                file=file,
                prim=str(prim.GetPath()),
                attribute=name,
            )
    com = get("physics:centerOfMass") if "physics:centerOfMass" in authored else None
    com = None if com is None or not all(math.isfinite(c) for c in com) else np.array(com, dtype=np.float64)
    diag = get("physics:diagonalInertia") if "physics:diagonalInertia" in authored else None
    if diag is not None and not all(x >= 0 and math.isfinite(x) for x in diag):  # (NaN fails both)
        raise UsdInputError(
            f"must be finite and >= 0 in every component, got {tuple(diag)}",
            file=file,
            prim=str(prim.GetPath()),
            attribute="physics:diagonalInertia",
        )
    diag = None if diag is None or all(x == 0 for x in diag) else np.array(diag, dtype=np.float64)
    axes = get("physics:principalAxes") if "physics:principalAxes" in authored else None
    axes = None if axes is None else gf_to_xyzw(axes)
    if axes is not None and np.linalg.norm(axes) < 1e-9:
        axes = None
    return float(mass), float(density), com, diag, axes


def _import_mass(builder, stage, body, path, parts, materials, frame, diag, file, massless, resolver, memo=None):
    """Mass properties: body MassAPI mass > sum of collider masses (collider mass > collider density >
    body density > material density > 1000 kg/m^3); COM and inertia from the colliders unless authored.
    ``memo``: a dict for the body-frame mass properties of analytic colliders, by their exact inputs
    (identical colliders, as in replicated robots, are computed once)."""
    s, k = frame.meters_per_unit, frame.kilograms_per_unit
    density_scale = k / s**3
    prim = stage.GetPrimAtPath(path)
    view = resolver.view(prim)
    b_mass, b_density, b_com, b_inertia, b_axes = _mass_api(prim, file, view.authored, view.applied)
    collider_props = []
    keys = []  # the colliders' memo keys (None: one is not memoized)
    shape_type, shape_scale, shape_source = builder.shape_type, builder.shape_scale, builder.shape_source
    for shape, shape_prim, md, shape_path, mujoco_mass in parts:
        geo = shape_type[shape]
        if geo == GeoType.PLANE:
            continue
        shape_view = resolver.view(shape_prim, shape_path)
        c_mass, c_density, _, _, _ = _mass_api(shape_prim, file, shape_view.authored, shape_view.applied)
        if c_density > 0:
            density = c_density * density_scale
        elif b_density > 0:
            density = b_density * density_scale
        elif md is not None and md.density > 0:
            density = md.density * density_scale
        else:
            density = DEFAULT_DENSITY
        scale, source = shape_scale[shape], shape_source[shape]
        p, q = builder.shape_transform[shape]
        key = None
        mode = None  # MuJoCo's mesh inertia mode, where MuJoCo computes the mass (convex hull, shell)
        if mujoco_mass is not None:
            mode, thickness = mujoco_mass
            if mode == "shell":  # MuJoCo's density is per area: times the wall's thickness
                density *= thickness if thickness is not None else s  # (None: one stage unit, as MuJoCo's)
        if memo is not None and source is None:  # (density and c_mass are never -0.0: == is exact here)
            key = (geo, density, c_mass, scale.tobytes(), p.tobytes(), q.tobytes())
            keys.append(key)
            part = memo.get(key)
            if part is not None:
                collider_props.append((part[0], part[1].copy(), part[2].copy()))
                continue
        else:
            keys.append(None)
        mesh_key = ("mesh", id(source), mode, density, scale.tobytes()) if mode and memo is not None else None
        props = memo.get(mesh_key) if mesh_key else None  # (a MuJoCo compile each: once per replicated mesh)
        if props is None:
            props = mass_props.shape_mass_properties(geo, scale, density, source, mesh_inertia=mode)
            if mesh_key:
                memo[mesh_key] = props  # (the builder keeps source alive: its id stays its own)
        if c_mass > 0 and props[0] > 0:  # an authored collider mass scales its shape's distribution
            f = c_mass * k / props[0]
            props = (props[0] * f, props[1], props[2] * f)
        part = mass_props.transform_inertia(*props, p, q)
        if key is not None:
            memo[key] = (part[0], part[1].copy(), part[2].copy())
        collider_props.append(part)
    if not collider_props:
        mass, com, inertia = 0.0, np.zeros(3), np.zeros((3, 3))
    elif len(collider_props) > 1 and memo is not None and None not in keys:  # the same colliders: the same sum
        key = ("combined", *keys)
        combined = memo.get(key)
        if combined is None:
            combined = memo[key] = mass_props.combine(collider_props)
        mass, com, inertia = combined[0], combined[1].copy(), combined[2].copy()
    else:
        mass, com, inertia = mass_props.combine(collider_props)
    if b_mass > 0:
        if mass > 0:
            inertia = inertia * (b_mass * k / mass)
        mass = b_mass * k
    if b_com is not None:
        new_com = b_com * s
        if mass > 0:  # move the inertia to the authored COM (parallel axis theorem)
            d0 = com - new_com
            inertia = inertia + mass * (np.dot(d0, d0) * np.eye(3) - np.outer(d0, d0))
        com = new_com
    if b_inertia is not None:
        r = quat_to_matrix(b_axes) if b_axes is not None else np.eye(3)
        inertia = r @ np.diag(b_inertia * k * s * s) @ r.T
    if mass <= 0:
        builder.set_body_mass(body, 0.0, com, np.zeros((3, 3)))
        massless.append(body)  # resolved once the joints are known (see _resolve_massless)
        return
    if not collider_props and b_inertia is None:
        inertia = shapeless_inertia(mass)
        diag.add(SHAPELESS_NOTE, path)
    if memo is None:
        degenerate = np.linalg.det(inertia) <= 0
    else:
        key = ("degenerate", inertia.tobytes())
        degenerate = memo.get(key)
        if degenerate is None:
            degenerate = memo[key] = np.linalg.det(inertia) <= 0
    if degenerate:
        inertia = np.eye(3) * max(1e-6, mass * 1e-4)
        diag.add("body inertia not positive definite: replaced with a small isotropic inertia", path)
    builder.set_body_mass(body, mass, com, inertia)


def _import_joints(builder, stage, descs, frame, result, kinematic, ctx, order):
    diag = result.diagnostics
    joints = []  # (path, desc, joint type)
    for obj_type in _UNSUPPORTED_JOINTS:
        for path, _ in descs.get(obj_type, []):
            diag.add(f"{obj_type.name} joints are not supported yet and were ignored", path)
    for obj_type, jt in _JOINT_TYPES.items():
        for path, d in descs.get(obj_type, []):
            if not d.jointEnabled and not _is_equality(stage, path, d):
                diag.add("joint disabled (physics:jointEnabled = false): not simulated", path)
                continue
            joints.append((path, d, jt))
    # Authored (traversal) order: stacked joints between two bodies compose in this order, as in MJCF.
    joints.sort(key=lambda j: order.get(str(j[0]), len(order)))

    # Undirected graph of bodies (and the world, -1) connected by joints.
    edges = defaultdict(list)
    valid = []
    loops = []  # loop-closing joints: equality constraints
    for path, d, jt in joints:
        bodies = _joint_bodies(d, path, result)
        if bodies is None:
            continue
        b0, b1 = bodies
        if d.excludeFromArticulation or not d.jointEnabled:  # (disabled: an inactive MjcEquality)
            loops.append((path, d, jt, b0, b1))
            continue
        i = len(valid)
        valid.append((path, d, jt, b0, b1))
        edges[b0].append(i)
        edges[b1].append(i)

    articulation_of = {}
    for path, d in descs.get(OT.Articulation, []):
        for jp in d.articulatedJoints:
            articulation_of[str(jp)] = path
    art_index = {}

    visited = set()
    used = set()
    tree_parent = {}

    def walk(root):
        queue = deque([root])
        visited.add(root)
        while queue:
            parent = queue.popleft()
            for i in edges[parent]:
                if i in used:
                    continue
                path, d, jt, b0, b1 = valid[i]
                child = b1 if b0 == parent else b0
                used.add(i)
                if child in visited and tree_parent.get(child) != parent:
                    loops.append((path, d, jt, b0, b1))  # it closes a cycle of joints
                    diag.add(
                        "joint closes a loop of joints and is not excluded from the articulation "
                        "(physics:excludeFromArticulation): simulated as an equality constraint",
                        path,
                    )
                    continue
                stacked = child in visited  # another joint between the same two bodies
                visited.add(child)
                tree_parent[child] = parent
                _add_joint(
                    builder,
                    path,
                    d,
                    jt,
                    b0,
                    b1,
                    reverse=(b0 != parent),
                    frame=frame,
                    result=result,
                    articulation_of=articulation_of,
                    art_index=art_index,
                    stage=stage,
                    ctx=ctx,
                )
                if not stacked:
                    queue.append(child)

    walk(-1)
    roots = {
        result.body_index[str(rp)]
        for _, d in descs.get(OT.Articulation, [])
        for rp in d.rootPrims
        if str(rp) in result.body_index
    }
    moving = {result.body_index[p] for p in kinematic if p in result.body_index}
    for b in sorted(result.body_index.values()):
        if b not in visited:  # a floating tree: its root gets a free joint (a kinematic root is welded)
            root = _pick_root(b, edges, valid, moving) if moving else None
            if root is None or root not in moving:
                root = _pick_root(b, edges, valid, roots)
            label = builder.body_label[root]
            if label in kinematic:  # moved by the stage's (animated) transform: see Simulation
                j = builder.add_joint_fixed(-1, root, builder.body_q[root], None, label=label)
            else:
                j = builder.add_joint_free(root, label=label)
            result.joint_index.setdefault(label, j)
            tree_parent[root] = -1
            walk(root)
    for path, d, jt, b0, b1 in loops:
        _add_loop_closure(builder, stage, path, d, jt, b0, b1, frame, result, ctx)


def _joint_bodies(d, path, result):
    """A joint's ``(body0, body1)`` indices (-1: the world), or None (reported) when a target is not a
    simulated body or both are the same body."""
    body0, body1 = d.body0, d.body1
    stage = result.stage
    for name, body in (("physics:body0", body0), ("physics:body1", body1)):
        # USD's parser leaves a target that is no prim empty, as if the joint were attached to the world;
        # a target that is a prim but no body (a static Xform: mujoco-usd-converter's world side) is the
        # world by UsdPhysics, the local pose given in its frame (the parser makes it a world pose).
        if not body or body.isEmpty:
            targets = stage.GetPrimAtPath(path).GetRelationship(name).GetForwardedTargets()
            if any(not stage.GetPrimAtPath(t) for t in targets):
                result.diagnostics.add(f"joint whose {name} targets no prim (deleted or misspelled?): dropped", path)
                return None
    b0 = -1 if (not body0 or body0.isEmpty) else result.body_index.get(str(body0))
    b1 = -1 if (not body1 or body1.isEmpty) else result.body_index.get(str(body1))
    if b0 is None or b1 is None:
        result.diagnostics.add("joint attached to a prim that is not a simulated rigid body: ignored", path)
        return None
    if b0 == b1:
        result.diagnostics.add("joint connects a body to itself: ignored", path)
        return None
    return b0, b1


def _import_distance_joints(builder, joints, frame, result):
    """UsdPhysics distance joints: the distance between the joint frames' origins on the two bodies stays
    within the enabled limits (``physics:minDistance``/``maxDistance``, stage units), as a distance
    constraint beside the joint tree."""
    diag = result.diagnostics
    for path, d in joints:
        if not d.jointEnabled:
            diag.add("joint disabled (physics:jointEnabled = false): not simulated", path)
            continue
        bodies = _joint_bodies(d, path, result)
        if bodies is None:
            continue
        b0, b1 = bodies
        s = frame.meters_per_unit
        lo = d.limit.lower * s if d.minEnabled and math.isfinite(d.limit.lower) else None
        hi = d.limit.upper * s if d.maxEnabled and math.isfinite(d.limit.upper) else None
        if lo is None and hi is None:
            diag.add("distance joint with neither a minimum nor a maximum distance does not constrain", path)
            continue
        if lo is not None and hi is not None and lo > hi:
            raise UsdInputError(
                f"minDistance ({d.limit.lower}) is greater than maxDistance ({d.limit.upper})",
                file=result.file,
                prim=str(path),
                attribute="physics:minDistance",
            )
        x0, x1 = _joint_frames(d, b0, b1, frame)
        result.distance_index[str(path)] = builder.add_distance_constraint(
            b0, b1, x0[0], x1[0], min_distance=lo, max_distance=hi, label=str(path)
        )


LOOP_HINGE_SPAN = 0.1
"""m: a revolute loop closure is two connect constraints this far apart along its axis."""


def _joint_frames(d, b0, b1, frame):
    """A joint's two local frames in simulation units: relative to the world a frame is a world pose
    (converted like one); relative to a body it only scales."""
    s = frame.meters_per_unit
    x0 = (np.array(d.localPose0Position, dtype=np.float64), gf_to_xyzw(d.localPose0Orientation))
    x1 = (np.array(d.localPose1Position, dtype=np.float64), gf_to_xyzw(d.localPose1Orientation))
    x0 = frame.world_pose_to_sim(*x0) if b0 < 0 else (x0[0] * s, x0[1])
    x1 = frame.world_pose_to_sim(*x1) if b1 < 0 else (x1[0] * s, x1[1])
    return x0, x1


_EQUALITY_APIS = ("MjcEqualityConnectAPI", "MjcEqualityWeldAPI")


def _is_equality(stage, path, d) -> bool:
    """A joint excluded from articulations that carries an MjcEquality API: an equality constraint
    (``physics:jointEnabled`` false: inactive at the start, as MuJoCo's ``active``)."""
    if not d.excludeFromArticulation:
        return False
    applied = stage.GetPrimAtPath(path).GetAppliedSchemas()
    return any(api in applied for api in _EQUALITY_APIS)


COINCIDENT = 1e-6
"""m: two joint-frame origins closer than this in the initial pose coincide (a connect constraint then
joins them where they are; farther apart, it pulls them together)."""


def _add_loop_closure(builder, stage, path, d, jt, b0, b1, frame, result, ctx):
    """A joint that closes a loop (or is excluded from articulations) as equality constraints: a fixed
    joint welds, a spherical joint connects, a revolute joint connects at two points of its axis. The
    joint frames are brought together (UsdPhysics), so a connect holds both frames' points."""
    x0, x1_pose = _joint_frames(d, b0, b1, frame)
    x1 = x1_pose[0]
    label = str(path)
    active = bool(d.jointEnabled)

    def connect(p0, p1):
        world = [transform_multiply(builder.body_q[b], (p, np.array([0.0, 0.0, 0.0, 1.0])))[0] if b >= 0 else p
                 for b, p in ((b0, p0), (b1, p1))]  # fmt: skip
        apart = np.linalg.norm(world[0] - world[1]) > COINCIDENT
        return builder.add_equality("connect", b0, b1, p0, anchor2=p1 if apart else None, active=active, label=label)

    if jt == JointType.FIXED:  # body1 keeps the pose that makes the two joint frames coincide
        relpose = transform_multiply(x0, transform_inverse(x1_pose))
        ids = [builder.add_equality("weld", b0, b1, x1, relpose=relpose, active=active, label=label)]
    elif jt == JointType.BALL:
        ids = [connect(x0[0], x1)]
    elif jt == JointType.REVOLUTE:
        axis = _AXIS_VEC[_axis_token(d.axis)]
        ids = [
            connect(x0[0], x1),
            connect(
                x0[0] + LOOP_HINGE_SPAN * quat_rotate(x0[1], axis),
                x1 + LOOP_HINGE_SPAN * quat_rotate(x1_pose[1], axis),
            ),
        ]
    else:
        result.diagnostics.add(f"loop-closing {jt.name.lower()} joints are not simulated yet", path)
        return
    prim = stage.GetPrimAtPath(path)
    resolved = result.resolver.resolve_all(prim, (props.SHAPE_SOLREF, props.SHAPE_SOLIMP, props.EQ_TORQUESCALE), ctx)
    for i in ids:
        for name, key in (("solref", "eq_solref"), ("solimp", "eq_solimp"), ("torquescale", "eq_torquescale")):
            if resolved[name].kind != "default":
                builder.set_mujoco("equality", key, i, resolved[name].value)


SHAPELESS_MASS = 1.0
"""kg: a body with no collider and no authored mass (PhysX's updateMassAndInertia gives such a body 1)."""
SHAPELESS_RADIUS = 0.1
"""m: a body with no collider and no authored inertia has the inertia of a solid sphere this big, of its mass
(as ``UsdPhysics.RigidBodyAPI.ComputeMassProperties``, the schema's reference computation, gives it)."""
SHAPELESS_NOTE = (f"body without colliders or authored inertia: given the inertia of a {SHAPELESS_RADIUS:g} m solid "
                  "sphere of its mass, as UsdPhysics computes it")  # fmt: skip


def shapeless_inertia(mass: float) -> np.ndarray:
    """The inertia (kg*m^2) of a body of ``mass`` (kg) with no collider and no authored inertia."""
    return np.eye(3) * 0.4 * mass * SHAPELESS_RADIUS**2


def _resolve_massless(builder, massless, diag):
    """A body with no mass and no colliders: massless when a fixed joint welds it to another body or to
    the world (a frame, or a carrier of massive welded children, as MuJoCo allows), else 1 kg so that
    it can move. Said only for a massless body whose welded group moves and has no mass at all (the
    solver's degenerate case); a frame welded to the world or to a massive body is as MJCF authors it."""
    root = {}  # union-find over the bodies welded by fixed joints, the world (-1) included

    def find(b):
        while root.get(b, b) != b:
            b = root[b]
        return b

    welded = set()
    for j, jt in enumerate(builder.joint_type):
        if jt == JointType.FIXED:  # to another body, or to the world (a static frame)
            welded.update((builder.joint_parent[j], builder.joint_child[j]))
            a, b = find(builder.joint_parent[j]), find(builder.joint_child[j])
            if a != b:
                root[max(a, b)] = min(a, b)  # (the world, -1, stays a group's root)
    group_mass = defaultdict(float)
    for b, m in enumerate(builder.body_mass):
        group_mass[find(b)] += m
    for b in massless:
        group = find(b)
        if b not in welded:
            builder.set_body_mass(b, SHAPELESS_MASS, builder.body_com[b], shapeless_inertia(SHAPELESS_MASS))
            diag.add(f"body without colliders or authored mass: given {SHAPELESS_MASS:g} kg, as PhysX does",
                     builder.body_label[b])  # fmt: skip
            diag.add(SHAPELESS_NOTE, builder.body_label[b])
        elif group != -1 and group_mass[group] <= 0.0:
            diag.add("massless bodies welded together with no mass among them: simulated massless",
                     builder.body_label[b])  # fmt: skip


D6_AXIS_TOKENS = ("transX", "transY", "transZ", "rotX", "rotY", "rotZ")
"""The UsdPhysics axis tokens of a generic joint's DOFs (``limit:<token>:physics:*``, ``drive:<token>:...``,
``state:<token>:...``), translations then rotations, each in X, Y, Z order."""
_STATE_AXES = {
    JointType.REVOLUTE: ("angular",),
    JointType.PRISMATIC: ("linear",),
    JointType.D6: D6_AXIS_TOKENS,
}
_STATE_ATTRIBUTES = {
    jt: frozenset(f"state:{axis}:physics:{kind}" for axis in axes for kind in ("position", "velocity"))
    for jt, axes in _STATE_AXES.items()
}


def _import_joint_states(builder, stage, result, frame) -> bool:
    """Initial joint positions and velocities authored with (PhysX's) PhysicsJointStateAPI
    (``state:<axis>:physics:position`` / ``velocity``, degrees for angular axes) override the ones read
    from the body poses. Returns whether any position was set."""
    moved = False
    dof_start = np.concatenate([[0], np.cumsum([len(qd) for qd in builder.joint_qd])]).astype(np.int64)
    for path, j in result.joint_index.items():
        jt = builder.joint_type[j]
        axes = _STATE_AXES.get(jt)
        if not axes:
            continue
        prim = stage.GetPrimAtPath(path)
        if not prim:
            continue
        authored = result.resolver.view(prim).authored
        if authored.isdisjoint(_STATE_ATTRIBUTES[jt]):
            continue
        n_lin = builder.joint_dof_dim[j][0]
        for k in range(len(builder.joint_qd[j])):
            if jt == JointType.D6:
                # D6 DOFs are the free axes in X, Y, Z order: find this DOF's axis token.
                axis = builder.joint_axis[dof_start[j] + k]
                name = ("trans" if k < n_lin else "rot") + "XYZ"[int(np.argmax(np.abs(axis)))]
                sign = float(np.sign(axis[int(np.argmax(np.abs(axis)))]))
            else:
                name, sign = axes[0], 1.0
            angular = jt == JointType.REVOLUTE or (jt == JointType.D6 and k >= n_lin)
            unit = DEG if angular else frame.meters_per_unit
            for attr_name, target in (("position", builder.joint_q[j]), ("velocity", builder.joint_qd[j])):
                attr_path = f"state:{name}:physics:{attr_name}"
                if attr_path not in authored:  # no opinion: no authored value
                    continue
                attr = prim.GetAttribute(attr_path)
                value = attr.Get() if attr and attr.HasAuthoredValue() else None
                if value is not None:
                    new = sign * float(value) * unit
                    # Only a position that differs from the one the body poses give moves the bodies
                    # (stages often author the current angles, e.g. 0 for every joint).
                    moved |= attr_name == "position" and not math.isclose(new, target[k], rel_tol=1e-6, abs_tol=1e-9)
                    target[k] = new
                    result.resolver.used.add((path, attr_path))
    return moved


MAX_COLLISION_GROUPS = 31
"""Collision groups become contype/conaffinity bits (bit 0: shapes in no group)."""


def _import_collision_filters(builder, stage, descs, result):
    """What must not collide: FilteredPairsAPI on bodies and colliders (body pairs; a body and a static
    collider: a body-shape pair), joints with collisionEnabled = false (their bodies), and CollisionGroups
    with their filteredGroups (as contype/conaffinity bits in ``model.mujoco.geom_contype``/``geom_conaffinity``)."""
    diag = result.diagnostics
    body_of_path = result.body_index
    shape_body = builder.shape_body
    pairs, static_pairs = set(), set()

    def body_for(path):
        p = str(path)
        if p in body_of_path:
            return body_of_path[p]
        s = result.shape_index.get(p)
        return shape_body[s] if s is not None else None

    for obj_type in (OT.RigidBody,) + _SHAPE_TYPES:
        for path, d in descs.get(obj_type, []):
            if not d.filteredCollisions:
                continue
            a = body_for(path)
            if obj_type != OT.RigidBody and str(path) not in body_of_path and a is not None and a >= 0:
                diag.add("collider-level filtered pairs are applied to the colliders' bodies", path)
            for other in d.filteredCollisions:
                b = body_for(other)
                if a is None or b is None or a == b:
                    continue
                if min(a, b) < 0:  # a body and a static collider (or two static colliders: nothing to do)
                    body, static = (a, other) if b < 0 else (b, path)
                    shape = result.shape_index.get(str(static))
                    if body >= 0 and shape is not None:
                        static_pairs.add((body, shape))
                    continue
                pairs.add((min(a, b), max(a, b)))
    for joint_type in JOINT_OBJECT_TYPES:
        for _, d in descs.get(joint_type, []):
            if d.collisionEnabled or not d.jointEnabled:
                continue
            body0, body1 = d.body0, d.body1
            a, b = body_for(body0) if not body0.isEmpty else -1, body_for(body1) if not body1.isEmpty else -1
            if a is not None and b is not None and a != b and min(a, b) >= 0:
                pairs.add((min(a, b), max(a, b)))
    builder.body_collision_filter_pairs.extend(sorted(pairs))
    builder.body_shape_collision_filter_pairs.extend(sorted(static_pairs))

    groups = descs.get(OT.CollisionGroup, [])
    if not groups:
        return
    # Merged groups share one bit.
    key_of = {}
    for path, d in groups:
        key_of[str(path)] = d.mergeGroupName or str(path)
    keys = sorted(set(key_of.values()))
    if len(keys) > MAX_COLLISION_GROUPS:
        for path, _ in groups:
            diag.add(f"more than {MAX_COLLISION_GROUPS} collision groups: collision groups are ignored", path)
        return
    bit = {k: 1 << (i + 1) for i, k in enumerate(keys)}
    all_bits = (1 << (len(keys) + 1)) - 1
    # Filtering is symmetric: A filtering B keeps B's colliders off A's too.
    filtered_with = {k: set() for k in keys}
    for path, d in groups:
        k = key_of[str(path)]
        listed = {key_of[str(g)] for g in d.filteredGroups if str(g) in key_of}
        # Read from the prim: USD 26.11's parser reports invertFilteredGroups as true when unauthored.
        invert = bool(UsdPhysics.CollisionGroup(stage.GetPrimAtPath(path)).GetInvertFilteredGroupsAttr().Get())
        for other in (set(keys) - listed) if invert else listed:
            filtered_with[k].add(other)
            filtered_with[other].add(k)
    affinity = {k: all_bits & ~sum(bit[o] for o in filtered_with[k]) for k in keys}
    for obj_type in _SHAPE_TYPES:
        for path, d in descs.get(obj_type, []):
            idx = result.shape_index.get(str(path))
            if idx is None or not d.collisionGroups:
                continue
            member = [key_of[str(g)] for g in d.collisionGroups if str(g) in key_of]
            if not member:
                continue
            if len(member) > 1:
                diag.add("colliders in several collision groups: filtered only where all their groups agree", path)
            contype, conaffinity = 0, all_bits
            for k in member:
                contype |= bit[k]
                conaffinity &= affinity.get(k, all_bits)
            builder.set_mujoco("shape", "geom_contype", idx, contype)
            builder.set_mujoco("shape", "geom_conaffinity", idx, conaffinity)


_MJC_TYPED = ("MjcActuator", "MjcTendon", "NewtonUsdContactPair")  # (MjcKeyframe: see usd/keyframes.py)


def _scan(stage, paths, type_names, exclude=(), resolver=None):
    """One traversal: the authored order of ``paths`` (``Sdf.Path``s of joints and rigid bodies; prim path
    string -> index), the prims of each of ``type_names`` (type name -> prims, in order), the site prims
    (under "sites"), the MuJoCo visual geoms (under "visuals") and the authored displayNames of the prims an
    element can be labelled with (under "display_names", a dict: prim path -> name). The subtrees of
    ``exclude`` are skipped. The ``resolver``'s views of the joints, rigid bodies and colliders are prepared on
    the way."""
    order, typed = {}, {t: [] for t in type_names}
    typed["sites"], typed["visuals"], display_names = [], [], {}
    typed["display_names"] = display_names
    wanted = set(paths)
    skip = {Sdf.Path(p) for p in exclude}
    site_apis = ("MjcSiteAPI", "NewtonSiteAPI")
    of_type = {}  # type name -> (its list in ``typed`` or None, whether it is a UsdPhysics joint type)
    prims = iter(Usd.PrimRange(stage.GetPseudoRoot(), Usd.TraverseInstanceProxies()))
    for prim in prims:
        path = None
        if skip:
            path = prim.GetPath()
            if path in skip:
                prims.PruneChildren()
                continue
        type_name = prim.GetTypeName()
        kind = of_type.get(type_name)
        if kind is None:
            joint = Usd.SchemaRegistry.GetTypeFromName(type_name).IsA(_JOINT_TYPE)
            kind = of_type[type_name] = (typed.get(type_name), joint)
        if kind[0] is not None:
            kind[0].append(prim)
        applied = prim.GetAppliedSchemas()
        # (the prims elements are labelled with: an applied schema's, a joint's or one of ``type_names``)
        if (applied or kind[0] is not None or kind[1]) and prim.HasAuthoredDisplayName():
            display_names[str(prim.GetPath())] = prim.GetDisplayName()
        # Only joints and rigid bodies are among ``paths`` (UsdPhysics' parser: IsA joint, RigidBodyAPI).
        if kind[1] or (applied and ("PhysicsRigidBodyAPI" in applied or "PhysicsCollisionAPI" in applied)):
            if path is None:
                path = prim.GetPath()
            if path in wanted:
                order[str(path)] = len(order)
            if resolver is not None:
                resolver.add_view(prim, path, type_name, applied)
        if applied:
            if site_apis[0] in applied or site_apis[1] in applied:
                typed["sites"].append(prim)
            elif VISUAL_API in applied and "PhysicsCollisionAPI" not in applied:
                typed["visuals"].append(prim)
    return order, typed


_JOINT_TYPE = Tf.Type.FindByName("UsdPhysicsJoint")


_SITE_SHAPES = {"Sphere": GeoType.SPHERE, "Capsule": GeoType.CAPSULE, "Cylinder": GeoType.CYLINDER, "Cube": GeoType.BOX}


def _import_sites(builder, sites, result, frame, ctx):
    """Prims with MjcSiteAPI or NewtonSiteAPI: sites on their nearest rigid-body ancestor (or the
    world), at their authored pose; their gprim type and size are kept for display."""
    if not sites:
        return
    cache = UsdGeom.XformCache(Usd.TimeCode.Default())
    s = frame.meters_per_unit
    for prim in sites:
        world = Gf.Transform(cache.GetLocalToWorldTransform(prim))
        pos, rot = frame.world_pose_to_sim(
            np.array(world.GetTranslation(), dtype=np.float64), gf_to_xyzw(world.GetRotation().GetQuat())
        )
        body, ancestor = -1, prim
        while ancestor and ancestor.GetPath() != Sdf.Path.absoluteRootPath:
            if str(ancestor.GetPath()) in result.body_index:
                body = result.body_index[str(ancestor.GetPath())]
                break
            ancestor = ancestor.GetParent()
        if body >= 0:
            pos, rot = transform_multiply(transform_inverse(builder.body_q[body]), (pos, rot))
        scale = np.array(world.GetScale(), dtype=np.float64) * s
        geo = _SITE_SHAPES.get(str(prim.GetTypeName()), GeoType.SPHERE)
        size = (0.01, 0.0, 0.0)
        if geo == GeoType.SPHERE:
            size = (float(prim.GetAttribute("radius").Get() or 0.01) * scale.max(), 0.0, 0.0)
        elif geo in (GeoType.CAPSULE, GeoType.CYLINDER):
            size = (float(prim.GetAttribute("radius").Get() or 0.01) * scale.max(),
                    0.5 * float(prim.GetAttribute("height").Get() or 0.02) * scale.max(), 0.0)  # fmt: skip
        elif geo == GeoType.BOX:
            size = tuple(0.5 * float(prim.GetAttribute("size").Get() or 0.02) * scale)
        site = builder.add_site(body, (pos, rot), geo_type=geo, size=size, label=str(prim.GetPath()))
        group = result.resolver.resolve(prim, props.SHAPE_GROUP, ctx)
        if group.kind != "default":
            builder.set_mujoco("site", "site_group", site, group.value)


def _import_mjc_typed(builder, typed, result, ctx):
    """MjcActuator, MjcTendon and NewtonUsdContactPair prims: every value resolved (authored, else the
    schema's fallback) into ``model.mujoco.actuator`` / ``tendon`` / ``contact_pair``, lists of dicts with
    "path", "values" and the relationship targets (prim paths): "target", "refSite", "sliderSite"
    (actuators), "wrap" (the tendon's ``mjc:path``), "sideSites" (tendons), "geom0" and "geom1" (pairs)."""
    for type_name, key, rels in (
        ("MjcActuator", "actuator", {"mjc:target": "target", "mjc:refSite": "refSite", "mjc:sliderSite": "sliderSite"}),
        ("MjcTendon", "tendon", {"mjc:path": "wrap", "mjc:sideSites": "sideSites"}),
        ("NewtonUsdContactPair", "contact_pair", {"newton:usd:geom0": "geom0", "newton:usd:geom1": "geom1"}),
    ):
        entries = []
        table = props.schema_properties(type_name)
        for prim in typed.get(type_name, []):
            resolved = result.resolver.resolve_all(prim, table.values(), ctx)
            values = {k.split(":", 1)[1]: r.value for k, r in resolved.items()}
            targets = {}
            for rel_name, entry_key in rels.items():
                rel = prim.GetRelationship(rel_name)
                targets[entry_key] = [str(t) for t in rel.GetTargets()] if rel else []
                if rel and rel.HasAuthoredTargets():
                    result.resolver.used.add((str(prim.GetPath()), rel_name))
            entries.append({"path": str(prim.GetPath()), "values": values, **targets})
        if entries:
            builder.mujoco[key] = entries


def _pick_root(b, edges, valid, roots):
    """The articulation root body of ``b``'s connected component if one is marked (``roots``: the
    body indices of the ArticulationRootAPI prims), else ``b``."""
    component, stack = {b}, [b]
    while stack:
        n = stack.pop()
        for i in edges[n]:
            _, _, _, b0, b1 = valid[i]
            for o in (b0, b1):
                if o >= 0 and o not in component:
                    component.add(o)
                    stack.append(o)
    marked = component & roots
    return min(marked) if marked else min(component)


_MUJOCO_DOF_VALUES = {
    "damping": "dof_damping",
    "stiffness": "dof_stiffness",
    "springref": "dof_springref",
    "ref": "dof_ref",
    "limit_margin": "dof_limit_margin",
    "solref_limit": "dof_solref_limit",
    "solimp_limit": "dof_solimp_limit",
    "solref_friction": "dof_solref_friction",
    "solimp_friction": "dof_solimp_friction",
    "springdamper": "dof_springdamper",
}


def _add_joint(builder, path, d, jt, b0, b1, reverse, frame, result, articulation_of, art_index, stage, ctx):
    """One joint of the tree: ``b0`` and ``b1`` are its bodies' indices (-1: the world), ``reverse`` whether
    body1 is the parent."""
    diag = result.diagnostics
    label = str(path)
    x0, x1 = _joint_frames(d, b0, b1, frame)
    parent, child, xp, xc = (b1, b0, x1, x0) if reverse else (b0, b1, x0, x1)
    kw = {}
    d6_axes = None
    cone_limit = cone_axis = cone_swing = None
    if jt in (JointType.REVOLUTE, JointType.PRISMATIC):
        axis = _AXIS_TUPLES[_axis_token(d.axis), reverse]
        ax = _joint_axis(axis, jt == JointType.REVOLUTE, d.limit, d.drive, frame, path, diag,
                         drive="angular" if jt == JointType.REVOLUTE else "linear", file=result.file)  # fmt: skip
        if ax is None:  # locked
            jt = JointType.FIXED
        else:
            kw.update(vars(ax))
    elif jt == JointType.D6:
        d6_axes = _d6_axes(d, reverse, frame, path, diag, result.file)
        if not d6_axes[0] and not d6_axes[1]:
            jt = JointType.FIXED
        elif _free_rotation(d6_axes, stage.GetPrimAtPath(path), result):
            jt, d6_axes = JointType.BALL, None
        elif len(d6_axes[1]) > 1:
            diag.add("generic joints with several free rotation axes are simulated as hinges in X, Y, Z order", path)
    elif jt == JointType.BALL:
        lim = d.limit
        cones = [a for a in (lim.lower, lim.upper) if math.isfinite(a) and a >= 0]
        if lim.enabled and cones:
            if "MjcJointAPI" not in stage.GetPrimAtPath(path).GetAppliedSchemas():
                # UsdPhysics leaves the twist about its axis free (said by the solvers that bound it); an
                # MjcJointAPI joint (MJCF's ball range) means MuJoCo's limit, the whole rotation.
                cone_axis = "XYZ".index(_axis_token(d.axis))
                if len(cones) == 2 and cones[0] != cones[1]:
                    # An elliptical cone (circular of the smaller angle where a solver says so): its swing
                    # limits about the axis after the cone axis (coneAngle1Limit: the tilt toward the axis after
                    # that) and about the one after that (coneAngle0Limit: the tilt toward the next axis).
                    cone_swing = (lim.upper * DEG, lim.lower * DEG)
            elif len(set(cones)) > 1:
                diag.add("elliptical cone limits are simulated as a circular cone of the smaller angle", path)
            cone_limit = min(cones) * DEG
    art = articulation_of.get(label)
    if art is not None:
        kw["articulation"] = art_index.setdefault(str(art), len(builder.articulation_label))
        if kw["articulation"] == len(builder.articulation_label):
            builder.articulation_label.append(str(art))
    # Per-DOF values (armature, damping, ...): unit conversions differ for linear and angular DOFs.
    if jt == JointType.FIXED:
        kinds = []
    elif jt == JointType.D6:
        kinds = [False] * len(d6_axes[0]) + [True] * len(d6_axes[1])
    else:
        kinds = [jt != JointType.PRISMATIC] * (3 if jt == JointType.BALL else 1)
    per_kind = {}
    if kinds:
        prim = stage.GetPrimAtPath(path)
        for angular in sorted(set(kinds)):
            per_kind[angular] = result.resolver.resolve_all(prim, props.JOINT_PROPERTIES, ctx.of_kind(angular), path)
    if jt in (JointType.REVOLUTE, JointType.PRISMATIC) and per_kind[kinds[0]]["ref"].kind == "authored":
        # With mjc:ref the limits are MuJoCo's, in qpos (mujoco-usd-converter writes MJCF's range so, and Newton
        # reads it so); the joint coordinate is qpos - ref.
        ref = per_kind[kinds[0]]["ref"].value
        for key in ("limit_lower", "limit_upper"):
            if kw.get(key) is not None:
                kw[key] -= ref
    armature = tuple(per_kind[a]["armature"].value for a in kinds) or 0.0
    friction = tuple(per_kind[a]["frictionloss"].value for a in kinds) or 0.0
    first_dof = len(builder.joint_armature)
    if jt == JointType.D6:
        j = builder.add_joint_d6(
            parent,
            child,
            xp,
            xc,
            linear_axes=d6_axes[0],
            angular_axes=d6_axes[1],
            armature=armature,
            friction=friction,
            label=label,
            articulation=kw.get("articulation", -1),
        )
    else:
        if jt == JointType.FIXED:  # a locked axis: only the articulation is left to pass on
            kw = {key: v for key, v in kw.items() if key == "articulation"}
        j = builder.add_joint(jt, parent, child, xp, xc, label=label, armature=armature, friction=friction, **kw)
    if cone_limit is not None:
        builder.set_mujoco("joint", "joint_cone_limit", j, cone_limit)
        if cone_axis is not None:  # (the twist axis UsdPhysics leaves free; none: MuJoCo's whole-rotation range)
            builder.set_mujoco("joint", "joint_cone_axis", j, cone_axis)
        if cone_swing is not None:
            builder.set_mujoco("joint", "joint_cone_swing", j, cone_swing)
    if d6_axes is not None:
        _d6_distance_limit(builder, d, parent, child, xp, xc, frame, result, path)
    for name, key in _MUJOCO_DOF_VALUES.items():
        for k_dof, angular in enumerate(kinds):
            r = per_kind[angular][name]
            if r.kind != "default":
                builder.set_mujoco("dof", key, first_dof + k_dof, r.value)
    for k_dof, angular in enumerate(kinds):
        _actuator_force_limit(builder, per_kind[angular], first_dof + k_dof, path, diag)
    result.joint_index[label] = j


def _actuator_force_limit(builder, resolved, dof, path, diag):
    """MuJoCo's clamp of the total actuator force on a joint (``mjc:actuatorfrclimited``, ``"auto"``: limited
    when min < max, as MuJoCo's autolimits) and ``mjc:actuatorgravcomp``, as ``dof_actfrcrange`` (set only
    where limited) and ``dof_actgravcomp``."""
    token = resolved["actuatorfrclimited"].value
    lo, hi = resolved["actuatorfrcrange_min"].value, resolved["actuatorfrcrange_max"].value
    if token == "true" and not lo < hi:
        diag.add("mjc:actuatorfrclimited with mjc:actuatorfrcrange min >= max: the force is not limited", path)
    elif token == "true" or (token == "auto" and lo < hi):
        builder.set_mujoco("dof", "dof_actfrcrange", dof, np.array([lo, hi], dtype=np.float64))
    if resolved["actuatorgravcomp"].value:
        builder.set_mujoco("dof", "dof_actgravcomp", dof, 1.0)


def _d6_distance_limit(builder, d, parent, child, xp, xc, frame, result, path):
    """A generic joint's ``PhysicsLimitAPI:distance``: the distance between the two joint frames' origins
    stays within [low, high] (a distance constraint beside the joint)."""
    lim = next((p.second for p in d.jointLimits if p.first == UsdPhysics.JointDOF.Distance), None)
    if lim is None or not lim.enabled:
        return
    s = frame.meters_per_unit
    lo = lim.lower * s if math.isfinite(lim.lower) and lim.lower > 0 else None
    hi = lim.upper * s if math.isfinite(lim.upper) and lim.upper >= 0 else None
    if lo is None and hi is None:
        return
    if lo is not None and hi is not None and lo > hi:
        result.diagnostics.add("distance limit with low > high: ignored", path)
        return
    result.distance_index[str(path)] = builder.add_distance_constraint(
        parent, child, xp[0], xc[0], min_distance=lo, max_distance=hi, label=str(path)
    )


_D6_AXES = (
    (UsdPhysics.JointDOF.TransX, False, (1.0, 0.0, 0.0)),
    (UsdPhysics.JointDOF.TransY, False, (0.0, 1.0, 0.0)),
    (UsdPhysics.JointDOF.TransZ, False, (0.0, 0.0, 1.0)),
    (UsdPhysics.JointDOF.RotX, True, (1.0, 0.0, 0.0)),
    (UsdPhysics.JointDOF.RotY, True, (0.0, 1.0, 0.0)),
    (UsdPhysics.JointDOF.RotZ, True, (0.0, 0.0, 1.0)),
)


def _d6_axes(d, reverse, frame, path, diag, file=None):
    """(linear axes, angular axes) of a generic (D6) joint, as the UsdPhysics spec defines them: an axis
    with no limit is free, one whose low > high is locked, any other is limited."""
    limits = {p.first: p.second for p in d.jointLimits}
    drives = {p.first: p.second for p in d.jointDrives}
    linear, angular = [], []
    for dof, is_angular, axis in _D6_AXES:
        vec = -np.array(axis) if reverse else np.array(axis)
        # An axis without a LimitAPI is free; one without a DriveAPI is not driven.
        ax = _joint_axis(vec, is_angular, limits.get(dof), drives.get(dof), frame, path, diag, report_locked=False,
                         drive=dof.name[:1].lower() + dof.name[1:], file=file)  # fmt: skip
        if ax is not None:
            (angular if is_angular else linear).append(ax)
    return linear, angular


_D6_ROT_STATES = frozenset(a for a in _STATE_ATTRIBUTES[JointType.D6] if a.startswith("state:rot"))


def _free_rotation(d6_axes, prim, result) -> bool:
    """Whether a generic joint's DOFs are the three rotations, each free (no limit, or limits of -180 and 180
    degrees or wider, which bound no rotation) and undriven, without authored initial angles: any rotation,
    which a ball joint gives without the gimbal lock of three hinges."""
    linear, angular = d6_axes
    half_turn = math.pi * (1.0 - 1e-6)
    return (
        not linear
        and len(angular) == 3
        and all(
            (a.limit_lower is None or a.limit_lower <= -half_turn)
            and (a.limit_upper is None or a.limit_upper >= half_turn)
            and a.target_mode is None
            for a in angular
        )
        and result.resolver.view(prim).authored.isdisjoint(_D6_ROT_STATES)
    )


def _joint_axis(axis, angular, lim, drv, frame, path, diag, report_locked=True, drive=None, file=None):
    """One DOF from a UsdPhysics limit and drive (either may be None); None when the limit locks it
    (low > high). ``drive``: the DriveAPI instance name (for messages)."""
    s, k = frame.meters_per_unit, frame.kilograms_per_unit
    unit = DEG if angular else s
    ax = JointAxis(axis=tuple(axis))
    if lim is not None and lim.enabled and (math.isfinite(lim.lower) or math.isfinite(lim.upper)):
        lo = lim.lower * unit if math.isfinite(lim.lower) else None
        hi = lim.upper * unit if math.isfinite(lim.upper) else None
        if lo is not None and hi is not None and lo > hi:
            if report_locked:
                diag.add("joint limit with lower > upper: the joint is locked at its authored position", path)
            return None
        ax.limit_lower, ax.limit_upper = lo, hi
    if drv is not None and drv.enabled:
        for name, value in (("stiffness", drv.stiffness), ("damping", drv.damping)):
            if not (value >= 0 and math.isfinite(value)):  # (NaN fails both)
                raise UsdInputError(f"must be a finite number >= 0, got {value}", file=file, prim=str(path),
                                    attribute=f"drive:{drive}:physics:{name}")  # fmt: skip
    if drv is not None and drv.enabled and (drv.stiffness > 0 or drv.damping > 0):
        # Force drives: gains per degree for angular drives (UsdPhysics), per stage unit for linear ones.
        # Acceleration drives: (deg/s^2)/deg and (unit/s^2)/unit are unit-free, scaled by the
        # effective inertia in the solver.
        gain_unit = 1.0 if drv.acceleration else (k * s * s / DEG) if angular else k
        ax.target_ke = drv.stiffness * gain_unit
        ax.target_kd = drv.damping * gain_unit
        ax.drive_acceleration = bool(drv.acceleration)
        ax.target_pos = drv.targetPosition * unit
        ax.target_vel = drv.targetVelocity * unit
        if math.isfinite(drv.forceLimit) and drv.forceLimit < 1e30:
            ax.effort_limit = drv.forceLimit * (k * s * s if angular else k * s)
        ax.target_mode = DriveMode(int(drv.stiffness > 0) | (int(drv.damping > 0) << 1))
    return ax
