"""PointInstancers of rigid-body prototypes: a body per active instance, with the prototype's colliders.

USD's UsdPhysics parser skips prototypes: each prototype is parsed on its own here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pxr import Gf, Usd, UsdGeom

from ..core.quat import gf_to_xyzw
from ..errors import UsdInputError
from .colliders import import_shape
from .descriptors import DEG, OT, SHAPE_TYPES, load_descriptors
from .scenes import JOINT_OBJECT_TYPES


@dataclass
class InstancedBody:
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


def instancer_prototypes(stage, instancers, result, owners=None) -> list:
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
        descs = load_descriptors(stage, [str(p) for p in protos], owners=owners)
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
            shapes = [(t, p, sd) for t in SHAPE_TYPES for p, sd in descs.get(t, []) if sd.rigidBody == path]
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
            out.append(InstancedBody(str(prim.GetPath()), str(path), d, shapes, materials, ids,
                                      transforms, velocities))  # fmt: skip
    return out


def add_instances(builder, stage, instanced, frame, materials, body_pose, result, shape_parts, ctx, frictions,
                  mass_source):  # fmt: skip
    """A body per active instance of each :class:`InstancedBody` of ``instanced``, labelled
    ``<instancer>[<index>]``, with the prototype's colliders (labelled below it). ``mass_source``: body index ->
    the prim whose mass properties it takes (the prototype's body), filled here; ``materials`` gains the
    prototypes' materials."""
    for proto in instanced:
        materials.update(proto.materials)
        for i, pos, rot, lin, ang in proto.instances(frame):
            label = f"{proto.instancer}[{i}]"
            b = builder.add_body((pos, rot), velocity=np.concatenate([lin, ang]), label=label)
            result.body_index[label] = b
            mass_source[b] = proto.body
            for obj_type, path, d in proto.shapes:
                below = str(path)[len(proto.body) :]
                import_shape(builder, stage, obj_type, path, d, frame, materials, body_pose, result, shape_parts,
                             ctx, body=b, label=label + below, frictions=frictions)  # fmt: skip
