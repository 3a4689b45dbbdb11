"""Model to ``mujoco.MjSpec``: the MuJoCo model SolverMuJoCo compiles, and the index maps between them.

Every model body becomes one MuJoCo body with the same frame (the prim's frame), its explicit
inertial, and its geoms. A joint's child body is placed in its parent at ``X_p * inverse(X_c)`` (the
configuration at zero joint coordinates); revolute and prismatic joints become hinge and slide joints
at the child's joint frame, ball joints ball joints, free joints free joints, and fixed joints nest
the child with no joint. A body without a joint is welded to the world. Joint drives become one
``general`` actuator per driven DOF with force ``ctrl - ke * q - kd * qdot``, where the solver sets
``ctrl = ke * target_pos + kd * target_vel``.

The story is :func:`build_spec`, bodies first, then each element kind from the module named for it:
:mod:`.joints`, :mod:`.geoms`, :mod:`.sites`, :mod:`.tendons`, :mod:`.constraints` (equalities, distance
constraints), :mod:`.actuators` (drives, MjcActuator prims); :mod:`.options` sets ``<option>`` and the
arena, :mod:`.values` names elements and sets the MuJoCo-only values. :func:`compile_spec` compiles it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import mujoco
import numpy as np

from ....core.quat import (
    transform_inverse,
    transform_multiply,
    xyzw_to_wxyz,
)
from ....core.types import JointType
from ....diagnostics import Diagnostics
from ....errors import NewtonUsdError
from ..convert import dof_refs
from .actuators import add_drives, add_mjc_actuators, add_native_actuators
from .constraints import add_distance_constraints, add_equalities, shifted_polycoef
from .geoms import add_contact_pairs, add_geoms, built_geom_names
from .joints import (
    UNLIMITED_EFFORT,
    add_mj_joints,
    initial_motions,
    mj_inertial,
    principal_inertia,
    soft_limit_solref,
)
from .options import OPTION_NAMES, apply_options, arena_bytes
from .sites import add_sites
from .tendons import add_tendons, soft_tendon_limits
from .values import ElementNames

__all__ = [  # build_spec and compile_spec; the rest for the callers that import them from here
    "OPTION_NAMES",
    "UNLIMITED_EFFORT",
    "ModelArrays",
    "SpecMap",
    "apply_options",
    "arena_bytes",
    "build_spec",
    "compile_spec",
    "mj_inertial",
    "principal_inertia",
    "shifted_polycoef",
    "stiffen_cone_limits",
]


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
    body_mocap: np.ndarray = None  # model body -> mj mocap id of its kinematic pose (-1: none)
    body_switch: np.ndarray = None  # model body -> mj equality that holds it kinematic (-1: not switchable)
    shape_mj: np.ndarray = None  # model shape -> mj geom id (-1: not simulated)
    geom_shape: np.ndarray = None  # mj geom id -> model shape (-1: none)
    joint_mj: np.ndarray = None  # model joint -> (first) mj joint id (-1: fixed)
    dof_mj: np.ndarray = None  # model DOF -> mj scalar joint id (revolute, prismatic, D6 DOFs; else -1)
    actuator_dof: np.ndarray = None  # mj actuator -> model DOF it drives (the drive actuators come first)
    mjc_actuator_ctrl: np.ndarray = None  # MjcActuator prim -> mj actuator id (-1: not built)
    native_actuator_ctrl: np.ndarray = None  # joint actuator (world 0's) -> mj actuator id (-1: applied as forces)
    site_mj: np.ndarray = None  # model site -> mj site id
    joint_names: list = field(default_factory=list)


def build_spec(
    model,
    diagnostics: Diagnostics | None = None,
    options: dict | None = None,
    memory: int | None = None,
    switchable=(),
):
    """Build the MjSpec of ``model``; returns ``(spec, handles)`` where handles keeps the spec elements
    needed to fill a :class:`SpecMap` after compiling.

    Options: ``options`` (constructor arguments) > ``model.mujoco.option``/``flag`` (from ``mjc:option:*``
    and ``mjc:flag:*``, or MjcSceneAPI's fallbacks when it is applied) > implicitfast integrator and
    MuJoCo's defaults. ``memory``: MuJoCo's arena in bytes (default: :func:`arena_bytes`).

    A kinematic root (a body jointed to the world by one free joint, or welded to it) is a mocap body, its pose
    taken from ``State.body_q``. A free root labelled in ``switchable`` keeps its free joint, kinematic or not, and
    gets a mocap body of its own welded to it by an equality active while it is kinematic (:func:`add_switch`):
    switching it on or off is then ``eq_active`` at run time, with no new compile.
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
    body_names, geom_names, joint_names, mesh_names = (ElementNames(model, labels) for _ in range(4))

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
            for motion in initial_motions(a, j, model):
                in_body = transform_multiply(transform_multiply(xc, motion), transform_inverse(xc))
                pose = transform_multiply(pose, in_body)
        return pose

    kinematic = model.body_kinematic.numpy()
    switches = []  # free roots that can be switched kinematic at run time (see add_switch)
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
        free = len(stack) == 1 and int(a.joint_type[stack[0]]) == JointType.FREE
        if parent < 0 and free and model.body_label[b] in switchable:
            switches.append(b)
        elif parent < 0 and (welded or free) and kinematic[b]:
            body.mocap = True  # its pose comes from State.body_q every step
            stack = []  # (a free joint's coordinates: its pose, which MuJoCo takes as the mocap body's)
        mass = float(a.body_mass[b])
        body.explicitinertial = True
        body.mass = mass
        body.ipos = a.body_com[b]
        body.inertia, body.iquat = mj_inertial(mass, a.body_inertia[b])
        for j in stack:
            joint_handles[j] = add_mj_joints(body, j, a, model, joint_names, dof_handles)
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
    geom_handles, static_holders = add_geoms(
        spec, model, a, order, shapes_of, body_handles, joints_of_child, (body_names, geom_names, mesh_names), diag
    )

    site_names, site_handles = add_sites(spec, model, body_handles)
    gravcomp = getattr(model.mujoco, "body_gravcomp", None)
    if gravcomp is not None:
        for b in np.nonzero(~np.isnan(gravcomp))[0]:
            body_handles[b].gravcomp = float(gravcomp[b])
    for b1, b2 in getattr(model, "body_collision_filter_pairs", ()):
        spec.add_exclude(bodyname1=body_handles[b1].name, bodyname2=body_handles[b2].name)
    for b, s in getattr(model, "body_shape_collision_filter_pairs", ()):
        if geom_handles[s] is not None:
            spec.add_exclude(bodyname1=body_handles[b].name, bodyname2=static_holders[s].name)

    actuators = add_drives(spec, model, a, dof_handles)
    geom_names_by_label = built_geom_names(model, geom_handles)
    tendon_names, soft_tendons = add_tendons(spec, model, joint_handles, geom_names_by_label, site_names, diag)
    add_contact_pairs(spec, model, geom_names_by_label, diag)
    add_equalities(spec, model, body_handles, joint_handles, tendon_names, diag)
    add_distance_constraints(spec, model, body_handles)
    switch_handles = [(b, *add_switch(spec, body_handles[b], bool(kinematic[b]))) for b in switches]
    mjc_actuators = add_mjc_actuators(spec, model, joint_handles, body_handles, diag, tendon_names, site_names)
    native = add_native_actuators(spec, model, a, dof_handles)  # (after the others: their ctrl indices kept)
    key_names = ElementNames(model)
    for label, time in zip(model.keyframe_label, model.keyframe_time, strict=True):
        spec.add_key(name=key_names(label), time=float(time))  # values: set by SolverMuJoCo after compiling
    return spec, (body_handles, geom_handles, joint_handles, actuators, mjc_actuators, dof_handles, site_handles,
                  soft_tendons, switch_handles, native, labels)  # fmt: skip


SWITCH_SOLREF = (0.002, 1.0)
"""The solref of a switchable body's weld to its mocap body: a time constant below any step's, which MuJoCo's refsafe
raises to two steps (the stiffest it keeps stable), critically damped."""
SWITCH_SOLIMP = (0.9995, 0.9999, 0.001, 0.5, 2.0)
"""Its solimp: an impedance near 1, so that the weld holds what it carries where it is put (at MuJoCo's default
solimp a 1 kg body held against gravity sags 0.4 mm; with this, a 1 kg pad carrying a 1 kg box at 1/480 s steps
sags 0.2 um under C MuJoCo, 7 um under MuJoCo-Warp's float32)."""


def add_switch(spec, body, kinematic: bool):
    """The mocap body and weld that hold ``body`` (a free root) kinematic while the weld is active (``kinematic``: at
    the start): the mocap body placed at ``body``, no geoms, welded to it at the identity (the body's frame on the
    mocap body's). Returns ``(mocap body, equality)``."""
    mocap = spec.worldbody.add_body(name=f"{body.name}:kinematic", pos=body.pos, quat=body.quat, mocap=True)
    eq = spec.add_equality(
        type=mujoco.mjtEq.mjEQ_WELD, objtype=mujoco.mjtObj.mjOBJ_BODY, name1=mocap.name, name2=body.name,
        active=kinematic, solref=list(SWITCH_SOLREF), solimp=list(SWITCH_SOLIMP),
    )  # fmt: skip
    data = np.zeros(len(eq.data))
    data[6] = 1.0  # the relative pose: the identity (w = 1)
    data[10] = 1.0  # torquescale
    eq.data = data
    return mocap, eq


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
    body_handles, geom_handles, joint_handles, actuators, mjc_actuators, dof_handles, site_handles = handles[:7]
    soft, switches, native = handles[7:10]
    stiffen_cone_limits(mj_model, model, joint_handles)
    soft_limit_solref(mj_model, model, dof_handles)
    soft_tendon_limits(mj_model, soft)
    m = SpecMap()
    m.body_mj = np.array([h.id for h in body_handles], dtype=np.int32)
    m.body_mocap = mj_model.body_mocapid[m.body_mj] if len(m.body_mj) else np.zeros(0, np.int32)
    m.body_switch = np.full(len(m.body_mj), -1, dtype=np.int32)
    for b, mocap, eq in switches:  # (a switchable body's kinematic pose: its mocap body's)
        m.body_mocap[b] = mj_model.body_mocapid[mocap.id]
        m.body_switch[b] = eq.id
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
    m.native_actuator_ctrl = np.full(model.actuator_count, -1, dtype=np.int32)
    for act, i in native:
        m.native_actuator_ctrl[i] = act.id
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
