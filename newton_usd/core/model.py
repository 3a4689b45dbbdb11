"""Model, State, Control and Contacts: plain objects holding Warp arrays.

A :class:`Model` is made once by :meth:`ModelBuilder.finalize` and holds what does not change while
simulating (topology, mass properties, shapes, joint frames and gains). A :class:`State` holds what a
solver integrates (body poses and velocities, joint coordinates), :class:`Control` what the user
drives (joint targets and forces), :class:`Contacts` what collision produced. Users may attach their
own arrays to any of them.

Conventions: SI units, Z up, Warp-order quaternions (x, y, z, w). A body pose (``body_q``) is the
``wp.transform`` of the body frame (the prim's frame without scale) in world; ``body_qd`` is the
spatial velocity (linear velocity of the center of mass, angular velocity), both in world frame.
Labels are prim paths.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import warp as wp

from .particles import world_particles

# Per-element model arrays by the kind of element that indexes them (for Model.world_view).
_WORLD_ARRAYS = {
    "body": (
        "body_q", "body_qd", "body_com", "body_mass", "body_inv_mass", "body_inertia", "body_inv_inertia",
        "body_world", "body_label", "body_kinematic", "body_max_velocity",
    ),
    "shape": (
        "shape_type", "shape_transform", "shape_scale", "shape_source", "shape_collision_enabled",
        "shape_material_mu", "shape_material_restitution", "shape_material_mu_torsional",
        "shape_material_mu_rolling", "shape_margin", "shape_gap", "shape_sdf", "shape_world", "shape_label",
    ),
    "joint": ("joint_type", "joint_X_p", "joint_X_c", "joint_dof_dim", "joint_world", "joint_label"),
    "coord": ("joint_q",),
    "dof": (
        "joint_qd", "joint_axis", "joint_limited", "joint_limit_lower", "joint_limit_upper", "joint_target_ke",
        "joint_target_kd", "joint_target_mode", "joint_target_pos", "joint_target_vel", "joint_effort_limit",
        "joint_drive_acceleration", "joint_armature", "joint_friction", "joint_limit_ke", "joint_limit_kd",
    ),
    "equality": (
        "equality_type", "equality_anchor", "equality_active", "equality_relpose", "equality_label",
        "equality_anchor2", "equality_polycoef",
    ),
    "site": ("site_transform", "site_type", "site_size", "site_label"),
    "distance": ("distance_anchor0", "distance_anchor1", "distance_min", "distance_max", "distance_label"),
    "articulation": ("articulation_label",),
    "actuator": ("actuator_spec", "actuator_label"),
}  # fmt: skip
# Index arrays: (kind indexed by, kind of the index values); -1 stays -1.
_WORLD_INDEX_ARRAYS = {
    "shape_body": ("shape", "body"),
    "joint_parent": ("joint", "body"),
    "joint_child": ("joint", "body"),
    "joint_articulation": ("joint", "articulation"),
    "equality_body1": ("equality", "body"),
    "equality_body2": ("equality", "body"),
    "equality_joint1": ("equality", "joint"),
    "equality_joint2": ("equality", "joint"),
    "site_body": ("site", "body"),
    "distance_body0": ("distance", "body"),
    "distance_body1": ("distance", "body"),
    "actuator_joint": ("actuator", "joint"),
}
_COUNTS = {
    "body": "body_count",
    "shape": "shape_count",
    "joint": "joint_count",
    "coord": "joint_coord_count",
    "dof": "joint_dof_count",
    "equality": "equality_count",
    "site": "site_count",
    "distance": "distance_count",
    "articulation": "articulation_count",
    "actuator": "actuator_count",
    "particle": "particle_count",
}


class Model:
    """Static description of what is simulated. Made by :meth:`ModelBuilder.finalize`.

    Attributes (arrays are ``wp.array`` on :attr:`device`; counts are ints):

    - body_count, shape_count, joint_count, joint_coord_count, joint_dof_count, articulation_count.
    - body_q, body_qd: initial body poses and velocities (copied into each new State).
    - body_com, body_mass, body_inv_mass, body_inertia, body_inv_inertia: mass properties; COM in
      the body frame, inertia about the COM in body-frame axes.
    - num_worlds: how many identical, independent worlds the model holds (see
      :meth:`ModelBuilder.replicate`); every per-element array holds world 0's elements, then
      world 1's, and so on (:meth:`world_ranges`, :meth:`world_view`).
    - body_world: world index of each body. body_label: list of prim paths. body_kinematic: bodies
      whose pose is prescribed by ``State.body_q`` (see :meth:`ModelBuilder.add_body`).
      body_max_velocity: ``wp.vec2`` per body, the bound on its center of mass's speed (m/s) and on its angular
      speed (rad/s), inf where none (PhysX's ``maxLinearVelocity``/``maxAngularVelocity``;
      :meth:`ModelBuilder.set_body_max_velocity`), kept by the solvers that honor it
      (:mod:`~newton_usd.solvers.velocity_limits`).
    - shape_body (-1: static, attached to the world), shape_type (:class:`GeoType`),
      shape_transform (shape frame in its body frame), shape_scale (size parameters),
      shape_source (list: a :class:`Mesh` or None), shape_material_mu, shape_material_restitution,
      shape_material_mu_torsional, shape_material_mu_rolling (m), shape_margin, shape_gap (m),
      shape_sdf (list: a mesh shape's :class:`SdfCollision` or None), shape_collision_enabled, shape_world,
      shape_label.
    - joint_type (:class:`JointType`), joint_parent (-1: world), joint_child, joint_X_p (joint
      frame in the parent body frame), joint_X_c (joint frame in the child body frame),
      joint_q_start, joint_qd_start (length joint_count + 1), joint_q, joint_qd (initial),
      joint_axis, joint_limit_lower, joint_limit_upper, joint_limited, joint_target_ke,
      joint_target_kd, joint_target_mode, joint_drive_acceleration (gains are accelerations, scaled
      by the DOF's effective inertia), joint_effort_limit, joint_armature, joint_friction, joint_limit_ke,
      joint_limit_kd (a soft limit's stiffness and damping; NaN: the engine's own limit) (per DOF),
      joint_articulation (-1: none), joint_world, joint_label.
    - equality_count, equality_type (0 connect, 1 weld, 2 joint), equality_body1, equality_body2 (-1:
      world), equality_anchor, equality_anchor2 (numpy; NaN: derived from the initial pose),
      equality_relpose (numpy; NaN: the initial one), equality_joint1, equality_joint2 (-1: none),
      equality_polycoef (numpy, 5 per row), equality_active, equality_label: equality constraints
      (:meth:`ModelBuilder.add_equality`, :meth:`ModelBuilder.add_equality_joint`).
    - keyframe_label, keyframe_time, keyframe_joint_q, keyframe_joint_qd (numpy float64, one full row
      per keyframe): named states to reset to (:meth:`ModelBuilder.add_keyframe`).
    - distance_count, distance_body0, distance_body1 (-1: world), distance_anchor0, distance_anchor1 (in
      each body's frame), distance_min, distance_max (m; -1: no bound), distance_label: distance
      constraints (:meth:`ModelBuilder.add_distance_constraint`; UsdPhysics distance joints).
    - body_collision_filter_pairs: list of body pairs (b1 < b2) that do not collide.
    - body_shape_collision_filter_pairs: list of (body, static shape) pairs: the body's colliders do not
      collide with that static collider (it still collides with the rest, the ground with the body).
    - element_names: label -> the source's name of the element, where it is not the label's leaf (a
      prim's authored displayName, an MJCF element's whole name); see :func:`element_name`.
    - site_count, site_body (-1: world), site_transform (in the body frame), site_type, site_size,
      site_label: sites, frames that actuators, tendons and sensors attach to.
    - articulation_start (first joint of each articulation, plus the joint count),
      articulation_label.
    - actuator_count, actuator_joint (the 1-DOF joint each drives), actuator_spec (list of
      :class:`~newton_usd.core.actuators.ActuatorSpec`), actuator_label: joint actuators
      (:meth:`ModelBuilder.add_actuator`; ``NewtonActuator`` prims), stepped by every solver.
    - particle_count, particle_q, particle_qd (initial, world, m and m/s), particle_mass (kg), particle_radius (m),
      particle_label (per particle: its prim path), particle_world (per particle: its world, int32),
      particle_groups (prim path -> its run ``(first, end)``: world 0's, and another world's prim of its own),
      particle_runs (``(label, first, end, world)``: every world's run of every prim, world after world),
      particle_attributes ("namespace:name" -> numpy float64 per particle, NaN: the solver's default; e.g. the
      MPM material ``"mpm:friction"``): points simulated as particles (granular Points prims); mpm_config: the MPM
      scene's solver settings (``SolverImplicitMPM.Config`` field -> value, SI).
    - cloth (:class:`~newton_usd.core.deformables.Cloth` per cloth prim: its particles' run, triangles and surface
      stiffnesses), tri_count, tri_indices ((n, 3) int32: every cloth triangle's particles); volumes
      (:class:`~newton_usd.core.deformables.Volume` per soft volume prim), tet_count, tet_indices ((n, 4) int32);
      vbd_config: the VBD scene's settings (``newton.solvers.SolverVBD`` keyword -> value, SI).
    - gravity: ``wp.vec3`` in m/s^2.
    - mujoco: namespace for MuJoCo-only values (filled by importers; read by SolverMuJoCo):
      ``option`` and ``flag`` dicts (``mjc:option:*``, ``mjc:flag:*`` by MuJoCo name) and per-element
      float64 arrays with NaN where unset (``dof_damping``, ``geom_solref``, ...).
    - source: where the model came from (e.g. a USD file path), for messages.
    """

    def __init__(self, device=None):
        self.device = wp.get_device(device)
        self.num_worlds = 1
        self.mujoco_element_kind = {}
        self.gravity = wp.vec3(0.0, 0.0, -9.81)
        self.mujoco = _Namespace()
        self.element_names = {}
        self.body_collision_filter_pairs = []
        self.body_shape_collision_filter_pairs = []
        self.source = None
        self.actuator_count = 0
        self.actuator_joint = wp.zeros(0, dtype=wp.int32, device=self.device)
        self.actuator_spec, self.actuator_label = [], []
        self.particle_count = 0
        self.particle_groups, self.particle_label, self.particle_attributes = {}, [], {}
        self.particle_runs, self.particle_world = [], wp.zeros(0, dtype=wp.int32, device=self.device)
        self.mpm_config = {}
        self.cloth, self.vbd_config, self.tri_count = [], {}, 0
        self.volumes, self.tet_count = [], 0
        self.cables = []  # core/cables' Cable per cable prim

    def joint_cone(self, j: int) -> "JointCone | None":
        """The cone limit of ball joint ``j`` as the importers record it in ``mujoco`` (``joint_cone_limit``,
        ``joint_cone_axis``, ``joint_cone_swing``; NaN where unset), None where it has none: the one reader of
        them for every solver."""
        mj = self.mujoco
        cones = getattr(mj, "joint_cone_limit", None)
        if cones is None or np.isnan(cones[j]):
            return None
        axes, swings = getattr(mj, "joint_cone_axis", None), getattr(mj, "joint_cone_swing", None)
        axis = None if axes is None or np.isnan(axes[j]) else int(axes[j])
        swing = None if swings is None or np.isnan(swings[j]).any() else (float(swings[j][0]), float(swings[j][1]))
        return JointCone(float(cones[j]), axis, swing)

    def world_ranges(self, world: int = 0) -> dict:
        """Element kind ("body", "shape", "joint", "coord", "dof", "equality", "site", "articulation", "actuator",
        "particle") -> (start, end) of world ``world``'s elements (worlds are stored one after another)."""
        n = self.num_worlds
        if not 0 <= world < n:
            raise IndexError(f"world {world} does not exist (the model has {n})")
        out = {}
        for kind in ("body", "shape", "joint", "equality", "site", "articulation", "distance", "actuator", "particle"):
            per = getattr(self, _COUNTS[kind]) // n
            out[kind] = (world * per, (world + 1) * per)
        j0, j1 = out["joint"]
        q_start, qd_start = self.joint_q_start.numpy(), self.joint_qd_start.numpy()
        out["coord"] = (int(q_start[j0]), int(q_start[j1]))
        out["dof"] = (int(qd_start[j0]), int(qd_start[j1]))
        return out

    def world_view(self, world: int = 0) -> "Model":
        """A one-world Model of world ``world``: its elements, indexed from 0 (arrays are slices of this
        model's where no index needs rebasing). The model itself when it has one world."""
        if self.num_worlds == 1:
            return self
        ranges = self.world_ranges(world)
        view = Model.__new__(Model)
        view.__dict__.update(self.__dict__)
        view.num_worlds = 1
        for kind, names in _WORLD_ARRAYS.items():
            lo, hi = ranges[kind]
            for name in names:
                setattr(view, name, _slice(getattr(self, name), lo, hi))
            setattr(view, _COUNTS[kind], hi - lo)
        for name, (kind, target) in _WORLD_INDEX_ARRAYS.items():
            lo, hi = ranges[kind]
            values = getattr(self, name).numpy()[lo:hi]
            rebased = np.where(values >= 0, values - ranges[target][0], values).astype(np.int32)
            setattr(view, name, wp.array(rebased, dtype=wp.int32, device=self.device))
        j0, j1 = ranges["joint"]
        for name, kind in (("joint_q_start", "coord"), ("joint_qd_start", "dof")):
            start = getattr(self, name).numpy()[j0 : j1 + 1] - ranges[kind][0]
            setattr(view, name, wp.array(start.astype(np.int32), dtype=wp.int32, device=self.device))
        view.keyframe_joint_q = self.keyframe_joint_q[:, slice(*ranges["coord"])]
        view.keyframe_joint_qd = self.keyframe_joint_qd[:, slice(*ranges["dof"])]
        b0, b1 = ranges["body"]
        view.body_collision_filter_pairs = [
            (p - b0, q - b0) for p, q in self.body_collision_filter_pairs if b0 <= p < b1 and b0 <= q < b1
        ]
        s0, s1 = ranges["shape"]
        view.body_shape_collision_filter_pairs = [
            (b - b0, s - s0) for b, s in self.body_shape_collision_filter_pairs if b0 <= b < b1 and s0 <= s < s1
        ]
        view.mujoco = _Namespace()
        for name, value in vars(self.mujoco).items():
            kind = self.mujoco_element_kind.get(name)
            setattr(view.mujoco, name, value[slice(*ranges[kind])] if kind else value)
        if self.particle_count:
            world_particles(self, view, world, *ranges["particle"])
        return view

    def state(self, requires_grad: bool = False) -> "State":
        """A new State holding copies of the model's initial body and joint state (``requires_grad``: its
        arrays hold gradients, for ``wp.Tape`` through a differentiable solver)."""
        s = State()
        s.body_q = wp.clone(self.body_q, requires_grad=requires_grad)
        s.body_qd = wp.clone(self.body_qd, requires_grad=requires_grad)
        s.joint_q = wp.clone(self.joint_q, requires_grad=requires_grad)
        s.joint_qd = wp.clone(self.joint_qd, requires_grad=requires_grad)
        s.body_f = wp.zeros_like(self.body_qd, requires_grad=requires_grad)
        if self.particle_count:
            s.particle_q = wp.clone(self.particle_q, requires_grad=requires_grad)
            s.particle_qd = wp.clone(self.particle_qd, requires_grad=requires_grad)
        return s

    def control(self) -> "Control":
        """A new Control with the authored drive targets and zero joint forces."""
        c = Control()
        c.joint_target_pos = wp.clone(self.joint_target_pos)
        c.joint_target_vel = wp.clone(self.joint_target_vel)
        c.joint_f = wp.zeros(self.joint_dof_count, dtype=wp.float32, device=self.device)
        c.mujoco = _Namespace()
        # One control per MjcActuator prim (model.mujoco.actuator), in its own units.
        n = len(getattr(self.mujoco, "actuator", ())) * self.num_worlds  # world after world
        c.mujoco.ctrl = wp.zeros(n, dtype=wp.float32, device=self.device)
        return c

    def contacts(self, capacity: int = 1024) -> "Contacts":
        """A new, empty Contacts buffer able to hold ``capacity`` rigid contacts."""
        return Contacts(capacity, self.device)


def element_name(model, label: str) -> str:
    """The source's name of the element labelled ``label``: its recorded name (``model.element_names``:
    a USD displayName, an MJCF name with its attach prefixes), else the label's leaf (the prim name)."""
    name = getattr(model, "element_names", {}).get(label)
    return name if name else label.rstrip("/").rsplit("/", 1)[-1]


class _SolverArray:
    """A State array that a solver may write when it is read rather than when it steps (see :class:`State`)."""

    __slots__ = ("name",)

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, state, owner=None):
        if state is None:
            return self
        pending = state._pending
        if pending is not None:
            return pending.read(state, self.name)
        try:
            return state.__dict__[self.name]
        except KeyError:
            raise AttributeError(f"'{type(state).__name__}' object has no attribute '{self.name}'") from None

    def __set__(self, state, value):
        if state._pending is not None:
            state._pending.release(state)
        state.__dict__[self.name] = value

    def __delete__(self, state):
        if state._pending is not None:
            state._pending.release(state)
        try:
            del state.__dict__[self.name]
        except KeyError:
            raise AttributeError(self.name) from None


class State:
    """Time-varying simulation state: ``body_q``, ``body_qd``, ``body_f``, ``joint_q``, ``joint_qd``.

    A solver may leave its output *pending*: ``body_q``, ``body_qd``, ``joint_q`` and ``joint_qd`` are then
    written when they are read (SolverMuJoCo's cpu backend does so). Reading one of them as an attribute
    always gives an array holding the state's values, and an array someone holds is kept current, so
    what a user sees is as if every step had written all four; only the arrays' memory reached without
    the attribute (``vars(state)``, a raw pointer kept from earlier) may be behind. ``_pending`` is the
    solver's object: ``read(state, name)`` returns the array, written first if it is behind, and
    ``release(state)`` writes every array and detaches itself; setting or deleting one of the four
    attributes, copying or pickling the State releases it first.
    """

    body_q = _SolverArray()
    body_qd = _SolverArray()
    joint_q = _SolverArray()
    joint_qd = _SolverArray()
    body_f: wp.array
    _pending = None  # the solver's pending output, or None when the arrays hold the values

    def __getstate__(self):
        if self._pending is not None:
            self._pending.release(self)
        return self.__dict__


class Control:
    """Inputs: ``joint_target_pos``, ``joint_target_vel`` (per DOF, SI), ``joint_f`` (generalized forces),
    and ``mujoco.ctrl`` (one value per MjcActuator prim, as MuJoCo's ctrl)."""

    joint_target_pos: wp.array
    joint_target_vel: wp.array
    joint_f: wp.array


class Contacts:
    """Rigid contacts reported by a solver (see ``SolverBase.update_contacts``), every world's.

    Attributes:
        rigid_contact_count: number of valid entries (an int, updated by the solver), world after world.
        rigid_contact_shape0, rigid_contact_shape1: shape indices (-1 for an unmapped engine geom);
            ``shape_pairs(model)`` gives them as labels.
        rigid_contact_world: the world of each contact.
        rigid_contact_point: world-space contact point; rigid_contact_normal: from shape0 to shape1;
        rigid_contact_depth: penetration depth (positive when penetrating).
        rigid_contact_force: the force shape0 exerts on shape1 (N, world frame; shape1 exerts the opposite),
            as the solver's constraint solve gives it at the reported state.
    """

    def __init__(self, capacity: int, device=None):
        self.capacity = capacity
        self.rigid_contact_count = 0
        self.rigid_contact_shape0 = wp.full(capacity, -1, dtype=wp.int32, device=device)
        self.rigid_contact_shape1 = wp.full(capacity, -1, dtype=wp.int32, device=device)
        self.rigid_contact_world = wp.zeros(capacity, dtype=wp.int32, device=device)
        self.rigid_contact_point = wp.zeros(capacity, dtype=wp.vec3, device=device)
        self.rigid_contact_normal = wp.zeros(capacity, dtype=wp.vec3, device=device)
        self.rigid_contact_depth = wp.zeros(capacity, dtype=wp.float32, device=device)
        self.rigid_contact_force = wp.zeros(capacity, dtype=wp.vec3, device=device)

    def shape_pairs(self, model) -> list:
        """The valid contacts' shape pairs as labels (prim paths; None for an unmapped geom)."""
        n = self.rigid_contact_count
        s0, s1 = self.rigid_contact_shape0.numpy()[:n], self.rigid_contact_shape1.numpy()[:n]
        return [
            (model.shape_label[a] if a >= 0 else None, model.shape_label[b] if b >= 0 else None)
            for a, b in zip(s0, s1, strict=True)
        ]


def _slice(values, lo, hi):
    """``values[lo:hi]`` for lists, numpy and Warp arrays (Warp refuses empty slices)."""
    if isinstance(values, wp.array) and hi <= lo:
        return wp.empty(0, dtype=values.dtype, device=values.device)
    return values[lo:hi]


class JointCone(NamedTuple):
    """A ball joint's cone limit (:meth:`Model.joint_cone`)."""

    limit: float
    """rad: the cone's angle (a UsdPhysics cone: the smaller of its two angles), or MuJoCo's ball range."""
    axis: int | None
    """The UsdPhysics cone's axis (0, 1, 2: X, Y, Z of the joint frame), about which the twist is free; None
    for MuJoCo's ball range (MJCF, MjcJointAPI), which bounds the whole rotation angle."""
    swing: tuple | None
    """rad: an elliptical UsdPhysics cone's limits about its two swing axes, the axis after the cone axis first
    (coneAngle1Limit) and the one after that (coneAngle0Limit); None where circular."""


class _Namespace:
    """A plain attribute bag for solver-specific model values (``model.mujoco.<name>``)."""

    def __repr__(self):
        return f"Namespace({', '.join(sorted(vars(self)))})"
