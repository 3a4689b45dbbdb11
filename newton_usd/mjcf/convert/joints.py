"""Joints as UsdPhysics joints with MjcJointAPI values (several per body stay several, in order; a body without
joints gets a fixed joint), and which bodies must not collide (``<exclude>``, parent-child filtering)."""

from __future__ import annotations

import mujoco
import numpy as np
from pxr import Gf, UsdPhysics

from ...core.quat import transform_inverse, transform_multiply
from ..compiled import excluded_body_pairs
from .prims import DEG, T, gf_quat, mjcf_name, quat_x_to, set_attr


def _filterparent(m) -> bool:
    return not m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_FILTERPARENT


def _mujoco_filters(m, b1, b2) -> bool:
    """MuJoCo's own body-pair filter: the same weld body, or (with filterparent) a weld body and its
    weld parent, neither of them the world."""
    w1, w2 = int(m.body_weldid[b1]), int(m.body_weldid[b2])
    if w1 == w2:
        return True
    p1, p2 = int(m.body_weldid[m.body_parentid[w1]]), int(m.body_weldid[m.body_parentid[w2]])
    return _filterparent(m) and w1 != 0 and w2 != 0 and (w1 == p2 or w2 == p1)


def _joint_filters(m, b1, b2) -> bool:
    """Whether the USD joint the converter writes between parent and child keeps them apart (a weld;
    a joint with ``collisionEnabled`` left false: see :func:`write_joints`)."""
    for parent, child in ((b1, b2), (b2, b1)):
        if int(m.body_parentid[child]) == parent:
            return m.body_jntnum[child] == 0 or (_filterparent(m) and m.body_weldid[parent] != 0)
    return False


def write_collision_filters(stage, m, body_path, diag):
    """contype/conaffinity as UsdPhysics filtered pairs between bodies: a pair of bodies none of whose
    colliders may touch (by MuJoCo's rule (ct1 & ca2) || (ct2 & ca1)) gets a PhysicsFilteredPairsAPI.
    Body pairs MuJoCo filters by their welds (:func:`_mujoco_filters`) get one unless the joint written
    between them already keeps them apart. Mixed pairs and the world's colliders cannot be expressed
    this way and are reported."""
    colliders = {}
    for g in range(m.ngeom):
        if m.geom_contype[g] or m.geom_conaffinity[g]:
            colliders.setdefault(int(m.geom_bodyid[g]), []).append(g)

    def touch(g1, g2):
        return bool((m.geom_contype[g1] & m.geom_conaffinity[g2]) or (m.geom_contype[g2] & m.geom_conaffinity[g1]))

    bodies = sorted(colliders)
    for g in colliders.get(0, []):
        for b in bodies:
            if b and any(not touch(g, o) for o in colliders[b]):
                diag.add("contype/conaffinity between world geoms and bodies are not converted", body_path[0])
                break
    filtered = {}
    for b1, b2 in excluded_body_pairs(m):  # MJCF <exclude>
        if b1 and b2:
            filtered.setdefault(min(b1, b2), []).append(body_path[max(b1, b2)])
    for i, b1 in enumerate(bodies):
        for b2 in bodies[i + 1 :]:
            if not b1:
                continue
            if _mujoco_filters(m, b1, b2):  # MuJoCo never collides them: nor must USD
                if not _joint_filters(m, b1, b2) and body_path[b2] not in filtered.get(b1, []):
                    filtered.setdefault(b1, []).append(body_path[b2])
                continue
            pairs = [touch(g1, g2) for g1 in colliders[b1] for g2 in colliders[b2]]
            if not any(pairs) and body_path[b2] not in filtered.get(b1, []):
                filtered.setdefault(b1, []).append(body_path[b2])
            elif not all(pairs):
                diag.add(
                    "contype/conaffinity that filter only some colliders of a body pair are not converted",
                    body_path[b1],
                )
    for b1, targets in filtered.items():
        UsdPhysics.FilteredPairsAPI.Apply(stage.GetPrimAtPath(body_path[b1])).CreateFilteredPairsRel().SetTargets(
            targets
        )


def write_joints(stage, m, b, world, body_path, names, joint_path, diag):
    parent = int(m.body_parentid[b])
    first, count = int(m.body_jntadr[b]), int(m.body_jntnum[b])
    rel = transform_multiply(transform_inverse(world[parent]), world[b]) if parent else world[b]
    if count == 0:  # welded to its parent
        joint = UsdPhysics.FixedJoint.Define(stage, names.child(body_path[b], "weld"))
        if parent:
            joint.CreateBody0Rel().SetTargets([body_path[parent]])
        joint.CreateBody1Rel().SetTargets([body_path[b]])
        joint.CreateLocalPos0Attr(Gf.Vec3f(*map(float, rel[0])))
        joint.CreateLocalRot0Attr(gf_quat(rel[1]))
        return
    for jid in range(first, first + count):
        jt = int(m.jnt_type[jid])
        if jt == mujoco.mjtJoint.mjJNT_FREE:
            dof = int(m.jnt_dofadr[jid])
            if m.dof_damping[dof : dof + 6].any() or m.dof_armature[dof : dof + 6].any():
                diag.add("free-joint damping and armature have no USD joint to live on: not converted", body_path[b])
            continue
        path = names.child(body_path[b], mjcf_name(m, mujoco.mjtObj.mjOBJ_JOINT, jid, "joint"))
        anchor = m.jnt_pos[jid].copy()
        align = quat_x_to(m.jnt_axis[jid]) if jt != mujoco.mjtJoint.mjJNT_BALL else np.array([0.0, 0.0, 0.0, 1.0])
        frame0 = transform_multiply(rel, (anchor, align))
        if jt == mujoco.mjtJoint.mjJNT_BALL:
            joint = UsdPhysics.SphericalJoint.Define(stage, path)
            joint.CreateAxisAttr(UsdPhysics.Tokens.x)
            if m.jnt_limited[jid]:
                joint.CreateConeAngle0LimitAttr(float(m.jnt_range[jid][1]) * DEG)
                joint.CreateConeAngle1LimitAttr(float(m.jnt_range[jid][1]) * DEG)
        else:
            hinge = jt == mujoco.mjtJoint.mjJNT_HINGE
            joint = (UsdPhysics.RevoluteJoint if hinge else UsdPhysics.PrismaticJoint).Define(stage, path)
            joint.CreateAxisAttr(UsdPhysics.Tokens.x)
            if m.jnt_limited[jid]:  # MuJoCo's range, in qpos: with mjc:ref (below), as mujoco-usd-converter and Newton
                unit = DEG if hinge else 1.0
                joint.CreateLowerLimitAttr(float(m.jnt_range[jid][0] * unit))
                joint.CreateUpperLimitAttr(float(m.jnt_range[jid][1] * unit))
        if parent:
            joint.CreateBody0Rel().SetTargets([body_path[parent]])
            # UsdPhysics keeps jointed bodies from colliding; MuJoCo filters a parent-child pair only when
            # the parent is not welded to the world (and filterparent is on): say so where it collides.
            if not (_filterparent(m) and m.body_weldid[parent] != 0):
                joint.CreateCollisionEnabledAttr(True)
        joint.CreateBody1Rel().SetTargets([body_path[b]])
        joint.CreateLocalPos0Attr(Gf.Vec3f(*map(float, frame0[0])))
        joint.CreateLocalRot0Attr(gf_quat(frame0[1]))
        joint.CreateLocalPos1Attr(Gf.Vec3f(*map(float, anchor)))
        joint.CreateLocalRot1Attr(gf_quat(align))
        prim = joint.GetPrim()
        prim.ApplyAPI("MjcJointAPI")
        dof = int(m.jnt_dofadr[jid])
        values = [
            ("mjc:armature", T.Double, float(m.dof_armature[dof])),
            ("mjc:damping", T.Double, float(m.dof_damping[dof])),
            ("mjc:frictionloss", T.Double, float(m.dof_frictionloss[dof])),
            ("mjc:margin", T.Double, float(m.jnt_margin[jid])),
            ("mjc:solreflimit", T.DoubleArray, [float(x) for x in m.jnt_solref[jid]]),
            ("mjc:solimplimit", T.DoubleArray, [float(x) for x in m.jnt_solimp[jid]]),
            ("mjc:solreffriction", T.DoubleArray, [float(x) for x in m.dof_solref[dof]]),
            ("mjc:solimpfriction", T.DoubleArray, [float(x) for x in m.dof_solimp[dof]]),
        ]
        values.append(("mjc:stiffness", T.Double, float(m.jnt_stiffness[jid])))
        if m.jnt_actfrclimited[jid]:
            values.append(("mjc:actuatorfrclimited", T.Token, "true"))
            values.append(("mjc:actuatorfrcrange:min", T.Double, float(m.jnt_actfrcrange[jid][0])))
            values.append(("mjc:actuatorfrcrange:max", T.Double, float(m.jnt_actfrcrange[jid][1])))
        if m.jnt_actgravcomp[jid]:
            values.append(("mjc:actuatorgravcomp", T.Bool, True))
        if jt != mujoco.mjtJoint.mjJNT_BALL:  # MuJoCo's values: the USD coordinate is qpos - ref
            adr = m.jnt_qposadr[jid]
            values.append(("mjc:ref", T.Double, float(m.qpos0[adr])))
            values.append(("mjc:springref", T.Double, float(m.qpos_spring[adr])))
            # The coordinate at qpos0 is exactly 0: said outright (PhysX's PhysicsJointStateAPI attributes, the
            # API itself not applied: usd-core has no schema for it, as JointStateSync writes them), not left to
            # the float poses, which give +-1e-8 (a knee that starts at its limit would start past it).
            axis = "angular" if jt == mujoco.mjtJoint.mjJNT_HINGE else "linear"
            values.append((f"state:{axis}:physics:position", T.Float, 0.0))
            values.append((f"state:{axis}:physics:velocity", T.Float, 0.0))
        for name, type_name, value in values:
            set_attr(prim, name, type_name, value)
        joint_path[jid] = path
