"""ModelBuilder: accumulates bodies, shapes and joints in Python lists, then finalizes a Model.

This module holds the ``add_*`` methods, element family by element family (bodies, shapes, joints,
constraints, sites, MuJoCo-only values). The builder's other jobs live beside it, each called by a thin
method here: replicating into worlds (:mod:`~newton_usd.core.worlds`), joint coordinates from body poses and back
(:mod:`.joint_coords`), and turning the lists into a Model (:mod:`.finalize`). The records the methods take
(Mesh, Heightfield, JointAxis, Keyframe) are in :mod:`.elements`.
"""

from __future__ import annotations

import math

import numpy as np

from . import inertia as mass_props
from . import joint_coords, particles, worlds
from .actuators import ActuatorSpec
from .elements import EQUALITY_KINDS, Heightfield, JointAxis, Keyframe, Mesh, SdfCollision, to_pose
from .finalize import finalize_model
from .model import Model
from .types import JOINT_COORD_COUNT, DriveMode, GeoType, JointType


def _per_dof(value, nd: int):
    """A joint-wide or per-DOF value as ``nd`` values (a sequence of one value per DOF taken as it is)."""
    if type(value) in (tuple, list):
        if len(value) == nd:
            return value
    elif np.isscalar(value):
        return [float(value)] * nd
    return np.broadcast_to(np.asarray(value, float), (nd,))


_DOF_DIM = {
    JointType.PRISMATIC: (1, 0),
    JointType.REVOLUTE: (0, 1),
    JointType.BALL: (0, 3),
    JointType.FIXED: (0, 0),
    JointType.FREE: (3, 3),
    JointType.ROD: (3, 3),
}
"""(linear, angular) DOFs of the joint types other than D6."""


class ModelBuilder:
    """Builds a :class:`Model` one element at a time.

    Bodies, shapes and joints are added with ``add_*`` methods that return their index; transforms
    are ``(position, quaternion)`` pairs (Warp order) or ``wp.transform``. ``finalize(device)`` turns
    everything into Warp arrays once.

    Args:
        gravity: gravity vector in m/s^2 (Z up by default).
    """

    def __init__(self, gravity=(0.0, 0.0, -9.81)):
        self.gravity = np.asarray(gravity, dtype=np.float64)
        self.source = None
        # MuJoCo-only values: model-wide ones by name (e.g. "option", "flag"), and per-element ones
        # by (kind, name) -> {index: value}; see set_mujoco().
        self.mujoco = {}
        self.mujoco_elements = {}
        # bodies
        self.body_q, self.body_qd, self.body_label = [], [], []
        self.body_mass, self.body_com, self.body_inertia = [], [], []
        self._body_mass_explicit = []
        self.body_kinematic = []
        self.body_max_velocity = []  # (linear m/s, angular rad/s) per body; inf: no bound
        # shapes
        self.shape_body, self.shape_type, self.shape_transform, self.shape_scale = [], [], [], []
        self.shape_source, self.shape_label, self.shape_collision_enabled = [], [], []
        self.shape_material_mu, self.shape_material_restitution = [], []
        self.shape_material_mu_torsional, self.shape_material_mu_rolling = [], []
        self.shape_margin, self.shape_gap = [], []
        self.shape_sdf = []  # an SdfCollision or None, per shape
        # joints
        self.joint_type, self.joint_parent, self.joint_child, self.joint_label = [], [], [], []
        self.joint_X_p, self.joint_X_c, self.joint_q, self.joint_qd = [], [], [], []
        self.joint_dof_dim = []  # (linear DOFs, angular DOFs) per joint
        self.joint_articulation = []
        # per DOF
        self.joint_axis, self.joint_limit_lower, self.joint_limit_upper, self.joint_limited = [], [], [], []
        self.joint_target_ke, self.joint_target_kd, self.joint_target_mode = [], [], []
        self.joint_target_pos, self.joint_target_vel = [], []
        self.joint_effort_limit, self.joint_armature, self.joint_friction = [], [], []
        self.joint_drive_acceleration = []
        self.joint_limit_ke, self.joint_limit_kd = [], []  # soft limits (NaN: the engine's)
        # articulations
        self.articulation_label = []
        # body pairs (b1 < b2) that must not collide with each other
        self.body_collision_filter_pairs = []
        # (body, static shape) pairs: the body's colliders must not collide with that static collider
        self.body_shape_collision_filter_pairs = []
        # sites: frames on bodies (attachment points for actuators, tendons, sensors)
        self.site_body, self.site_transform, self.site_type, self.site_size, self.site_label = [], [], [], [], []
        # equality constraints (loop closures): see add_equality
        self.equality_type, self.equality_body1, self.equality_body2 = [], [], []
        self.equality_anchor, self.equality_active, self.equality_label = [], [], []
        self.equality_relpose = []  # (pos, quat) or None: the initial relative pose
        self.equality_anchor2 = []  # connect: body2's point (None: where anchor is initially)
        self.equality_joint1, self.equality_joint2, self.equality_polycoef = [], [], []  # joint equalities
        # keyframes: label -> Keyframe (a dict: keyframes are shared by all worlds, not replicated)
        self.keyframes = {}
        # distance constraints: see add_distance_constraint
        self.distance_body0, self.distance_body1, self.distance_anchor0, self.distance_anchor1 = [], [], [], []
        self.distance_min, self.distance_max, self.distance_label = [], [], []
        # joint actuators: see add_actuator
        self.actuator_joint, self.actuator_spec, self.actuator_label = [], [], []
        # particles (granular grains, deformables' points): per particle, and per prim its run of particles
        self.particle_q, self.particle_qd, self.particle_mass, self.particle_radius = [], [], [], []
        self.particle_groups = {}  # prim path -> (first particle, end): the rows written onto that prim
        self.particle_attributes = {}  # "namespace:name" -> per-particle values (a solver's, e.g. "mpm:friction")
        self.mpm_config = {}  # the MPM scene's solver settings (SolverImplicitMPM.Config field -> value, SI)
        self.cloth, self.volumes, self.vbd_config = [], [], {}  # core/deformables' Cloth, Volume; VBD scene (SI)
        self.cables = []  # core/cables' Cable per cable prim (its segments are bodies, its rod joints joints)
        # the source's own names (label -> name) where they are not the label's leaf: an authored USD
        # displayName, an MJCF element's whole name (attach prefixes kept); see element_name()
        self.element_names = {}
        # worlds: replicate() makes num_worlds identical copies, world after world
        self.num_worlds = 1

    # ------------------------------------------------------------------ counts
    def labels(self):
        """Every element's label: bodies, shapes, joints, sites, equalities, distance constraints,
        keyframes, and the MuJoCo-only elements (tendons, actuators, contact pairs: their ``path``)."""
        for kind in ("body", "shape", "joint", "site", "equality", "distance", "articulation", "actuator"):
            yield from getattr(self, f"{kind}_label")
        yield from self.keyframes
        for entries in self.mujoco.values():
            if isinstance(entries, list):
                yield from (e["path"] for e in entries if isinstance(e, dict) and "path" in e)

    @property
    def particle_count(self) -> int:
        return len(self.particle_q)

    @property
    def body_count(self) -> int:
        return len(self.body_q)

    @property
    def shape_count(self) -> int:
        return len(self.shape_type)

    @property
    def joint_count(self) -> int:
        return len(self.joint_type)

    # ------------------------------------------------------------------ worlds
    def replicate(self, num_worlds: int, *, placements=None, local=None, relabel=None) -> None:
        """Make the model ``num_worlds`` independent worlds: everything added so far becomes world 0 and
        is copied into worlds 1 .. n-1 (bodies, static shapes, joints, sites, constraints, keyframes,
        MuJoCo values). Worlds do not interact. Call it once, after everything is added.

        Without arguments the worlds are identical: same places, same labels (a prim path names its
        element in every world), same initial state.

        Args:
            placements: one rigid transform per world (``(pos, quat)`` or ``wp.transform``; the first,
                world 0's, is not applied): world w's copy of the *local* elements is world 0's moved by
                ``placements[w]`` (body poses and velocities, free-joint coordinates, the world-side frames
                of joints to the world, static shapes, sites and constraint anchors on the world). E.g.
                environments at their own places, as in a stage's ``/World/envs/env_i``.
            local: ``label -> bool``, which elements move with their world (default: all). A body is
                local by its label, a static shape or world site by its own, a joint or constraint to the
                world by its body. The others (a shared ground) stay where they are in every world.
            relabel: ``(label, world) -> label`` of the copies (default: the labels are kept).
        """
        worlds.replicate(self, num_worlds, placements=placements, local=local, relabel=relabel)

    def _check_not_replicated(self):
        if self.num_worlds != 1:
            raise ValueError("the builder was replicated into worlds: add everything before replicate()")

    # ------------------------------------------------------------------ bodies
    def add_body(
        self, xform=None, *, mass=None, com=None, inertia=None, velocity=None, label=None, kinematic=False
    ) -> int:
        """Add a rigid body.

        Args:
            xform: body frame in world.
            mass, com, inertia: explicit mass properties (kg; COM in the body frame; 3x3 about the COM).
                When ``mass`` is None, the body's mass comes from the density of its shapes.
            velocity: initial spatial velocity (linear velocity of the body origin, angular), world frame.
            label: a unique name, by convention the prim path.
            kinematic: the body's pose is prescribed (``State.body_q``), not simulated; weld it to the
                world (``add_joint_fixed(-1, body)``) and the solver moves it where the state says
                (SolverMuJoCo: a mocap body), dynamic bodies colliding with it.
        """
        self._check_not_replicated()
        p, q = to_pose(xform)
        self.body_q.append((p, q))
        self.body_kinematic.append(bool(kinematic))
        self.body_max_velocity.append((math.inf, math.inf))
        self.body_qd.append(np.zeros(6) if velocity is None else np.asarray(velocity, dtype=np.float64))
        self.body_label.append(label or f"body_{len(self.body_label)}")
        explicit = mass is not None
        self._body_mass_explicit.append(explicit)
        self.body_mass.append(float(mass) if explicit else 0.0)
        self.body_com.append(np.zeros(3) if com is None else np.asarray(com, dtype=np.float64))
        self.body_inertia.append(
            np.zeros((3, 3)) if inertia is None else np.asarray(inertia, dtype=np.float64).reshape(3, 3)
        )
        return len(self.body_q) - 1

    def set_body_max_velocity(self, body: int, linear: float = math.inf, angular: float = math.inf):
        """Bound the body's speed: its center of mass's (m/s) and its angular speed (rad/s), as PhysX's
        ``maxLinearVelocity`` and ``maxAngularVelocity`` do (inf: no bound)."""
        if not (linear > 0 and angular > 0):
            raise ValueError(f"velocity bounds must be positive, got {linear}, {angular}")
        self.body_max_velocity[body] = (float(linear), float(angular))

    def set_body_mass(self, body: int, mass: float, com=None, inertia=None):
        """Set a body's mass properties explicitly; shapes added later no longer add to them."""
        self._body_mass_explicit[body] = True
        self.body_mass[body] = float(mass)
        if com is not None:
            self.body_com[body] = np.asarray(com, dtype=np.float64)
        if inertia is not None:
            self.body_inertia[body] = np.asarray(inertia, dtype=np.float64).reshape(3, 3)

    # ------------------------------------------------------------------ shapes
    def add_shape(
        self,
        body: int,
        geo_type: GeoType,
        xform=None,
        scale=(0.0, 0.0, 0.0),
        *,
        mesh: Mesh | Heightfield | None = None,
        density: float = 0.0,
        mu: float = 1.0,
        restitution: float = 0.0,
        mu_torsional: float = 0.005,
        mu_rolling: float = 0.0001,
        margin: float = 0.0,
        gap: float = 0.0,
        collision_enabled: bool = True,
        label: str | None = None,
        sdf: SdfCollision | None = None,
    ) -> int:
        """Add a collision shape to ``body`` (-1: a static shape of the world).

        With ``density > 0`` the shape's mass properties are added to its body (unless the body's mass
        was set explicitly). See :class:`GeoType` for what ``scale`` holds per type. ``mu`` is the
        sliding friction coefficient, ``mu_torsional`` and ``mu_rolling`` are in meters (MuJoCo's
        convention); contacts are detected within ``margin + gap`` and active within ``margin``.
        ``mesh``: the :class:`Mesh` of a MESH shape, the :class:`Heightfield` of an HFIELD shape.
        ``sdf``: a MESH shape's :class:`SdfCollision` settings (None: it collides as its mesh).
        """
        self._check_not_replicated()
        p, q = to_pose(xform)
        geo_type = GeoType(geo_type)
        if geo_type == GeoType.MESH and not isinstance(mesh, Mesh):
            raise ValueError("a mesh shape needs a Mesh")
        if geo_type == GeoType.HFIELD and not isinstance(mesh, Heightfield):
            raise ValueError("a height field shape needs a Heightfield")
        self.shape_body.append(int(body))
        self.shape_type.append(geo_type)
        self.shape_transform.append((p, q))
        self.shape_scale.append(np.asarray(scale, dtype=np.float64))
        self.shape_source.append(mesh)
        self.shape_collision_enabled.append(bool(collision_enabled))
        self.shape_material_mu.append(float(mu))
        self.shape_material_restitution.append(float(restitution))
        self.shape_material_mu_torsional.append(float(mu_torsional))
        self.shape_material_mu_rolling.append(float(mu_rolling))
        self.shape_margin.append(float(margin))
        self.shape_gap.append(float(gap))
        self.shape_sdf.append(sdf)
        self.shape_label.append(label or f"shape_{len(self.shape_label)}")
        if body >= 0 and density > 0.0 and not self._body_mass_explicit[body]:
            part = mass_props.shape_mass_properties(geo_type, scale, density, mesh)
            part = mass_props.transform_inertia(*part, p, q)
            current = (self.body_mass[body], self.body_com[body], self.body_inertia[body])
            m, c, i = mass_props.combine([current, part] if current[0] > 0 else [part])
            self.body_mass[body], self.body_com[body], self.body_inertia[body] = m, c, i
        return len(self.shape_type) - 1

    def add_shape_box(self, body, xform=None, hx=0.5, hy=0.5, hz=0.5, **kw) -> int:
        return self.add_shape(body, GeoType.BOX, xform, (hx, hy, hz), **kw)

    def add_shape_sphere(self, body, xform=None, radius=0.5, **kw) -> int:
        return self.add_shape(body, GeoType.SPHERE, xform, (radius, 0.0, 0.0), **kw)

    def add_shape_capsule(self, body, xform=None, radius=0.5, half_height=0.5, **kw) -> int:
        return self.add_shape(body, GeoType.CAPSULE, xform, (radius, half_height, 0.0), **kw)

    def add_shape_cylinder(self, body, xform=None, radius=0.5, half_height=0.5, **kw) -> int:
        return self.add_shape(body, GeoType.CYLINDER, xform, (radius, half_height, 0.0), **kw)

    def add_shape_plane(self, body=-1, xform=None, width=0.0, length=0.0, **kw) -> int:
        """A plane whose normal is the shape frame's +Z; zero width/length: infinite."""
        return self.add_shape(body, GeoType.PLANE, xform, (0.5 * width, 0.5 * length, 0.0), **kw)

    def add_shape_mesh(self, body, xform=None, mesh: Mesh | None = None, scale=(1.0, 1.0, 1.0), **kw) -> int:
        return self.add_shape(body, GeoType.MESH, xform, scale, mesh=mesh, **kw)

    # ------------------------------------------------------------------ joints
    def add_joint(
        self,
        joint_type: JointType,
        parent: int,
        child: int,
        parent_xform=None,
        child_xform=None,
        *,
        axis=(1.0, 0.0, 0.0),
        limit_lower: float | None = None,
        limit_upper: float | None = None,
        target_ke: float = 0.0,
        target_kd: float = 0.0,
        target_pos: float = 0.0,
        target_vel: float = 0.0,
        target_mode: DriveMode | None = None,
        effort_limit: float = math.inf,
        drive_acceleration: bool = False,
        limit_ke: float = math.nan,
        limit_kd: float = math.nan,
        armature: float = 0.0,
        friction: float = 0.0,
        articulation: int = -1,
        label: str | None = None,
    ) -> int:
        """Add a joint between ``parent`` (-1: world) and ``child``.

        ``parent_xform`` and ``child_xform`` are the joint frame in each body's frame; ``axis`` (in the
        joint frame) is used by revolute and prismatic joints. Limits (rad or m) are off when None.
        Drive gains are SI (N/m, N*s/m, N*m/rad, N*m*s/rad); ``target_mode`` defaults to what the gains
        imply; with ``drive_acceleration`` the gains are accelerations per error (1/s^2, 1/s) that the
        solver scales by the DOF's effective inertia, so the motion does not depend on the mass.
        ``limit_ke``/``limit_kd``: a soft limit's stiffness and damping (SI, per rad or m; NaN: the engine's).
        ``armature`` (kg*m^2 or kg) and ``friction`` (dry friction loss, N*m or N) apply to every DOF of
        the joint. The initial coordinates are zero; see :meth:`joint_q_from_body_q` to
        take them from the body poses instead. D6 joints: :meth:`add_joint_d6`.
        """
        joint_type = JointType(joint_type)
        if joint_type == JointType.D6:
            raise ValueError("use add_joint_d6 for D6 joints")
        scalar = joint_type in (JointType.PRISMATIC, JointType.REVOLUTE)
        dofs = []
        if scalar:
            dofs.append(
                JointAxis(
                    axis,
                    limit_lower,
                    limit_upper,
                    target_ke,
                    target_kd,
                    target_pos,
                    target_vel,
                    target_mode,
                    effort_limit,
                    drive_acceleration,
                    limit_ke,
                    limit_kd,
                )
            )
        else:
            nd = JOINT_COORD_COUNT[joint_type][1]
            eye = np.eye(3)
            dofs = [JointAxis(eye[d % 3], effort_limit=effort_limit) for d in range(nd)]
        return self._add_joint(
            joint_type,
            parent,
            child,
            parent_xform,
            child_xform,
            dofs,
            _DOF_DIM[joint_type],
            JOINT_COORD_COUNT[joint_type][0],
            armature,
            friction,
            articulation,
            label,
        )

    def add_joint_d6(
        self,
        parent: int,
        child: int,
        parent_xform=None,
        child_xform=None,
        *,
        linear_axes=(),
        angular_axes=(),
        armature: float | tuple = 0.0,
        friction: float | tuple = 0.0,
        articulation: int = -1,
        label: str | None = None,
    ) -> int:
        """A generic joint: translations along ``linear_axes`` then rotations about ``angular_axes``
        (each a :class:`JointAxis`, axes in the joint frame), one coordinate each. With no axis it is
        a fixed joint. ``armature`` and ``friction`` may be given per DOF (linear first)."""
        dofs = [JointAxis(*a) if not isinstance(a, JointAxis) else a for a in list(linear_axes) + list(angular_axes)]
        n = len(dofs)
        return self._add_joint(
            JointType.D6,
            parent,
            child,
            parent_xform,
            child_xform,
            dofs,
            (len(linear_axes), len(angular_axes)),
            n,
            armature,
            friction,
            articulation,
            label,
        )

    def _add_joint(
        self,
        joint_type,
        parent,
        child,
        parent_xform,
        child_xform,
        dofs,
        dim,
        nq,
        armature,
        friction,
        articulation,
        label,
    ) -> int:
        self._check_not_replicated()
        if child < 0 or child >= self.body_count:
            raise ValueError(f"joint child body {child} does not exist")
        nd = len(dofs)
        self.joint_type.append(joint_type)
        self.joint_parent.append(int(parent))
        self.joint_child.append(int(child))
        self.joint_X_p.append(to_pose(parent_xform))
        self.joint_X_c.append(to_pose(child_xform))
        self.joint_dof_dim.append(dim)
        q0 = np.zeros(nq)
        if joint_type in (JointType.BALL, JointType.ROD):
            q0[-1] = 1.0
        elif joint_type == JointType.FREE:
            q0[:3], q0[3:] = self.body_q[child]
        self.joint_q.append(q0)
        self.joint_qd.append(np.zeros(nd))
        self.joint_articulation.append(int(articulation))
        self.joint_label.append(label or f"joint_{len(self.joint_label)}")
        per_dof = joint_type in (JointType.PRISMATIC, JointType.REVOLUTE, JointType.D6)
        arm, fri = _per_dof(armature, nd), _per_dof(friction, nd)
        for d, ax in enumerate(dofs):
            a = np.asarray(ax.axis, dtype=np.float64)
            self.joint_axis.append(a / math.sqrt(float(a @ a)))
            limited = per_dof and (ax.limit_lower is not None or ax.limit_upper is not None)
            self.joint_limited.append(limited)
            self.joint_limit_lower.append(
                float(ax.limit_lower) if limited and ax.limit_lower is not None else -math.inf
            )
            self.joint_limit_upper.append(float(ax.limit_upper) if limited and ax.limit_upper is not None else math.inf)
            mode = ax.target_mode
            if mode is None:
                mode = (
                    DriveMode(int(ax.target_ke > 0.0) | (int(ax.target_kd > 0.0) << 1)) if per_dof else DriveMode.NONE
                )
            self.joint_target_ke.append(float(ax.target_ke) if per_dof else 0.0)
            self.joint_target_kd.append(float(ax.target_kd) if per_dof else 0.0)
            self.joint_target_mode.append(int(mode) if per_dof else 0)
            self.joint_target_pos.append(float(ax.target_pos) if per_dof else 0.0)
            self.joint_target_vel.append(float(ax.target_vel) if per_dof else 0.0)
            self.joint_effort_limit.append(float(ax.effort_limit))
            self.joint_drive_acceleration.append(bool(ax.drive_acceleration) and per_dof)
            soft = limited and math.isfinite(ax.limit_ke) and ax.limit_ke > 0.0
            self.joint_limit_ke.append(float(ax.limit_ke) if soft else math.nan)
            kd = float(ax.limit_kd) if math.isfinite(ax.limit_kd) else 0.0
            self.joint_limit_kd.append(max(kd, 0.0) if soft else math.nan)
            self.joint_armature.append(float(arm[d]))
            self.joint_friction.append(float(fri[d]))
        return len(self.joint_type) - 1

    def add_joint_revolute(self, parent, child, parent_xform=None, child_xform=None, axis=(1.0, 0.0, 0.0), **kw):
        return self.add_joint(JointType.REVOLUTE, parent, child, parent_xform, child_xform, axis=axis, **kw)

    def add_joint_prismatic(self, parent, child, parent_xform=None, child_xform=None, axis=(1.0, 0.0, 0.0), **kw):
        return self.add_joint(JointType.PRISMATIC, parent, child, parent_xform, child_xform, axis=axis, **kw)

    def add_joint_ball(self, parent, child, parent_xform=None, child_xform=None, **kw):
        return self.add_joint(JointType.BALL, parent, child, parent_xform, child_xform, **kw)

    def add_joint_fixed(self, parent, child, parent_xform=None, child_xform=None, **kw):
        return self.add_joint(JointType.FIXED, parent, child, parent_xform, child_xform, **kw)

    def add_joint_free(self, child, label=None, **kw):
        """A free joint from the world to ``child``; its coordinates are the body's pose and velocity."""
        j = self.add_joint(JointType.FREE, -1, child, label=label, **kw)
        v = self.body_qd[child]
        self.joint_qd[j] = np.asarray(v, dtype=np.float64).copy()
        return j

    def add_equality(
        self, kind: str, body1: int, body2: int, anchor, *, anchor2=None, active: bool = True, relpose=None,
        label=None,
    ) -> int:  # fmt: skip
        """A loop-closing constraint between ``body1`` and ``body2`` (-1: the world).

        ``kind`` "connect": the point ``anchor`` (in body1's frame) and the point ``anchor2`` of body2 (in
        body2's frame; None: the point that coincides with ``anchor`` in the initial configuration) stay
        together (a ball joint). "weld": body2 keeps the pose ``relpose`` (position, Warp quat) relative to
        body1, by default its initial one; ``anchor`` (in body2's frame) is where the constraint acts.
        For joint equalities see :meth:`add_equality_joint`.
        """
        if kind not in ("connect", "weld"):
            raise ValueError(f"unknown equality kind {kind!r}; valid: connect, weld (joint: add_equality_joint)")
        i = self._add_equality_row(kind, active, label)
        self.equality_body1[i], self.equality_body2[i] = int(body1), int(body2)
        self.equality_anchor[i] = np.asarray(anchor, dtype=np.float64)
        self.equality_relpose[i] = None if relpose is None else to_pose(relpose)
        self.equality_anchor2[i] = None if anchor2 is None else np.asarray(anchor2, dtype=np.float64)
        return i

    def add_equality_joint(
        self, joint1: int, joint2: int = -1, polycoef=(0.0, 1.0, 0.0, 0.0, 0.0), *, active: bool = True, label=None
    ) -> int:
        """Couple two single-DOF joints (revolute or prismatic): ``q1 = p(q2)`` with the polynomial
        ``p(x) = c0 + c1 x + c2 x^2 + c3 x^3 + c4 x^4`` of ``polycoef`` (up to 5 coefficients), in model
        coordinates (rad or m). ``joint2`` -1: ``joint1`` is held at ``c0``. A mimic joint is
        ``polycoef=(offset, ratio)``."""
        coef = np.zeros(5)
        values = np.asarray(polycoef, dtype=np.float64).ravel()
        if len(values) > 5:
            raise ValueError(f"a joint equality has at most 5 polynomial coefficients, got {len(values)}")
        coef[: len(values)] = values
        for j in (joint1, joint2):
            if j >= 0 and len(self.joint_qd[j]) != 1:
                raise ValueError(f"joint equality on {self.joint_label[j]}: only single-DOF joints can be coupled")
        i = self._add_equality_row("joint", active, label)
        self.equality_joint1[i], self.equality_joint2[i] = int(joint1), int(joint2)
        self.equality_polycoef[i] = coef
        return i

    def _add_equality_row(self, kind, active, label) -> int:
        """A new equality row with every column at its "not used" value; returns its index."""
        self._check_not_replicated()
        self.equality_type.append(EQUALITY_KINDS.index(kind))
        self.equality_body1.append(-1)
        self.equality_body2.append(-1)
        self.equality_anchor.append(np.zeros(3))
        self.equality_anchor2.append(None)
        self.equality_relpose.append(None)
        self.equality_joint1.append(-1)
        self.equality_joint2.append(-1)
        self.equality_polycoef.append(np.zeros(5))
        self.equality_active.append(bool(active))
        self.equality_label.append(label or f"equality_{len(self.equality_label)}")
        return len(self.equality_type) - 1

    def add_keyframe(self, label: str, joint_q=None, joint_qd=None, *, time: float = 0.0) -> None:
        """A named state to reset to (MJCF ``<key>``, an MjcKeyframe prim): ``joint_q`` and ``joint_qd`` map
        a joint index to its coordinates and velocities (model conventions, as ``joint_q``/``joint_qd``);
        joints not named keep their initial values. Keyframes hold for every world."""
        for name, values, sizes in (("joint_q", joint_q, self.joint_q), ("joint_qd", joint_qd, self.joint_qd)):
            for j, v in (values or {}).items():
                if np.size(v) != len(sizes[j]):
                    raise ValueError(
                        f"keyframe {label!r}: {name} of joint {self.joint_label[j]} has {np.size(v)} values, "
                        f"the joint has {len(sizes[j])}"
                    )
        self.keyframes[label] = Keyframe(
            float(time),
            {int(j): np.asarray(v, dtype=np.float64).ravel() for j, v in (joint_q or {}).items()},
            {int(j): np.asarray(v, dtype=np.float64).ravel() for j, v in (joint_qd or {}).items()},
        )

    def add_distance_constraint(
        self, body0: int, body1: int, anchor0=(0.0, 0.0, 0.0), anchor1=(0.0, 0.0, 0.0), *, min_distance=None,
        max_distance=None, label=None,
    ) -> int:  # fmt: skip
        """Keep the distance between point ``anchor0`` of ``body0`` and point ``anchor1`` of ``body1`` (each
        in its body's frame; body -1: a world point) within ``[min_distance, max_distance]`` (m; None: no
        bound on that side). A constraint beside the joint tree, like a rope (max) or a strut (both)."""
        self._check_not_replicated()
        if body0 == body1:
            raise ValueError("a distance constraint needs two different bodies")
        lo = None if min_distance is None else float(min_distance)
        hi = None if max_distance is None else float(max_distance)
        if lo is None and hi is None:
            raise ValueError("a distance constraint needs a minimum, a maximum or both")
        if lo is not None and hi is not None and lo > hi:
            raise ValueError(f"min_distance {lo} > max_distance {hi}")
        self.distance_body0.append(int(body0))
        self.distance_body1.append(int(body1))
        self.distance_anchor0.append(np.asarray(anchor0, dtype=np.float64))
        self.distance_anchor1.append(np.asarray(anchor1, dtype=np.float64))
        self.distance_min.append(-1.0 if lo is None else max(lo, 0.0))
        self.distance_max.append(-1.0 if hi is None else hi)
        self.distance_label.append(label or f"distance_{len(self.distance_label)}")
        return len(self.distance_label) - 1

    def add_site(self, body: int, xform=None, *, geo_type: GeoType = GeoType.SPHERE, size=(0.01, 0.0, 0.0), label=None):
        """A site: a frame on ``body`` (-1: the world) that actuators, tendons and sensors can refer to.

        ``geo_type`` and ``size`` (as :class:`GeoType`'s ``shape_scale``) are for display only.
        """
        self._check_not_replicated()
        self.site_body.append(int(body))
        self.site_transform.append(to_pose(xform))
        self.site_type.append(GeoType(geo_type))
        self.site_size.append(np.asarray(size, dtype=np.float64))
        self.site_label.append(label or f"site_{len(self.site_label)}")
        return len(self.site_label) - 1

    def add_actuator(self, joint: int, spec: ActuatorSpec, label: str | None = None) -> int:
        """A joint actuator (:class:`~newton_usd.core.actuators.ActuatorSpec`) driving the one DOF of ``joint``
        (a revolute or prismatic joint): its effort is computed each step from the joint's state and drive targets
        (``Control.joint_target_pos``/``joint_target_vel``) and applied as a generalized force."""
        self._check_not_replicated()
        self.actuator_joint.append(int(joint))
        self.actuator_spec.append(spec)
        self.actuator_label.append(label or f"actuator_{len(self.actuator_label)}")
        return len(self.actuator_label) - 1

    def add_articulation(self, joints, label: str | None = None) -> int:
        """Group ``joints`` into one articulation (e.g. under an ArticulationRootAPI prim)."""
        idx = len(self.articulation_label)
        self.articulation_label.append(label or f"articulation_{idx}")
        for j in joints:
            self.joint_articulation[j] = idx
        return idx

    # ------------------------------------------------------------------ solver-specific values
    def set_mujoco(self, kind: str, name: str, index: int, value) -> None:
        """Record a MuJoCo-only value of element ``index`` of ``kind`` ("body", "shape", "joint", "dof",
        "equality", "site").

        ``finalize`` turns each name into ``model.mujoco.<name>``: a float64 numpy array over all
        elements of that kind (trailing dimension for vector values), NaN where nothing was set.
        """
        if kind not in ("body", "shape", "joint", "dof", "equality", "site"):
            raise ValueError(f"unknown element kind {kind!r}")
        self.mujoco_elements.setdefault((kind, name), {})[index] = value

    def get_mujoco(self, kind: str, name: str, index: int, default=None):
        """The MuJoCo-only value recorded by :meth:`set_mujoco` for element ``index``, else ``default``."""
        return self.mujoco_elements.get((kind, name), {}).get(index, default)

    # ------------------------------------------------------------------ joint coordinates
    def joint_q_from_body_q(self):
        """Set every joint's coordinates from the current body poses (the authored configuration).

        Revolute: the angle of the child joint frame about the axis relative to the parent joint frame;
        prismatic: the offset along the axis; ball: the relative rotation; free: the body pose.
        Several joints between the same two bodies (a stack, e.g. slide x, slide z, hinge y of a planar
        robot) compose in the order they were added; each takes its share of the relative motion.
        """
        joint_coords.joint_q_from_body_q(self)

    def joint_qd_from_body_qd(self):
        """Set joint velocities from the bodies' authored velocities (origin linear velocity, angular
        velocity, world frame), for joints other than free ones: each DOF takes the projection of the
        child's velocity relative to its parent on its axis (ball joints: the relative angular
        velocity in the child joint frame)."""
        joint_coords.joint_qd_from_body_qd(self)

    def body_q_from_joint_q(self, children=None):
        """Set the body poses from the joint coordinates (forward kinematics), parents first.

        Bodies without a joint keep their pose; a joint's child is placed at X_p * J(q) * X_c^-1 on its
        parent (the first joint of a stack places it, every joint of the stack moves it, in order).
        ``children`` (body indices): place only these, each on its parent's pose as it is then.
        """
        joint_coords.body_q_from_joint_q(self, children)

    # ------------------------------------------------------------------ particles
    def add_particles(self, label: str, pos, vel, mass, radius, attributes: dict | None = None) -> tuple[int, int]:
        """Add the particles of the prim ``label``; returns their run ``(first, end)``. See
        :func:`~newton_usd.core.particles.add_particles`."""
        self._check_not_replicated()
        return particles.add_particles(self, label, pos, vel, mass, radius, attributes)

    # ------------------------------------------------------------------ finalize
    def finalize(self, device=None) -> Model:
        """Turn the accumulated lists into a :class:`Model` of Warp arrays on ``device``."""
        return finalize_model(self, device)

    # ------------------------------------------------------------------ importers
    def add_mjcf(self, source, **kwargs):
        """Import an MJCF model (a path or XML text). See :func:`newton_usd.mjcf.add_mjcf`."""
        from ..mjcf.importer import add_mjcf  # noqa: PLC0415  (core must not import MuJoCo at module load)

        return add_mjcf(self, source, **kwargs)

    def add_usd(self, source, **kwargs):
        """Import a UsdPhysics stage (a path or a ``Usd.Stage``). See :func:`newton_usd.usd.add_usd`."""
        from ..usd.importer import add_usd  # noqa: PLC0415  (core must not import USD at module load)

        return add_usd(self, source, **kwargs)
