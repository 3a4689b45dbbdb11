"""What only MuJoCo has, with the mjc:* schemas: sites, tendons, MjcActuator prims, equalities (connect and
weld as joints excluded from articulations), keyframes and contact pairs."""

from __future__ import annotations

import mujoco
import numpy as np
from pxr import Gf, Tf, UsdGeom, UsdPhysics, Vt

from ...core.quat import transform_inverse, transform_multiply, wxyz_to_xyzw
from ..importer import (
    actuator_values,
    contact_pair_values,
    tendon_path,
    tendon_values,
)
from .prims import DEG, T, gf_quat, mjcf_name, set_attr, set_xform

_TENDON_TYPES = {
    "type": T.Token, "limited": T.Token, "actuatorfrclimited": T.Token, "group": T.Int,
    "path:coef": T.DoubleArray, "path:indices": T.IntArray, "springlength": T.DoubleArray,
    "path:segments": T.IntArray, "path:divisors": T.DoubleArray, "sideSites:indices": T.IntArray,
    "solreflimit": T.DoubleArray, "solimplimit": T.DoubleArray, "solreffriction": T.DoubleArray,
    "solimpfriction": T.DoubleArray,
}  # fmt: skip


def write_tendons(stage, m, root, names, joint_path, site_path, geom_path, diag) -> dict:
    """Tendons as MjcTendon prims under ``Tendons/``, their path encoded as mujoco-usd-converter does;
    returns MuJoCo tendon id -> prim path."""
    paths = {}
    lookup = {
        mujoco.mjtObj.mjOBJ_JOINT: joint_path,
        mujoco.mjtObj.mjOBJ_SITE: site_path,
        mujoco.mjtObj.mjOBJ_GEOM: geom_path,
    }
    for t in range(m.ntendon):
        label = mjcf_name(m, mujoco.mjtObj.mjOBJ_TENDON, t, "tendon")
        targets, side, _ = tendon_path(m, t)
        if any(i not in lookup[obj] for obj, i in targets + side):
            diag.add("tendons through elements that were not converted are not converted", label)
            continue
        scope = root.AppendChild("Tendons")
        if not stage.GetPrimAtPath(scope):
            UsdGeom.Scope.Define(stage, scope)
        prim = stage.DefinePrim(names.child(scope, label), "MjcTendon")
        prim.CreateRelationship("mjc:path", custom=False).SetTargets([lookup[o][i] for o, i in targets])
        if side:
            prim.CreateRelationship("mjc:sideSites", custom=False).SetTargets([site_path[i] for _, i in side])
        for key, value in tendon_values(m, t).items():
            type_name = _TENDON_TYPES.get(key, T.Double)
            if type_name in (T.DoubleArray, T.IntArray):
                value = list(value)
            set_attr(prim, f"mjc:{key}", type_name, value)
        paths[t] = prim.GetPath()
    return paths


def write_sites(stage, m, body_path, names) -> dict:
    """Sites as guide gprims with MjcSiteAPI and NewtonSiteAPI; returns MuJoCo site id -> prim path."""
    paths = {}
    for i in range(m.nsite):
        parent = body_path[int(m.site_bodyid[i])]
        path = names.child(parent, mjcf_name(m, mujoco.mjtObj.mjOBJ_SITE, i, "site"))
        kind, size = int(m.site_type[i]), m.site_size[i]
        if kind == mujoco.mjtGeom.mjGEOM_BOX:
            gprim = UsdGeom.Cube.Define(stage, path)
            gprim.CreateSizeAttr(2.0)
        elif kind in (mujoco.mjtGeom.mjGEOM_CAPSULE, mujoco.mjtGeom.mjGEOM_CYLINDER):
            gprim = (UsdGeom.Capsule if kind == mujoco.mjtGeom.mjGEOM_CAPSULE else UsdGeom.Cylinder).Define(stage, path)
            gprim.CreateAxisAttr(UsdGeom.Tokens.z)
            gprim.CreateRadiusAttr(float(size[0]))
            gprim.CreateHeightAttr(2.0 * float(size[1]))
        else:
            gprim = UsdGeom.Sphere.Define(stage, path)
            gprim.CreateRadiusAttr(float(size[0]))
        prim = gprim.GetPrim()
        set_xform(prim, (m.site_pos[i].copy(), wxyz_to_xyzw(m.site_quat[i])))
        if kind == mujoco.mjtGeom.mjGEOM_BOX:
            UsdGeom.Xformable(prim).AddScaleOp().Set(Gf.Vec3f(*map(float, size)))
        gprim.CreatePurposeAttr(UsdGeom.Tokens.guide)
        prim.ApplyAPI("MjcSiteAPI")
        prim.ApplyAPI("NewtonSiteAPI")
        set_attr(prim, "mjc:group", T.Int, int(m.site_group[i]))
        paths[i] = path
    return paths


_ACTUATOR_TYPES = {
    "gainType": T.Token, "biasType": T.Token, "dynType": T.Token, "ctrlLimited": T.Token,
    "forceLimited": T.Token, "actLimited": T.Token, "gainPrm": T.DoubleArray, "biasPrm": T.DoubleArray,
    "dynPrm": T.DoubleArray, "gear": T.DoubleArray, "actDim": T.Int, "actEarly": T.Bool, "group": T.Int,
    "jointInParent": T.Bool,
}  # fmt: skip


def write_actuators(stage, m, root, names, joint_path, body_path, diag, tendon_path=None, site_path=None):
    if not m.nu:
        return
    scope = root.AppendChild("Actuators")
    UsdGeom.Scope.Define(stage, scope)
    for a in range(m.nu):
        trn, target_id = int(m.actuator_trntype[a]), int(m.actuator_trnid[a][0])
        if trn in (mujoco.mjtTrn.mjTRN_JOINT, mujoco.mjtTrn.mjTRN_JOINTINPARENT) and target_id in joint_path:
            target = joint_path[target_id]
        elif trn == mujoco.mjtTrn.mjTRN_BODY:
            target = body_path[target_id]
        elif trn == mujoco.mjtTrn.mjTRN_TENDON and tendon_path and target_id in tendon_path:
            target = tendon_path[target_id]
        elif trn == mujoco.mjtTrn.mjTRN_SITE and site_path and target_id in site_path:
            target = site_path[target_id]
        else:
            diag.add("actuators on spatial tendons, slider-cranks and free joints are not converted yet", scope)
            continue
        prim = stage.DefinePrim(
            names.child(scope, mjcf_name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a, "actuator")), "MjcActuator"
        )
        prim.CreateRelationship("mjc:target", custom=False).SetTargets([target])
        ref_id = int(m.actuator_trnid[a][1])
        if trn == mujoco.mjtTrn.mjTRN_SITE and ref_id >= 0 and ref_id in site_path:
            prim.CreateRelationship("mjc:refSite", custom=False).SetTargets([site_path[ref_id]])
        for key, value in actuator_values(m, a).items():
            type_name = _ACTUATOR_TYPES.get(key, T.Double)
            set_attr(prim, f"mjc:{key}", type_name, list(value) if type_name == T.DoubleArray else value)


def write_equalities(stage, m, world, body_path, site_path, joint_path, tendon_path, root, names, diag):
    """Equalities: connect and weld as joints excluded from articulations (between bodies, or between
    the sites' bodies with frames at the sites), joint equalities as NewtonMimicAPI + MjcEqualityJointAPI
    on the follower joint, tendon equalities as NewtonUsdTendonEqualityAPI on the follower tendon."""
    scope = root.AppendChild("Equalities")
    mimics = set()
    for e in range(m.neq):
        kind = int(m.eq_type[e])
        name = mjcf_name(m, mujoco.mjtObj.mjOBJ_EQUALITY, e, "equality")
        id1, id2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
        if kind == mujoco.mjtEq.mjEQ_JOINT:
            if id1 not in joint_path or (id2 >= 0 and id2 not in joint_path) or id1 in mimics:
                why = "a second joint equality on one joint" if id1 in mimics else "a joint that was not converted"
                diag.add(f"joint equality on {why}: not converted", name)
                continue
            mimics.add(id1)
            _write_joint_equality(stage, m, e, joint_path)
            continue
        if kind == mujoco.mjtEq.mjEQ_TENDON:
            if id1 not in tendon_path or (id2 >= 0 and id2 not in tendon_path):
                diag.add("tendon equality on a tendon that was not converted: not converted", name)
                continue
            prim = stage.GetPrimAtPath(tendon_path[id1])
            instance = Tf.MakeValidIdentifier(name)
            prim.ApplyAPI("NewtonUsdTendonEqualityAPI", instance)
            prefix = f"newton:usd:tendonEquality:{instance}:"
            if id2 >= 0:
                prim.CreateRelationship(prefix + "leader", custom=False).SetTargets([tendon_path[id2]])
            set_attr(prim, prefix + "polycoef", T.DoubleArray, [float(x) for x in m.eq_data[e][0:5]])
            set_attr(prim, prefix + "enabled", T.Bool, bool(m.eq_active0[e]))
            set_attr(prim, prefix + "solref", T.DoubleArray, [float(x) for x in m.eq_solref[e]])
            set_attr(prim, prefix + "solimp", T.DoubleArray, [float(x) for x in m.eq_solimp[e]])
            continue
        if kind not in (mujoco.mjtEq.mjEQ_CONNECT, mujoco.mjtEq.mjEQ_WELD):
            diag.add(f"{mujoco.mjtEq(kind).name[5:].lower()} equalities are not converted", name)
            continue
        if not stage.GetPrimAtPath(scope):
            UsdGeom.Scope.Define(stage, scope)
        _write_body_equality(stage, m, e, world, body_path, names.child(scope, name))


def _write_joint_equality(stage, m, e, joint_path):
    """A joint equality on its follower joint: NewtonMimicAPI (enabled, leader, offset and ratio, the offset
    in the joint's USD unit) and MjcEqualityJointAPI (the higher coefficients, solref, solimp); without a
    leader (no ``newton:mimicJoint`` target), the joint is held at ``mjc:coef0`` (MuJoCo's unit)."""
    id1, id2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
    prim = stage.GetPrimAtPath(joint_path[id1])
    data = m.eq_data[e]
    prim.ApplyAPI("NewtonMimicAPI")
    set_attr(prim, "newton:mimicEnabled", T.Bool, bool(m.eq_active0[e]))
    if id2 >= 0:
        hinge = int(m.jnt_type[id1]) == mujoco.mjtJoint.mjJNT_HINGE
        prim.CreateRelationship("newton:mimicJoint", custom=False).SetTargets([joint_path[id2]])
        set_attr(prim, "newton:mimicCoef0", T.Float, float(data[0]) * (DEG if hinge else 1.0))
        set_attr(prim, "newton:mimicCoef1", T.Float, float(data[1]))
    else:
        set_attr(prim, "mjc:coef0", T.Double, float(data[0]))
    prim.ApplyAPI("MjcEqualityJointAPI")
    for k in (2, 3, 4):
        set_attr(prim, f"mjc:coef{k}", T.Double, float(data[k]))
    set_attr(prim, "mjc:solref", T.DoubleArray, [float(x) for x in m.eq_solref[e]])
    set_attr(prim, "mjc:solimp", T.DoubleArray, [float(x) for x in m.eq_solimp[e]])


def _write_body_equality(stage, m, e, world, body_path, path):
    """A connect (spherical joint) or weld (fixed joint) equality, excluded from articulations; between
    sites, the joint's body rels target the sites' bodies with the frames at the sites."""
    kind = int(m.eq_type[e])
    weld = kind == mujoco.mjtEq.mjEQ_WELD
    identity = np.array([0.0, 0.0, 0.0, 1.0])
    id1, id2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
    if int(m.eq_objtype[e]) == mujoco.mjtObj.mjOBJ_SITE:
        b1, b2 = int(m.site_bodyid[id1]), int(m.site_bodyid[id2])
        pos0, rot0 = m.site_pos[id1].copy(), wxyz_to_xyzw(m.site_quat[id1])
        pos1, rot1 = m.site_pos[id2].copy(), wxyz_to_xyzw(m.site_quat[id2])
        if not weld:  # a connect joins the points; the frames' rotations do not matter
            rot0 = rot1 = identity
    else:
        b1, b2 = id1, id2
        anchor1 = m.eq_data[e][0:3].copy()
        if weld:  # anchor on body2; the frames hold body2's pose relative to body1 (MuJoCo's relpose)
            rp = m.eq_data[e][3:10]
            rel = (rp[0:3].copy(), wxyz_to_xyzw(rp[3:7]))
            pos0, rot0 = transform_multiply(rel, (anchor1, identity))
            pos1, rot1 = anchor1, identity
        else:  # anchor on body1; body2's point is where it is at qpos0
            pos0, rot0 = anchor1, identity
            world_anchor = transform_multiply(world[b1], (anchor1, rot0))
            pos1, rot1 = transform_multiply(transform_inverse(world[b2]), world_anchor)
    joint = (UsdPhysics.FixedJoint if weld else UsdPhysics.SphericalJoint).Define(stage, path)
    if b1:
        joint.CreateBody0Rel().SetTargets([body_path[b1]])
    if b2:
        joint.CreateBody1Rel().SetTargets([body_path[b2]])
    joint.CreateLocalPos0Attr(Gf.Vec3f(*map(float, pos0)))
    joint.CreateLocalRot0Attr(gf_quat(rot0))
    joint.CreateLocalPos1Attr(Gf.Vec3f(*map(float, pos1)))
    joint.CreateLocalRot1Attr(gf_quat(rot1))
    joint.CreateExcludeFromArticulationAttr(True)
    joint.CreateCollisionEnabledAttr(True)  # an equality does not keep MuJoCo from colliding the two bodies
    joint.CreateJointEnabledAttr(bool(m.eq_active0[e]))
    prim = joint.GetPrim()
    prim.ApplyAPI("MjcEqualityWeldAPI" if weld else "MjcEqualityConnectAPI")
    set_attr(prim, "mjc:solref", T.DoubleArray, [float(x) for x in m.eq_solref[e]])
    set_attr(prim, "mjc:solimp", T.DoubleArray, [float(x) for x in m.eq_solimp[e]])
    if weld:
        set_attr(prim, "mjc:torqueScale", T.Float, float(m.eq_data[e][10]))


def write_keyframes(stage, m, root, names, diag):
    """Keyframes as MjcKeyframe prims under ``Keyframes/``, in MuJoCo's layout (qpos with each joint's
    ref, as ``mjc:ref``), read back in the layout of the bodies' and joints' prim order."""
    if not m.nkey:
        return
    scope = root.AppendChild("Keyframes")
    UsdGeom.Scope.Define(stage, scope)
    for k in range(m.nkey):
        prim = stage.DefinePrim(names.child(scope, mjcf_name(m, mujoco.mjtObj.mjOBJ_KEY, k, "key")), "MjcKeyframe")
        for attr, values in (
            ("qpos", m.key_qpos[k]), ("qvel", m.key_qvel[k]), ("act", m.key_act[k]), ("ctrl", m.key_ctrl[k]),
            ("mpos", m.key_mpos[k]), ("mquat", m.key_mquat[k]),
        ):  # fmt: skip
            if len(values):
                set_attr(prim, f"mjc:{attr}", T.DoubleArray, Vt.DoubleArray.FromNumpy(np.asarray(values, np.float64)))
        if m.key_time[k]:  # MjcKeyframe has no time: NewtonUsdKeyframeAPI holds it
            prim.ApplyAPI("NewtonUsdKeyframeAPI")
            set_attr(prim, "newton:usd:time", T.Double, float(m.key_time[k]))


def write_contact_pairs(stage, m, root, names, geom_path, diag):
    """MJCF contact pairs as NewtonUsdContactPair prims under ``ContactPairs/``."""
    if not m.npair:
        return
    scope = root.AppendChild("ContactPairs")
    UsdGeom.Scope.Define(stage, scope)
    types = {"condim": T.Int, "margin": T.Double, "gap": T.Double}
    for p in range(m.npair):
        name = mjcf_name(m, mujoco.mjtObj.mjOBJ_PAIR, p, "pair")
        if int(m.pair_geom1[p]) not in geom_path or int(m.pair_geom2[p]) not in geom_path:
            diag.add(
                f"contact pair {name!r} between geoms that were not converted: dropped", str(scope.AppendChild(name))
            )
            continue
        prim = stage.DefinePrim(names.child(scope, name), "NewtonUsdContactPair")
        for rel, g in (("newton:usd:geom0", m.pair_geom1[p]), ("newton:usd:geom1", m.pair_geom2[p])):
            prim.CreateRelationship(rel, custom=False).SetTargets([geom_path[int(g)]])
        for key, value in contact_pair_values(m, p).items():
            set_attr(
                prim,
                f"newton:usd:{key}",
                types.get(key, T.DoubleArray),
                value if key in types else Vt.DoubleArray(value),
            )
