"""Rigid bodies (PhysicsRigidBodyAPI): a builder body each, at its world pose, with its initial velocity.

Disabled bodies are not simulated (their colliders become static); kinematic bodies follow their prim's
(animated) transform. PhysX's bounds on a body's speeds (``physxRigidBody:maxLinearVelocity``,
``maxAngularVelocity``) are kept where authored; on a stage PhysX wrote (its scene or a body applies a PhysX API),
PhysX's own bound on the angular speed (100 rad/s) holds for the others too, as it does under PhysX.
"""

from __future__ import annotations

import math

import numpy as np

from ..core.quat import gf_to_xyzw
from . import properties as props
from .descriptors import DEG
from .resolver import Resolved


def _floats(vec) -> list:
    """A Gf vector's components as Python floats (as ``np.array(vec, dtype=np.float64)`` holds them)."""
    return np.array(vec, dtype=np.float64).tolist()


def import_bodies(builder, stage, bodies, frame, result):
    """A builder body per enabled rigid body of ``bodies`` (USD's ``[(path, RigidBodyDesc)]``), labelled by its
    prim path. Returns ``(body_pose, kinematic)``: every body's world pose in simulation units, the disabled
    ones' included (their colliders are static there), and the labels of the kinematic bodies."""
    diag = result.diagnostics
    body_pose = {}
    kinematic = set()
    physx = physx_written(stage, [p for p, _ in bodies], result.scene_path)
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
        prim = stage.GetPrimAtPath(path)
        gravcomp = result.resolver.resolve(prim, props.BODY_GRAVCOMP, path=path)
        if gravcomp.kind != "default":
            builder.set_mujoco("body", "body_gravcomp", idx, gravcomp.value)
        if not is_kinematic:
            _max_velocity(builder, idx, prim, path, result, physx)
    return body_pose, kinematic


def physx_written(stage, body_paths, scene_path) -> bool:
    """Whether PhysX wrote the stage: its physics scene or one of its rigid bodies applies a PhysX API schema
    (PhysxSchema is not registered here: the prim's type info keeps its APIs, ``GetAppliedSchemas`` does not)."""
    paths = ([scene_path] if scene_path else []) + list(body_paths)
    for path in paths:
        prim = stage.GetPrimAtPath(path)
        if prim and any(s.startswith("Physx") for s in prim.GetPrimTypeInfo().GetAppliedAPISchemas()):
            return True
    return False


def _max_velocity(builder, body, prim, path, result, physx: bool) -> None:
    """The body's speed bounds: authored, else PhysX's angular bound on a stage PhysX wrote."""
    values = result.resolver.resolve_all(prim, props.BODY_VELOCITY_BOUNDS, result.context, path)
    linear, angular = values["max_linear_velocity"], values["max_angular_velocity"]
    angular_value = angular.value
    if angular.kind == "default" and physx:
        angular_value = props.PHYSX_MAX_ANGULAR_VELOCITY
        rule = "PhysX's own bound: the stage applies PhysX schemas"  # (for usdsim explain)
        result.resolver.record(
            prim,
            props.BODY_MAX_ANGULAR_VELOCITY.name,
            Resolved(angular_value, "fallback", "physxRigidBody:maxAngularVelocity", schema=rule),
        )
    if math.isinf(linear.value) and math.isinf(angular_value):
        return
    builder.set_body_max_velocity(body, linear.value, angular_value)
