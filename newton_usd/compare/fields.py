"""The fields of matched elements compared, up to what is equivalent (a quaternion's sign, principal axes'
order and signs, a geom's symmetries, unused sizes), and the geom pairs that may collide."""

from __future__ import annotations

import numpy as np

from .matching import name_of
from .results import FieldDifference


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


def scalar_joint(m, j) -> bool:
    return int(m.jnt_type[j]) in (2, 3)  # slide, hinge


def _per_dof(name):
    """Joint j's (first) DOF's value of the MjModel array ``name``."""
    return lambda m, j: getattr(m, name)[int(m.jnt_dofadr[j])]


def _per_coordinate(name):
    """A hinge or slide joint's value of the MjModel array ``name`` (per qpos coordinate); none for others."""
    return lambda m, j: getattr(m, name)[int(m.jnt_qposadr[j])] if scalar_joint(m, j) else np.zeros(0)


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
        ("axis", lambda m, i: m.jnt_axis[i] if scalar_joint(m, i) else np.zeros(0), None),
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
"""The fields compared, by element kind: ``kind -> [(field, value of element i of an MjModel m, the kind of element
the value refers to or None)]``."""

OPTIONS = (
    "timestep", "gravity", "wind", "magnetic", "density", "viscosity", "impratio", "o_margin", "o_solref",
    "o_solimp", "o_friction", "integrator", "cone", "jacobian", "solver", "iterations", "tolerance",
    "ls_iterations", "ls_tolerance", "noslip_iterations", "noslip_tolerance", "ccd_iterations", "ccd_tolerance",
    "disableflags", "enableflags",
)  # fmt: skip
"""The ``MjModel.opt`` fields compared (``o_*``: the contact override's)."""


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
            name = name_of(native, kind, i) or f"#{i}"
            for fname, value, ref in fields:
                a, b = value(native, i), value(ours, c)
                if ref is not None:  # a reference: the native element's match must be ours
                    same = matches[ref].get(int(a), -1) == int(b)
                    a, b = name_of(native, ref, int(a)) or f"#{int(a)}", name_of(ours, ref, int(b)) or f"#{int(b)}"
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
        name = f"{name_of(native, 'geom', g1) or f'#{g1}'} / {name_of(native, 'geom', g2) or f'#{g2}'}"
        out.append(FieldDifference("contact", name, "collide", [bool(a[i, j])], [bool(b[i, j])],
                                   prims.get(("geom", int(o_ids[i])))))  # fmt: skip
    return out
