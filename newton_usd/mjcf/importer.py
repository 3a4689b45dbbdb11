"""MJCF to ModelBuilder, through MuJoCo's own compiler.

``mujoco.MjSpec`` parses and compiles the file (includes, default classes, childclass, every
orientation form, compiler angle units, inertia from geoms, mesh loading are its job); this module
reads the compiled ``MjModel`` at qpos0 into builder calls, with the MuJoCo-only values in
``model.mujoco`` so that SolverMuJoCo rebuilds the same MuJoCo model.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import mujoco
import numpy as np

from ..core.builder import Heightfield, Mesh, ModelBuilder
from ..core.quat import quat_rotate, quat_to_matrix, transform_inverse, transform_multiply, wxyz_to_xyzw
from ..core.types import GeoType, JointType
from ..diagnostics import Diagnostics
from ..errors import UsdInputError
from .compiled import excluded_body_pairs, mesh_in_asset_frame, named
from .errors import mujoco_load_error
from .options import MjcfOptions, compile_with_options

_GEOM = {
    mujoco.mjtGeom.mjGEOM_PLANE: GeoType.PLANE,
    mujoco.mjtGeom.mjGEOM_SPHERE: GeoType.SPHERE,
    mujoco.mjtGeom.mjGEOM_CAPSULE: GeoType.CAPSULE,
    mujoco.mjtGeom.mjGEOM_CYLINDER: GeoType.CYLINDER,
    mujoco.mjtGeom.mjGEOM_BOX: GeoType.BOX,
    mujoco.mjtGeom.mjGEOM_MESH: GeoType.MESH,
}
OPTION_ENUMS = {
    "integrator": ("mjINT_", mujoco.mjtIntegrator),
    "cone": ("mjCONE_", mujoco.mjtCone),
    "solver": ("mjSOL_", mujoco.mjtSolver),
    "jacobian": ("mjJAC_", mujoco.mjtJacobian),
}
OPTION_VALUES = (
    "timestep", "impratio", "tolerance", "ls_tolerance", "noslip_tolerance", "ccd_tolerance", "density",
    "viscosity", "o_margin", "iterations", "ls_iterations", "noslip_iterations", "ccd_iterations",
    "sdf_iterations", "sdf_initpoints",
)  # fmt: skip
OPTION_VECTORS = ("wind", "magnetic", "o_solref", "o_solimp", "o_friction")


@dataclass
class MjcfImport:
    """What :func:`add_mjcf` imported: the compiled MuJoCo model, and name -> builder index maps."""

    file: str
    mj_model: mujoco.MjModel
    body_index: dict = field(default_factory=dict)
    joint_index: dict = field(default_factory=dict)
    shape_index: dict = field(default_factory=dict)
    diagnostics: Diagnostics = field(default_factory=Diagnostics)


def enum_token(value: int, enum, prefix: str) -> str:
    return enum(int(value)).name[len(prefix) :].lower()


def load_mjcf(source, options: MjcfOptions | None = None, diagnostics=None) -> tuple[mujoco.MjModel, str]:
    """Compile ``source`` (a path to an MJCF file, or MJCF XML text) with ``mujoco.MjSpec``, with the
    import ``options`` applied to the spec (see :mod:`newton_usd.mjcf.options`)."""
    text = str(source)
    is_xml = text.lstrip().startswith("<")
    name = "<xml string>" if is_xml else os.fspath(source)
    if not is_xml and not os.path.exists(name):
        raise UsdInputError("no such file", file=name)
    try:
        spec = mujoco.MjSpec.from_string(text) if is_xml else mujoco.MjSpec.from_file(name)
        return compile_with_options(spec, options, name, diagnostics), name
    except ValueError as e:
        raise mujoco_load_error(str(e), None if is_xml else name) from None


def add_mjcf(
    builder: ModelBuilder,
    source,
    *,
    label_prefix: str = "",
    fix_base: bool | None = None,
    import_scene: bool = True,
    self_collision: bool | None = None,
    collision_from_visuals: str | None = None,
    merge_meshes: bool = False,
    decomposition: dict | None = None,
) -> MjcfImport:
    """Import an MJCF model (path or XML text) into ``builder``.

    Bodies, joints (several per body stay stacked joints, in MJCF order), geoms with their contact
    parameters, inertials, actuators (``model.mujoco.actuator``), equalities (connect, weld, joint,
    tendon), keyframes, and the options and flags become the same MuJoCo model again when SolverMuJoCo
    builds it. Labels are the
    MJCF names (``label_prefix`` + name; unnamed elements get ``body_<i>``, ``joint_<i>``, ...).

    The import options, as in Isaac Sim's MJCF importer and ``usdsim convert`` (details in
    :mod:`newton_usd.mjcf.options`): ``fix_base`` None keeps the source, True deletes the articulated root bodies'
    free joints, False gives a free joint to each jointless root body whose subtree has joints;
    ``import_scene=False`` leaves the builder's gravity and MuJoCo options and flags as they are;
    ``self_collision=False`` excludes contacts between the bodies of one kinematic tree;
    ``collision_from_visuals`` ("convexHull", "convexDecomposition", "boundingSphere", "boundingCube")
    makes colliders of the visual geoms of bodies that have none (``decomposition``: CoACD arguments);
    ``merge_meshes`` merges each body's visual meshes of one group and material into one mesh geom.
    Masses do not change.
    """
    options = MjcfOptions(
        fix_base=fix_base, import_scene=import_scene, self_collision=self_collision,
        collision_from_visuals=collision_from_visuals, merge_meshes=merge_meshes, decomposition=decomposition,
    )  # fmt: skip
    diag = Diagnostics()
    m, file = load_mjcf(source, options, diag)
    result = MjcfImport(file=file, mj_model=m, diagnostics=diag)
    labels_before = set(builder.labels())
    if builder.source is None:
        builder.source = file
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    if import_scene:
        builder.gravity = np.array(m.opt.gravity, dtype=np.float64)
        _import_options(builder, m)

    # Bodies, at their qpos0 world poses, with their compiled inertials.
    body_of = {0: -1}
    for b in range(1, m.nbody):
        label = label_prefix + named(m, mujoco.mjtObj.mjOBJ_BODY, b, "body")
        r = quat_to_matrix(wxyz_to_xyzw(m.body_iquat[b]))
        inertia = r @ np.diag(m.body_inertia[b]) @ r.T
        idx = builder.add_body(
            (d.xpos[b].copy(), wxyz_to_xyzw(d.xquat[b])),
            mass=float(m.body_mass[b]),
            com=m.body_ipos[b].copy(),
            inertia=inertia,
            label=label,
            kinematic=bool(m.body_mocapid[b] >= 0),  # a mocap body: its pose is prescribed
        )
        body_of[b] = idx
        result.body_index[label] = idx

    _import_geoms(builder, m, body_of, label_prefix, result)
    _import_joints(builder, m, d, body_of, label_prefix, result)
    _import_sites(builder, m, body_of, label_prefix)
    _import_tendons(builder, m, label_prefix, result)
    _import_actuators(builder, m, label_prefix, result)
    _import_equalities(builder, m, body_of, label_prefix, result)
    _import_keyframes(builder, m, body_of, label_prefix, result)
    _import_contact_pairs(builder, m, label_prefix)
    for b1, b2 in excluded_body_pairs(m):
        if body_of[b1] >= 0 and body_of[b2] >= 0:
            builder.body_collision_filter_pairs.append(tuple(sorted((body_of[b1], body_of[b2]))))
    for b in range(1, m.nbody):
        if m.body_gravcomp[b]:
            builder.set_mujoco("body", "body_gravcomp", body_of[b], float(m.body_gravcomp[b]))
    if m.nsensor:
        diag.add("MJCF sensors are not imported yet", file)
    _record_names(builder, label_prefix, labels_before)
    diag.emit(file)
    return result


def _record_names(builder, label_prefix, labels_before) -> None:
    """Each new element's MJCF name whole (``partnet_100015/joint_0``: attach prefixes kept), where it is
    not its label's leaf: MuJoCo element names are the source's names (``builder.element_names``)."""
    for label in builder.labels():
        if label in labels_before or not label.startswith(label_prefix):
            continue
        name = label[len(label_prefix) :]
        if name != label.rsplit("/", 1)[-1]:
            builder.element_names[label] = name


def _import_options(builder, m):
    option = {}
    for name, (prefix, enum) in OPTION_ENUMS.items():
        option[name] = enum_token(getattr(m.opt, name), enum, prefix)
    for name in OPTION_VALUES:
        value = getattr(m.opt, name)
        option[name] = int(value) if isinstance(value, (int, np.integer)) else float(value)
    for name in OPTION_VECTORS:
        option[name] = tuple(float(x) for x in getattr(m.opt, name))
    flags = {}
    for name, bit in mujoco.mjtDisableBit.__members__.items():
        if name.startswith("mjDSBL_"):
            flags[name[7:].lower()] = not (m.opt.disableflags & int(bit))
    for name, bit in mujoco.mjtEnableBit.__members__.items():
        if name.startswith("mjENBL_"):
            flags[name[7:].lower()] = bool(m.opt.enableflags & int(bit))
    builder.mujoco["option"] = option
    builder.mujoco["flag"] = flags


def _import_geoms(builder, m, body_of, prefix, result):
    diag = result.diagnostics
    for g in range(m.ngeom):
        label = prefix + named(m, mujoco.mjtObj.mjOBJ_GEOM, g, "geom")
        gt = int(m.geom_type[g])
        size = m.geom_size[g]
        mesh = None
        if gt == mujoco.mjtGeom.mjGEOM_ELLIPSOID:
            geo, scale = GeoType.ELLIPSOID, tuple(float(x) for x in size)
        elif gt == mujoco.mjtGeom.mjGEOM_HFIELD:
            h = int(m.geom_dataid[g])
            nrow, ncol, adr = int(m.hfield_nrow[h]), int(m.hfield_ncol[h]), int(m.hfield_adr[h])
            mesh = Heightfield(m.hfield_data[adr : adr + nrow * ncol].reshape(nrow, ncol), m.hfield_size[h])
            geo, scale = GeoType.HFIELD, tuple(float(x) for x in m.hfield_size[h][:3])
        elif gt not in _GEOM:
            diag.add(f"{mujoco.mjtGeom(gt).name[7:].lower()} geoms are not imported yet", label)
            continue
        else:
            geo = _GEOM[gt]
            if geo == GeoType.PLANE:
                scale = (float(size[0]), float(size[1]), 0.0)
            elif geo == GeoType.SPHERE:
                scale = (float(size[0]), 0.0, 0.0)
            elif geo in (GeoType.CAPSULE, GeoType.CYLINDER):
                scale = (float(size[0]), float(size[1]), 0.0)
            elif geo == GeoType.BOX:
                scale = tuple(float(x) for x in size)
            else:
                vertices, faces, xform = mesh_in_asset_frame(m, g)
                mesh = Mesh(vertices, faces)
                scale = (1.0, 1.0, 1.0)
        if geo != GeoType.MESH:
            xform = (m.geom_pos[g].copy(), wxyz_to_xyzw(m.geom_quat[g]))
        body = body_of[int(m.geom_bodyid[g])]
        friction = m.geom_friction[g]
        idx = builder.add_shape(
            body,
            geo,
            xform,
            scale,
            mesh=mesh,
            mu=float(friction[0]),
            mu_torsional=float(friction[1]),
            mu_rolling=float(friction[2]),
            margin=float(m.geom_margin[g]),
            gap=float(m.geom_gap[g]),
            collision_enabled=bool(m.geom_contype[g] or m.geom_conaffinity[g]),
            label=label,
        )
        for key, values in (
            ("geom_contype", m.geom_contype),
            ("geom_conaffinity", m.geom_conaffinity),
            ("geom_condim", m.geom_condim),
            ("geom_priority", m.geom_priority),
            ("geom_solmix", m.geom_solmix),
            ("geom_solref", m.geom_solref),
            ("geom_solimp", m.geom_solimp),
            ("geom_group", m.geom_group),
        ):
            builder.set_mujoco("shape", key, idx, np.array(values[g], dtype=np.float64))
        result.shape_index[label] = idx


def _import_joints(builder, m, d, body_of, prefix, result):
    """Joints per body in MJCF order; a body without joints is welded to its parent."""
    for b in range(1, m.nbody):
        child = body_of[b]
        parent = body_of[int(m.body_parentid[b])]
        first, count = int(m.body_jntadr[b]), int(m.body_jntnum[b])
        x_wp = builder.body_q[parent] if parent >= 0 else (np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0]))
        x_wc = builder.body_q[child]
        if count == 0:
            rel = transform_multiply(transform_inverse(x_wp), x_wc)
            label = prefix + f"{named(m, mujoco.mjtObj.mjOBJ_BODY, b, 'body')}_weld"
            builder.add_joint(JointType.FIXED, parent, child, rel, None, label=label)
            continue
        for jid in range(first, first + count):
            label = prefix + named(m, mujoco.mjtObj.mjOBJ_JOINT, jid, "joint")
            jt = int(m.jnt_type[jid])
            if jt == mujoco.mjtJoint.mjJNT_FREE:
                j = builder.add_joint_free(
                    child, label=label, armature=float(m.dof_armature[m.jnt_dofadr[jid]]),
                    friction=float(m.dof_frictionloss[m.jnt_dofadr[jid]]),
                )  # fmt: skip
                first_dof = sum(len(qd) for qd in builder.joint_qd[:j])
                for k in range(6):
                    builder.set_mujoco("dof", "dof_damping", first_dof + k, float(m.dof_damping[m.jnt_dofadr[jid] + k]))
                result.joint_index[label] = j
                continue
            x_c = (m.jnt_pos[jid].copy(), np.array([0.0, 0.0, 0.0, 1.0]))
            x_p = transform_multiply(transform_multiply(transform_inverse(x_wp), x_wc), x_c)
            dof = int(m.jnt_dofadr[jid])
            common = {
                "armature": float(m.dof_armature[dof]),
                "friction": float(m.dof_frictionloss[dof]),
                "label": label,
            }
            if jt == mujoco.mjtJoint.mjJNT_BALL:
                j = builder.add_joint(JointType.BALL, parent, child, x_p, x_c, **common)
                if m.jnt_limited[jid]:
                    builder.set_mujoco("joint", "joint_cone_limit", j, float(m.jnt_range[jid][1]))
            else:
                ref = float(m.qpos0[m.jnt_qposadr[jid]])  # coordinates start at 0 there; MuJoCo's at ref
                limited = bool(m.jnt_limited[jid])
                kind = JointType.REVOLUTE if jt == mujoco.mjtJoint.mjJNT_HINGE else JointType.PRISMATIC
                j = builder.add_joint(
                    kind,
                    parent,
                    child,
                    x_p,
                    x_c,
                    axis=m.jnt_axis[jid].copy(),
                    limit_lower=float(m.jnt_range[jid][0]) - ref if limited else None,
                    limit_upper=float(m.jnt_range[jid][1]) - ref if limited else None,
                    **common,
                )
            first_dof = sum(len(qd) for qd in builder.joint_qd[:j])
            for k in range(len(builder.joint_qd[j])):
                mdof = dof + k
                scalar = jt in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE)
                for key, value in (
                    ("dof_damping", m.dof_damping[mdof]),
                    ("dof_stiffness", m.jnt_stiffness[jid]),
                    ("dof_ref", m.qpos0[m.jnt_qposadr[jid]] if scalar else np.nan),
                    ("dof_springref", m.qpos_spring[m.jnt_qposadr[jid]] if scalar else np.nan),
                    ("dof_limit_margin", m.jnt_margin[jid]),
                    ("dof_solref_limit", m.jnt_solref[jid]),
                    ("dof_solimp_limit", m.jnt_solimp[jid]),
                    ("dof_solref_friction", m.dof_solref[mdof]),
                    ("dof_solimp_friction", m.dof_solimp[mdof]),
                ):  # fmt: skip
                    builder.set_mujoco("dof", key, first_dof + k, np.array(value, dtype=np.float64))
                if m.jnt_actfrclimited[jid]:
                    builder.set_mujoco("dof", "dof_actfrcrange", first_dof + k, m.jnt_actfrcrange[jid].copy())
                if m.jnt_actgravcomp[jid]:
                    builder.set_mujoco("dof", "dof_actgravcomp", first_dof + k, 1.0)
            result.joint_index[label] = j


def tendon_path(m, t):
    """A compiled tendon's path as mujoco-usd-converter encodes it: ``(targets, values)`` where targets
    are (MuJoCo object type, id) pairs, unique, in first-use order, and values hold "path:indices"
    (target of each element), "path:coef" (fixed tendons), "path:segments" and "path:divisors"
    (pulley branches), "sideSites" ((type, id) pairs) and "sideSites:indices" (-1: none)."""
    adr, num = int(m.tendon_adr[t]), int(m.tendon_num[t])
    targets, indices, coef, segments, divisors, side, side_indices = [], [], [], [], [1.0], [], []
    segment = 0
    for w in range(adr, adr + num):
        kind, obj, prm = int(m.wrap_type[w]), int(m.wrap_objid[w]), float(m.wrap_prm[w])
        if kind == mujoco.mjtWrap.mjWRAP_PULLEY:
            if w == adr:
                divisors[0] = prm
            else:
                segment += 1
                divisors.append(prm)
            continue
        if kind == mujoco.mjtWrap.mjWRAP_JOINT:
            target, coef = (mujoco.mjtObj.mjOBJ_JOINT, obj), coef + [prm]
        elif kind == mujoco.mjtWrap.mjWRAP_SITE:
            target = (mujoco.mjtObj.mjOBJ_SITE, obj)
        else:  # sphere or cylinder geom, prm: its side site (-1: none)
            target = (mujoco.mjtObj.mjOBJ_GEOM, obj)
        if target not in targets:
            targets.append(target)
        indices.append(targets.index(target))
        segments.append(segment)
        if kind in (mujoco.mjtWrap.mjWRAP_SPHERE, mujoco.mjtWrap.mjWRAP_CYLINDER) and prm >= 0:
            site = (mujoco.mjtObj.mjOBJ_SITE, int(prm))
            if site not in side:
                side.append(site)
            side_indices.append(side.index(site))
        else:
            side_indices.append(-1)
    fixed = bool(coef) and len(coef) == len(indices)
    values = {"type": "fixed" if fixed else "spatial", "path:indices": tuple(indices)}
    if fixed:
        values["path:coef"] = tuple(coef)
    else:
        values["path:segments"] = tuple(segments)
        values["path:divisors"] = tuple(divisors)
        values["sideSites:indices"] = tuple(side_indices)
    return targets, side, values


def tendon_values(m, t) -> dict:
    """The MjcTendon attribute values (without the ``mjc:`` prefix) of compiled tendon ``t``, its path
    encoding included (see :func:`tendon_path`)."""
    limited = ("false", "true")
    _, _, path = tendon_path(m, t)
    return {
        **path,
        "limited": limited[int(m.tendon_limited[t])],
        "range:min": float(m.tendon_range[t][0]),
        "range:max": float(m.tendon_range[t][1]),
        "stiffness": float(m.tendon_stiffness[t]),
        "damping": float(m.tendon_damping[t]),
        "frictionloss": float(m.tendon_frictionloss[t]),
        "armature": float(m.tendon_armature[t]),
        "margin": float(m.tendon_margin[t]),
        "springlength": tuple(float(x) for x in m.tendon_lengthspring[t]),
        "solreflimit": tuple(float(x) for x in m.tendon_solref_lim[t]),
        "solimplimit": tuple(float(x) for x in m.tendon_solimp_lim[t]),
        "solreffriction": tuple(float(x) for x in m.tendon_solref_fri[t]),
        "solimpfriction": tuple(float(x) for x in m.tendon_solimp_fri[t]),
        "actuatorfrclimited": limited[int(m.tendon_actfrclimited[t])],
        "actuatorfrcrange:min": float(m.tendon_actfrcrange[t][0]),
        "actuatorfrcrange:max": float(m.tendon_actfrcrange[t][1]),
        "group": int(m.tendon_group[t]),
    }


def contact_pair_values(m, p) -> dict:
    """The NewtonUsdContactPair attribute values (without the ``newton:usd:`` prefix) of compiled contact
    pair ``p``."""
    return {
        "condim": int(m.pair_dim[p]),
        "friction": tuple(float(x) for x in m.pair_friction[p]),
        "solref": tuple(float(x) for x in m.pair_solref[p]),
        "solreffriction": tuple(float(x) for x in m.pair_solreffriction[p]),
        "solimp": tuple(float(x) for x in m.pair_solimp[p]),
        "margin": float(m.pair_margin[p]),
        "gap": float(m.pair_gap[p]),
    }


def _import_contact_pairs(builder, m, prefix):
    """MJCF contact pairs into ``model.mujoco.contact_pair`` (the same entries the USD importer makes
    from NewtonUsdContactPair prims): "path", "values" and the two geoms' shape labels, "geom0" and
    "geom1"."""
    entries = []
    for p in range(m.npair):
        geoms = [
            [prefix + named(m, mujoco.mjtObj.mjOBJ_GEOM, int(g), "geom")] for g in (m.pair_geom1[p], m.pair_geom2[p])
        ]
        label = prefix + named(m, mujoco.mjtObj.mjOBJ_PAIR, p, "pair")
        entries.append({"path": label, "values": contact_pair_values(m, p), "geom0": geoms[0], "geom1": geoms[1]})
    if entries:
        builder.mujoco["contact_pair"] = entries


_OBJ_FALLBACK = {mujoco.mjtObj.mjOBJ_JOINT: "joint", mujoco.mjtObj.mjOBJ_SITE: "site", mujoco.mjtObj.mjOBJ_GEOM: "geom"}


_SITE_TYPES = {
    mujoco.mjtGeom.mjGEOM_SPHERE: GeoType.SPHERE,
    mujoco.mjtGeom.mjGEOM_CAPSULE: GeoType.CAPSULE,
    mujoco.mjtGeom.mjGEOM_CYLINDER: GeoType.CYLINDER,
    mujoco.mjtGeom.mjGEOM_BOX: GeoType.BOX,
}


def _import_sites(builder, m, body_of, prefix):
    for i in range(m.nsite):
        site = builder.add_site(
            body_of[int(m.site_bodyid[i])],
            (m.site_pos[i].copy(), wxyz_to_xyzw(m.site_quat[i])),
            geo_type=_SITE_TYPES.get(int(m.site_type[i]), GeoType.SPHERE),
            size=m.site_size[i].copy(),
            label=prefix + named(m, mujoco.mjtObj.mjOBJ_SITE, i, "site"),
        )
        if m.site_group[i]:
            builder.set_mujoco("site", "site_group", site, int(m.site_group[i]))


def _import_tendons(builder, m, prefix, result):
    """Tendons into ``model.mujoco.tendon`` (the same entries the USD importer makes)."""
    entries = []
    for t in range(m.ntendon):
        label = prefix + named(m, mujoco.mjtObj.mjOBJ_TENDON, t, "tendon")
        targets, side, _ = tendon_path(m, t)
        wrap = [prefix + named(m, obj, i, _OBJ_FALLBACK[obj]) for obj, i in targets]
        side_sites = [prefix + named(m, obj, i, "site") for obj, i in side]
        entries.append({"path": label, "values": tendon_values(m, t), "wrap": wrap, "sideSites": side_sites})
    if entries:
        builder.mujoco["tendon"] = entries


def actuator_values(m, a) -> dict:
    """The MjcActuator attribute values (without the ``mjc:`` prefix) of compiled actuator ``a``."""
    limited = ("false", "true")
    return {
        "gainType": enum_token(m.actuator_gaintype[a], mujoco.mjtGain, "mjGAIN_"),
        "biasType": enum_token(m.actuator_biastype[a], mujoco.mjtBias, "mjBIAS_"),
        "dynType": enum_token(m.actuator_dyntype[a], mujoco.mjtDyn, "mjDYN_"),
        "gainPrm": tuple(float(x) for x in m.actuator_gainprm[a]),
        "biasPrm": tuple(float(x) for x in m.actuator_biasprm[a]),
        "dynPrm": tuple(float(x) for x in m.actuator_dynprm[a]),
        "gear": tuple(float(x) for x in m.actuator_gear[a]),
        "ctrlLimited": limited[int(m.actuator_ctrllimited[a])],
        "ctrlRange:min": float(m.actuator_ctrlrange[a][0]),
        "ctrlRange:max": float(m.actuator_ctrlrange[a][1]),
        "forceLimited": limited[int(m.actuator_forcelimited[a])],
        "forceRange:min": float(m.actuator_forcerange[a][0]),
        "forceRange:max": float(m.actuator_forcerange[a][1]),
        "actLimited": limited[int(m.actuator_actlimited[a])],
        "actRange:min": float(m.actuator_actrange[a][0]),
        "actRange:max": float(m.actuator_actrange[a][1]),
        "actDim": int(m.actuator_actnum[a]),
        "actEarly": bool(m.actuator_actearly[a]),
        "group": int(m.actuator_group[a]),
        "lengthRange:min": float(m.actuator_lengthrange[a][0]),
        "lengthRange:max": float(m.actuator_lengthrange[a][1]),
        "jointInParent": int(m.actuator_trntype[a]) == mujoco.mjtTrn.mjTRN_JOINTINPARENT,
    }


def _import_actuators(builder, m, prefix, result):
    entries = []
    for a in range(m.nu):
        trn = int(m.actuator_trntype[a])
        target_id = int(m.actuator_trnid[a][0])
        if trn in (mujoco.mjtTrn.mjTRN_JOINT, mujoco.mjtTrn.mjTRN_JOINTINPARENT):
            target = prefix + named(m, mujoco.mjtObj.mjOBJ_JOINT, target_id, "joint")
        elif trn == mujoco.mjtTrn.mjTRN_BODY:
            target = prefix + named(m, mujoco.mjtObj.mjOBJ_BODY, target_id, "body")
        elif trn == mujoco.mjtTrn.mjTRN_TENDON:
            target = prefix + named(m, mujoco.mjtObj.mjOBJ_TENDON, target_id, "tendon")
        elif trn == mujoco.mjtTrn.mjTRN_SITE:
            target = prefix + named(m, mujoco.mjtObj.mjOBJ_SITE, target_id, "site")
        else:
            name = named(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a, "actuator")
            result.diagnostics.add("slider-crank actuators are not imported yet", name)
            target = None
        ref_id = int(m.actuator_trnid[a][1])
        refsite = []
        if trn == mujoco.mjtTrn.mjTRN_SITE and ref_id >= 0:
            refsite = [prefix + named(m, mujoco.mjtObj.mjOBJ_SITE, ref_id, "site")]
        values = actuator_values(m, a)
        path = prefix + named(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a, "actuator")
        targets = [target] if target else []
        entries.append({"path": path, "values": values, "target": targets, "refSite": refsite, "sliderSite": []})
    if entries:
        builder.mujoco["actuator"] = entries


def _import_equalities(builder, m, body_of, prefix, result):
    """Connect and weld equalities (between bodies or sites), joint equalities and tendon equalities
    (``model.mujoco.tendon_equality``). Joint coordinates and tendon lengths are measured from qpos0 in
    MuJoCo as in the builder (a joint's ref is folded into the placement), so the polynomials carry over."""
    tendons = []
    for e in range(m.neq):
        kind, objtype = int(m.eq_type[e]), int(m.eq_objtype[e])
        label = prefix + named(m, mujoco.mjtObj.mjOBJ_EQUALITY, e, "equality")
        id1, id2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
        data = m.eq_data[e]
        if kind == mujoco.mjtEq.mjEQ_JOINT:
            joint = [result.joint_index[prefix + named(m, mujoco.mjtObj.mjOBJ_JOINT, j, "joint")] if j >= 0 else -1
                     for j in (id1, id2)]  # fmt: skip
            i = builder.add_equality_joint(joint[0], joint[1], data[0:5], active=bool(m.eq_active0[e]), label=label)
        elif kind == mujoco.mjtEq.mjEQ_TENDON:
            names = [prefix + named(m, mujoco.mjtObj.mjOBJ_TENDON, t, "tendon") if t >= 0 else None for t in (id1, id2)]
            tendons.append({
                "path": label, "tendon1": names[0], "tendon2": names[1], "position": len(builder.equality_type),
                "polycoef": tuple(float(x) for x in data[0:5]), "active": bool(m.eq_active0[e]),
                "solref": tuple(float(x) for x in m.eq_solref[e]), "solimp": tuple(float(x) for x in m.eq_solimp[e]),
            })  # fmt: skip
            continue
        elif kind not in (mujoco.mjtEq.mjEQ_CONNECT, mujoco.mjtEq.mjEQ_WELD):
            result.diagnostics.add(f"{mujoco.mjtEq(kind).name[5:].lower()} equalities are not imported", label)
            continue
        else:
            i = _add_body_equality(builder, m, e, body_of, objtype == mujoco.mjtObj.mjOBJ_SITE, label)
        builder.set_mujoco("equality", "eq_solref", i, np.array(m.eq_solref[e], dtype=np.float64))
        builder.set_mujoco("equality", "eq_solimp", i, np.array(m.eq_solimp[e], dtype=np.float64))
        if kind == mujoco.mjtEq.mjEQ_WELD:
            builder.set_mujoco("equality", "eq_torquescale", i, float(data[10]))
    if tendons:
        builder.mujoco["tendon_equality"] = tendons


def _add_body_equality(builder, m, e, body_of, sites: bool, label) -> int:
    """A connect or weld equality between two bodies, or between two sites (as the sites' bodies: a
    connect keeps the two site points together, a weld the two site frames)."""
    weld = int(m.eq_type[e]) == mujoco.mjtEq.mjEQ_WELD
    id1, id2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
    active = bool(m.eq_active0[e])
    if not sites:  # MuJoCo's compiled data: anchor, and (weld) relpose as (pos, wxyz quat)
        rp = m.eq_data[e][3:10]
        relpose = (rp[0:3].copy(), wxyz_to_xyzw(rp[3:7])) if weld else None
        return builder.add_equality(
            "weld" if weld else "connect", body_of[int(m.eq_obj1id[e])], body_of[int(m.eq_obj2id[e])],
            m.eq_data[e][0:3].copy(), active=active, relpose=relpose, label=label,
        )  # fmt: skip
    b1, b2 = body_of[int(m.site_bodyid[id1])], body_of[int(m.site_bodyid[id2])]
    x1 = (m.site_pos[id1].copy(), wxyz_to_xyzw(m.site_quat[id1]))
    x2 = (m.site_pos[id2].copy(), wxyz_to_xyzw(m.site_quat[id2]))
    if weld:  # body2 keeps the pose that makes the site frames coincide; it acts at site2
        relpose = transform_multiply(x1, transform_inverse(x2))
        return builder.add_equality("weld", b1, b2, x2[0], active=active, relpose=relpose, label=label)
    return builder.add_equality("connect", b1, b2, x1[0], anchor2=x2[0], active=active, label=label)


def _import_keyframes(builder, m, body_of, prefix, result):
    """MJCF keyframes as builder keyframes (joint coordinates relative to qpos0, as the builder's), with
    the MjcActuator controls and activations and the mocap poses in ``model.mujoco.keyframe``."""
    joints = []  # (builder joint, MuJoCo joint)
    for jid in range(m.njnt):
        label = prefix + named(m, mujoco.mjtObj.mjOBJ_JOINT, jid, "joint")
        if label in result.joint_index:
            joints.append((result.joint_index[label], jid))
    actuators = [prefix + named(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a, "actuator") for a in range(m.nu)]
    mocap = {int(m.body_mocapid[b]): builder.body_label[body_of[b]] for b in range(1, m.nbody)
             if m.body_mocapid[b] >= 0}  # fmt: skip
    extras = {}
    for k in range(m.nkey):
        label = prefix + named(m, mujoco.mjtObj.mjOBJ_KEY, k, "key")
        qpos, qvel = m.key_qpos[k], m.key_qvel[k]
        joint_q, joint_qd = {}, {}
        for j, jid in joints:
            adr, dadr, jt = int(m.jnt_qposadr[jid]), int(m.jnt_dofadr[jid]), int(m.jnt_type[jid])
            if jt == mujoco.mjtJoint.mjJNT_FREE:
                quat = wxyz_to_xyzw(qpos[adr + 3 : adr + 7])
                joint_q[j] = np.concatenate([qpos[adr : adr + 3], quat])
                joint_qd[j] = np.concatenate([qvel[dadr : dadr + 3], quat_rotate(quat, qvel[dadr + 3 : dadr + 6])])
            elif jt == mujoco.mjtJoint.mjJNT_BALL:
                joint_q[j], joint_qd[j] = wxyz_to_xyzw(qpos[adr : adr + 4]), qvel[dadr : dadr + 3].copy()
            else:
                joint_q[j], joint_qd[j] = [qpos[adr] - m.qpos0[adr]], [qvel[dadr]]
        builder.add_keyframe(label, joint_q, joint_qd, time=float(m.key_time[k]))
        extras[label] = {
            "ctrl": {actuators[a]: float(m.key_ctrl[k, a]) for a in range(m.nu)},
            "act": {
                actuators[a]: m.key_act[k, adr : adr + m.actuator_actnum[a]].copy()
                for a, adr in enumerate(m.actuator_actadr)
                if m.actuator_actnum[a]
            },  # fmt: skip
            "mocap": {  # key_mpos and key_mquat: nmocap positions and quaternions in a row
                body: (m.key_mpos[k, 3 * i : 3 * i + 3].copy(), wxyz_to_xyzw(m.key_mquat[k, 4 * i : 4 * i + 4]))
                for i, body in mocap.items()
            },
        }
    if extras:
        builder.mujoco["keyframe"] = extras


__all__ = ["MjcfImport", "MjcfOptions", "add_mjcf", "load_mjcf"]
