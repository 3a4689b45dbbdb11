"""Our finalized Model -> a ``newton.Model``, replayed once through ``newton.ModelBuilder``.

Newton's solvers and collision pipeline read fields that only ``newton.ModelBuilder.finalize`` computes
(shape pairs, support data, articulation tables), so the bridge replays our model into it (bodies, joints and
runs of primitive shapes assigned in bulk, as its ``add_*`` methods would record them one by one):
bodies keep their indices and labels (prim paths), joints keep theirs (so ``joint_q``/``joint_qd`` and the
body arrays have the same layout on both sides), shapes are added shared ones first, then world by world
(``shape_map`` gives Newton's index of each of ours). Collision filtering is given as explicit shape pairs:
filtered body pairs, jointed body pairs (MuJoCo's parent filtering, which the stage was authored for) and
collision groups (their contype/conaffinity bits). What Newton's rigid solvers do not simulate is added to
``diagnostics`` once per kind with the prims.

Newton's ball joints have no limits, its D6 joints limit each of their angles: a cone-limited spherical joint
becomes a D6 with three angular axes, the two swing axes across the cone's axis limited to the cone angle and
the twist about it free (UsdPhysics; MuJoCo's ball range, which bounds the whole rotation, limits all three).
Its coordinates are then Newton's intrinsic Euler angles where ours are a quaternion (see :mod:`~.newton.exchange`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import newton
import numpy as np
import warp as wp

from ...core.types import DriveMode, GeoType, JointType
from ...errors import NewtonUsdError
from .articulations import add_articulations
from .support import UNLIMITED, report_unsupported

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
        dof_order: our DOF of each of Newton's DOFs (numpy int; a cone joint's in the D6's axis order, the others
            the same).
    """

    newton_model: object
    shape_map: np.ndarray
    free_com_offset: bool
    cone_first_axis: np.ndarray
    dof_order: np.ndarray


def bridge_model(
    model, diagnostics, solver_name: str, *, contact=None, limits=None, requires_grad: bool = False, particles=None
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
        particles: ``particles(nb, w)`` adds world w's particles to Newton's builder, in that world's context.
    """
    contact = contact or ContactSettings()
    limits = limits or JointLimitSettings()
    a = _host_arrays(model)
    nb = newton.ModelBuilder(gravity=tuple(float(g) for g in model.gravity))
    cones = _cone_joints(model, a, diagnostics, solver_name)
    report_unsupported(model, a, diagnostics, solver_name, cones)
    cone_first_axis = np.full(model.joint_count, -1, dtype=np.int32)
    for j, (first, _) in cones.items():
        cone_first_axis[j] = first
    shape_map = np.full(model.shape_count, -1, dtype=np.int64)
    ground = np.nonzero(a["shape_world"] < 0)[0]  # (the ground: shared by every world)
    _add_shapes(nb, model, a, ground, contact, diagnostics, shape_map, solver_name)
    _add_bodies(nb, model, a)
    dof_order = _add_joints(nb, model, a, limits, diagnostics, cones, passive=solver_name in PASSIVE_SOLVERS)
    for w in range(model.num_worlds):
        nb.begin_world(label=f"world_{w}")
        _add_shapes(nb, model, a, np.nonzero(a["shape_world"] == w)[0], contact, diagnostics, shape_map, solver_name)
        add_articulations(nb, model, a, np.nonzero(a["joint_world"] == w)[0])
        if particles is not None:  # (in the world's context: Newton's particle_world keeps worlds apart)
            particles(nb, w)
        nb.end_world()
    _filter_collisions(nb, model, a, shape_map)
    newton_model = nb.finalize(device=model.device, requires_grad=requires_grad)
    names = ("body_q", "body_qd") if cones else ("body_q", "body_qd", "joint_q", "joint_qd")
    for name in names:  # our initial state (the joint states where they differ: StateExchange.initial_state)
        wp.copy(getattr(newton_model, name), getattr(model, name))
    free = a["joint_type"] == int(JointType.FREE)
    offset = bool(np.any(np.abs(a["body_com"][a["joint_child"][free]]) > 0.0)) if free.any() else False
    return Bridge(newton_model, shape_map, offset, cone_first_axis, dof_order)


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
        "joint_limit_ke", "joint_limit_kd",
    )  # fmt: skip
    return {name: getattr(model, name).numpy() for name in names}


def _add_bodies(nb, model, a) -> None:
    """Every body at once, as ``add_link(lock_inertia=True)`` one by one would add them (our bodies are sorted by
    world, as Newton's must be). Newton's builder keeps its per-body values as NumPy arrays as readily as lists (its
    ``replicate`` does), so ours are assigned whole: ``add_link`` inverts each inertia in Python, which Newton's
    ``finalize`` does again on the device."""
    n = model.body_count
    world = a["body_world"].astype(np.int32)
    if n and (np.any(np.diff(world) < 0) or world[0] < 0):
        raise NewtonUsdError(f"{model.source or 'the model'}: bodies are not sorted by world")
    flags = np.where(a["body_kinematic"].astype(bool), int(newton.BodyFlags.KINEMATIC), int(newton.BodyFlags.DYNAMIC))
    nb.body_q = a["body_q"].astype(np.float32)
    nb.body_qd = np.zeros((n, 6), dtype=np.float32)
    nb.body_com = a["body_com"].astype(np.float32)
    nb.body_inertia = a["body_inertia"].astype(np.float32)
    nb.body_inv_inertia = model.body_inv_inertia.numpy()
    nb.body_mass = a["body_mass"].astype(np.float32)
    nb.body_inv_mass = model.body_inv_mass.numpy()
    nb.body_flags = flags.astype(np.int32)
    nb.body_world = world
    nb.body_lock_inertia = [True] * n
    nb.body_label = list(model.body_label)
    nb.body_shapes.update((b, []) for b in range(n))


_PRIMITIVES = np.array([int(g) for g in (GeoType.SPHERE, GeoType.CAPSULE, GeoType.ELLIPSOID, GeoType.BOX,
                                          GeoType.CYLINDER)])  # fmt: skip
"""Our shape kinds that :func:`_add_primitives` adds in bulk: Newton's closed primitives, sized by ``scale`` alone."""


def _add_shapes(nb, model, a, shapes, contact, diagnostics, shape_map, solver_name: str = "") -> None:
    """Our ``shapes`` (indices, in order) into the Newton builder's current world, their Newton indices into
    ``shape_map``: each run of primitives at once (:func:`_add_primitives`), planes, meshes and height fields one by
    one (:func:`_add_shape`)."""
    primitive = np.isin(a["shape_type"][shapes], _PRIMITIVES)
    i, n = 0, len(shapes)
    while i < n:
        if not primitive[i]:
            shape_map[shapes[i]] = _add_shape(nb, model, a, int(shapes[i]), contact, diagnostics, solver_name)
            i += 1
            continue
        k = i + 1
        while k < n and primitive[k]:
            k += 1
        shape_map[shapes[i:k]] = _add_primitives(nb, model, a, shapes[i:k], contact)
        i = k


def _shape_config(contact, collides: bool):
    """Newton's ShapeConfig of our shapes, less what each shape holds (its material and gap: see :func:`_add_shape`)."""
    cfg = newton.ModelBuilder.ShapeConfig(
        density=0.0,  # our bodies carry their mass properties (add_link, lock_inertia)
        has_shape_collision=collides,
        has_particle_collision=collides,
        collision_filter_parent=False,  # filtered explicitly (see _filter_collisions)
    )
    for name in ("ke", "kd", "kf", "ka"):
        value = getattr(contact, name)
        if value is not None:
            setattr(cfg, name, float(value))
    return cfg


def _add_primitives(nb, model, a, shapes, contact) -> np.ndarray:
    """Our primitive ``shapes`` (a run of :data:`_PRIMITIVES`) into the Newton builder at once, as ``add_shape``
    one by one (with :func:`_shape_config`'s settings) would add them: its per-shape lists extended, what the
    settings share read off one ShapeConfig. ``add_shape`` spends most of its time per shape on what does not
    differ between shapes here (it validates the config and makes a ``wp.transform`` of each). Returns their Newton
    indices. A Newton whose ``add_shape`` records a list this does not extend fails here (and test_newton_bridge
    compares every array against ``add_shape``'s)."""
    first, n = nb.shape_count, len(shapes)
    kinds = a["shape_type"][shapes]
    collides = a["shape_collision_enabled"][shapes].astype(bool)
    templates = {c: _shape_config(contact, c) for c in set(collides.tolist())}
    for cfg in templates.values():  # (what differs between the shapes, validate does not read)
        for kind in set(kinds.tolist()):
            cfg.validate(shape_type=_GEO[GeoType(kind)])
    cfg = templates[bool(collides[0])]
    scale = np.abs(a["shape_scale"][shapes].astype(np.float64))  # (Newton takes the magnitudes of primitives' sizes)
    cylinder = kinds == int(GeoType.CYLINDER)
    if np.any(cylinder & (scale[:, 2] != 0.0) & (scale[:, 2] < scale[:, 1])):
        raise NewtonUsdError("a cylinder's barrel radius must be zero or at least its half-height")
    radius = np.where(kinds == int(GeoType.BOX), np.linalg.norm(scale, axis=1), scale[:, 0])  # (sphere)
    radius = np.where((kinds == int(GeoType.CAPSULE)) | cylinder, scale[:, 0] + scale[:, 1], radius)
    radius = np.where(kinds == int(GeoType.ELLIPSOID), scale.max(axis=1), radius)
    margin = a["shape_margin"][shapes]
    gap = np.where(margin > 0.0, margin, nb.rigid_gap if cfg.gap is None else cfg.gap)
    body = a["shape_body"][shapes].tolist()
    indices = range(first, first + n)
    for s, b in zip(indices, body, strict=True):
        nb.body_shapes[b].append(s)
    flags = {c: t.flags for c, t in templates.items()}
    palette = newton.ModelBuilder._shape_palette_color
    rows = np.ascontiguousarray(a["shape_transform"][shapes], dtype=np.float32)
    per_shape = {
        "shape_body": body,
        "shape_label": [model.shape_label[s] for s in shapes],
        "shape_transform": [wp.transform.from_buffer_copy(row) for row in rows],
        "shape_flags": [flags[c] for c in collides.tolist()],
        "shape_type": [_GEO[GeoType(k)] for k in kinds.tolist()],
        "shape_scale": [tuple(x) for x in scale.tolist()],
        "shape_color": [palette(s) for s in indices],
        "shape_material_mu": a["shape_material_mu"][shapes].tolist(),
        "shape_material_restitution": a["shape_material_restitution"][shapes].tolist(),
        "shape_material_mu_torsional": a["shape_material_mu_torsional"][shapes].tolist(),
        "shape_material_mu_rolling": a["shape_material_mu_rolling"][shapes].tolist(),
        "shape_gap": gap.tolist(),
        "shape_collision_radius": radius.tolist(),
    }
    shared = {
        "shape_source": None, "shape_opacity": 1.0, "shape_margin": cfg.margin, "shape_is_solid": cfg.is_solid,
        "shape_material_ke": cfg.ke, "shape_material_kd": cfg.kd, "shape_material_kf": cfg.kf,
        "shape_material_ka": cfg.ka, "shape_material_kh": cfg.kh, "shape_collision_group": cfg.collision_group,
        "shape_world": nb.current_world, "shape_sdf_narrow_band_range": cfg.sdf_narrow_band_range,
        "shape_sdf_target_voxel_size": cfg.sdf_target_voxel_size, "shape_sdf_max_resolution": cfg.sdf_max_resolution,
        "shape_force_sdf": cfg.force_sdf, "shape_sdf_texture_format": cfg.sdf_texture_format,
        "shape_sdf_padding": cfg.sdf_padding,
    }  # fmt: skip
    unknown = _shape_lists() - per_shape.keys() - shared.keys()
    if unknown:
        raise NewtonUsdError(
            f"newton {newton.__version__}: the bridge's bulk add of primitive shapes does not fill ModelBuilder's "
            f"{', '.join(sorted(unknown))} (a Newton it was not written for)"
        )
    for name, values in per_shape.items():
        getattr(nb, name).extend(values)
    for name, value in shared.items():
        getattr(nb, name).extend([value] * n)
    return np.arange(first, first + n)


@functools.cache
def _shape_lists() -> frozenset:
    """The per-shape lists of Newton's ``ModelBuilder`` (its ``shape_*`` lists, less the per-world one)."""
    fresh = vars(newton.ModelBuilder())
    return frozenset(k for k, v in fresh.items() if k.startswith("shape_") and isinstance(v, list)) - {
        "shape_world_start"
    }


def _add_shape(nb, model, a, s, contact, diagnostics, solver_name: str = "") -> int:
    """Add our shape ``s`` to the Newton builder; returns its Newton index."""
    gt = GeoType(int(a["shape_type"][s]))
    body = int(a["shape_body"][s])
    label = model.shape_label[s]
    cfg = _shape_config(contact, bool(a["shape_collision_enabled"][s]))
    for name in ("mu", "restitution", "mu_torsional", "mu_rolling"):
        setattr(cfg, name, float(a[f"shape_material_{name}"][s]))
    margin = float(a["shape_margin"][s])
    if margin > 0.0:  # MuJoCo's margin: contacts from that distance on; Newton's gap
        cfg.gap = margin
    xform = a["shape_transform"][s].tolist()  # (add_shape makes its wp.transform)
    scale = a["shape_scale"][s].astype(np.float64)
    if gt == GeoType.PLANE:
        infinite = scale[0] <= 0.0 or scale[1] <= 0.0
        width, length = (0.0, 0.0) if infinite else (2.0 * scale[0], 2.0 * scale[1])
        return nb.add_shape_plane(body=body, xform=xform, width=width, length=length, cfg=cfg, label=label)
    if gt == GeoType.MESH:
        src = model.shape_source[s]
        indices = _two_sided(src.indices) if _flat(src.vertices) else src.indices
        mesh = newton.Mesh(src.vertices.astype(np.float32), indices.astype(np.int32), compute_inertia=False)
        i = nb.add_shape_mesh(body, xform=xform, mesh=mesh, scale=tuple(scale.tolist()), cfg=cfg, label=label)
        sdf = getattr(model, "shape_sdf", None)
        sdf = sdf[s] if sdf else None
        if sdf is not None and sdf_device(model.device):
            set_sdf(nb, i, sdf)
            if sdf.hydroelastic and solver_name not in HYDROELASTIC_STIFFNESS_SOLVERS:
                diagnostics.add(
                    f"newton:hydroelasticStiffness is not read by the {solver_name} solver: its hydroelastic "
                    f"contacts push back with the solver's contact stiffness (read by "
                    f"{', '.join(HYDROELASTIC_STIFFNESS_SOLVERS)})",
                    label,
                )
        elif sdf is not None:
            diagnostics.add(
                f"NewtonSDFCollisionAPI needs a CUDA device (Newton {newton.__version__} builds SDFs with CUDA "
                f"only): on {model.device} the shape collides as its triangle mesh, without its SDF or "
                "hydroelastic contacts",
                label,
            )
        return i
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
    return nb.add_shape(body=body, type=_GEO[gt], xform=xform, cfg=cfg, scale=tuple(scale.tolist()), label=label)


HYDROELASTIC_STIFFNESS_SOLVERS = ("semi_implicit",)
"""Newton's solvers that read a hydroelastic contact's stiffness (``Contacts.rigid_contact_stiffness``); the others
collide hydroelastic pairs with their own contact model (Kamino only with its ``contact_compliance``, off)."""


def sdf_device(device) -> bool:
    """Whether Newton can build SDFs on ``device``: its ``ModelBuilder.finalize`` builds them with CUDA only (Warp's
    sparse volumes and 3D textures) and refuses a model that asks for one elsewhere."""
    return wp.get_device(device).is_cuda


def set_sdf(nb, i: int, sdf) -> None:
    """Give Newton's mesh shape ``i`` (of the builder ``nb``) our :class:`~newton_usd.core.elements.SdfCollision`,
    as Newton's importer gives a NewtonSDFCollisionAPI mesh its settings: ``finalize`` then builds the field from the
    mesh, and its collision pipeline collides the shape through it (hydroelastic where a pair's shapes both ask)."""
    nb.shape_sdf_max_resolution[i] = sdf.max_resolution
    nb.shape_sdf_target_voxel_size[i] = sdf.target_voxel_size
    nb.shape_sdf_narrow_band_range[i] = tuple(sdf.narrow_band)
    nb.shape_sdf_texture_format[i] = sdf.texture_format
    nb.shape_sdf_padding[i] = sdf.padding
    nb.shape_material_kh[i] = float(sdf.hydroelastic_stiffness)
    if sdf.hydroelastic:
        nb.shape_flags[i] |= int(newton.ShapeFlags.HYDROELASTIC)


FLAT = 1.0e-6
"""A mesh whose vertices lie within this fraction of its size of one plane is flat (zero thickness)."""


def _flat(vertices) -> bool:
    """Whether a mesh's ``vertices`` lie in one plane (within :data:`FLAT` of its size): a surface of zero thickness,
    a ground authored as a quad of two triangles (OpenUSD's usdPhysicsBoxOnQuad)."""
    v = np.asarray(vertices, dtype=np.float64)
    if len(v) < 3:
        return True
    spread = np.linalg.svd(v - v.mean(axis=0), compute_uv=False)
    return bool(spread[-1] <= FLAT * max(spread[0], 1e-30))


def _two_sided(indices) -> np.ndarray:
    """A flat mesh's triangles both ways round. Newton collides a triangle mesh on the side its triangles face only
    (a body behind a triangle passes through it), which suits a closed mesh; a flat one has no inside, and a body
    on its back falls through (usdPhysicsBoxOnQuad's ground under XPBD). MuJoCo collides the mesh's convex hull,
    from either side."""
    tris = np.asarray(indices, dtype=np.int32).reshape(-1, 3)
    return np.concatenate([tris, tris[:, ::-1]]).reshape(-1)


PASSIVE_SOLVERS = ("featherstone", "semi_implicit")
"""Newton's solvers whose joint forces include a joint's passive damping (``joint_damping``) and spring
(``joint_stiffness`` toward ``joint_rest_q``): the bridge carries ours (``newton:damping``, ``mjc:damping``,
``mjc:stiffness``, ``mjc:springref``) into them; the others get none (XPBD reads none, Kamino is not checked)."""


def _passive(model, a, types, passive: bool) -> tuple:
    """Per DOF, in our order: passive damping and stiffness and the spring's rest position (MuJoCo's springref)
    where ``passive``, else zeros. A free joint gets none, a ball joint no spring (Newton's springs pull on a
    joint's coordinates, a ball joint's are a quaternion)."""
    n = len(a["joint_armature"])
    if not passive or n == 0:
        return np.zeros(n), np.zeros(n), np.zeros(n)

    def per_dof(name):
        values = getattr(model.mujoco, name, None)
        if values is None:
            return np.zeros(n)
        return np.nan_to_num(np.asarray(values, dtype=np.float64).reshape(n, -1)[:, 0], nan=0.0)

    dof_type = np.repeat(types, np.diff(a["joint_qd_start"]))
    damping, stiffness = per_dof("dof_damping"), per_dof("dof_stiffness")
    damping[dof_type == int(JointType.FREE)] = 0.0
    stiffness[(dof_type == int(JointType.FREE)) | (dof_type == int(JointType.BALL))] = 0.0
    return damping, stiffness, per_dof("dof_springref")


def _add_joints(nb, model, a, limits, diagnostics, cones, passive: bool = False) -> np.ndarray:
    """Every joint with its DOFs (axes, limits, drives, armature, friction) at once, as ``add_joint`` one by one
    (with ``collision_filter_parent=False``) would add them: the per-joint, per-DOF and per-coordinate values
    are assigned as arrays (Newton's builder keeps them so after its ``replicate``), the rest as lists.
    ``cones``: the ball joints bridged as D6 joints (see :func:`_cone_joints`): their DOFs are ours about the
    D6's axes in its order, their coordinates Newton's three Euler angles (so the later joints' coordinates
    start earlier in Newton's ``joint_q``). Returns our DOF of each of Newton's DOFs."""
    nj = model.joint_count
    ours_t = a["joint_type"].astype(np.int32)
    types = ours_t.copy()
    types[list(cones)] = int(JointType.D6)
    parent, child = a["joint_parent"].astype(np.int32), a["joint_child"].astype(np.int32)
    dim = a["joint_dof_dim"].astype(np.int64).reshape(nj, 2)
    q_start, qd_start = a["joint_q_start"].astype(np.int64), a["joint_qd_start"].astype(np.int64)
    n_dof = int(qd_start[-1])
    cts, n_q = np.zeros(nj, dtype=np.int64), np.zeros(nj, dtype=np.int64)
    kinds = {(int(t), int(u), int(x), int(y)) for t, u, (x, y) in zip(types, ours_t, dim, strict=True)}
    for t, t_ours, n_lin, n_ang in kinds:
        kind, n_axes = newton.JointType(t), n_lin + n_ang
        rows = (types == t) & (ours_t == t_ours) & (dim[:, 0] == n_lin) & (dim[:, 1] == n_ang)
        n_dofs, n_coords = kind.dof_count(n_axes)
        ours = {(int(x), int(y)) for x, y in zip(np.diff(qd_start)[rows], np.diff(q_start)[rows], strict=True)}
        if t == t_ours and ours != {(n_dofs, n_coords)} or {d for d, _ in ours} != {n_dofs}:
            raise NewtonUsdError(f"{model.source or 'the model'}: Newton's {kind.name} joints of {n_axes} axes have "
                                 f"{kind.dof_count(n_axes)} DOFs and coordinates, ours differ")  # fmt: skip
        cts[rows], n_q[rows] = kind.constraint_count(n_axes), n_coords
    nq_start = np.concatenate([[0], np.cumsum(n_q)])  # Newton's coordinate starts
    n_coord = int(nq_start[-1])
    # per DOF, in our order (Newton's add_joint: axes normalized, open limits at -/+MAXVAL)
    axis = a["joint_axis"].astype(np.float32).reshape(n_dof, 3)
    axis = axis / np.maximum(np.linalg.norm(axis, axis=1, keepdims=True), np.float32(1e-30))
    limited = a["joint_limited"].astype(bool)
    lower = np.where(limited, a["joint_limit_lower"], -UNLIMITED).astype(np.float64)
    upper = np.where(limited, a["joint_limit_upper"], UNLIMITED).astype(np.float64)
    ke, kd = a["joint_target_ke"].astype(np.float64), a["joint_target_kd"].astype(np.float64)
    dof_joint = np.repeat(np.arange(nj), np.diff(qd_start))
    for d in np.nonzero(a["joint_drive_acceleration"].astype(bool) & ((ke != 0.0) | (kd != 0.0)))[0]:
        j = int(dof_joint[d])
        scale = _child_inertia_about(a, j, int(d), int(dim[j, 0]))
        ke[d], kd[d] = ke[d] * scale, kd[d] * scale
        diagnostics.add(
            "acceleration drives are simulated as force drives scaled by the child body's inertia about the axis "
            "at the start (Newton has no acceleration drives)",
            model.joint_label[j],
        )
    effort = a["joint_effort_limit"].astype(np.float64)
    effort = np.where(np.isfinite(effort) & (effort < UNLIMITED), effort, 1.0e6 * UNLIMITED)
    mode = a["joint_target_mode"].astype(np.int32)
    for m in set(mode.tolist()):  # (our DriveMode numbering is Newton's JointTargetMode's)
        newton.JointTargetMode(int(DriveMode(m)))
    default = newton.ModelBuilder.JointDofConfig()  # Newton's defaults of what we do not carry
    limit_ke = np.full(n_dof, default.limit_ke if limits.ke is None else limits.ke)
    limit_kd = np.full(n_dof, default.limit_kd if limits.kd is None else limits.kd)
    soft = np.isfinite(a["joint_limit_ke"])  # the stage's soft limits (newton:limitStiffness, physxLimit:*) win
    limit_ke[soft] = a["joint_limit_ke"][soft]
    limit_kd[soft] = np.nan_to_num(a["joint_limit_kd"][soft], nan=0.0)
    order = np.arange(n_dof)  # Newton's DOF k is our DOF order[k]
    for j, (first, bounds) in cones.items():
        d0 = int(qd_start[j])
        if limits.ke is None and limits.kd is None:  # (penalty limits: featherstone, semi_implicit)
            for d in range(d0, d0 + 3):
                inertia = _child_inertia_about(a, j, d, 0)
                limit_ke[d], limit_kd[d] = inertia * CONE_LIMIT_FREQUENCY**2, 2.0 * inertia * CONE_LIMIT_FREQUENCY
        order[d0 : d0 + 3] = d0 + (first + np.arange(3)) % 3
        for d, bound in zip(order[d0 : d0 + 3], bounds, strict=True):  # (None: free, the UsdPhysics cone's twist)
            lower[d], upper[d] = (-UNLIMITED, UNLIMITED) if bound is None else (-bound, bound)
    lower = np.where(np.isfinite(lower), lower, -newton.MAXVAL)
    upper = np.where(np.isfinite(upper), upper, newton.MAXVAL)
    target_dof = a["joint_target_pos"].astype(np.float64)[order]
    # per coordinate: targets, rest coordinates (a ball or free joint's rotation from its angular DOFs' targets)
    target_q = np.zeros(n_coord)
    rest_q = np.zeros(n_coord)
    rest_authored = np.zeros(n_coord, dtype=bool)
    quaternion = np.isin(types, (int(JointType.FREE), int(JointType.BALL), int(JointType.ROD)))  # (a rod's: pose)
    simple = ~quaternion & (types != int(JointType.FIXED))
    damping, stiffness, springref = _passive(model, a, ours_t, passive)
    for j in np.nonzero(simple)[0]:
        target_q[nq_start[j] : nq_start[j + 1]] = target_dof[qd_start[j] : qd_start[j + 1]]
        rest_q[nq_start[j] : nq_start[j + 1]] = springref[qd_start[j] : qd_start[j + 1]]
        rest_authored[nq_start[j] : nq_start[j + 1]] = stiffness[qd_start[j] : qd_start[j + 1]] != 0.0
    for j in np.nonzero(quaternion)[0]:
        q0, d0, n_lin = int(nq_start[j]), int(qd_start[j]), int(dim[j, 0])
        target_q[q0 : q0 + n_lin] = target_dof[d0 : d0 + n_lin]
        target_q[q0 + n_lin : q0 + n_lin + 4] = _quat_from_axis_targets(target_dof[d0 + n_lin : d0 + n_lin + 3])
        rest_q[q0 + n_lin + 3] = 1.0
        rest_authored[q0 + n_lin : q0 + n_lin + 4] = True
    # our initial state, where the coordinates agree (a cone joint's Euler angles: StateExchange.initial_state)
    joint_q = np.zeros(n_coord, dtype=np.float32)
    same = np.ones(nj, dtype=bool)
    same[list(cones)] = False
    coord_joint = np.repeat(np.arange(nj)[same], n_q[same])
    offsets = np.arange(len(coord_joint)) - np.repeat(np.cumsum(n_q[same]) - n_q[same], n_q[same])
    joint_q[nq_start[coord_joint] + offsets] = model.joint_q.numpy()[q_start[coord_joint] + offsets]
    # per joint
    nb.joint_type = [newton.JointType(int(t)) for t in types]
    nb.joint_parent, nb.joint_child = parent, child
    for j, (p, c) in enumerate(zip(parent.tolist(), child.tolist(), strict=True)):
        nb.joint_parents.setdefault(c, []).append((p, j))
        nb.joint_children.setdefault(p, []).append((c, j))
    nb.joint_X_p = a["joint_X_p"].astype(np.float32)
    nb.joint_X_c = a["joint_X_c"].astype(np.float32)
    nb.joint_label = list(model.joint_label)
    nb.joint_dof_dim = [(int(x), int(y)) for x, y in dim]
    nb.joint_enabled = np.ones(nj, dtype=bool)
    nb.joint_collision_filter_parent = [False] * nj  # (filtered explicitly, see _filter_collisions)
    nb.joint_world = a["joint_world"].astype(np.int32)
    nb.joint_articulation = np.full(nj, -1, dtype=np.int32)  # (set by add_articulation)
    nb.joint_mimic_joint = [-1] * nj
    nb.joint_mimic_coeffs = [(0.0, 1.0)] * nj
    nb.joint_q_start = nq_start[:-1].tolist()
    nb.joint_qd_start = qd_start[:-1].tolist()
    nb.joint_cts_start = np.concatenate([[0], np.cumsum(cts)[:-1]]).astype(int).tolist() if nj else []
    nb.joint_dof_count, nb.joint_coord_count, nb.joint_constraint_count = n_dof, n_coord, int(cts.sum())
    # per DOF, in Newton's order
    f32 = np.float32
    nb.joint_axis = axis[order].astype(f32)
    nb.joint_target_qd = a["joint_target_vel"][order].astype(f32)
    nb.joint_target_mode = mode[order]
    nb.joint_target_ke, nb.joint_target_kd = ke[order].astype(f32), kd[order].astype(f32)
    nb.joint_stiffness = (stiffness[order] + default.stiffness).astype(f32)
    nb.joint_damping = (damping[order] + default.damping).astype(f32)
    nb.joint_limit_ke, nb.joint_limit_kd = limit_ke[order].astype(f32), limit_kd[order].astype(f32)
    nb.joint_armature = a["joint_armature"][order].astype(f32)
    nb.joint_effort_limit = effort[order].astype(f32)
    nb.joint_velocity_limit = np.full(n_dof, default.velocity_limit, dtype=f32)
    nb.joint_friction = a["joint_friction"][order].astype(f32)
    nb.joint_limit_lower, nb.joint_limit_upper = lower[order].astype(f32), upper[order].astype(f32)
    nb.joint_qd = np.zeros(n_dof, dtype=f32)
    nb.joint_f = np.zeros(n_dof, dtype=f32)
    nb.joint_act = np.zeros(n_dof, dtype=f32)
    # per coordinate and constraint
    nb.joint_q = joint_q
    nb.joint_target_q = target_q.astype(f32)
    nb.joint_rest_q = rest_q.astype(f32)
    nb._joint_rest_q_authored = rest_authored.tolist()  # (add_joint's record of which rest coordinates were given)
    nb.joint_cts = np.zeros(int(cts.sum()), dtype=f32)
    return order


def _quat_from_axis_targets(t) -> tuple:
    """Newton's rotation of a ball or free joint's three angular targets (``wp.quat_from_euler(t, 2, 1, 0)``, xyzw)."""
    cx, cy, cz = (math.cos(0.5 * float(x)) for x in t)
    sx, sy, sz = (math.sin(0.5 * float(x)) for x in t)
    return (
        sx * cy * cz + cx * sy * sz,
        cx * sy * cz - sx * cy * sz,
        cx * cy * sz + sx * sy * cz,
        cx * cy * cz - sx * sy * sz,
    )


def _cone_joints(model, a, diagnostics, solver_name) -> dict:
    """The cone-limited ball joints bridged as D6 joints: joint -> (index of the D6's first axis, the limits of
    its three angles: None where free). A UsdPhysics cone (``model.mujoco.joint_cone_axis``: its axis) leaves the
    twist about its axis free: the two swing axes come first, each limited to its own angle of an elliptical
    cone (``joint_cone_swing``), the axis last. MuJoCo's ball range (no axis) bounds the whole rotation: X, Y, Z
    all limited. Said once per kind as the approximation it is."""
    out = {}
    for j in np.nonzero(a["joint_type"] == int(JointType.BALL))[0]:
        found = model.joint_cone(j)
        if found is None:
            continue
        cone, label = found.limit, model.joint_label[j]
        if cone >= GIMBAL_LOCK:
            diagnostics.add(f"spherical joint cone limits of 90 deg or more are not simulated by the {solver_name} "
                            "solver (Newton limits a D6 joint's Euler angles, which meet gimbal lock there)",
                            label)  # fmt: skip
            continue
        if found.axis is None:
            out[int(j)] = (0, (cone, cone, cone))
            diagnostics.add(
                f"ball joint ranges (MuJoCo's, bounding the whole rotation angle) are approximated by the "
                f"{solver_name} solver as limits of three Euler angles (a Newton D6 joint): exact about each axis, "
                "wider between them",
                label,
            )
            continue
        swing = (cone, cone)
        if found.swing is not None:
            swing = found.swing
            if max(swing) >= GIMBAL_LOCK:
                swing = (cone, cone)
                diagnostics.add(f"elliptical cone limits with an angle of 90 deg or more are simulated by the "
                                f"{solver_name} solver as a circular cone of the smaller angle", label)  # fmt: skip
        out[int(j)] = ((found.axis + 1) % 3, (*swing, None))
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
    for b, static in model.body_shape_collision_filter_pairs:  # a body against one static collider (FilteredPairsAPI)
        for s1 in shapes_of.get(int(b), ()):
            pairs.add((int(shape_map[s1]), int(shape_map[int(static)])))
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
