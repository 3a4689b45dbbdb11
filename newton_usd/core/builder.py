"""ModelBuilder: accumulates bodies, shapes and joints in Python lists, then finalizes a Model."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np
import warp as wp

from . import inertia as mass_props
from .kinematics import joint_motions
from .model import Model
from .quat import (
    cross,
    multiply4,
    quat_conjugate,
    quat_from_axis_angle,
    quat_rotate,
    rotate3,
    transform_inverse,
    transform_multiply,
)
from .types import JOINT_COORD_COUNT, DriveMode, GeoType, JointType

IDENTITY = (np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0]))
EQUALITY_KINDS = ("connect", "weld", "joint")
"""Equality constraint kinds; ``equality_type`` holds the index."""


@dataclass
class Keyframe:
    """A named state to reset to: coordinates of some joints (the others keep their initial values)."""

    time: float = 0.0
    joint_q: dict = None  # joint index -> its coordinates (model coordinates, as joint_q)
    joint_qd: dict = None  # joint index -> its velocities (as joint_qd)
    # Values of one world's joint (index over all worlds) that differ from world 0's: the free joints of
    # worlds placed elsewhere (see ModelBuilder.replicate's placements).
    world_joint_q: dict = None
    world_joint_qd: dict = None


@dataclass
class Mesh:
    """A triangle mesh in its shape frame: ``vertices`` (N, 3) and ``indices`` (3 per triangle)."""

    vertices: np.ndarray
    indices: np.ndarray

    def __post_init__(self):
        self.vertices = np.asarray(self.vertices, dtype=np.float64).reshape(-1, 3)
        self.indices = np.asarray(self.indices, dtype=np.int32).reshape(-1)


@dataclass
class Heightfield:
    """A height field in its shape frame (MuJoCo's hfield): ``elevation`` (rows along Y, columns along X,
    normalized to [0, 1]) spans ``[-size[0], size[0]] x [-size[1], size[1]]``; heights run from 0 to
    ``size[2]``, and the solid extends ``size[3]`` below 0."""

    elevation: np.ndarray
    size: tuple

    def __post_init__(self):
        self.elevation = np.asarray(self.elevation, dtype=np.float64)
        if self.elevation.ndim != 2 or min(self.elevation.shape) < 2:
            raise ValueError(f"a height field needs at least 2 x 2 samples, got shape {self.elevation.shape}")
        self.size = tuple(float(x) for x in self.size)


@dataclass
class JointAxis:
    """One DOF of a joint: its axis (in the joint frame), limits (None: off), drive and effort limit."""

    axis: tuple = (1.0, 0.0, 0.0)
    limit_lower: float | None = None
    limit_upper: float | None = None
    target_ke: float = 0.0
    target_kd: float = 0.0
    target_pos: float = 0.0
    target_vel: float = 0.0
    target_mode: DriveMode | None = None
    effort_limit: float = math.inf
    drive_acceleration: bool = False
    """True: ``target_ke``/``target_kd`` are accelerations per error (1/s^2, 1/s), which the solver scales by
    the DOF's effective inertia every step (UsdPhysics acceleration drives); False: forces per error."""


_SCALARS = (int, float, bool, str, type(None), np.generic)


def _fresh(value):
    """A copy of one element's value for another world: arrays copied, scalars shared (much cheaper than
    ``copy.deepcopy`` for the common types)."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, tuple):
        return tuple(_fresh(v) for v in value)
    return copy.deepcopy(value)


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
}
"""(linear, angular) DOFs of the joint types other than D6."""


def _kind_of(tables, name):
    return next(kind for kind, names in tables.items() if name in names)


def _xform(x):
    """(pos, Warp quat) from None, a (pos, quat) pair or a ``wp.transform``."""
    if x is None:
        return IDENTITY[0].copy(), IDENTITY[1].copy()
    if len(x) == 7:  # a wp.transform or a flat (px, py, pz, qx, qy, qz, qw)
        x = np.asarray(x, dtype=np.float64)
        return x[:3].copy(), x[3:] / np.linalg.norm(x[3:])
    p, q = x
    q = np.asarray(q, dtype=np.float64)
    return np.array(p, dtype=np.float64), q / math.sqrt(float(q @ q))


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
        self._mujoco_elements = {}
        # bodies
        self.body_q, self.body_qd, self.body_label = [], [], []
        self.body_mass, self.body_com, self.body_inertia = [], [], []
        self._body_mass_explicit = []
        self.body_kinematic = []
        # shapes
        self.shape_body, self.shape_type, self.shape_transform, self.shape_scale = [], [], [], []
        self.shape_source, self.shape_label, self.shape_collision_enabled = [], [], []
        self.shape_material_mu, self.shape_material_restitution = [], []
        self.shape_material_mu_torsional, self.shape_material_mu_rolling = [], []
        self.shape_margin, self.shape_gap = [], []
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
        # the source's own names (label -> name) where they are not the label's leaf: an authored USD
        # displayName, an MJCF element's whole name (attach prefixes kept); see element_name()
        self.element_names = {}
        # worlds: replicate() makes num_worlds identical copies, world after world
        self.num_worlds = 1

    # ------------------------------------------------------------------ counts
    def labels(self):
        """Every element's label: bodies, shapes, joints, sites, equalities, distance constraints,
        keyframes, and the MuJoCo-only elements (tendons, actuators, contact pairs: their ``path``)."""
        for kind in ("body", "shape", "joint", "site", "equality", "distance", "articulation"):
            yield from getattr(self, f"{kind}_label")
        yield from self.keyframes
        for entries in self.mujoco.values():
            if isinstance(entries, list):
                yield from (e["path"] for e in entries if isinstance(e, dict) and "path" in e)

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
    # Every per-element list, by the element kind that indexes it. replicate() copies each of them, so
    # a list added to __init__ must be listed here (replicate checks).
    _ELEMENT_LISTS = {
        "body": (
            "body_q", "body_qd", "body_label", "body_mass", "body_com", "body_inertia", "_body_mass_explicit",
            "body_kinematic",
        ),
        "shape": (
            "shape_body", "shape_type", "shape_transform", "shape_scale", "shape_source", "shape_label",
            "shape_collision_enabled", "shape_material_mu", "shape_material_restitution",
            "shape_material_mu_torsional", "shape_material_mu_rolling", "shape_margin", "shape_gap",
        ),
        "joint": (
            "joint_type", "joint_parent", "joint_child", "joint_label", "joint_X_p", "joint_X_c", "joint_q",
            "joint_qd", "joint_dof_dim", "joint_articulation",
        ),
        "dof": (
            "joint_axis", "joint_limit_lower", "joint_limit_upper", "joint_limited", "joint_target_ke",
            "joint_target_kd", "joint_target_mode", "joint_target_pos", "joint_target_vel", "joint_effort_limit",
            "joint_armature", "joint_friction", "joint_drive_acceleration",
        ),
        "articulation": ("articulation_label",),
        "pair": ("body_collision_filter_pairs",),
        "body_shape_pair": ("body_shape_collision_filter_pairs",),
        "site": ("site_body", "site_transform", "site_type", "site_size", "site_label"),
        "equality": (
            "equality_type", "equality_body1", "equality_body2", "equality_anchor", "equality_active",
            "equality_label", "equality_relpose", "equality_anchor2", "equality_joint1", "equality_joint2",
            "equality_polycoef",
        ),
        "distance": (
            "distance_body0", "distance_body1", "distance_anchor0", "distance_anchor1", "distance_min",
            "distance_max", "distance_label",
        ),
    }  # fmt: skip
    _BODY_REFS = (
        "shape_body", "joint_parent", "joint_child", "site_body", "equality_body1", "equality_body2",
        "distance_body0", "distance_body1",
    )  # fmt: skip
    _JOINT_REFS = ("equality_joint1", "equality_joint2")

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
        n = int(num_worlds)
        if n < 1:
            raise ValueError(f"num_worlds must be >= 1, got {num_worlds}")
        if self.num_worlds != 1:
            raise ValueError("replicate() was already called on this builder")
        if placements is not None and len(placements) != n:
            raise ValueError(f"placements: {len(placements)} transforms for {n} worlds")
        listed = {name for names in self._ELEMENT_LISTS.values() for name in names}
        unlisted = [k for k, v in vars(self).items() if isinstance(v, list) and k not in listed]
        if unlisted:  # a programming error: a new per-element list not taught to replicate()
            raise RuntimeError(f"ModelBuilder.replicate does not know how to copy {unlisted}")
        counts = {kind: len(getattr(self, names[0])) for kind, names in self._ELEMENT_LISTS.items()}
        counts["dof"] = len(self.joint_axis)
        nb, na, nj = counts["body"], counts["articulation"], counts["joint"]
        labels = {kind: f"{kind}_label" for kind in ("body", "shape", "joint", "site", "equality", "distance")}
        labels["articulation"] = "articulation_label"
        plan = []  # (list name, its world-0 values, how to copy them)
        for kind, names in self._ELEMENT_LISTS.items():
            for name in names:
                base = getattr(self, name)[: counts[kind]]
                if name in self._BODY_REFS or name in self._JOINT_REFS or name == "joint_articulation":
                    how = "index"
                elif relabel is not None and name in labels.values():
                    how = "label"
                elif name == "shape_source" or all(isinstance(v, _SCALARS) for v in base):
                    how = "share"  # immutable values (meshes and height fields are never edited either)
                else:
                    how = "copy"
                plan.append((name, base, how))
        offset = {name: nb if name in self._BODY_REFS else nj if name in self._JOINT_REFS else na
                  for name in (*self._BODY_REFS, *self._JOINT_REFS, "joint_articulation")}  # fmt: skip
        for w in range(1, n):
            for name, base, how in plan:
                values = getattr(self, name)
                if how == "index":
                    k = w * offset[name]
                    values.extend(i + k if i >= 0 else i for i in base)
                elif name == "body_collision_filter_pairs":
                    values.extend((b1 + w * nb, b2 + w * nb) for b1, b2 in base)
                elif name == "body_shape_collision_filter_pairs":
                    values.extend((b + w * nb, s + w * counts["shape"]) for b, s in base)
                elif how == "share":
                    values.extend(base)
                elif how == "label":
                    values.extend(relabel(label, w) for label in base)
                else:
                    values.extend(map(_fresh, base))
        for (kind, _), values in self._mujoco_elements.items():
            for i, v in list(values.items()):
                for w in range(1, n):
                    values[i + w * counts[kind]] = _fresh(v)
        self.num_worlds = n
        if placements is not None:
            self._place_worlds(placements, local, counts)

    def _place_worlds(self, placements, local, counts) -> None:
        """Move world w's local elements (copies of world 0's) by ``placements[w]`` (see :meth:`replicate`)."""
        nb, nj = counts["body"], counts["joint"]
        is_local = local or (lambda label: True)
        moved = [is_local(label) for label in self.body_label[:nb]]

        def moves(b):  # a body index of world 0 (-1: the world)
            return b >= 0 and moved[b]

        world_side = {  # element lists whose world-frame values move: (kind, which rows of world 0)
            "shape_transform": [s for s in range(counts["shape"]) if self.shape_body[s] < 0
                                and is_local(self.shape_label[s])],
            "site_transform": [s for s in range(counts["site"]) if self.site_body[s] < 0
                               and is_local(self.site_label[s])],
            "joint_X_p": [j for j in range(nj) if self.joint_parent[j] < 0 and moves(self.joint_child[j])
                          and self.joint_type[j] != JointType.FREE],
        }  # fmt: skip
        free = [j for j in range(nj) if self.joint_type[j] == JointType.FREE and moves(self.joint_child[j])]
        for w in range(1, self.num_worlds):
            x = _xform(placements[w])
            if np.allclose(x[0], 0.0) and np.allclose(np.abs(x[1][3]), 1.0):
                continue
            rot = x[1]
            for b in range(nb):
                if moved[b]:
                    i = b + w * nb
                    self.body_q[i] = transform_multiply(x, self.body_q[i])
                    v = self.body_qd[i]
                    self.body_qd[i] = np.concatenate([quat_rotate(rot, v[:3]), quat_rotate(rot, v[3:])])
            for name, rows in world_side.items():
                values, per = getattr(self, name), counts[_kind_of(self._ELEMENT_LISTS, name)]
                for r in rows:
                    values[r + w * per] = transform_multiply(x, values[r + w * per])
            for j in free:
                i = j + w * nj
                q = self.joint_q[i]
                p, r = transform_multiply(x, (q[:3], q[3:]))
                self.joint_q[i] = np.concatenate([p, r])
                qd = self.joint_qd[i]
                self.joint_qd[i] = np.concatenate([quat_rotate(rot, qd[:3]), quat_rotate(rot, qd[3:])])
            self._place_constraints(w, x, moves, counts)
            for key in self.keyframes.values():
                self._place_keyframe(key, w, x, free, nj)

    def _place_constraints(self, w, x, moves, counts) -> None:
        """World w's equality and distance constraints to the world: their world-frame anchors and poses."""
        point = lambda p: transform_multiply(x, (p, IDENTITY[1]))[0]  # noqa: E731
        ne = counts["equality"]
        for e in range(ne):
            i = e + w * ne
            b1, b2 = self.equality_body1[e], self.equality_body2[e]
            kind = EQUALITY_KINDS[self.equality_type[e]]
            if kind == "connect":
                if b1 < 0 and moves(b2):
                    self.equality_anchor[i] = point(self.equality_anchor[i])
                if b2 < 0 and moves(b1) and self.equality_anchor2[i] is not None:
                    self.equality_anchor2[i] = point(self.equality_anchor2[i])
            elif kind == "weld":
                relpose = self.equality_relpose[i]
                if b1 < 0 and moves(b2) and relpose is not None:
                    self.equality_relpose[i] = transform_multiply(x, relpose)
                if b2 < 0 and moves(b1):
                    self.equality_anchor[i] = point(self.equality_anchor[i])
                    if relpose is not None:
                        self.equality_relpose[i] = transform_multiply(relpose, transform_inverse(x))
        nd = counts["distance"]
        for d in range(nd):
            i = d + w * nd
            b0, b1 = self.distance_body0[d], self.distance_body1[d]
            if b0 < 0 and moves(b1):
                self.distance_anchor0[i] = point(self.distance_anchor0[i])
            if b1 < 0 and moves(b0):
                self.distance_anchor1[i] = point(self.distance_anchor1[i])

    @staticmethod
    def _place_keyframe(key, w, x, free, nj) -> None:
        """A keyframe's free-joint coordinates in world w: world 0's moved by ``x``."""
        for j in free:
            q, qd = (key.joint_q or {}).get(j), (key.joint_qd or {}).get(j)
            if q is not None:
                p, r = transform_multiply(x, (q[:3], q[3:]))
                key.world_joint_q = key.world_joint_q or {}
                key.world_joint_q[j + w * nj] = np.concatenate([p, r])
            if qd is not None:
                key.world_joint_qd = key.world_joint_qd or {}
                key.world_joint_qd[j + w * nj] = np.concatenate([quat_rotate(x[1], qd[:3]), quat_rotate(x[1], qd[3:])])

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
        p, q = _xform(xform)
        self.body_q.append((p, q))
        self.body_kinematic.append(bool(kinematic))
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
    ) -> int:
        """Add a collision shape to ``body`` (-1: a static shape of the world).

        With ``density > 0`` the shape's mass properties are added to its body (unless the body's mass
        was set explicitly). See :class:`GeoType` for what ``scale`` holds per type. ``mu`` is the
        sliding friction coefficient, ``mu_torsional`` and ``mu_rolling`` are in meters (MuJoCo's
        convention); contacts are detected within ``margin + gap`` and active within ``margin``.
        ``mesh``: the :class:`Mesh` of a MESH shape, the :class:`Heightfield` of an HFIELD shape.
        """
        self._check_not_replicated()
        p, q = _xform(xform)
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
        self.joint_X_p.append(_xform(parent_xform))
        self.joint_X_c.append(_xform(child_xform))
        self.joint_dof_dim.append(dim)
        q0 = np.zeros(nq)
        if joint_type == JointType.BALL:
            q0[3] = 1.0
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
        self.equality_relpose[i] = None if relpose is None else _xform(relpose)
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
        self.site_transform.append(_xform(xform))
        self.site_type.append(GeoType(geo_type))
        self.site_size.append(np.asarray(size, dtype=np.float64))
        self.site_label.append(label or f"site_{len(self.site_label)}")
        return len(self.site_label) - 1

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
        self._mujoco_elements.setdefault((kind, name), {})[index] = value

    def get_mujoco(self, kind: str, name: str, index: int, default=None):
        """The MuJoCo-only value recorded by :meth:`set_mujoco` for element ``index``, else ``default``."""
        return self._mujoco_elements.get((kind, name), {}).get(index, default)

    def _mujoco_arrays(self, counts: dict) -> dict:
        out = {}
        for (kind, name), values in self._mujoco_elements.items():
            width = max((np.size(v) for v in values.values()), default=1)
            arr = np.full((counts[kind], width) if width > 1 else counts[kind], np.nan)
            for i, v in values.items():
                arr[i] = v
            out[name] = arr
        return out

    # ------------------------------------------------------------------ joint coordinates
    def joint_q_from_body_q(self):
        """Set every joint's coordinates from the current body poses (the authored configuration).

        Revolute: the angle of the child joint frame about the axis relative to the parent joint frame;
        prismatic: the offset along the axis; ball: the relative rotation; free: the body pose.
        Several joints between the same two bodies (a stack, e.g. slide x, slide z, hinge y of a planar
        robot) compose in the order they were added; each takes its share of the relative motion.
        """
        dof_start = np.concatenate([[0], np.cumsum([len(qd) for qd in self.joint_qd])]).astype(np.int64)
        stacks = {}
        for j, child in enumerate(self.joint_child):
            stacks.setdefault(child, []).append(j)
        for child, joints in stacks.items():
            j0 = joints[0]
            parent = self.joint_parent[j0]
            if len(joints) == 1 and self.joint_type[j0] in (JointType.REVOLUTE, JointType.PRISMATIC):
                # One scalar joint (the common case): its coordinate is read off the relative pose directly.
                rel_p, rel_q = self._joint_relative_pose(parent, child, j0)
                axis = self.joint_axis[dof_start[j0]]
                if self.joint_type[j0] == JointType.PRISMATIC:
                    self.joint_q[j0] = np.array([float(np.dot(np.array(rel_p), axis))])
                else:
                    angle = 2.0 * math.atan2(float(np.dot(np.array(rel_q[:3]), axis)), float(rel_q[3]))
                    self.joint_q[j0] = np.array([(angle + math.pi) % (2.0 * math.pi) - math.pi])
                continue
            X_wp = transform_multiply(self.body_q[parent], self.joint_X_p[j0]) if parent >= 0 else self.joint_X_p[j0]
            X_wc = transform_multiply(self.body_q[child], self.joint_X_c[j0])
            rel = transform_multiply(transform_inverse(X_wp), X_wc)
            # The stack's motion in the child body frame, about each joint's anchor.
            x_c0 = self.joint_X_c[j0]
            motion = transform_multiply(transform_multiply(x_c0, rel), transform_inverse(x_c0))
            for j in joints:
                jt = self.joint_type[j]
                if jt == JointType.FREE:
                    p, q = self.body_q[child]
                    self.joint_q[j] = np.concatenate([p, q])
                    continue
                x_c = self.joint_X_c[j]
                if jt == JointType.BALL:
                    local = transform_multiply(transform_multiply(transform_inverse(x_c), motion), x_c)
                    q = local[1] if local[1][3] >= 0 else -local[1]
                    self.joint_q[j] = q
                    own_body = transform_multiply(transform_multiply(x_c, (np.zeros(3), q)), transform_inverse(x_c))
                    motion = transform_multiply(transform_inverse(own_body), motion)
                elif jt in (JointType.PRISMATIC, JointType.REVOLUTE, JointType.D6):
                    n_lin = self.joint_dof_dim[j][0]
                    coords = []
                    for k in range(len(self.joint_qd[j])):
                        axis = self.joint_axis[dof_start[j] + k]
                        local = transform_multiply(transform_multiply(transform_inverse(x_c), motion), x_c)
                        if k < n_lin:
                            d = float(np.dot(local[0], axis))
                            coords.append(d)
                            own = (axis * d, np.array([0.0, 0.0, 0.0, 1.0]))
                        else:
                            q = local[1]
                            angle = 2.0 * math.atan2(np.dot(q[:3], axis), q[3])
                            angle = (angle + math.pi) % (2.0 * math.pi) - math.pi
                            coords.append(angle)
                            own = (np.zeros(3), quat_from_axis_angle(axis, angle))
                        # Remove this DOF's motion (in the body frame) before reading the next one's.
                        own_body = transform_multiply(transform_multiply(x_c, own), transform_inverse(x_c))
                        motion = transform_multiply(transform_inverse(own_body), motion)
                    self.joint_q[j] = np.array(coords)

    def _joint_relative_pose(self, parent, child, j) -> tuple:
        """Joint ``j``'s child frame relative to its parent frame, from the body poses, as (position, quat)
        tuples of floats: ``transform_multiply(transform_inverse(X_wp), X_wc)`` with the arithmetic of the
        single-transform functions (the same values bit for bit), without their small-array overhead."""

        def compose(a_p, a_q, b_p, b_q):  # transform_multiply
            rx, ry, rz = rotate3(a_q, b_p)
            return (a_p[0] + rx, a_p[1] + ry, a_p[2] + rz), multiply4(a_q, b_q)

        def floats(pose):
            return [np.asarray(x, dtype=np.float64).tolist() for x in pose]

        xp_p, xp_q = floats(self.joint_X_p[j])
        if parent >= 0:
            xp_p, xp_q = compose(*floats(self.body_q[parent]), xp_p, xp_q)
        wc_p, wc_q = compose(*floats(self.body_q[child]), *floats(self.joint_X_c[j]))
        inv_q = (xp_q[0] * -1.0, xp_q[1] * -1.0, xp_q[2] * -1.0, xp_q[3])  # transform_inverse
        ix, iy, iz = rotate3(inv_q, xp_p)
        return compose((-ix, -iy, -iz), inv_q, wc_p, wc_q)

    def joint_qd_from_body_qd(self):
        """Set joint velocities from the bodies' authored velocities (origin linear velocity, angular
        velocity, world frame), for joints other than free ones: each DOF takes the projection of the
        child's velocity relative to its parent on its axis (ball joints: the relative angular
        velocity in the child joint frame)."""
        dof_start = np.concatenate([[0], np.cumsum([len(qd) for qd in self.joint_qd])]).astype(np.int64)
        for j, jt in enumerate(self.joint_type):
            if jt in (JointType.FREE, JointType.FIXED):
                continue
            parent, child = self.joint_parent[j], self.joint_child[j]
            vc = np.asarray(self.body_qd[child], dtype=np.float64)
            vp = np.asarray(self.body_qd[parent], dtype=np.float64) if parent >= 0 else np.zeros(6)
            X_wc = transform_multiply(self.body_q[child], self.joint_X_c[j])
            # Velocity of the child joint frame's origin, relative to the parent's motion at that point.
            r_c = X_wc[0] - self.body_q[child][0]
            v_point_c = vc[:3] + np.cross(vc[3:], r_c)
            v_point_p = vp[:3] + (np.cross(vp[3:], X_wc[0] - self.body_q[parent][0]) if parent >= 0 else 0.0)
            lin = quat_rotate(quat_conjugate(X_wc[1]), v_point_c - v_point_p)  # in the child joint frame
            ang = quat_rotate(quat_conjugate(X_wc[1]), vc[3:] - vp[3:])
            if jt == JointType.BALL:
                self.joint_qd[j] = ang
                continue
            n_lin = self.joint_dof_dim[j][0]
            for k in range(len(self.joint_qd[j])):
                axis = self.joint_axis[dof_start[j] + k]
                self.joint_qd[j][k] = float(np.dot(lin if k < n_lin else ang, axis))

    def body_q_from_joint_q(self):
        """Set the body poses from the joint coordinates (forward kinematics), parents first.

        Bodies without a joint keep their pose; a joint's child is placed at X_p * J(q) * X_c^-1 on its
        parent (the first joint of a stack places it, every joint of the stack moves it, in order).
        """
        dof_start = np.concatenate([[0], np.cumsum([len(qd) for qd in self.joint_qd])]).astype(np.int64)
        stacks = {}
        for j, child in enumerate(self.joint_child):
            stacks.setdefault(child, []).append(j)
        done = set()

        def place(child):
            if child in done or child not in stacks:
                return
            joints = stacks[child]
            parent = self.joint_parent[joints[0]]
            if parent >= 0:
                place(parent)
            done.add(child)
            if self.joint_type[joints[0]] == JointType.FREE:
                q = self.joint_q[joints[0]]
                self.body_q[child] = (q[:3].copy(), q[3:] / np.linalg.norm(q[3:]))
                return
            base = self.body_q[parent] if parent >= 0 else IDENTITY
            pose = transform_multiply(base, self.joint_X_p[joints[0]])
            pose = transform_multiply(pose, transform_inverse(self.joint_X_c[joints[0]]))
            for j in joints:
                x_c = self.joint_X_c[j]
                axes = self.joint_axis[dof_start[j] : dof_start[j] + len(self.joint_qd[j])]
                for motion in joint_motions(self.joint_type[j], self.joint_q[j], axes, self.joint_dof_dim[j][0]):
                    in_body = transform_multiply(transform_multiply(x_c, motion), transform_inverse(x_c))
                    pose = transform_multiply(pose, in_body)
            self.body_q[child] = pose

        for child in list(stacks):
            place(child)

    # ------------------------------------------------------------------ finalize
    def finalize(self, device=None) -> Model:
        """Turn the accumulated lists into a :class:`Model` of Warp arrays on ``device``."""
        m = Model(device)
        dev = m.device
        m.source = self.source
        m.num_worlds = n_worlds = self.num_worlds

        def world_of(count):  # elements are replicated world after world
            return np.repeat(np.arange(n_worlds), count // n_worlds)

        m.gravity = wp.vec3(*self.gravity)
        for k, v in self.mujoco.items():
            setattr(m.mujoco, k, v)
        dof_count = sum(len(qd) for qd in self.joint_qd)
        counts = {
            "body": self.body_count,
            "shape": self.shape_count,
            "joint": self.joint_count,
            "dof": dof_count,
            "equality": len(self.equality_type),
            "site": len(self.site_body),
        }
        for k, v in self._mujoco_arrays(counts).items():
            setattr(m.mujoco, k, v)
        m.mujoco_element_kind = {name: kind for kind, name in self._mujoco_elements}

        def arr(values, dtype, shape_tail=()):
            a = np.asarray(values, dtype=np.float64 if dtype not in (wp.int32, wp.bool) else None)
            if a.size == 0:
                a = np.zeros((0,) + shape_tail)
            if dtype == wp.int32:
                a = a.astype(np.int32)
            elif dtype == wp.bool:
                a = a.astype(np.bool_)
            else:
                a = a.astype(np.float32)
            return wp.array(a, dtype=dtype, device=dev)

        def xforms(pairs):
            if not pairs:
                return arr([], wp.transform, (7,))
            p, q = zip(*pairs, strict=True)
            return arr(np.concatenate([np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)], 1),
                       wp.transform, (7,))  # fmt: skip

        m.body_count = self.body_count
        m.body_q = xforms(self.body_q)
        # body_qd holds the COM velocity: shift the authored origin velocity to the COM (all bodies at once).
        qd = np.asarray(self.body_qd, dtype=np.float64).reshape(-1, 6).copy()
        if len(qd):
            rot = np.asarray([q for _, q in self.body_q], dtype=np.float64)
            com_w = quat_rotate(rot, np.asarray(self.body_com, dtype=np.float64))
            qd[:, :3] += cross(qd[:, 3:], com_w)
        m.body_qd = arr(qd, wp.spatial_vector, (6,))
        m.body_com = arr(self.body_com, wp.vec3, (3,))
        mass = np.asarray(self.body_mass, dtype=np.float64)
        m.body_mass = arr(mass, wp.float32)
        m.body_inv_mass = arr(np.where(mass > 0, 1.0 / np.maximum(mass, 1e-30), 0.0), wp.float32)
        inertia = np.asarray(self.body_inertia).reshape(-1, 3, 3)
        m.body_inertia = arr(inertia, wp.mat33, (3, 3))
        invertible = np.linalg.det(inertia) > 0 if len(inertia) else np.zeros(0, dtype=bool)
        inv = np.zeros_like(inertia, dtype=np.float64)
        inv[invertible] = np.linalg.inv(inertia[invertible])  # (batched)
        m.body_inv_inertia = arr(inv, wp.mat33, (3, 3))
        m.body_world = arr(world_of(self.body_count), wp.int32)
        m.body_kinematic = arr(self.body_kinematic, wp.bool)
        m.body_label = list(self.body_label)

        m.shape_count = self.shape_count
        m.shape_body = arr(self.shape_body, wp.int32)
        m.shape_type = arr([int(t) for t in self.shape_type], wp.int32)
        m.shape_transform = xforms(self.shape_transform)
        m.shape_scale = arr(self.shape_scale, wp.vec3, (3,))
        m.shape_source = list(self.shape_source)
        m.shape_collision_enabled = arr(self.shape_collision_enabled, wp.bool)
        m.shape_material_mu = arr(self.shape_material_mu, wp.float32)
        m.shape_material_restitution = arr(self.shape_material_restitution, wp.float32)
        m.shape_material_mu_torsional = arr(self.shape_material_mu_torsional, wp.float32)
        m.shape_material_mu_rolling = arr(self.shape_material_mu_rolling, wp.float32)
        m.shape_margin = arr(self.shape_margin, wp.float32)
        m.shape_gap = arr(self.shape_gap, wp.float32)
        m.shape_world = arr(world_of(self.shape_count), wp.int32)
        m.shape_label = list(self.shape_label)

        m.joint_count = self.joint_count
        counts = np.array(
            [(len(q), len(qd)) for q, qd in zip(self.joint_q, self.joint_qd, strict=True)], dtype=np.int64
        )
        counts = counts.reshape(-1, 2)
        q_start = np.concatenate([[0], np.cumsum(counts[:, 0])])
        qd_start = np.concatenate([[0], np.cumsum(counts[:, 1])])
        m.joint_coord_count = int(q_start[-1])
        m.joint_dof_count = int(qd_start[-1])
        m.joint_type = arr([int(t) for t in self.joint_type], wp.int32)
        m.joint_parent = arr(self.joint_parent, wp.int32)
        m.joint_child = arr(self.joint_child, wp.int32)
        m.joint_X_p = xforms(self.joint_X_p)
        m.joint_X_c = xforms(self.joint_X_c)
        m.joint_dof_dim = arr(np.asarray(self.joint_dof_dim, dtype=np.int64).reshape(-1, 2), wp.int32, (2,))
        m.joint_q_start = arr(q_start, wp.int32)
        m.joint_qd_start = arr(qd_start, wp.int32)
        m.joint_q = arr(np.concatenate(self.joint_q) if self.joint_q else [], wp.float32)
        m.joint_qd = arr(np.concatenate(self.joint_qd) if self.joint_qd else [], wp.float32)
        m.joint_axis = arr(self.joint_axis, wp.vec3, (3,))
        m.joint_limited = arr(self.joint_limited, wp.bool)
        m.joint_limit_lower = arr(np.maximum(self.joint_limit_lower, -1e10), wp.float32)
        m.joint_limit_upper = arr(np.minimum(self.joint_limit_upper, 1e10), wp.float32)
        m.joint_target_ke = arr(self.joint_target_ke, wp.float32)
        m.joint_target_kd = arr(self.joint_target_kd, wp.float32)
        m.joint_target_mode = arr(self.joint_target_mode, wp.int32)
        m.joint_target_pos = arr(self.joint_target_pos, wp.float32)
        m.joint_target_vel = arr(self.joint_target_vel, wp.float32)
        m.joint_effort_limit = arr(np.minimum(self.joint_effort_limit, 1e10), wp.float32)
        m.joint_drive_acceleration = arr(self.joint_drive_acceleration, wp.bool)
        m.joint_armature = arr(self.joint_armature, wp.float32)
        m.joint_friction = arr(self.joint_friction, wp.float32)
        m.joint_articulation = arr(self.joint_articulation, wp.int32)
        m.joint_world = arr(world_of(self.joint_count), wp.int32)
        m.joint_label = list(self.joint_label)

        m.equality_count = len(self.equality_type)
        m.equality_type = arr(self.equality_type, wp.int32)
        m.equality_body1 = arr(self.equality_body1, wp.int32)
        m.equality_body2 = arr(self.equality_body2, wp.int32)
        m.equality_anchor = arr(self.equality_anchor, wp.vec3, (3,))
        m.equality_active = arr(self.equality_active, wp.bool)
        # NaN rows: the initial relative pose (computed by the solver)
        relpose = [np.concatenate(r) if r is not None else np.full(7, np.nan) for r in self.equality_relpose]
        m.equality_relpose = np.asarray(relpose, dtype=np.float64).reshape(-1, 7)
        m.equality_label = list(self.equality_label)
        anchor2 = [a if a is not None else np.full(3, np.nan) for a in self.equality_anchor2]
        m.equality_anchor2 = np.asarray(anchor2, dtype=np.float64).reshape(-1, 3)  # NaN: computed by the solver
        m.equality_joint1 = arr(self.equality_joint1, wp.int32)
        m.equality_joint2 = arr(self.equality_joint2, wp.int32)
        m.equality_polycoef = np.asarray(self.equality_polycoef, dtype=np.float64).reshape(-1, 5)
        self._finalize_keyframes(m, q_start, qd_start)

        m.distance_count = len(self.distance_label)
        m.distance_body0 = arr(self.distance_body0, wp.int32)
        m.distance_body1 = arr(self.distance_body1, wp.int32)
        m.distance_anchor0 = arr(self.distance_anchor0, wp.vec3, (3,))
        m.distance_anchor1 = arr(self.distance_anchor1, wp.vec3, (3,))
        m.distance_min = arr(self.distance_min, wp.float32)
        m.distance_max = arr(self.distance_max, wp.float32)
        m.distance_label = list(self.distance_label)

        m.body_collision_filter_pairs = list(self.body_collision_filter_pairs)
        m.body_shape_collision_filter_pairs = list(self.body_shape_collision_filter_pairs)
        m.element_names = dict(self.element_names)
        m.site_count = len(self.site_label)
        m.site_body = arr(self.site_body, wp.int32)
        m.site_transform = xforms(self.site_transform)
        m.site_type = arr([int(t) for t in self.site_type], wp.int32)
        m.site_size = arr(self.site_size, wp.vec3, (3,))
        m.site_label = list(self.site_label)
        m.articulation_count = len(self.articulation_label)
        m.articulation_label = list(self.articulation_label)
        return m

    def _finalize_keyframes(self, m, q_start, qd_start):
        """``keyframe_label``, ``keyframe_time`` and full ``keyframe_joint_q``/``keyframe_joint_qd`` rows
        (float64 numpy, every world alike; joints a keyframe does not name keep their initial values)."""
        m.keyframe_label = list(self.keyframes)
        m.keyframe_time = np.array([k.time for k in self.keyframes.values()], dtype=np.float64)
        q0 = np.concatenate(self.joint_q) if self.joint_q else np.zeros(0)
        qd0 = np.concatenate(self.joint_qd) if self.joint_qd else np.zeros(0)
        nj = self.joint_count // self.num_worlds
        rows_q, rows_qd = [], []
        for key in self.keyframes.values():
            q, qd = q0.copy(), qd0.copy()
            for w in range(self.num_worlds):
                for j, v in key.joint_q.items():
                    q[q_start[j + w * nj] : q_start[j + w * nj + 1]] = v
                for j, v in key.joint_qd.items():
                    qd[qd_start[j + w * nj] : qd_start[j + w * nj + 1]] = v
            for j, v in (key.world_joint_q or {}).items():
                q[q_start[j] : q_start[j + 1]] = v
            for j, v in (key.world_joint_qd or {}).items():
                qd[qd_start[j] : qd_start[j + 1]] = v
            rows_q.append(q)
            rows_qd.append(qd)
        m.keyframe_joint_q = np.asarray(rows_q, dtype=np.float64).reshape(len(rows_q), len(q0))
        m.keyframe_joint_qd = np.asarray(rows_qd, dtype=np.float64).reshape(len(rows_qd), len(qd0))

    # ------------------------------------------------------------------ importers
    def add_mjcf(self, source, **kwargs):
        """Import an MJCF model (a path or XML text). See :func:`newton_usd.mjcf.add_mjcf`."""
        from ..mjcf.importer import add_mjcf  # noqa: PLC0415  (core must not import MuJoCo at module load)

        return add_mjcf(self, source, **kwargs)

    def add_usd(self, source, **kwargs):
        """Import a UsdPhysics stage (a path or a ``Usd.Stage``). See :func:`newton_usd.usd.add_usd`."""
        from ..usd.importer import add_usd  # noqa: PLC0415  (core must not import USD at module load)

        return add_usd(self, source, **kwargs)
