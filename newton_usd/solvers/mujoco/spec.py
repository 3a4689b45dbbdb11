"""Model to ``mujoco.MjSpec``: the MuJoCo model SolverMuJoCo compiles, and the index maps between them.

Every model body becomes one MuJoCo body with the same frame (the prim's frame), its explicit
inertial, and its geoms. A joint's child body is placed in its parent at ``X_p * inverse(X_c)`` (the
configuration at zero joint coordinates); revolute and prismatic joints become hinge and slide joints
at the child's joint frame, ball joints ball joints, free joints free joints, and fixed joints nest
the child with no joint. A body without a joint is welded to the world. Joint drives become one
``general`` actuator per driven DOF with force ``ctrl - ke * q - kd * qdot``, where the solver sets
``ctrl = ke * target_pos + kd * target_vel``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import mujoco
import numpy as np

from ...core.builder import EQUALITY_KINDS
from ...core.kinematics import joint_motions
from ...core.model import element_name
from ...core.quat import (
    matrix_to_quat,
    quat_rotate,
    transform_inverse,
    transform_multiply,
    xyzw_to_wxyz,
)
from ...core.types import MESH_INERTIA_MODES, DriveMode, GeoType, JointType
from ...diagnostics import Diagnostics
from ...errors import NewtonUsdError
from .convert import dof_refs

_GEOM = {
    GeoType.PLANE: mujoco.mjtGeom.mjGEOM_PLANE,
    GeoType.SPHERE: mujoco.mjtGeom.mjGEOM_SPHERE,
    GeoType.ELLIPSOID: mujoco.mjtGeom.mjGEOM_ELLIPSOID,
    GeoType.CAPSULE: mujoco.mjtGeom.mjGEOM_CAPSULE,
    GeoType.BOX: mujoco.mjtGeom.mjGEOM_BOX,
    GeoType.MESH: mujoco.mjtGeom.mjGEOM_MESH,
    GeoType.CYLINDER: mujoco.mjtGeom.mjGEOM_CYLINDER,
    GeoType.HFIELD: mujoco.mjtGeom.mjGEOM_HFIELD,
}
_JOINT = {
    JointType.REVOLUTE: mujoco.mjtJoint.mjJNT_HINGE,
    JointType.PRISMATIC: mujoco.mjtJoint.mjJNT_SLIDE,
    JointType.BALL: mujoco.mjtJoint.mjJNT_BALL,
    JointType.FREE: mujoco.mjtJoint.mjJNT_FREE,
}


class ModelArrays:
    """The model's arrays as numpy (floats as float64), read once from the device."""

    NAMES = (
        "body_q",
        "body_com",
        "body_mass",
        "body_inertia",
        "shape_body",
        "shape_type",
        "shape_transform",
        "shape_scale",
        "shape_collision_enabled",
        "shape_material_mu",
        "shape_material_mu_torsional",
        "shape_material_mu_rolling",
        "shape_margin",
        "shape_gap",
        "joint_type",
        "joint_parent",
        "joint_child",
        "joint_X_p",
        "joint_X_c",
        "joint_dof_dim",
        "joint_q_start",
        "joint_qd_start",
        "joint_axis",
        "joint_limited",
        "joint_limit_lower",
        "joint_limit_upper",
        "joint_target_ke",
        "joint_target_kd",
        "joint_target_mode",
        "joint_effort_limit",
        "joint_armature",
        "joint_friction",
        "joint_q",
    )

    def __init__(self, model):
        for name in self.NAMES:
            v = getattr(model, name).numpy()
            setattr(self, name, v.astype(np.float64) if v.dtype == np.float32 else v)
        self.dof_ref = dof_refs(model)


@dataclass
class SpecMap:
    """Index maps between the Model and the compiled MuJoCo model (filled after compiling)."""

    body_mj: np.ndarray = None  # model body -> mj body id
    body_mocap: np.ndarray = None  # model body -> mj mocap id (-1: not a mocap body)
    shape_mj: np.ndarray = None  # model shape -> mj geom id (-1: not simulated)
    geom_shape: np.ndarray = None  # mj geom id -> model shape (-1: none)
    joint_mj: np.ndarray = None  # model joint -> (first) mj joint id (-1: fixed)
    dof_mj: np.ndarray = None  # model DOF -> mj scalar joint id (revolute, prismatic, D6 DOFs; else -1)
    actuator_dof: np.ndarray = None  # mj actuator -> model DOF it drives (the drive actuators come first)
    mjc_actuator_ctrl: np.ndarray = None  # MjcActuator prim -> mj actuator id (-1: not built)
    site_mj: np.ndarray = None  # model site -> mj site id
    joint_names: list = field(default_factory=list)


class _Names:
    """MuJoCo element names of one kind: the source's name of each element (:func:`element_name`: a
    prim's displayName, else its name; an MJCF name whole), made unique only where two collide (the
    later one gets ``_2``, ``_3``, ... in model order). ``labels`` (shared by several kinds, first name
    wins) maps a name back to its prim, for MuJoCo's compile errors."""

    def __init__(self, model, labels: dict | None = None):
        self.model = model
        self.used = set()
        self.labels = labels if labels is not None else {}

    def __call__(self, label: str, suffix: str = "") -> str:
        base = (element_name(self.model, label) or "world") + suffix
        name, n = base, 1
        while name in self.used:
            n += 1
            name = f"{base}_{n}"
        self.used.add(name)
        self.labels.setdefault(name, label)
        return name


UNLIMITED_EFFORT = 1e9
"""A drive force limit at or above this is no limit (``joint_effort_limit`` defaults to a huge value)."""


def principal_inertia(inertia):
    """Principal moments and Warp-order rotation of a symmetric 3x3 inertia tensor.

    The principal axes are ordered and signed to lie closest to the body axes, so a diagonal tensor
    keeps its moments in place with the identity rotation (MuJoCo derives constraint weights from
    the inertial frame: a permuted one would change the simulation)."""
    inertia = 0.5 * (inertia + inertia.T)
    if np.abs(inertia - np.diag(np.diag(inertia))).max() <= 1e-12 * max(np.abs(inertia).max(), 1e-300):
        return np.maximum(np.diag(inertia), 0.0), np.array([0.0, 0.0, 0.0, 1.0])
    w, v = np.linalg.eigh(inertia)
    perm, free = [0, 0, 0], [0, 1, 2]
    for axis in np.argsort(-np.abs(v).max(axis=1)):  # most decided axis first
        j = max(free, key=lambda c: abs(v[axis, c]))
        perm[axis] = j
        free.remove(j)
    w, v = w[perm], v[:, perm]
    v *= np.where(np.diag(v) < 0, -1.0, 1.0)
    if np.linalg.det(v) < 0:
        v[:, 2] *= -1.0
    return np.maximum(w, 0.0), matrix_to_quat(v)


AXIS_SNAP = 1e-6
"""A joint axis within this of a body axis is that axis exactly: float32 round trips (a USD quatf)
leave ~1e-8 components, and MuJoCo treats a body whose slide axes are body axes as "simple"."""


def _snap_axis(axis):
    axis = np.asarray(axis, dtype=np.float64)
    snapped = np.where(np.abs(axis) < AXIS_SNAP, 0.0, axis)
    return snapped / np.linalg.norm(snapped)


def mj_inertial(mass, inertia):
    """A body's MuJoCo ``inertia`` (principal moments, kept positive for a body with mass) and
    ``iquat`` (wxyz) from its mass and 3x3 inertia tensor."""
    moments, iquat = principal_inertia(inertia)
    return np.maximum(moments, 1e-9 if mass > 0 else 0.0), xyzw_to_wxyz(iquat)


_ENUM_OPTIONS = {
    "integrator": (mujoco.mjtIntegrator, "mjINT_"),
    "cone": (mujoco.mjtCone, "mjCONE_"),
    "solver": (mujoco.mjtSolver, "mjSOL_"),
    "jacobian": (mujoco.mjtJacobian, "mjJAC_"),
}
_VALUE_OPTIONS = (
    "impratio",
    "tolerance",
    "ls_tolerance",
    "noslip_tolerance",
    "ccd_tolerance",
    "density",
    "viscosity",
    "wind",
    "magnetic",
    "o_margin",
    "o_solref",
    "o_solimp",
    "o_friction",
    "iterations",
    "ls_iterations",
    "noslip_iterations",
    "ccd_iterations",
    "sdf_iterations",
    "sdf_initpoints",
)
OPTION_NAMES = tuple(_ENUM_OPTIONS) + _VALUE_OPTIONS + ("timestep",)
"""Every option SolverMuJoCo accepts, by MuJoCo's name (``mjc:option:<name>``)."""


def _set_option(spec, name: str, value) -> None:
    """``spec.option.<name> = value``; a value MuJoCo cannot hold (1e30 iterations: over its int range) is
    bad input naming the attribute, not a TypeError from inside MjSpec."""
    try:
        setattr(spec.option, name, value)
    except (TypeError, ValueError, OverflowError):
        kind = type(getattr(spec.option, name)).__name__
        raise NewtonUsdError(
            f"PhysicsScene.mjc:option:{name}: {value!r} is not a value MuJoCo's {name} can hold (a {kind})"
        ) from None


def apply_options(spec, options: dict, flags: dict) -> None:
    """Set MuJoCo options (tokens or enum values, MuJoCo names) and flags (``mjc:flag:*`` names)."""
    for name, value in options.items():
        if name in _ENUM_OPTIONS:
            enum, prefix = _ENUM_OPTIONS[name]
            if isinstance(value, str):
                member = getattr(enum, prefix + value.upper(), None)
                if member is None:
                    valid = ", ".join(m[len(prefix) :].lower() for m in enum.__members__ if m.startswith(prefix))
                    raise NewtonUsdError(f"unknown MuJoCo {name} {value!r}; valid: {valid}")
                value = member
            _set_option(spec, name, value)
        elif name in _VALUE_OPTIONS:
            _set_option(spec, name, value)
        elif name == "timestep":
            spec.option.timestep = float(value)
        else:
            raise NewtonUsdError(f"unknown MuJoCo option {name!r}; valid: {', '.join(OPTION_NAMES)}")
    for name, on in flags.items():
        disable = getattr(mujoco.mjtDisableBit, f"mjDSBL_{name.upper()}", None)
        enable = getattr(mujoco.mjtEnableBit, f"mjENBL_{name.upper()}", None)
        if disable is not None:  # a disable flag: the mjc:flag is "enabled", so off sets the bit
            spec.option.disableflags = (
                (spec.option.disableflags | int(disable)) if not on else (spec.option.disableflags & ~int(disable))
            )
        elif enable is not None:
            spec.option.enableflags = (
                (spec.option.enableflags | int(enable)) if on else (spec.option.enableflags & ~int(enable))
            )
        # flags MuJoCo no longer has (e.g. fwdinv handled elsewhere) are ignored


ARENA_BASE = 16 << 20
"""bytes: MuJoCo's arena (MjData's memory for contacts, constraints and the solver's stack) for any model."""
ARENA_PER_ELEMENT = 8 << 10
"""bytes per body, shape and degree of freedom (measured: about 4 KB per free body with no contacts)."""
ARENA_PER_CONTACT = 4 << 10
"""bytes per expected contact with its constraint rows (measured with MuJoCo 4.0: about 1 KB in a settled pile
of boxes, pyramidal cones of condim 3; four times that for condim 6 and elliptic cones)."""
CONTACTS_PER_SHAPE = 12
"""expected contacts per shape (a settled pile of boxes has 4)."""


def arena_bytes(model) -> int:
    """The arena MuJoCo gets (``MjSpec.memory``), sized from the model: linear in its bodies, shapes, degrees of
    freedom and expected contacts. MuJoCo's own default grows with the square of the model (1.8 GB at 1,000
    free bodies, 14 GB at 3,000: a 5,000-body model cannot be allocated). Pages are touched only as used."""
    elements = model.body_count + model.shape_count + model.joint_dof_count
    contacts = CONTACTS_PER_SHAPE * model.shape_count + 64
    return ARENA_BASE + ARENA_PER_ELEMENT * elements + ARENA_PER_CONTACT * contacts


def build_spec(model, diagnostics: Diagnostics | None = None, options: dict | None = None, memory: int | None = None):
    """Build the MjSpec of ``model``; returns ``(spec, handles)`` where handles keeps the spec elements
    needed to fill a :class:`SpecMap` after compiling.

    Options: ``options`` (constructor arguments) > ``model.mujoco.option``/``flag`` (from ``mjc:option:*``
    and ``mjc:flag:*``, or MjcSceneAPI's fallbacks when it is applied) > implicitfast integrator and
    MuJoCo's defaults. ``memory``: MuJoCo's arena in bytes (default: :func:`arena_bytes`).
    """
    diag = diagnostics if diagnostics is not None else Diagnostics()
    a = ModelArrays(model)
    spec = mujoco.MjSpec()
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
    spec.compiler.autolimits = True
    spec.compiler.degree = False  # every angle we write is in radians
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    spec.option.gravity = np.array(model.gravity, dtype=np.float64)
    apply_options(spec, dict(getattr(model.mujoco, "option", {}) or {}), dict(getattr(model.mujoco, "flag", {}) or {}))
    apply_options(spec, dict(options or {}), {})
    spec.memory = int(memory) if memory is not None else arena_bytes(model)
    labels = {}  # MuJoCo element name -> prim path
    body_names, geom_names, joint_names, mesh_names = (_Names(model, labels) for _ in range(4))

    nb = model.body_count
    joints_of_child = {}  # child body -> its joints, in order (several: a stack of MuJoCo joints)
    for j in range(model.joint_count):
        c = int(a.joint_child[j])
        stack = joints_of_child.setdefault(c, [])
        if stack and int(a.joint_parent[stack[0]]) != int(a.joint_parent[j]):
            raise NewtonUsdError(
                f"body {model.body_label[c]} is the child of joints from two different parents "
                f"({model.joint_label[stack[0]]}, {model.joint_label[j]}): loop closures are not supported yet"
            )
        stack.append(j)
    children = {b: [] for b in range(-1, nb)}
    for b in range(nb):
        stack = joints_of_child.get(b)
        children[int(a.joint_parent[stack[0]]) if stack else -1].append(b)

    body_handles = [None] * nb
    joint_handles = [None] * model.joint_count
    dof_handles = [None] * model.joint_dof_count  # scalar MuJoCo joint of each DOF (revolute, prismatic, D6)
    shapes_of = {b: [] for b in range(-1, nb)}
    for s in range(model.shape_count):
        shapes_of[int(a.shape_body[s])].append(s)

    def pose_in_parent(b):
        """The child's placement at the model's initial joint coordinates: X_p * J(q0) * X_c^-1, with the
        stack's motions composed in order. MuJoCo's qpos0 is then the authored configuration (each
        scalar joint gets ``ref = q0``), so what the compiler derives from qpos0 (equality anchors,
        tendon lengths) holds for the authored pose, while locked axes still snap to the joint frames."""
        stack = joints_of_child.get(b)
        q = a.body_q[b]
        if not stack or int(a.joint_type[stack[0]]) == JointType.FREE:
            return q[:3], q[3:]
        j0 = stack[0]
        pose = transform_multiply(
            (a.joint_X_p[j0][:3], a.joint_X_p[j0][3:]), transform_inverse((a.joint_X_c[j0][:3], a.joint_X_c[j0][3:]))
        )
        for j in stack:
            xc = (a.joint_X_c[j][:3], a.joint_X_c[j][3:])
            for motion in _initial_motions(a, j, model):
                in_body = transform_multiply(transform_multiply(xc, motion), transform_inverse(xc))
                pose = transform_multiply(pose, in_body)
        return pose

    kinematic = model.body_kinematic.numpy()
    # Add bodies parents first (iterative DFS from the world).
    order, stack = [], list(reversed(children[-1]))
    while stack:
        b = stack.pop()
        order.append(b)
        stack.extend(reversed(children[b]))
    if len(order) != nb:
        raise NewtonUsdError("the joints do not form trees rooted at the world (a cycle of joints)")
    for b in order:
        stack = joints_of_child.get(b, [])
        parent = int(a.joint_parent[stack[0]]) if stack else -1
        parent_handle = spec.worldbody if parent < 0 else body_handles[parent]
        pos, quat = pose_in_parent(b)
        body = parent_handle.add_body(name=body_names(model.body_label[b]), pos=pos, quat=xyzw_to_wxyz(quat))
        body_handles[b] = body
        welded = all(int(a.joint_type[j]) == JointType.FIXED for j in stack)
        if parent < 0 and welded and kinematic[b]:
            body.mocap = True  # its pose comes from State.body_q every step
        mass = float(a.body_mass[b])
        body.explicitinertial = True
        body.mass = mass
        body.ipos = a.body_com[b]
        body.inertia, body.iquat = mj_inertial(mass, a.body_inertia[b])
        for j in stack:
            joint_handles[j] = _add_mj_joints(body, j, a, model, joint_names, dof_handles)
            cone = model.joint_cone(j)
            if cone is not None and cone.axis is not None:
                # UsdPhysics leaves the twist free; MuJoCo's ball range (MJCF's, MjcJointAPI: no axis) bounds it.
                diag.add("spherical joint cone limits bound the whole rotation angle, twist about the joint axis "
                         "included (MuJoCo's ball-joint range)", model.joint_label[j])  # fmt: skip
                if cone.swing is not None:
                    diag.add("elliptical cone limits are simulated as a circular cone of the smaller angle (MuJoCo's "
                             "ball-joint range)", model.joint_label[j])  # fmt: skip

    # Geoms. A static collider that a body is filtered against gets a static body of its own (named as the
    # collider), so that a MuJoCo exclude of that body pair keeps the two apart and nothing else.
    geom_handles = [None] * model.shape_count
    mesh_inertia = getattr(model.mujoco, "mesh_inertia", None)
    filtered_static = {s for _, s in getattr(model, "body_shape_collision_filter_pairs", ())}
    static_holders = {}
    for b in [-1] + order:
        for s in shapes_of[b]:
            holder = spec.worldbody if b < 0 else body_handles[b]
            if s in filtered_static:
                holder = static_holders[s] = spec.worldbody.add_body(name=body_names(model.shape_label[s]))
            gt = GeoType(int(a.shape_type[s]))
            if gt == GeoType.PLANE and b >= 0 and joints_of_child.get(b):
                diag.add("planes on moving bodies are not supported by MuJoCo: ignored", model.shape_label[s])
                continue
            t = a.shape_transform[s]
            g = holder.add_geom(
                name=geom_names(model.shape_label[s]), type=_GEOM[gt], pos=t[:3], quat=xyzw_to_wxyz(t[3:])
            )
            sc = a.shape_scale[s]
            if gt == GeoType.PLANE:
                g.size = [sc[0], sc[1], 1.0]
            elif gt == GeoType.SPHERE:
                g.size = [sc[0], 0.0, 0.0]
            elif gt in (GeoType.CAPSULE, GeoType.CYLINDER):
                g.size = [sc[0], sc[1], 0.0]
            elif gt in (GeoType.BOX, GeoType.ELLIPSOID):
                g.size = sc
            elif gt == GeoType.MESH:
                src = model.shape_source[s]
                mesh = spec.add_mesh(name=mesh_names(model.shape_label[s]))
                vertices, faces = src.vertices * sc, src.indices.reshape(-1, 3)
                if mesh_inertia is not None and not np.isnan(mesh_inertia[s]):  # mjc:inertia, newton:massModel
                    mode = MESH_INERTIA_MODES[int(mesh_inertia[s])]
                    mesh.inertia = getattr(mujoco.mjtMeshInertia, f"mjMESH_INERTIA_{mode.upper()}")
                if _flat(vertices, faces):  # (the bodies' inertias are given: the mesh's only lets it compile)
                    mesh.inertia = mujoco.mjtMeshInertia.mjMESH_INERTIA_SHELL
                    if a.shape_collision_enabled[s]:
                        vertices, faces = _slab(vertices, faces)
                        diag.add(f"flat mesh colliders are given a thickness behind their faces ({SLAB:.0%} of "
                                 "their size): MuJoCo collides convex hulls", model.shape_label[s])  # fmt: skip
                mesh.uservert = vertices.astype(np.float32).ravel()
                mesh.userface = faces.astype(np.int32).ravel()
                g.meshname = mesh.name
            elif gt == GeoType.HFIELD:
                src = model.shape_source[s]
                nrow, ncol = src.elevation.shape
                hfield = spec.add_hfield(name=mesh_names(model.shape_label[s]), nrow=nrow, ncol=ncol, size=src.size)
                hfield.userdata = src.elevation.astype(np.float32).ravel()
                g.hfieldname = hfield.name
            g.friction = [
                float(a.shape_material_mu[s]),
                float(a.shape_material_mu_torsional[s]),
                float(a.shape_material_mu_rolling[s]),
            ]
            g.margin = float(a.shape_margin[s])
            g.gap = float(a.shape_gap[s])
            _set_from(g, model, s, GEOM_VALUES)
            if not a.shape_collision_enabled[s]:
                g.contype = 0
                g.conaffinity = 0
            geom_handles[s] = g

    site_names, site_handles = _add_sites(spec, model, body_handles)
    gravcomp = getattr(model.mujoco, "body_gravcomp", None)
    if gravcomp is not None:
        for b in np.nonzero(~np.isnan(gravcomp))[0]:
            body_handles[b].gravcomp = float(gravcomp[b])
    for b1, b2 in getattr(model, "body_collision_filter_pairs", ()):
        spec.add_exclude(bodyname1=body_handles[b1].name, bodyname2=body_handles[b2].name)
    for b, s in getattr(model, "body_shape_collision_filter_pairs", ()):
        if geom_handles[s] is not None:
            spec.add_exclude(bodyname1=body_handles[b].name, bodyname2=static_holders[s].name)

    # Drives.
    actuators = []
    for j in range(model.joint_count):
        for dof in range(int(a.joint_qd_start[j]), int(a.joint_qd_start[j + 1])):
            if int(a.joint_target_mode[dof]) == DriveMode.NONE or dof_handles[dof] is None:
                continue
            act = spec.add_actuator(name=dof_handles[dof].name + "_drive", target=dof_handles[dof].name)
            act.trntype = mujoco.mjtTrn.mjTRN_JOINT
            act.gaintype = mujoco.mjtGain.mjGAIN_FIXED
            act.biastype = mujoco.mjtBias.mjBIAS_AFFINE
            gain = np.zeros(10)
            gain[0] = 1.0
            bias = np.zeros(10)
            bias[1] = -float(a.joint_target_ke[dof])
            bias[2] = -float(a.joint_target_kd[dof])
            act.gainprm = gain
            act.biasprm = bias
            limit = float(a.joint_effort_limit[dof])
            if limit < UNLIMITED_EFFORT:
                act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
                act.forcerange = [-limit, limit]
            actuators.append((act, dof))
    geom_names_by_label = _built_geom_names(model, geom_handles)
    tendon_names = _add_tendons(spec, model, joint_handles, geom_names_by_label, site_names, diag)
    _add_contact_pairs(spec, model, geom_names_by_label, diag)
    _add_equalities(spec, model, body_handles, joint_handles, tendon_names, diag)
    _add_distance_constraints(spec, model, body_handles)
    mjc_actuators = _add_mjc_actuators(spec, model, joint_handles, body_handles, diag, tendon_names, site_names)
    key_names = _Names(model)
    for label, time in zip(model.keyframe_label, model.keyframe_time, strict=True):
        spec.add_key(name=key_names(label), time=float(time))  # values: set by SolverMuJoCo after compiling
    return spec, (body_handles, geom_handles, joint_handles, actuators, mjc_actuators, dof_handles, site_handles,
                  labels)  # fmt: skip


SLAB = 0.01
"""A flat mesh collider's thickness behind its faces, relative to its largest extent."""


def _slab(vertices, faces):
    """A flat mesh thickened by :data:`SLAB` behind its faces (against their right-handed normal), so that
    its convex hull has a volume: the faces stay the surface that touches."""
    v = np.asarray(vertices, dtype=np.float64)
    tri = v[faces]
    normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]).sum(axis=0)
    length = np.linalg.norm(normal)
    if length == 0.0:  # no area: left to MuJoCo's error
        return v, faces
    behind = v - normal / length * SLAB * float(np.ptp(v, axis=0).max())
    return np.concatenate([v, behind]), np.concatenate([faces, faces[:, ::-1] + len(v)])


def _flat(vertices, indices) -> bool:
    """Whether a mesh encloses no volume (a flat or degenerate surface, as visual decals and MJCF's
    ``inertia="shell"`` meshes are): MuJoCo's default (volume) mesh inertia refuses to compile it."""
    v = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    if not len(v):
        return False
    tri = v[np.asarray(indices, dtype=np.int64).reshape(-1, 3)] - v.mean(axis=0)
    volume = np.abs(np.einsum("ij,ij->i", tri[:, 0], np.cross(tri[:, 1], tri[:, 2]))).sum() / 6.0
    extent = float(np.ptp(v, axis=0).max())
    return volume <= 1e-9 * extent**3


def _add_equalities(spec, model, body_handles, joint_handles, tendon_names, diag):
    """Equality constraints, in the model's order with the tendon equalities (``model.mujoco.
    tendon_equality``, each at its recorded ``position`` among the model's) in between: connect and weld
    between bodies (MuJoCo derives a connect's second anchor and a weld's relative pose from qpos0, the
    authored configuration, unless the model gives them; a given second anchor becomes a pair of
    sites), and joint equalities, whose polynomial MuJoCo measures from qpos0 (see
    :func:`shifted_polycoef`)."""
    tendon_eqs = {}
    for entry in getattr(model.mujoco, "tendon_equality", None) or []:
        position = min(int(entry.get("position", model.equality_count)), model.equality_count)
        tendon_eqs.setdefault(position, []).append(entry)
    kinds = model.equality_type.numpy()
    b1, b2 = model.equality_body1.numpy(), model.equality_body2.numpy()
    j1, j2 = model.equality_joint1.numpy(), model.equality_joint2.numpy()
    anchors = model.equality_anchor.numpy().astype(np.float64)
    active = model.equality_active.numpy()
    q0, q_start = model.joint_q.numpy().astype(np.float64), model.joint_q_start.numpy()
    torquescale = getattr(model.mujoco, "eq_torquescale", None)
    eq_names = _Names(model)
    for i in range(model.equality_count + 1):
        for entry in tendon_eqs.get(i, []):
            _add_tendon_equality(spec, entry, tendon_names, eq_names(entry["path"]), diag)
        if i == model.equality_count:
            break
        name = eq_names(model.equality_label[i])
        kind = EQUALITY_KINDS[int(kinds[i])]
        if kind == "joint":
            follower = joint_handles[j1[i]]
            leader = joint_handles[j2[i]] if j2[i] >= 0 else None
            if follower is None or (j2[i] >= 0 and leader is None):
                diag.add("joint equality on a joint that is not simulated: ignored", model.equality_label[i])
                continue
            eq = spec.add_equality(
                type=mujoco.mjtEq.mjEQ_JOINT, name1=follower.name, name2=leader.name if leader else ""
            )
            data = np.zeros(len(eq.data))
            r2 = q0[q_start[j2[i]]] if leader else None
            data[0:5] = shifted_polycoef(model.equality_polycoef[i], q0[q_start[j1[i]]], r2)
        else:
            weld = kind == "weld"
            names = [body_handles[b].name if b >= 0 else "world" for b in (b1[i], b2[i])]
            anchor2 = model.equality_anchor2[i]
            objtype = mujoco.mjtObj.mjOBJ_BODY
            if not weld and not np.isnan(anchor2).any():  # both points given: MuJoCo's site connect
                objtype = mujoco.mjtObj.mjOBJ_SITE
                for k, (b, point) in enumerate(((b1[i], anchors[i]), (b2[i], anchor2))):
                    holder = spec.worldbody if b < 0 else body_handles[b]
                    names[k] = holder.add_site(name=f"{name}_anchor{k + 1}", pos=point, size=[0.005, 0, 0]).name
            eq = spec.add_equality(
                type=mujoco.mjtEq.mjEQ_WELD if weld else mujoco.mjtEq.mjEQ_CONNECT,
                objtype=objtype,
                name1=names[0],
                name2=names[1],
            )
            data = np.array(eq.data, dtype=np.float64)
            data[0:3] = anchors[i] if objtype == mujoco.mjtObj.mjOBJ_BODY else 0.0
            data[3:10] = 0.0  # second anchor / relative pose: computed by MuJoCo at qpos0, unless given
            relpose = model.equality_relpose[i]
            if weld and not np.isnan(relpose).any():
                data[3:6] = relpose[:3]
                data[6:10] = xyzw_to_wxyz(relpose[3:])
            if weld and torquescale is not None and not np.isnan(torquescale[i]):
                data[10] = torquescale[i]
        eq.data = data
        eq.active = bool(active[i])
        eq.name = name
        _set_from(eq, model, i, EQUALITY_VALUES)


def shifted_polycoef(polycoef, ref1: float, ref2: float | None) -> np.ndarray:
    """MuJoCo's joint-equality coefficients for ``q1 = p(q2)`` in model coordinates: MuJoCo measures both
    joints from qpos0 (``ref1``, ``ref2``: the initial coordinates, which the spec makes qpos0), so
    ``q1 - ref1 = p(u + ref2) - ref1`` with ``u = q2 - ref2``. ``ref2`` None: no second joint
    (``q1 = c0``)."""
    coef = np.asarray(polycoef, dtype=np.float64)
    if ref2 is None:
        out = np.zeros(5)
        out[0] = coef[0] - ref1
        return out
    shifted = np.polynomial.Polynomial(coef)(np.polynomial.Polynomial([ref2, 1.0])).coef
    out = np.zeros(5)
    out[: min(5, len(shifted))] = shifted[:5]
    out[0] -= ref1
    return out


def _add_tendon_equality(spec, entry, tendon_names, name, diag):
    """A tendon equality (an entry of ``model.mujoco.tendon_equality``): ``L1 - L1_0 = p(L2 - L2_0)``, the
    lengths measured from those at qpos0 (as in MuJoCo); no second tendon: ``L1 - L1_0 = c0``."""
    t1 = tendon_names.get(entry["tendon1"])
    t2 = tendon_names.get(entry["tendon2"]) if entry.get("tendon2") else ""
    if t1 is None or t2 is None:
        diag.add("tendon equality on a tendon that is not simulated: ignored", entry["path"])
        return
    eq = spec.add_equality(type=mujoco.mjtEq.mjEQ_TENDON, name1=t1, name2=t2)
    data = np.zeros(len(eq.data))
    data[0:5] = _params(entry["polycoef"], 5)
    eq.data = data
    eq.active = bool(entry.get("active", True))
    eq.name = name
    for key in ("solref", "solimp"):
        if entry.get(key) is not None:
            setattr(eq, key, [float(x) for x in entry[key]])


def _limited(token) -> int:
    return getattr(mujoco.mjtLimited, f"mjLIMITED_{str(token).upper()}")


def _params(values, n=10):
    out = np.zeros(n)
    values = list(values)[:n]
    out[: len(values)] = values
    return out


def _built_geom_names(model, geom_handles) -> dict:
    """Shape label -> MuJoCo geom name, for the shapes the spec built."""
    return {label: g.name for label, g in zip(model.shape_label, geom_handles, strict=True) if g is not None}


def _add_contact_pairs(spec, model, geom_of, diag):
    """MuJoCo explicit contact pairs (``model.mujoco.contact_pair``: "path", "values" as NewtonUsdContactPair's
    attributes, and the shape labels "geom0" and "geom1")."""
    names = _Names(model)
    for entry in getattr(model.mujoco, "contact_pair", None) or []:
        geoms = [entry.get(k) or [] for k in ("geom0", "geom1")]
        if any(len(g) != 1 or g[0] not in geom_of for g in geoms):
            diag.add("contact pair whose two geoms are not each one simulated collider: ignored", entry["path"])
            continue
        v = entry["values"]
        spec.add_pair(
            name=names(entry["path"]),
            geomname1=geom_of[geoms[0][0]],
            geomname2=geom_of[geoms[1][0]],
            condim=int(v["condim"]),
            friction=_params(v["friction"], 5),
            solref=_params(v["solref"], 2),
            solreffriction=_params(v["solreffriction"], 2),
            solimp=_params(v["solimp"], 5),
            margin=float(v["margin"]),
            gap=float(v["gap"]),
        )


def _add_tendons(spec, model, joint_handles, geom_of, site_names, diag) -> dict:
    """Tendons (``model.mujoco.tendon``): fixed ones on joints, spatial ones through sites and around
    sphere/cylinder geoms (with side sites and pulley branches), with their limits, spring, damping and
    friction; returns tendon path -> MuJoCo name. ``geom_of``: shape label -> MuJoCo geom name."""
    names, unique = {}, _Names(model)
    joint_of = {label: j for j, label in enumerate(model.joint_label)}
    for entry in getattr(model.mujoco, "tendon", None) or []:
        v = entry["values"]
        wrap, side = entry.get("wrap", []), entry.get("sideSites", [])
        fixed = v.get("type", "spatial") == "fixed"
        indices = [int(i) for i in (v.get("path:indices") or range(len(wrap)))]
        segments = [int(i) for i in (v.get("path:segments") or [0] * len(indices))]
        divisors = list(v.get("path:divisors") or [1.0])
        side_idx = [int(i) for i in (v.get("sideSites:indices") or [-1] * len(indices))]
        coef = list(v.get("path:coef") or [1.0] * len(indices))
        steps = []  # ("joint"|"site"|"geom"|"pulley", name, extra)
        if not fixed and divisors and divisors[0] != 1.0:
            steps.append(("pulley", None, divisors[0]))
        segment = 0
        for k, idx in enumerate(indices):
            target = wrap[idx] if 0 <= idx < len(wrap) else None
            if not fixed and k < len(segments) and segments[k] != segment:
                segment = segments[k]
                steps.append(("pulley", None, divisors[segment] if segment < len(divisors) else 1.0))
            if fixed and target in joint_of and joint_handles[joint_of[target]] is not None:
                steps.append(("joint", joint_handles[joint_of[target]].name, float(coef[k]) if k < len(coef) else 1.0))
            elif not fixed and target in site_names:
                steps.append(("site", site_names[target], None))
            elif not fixed and target in geom_of:
                s_i = side_idx[k] if k < len(side_idx) else -1
                steps.append(("geom", geom_of[target], site_names.get(side[s_i], "") if 0 <= s_i < len(side) else ""))
            else:
                steps = None
                break
        if not steps:
            why = "tendon whose path elements are not all simulated joints, sites or geoms: not built"
            diag.add(why, entry["path"])
            continue
        tendon = spec.add_tendon(name=unique(entry["path"]))
        for kind, name, extra in steps:
            if kind == "joint":
                tendon.wrap_joint(name, extra)
            elif kind == "site":
                tendon.wrap_site(name)
            elif kind == "geom":
                tendon.wrap_geom(name, extra)
            else:
                tendon.wrap_pulley(extra)
        tendon.limited = _limited(v["limited"])
        tendon.range = [v["range:min"], v["range:max"]]
        tendon.stiffness = [v["stiffness"], 0.0, 0.0]
        tendon.damping = [v["damping"], 0.0, 0.0]
        tendon.frictionloss = v["frictionloss"]
        tendon.armature = v["armature"]
        tendon.margin = v["margin"]
        tendon.springlength = list(v["springlength"])
        tendon.solref_limit, tendon.solimp_limit = list(v["solreflimit"]), list(v["solimplimit"])
        tendon.solref_friction, tendon.solimp_friction = list(v["solreffriction"]), list(v["solimpfriction"])
        tendon.actfrclimited = _limited(v["actuatorfrclimited"])
        tendon.actfrcrange = [v["actuatorfrcrange:min"], v["actuatorfrcrange:max"]]
        tendon.group = int(v["group"])
        names[entry["path"]] = tendon.name
    return names


_SITE_GEOM = {
    GeoType.SPHERE: mujoco.mjtGeom.mjGEOM_SPHERE,
    GeoType.CAPSULE: mujoco.mjtGeom.mjGEOM_CAPSULE,
    GeoType.CYLINDER: mujoco.mjtGeom.mjGEOM_CYLINDER,
    GeoType.BOX: mujoco.mjtGeom.mjGEOM_BOX,
}


def _add_sites(spec, model, body_handles):
    """MuJoCo sites for the model's sites; returns (site label -> MuJoCo name, the site handles)."""
    names, handles, unique = {}, [], _Names(model)
    if not getattr(model, "site_count", 0):
        return names, handles
    bodies = model.site_body.numpy()
    xforms = model.site_transform.numpy().astype(np.float64)
    types, sizes = model.site_type.numpy(), model.site_size.numpy().astype(np.float64)
    for i, label in enumerate(model.site_label):
        holder = spec.worldbody if bodies[i] < 0 else body_handles[bodies[i]]
        site = holder.add_site(
            name=unique(label),
            pos=xforms[i][:3],
            quat=xyzw_to_wxyz(xforms[i][3:]),
            type=_SITE_GEOM.get(GeoType(int(types[i])), mujoco.mjtGeom.mjGEOM_SPHERE),
            size=np.maximum(sizes[i], 1e-6),
        )
        _set_from(site, model, i, SITE_VALUES)
        names[label] = site.name
        handles.append(site)
    return names, handles


DISTANCE_UNBOUNDED = 1e10
"""m: the upper end of a distance constraint's tendon range when it has no maximum."""


def _add_distance_constraints(spec, model, body_handles) -> None:
    """Distance constraints (UsdPhysics distance joints) as MuJoCo spatial tendons between two sites,
    their length limited to ``[min, max]``."""
    if not getattr(model, "distance_count", 0):
        return
    bodies = (model.distance_body0.numpy(), model.distance_body1.numpy())
    anchors = (model.distance_anchor0.numpy().astype(np.float64), model.distance_anchor1.numpy().astype(np.float64))
    lo, hi = model.distance_min.numpy().astype(np.float64), model.distance_max.numpy().astype(np.float64)
    for i, label in enumerate(model.distance_label):
        name = f"{element_name(model, label)}_{i}"
        tendon = spec.add_tendon(name=f"{name}_distance")
        for end in (0, 1):
            b = bodies[end][i]
            holder = spec.worldbody if b < 0 else body_handles[b]
            site = holder.add_site(name=f"{name}_anchor{end}", pos=anchors[end][i], size=[0.005, 0, 0])
            tendon.wrap_site(site.name)
        tendon.limited = mujoco.mjtLimited.mjLIMITED_TRUE
        tendon.range = [max(lo[i], 0.0), hi[i] if hi[i] >= 0 else DISTANCE_UNBOUNDED]


def _add_mjc_actuators(spec, model, joint_handles, body_handles, diag, tendon_names=None, site_names=None):
    """MuJoCo actuators for the MjcActuator prims (``model.mujoco.actuator``) whose target is a simulated
    joint or body; returns their handles, in the order of ``model.mujoco.actuator`` (None: skipped)."""
    entries = getattr(model.mujoco, "actuator", None) or []
    joint_of = {label: j for j, label in enumerate(model.joint_label)}
    body_of = {label: b for b, label in enumerate(model.body_label)}
    handles, unique = [], _Names(model)
    for entry in entries:
        v = entry["values"]
        target = entry["target"][0] if entry["target"] else None
        act = None
        if target in joint_of and joint_handles[joint_of[target]] is not None:
            act = spec.add_actuator(target=joint_handles[joint_of[target]].name)
            act.trntype = mujoco.mjtTrn.mjTRN_JOINTINPARENT if v["jointInParent"] else mujoco.mjtTrn.mjTRN_JOINT
        elif target in body_of:
            act = spec.add_actuator(target=body_handles[body_of[target]].name)
            act.trntype = mujoco.mjtTrn.mjTRN_BODY
        elif tendon_names and target in tendon_names:
            act = spec.add_actuator(target=tendon_names[target])
            act.trntype = mujoco.mjtTrn.mjTRN_TENDON
        elif site_names and target in site_names:
            act = spec.add_actuator(target=site_names[target])
            act.trntype = mujoco.mjtTrn.mjTRN_SITE
            ref = entry.get("refSite") or []
            if ref and ref[0] in site_names:
                act.refsite = site_names[ref[0]]
        else:
            why = "no target" if target is None else "a spatial-tendon, fixed-joint or unknown target"
            diag.add(f"MjcActuator with {why} is not simulated yet", entry["path"])
            handles.append(None)
            continue
        act.name = unique(entry["path"])
        act.gaintype = getattr(mujoco.mjtGain, f"mjGAIN_{v['gainType'].upper()}")
        act.biastype = getattr(mujoco.mjtBias, f"mjBIAS_{v['biasType'].upper()}")
        act.dyntype = getattr(mujoco.mjtDyn, f"mjDYN_{v['dynType'].upper()}")
        act.gainprm, act.biasprm, act.dynprm = _params(v["gainPrm"]), _params(v["biasPrm"]), _params(v["dynPrm"])
        act.gear = _params(v["gear"], 6)
        act.ctrllimited, act.ctrlrange = _limited(v["ctrlLimited"]), [v["ctrlRange:min"], v["ctrlRange:max"]]
        act.forcelimited, act.forcerange = _limited(v["forceLimited"]), [v["forceRange:min"], v["forceRange:max"]]
        act.actlimited, act.actrange = _limited(v["actLimited"]), [v["actRange:min"], v["actRange:max"]]
        act.actdim = int(v["actDim"])
        act.actearly = int(bool(v["actEarly"]))
        act.group = int(v["group"])
        act.lengthrange = [v["lengthRange:min"], v["lengthRange:max"]]
        handles.append(act)
    return handles


# model.mujoco array -> MjSpec attribute (per DOF for joints, per shape for geoms); NaN: MuJoCo's default.
JOINT_VALUES = {
    "dof_damping": ("damping", "poly"),  # MuJoCo 4: polynomial coefficients, the first is the linear one
    "dof_stiffness": ("stiffness", "poly"),
    "dof_springref": ("springref", float),
    "dof_limit_margin": ("margin", float),
    "dof_solref_limit": ("solref_limit", list),
    "dof_solimp_limit": ("solimp_limit", list),
    "dof_solref_friction": ("solref_friction", list),
    "dof_solimp_friction": ("solimp_friction", list),
    "dof_actfrcrange": ("actfrcrange", "limited"),  # set only where limited
    "dof_actgravcomp": ("actgravcomp", int),
    "dof_springdamper": ("springdamper", list),  # (both positive: MuJoCo's stiffness and damping from it)
}
EQUALITY_VALUES = {"eq_solref": ("solref", list), "eq_solimp": ("solimp", list)}
GEOM_VALUES = {
    "geom_contype": ("contype", int),
    "geom_conaffinity": ("conaffinity", int),
    "geom_condim": ("condim", int),
    "geom_priority": ("priority", int),
    "geom_solmix": ("solmix", float),
    "geom_solref": ("solref", list),
    "geom_solimp": ("solimp", list),
    "geom_group": ("group", int),
}
SITE_VALUES = {"site_group": ("group", int)}


def _set_from(element, model, index, table):
    for key, (attr, kind) in table.items():
        values = getattr(model.mujoco, key, None)
        if values is None:
            continue
        v = values[index]
        if np.any(np.isnan(v)):
            continue
        if kind == "poly":
            setattr(element, attr, [float(v), 0.0, 0.0])
        elif kind == "limited":  # a range recorded only where it applies: MuJoCo's `<attr>limited` true
            setattr(element, attr.replace("range", "limited"), mujoco.mjtLimited.mjLIMITED_TRUE)
            setattr(element, attr, [float(x) for x in v])
        else:
            setattr(element, attr, kind(v) if kind is not list else [float(x) for x in v])


def _initial_motions(a, j, model):
    """The joint-frame motions of joint ``j`` at the model's initial coordinates, in DOF order. A ball
    joint with a cone limit stays at its zero rotation (MuJoCo measures the cone from qpos0)."""
    jt = int(a.joint_type[j])
    if jt == JointType.BALL and model.joint_cone(j) is not None:
        return []
    qs, qe = int(a.joint_q_start[j]), int(a.joint_q_start[j + 1])
    ds, de = int(a.joint_qd_start[j]), int(a.joint_qd_start[j + 1])
    return joint_motions(jt, a.joint_q[qs:qe], a.joint_axis[ds:de], int(a.joint_dof_dim[j][0]))


def _add_mj_joints(body, j, a, model, names, dof_handles):
    """The MuJoCo joint(s) of model joint ``j`` on ``body``: one for revolute, prismatic, ball and free
    joints, one slide or hinge per DOF for a D6 (linear DOFs first), none for a fixed joint.
    Fills ``dof_handles`` for the DOFs that map to a scalar MuJoCo joint; returns the first joint."""
    jt = int(a.joint_type[j])
    if jt == JointType.FIXED:
        return None
    xc = (a.joint_X_c[j][:3], a.joint_X_c[j][3:])
    start, end = int(a.joint_qd_start[j]), int(a.joint_qd_start[j + 1])
    if jt in (JointType.BALL, JointType.FREE):
        mj_joint = body.add_joint(name=names(model.joint_label[j]), type=_JOINT[jt])
        mj_joint.pos = xc[0]
        cone = model.joint_cone(j) if jt == JointType.BALL else None
        if cone is not None:
            mj_joint.limited = mujoco.mjtLimited.mjLIMITED_TRUE
            mj_joint.range = [0.0, cone.limit]
        mj_joint.armature = float(a.joint_armature[start])
        mj_joint.frictionloss = float(a.joint_friction[start])
        _set_from(mj_joint, model, start, JOINT_VALUES)
        return mj_joint
    n_lin = int(a.joint_dof_dim[j][0])
    first = None
    for dof in range(start, end):
        k = dof - start
        kind = mujoco.mjtJoint.mjJNT_SLIDE if k < n_lin else mujoco.mjtJoint.mjJNT_HINGE
        suffix = "" if end - start == 1 else f"_{'lin' if k < n_lin else 'ang'}{k}"
        mj_joint = body.add_joint(name=names(model.joint_label[j], suffix), type=kind)
        # Placed at the initial coordinates; MuJoCo's qpos is the model coordinate + the DOF's ref.
        ref = float(a.dof_ref[dof])
        mj_joint.ref = float(a.joint_q[int(a.joint_q_start[j]) + k]) + ref
        mj_joint.pos = xc[0]
        mj_joint.axis = _snap_axis(quat_rotate(xc[1], a.joint_axis[dof]))
        if a.joint_limited[dof]:
            mj_joint.limited = mujoco.mjtLimited.mjLIMITED_TRUE
            mj_joint.range = [a.joint_limit_lower[dof] + ref, a.joint_limit_upper[dof] + ref]
        mj_joint.armature = float(a.joint_armature[dof])
        mj_joint.frictionloss = float(a.joint_friction[dof])
        _set_from(mj_joint, model, dof, JOINT_VALUES)
        dof_handles[dof] = mj_joint
        first = first or mj_joint
    return first


def compile_spec(spec, handles, model, file=None):
    """Compile the spec; returns ``(mj_model, SpecMap)``."""
    try:
        mj_model = spec.compile()
    except ValueError as e:  # MjSpec reports compile errors as ValueError
        element = re.search(r"Element name '([^']*)'", str(e))
        label = handles[-1].get(element.group(1)) if element else None
        where = f" at {label}" if label else ""
        said = "; ".join(line.strip() for line in str(e).splitlines() if line.strip())  # (one line)
        if "out of memory" in said or "Could not allocate memory" in said:
            said += " (give MuJoCo more memory: usdsim --mujoco-memory MIB, Simulation.open(mujoco_memory=bytes))"
        raise NewtonUsdError(f"{file or 'model'}: MuJoCo could not compile the model{where}: {said}") from None
    body_handles, geom_handles, joint_handles, actuators, mjc_actuators, dof_handles, site_handles, _ = handles
    stiffen_cone_limits(mj_model, model, joint_handles)
    m = SpecMap()
    m.body_mj = np.array([h.id for h in body_handles], dtype=np.int32)
    m.body_mocap = mj_model.body_mocapid[m.body_mj] if len(m.body_mj) else np.zeros(0, np.int32)
    m.shape_mj = np.array([h.id if h is not None else -1 for h in geom_handles], dtype=np.int32)
    m.geom_shape = np.full(mj_model.ngeom, -1, dtype=np.int32)
    for s, g in enumerate(m.shape_mj):
        if g >= 0:
            m.geom_shape[g] = s
    m.joint_mj = np.array([h.id if h is not None else -1 for h in joint_handles], dtype=np.int32)
    m.dof_mj = np.array([h.id if h is not None else -1 for h in dof_handles], dtype=np.int32)
    m.actuator_dof = np.array([dof for _, dof in actuators], dtype=np.int32)
    # ctrl index of each MjcActuator prim (model.mujoco.actuator order), -1 where it was not built
    m.mjc_actuator_ctrl = np.array([h.id if h is not None else -1 for h in mjc_actuators], dtype=np.int32)
    m.joint_names = [h.name if h is not None else None for h in joint_handles]
    m.site_mj = np.array([h.id for h in site_handles], dtype=np.int32)
    return mj_model, m


def stiffen_cone_limits(mj_model, model, joint_handles) -> None:
    """Make the cone limits of ball joints hold whatever the child's inertia (those without an authored
    ``mjc:solimplimit``; MJCF's keep theirs).

    MuJoCo scales a limit's impedance by the joint's ``dof_invweight0``, which for a ball joint is the
    mean of its three inverse inertias. A body swinging on an arm with a small inertia of its own (a
    shapeless body, a small collider) is light about the arm and heavy across it: the mean is set by the
    light axis, the limit's regularisation is hundreds of times too large across it, and gravity swings
    the body far past the cone (30 deg: 67 deg in native MuJoCo for 1 kg with 1e-4 kg*m^2 on a 0.5 m arm).
    Each ``solimp`` d is made d' with (1 - d') / d' = (1 - d) / d * (smallest / mean inverse inertia at
    qpos0): the impedance the limit would have with the heavy axis' inverse weight (31.8 deg there)."""
    ball = [
        (j, h)
        for j, h in enumerate(joint_handles)
        if h is not None and h.type == mujoco.mjtJoint.mjJNT_BALL and model.joint_cone(j) is not None
        and _authored_solimp_limit(model, j) is None
    ]  # fmt: skip
    if not ball:
        return
    data = mujoco.MjData(mj_model)
    mujoco.mj_forward(mj_model, data)
    unit = np.zeros((3, mj_model.nv))
    for _, h in ball:
        adr = mj_model.jnt_dofadr[h.id]
        unit[:] = 0.0
        unit[:, adr : adr + 3] = np.eye(3)
        inverse = np.zeros_like(unit)
        mujoco.mj_solveM(mj_model, data, inverse, unit)
        eig = np.linalg.eigvalsh(0.5 * (inverse[:, adr : adr + 3] + inverse[:, adr : adr + 3].T))
        if eig.mean() <= 0.0:
            continue
        ratio = eig.min() / eig.mean()
        solimp = mj_model.jnt_solimp[h.id].copy()
        d = np.clip(solimp[:2], 1e-4, 1.0 - 1e-9)  # (MuJoCo clamps d to that range)
        solimp[:2] = 1.0 / (1.0 + (1.0 - d) / d * ratio)
        mj_model.jnt_solimp[h.id] = solimp
        h.solimp_limit = solimp.tolist()  # (the spec saves what was simulated)


def _authored_solimp_limit(model, j):
    values = getattr(model.mujoco, "dof_solimp_limit", None)
    if values is None:
        return None
    v = values[int(model.joint_qd_start.numpy()[j])]
    return None if np.any(np.isnan(v)) else v
