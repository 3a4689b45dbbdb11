"""Rigid bodies (PhysicsRigidBodyAPI): a builder body each, at its world pose, with its initial velocity.

Disabled bodies are not simulated (their colliders become static); kinematic bodies follow their prim's
(animated) transform.
"""

from __future__ import annotations

import numpy as np

from ..core.quat import gf_to_xyzw
from . import properties as props
from .descriptors import DEG


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
    return body_pose, kinematic
