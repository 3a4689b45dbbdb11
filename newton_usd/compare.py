"""Why does an asset behave differently from its MJCF? Compare the MuJoCo model native MuJoCo compiles
from the MJCF with the one newton_usd builds from the stage (``add_usd`` -> ``SolverMuJoCo.mj_model``),
element by element, then step both and set the divergence beside native MuJoCo's own sensitivity.

    usdsim compare MODEL.xml STAGE.usda [--steps N] [--rtol R] [--atol A] [--format human|json]

Elements (bodies, joints, geoms, sites, actuators, tendons, equalities) are matched by name (MuJoCo
names are the source's names: the MJCF name a converter keeps as the prim's displayName), the rest by
place: bodies by their world position at qpos0 and mass, joints in order on matched bodies, geoms and
sites within matched bodies by type, place and size, the others in order. What is equivalent does not
count: a quaternion's sign, the order and signs of the principal axes of an inertia (the tensors are
compared), the symmetries of a geom (a capsule's axis either way round, a box's axes up to sign), the
order of geoms within a body, the sizes a geom type does not use, a visual geom's contact parameters, and
how collisions are filtered (the geom pairs that may collide are compared, not the bitmasks, excludes and
pairs that say so). Fields differ when ``|ours - native| > atol + rtol * |native|``.

The dynamics: both models are stepped ``steps`` steps with zero control from qpos0 and from every hinge
and slide joint moved by ``offset``; the divergence is the largest distance between matched bodies. A
chaotic model amplifies any difference, so native MuJoCo is also stepped from the same start with every
coordinate moved by 1e-9, and with its geometry (poses, sizes, inertias) rounded to float32 as a USD file
stores them (once as is, three times moved by a random float32 round-off): its own sensitivity. A divergence
under ``dynamics_atol`` matches; one that the sensitivity
explains (the initial difference it implies, ``divergence / sensitivity * 1e-9``, is under 1e-6, or it is
at most 10 times the float32 model's) is chaos; the rest is a real difference.

Exit status of ``usdsim compare``: 0 when the models match, 1 when they differ, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from dataclasses import asdict, dataclass, field

import numpy as np

CHAOS_EPS = 1e-9
"""The perturbation of qpos0 that measures native MuJoCo's own sensitivity."""
CHAOS_LIMIT = 1e-6
"""An initial difference at most this big (float32 round-off of a stored value is ~1e-7) is chaos's."""
EXIT_MATCH, EXIT_DIFFER, EXIT_INPUT = 0, 1, 2

KINDS = ("body", "joint", "geom", "site", "actuator", "tendon", "equality", "mesh", "hfield")


@dataclass
class FieldDifference:
    """One field of one element whose values differ beyond the tolerance."""

    kind: str  # "body", "joint", ..., "option"
    name: str  # the native element's name (or "#id" when it has none)
    field: str
    native: list
    ours: list
    prim: str | None  # the prim (or MJCF element) that authored ours


@dataclass
class Divergence:
    """The dynamics from one start: our divergence from native MuJoCo and native's own sensitivity."""

    start: str  # "qpos0" or "offset joints"
    steps: int
    divergence: float  # m: the largest distance between matched bodies
    sensitivity: float  # m: native's, from the same start moved by CHAOS_EPS
    float32_sensitivity: float  # m: native's with its geometry rounded to float32 (as a USD file stores it)
    verdict: str  # "match", "chaos" or "differs"


@dataclass
class Comparison:
    """What :func:`compare` found."""

    native_file: str
    ours_file: str
    counts: dict = field(default_factory=dict)  # kind -> [native, ours, matched]
    unmatched: list = field(default_factory=list)  # [kind, "native"|"ours", name, prim]
    differences: list = field(default_factory=list)  # FieldDifference
    dynamics: list = field(default_factory=list)  # Divergence

    @property
    def differ(self) -> bool:
        return bool(self.unmatched or self.differences or any(d.verdict == "differs" for d in self.dynamics))

    def to_dict(self) -> dict:
        out = asdict(self)
        out["differ"] = self.differ
        return out


# ---------------------------------------------------------------- loading
def load_native(path):
    """The MuJoCo model native MuJoCo compiles from the MJCF file ``path``."""
    import mujoco

    from .errors import UsdInputError

    if not os.path.exists(path):
        raise UsdInputError("no such file", file=os.fspath(path))
    try:
        return mujoco.MjModel.from_xml_path(os.fspath(path))
    except ValueError as e:
        raise UsdInputError(f"native MuJoCo cannot load it: {str(e).strip().splitlines()[0]}", file=path) from None


def load_ours(path):
    """The MuJoCo model newton_usd simulates for ``path`` (a USD stage through ``add_usd``, an MJCF through
    ``add_mjcf``) and the prim behind each element: ``(mj_model, {(kind, id): prim path})``."""
    from .core.builder import ModelBuilder
    from .core.model import element_name
    from .solvers import SolverMuJoCo

    builder = ModelBuilder()
    if os.fspath(path).lower().endswith(".xml"):
        builder.add_mjcf(path)
    else:
        builder.add_usd(path)
    model = builder.finalize("cpu")
    solver = SolverMuJoCo(model, backend="cpu")
    m, smap = solver.mj_model, solver.spec_map
    prims = {}
    for labels, ids, kind in (
        (model.body_label, smap.body_mj, "body"),
        (model.shape_label, smap.shape_mj, "geom"),
        (model.site_label, smap.site_mj, "site"),
        (model.joint_label, smap.joint_mj, "joint"),
    ):
        for label, i in zip(labels, ids, strict=False):
            if i >= 0:
                prims[(kind, int(i))] = label
    dof_joint = np.searchsorted(model.joint_qd_start.numpy(), np.arange(model.joint_dof_count), side="right") - 1
    for dof, i in enumerate(smap.dof_mj):
        if i >= 0:
            prims[("joint", int(i))] = model.joint_label[dof_joint[dof]]
    for a, dof in enumerate(smap.actuator_dof):
        prims[("actuator", a)] = model.joint_label[dof_joint[dof]]
    for entry, i in zip(getattr(model.mujoco, "actuator", None) or [], smap.mjc_actuator_ctrl, strict=False):
        if i >= 0:
            prims[("actuator", int(i))] = entry["path"]
    import mujoco

    for kind, labels, obj in (
        ("tendon", [e["path"] for e in getattr(model.mujoco, "tendon", None) or []], mujoco.mjtObj.mjOBJ_TENDON),
        ("equality", list(model.equality_label), mujoco.mjtObj.mjOBJ_EQUALITY),
    ):
        for label in labels:
            i = mujoco.mj_name2id(m, obj, element_name(model, label))
            if i >= 0:
                prims.setdefault((kind, i), label)
    return m, prims


# ---------------------------------------------------------------- matching
def _obj(kind):
    import mujoco

    return getattr(mujoco.mjtObj, f"mjOBJ_{kind.upper()}")


def _count(m, kind) -> int:
    return {"body": m.nbody, "joint": m.njnt, "geom": m.ngeom, "site": m.nsite, "actuator": m.nu,
            "tendon": m.ntendon, "equality": m.neq, "mesh": m.nmesh, "hfield": m.nhfield}[kind]  # fmt: skip


def _name(m, kind, i) -> str:
    import mujoco

    return mujoco.mj_id2name(m, _obj(kind), i) or ""


def match_elements(native, ours) -> dict:
    """kind -> {native id: our id}: by name, then by place (see the module's docstring)."""
    import mujoco

    matches = {}
    for kind in KINDS:
        names_ours = {}
        for i in range(_count(ours, kind)):
            names_ours.setdefault(_name(ours, kind, i), []).append(i)
        pairs = {}
        for i in range(_count(native, kind)):
            candidates = names_ours.get(_name(native, kind, i) or None, [])
            if len(candidates) == 1:
                pairs[i] = candidates[0]
        matches[kind] = pairs
    body = matches["body"]
    body[0] = 0
    dn, do = mujoco.MjData(native), mujoco.MjData(ours)
    mujoco.mj_kinematics(native, dn)
    mujoco.mj_kinematics(ours, do)
    taken = set(body.values())
    for b in range(1, native.nbody):  # bodies: the nearest at qpos0 of the same mass
        if b in body:
            continue
        free = [c for c in range(1, ours.nbody) if c not in taken
                and abs(ours.body_mass[c] - native.body_mass[b]) <= 1e-5 * max(1.0, native.body_mass[b])]  # fmt: skip
        if free:
            c = min(free, key=lambda c: float(np.linalg.norm(do.xpos[c] - dn.xpos[b])))
            if np.linalg.norm(do.xpos[c] - dn.xpos[b]) < 1e-4:
                body[b] = c
                taken.add(c)
    _match_on_bodies(native, ours, matches["joint"], body, "jnt", lambda m, i: (int(m.jnt_type[i]),))
    for kind, prefix in (("geom", "geom"), ("site", "site")):
        _match_on_bodies(native, ours, matches[kind], body, prefix, _placement_key(prefix))
    for kind in ("mesh", "hfield"):  # through the geoms that use them (a converter may give each its own)
        through = _data_through_geoms(native, ours, matches["geom"], kind)
        named = {i: c for i, c in matches[kind].items() if i not in through and c not in set(through.values())}
        matches[kind] = through | named
    for kind in ("actuator", "tendon", "equality"):  # the rest in order
        pairs = matches[kind]
        rest_ours = [i for i in range(_count(ours, kind)) if i not in set(pairs.values())]
        rest_native = [i for i in range(_count(native, kind)) if i not in pairs]
        pairs.update(zip(rest_native, rest_ours, strict=False))
    return matches


_DATA_GEOM_TYPE = {"mesh": 7, "hfield": 1}  # mjtGeom of the geoms whose geom_dataid points at one


def _data_through_geoms(native, ours, geoms, kind) -> dict:
    """Native mesh (or height field) id -> ours: the data of matched geoms of that type, first use first."""
    gtype, pairs, taken = _DATA_GEOM_TYPE[kind], {}, set()
    for g, c in sorted(geoms.items()):
        i, j = int(native.geom_dataid[g]), int(ours.geom_dataid[c])
        if int(native.geom_type[g]) == gtype == int(ours.geom_type[c]) and i >= 0 and j >= 0:
            if i not in pairs and j not in taken:
                pairs[i] = j
                taken.add(j)
    return pairs


def data_copies(native, ours, matches, kind) -> set:
    """Our meshes (or height fields) that copy a matched one: used by a matched geom whose native geom's
    data is matched to another of ours (native shares one mesh between geoms, ours gives each its own)."""
    gtype, copies = _DATA_GEOM_TYPE[kind], set()
    matched = set(matches[kind].values())
    for g, c in matches["geom"].items():
        i, j = int(native.geom_dataid[g]), int(ours.geom_dataid[c])
        if int(native.geom_type[g]) == gtype == int(ours.geom_type[c]) and i in matches[kind] and j not in matched:
            copies.add(j)
    return copies


def _placement_key(prefix):
    def key(m, i):
        return (int(getattr(m, f"{prefix}_type")[i]),)

    return key


def _match_on_bodies(native, ours, pairs, body, prefix, key):
    """Unmatched elements of matched bodies: of the same ``key`` (type), in order for joints, by the
    nearest place and size for geoms and sites (so that their order within a body does not count)."""
    taken = set(pairs.values())
    bodyid_n, bodyid_o = getattr(native, f"{prefix}_bodyid"), getattr(ours, f"{prefix}_bodyid")
    n_native = len(bodyid_n)
    for i in range(n_native):
        if i in pairs or int(bodyid_n[i]) not in body:
            continue
        c_body = body[int(bodyid_n[i])]
        free = [c for c in np.nonzero(bodyid_o == c_body)[0] if c not in taken and key(ours, c) == key(native, i)]
        if not free:
            continue
        if prefix == "jnt":
            c = free[0]
        else:
            pos_n, size_n = getattr(native, f"{prefix}_pos")[i], getattr(native, f"{prefix}_size")[i]

            def distance(c, pos_n=pos_n, size_n=size_n):
                return float(np.linalg.norm(getattr(ours, f"{prefix}_pos")[c] - pos_n)
                             + np.linalg.norm(getattr(ours, f"{prefix}_size")[c] - size_n))  # fmt: skip

            c = min(free, key=distance)
        pairs[i] = int(c)
        taken.add(int(c))


# ---------------------------------------------------------------- normalised fields
def _quat(q):
    """A quaternion (w x y z) with the sign that makes its first non-zero component positive."""
    q = np.asarray(q, dtype=np.float64)
    nz = np.nonzero(np.abs(q) > 1e-12)[0]
    return q if not len(nz) or q[nz[0]] > 0 else -q


def _matrix(q):
    import mujoco

    r = np.zeros(9)
    mujoco.mju_quat2Mat(r, np.asarray(q, dtype=np.float64))
    return r.reshape(3, 3)


def _axes_up_to_sign(r, columns):
    """The given columns of a rotation matrix, each signed so that its largest component is positive."""
    out = []
    for k in columns:
        c = r[:, k]
        lead = np.nonzero(np.abs(c) >= np.abs(c).max() - 1e-6)[0][0]  # (the first of equal components decides)
        out.append(c * (1.0 if c[lead] >= 0 else -1.0))
    return np.concatenate(out)


def _geom_orientation(m, g):
    """A geom's orientation up to its symmetries."""
    import mujoco

    t, r = int(m.geom_type[g]), _matrix(m.geom_quat[g])
    if t == mujoco.mjtGeom.mjGEOM_SPHERE:
        return np.zeros(0)
    if t in (mujoco.mjtGeom.mjGEOM_CAPSULE, mujoco.mjtGeom.mjGEOM_CYLINDER):
        return _axes_up_to_sign(r, (2,))
    if t in (mujoco.mjtGeom.mjGEOM_BOX, mujoco.mjtGeom.mjGEOM_ELLIPSOID):
        return _axes_up_to_sign(r, (0, 1, 2))
    if t == mujoco.mjtGeom.mjGEOM_PLANE:
        return r[:, 2]
    if t == mujoco.mjtGeom.mjGEOM_MESH:  # the mesh's principal frame: compared as its vertices in the body
        return np.zeros(0)
    return _quat(m.geom_quat[g])


def _inertia(m, b):
    """A body's inertia tensor over its largest moment (where a principal-axes quaternion a USD file stores as
    floats leaves ~1e-7 of it off the diagonal), and that moment; none for a massless body."""
    if m.body_mass[b] <= 0:
        return np.zeros(0)
    r = _matrix(m.body_iquat[b])
    scale = max(float(np.max(m.body_inertia[b])), 1e-300)
    return np.concatenate([(r @ np.diag(m.body_inertia[b] / scale) @ r.T).ravel(), [scale]])


def _has_mass(m, b) -> bool:
    return m.body_mass[b] > 0  # (a massless body's inertial frame is nothing)


def _scalar_joint(m, j) -> bool:
    return int(m.jnt_type[j]) in (2, 3)  # slide, hinge


def _per_dof(name):
    """Joint j's (first) DOF's value of the MjModel array ``name``."""
    return lambda m, j: getattr(m, name)[int(m.jnt_dofadr[j])]


def _per_coordinate(name):
    """A hinge or slide joint's value of the MjModel array ``name`` (per qpos coordinate); none for others."""
    return lambda m, j: getattr(m, name)[int(m.jnt_qposadr[j])] if _scalar_joint(m, j) else np.zeros(0)


def _attr(name, when=None):
    """Element i's value of the MjModel array ``name``; none where ``when`` (an array name or a function of
    (m, i)) is false, e.g. a range that is not limited."""

    def value(m, i):
        if when is not None and not (when(m, i) if callable(when) else getattr(m, when)[i]):
            return np.zeros(0)
        return getattr(m, name)[i]

    return value


_GEOM_SIZES = {0: 0, 1: 0, 2: 1, 3: 2, 4: 3, 5: 2, 6: 3, 7: 0}
"""The sizes a geom type uses (plane: none, its size is only drawn; height field and mesh: their data's;
sphere: the radius; capsule and cylinder: radius and half-length; ellipsoid and box: three)."""


def _collides(m, g) -> bool:
    """Whether a geom can touch anything by its bitmasks (a visual geom's contact parameters do not count)."""
    return bool(m.geom_contype[g] or m.geom_conaffinity[g])


_EQ_DATA = {0: 6, 1: 11, 2: 5, 3: 5}
"""The eq_data values an equality type uses (connect: two anchors; weld: anchors, relative pose, torque
scale; joint and tendon: the polynomial)."""


def _mesh_vertices(m, i):
    v = m.mesh_vert[m.mesh_vertadr[i] : m.mesh_vertadr[i] + m.mesh_vertnum[i]]
    return np.asarray(v, dtype=np.float64)


def _mesh_size(m, i):
    """A mesh's size in any frame: its vertices' farthest distance from their mean and their rms spreads
    along the principal axes, largest first (MuJoCo places a mesh on principal axes, whose choice is
    arbitrary where two moments are equal, a disc's or a cube's)."""
    v = _mesh_vertices(m, i)
    if not len(v):
        return np.zeros(4)
    d = v - v.mean(axis=0)
    spread = np.sqrt(np.maximum(np.linalg.eigvalsh(d.T @ d / len(v)), 0.0))[::-1]
    return np.concatenate([[np.linalg.norm(d, axis=1).max()], spread])


def _geom_mesh(m, g):
    """A mesh geom's mesh: its vertex count and the bounds of its vertices in the body frame (the mesh's name
    and its own frame may differ, where it lies in the body may not)."""
    if int(m.geom_type[g]) != 7 or m.geom_dataid[g] < 0:
        return np.zeros(0)
    v = _mesh_vertices(m, int(m.geom_dataid[g])) @ _matrix(m.geom_quat[g]).T + m.geom_pos[g]
    bounds = np.concatenate([v.min(axis=0), v.max(axis=0)]) if len(v) else np.zeros(6)
    return np.concatenate([[len(v)], bounds])


def _elevation(m, i):
    """A height field's elevations, scaled to its size (MuJoCo normalises the data to [0, 1])."""
    n = int(m.hfield_nrow[i] * m.hfield_ncol[i])
    return m.hfield_data[m.hfield_adr[i] : m.hfield_adr[i] + n] * m.hfield_size[i][2]


# kind -> [(field, value of element i of m, reference kind or None)]
FIELDS = {
    "body": [
        ("parent", _attr("body_parentid"), "body"),
        ("pos", _attr("body_pos"), None),
        ("quat", lambda m, i: _quat(m.body_quat[i]), None),
        ("mass", _attr("body_mass"), None),
        ("ipos", _attr("body_ipos", when=_has_mass), None),
        ("inertia", _inertia, None),
        ("gravcomp", _attr("body_gravcomp"), None),
        ("mocap", lambda m, i: m.body_mocapid[i] >= 0, None),
    ],
    "joint": [
        ("type", _attr("jnt_type"), None),
        ("body", _attr("jnt_bodyid"), "body"),
        ("pos", _attr("jnt_pos"), None),
        ("axis", lambda m, i: m.jnt_axis[i] if _scalar_joint(m, i) else np.zeros(0), None),
        ("limited", _attr("jnt_limited"), None),
        ("range", _attr("jnt_range", when="jnt_limited"), None),
        ("stiffness", _attr("jnt_stiffness"), None),
        ("springref", _per_coordinate("qpos_spring"), None),
        ("qpos0", _per_coordinate("qpos0"), None),
        ("margin", _attr("jnt_margin", when="jnt_limited"), None),  # (what activates a limit: nothing without)
        ("solreflimit", _attr("jnt_solref"), None),
        ("solimplimit", _attr("jnt_solimp"), None),
        ("damping", _per_dof("dof_damping"), None),
        ("armature", _per_dof("dof_armature"), None),
        ("frictionloss", _per_dof("dof_frictionloss"), None),
        ("solreffriction", _per_dof("dof_solref"), None),
        ("solimpfriction", _per_dof("dof_solimp"), None),
        ("actuatorfrclimited", _attr("jnt_actfrclimited"), None),
        ("actuatorfrcrange", _attr("jnt_actfrcrange", when="jnt_actfrclimited"), None),
        ("actuatorgravcomp", _attr("jnt_actgravcomp"), None),
    ],
    "geom": [
        ("type", _attr("geom_type"), None),
        ("body", _attr("geom_bodyid"), "body"),
        ("size", lambda m, i: m.geom_size[i][: _GEOM_SIZES.get(int(m.geom_type[i]), 3)], None),
        ("pos", _attr("geom_pos"), None),
        ("orientation", _geom_orientation, None),
        ("mesh", _geom_mesh, None),
        ("friction", _attr("geom_friction", when=_collides), None),
        ("condim", _attr("geom_condim", when=_collides), None),
        ("solref", _attr("geom_solref", when=_collides), None),
        ("solimp", _attr("geom_solimp", when=_collides), None),
        ("solmix", _attr("geom_solmix", when=_collides), None),
        ("margin", _attr("geom_margin", when=_collides), None),
        ("gap", _attr("geom_gap", when=_collides), None),
        ("priority", _attr("geom_priority", when=_collides), None),
    ],
    "site": [
        ("body", _attr("site_bodyid"), "body"),
        ("type", _attr("site_type"), None),
        ("pos", _attr("site_pos"), None),
        ("quat", lambda m, i: _quat(m.site_quat[i]), None),
    ],
    "actuator": [
        ("trntype", _attr("actuator_trntype"), None),
        ("dyntype", _attr("actuator_dyntype"), None),
        ("gaintype", _attr("actuator_gaintype"), None),
        ("biastype", _attr("actuator_biastype"), None),
        ("gear", _attr("actuator_gear"), None),
        ("gainprm", _attr("actuator_gainprm"), None),
        ("biasprm", _attr("actuator_biasprm"), None),
        ("dynprm", _attr("actuator_dynprm"), None),
        ("ctrlrange", _attr("actuator_ctrlrange", when="actuator_ctrllimited"), None),
        ("forcerange", _attr("actuator_forcerange", when="actuator_forcelimited"), None),
        ("actrange", _attr("actuator_actrange", when="actuator_actlimited"), None),
    ],
    "tendon": [
        ("wraps", _attr("tendon_num"), None),
        ("limited", _attr("tendon_limited"), None),
        ("range", _attr("tendon_range", when="tendon_limited"), None),
        ("stiffness", _attr("tendon_stiffness"), None),
        ("damping", _attr("tendon_damping"), None),
        ("frictionloss", _attr("tendon_frictionloss"), None),
        ("lengthspring", _attr("tendon_lengthspring"), None),
        ("armature", _attr("tendon_armature"), None),
        ("margin", _attr("tendon_margin"), None),
        ("solreflimit", _attr("tendon_solref_lim"), None),
        ("solimplimit", _attr("tendon_solimp_lim"), None),
    ],
    "equality": [
        ("type", _attr("eq_type"), None),
        ("active", _attr("eq_active0"), None),
        ("solref", _attr("eq_solref"), None),
        ("solimp", _attr("eq_solimp"), None),
        ("data", lambda m, i: m.eq_data[i][: _EQ_DATA.get(int(m.eq_type[i]), m.eq_data.shape[1])], None),
    ],
    "mesh": [
        ("vertices", _attr("mesh_vertnum"), None),
        ("size", _mesh_size, None),
    ],
    "hfield": [
        ("size", _attr("hfield_size"), None),
        ("rows, columns", lambda m, i: (m.hfield_nrow[i], m.hfield_ncol[i]), None),
        ("elevation", _elevation, None),
    ],
}
OPTIONS = (
    "timestep", "gravity", "wind", "magnetic", "density", "viscosity", "impratio", "o_margin", "o_solref",
    "o_solimp", "o_friction", "integrator", "cone", "jacobian", "solver", "iterations", "tolerance",
    "ls_iterations", "ls_tolerance", "noslip_iterations", "noslip_tolerance", "ccd_iterations", "ccd_tolerance",
    "disableflags", "enableflags",
)  # fmt: skip


def _values(v) -> list:
    return np.atleast_1d(np.asarray(v, dtype=np.float64)).ravel().tolist()


def _close(a, b, rtol, atol) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= atol + rtol * np.abs(a)))


def field_differences(native, ours, matches, prims, rtol, atol) -> list:
    """The fields of matched elements (and the options) that differ beyond the tolerance."""
    out = []
    for kind, fields in FIELDS.items():
        for i, c in sorted(matches[kind].items()):
            name = _name(native, kind, i) or f"#{i}"
            for fname, value, ref in fields:
                a, b = value(native, i), value(ours, c)
                if ref is not None:  # a reference: the native element's match must be ours
                    same = matches[ref].get(int(a), -1) == int(b)
                    a, b = _name(native, ref, int(a)) or f"#{int(a)}", _name(ours, ref, int(b)) or f"#{int(b)}"
                    if not same:
                        out.append(FieldDifference(kind, name, fname, [a], [b], prims.get((kind, c))))
                    continue
                if not _close(a, b, rtol, atol):
                    out.append(FieldDifference(kind, name, fname, _values(a), _values(b), prims.get((kind, c))))
    out += _contact_differences(native, ours, matches["geom"], prims)
    for opt in OPTIONS:
        a, b = getattr(native.opt, opt), getattr(ours.opt, opt)
        if not _close(a, b, rtol, atol):
            out.append(FieldDifference("option", "option", opt, _values(a), _values(b), None))
    return out


def contact_pairs(m) -> np.ndarray:
    """Which geom pairs MuJoCo may collide: ``(ngeom, ngeom)`` booleans from the contype/conaffinity
    bitmasks, less geoms of one body (or of bodies welded together), of two static bodies, of a parent and
    its child (filterparent), and excluded body pairs; plus the explicit contact pairs. Bitmasks, excludes
    and pairs that say the same thing in other ways give the same matrix."""
    import mujoco

    ct, ca = m.geom_contype.astype(np.int64), m.geom_conaffinity.astype(np.int64)
    can = ((ct[:, None] & ca[None, :]) | (ca[:, None] & ct[None, :])) != 0
    weld = m.body_weldid[m.geom_bodyid]
    can &= weld[:, None] != weld[None, :]
    can &= (weld[:, None] != 0) | (weld[None, :] != 0)
    if not m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_FILTERPARENT:
        dad = m.body_weldid[m.body_parentid[weld]]
        related = (weld[:, None] == dad[None, :]) | (dad[:, None] == weld[None, :])
        can &= ~(related & (weld[:, None] != 0) & (weld[None, :] != 0))
    body = m.geom_bodyid
    for signature in m.exclude_signature:
        b1, b2 = int(signature) >> 16, int(signature) & 0xFFFF
        can &= ~(((body[:, None] == b1) & (body[None, :] == b2)) | ((body[:, None] == b2) & (body[None, :] == b1)))
    can[m.pair_geom1, m.pair_geom2] = can[m.pair_geom2, m.pair_geom1] = True
    return can


def _contact_differences(native, ours, geoms, prims) -> list:
    """The matched geom pairs that may collide on one side only."""
    n_ids = np.array(sorted(geoms), dtype=np.int64)
    if not len(n_ids):
        return []
    o_ids = np.array([geoms[g] for g in n_ids], dtype=np.int64)
    a = contact_pairs(native)[np.ix_(n_ids, n_ids)]
    b = contact_pairs(ours)[np.ix_(o_ids, o_ids)]
    out = []
    for i, j in zip(*np.nonzero(np.triu(a != b, k=1)), strict=True):
        g1, g2 = int(n_ids[i]), int(n_ids[j])
        name = f"{_name(native, 'geom', g1) or f'#{g1}'} / {_name(native, 'geom', g2) or f'#{g2}'}"
        out.append(FieldDifference("contact", name, "collide", [bool(a[i, j])], [bool(b[i, j])],
                                   prims.get(("geom", int(o_ids[i])))))  # fmt: skip
    return out


# ---------------------------------------------------------------- dynamics
def _start(m, offset: float, perturb: float = 0.0, joints=None):
    """qpos0 with every hinge and slide joint (of ``joints``, default all) moved by ``offset`` and every
    coordinate by +-``perturb`` (alternating signs; quaternions renormalised)."""
    import mujoco

    q = m.qpos0.copy()
    for j in range(m.njnt) if joints is None else joints:
        if _scalar_joint(m, j):
            q[m.jnt_qposadr[j]] += offset
    q += perturb * np.where(np.arange(m.nq) % 2, 1.0, -1.0)
    for j in range(m.njnt):
        t, adr = int(m.jnt_type[j]), int(m.jnt_qposadr[j])
        quat = slice(adr + 3, adr + 7) if t == mujoco.mjtJoint.mjJNT_FREE else slice(adr, adr + 4)
        if t in (mujoco.mjtJoint.mjJNT_FREE, mujoco.mjtJoint.mjJNT_BALL):
            q[quat] /= np.linalg.norm(q[quat])
    return q


def _positions(m, qpos, steps: int):
    """Body world positions after ``steps`` steps from ``qpos`` at rest, zero control."""
    import mujoco

    d = mujoco.MjData(m)
    d.qpos[:] = qpos
    for _ in range(steps):
        mujoco.mj_step(m, d)
    mujoco.mj_kinematics(m, d)
    return d.xpos.copy()


def native_sensitivity(m, steps: int, offset: float = 0.0, joints=None, start=None) -> float:
    """How far native MuJoCo's bodies move apart after ``steps`` steps when every coordinate of the start
    (qpos0, the hinges and slides of ``joints`` moved by ``offset``) moves by 1e-9. ``start``: the body
    positions after ``steps`` steps from the unmoved start, when already at hand."""
    x = _positions(m, _start(m, offset, joints=joints), steps) if start is None else start
    xp = _positions(m, _start(m, offset, CHAOS_EPS, joints=joints), steps)
    return float(np.max(np.linalg.norm(xp - x, axis=1), initial=0.0))


FLOAT32_FIELDS = (
    "body_pos", "body_quat", "body_ipos", "body_iquat", "body_inertia", "body_mass", "geom_pos", "geom_quat",
    "geom_size", "jnt_pos", "jnt_axis", "site_pos", "site_quat",
)  # fmt: skip
"""The model values a USD file stores as float32 (points, orientations, extents, masses)."""
FLOAT32_FACTOR = 10.0
"""A divergence up to this many times native's own with float32 geometry is chaos's."""


FLOAT32_TWINS = 4
FLOAT32_ROUNDOFF = 2.0**-24
"""Relative round-off of a float32 (6e-8)."""


def float32_twins(m, count: int = FLOAT32_TWINS) -> list:
    """Copies of the MuJoCo model ``m`` as a USD round trip could give them: :data:`FLOAT32_FIELDS` rounded to
    float32, then (all but the first copy) each value moved by a random float32 round-off (seeded: the same
    every time). Contacts at a knife edge (capsules crossing deep) tell such models apart."""
    import copy

    import mujoco

    rng = np.random.default_rng(0)
    twins = []
    for k in range(count):
        twin = copy.deepcopy(m)
        for name in FLOAT32_FIELDS:
            values = getattr(twin, name)
            values[:] = values.astype(np.float32)
            if k:
                values *= 1.0 + FLOAT32_ROUNDOFF * rng.uniform(-1.0, 1.0, values.shape)
        mujoco.mj_setConst(twin, mujoco.MjData(twin))
        twins.append(twin)
    return twins


def verdict(divergence: float, sensitivity: float, atol: float, float32_sensitivity: float = 0.0) -> str:
    """ "match", "chaos" (what native's own sensitivity makes of a float-sized difference: of its start moved
    by 1e-9, or of its geometry rounded to float32) or "differs"."""
    if divergence <= atol:
        return "match"
    if sensitivity > 0.0 and divergence / sensitivity * CHAOS_EPS <= CHAOS_LIMIT:
        return "chaos"
    if divergence <= FLOAT32_FACTOR * float32_sensitivity:
        return "chaos"
    return "differs"


def divergences(native, ours, matches, steps: int, offset: float, atol: float) -> list:
    """Our divergence from native MuJoCo, beside native's sensitivity, from qpos0 and from offset joints."""
    joints = matches["joint"]
    scalar = [
        j for j in joints if _scalar_joint(native, j) and int(native.jnt_type[j]) == int(ours.jnt_type[joints[j]])
    ]
    bodies = sorted(matches["body"].items())
    twins = float32_twins(native)
    out = []
    for label, off in (("qpos0", 0.0), ("offset joints", offset)):
        x_native = _positions(native, _start(native, off, joints=scalar), steps)
        x_ours = _positions(ours, _start(ours, off, joints=[joints[j] for j in scalar]), steps)
        diff = max((float(np.linalg.norm(x_ours[c] - x_native[b])) for b, c in bodies), default=0.0)
        sens = native_sensitivity(native, steps, off, scalar, start=x_native)
        sens32 = max(float(np.max(np.linalg.norm(_positions(t, _start(t, off, joints=scalar), steps) - x_native,
                                                 axis=1), initial=0.0)) for t in twins)  # fmt: skip
        out.append(Divergence(label, steps, diff, sens, sens32, verdict(diff, sens, atol, sens32)))
    return out


# ---------------------------------------------------------------- the comparison
def compare(native_source, ours_source, *, rtol: float = 1e-5, atol: float = 1e-6, steps: int = 100,
            offset: float = 0.1, dynamics_atol: float = 1e-5) -> Comparison:  # fmt: skip
    """Compare native MuJoCo's model of the MJCF ``native_source`` with ours of ``ours_source`` (a USD stage,
    or an MJCF through ``add_mjcf``): see the module's docstring.

    Raises:
        UsdInputError: a file that does not exist or does not load.
    """
    native = load_native(native_source)
    ours, prims = load_ours(ours_source)
    c = compare_models(native, ours, prims, rtol=rtol, atol=atol, steps=steps, offset=offset,
                       dynamics_atol=dynamics_atol)  # fmt: skip
    c.native_file, c.ours_file = os.fspath(native_source), os.fspath(ours_source)
    return c


def compare_models(native, ours, prims=None, *, rtol: float = 1e-5, atol: float = 1e-6, steps: int = 100,
                   offset: float = 0.1, dynamics_atol: float = 1e-5) -> Comparison:  # fmt: skip
    """:func:`compare` of two compiled MuJoCo models; ``prims``: ``{(kind, id): prim}`` of ours' elements."""
    prims = prims or {}
    matches = match_elements(native, ours)
    c = Comparison("native", "ours")
    for kind in KINDS:
        pairs = matches[kind]
        c.counts[kind] = [_count(native, kind), _count(ours, kind), len(pairs)]
        matched_ours = set(pairs.values())
        unused = set()
        if kind in _DATA_GEOM_TYPE:  # (a copy is compared through its geom's mesh field; an unused asset is no model)
            matched_ours |= data_copies(native, ours, matches, kind)
            used = {int(native.geom_dataid[g]) for g in range(native.ngeom)
                    if int(native.geom_type[g]) == _DATA_GEOM_TYPE[kind]}  # fmt: skip
            unused = set(range(_count(native, kind))) - used
        for i in range(_count(native, kind)):
            if i not in pairs and i not in unused:
                c.unmatched.append([kind, "native", _name(native, kind, i) or f"#{i}", None])
        for i in range(_count(ours, kind)):
            if i not in matched_ours:
                c.unmatched.append([kind, "ours", _name(ours, kind, i) or f"#{i}", prims.get((kind, i))])
    c.differences = field_differences(native, ours, matches, prims, rtol, atol)
    c.dynamics = divergences(native, ours, matches, steps, offset, dynamics_atol)
    return c


def format_text(c: Comparison, most: int = 50) -> str:
    """The comparison as a human reads it."""
    lines = [f"native: {c.native_file} (MuJoCo)", f"ours:   {c.ours_file} (newton_usd -> SolverMuJoCo.mj_model)"]
    lines.append("elements (native / ours / matched): " + ", ".join(
        f"{kind} {n}/{o}/{m}" for kind, (n, o, m) in c.counts.items() if n or o))  # fmt: skip
    for kind, side, name, prim in c.unmatched[:most]:
        lines.append(f"  unmatched {kind} of {side}: {name}" + (f" ({prim})" if prim else ""))
    if c.differences:
        lines.append(f"fields that differ ({len(c.differences)}):")
        for d in c.differences[:most]:
            lines.append(f"  {d.kind} {d.name}: {d.field}: native {_text(d.native)}, ours {_text(d.ours)}"
                         + (f"  [{d.prim}]" if d.prim else ""))  # fmt: skip
        if len(c.differences) > most:
            lines.append(f"  ... and {len(c.differences) - most} more (--format json lists them all)")
    else:
        lines.append("fields: all match")
    lines.append("dynamics (largest distance between matched bodies, m):")
    lines.append(f"  {'start':<14} {'steps':>5}  {'ours - native':>13}  {'native sensitivity: 1e-9':>24}"
                 f"  {'float32':>9}  verdict")  # fmt: skip
    for d in c.dynamics:
        lines.append(f"  {d.start:<14} {d.steps:>5}  {d.divergence:>13.3g}  {d.sensitivity:>24.3g}"
                     f"  {d.float32_sensitivity:>9.3g}  {d.verdict}")  # fmt: skip
    lines.append("verdict: " + ("the models differ" if c.differ else "the models match"))
    return "\n".join(lines)


def _text(values) -> str:
    if len(values) == 1:
        v = values[0]
        return v if isinstance(v, str) else str(v) if isinstance(v, bool) else f"{v:.9g}"
    return "[" + " ".join(f"{v:.6g}" for v in values) + "]"


def main(argv=None) -> int:
    """``usdsim compare MODEL.xml STAGE``: exit 0 when the models match, 1 when they differ, 2 on bad input."""
    p = argparse.ArgumentParser(
        prog="usdsim compare",
        description="Compare native MuJoCo's model of an MJCF with the one newton_usd simulates for a stage "
        "(converted from it by any converter): elements matched by name then by place, the fields that differ, "
        "and the dynamics beside native MuJoCo's own sensitivity. Exit 0: they match; 1: they differ.",
    )
    p.add_argument("model", help="the MJCF file (.xml), compiled by native MuJoCo")
    p.add_argument("stage", help="the USD stage (or an MJCF file, through add_mjcf)")
    p.add_argument("--steps", type=int, default=100, help="steps of the dynamics comparison (default 100)")
    p.add_argument("--offset", type=float, default=0.1, help="hinge and slide offset of the second start (0.1)")
    p.add_argument("--rtol", type=float, default=1e-5, help="relative tolerance of the fields (1e-5)")
    p.add_argument("--atol", type=float, default=1e-6, help="absolute tolerance of the fields (1e-6)")
    p.add_argument("--dynamics-atol", type=float, default=1e-5, help="divergence that still matches (m, 1e-5)")
    p.add_argument("--format", choices=("human", "json"), default="human")
    p.add_argument("-v", "--verbose", action="store_true", help="tracebacks on errors, and the import warnings")
    args = p.parse_args(argv)
    logging.basicConfig(format="usdsim: warning: %(message)s", level=logging.WARNING if args.verbose else logging.ERROR)
    from .errors import NewtonUsdError

    try:
        c = compare(args.model, args.stage, rtol=args.rtol, atol=args.atol, steps=args.steps, offset=args.offset,
                    dynamics_atol=args.dynamics_atol)  # fmt: skip
    except NewtonUsdError as e:
        if args.verbose:
            raise
        print(f"usdsim compare: error: {e}", file=sys.stderr)
        return EXIT_INPUT
    print(json.dumps(c.to_dict(), indent=1) if args.format == "json" else format_text(c))
    return EXIT_DIFFER if c.differ else EXIT_MATCH
