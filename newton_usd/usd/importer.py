"""UsdPhysics stage to ModelBuilder: :func:`add_usd`, the story of an import, told in order.

USD's own parser (``UsdPhysics.LoadUsdPhysicsFromRange``) reads the standard schemas into descriptors
(:mod:`~newton_usd.usd.descriptors`); one traversal finds the prims it does not read (:mod:`~newton_usd.usd.scan`).
Then, each in the module named for it: the scene's gravity and settings (:mod:`~newton_usd.usd.scenes`), rigid
bodies (:mod:`~newton_usd.usd.bodies`), colliders (:mod:`~newton_usd.usd.colliders`), PointInstancer instances
(:mod:`~newton_usd.usd.instancers`), mass properties with the UsdPhysics precedence (:mod:`~newton_usd.usd.mass`),
joints oriented into trees rooted at the world and loop closures (:mod:`~newton_usd.usd.articulations`, one joint:
:mod:`~newton_usd.usd.joints`, its axes, limits and drives: :mod:`~newton_usd.usd.joint_axes`), initial joint states
(:mod:`~newton_usd.usd.joint_states`), articulation links placed where their joints put them
(:mod:`~newton_usd.usd.link_poses`), sites (:mod:`~newton_usd.usd.sites`), visual geoms
(:mod:`~newton_usd.usd.gprims`), MuJoCo actuators, tendons and contact pairs (:mod:`~newton_usd.usd.mjc_elements`),
Newton's joint actuators (:mod:`~newton_usd.usd.actuators`),
PhysX tendons (:mod:`~newton_usd.usd.physx_tendons`),
equalities (:mod:`~newton_usd.usd.equalities`), keyframes (:mod:`~newton_usd.usd.keyframes`), collision filters
(:mod:`~newton_usd.usd.collision_filters`), and environments replicated as worlds (:mod:`~newton_usd.usd.envs`).
Units and the up axis are converted once, where a value is read.
"""

from __future__ import annotations

import functools
import gc
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from pxr import Usd

from ..core.builder import ModelBuilder
from ..diagnostics import Diagnostics
from ..errors import UsdInputError
from .actuators import ACTUATOR_TYPE, import_actuators
from .articulations import import_joints
from .bodies import import_bodies
from .cables import import_cables
from .colliders import import_shape
from .collision_filters import import_collision_filters
from .deformable_links import ATTACHMENT_TYPE, FILTER_TYPE, import_deformable_links
from .deformables import Deformables, import_deformables
from .descriptors import OT, SHAPE_TYPES
from .envs import Environments, check_identical, find_environments, replicate_environments
from .equalities import import_joint_equalities, import_tendon_equalities
from .gprims import import_visual_geoms
from .granular import Grains, import_grains, say_uncoupled_bodies
from .instancers import add_instances, instancer_prototypes
from .joint_states import D6_AXIS_TOKENS, import_joint_states
from .joints import import_distance_joints
from .keyframes import import_keyframes
from .link_poses import place_articulation_links
from .mass import SHAPELESS_RADIUS, import_mass, resolve_massless
from .mjc_elements import import_mjc_typed
from .physx_tendons import import_physx_tendons
from .resolver import DIALECTS, Context, Resolver
from .scan import MJC_TYPED, record_display_names, scan_stage
from .scenes import (
    JOINT_OBJECT_TYPES,
    Scenes,
    choose_scene,
    import_scene,
    keep_scene_prims,
    physics_scenes,
    read_scenes,
    scene_gravity,
    scenes_to_import,
)
from .sites import import_sites
from .stage import StageFrame, open_stage

__all__ = [  # add_usd and its result; the rest are kept here for the callers that import them from here
    "D6_AXIS_TOKENS",
    "SHAPELESS_RADIUS",
    "UsdImport",
    "add_usd",
    "read_scenes",
    "scene_gravity",
    "scenes_to_import",
]


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
        context: the resolver's :class:`~newton_usd.usd.resolver.Context` of the import (units, the scene's
            angle unit), for reading a prim's values again (:mod:`~newton_usd.usd.live_values`).
        placed_links: ``(joint, child body, m, rad)`` for each articulation joint whose frames disagreed with its
            bodies' authored poses: its child link starts where the joint puts it, this far (and this turned) from
            its authored pose (:mod:`~newton_usd.usd.link_poses`).
        schemas: schema name -> the prim paths that apply it (or are of that type), for the schemas some engine
            does not honor (:mod:`~newton_usd.usd.honored`, which says them once the engine is known).
        grains: the granular Points prims imported as particles, and their MPM scene's settings
            (:class:`~newton_usd.usd.granular.Grains`).
        deformables: the deformable bodies imported (cloth, soft volumes: particles and elements) and those not
            (:class:`~newton_usd.usd.deformables.Deformables`).
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
    context: Context | None = None
    placed_links: list = field(default_factory=list)
    schemas: dict = field(default_factory=dict)
    grains: Grains = field(default_factory=Grains)
    deformables: Deformables = field(default_factory=Deformables)


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
    descs, owners = choose_scene(stage, scene, others, result)
    if builder.source is None:
        builder.source = file
    joint_paths = {p for t in JOINT_OBJECT_TYPES for p, _ in descs.get(t, [])}
    body_paths = {p for p, _ in descs.get(OT.RigidBody, [])}
    types = MJC_TYPED + ("MjcKeyframe", "PointInstancer", ACTUATOR_TYPE, ATTACHMENT_TYPE, FILTER_TYPE)
    order, typed = scan_stage(stage, joint_paths | body_paths, types, exclude=others, resolver=result.resolver)
    result.schemas = typed["schemas"]
    if owners is not None:
        keep_scene_prims(typed, result.scenes, result.scene_path)
    instanced = instancer_prototypes(stage, typed["PointInstancer"], result, owners)

    bodies = descs.get(OT.RigidBody, [])
    scenes = physics_scenes(stage)  # (grains and deformables: the first environment's, replicated with it)
    result.grains = import_grains(builder, stage, frame, file, result.scene_path, scenes[0] if scenes else None,
                                  result.resolver.used, exclude=others)  # fmt: skip
    say_uncoupled_bodies(result.grains, bodies, diag)
    result.deformables = import_deformables(builder, stage, frame, file, result.scene_path,
                                            scenes[0] if scenes else None, diag, exclude=others)  # fmt: skip
    if not bodies and not instanced and not result.grains.groups and not result.deformables.simulated \
            and not result.deformables.cables:
        _nothing_to_simulate(result, owners)

    ctx = result.context = import_scene(builder, stage, descs.get(OT.Scene, []), frame, result)
    materials = {str(p): d for p, d in descs.get(OT.RigidBodyMaterial, [])}

    # ---- bodies (disabled bodies are not simulated: their colliders become static)
    body_pose, kinematic = import_bodies(builder, stage, bodies, frame, result)

    # ---- shapes
    shape_parts = defaultdict(list)  # body index -> [(shape index, prim, material or None, prim path)]
    frictions = {}  # what the colliders share: their materials' values, read once (see import_shape)
    soft = result.deformables.prims()  # (a deformable's mesh with PhysicsCollisionAPI is not a static collider)
    for obj_type in SHAPE_TYPES:
        for path, d in descs.get(obj_type, []):
            if soft and str(path) in soft:
                continue
            import_shape(builder, stage, obj_type, path, d, frame, materials, body_pose, result, shape_parts, ctx,
                         frictions=frictions)  # fmt: skip

    # ---- PointInstancer instances of rigid-body prototypes: a body each, with the prototype's colliders
    mass_source = {b: p for p, b in result.body_index.items()}  # (the enabled bodies so far, in their order)
    add_instances(builder, stage, instanced, frame, materials, body_pose, result, shape_parts, ctx, frictions,
                  mass_source)  # fmt: skip

    # ---- mass properties, with the UsdPhysics precedence
    massless = []
    memo = {}
    for b, path in mass_source.items():
        import_mass(builder, stage, b, path, shape_parts[b], materials, frame, diag, file, massless, result.resolver,
                    memo)  # fmt: skip

    # ---- joints, oriented into trees rooted at the world
    import_joints(builder, stage, descs, frame, result, kinematic, ctx, order)
    import_distance_joints(builder, descs.get(OT.DistanceJoint, []), frame, result)
    resolve_massless(builder, massless, diag)
    builder.joint_q_from_body_q()
    if any(np.any(v) for v in builder.body_qd):
        builder.joint_qd_from_body_qd()
    states = import_joint_states(builder, stage, result, frame)
    import_sites(builder, typed["sites"], result, frame, ctx)
    import_visual_geoms(builder, typed["visuals"], result, frame, ctx)
    import_mjc_typed(builder, typed, result, ctx)
    import_actuators(builder, typed[ACTUATOR_TYPE], result)
    import_physx_tendons(builder, typed["physx_tendons"], result, frame, ctx)
    import_joint_equalities(builder, stage, result, ctx)
    import_tendon_equalities(builder, typed["MjcTendon"], result)
    import_keyframes(builder, typed["MjcKeyframe"], result, frame, order)
    # ---- the bodies moved to their joints' coordinates last: what is put on a body above read its authored pose
    if states:
        builder.body_q_from_joint_q()
    result.placed_links = place_articulation_links(builder, result)
    import_cables(builder, stage, frame, file, result.deformables.cables, result.body_index, diag,
                  result.resolver.used, typed[ATTACHMENT_TYPE])  # (pinned to bodies)
    import_deformable_links(builder, stage, descs, frame, result, typed)  # (their attachments to bodies, filters, ...)
    import_collision_filters(builder, stage, descs, result)
    record_display_names(builder, typed["display_names"], labels_before)
    if result.environments is not None:
        replicate_environments(builder, stage, descs, typed, result)
    diag.emit(file)
    return result


def _nothing_to_simulate(result, owners):
    """Raise the error for a stage (or the chosen scene) with no rigid body."""
    if owners is not None:
        elsewhere = [p for p in result.scenes.simulated() if p != result.scene_path]
        raise UsdInputError(
            f"no physics to simulate in PhysicsScene {result.scene_path}: it simulates no rigid body"
            + (f" (the stage's bodies are simulated by {', '.join(elsewhere)}: import with scene=PATH)"
               if elsewhere else ""),
            file=result.file,
        )  # fmt: skip
    raise UsdInputError(
        "no physics to simulate: no prim has PhysicsRigidBodyAPI applied (author UsdPhysics rigid bodies), no "
        "Points prim applies NewtonPointsDeformableSimAPI (grains), no Mesh PhysicsSurfaceDeformableSimAPI (cloth) and "
        "no TetMesh PhysicsVolumeDeformableSimAPI (soft volumes)",
        file=result.file,
    )
