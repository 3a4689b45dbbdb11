"""Our finalized Model -> a ``newton.Model``, replayed once through ``newton.ModelBuilder``.

Newton's solvers and collision pipeline read fields that only ``newton.ModelBuilder.finalize`` computes
(shape pairs, support data, articulation tables), so the bridge replays our model element by element:
bodies keep their indices and labels (prim paths), joints keep theirs (so ``joint_q``/``joint_qd`` and the
body arrays have the same layout on both sides), shapes are added shared ones first, then world by world
(``shape_map`` gives Newton's index of each of ours). Collision filtering is given as explicit shape pairs:
filtered body pairs, jointed body pairs (MuJoCo's parent filtering, which the stage was authored for) and
collision groups (their contype/conaffinity bits). What Newton's rigid solvers do not simulate is added to
``diagnostics`` once per kind with the prims.

Newton's ball joints have no limits, its D6 joints limit each of their angles: a cone-limited spherical joint
becomes a D6 with three angular axes, the two swing axes across the cone's axis limited to the cone angle and
the twist about it free (UsdPhysics; MuJoCo's ball range, which bounds the whole rotation, limits all three).
Its coordinates are then Newton's intrinsic Euler angles where ours are a quaternion (see :mod:`.exchange`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import newton
import numpy as np
import warp as wp

from ...core.types import DriveMode, GeoType, JointType
from ...errors import NewtonUsdError

_GEO = {
    GeoType.PLANE: newton.GeoType.PLANE,
    GeoType.HFIELD: newton.GeoType.HFIELD,
    GeoType.SPHERE: newton.GeoType.SPHERE,
    GeoType.CAPSULE: newton.GeoType.CAPSULE,
    GeoType.ELLIPSOID: newton.GeoType.ELLIPSOID,
    GeoType.BOX: newton.GeoType.BOX,
    GeoType.MESH: newton.GeoType.MESH,
    GeoType.CYLINDER: newton.GeoType.CYLINDER,
}
"""Our shape kinds -> Newton's (the numbering differs; the size parameters agree)."""

UNLIMITED = 1.0e10
"""Our limits and effort limits at or beyond this are off (the builder's open range)."""

CONE_LIMIT_FREQUENCY = 200.0
"""rad/s: a cone limit's natural frequency, critically damped, where the scene sets no limit stiffness (penalty
limits: featherstone, semi_implicit): its stiffness and damping scale with the child's inertia about each axis,
so that the cone holds a heavy body as it does a light one. (Newton's default limit stiffness, 1e4 N*m/rad, has
this frequency for 0.25 kg*m^2: a 1 kg body 0.5 m from the joint.)"""

GIMBAL_LOCK = 0.5 * math.pi
"""rad: a cone of this or more is not bridged as a D6: its middle Euler angle would reach gimbal lock."""


@dataclass
class ContactSettings:
    """Newton's penalty-contact parameters for every shape (SI): stiffness, damping, friction gain, adhesion
    distance. None: Newton's default."""

    ke: float | None = None
    kd: float | None = None
    kf: float | None = None
    ka: float | None = None


@dataclass
class JointLimitSettings:
    """Stiffness and damping of joint limits (per unit of the DOF, SI); None: Newton's default."""

    ke: float | None = None
    kd: float | None = None


@dataclass
class Bridge:
    """A bridged model: the Newton model and how its elements map to ours.

    Attributes:
        newton_model: the finalized ``newton.Model``.
        shape_map: Newton's shape index of each of our shapes (numpy int array).
        free_com_offset: whether a free joint's child has its center of mass away from its origin (then
            ``joint_qd`` of free joints differs: ours is the origin's velocity, Newton's the COM's).
        cone_first_axis: per joint, -1, or for a cone-limited ball joint bridged as a D6 the index (0, 1, 2: X, Y,
            Z of the joint frame) of the D6's first angular axis; its axes are that one and the next two,
            cyclically (a right-handed triple; the twist axis last). Numpy int32.
    """

    newton_model: object
    shape_map: np.ndarray
    free_com_offset: bool
    cone_first_axis: np.ndarray


def bridge_model(
    model, diagnostics, solver_name: str, *, contact=None, limits=None, requires_grad: bool = False
) -> Bridge:
    """Build the ``newton.Model`` of ``model`` on its device.

    Args:
        model: our finalized Model (any number of worlds).
        diagnostics: a :class:`~newton_usd.diagnostics.Diagnostics`; what the solver named ``solver_name``
            will not simulate is added to it.
        solver_name: the solver's name, for the messages.
        contact: :class:`ContactSettings` for every shape (None: Newton's defaults).
        limits: :class:`JointLimitSettings` for every limited DOF (None: Newton's defaults).
        requires_grad: finalize with gradients (for ``wp.Tape``).
    """
    contact = contact or ContactSettings()
    limits = limits or JointLimitSettings()
    a = _host_arrays(model)
    nb = newton.ModelBuilder(gravity=tuple(float(g) for g in model.gravity))
    _report_unsupported(model, a, diagnostics, solver_name)
    cones = _cone_joints(model, a, diagnostics, solver_name)
    cone_first_axis = np.full(model.joint_count, -1, dtype=np.int32)
    for j, (_, first, _) in cones.items():
        cone_first_axis[j] = first
    n_worlds = model.num_worlds
    shape_map = np.full(model.shape_count, -1, dtype=np.int64)
    for s in np.nonzero(a["shape_world"] < 0)[0]:  # shared by every world (the ground)
        shape_map[s] = _add_shape(nb, model, a, int(s), contact, diagnostics)
    for w in range(n_worlds):
        nb.begin_world(label=f"world_{w}")
        for b in np.nonzero(a["body_world"] == w)[0]:
            nb.add_link(
                xform=_xf(a["body_q"][b]),
                com=wp.vec3(*a["body_com"][b].tolist()),
                inertia=wp.mat33(*a["body_inertia"][b].ravel().tolist()),
                mass=float(a["body_mass"][b]),
                label=model.body_label[b],
                lock_inertia=True,
                is_kinematic=bool(a["body_kinematic"][b]),
            )
        for s in np.nonzero(a["shape_world"] == w)[0]:
            shape_map[s] = _add_shape(nb, model, a, int(s), contact, diagnostics)
        joints = np.nonzero(a["joint_world"] == w)[0]
        for j in joints:
            _add_joint(nb, model, a, int(j), limits, diagnostics, cones.get(int(j)))
        _add_articulations(nb, model, a, joints)
        nb.end_world()
    _filter_collisions(nb, model, a, shape_map)
    newton_model = nb.finalize(device=model.device, requires_grad=requires_grad)
    names = ("body_q", "body_qd") if cones else ("body_q", "body_qd", "joint_q", "joint_qd")
    for name in names:  # our initial state (the joint states where they differ: StateExchange.initial_state)
        wp.copy(getattr(newton_model, name), getattr(model, name))
    free = a["joint_type"] == int(JointType.FREE)
    offset = bool(np.any(np.abs(a["body_com"][a["joint_child"][free]]) > 0.0)) if free.any() else False
    return Bridge(newton_model, shape_map, offset, cone_first_axis)


def _host_arrays(model) -> dict:
    names = (
        "body_q", "body_com", "body_mass", "body_inertia", "body_world", "body_kinematic",
        "shape_body", "shape_type", "shape_transform", "shape_scale", "shape_collision_enabled",
        "shape_material_mu", "shape_material_restitution", "shape_material_mu_torsional",
        "shape_material_mu_rolling", "shape_margin", "shape_world",
        "joint_type", "joint_parent", "joint_child", "joint_X_p", "joint_X_c", "joint_q_start", "joint_qd_start",
        "joint_dof_dim", "joint_axis", "joint_limited", "joint_limit_lower", "joint_limit_upper", "joint_target_ke",
        "joint_target_kd", "joint_target_mode", "joint_target_pos", "joint_target_vel", "joint_effort_limit",
        "joint_drive_acceleration", "joint_armature", "joint_friction", "joint_articulation", "joint_world",
    )  # fmt: skip
    return {name: getattr(model, name).numpy() for name in names}


def _xf(row) -> wp.transform:
    return wp.transform(*row.tolist())  # (from 7 Python floats: several times faster than from a vec3 and a quat)


def _add_shape(nb, model, a, s, contact, diagnostics) -> int:
    """Add our shape ``s`` to the Newton builder; returns its Newton index."""
    gt = GeoType(int(a["shape_type"][s]))
    body = int(a["shape_body"][s])
    label = model.shape_label[s]
    collides = bool(a["shape_collision_enabled"][s])
    cfg = newton.ModelBuilder.ShapeConfig(
        density=0.0,  # our bodies carry their mass properties (add_link, lock_inertia)
        mu=float(a["shape_material_mu"][s]),
        restitution=float(a["shape_material_restitution"][s]),
        mu_torsional=float(a["shape_material_mu_torsional"][s]),
        mu_rolling=float(a["shape_material_mu_rolling"][s]),
        has_shape_collision=collides,
        has_particle_collision=collides,
        collision_filter_parent=False,  # filtered explicitly (see _filter_collisions)
    )
    for name in ("ke", "kd", "kf", "ka"):
        value = getattr(contact, name)
        if value is not None:
            setattr(cfg, name, float(value))
    margin = float(a["shape_margin"][s])
    if margin > 0.0:  # MuJoCo's margin: contacts from that distance on; Newton's gap
        cfg.gap = margin
    xform = _xf(a["shape_transform"][s])
    scale = a["shape_scale"][s].astype(np.float64)
    if gt == GeoType.PLANE:
        infinite = scale[0] <= 0.0 or scale[1] <= 0.0
        width, length = (0.0, 0.0) if infinite else (2.0 * scale[0], 2.0 * scale[1])
        return nb.add_shape_plane(body=body, xform=xform, width=width, length=length, cfg=cfg, label=label)
    if gt == GeoType.MESH:
        src = model.shape_source[s]
        mesh = newton.Mesh(src.vertices.astype(np.float32), src.indices.astype(np.int32), compute_inertia=False)
        return nb.add_shape_mesh(body, xform=xform, mesh=mesh, scale=wp.vec3(*scale), cfg=cfg, label=label)
    if gt == GeoType.HFIELD:
        src = model.shape_source[s]
        size = src.size
        nrow, ncol = src.elevation.shape
        hf = newton.Heightfield(
            src.elevation.astype(np.float32), nrow, ncol, hx=size[0], hy=size[1], min_z=0.0, max_z=size[2]
        )
        if body >= 0:
            diagnostics.add("height fields on moving bodies are static in Newton: attached to the world", label)
        return nb.add_shape_heightfield(xform=xform, heightfield=hf, cfg=cfg, label=label)
    return nb.add_shape(body=body, type=_GEO[gt], xform=xform, cfg=cfg, scale=wp.vec3(*scale), label=label)


def _add_joint(nb, model, a, j, limits, diagnostics, cone=None) -> None:
    """Add our joint ``j`` with its DOFs (axes, limits, drives, armature, friction) to the Newton builder;
    ``cone``: a ball joint's ``(cone angle, first axis, twist limited)`` (see :func:`_cone_joints`), bridged as a
    D6."""
    jt = JointType(int(a["joint_type"][j]))
    d0 = int(a["joint_qd_start"][j])
    n_lin, n_ang = (int(x) for x in a["joint_dof_dim"][j])
    label = model.joint_label[j]
    dofs = []
    for d in range(d0, d0 + n_lin + n_ang):
        limited = bool(a["joint_limited"][d])
        lower, upper = float(a["joint_limit_lower"][d]), float(a["joint_limit_upper"][d])
        ke, kd = float(a["joint_target_ke"][d]), float(a["joint_target_kd"][d])
        if a["joint_drive_acceleration"][d] and (ke or kd):
            scale = _child_inertia_about(a, j, d, n_lin)
            ke, kd = ke * scale, kd * scale
            diagnostics.add(
                "acceleration drives are simulated as force drives scaled by the child body's inertia about the "
                "axis at the start (Newton has no acceleration drives)",
                label,
            )
        effort = float(a["joint_effort_limit"][d])
        cfg = newton.ModelBuilder.JointDofConfig(
            axis=wp.vec3(*a["joint_axis"][d].tolist()),
            limit_lower=lower if limited else -UNLIMITED,
            limit_upper=upper if limited else UNLIMITED,
            target_ke=ke,
            target_kd=kd,
            target_q=float(a["joint_target_pos"][d]),
            target_qd=float(a["joint_target_vel"][d]),
            armature=float(a["joint_armature"][d]),
            effort_limit=effort if math.isfinite(effort) and effort < UNLIMITED else 1.0e6 * UNLIMITED,
            friction=float(a["joint_friction"][d]),
            actuator_mode=newton.JointTargetMode(int(DriveMode(int(a["joint_target_mode"][d])))),
        )
        cfg.target_q = float(a["joint_target_pos"][d])  # (JointDofConfig moves a target outside the limits)
        if limits.ke is not None:
            cfg.limit_ke = float(limits.ke)
        if limits.kd is not None:
            cfg.limit_kd = float(limits.kd)
        dofs.append(cfg)
    if cone is not None:
        if limits.ke is None and limits.kd is None:  # (penalty limits: featherstone, semi_implicit)
            for k, cfg in enumerate(dofs):
                inertia = _child_inertia_about(a, j, d0 + k, 0)
                cfg.limit_ke = inertia * CONE_LIMIT_FREQUENCY**2
                cfg.limit_kd = 2.0 * inertia * CONE_LIMIT_FREQUENCY
        jt, dofs = JointType.D6, _cone_axes(dofs, *cone)
    nb.add_joint(
        newton.JointType(int(jt)),
        int(a["joint_parent"][j]),
        int(a["joint_child"][j]),
        linear_axes=dofs[:n_lin],
        angular_axes=dofs[n_lin:],
        parent_xform=_xf(a["joint_X_p"][j]),
        child_xform=_xf(a["joint_X_c"][j]),
        collision_filter_parent=False,
        label=label,
    )


def _cone_axes(dofs, cone, first, twist_limited) -> list:
    """A ball joint's three DOFs (about X, Y, Z of the joint frame) as a D6's angular axes: ``first`` and the
    next two, cyclically, the two swing axes limited to +-``cone``, the twist (last) too if ``twist_limited``."""
    axes = [dofs[(first + k) % 3] for k in range(3)]
    for k, cfg in enumerate(axes):
        limited = k < 2 or twist_limited
        cfg.limit_lower, cfg.limit_upper = (-cone, cone) if limited else (-UNLIMITED, UNLIMITED)
    return axes


def _cone_joints(model, a, diagnostics, solver_name) -> dict:
    """The cone-limited ball joints bridged as D6 joints: joint -> (cone angle, index of the D6's first axis,
    whether the twist is limited too). A UsdPhysics cone (``model.mujoco.joint_cone_axis``: its axis) leaves the
    twist about its axis free: the swing axes come first, the axis last. MuJoCo's ball range (no axis) bounds the
    whole rotation: X, Y, Z all limited. Said once per kind as the approximation it is."""
    mj = model.mujoco
    cones = getattr(mj, "joint_cone_limit", None)
    axes = getattr(mj, "joint_cone_axis", None)
    out = {}
    for j in np.nonzero(~np.isnan(cones))[0] if cones is not None else ():
        if int(a["joint_type"][j]) != int(JointType.BALL):
            continue
        cone, label = float(cones[j]), model.joint_label[j]
        if cone >= GIMBAL_LOCK:
            diagnostics.add(f"spherical joint cone limits of 90 deg or more are not simulated by the {solver_name} "
                            "solver (Newton limits a D6 joint's Euler angles, which meet gimbal lock there)",
                            label)  # fmt: skip
            continue
        twist = axes[j] if axes is not None else math.nan
        if math.isnan(twist):
            out[int(j)] = (cone, 0, True)
            diagnostics.add(
                f"ball joint ranges (MuJoCo's, bounding the whole rotation angle) are approximated by the "
                f"{solver_name} solver as limits of three Euler angles (a Newton D6 joint): exact about each axis, "
                "wider between them",
                label,
            )
        else:
            out[int(j)] = (cone, (int(twist) + 1) % 3, False)
            diagnostics.add(
                f"spherical joint cone limits are approximated by the {solver_name} solver as limits of two swing "
                "angles, the twist free (a Newton D6 joint): exact in each swing plane, wider between them (a 30 deg "
                "cone lets the axis tilt 41 deg on the diagonals)",
                label,
            )
    return out


def _child_inertia_about(a, j, d, n_lin) -> float:
    """The child body's mass (a linear DOF) or its inertia about the DOF's axis through the joint (an
    angular DOF), at the initial pose: what turns an acceleration gain into a force gain."""
    child = int(a["joint_child"][j])
    mass = float(a["body_mass"][child])
    if d - int(a["joint_qd_start"][j]) < n_lin:
        return mass
    xc = a["joint_X_c"][j]
    axis_joint = a["joint_axis"][d].astype(np.float64)
    from ...core.quat import quat_rotate  # noqa: PLC0415

    axis = quat_rotate(xc[3:].astype(np.float64), axis_joint)  # in the child body frame
    inertia = a["body_inertia"][child].astype(np.float64)
    r = a["body_com"][child].astype(np.float64) - xc[:3]
    r_perp = r - axis * float(axis @ r)
    return float(axis @ inertia @ axis) + mass * float(r_perp @ r_perp)


def _add_articulations(nb, model, a, joints) -> None:
    """One Newton articulation per tree of joints (bodies connected through joints; our articulations are
    such trees), as Newton's solvers need: every joint in one, a tree's joints contiguous."""
    root = {}

    def find(x):
        while root.get(x, x) != x:
            root[x] = root.get(root[x], root[x])
            x = root[x]
        return x

    for j in joints:
        p, c = int(a["joint_parent"][j]), int(a["joint_child"][j])
        if p >= 0:
            root[find(p)] = find(c)
    groups = {}
    for j in joints:
        groups.setdefault(find(int(a["joint_child"][j])), []).append(int(j))
    for members in sorted(groups.values()):
        if members[-1] - members[0] + 1 != len(members):
            raise NewtonUsdError(
                f"{model.source or 'the model'}: the joints of the tree of {model.joint_label[members[0]]} are not "
                "contiguous in the model: Newton's articulations cannot be built from it"
            )
        nb.add_articulation(members)


def _filter_collisions(nb, model, a, shape_map) -> None:
    """Shape pairs that must not collide, as Newton's explicit filter pairs."""
    shapes_of = {}
    for s, b in enumerate(a["shape_body"]):
        shapes_of.setdefault(int(b), []).append(s)
    body_pairs = set(map(tuple, model.body_collision_filter_pairs))
    for j in range(model.joint_count):  # MuJoCo filters a body against its jointed parent (not the world)
        p, c = int(a["joint_parent"][j]), int(a["joint_child"][j])
        if p >= 0 and c >= 0 and p != c:
            body_pairs.add((min(p, c), max(p, c)))
    pairs = set()
    for b1, b2 in body_pairs:
        for s1 in shapes_of.get(b1, ()):
            for s2 in shapes_of.get(b2, ()):
                pairs.add((int(shape_map[s1]), int(shape_map[s2])))
    contype = getattr(model.mujoco, "geom_contype", None)
    conaffinity = getattr(model.mujoco, "geom_conaffinity", None)
    if contype is not None or conaffinity is not None:
        n = model.shape_count
        t = np.where(np.isnan(contype), 1, contype).astype(np.int64) if contype is not None else np.ones(n, np.int64)
        f = (
            np.where(np.isnan(conaffinity), 1, conaffinity).astype(np.int64)
            if conaffinity is not None
            else np.ones(n, np.int64)
        )
        grouped = np.nonzero((t != 1) | (f != 1))[0]
        for s in grouped:
            apart = ((t[s] & f) == 0) & ((t & f[s]) == 0)
            apart[s] = False
            for o in np.nonzero(apart)[0]:
                pairs.add((int(shape_map[s]), int(shape_map[o])))
    for s1, s2 in pairs:
        nb.add_shape_collision_filter_pair(min(s1, s2), max(s1, s2))


def _report_unsupported(model, a, diagnostics, solver_name) -> None:
    """What the Newton rigid-body solvers do not simulate, once per kind with the prims."""
    mj = model.mujoco
    for label in _labels(mj, "actuator"):
        diagnostics.add(f"MuJoCo actuators (MjcActuator) are not simulated by the {solver_name} solver", label)
    for label in _labels(mj, "tendon"):
        diagnostics.add(f"tendons are not simulated by the {solver_name} solver", label)
    for label in _labels(mj, "tendon_equality"):
        diagnostics.add(f"tendon equalities are not simulated by the {solver_name} solver", label)
    kinds = {0: "connect", 1: "weld", 2: "joint"}
    types = model.equality_type.numpy() if model.equality_count else ()
    for i, t in enumerate(types):
        kind = kinds.get(int(t), str(int(t)))
        diagnostics.add(
            f"{kind} equality constraints (and mimic joints) are not simulated by the {solver_name} solver",
            model.equality_label[i],
        )
    for label in model.distance_label:
        diagnostics.add(f"distance joints are not simulated by the {solver_name} solver", label)
    if solver_name != "xpbd" and solver_name != "kamino":
        for s in np.nonzero(a["shape_material_restitution"] > 0.0)[0]:
            diagnostics.add(f"restitution is not simulated by the {solver_name} solver (xpbd and kamino do)",
                            model.shape_label[s])  # fmt: skip


def _labels(ns, name) -> list:
    """The prim paths of a MuJoCo-only element list of the model (``model.mujoco.<name>``)."""
    return [entry.get("path", f"{name} {i}") for i, entry in enumerate(getattr(ns, name, None) or [])]
