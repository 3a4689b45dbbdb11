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

import warp as wp


class Model:
    """Static description of what is simulated. Made by :meth:`ModelBuilder.finalize`.

    Attributes (arrays are ``wp.array`` on :attr:`device`; counts are ints):
        body_count, shape_count, joint_count, joint_coord_count, joint_dof_count, articulation_count.
        body_q, body_qd: initial body poses and velocities (copied into each new State).
        body_com, body_mass, body_inv_mass, body_inertia, body_inv_inertia: mass properties; COM in
            the body frame, inertia about the COM in body-frame axes.
        body_world: world index of each body. body_label: list of prim paths.
        shape_body (-1: static, attached to the world), shape_type (:class:`GeoType`),
        shape_transform (shape frame in its body frame), shape_scale (size parameters),
        shape_source (list: a :class:`Mesh` or None), shape_material_mu, shape_material_restitution,
        shape_material_mu_torsional, shape_material_mu_rolling (m), shape_margin, shape_gap (m),
        shape_collision_enabled, shape_world, shape_label.
        joint_type (:class:`JointType`), joint_parent (-1: world), joint_child, joint_X_p (joint
            frame in the parent body frame), joint_X_c (joint frame in the child body frame),
            joint_q_start, joint_qd_start (length joint_count + 1), joint_q, joint_qd (initial),
            joint_axis, joint_limit_lower, joint_limit_upper, joint_limited, joint_target_ke,
            joint_target_kd, joint_target_mode, joint_drive_acceleration (gains are accelerations, scaled
            by the DOF's effective inertia), joint_effort_limit, joint_armature, joint_friction (per DOF),
            joint_articulation (-1: none), joint_world, joint_label.
        equality_count, equality_type (0 connect, 1 weld), equality_body1, equality_body2 (-1: world),
            equality_anchor, equality_active, equality_label: loop-closing constraints
            (see :meth:`ModelBuilder.add_equality`).
        body_collision_filter_pairs: list of body pairs (b1 < b2) that do not collide.
        site_count, site_body (-1: world), site_transform (in the body frame), site_type, site_size,
            site_label: sites, frames that actuators, tendons and sensors attach to.
        articulation_start (first joint of each articulation, plus the joint count),
            articulation_label.
        gravity: ``wp.vec3`` in m/s^2.
        mujoco: namespace for MuJoCo-only values (filled by importers; read by SolverMuJoCo):
            ``option`` and ``flag`` dicts (``mjc:option:*``, ``mjc:flag:*`` by MuJoCo name) and per-element
            float64 arrays with NaN where unset (``dof_damping``, ``geom_solref``, ...).
        source: where the model came from (e.g. a USD file path), for messages.
    """

    def __init__(self, device=None):
        self.device = wp.get_device(device)
        self.num_worlds = 1
        self.gravity = wp.vec3(0.0, 0.0, -9.81)
        self.mujoco = _Namespace()
        self.source = None

    def state(self) -> "State":
        """A new State holding copies of the model's initial body and joint state."""
        s = State()
        s.body_q = wp.clone(self.body_q)
        s.body_qd = wp.clone(self.body_qd)
        s.joint_q = wp.clone(self.joint_q)
        s.joint_qd = wp.clone(self.joint_qd)
        s.body_f = wp.zeros_like(self.body_qd)
        return s

    def control(self) -> "Control":
        """A new Control with the authored drive targets and zero joint forces."""
        c = Control()
        c.joint_target_pos = wp.clone(self.joint_target_pos)
        c.joint_target_vel = wp.clone(self.joint_target_vel)
        c.joint_f = wp.zeros(self.joint_dof_count, dtype=wp.float32, device=self.device)
        c.mujoco = _Namespace()
        # One control per MjcActuator prim (model.mujoco.actuator), in its own units.
        c.mujoco.ctrl = wp.zeros(len(getattr(self.mujoco, "actuator", ())), dtype=wp.float32, device=self.device)
        return c

    def contacts(self, capacity: int = 1024) -> "Contacts":
        """A new, empty Contacts buffer able to hold ``capacity`` rigid contacts."""
        return Contacts(capacity, self.device)


class State:
    """Time-varying simulation state: ``body_q``, ``body_qd``, ``body_f``, ``joint_q``, ``joint_qd``."""

    body_q: wp.array
    body_qd: wp.array
    body_f: wp.array
    joint_q: wp.array
    joint_qd: wp.array


class Control:
    """Inputs: ``joint_target_pos``, ``joint_target_vel`` (per DOF, SI), ``joint_f`` (generalized forces),
    and ``mujoco.ctrl`` (one value per MjcActuator prim, as MuJoCo's ctrl)."""

    joint_target_pos: wp.array
    joint_target_vel: wp.array
    joint_f: wp.array


class Contacts:
    """Rigid contacts reported by a solver (see ``SolverMuJoCo.update_contacts``).

    Attributes:
        rigid_contact_count: number of valid entries (an int, updated by the solver).
        rigid_contact_shape0, rigid_contact_shape1: shape indices (-1 for an unmapped engine geom).
        rigid_contact_point: world-space contact point; rigid_contact_normal: from shape0 to shape1;
        rigid_contact_depth: penetration depth (positive when penetrating).
    """

    def __init__(self, capacity: int, device=None):
        self.capacity = capacity
        self.rigid_contact_count = 0
        self.rigid_contact_shape0 = wp.full(capacity, -1, dtype=wp.int32, device=device)
        self.rigid_contact_shape1 = wp.full(capacity, -1, dtype=wp.int32, device=device)
        self.rigid_contact_point = wp.zeros(capacity, dtype=wp.vec3, device=device)
        self.rigid_contact_normal = wp.zeros(capacity, dtype=wp.vec3, device=device)
        self.rigid_contact_depth = wp.zeros(capacity, dtype=wp.float32, device=device)


class _Namespace:
    """A plain attribute bag for solver-specific model values (``model.mujoco.<name>``)."""

    def __repr__(self):
        return f"Namespace({', '.join(sorted(vars(self)))})"
