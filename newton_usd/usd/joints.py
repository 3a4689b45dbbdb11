"""One joint of the tree as a builder joint (its frames, bodies, DOFs and their MuJoCo values), and
UsdPhysics distance joints as distance constraints.
"""

from __future__ import annotations

import math

import numpy as np
from pxr import Gf, Usd, UsdGeom

from ..core.quat import gf_to_xyzw, transform_multiply
from ..core.types import JointType
from ..errors import UsdInputError
from . import properties as props
from .descriptors import AXIS_VECTORS, DEG, axis_token
from .joint_axes import d6_axes as generic_axes
from .joint_axes import d6_distance_limit, free_rotation, joint_axis

# (axis token, reversed joint) -> the joint's axis as floats (reversed: negated, zeros included: -0.0)
_AXIS_TUPLES = {(k, rev): tuple((-np.array(v) if rev else np.array(v)).tolist()) for k, v in AXIS_VECTORS.items()
                for rev in (False, True)}  # fmt: skip


def joint_bodies(d, path, result):
    """A joint's ``(body0, body1)`` indices (-1: the world), or None (reported) when a target is no prim or
    both are the same body.

    A target that is a prim but no simulated body (a static collider, a disabled rigid body, a plain Xform)
    is the world by UsdPhysics, the joint's local pose given in that prim's frame (see :func:`joint_frames`);
    a collider under a rigid body is that body (USD's parser resolves it so)."""
    body0, body1 = d.body0, d.body1
    stage = result.stage
    for name, body in (("physics:body0", body0), ("physics:body1", body1)):
        # USD's parser leaves a target that is no prim empty, as if the joint were attached to the world.
        if not body or body.isEmpty:
            targets = stage.GetPrimAtPath(path).GetRelationship(name).GetForwardedTargets()
            if any(not stage.GetPrimAtPath(t) for t in targets):
                result.diagnostics.add(f"joint whose {name} targets no prim (deleted or misspelled?): dropped", path)
                return None
    b0, b1 = (-1 if (not b or b.isEmpty) else result.body_index.get(str(b), -1) for b in (body0, body1))
    if b0 == b1:
        why = "a body to itself" if b0 >= 0 else "no simulated rigid body (both ends static or the world)"
        result.diagnostics.add(f"joint connects {why}: ignored", path)
        return None
    return b0, b1


def _static_frame(stage, target):
    """The world pose (stage units, scale removed) of a joint target that is a prim but no simulated body,
    as (position, Warp quaternion); None for an empty target (the local pose is then a world pose)."""
    if not target or target.isEmpty:
        return None
    prim = stage.GetPrimAtPath(target)
    if not prim or not prim.IsA(UsdGeom.Xformable):
        return None
    xf = Gf.Transform(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default()))
    return np.array(xf.GetTranslation(), dtype=np.float64), gf_to_xyzw(Gf.Quatd(xf.GetRotation().GetQuat()))


def joint_frames(d, b0, b1, frame, stage):
    """A joint's two local frames in simulation units: relative to the world a frame is a world pose
    (converted like one; relative to a static prim, first composed with that prim's world pose); relative
    to a body it only scales."""
    s = frame.meters_per_unit
    poses = []
    for b, target, pos, rot in ((b0, d.body0, d.localPose0Position, d.localPose0Orientation),
                                (b1, d.body1, d.localPose1Position, d.localPose1Orientation)):  # fmt: skip
        x = (np.array(pos, dtype=np.float64), gf_to_xyzw(rot))
        if b >= 0:
            poses.append((x[0] * s, x[1]))
            continue
        anchor = _static_frame(stage, target)
        if anchor is not None:  # (USD's parser already scaled the local position by the prim's scale)
            x = transform_multiply(anchor, x)
        poses.append(frame.world_pose_to_sim(*x))
    return poses[0], poses[1]


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


def add_joint(builder, path, d, jt, b0, b1, reverse, frame, result, articulation_of, art_index, stage, ctx):
    """One joint of the tree: ``b0`` and ``b1`` are its bodies' indices (-1: the world), ``reverse`` whether
    body1 is the parent."""
    diag = result.diagnostics
    label = str(path)
    x0, x1 = joint_frames(d, b0, b1, frame, stage)
    parent, child, xp, xc = (b1, b0, x1, x0) if reverse else (b0, b1, x0, x1)
    kw = {}
    d6_axes = None
    cone_limit = cone_axis = cone_swing = None
    if jt in (JointType.REVOLUTE, JointType.PRISMATIC):
        axis = _AXIS_TUPLES[axis_token(d.axis), reverse]
        ax = joint_axis(axis, jt == JointType.REVOLUTE, d.limit, d.drive, frame, path, diag,
                         drive="angular" if jt == JointType.REVOLUTE else "linear", file=result.file)  # fmt: skip
        if ax is None:  # locked
            jt = JointType.FIXED
        else:
            kw.update(vars(ax))
    elif jt == JointType.D6:
        d6_axes = generic_axes(d, reverse, frame, path, diag, result.file)
        if not d6_axes[0] and not d6_axes[1]:
            jt = JointType.FIXED
        elif free_rotation(d6_axes, stage.GetPrimAtPath(path), result):
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
                cone_axis = "XYZ".index(axis_token(d.axis))
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
    soft_from_newton = _soft_limits(result, stage.GetPrimAtPath(path) if kinds else None, jt, kw, d6_axes, ctx)
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
        d6_distance_limit(builder, d, parent, child, xp, xc, frame, result, path)
    for name, key in _MUJOCO_DOF_VALUES.items():
        for k_dof, angular in enumerate(kinds):
            r = per_kind[angular][name]
            if r.kind != "default" and not (name == "solref_limit" and soft_from_newton[k_dof]):
                builder.set_mujoco("dof", key, first_dof + k_dof, r.value)
    for k_dof, angular in enumerate(kinds):
        _actuator_force_limit(builder, per_kind[angular], first_dof + k_dof, path, diag)
    result.joint_index[label] = j


def _soft_limits(result, prim, jt, kw, d6_axes, ctx) -> list:
    """Each DOF's soft limit (:func:`~newton_usd.usd.properties.joint_limit_gains`: ``newton:limitStiffness``,
    ``physxLimit:<axis>:stiffness`` and their dampings) onto its axis (``kw`` of a revolute or prismatic joint, the
    JointAxis of a generic one's); returns per DOF whether the stiffness is NewtonJointAPI's, which then wins over
    an authored ``mjc:solreflimit`` (newton > mjc > physx)."""
    if jt in (JointType.REVOLUTE, JointType.PRISMATIC):
        axes = [(kw, "angular" if jt == JointType.REVOLUTE else "linear", jt == JointType.REVOLUTE)]
    elif jt == JointType.D6:
        axes = [(vars(ax), ("trans" if k < len(d6_axes[0]) else "rot") + "XYZ"[int(np.argmax(np.abs(ax.axis)))],
                 k >= len(d6_axes[0])) for k, ax in enumerate(d6_axes[0] + d6_axes[1])]  # fmt: skip
    else:
        return [False] * (3 if jt == JointType.BALL else 0)
    from_newton = []
    for values, instance, angular in axes:
        stiffness, damping = props.joint_limit_gains(instance)
        gains = result.resolver.resolve_all(prim, (stiffness, damping), ctx.of_kind(angular))
        ke, kd = gains[stiffness.name], gains[damping.name]
        if values.get("limit_lower") is not None or values.get("limit_upper") is not None:
            values["limit_ke"], values["limit_kd"] = ke.value, kd.value
        from_newton.append(ke.kind == "authored" and ke.attribute.startswith("newton:"))
    return from_newton


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


def import_distance_joints(builder, joints, frame, result):
    """UsdPhysics distance joints: the distance between the joint frames' origins on the two bodies stays
    within the enabled limits (``physics:minDistance``/``maxDistance``, stage units), as a distance
    constraint beside the joint tree."""
    diag = result.diagnostics
    for path, d in joints:
        if not d.jointEnabled:
            diag.add("joint disabled (physics:jointEnabled = false): not simulated", path)
            continue
        bodies = joint_bodies(d, path, result)
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
        x0, x1 = joint_frames(d, b0, b1, frame, result.stage)
        result.distance_index[str(path)] = builder.add_distance_constraint(
            b0, b1, x0[0], x1[0], min_distance=lo, max_distance=hi, label=str(path)
        )
