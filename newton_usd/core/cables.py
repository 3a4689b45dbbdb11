"""Cables in the builder: a curve's polyline as a rod, a chain of capsule bodies joined by rod joints (Newton's rod
model, :meth:`newton.ModelBuilder.add_rod`), each segment a body of the model whose pose the State holds.

Each segment ``i`` (points ``i``, ``i + 1``) is a body at its midpoint, its local +Z along the segment (frames carried
from segment to segment by parallel transport, the first turned from +Z), with a capsule of the segment's radius and
half its rest length; neighbouring segments are joined at their shared point by a rod joint
(:attr:`~newton_usd.core.types.JointType.ROD`) whose six DOFs hold the rod's shear, stretch, bend and twist stiffness
and damping; its rest rotation (the child's anchor frame relative to the parent's at rest) is kept in the
:class:`Cable` record, which the bridge hands to Newton. The chain's root is a free joint, or a ball joint at a pinned
end point (to the world or a body). The points are read back from the segment poses (:meth:`Cable.points`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .quat import quat_conjugate, quat_multiply, quat_rotate, transform_inverse, transform_multiply
from .types import JointType

SHEAR_CORRECTION = 0.9
"""The transverse shear correction ``k`` of a solid circular section (``k G A``), as the proposal and Newton."""
DEFAULT_STRETCH = 1.0e5
"""N/m: a rod joint's stretch and shear stiffness where the cable has no curve material (Newton's add_rod default)."""
_FLIP = np.array([0.0, 1.0, 0.0, 0.0])
"""A half turn about Y (xyzw): an anchor frame facing back along its segment."""


@dataclass
class Section:
    """The section rigidities of a cable's material at one radius (SI): stretch ``EA`` (N), shear ``k G A`` (N),
    bend ``EI`` (N*m^2), twist ``GJ`` (N*m^2); and per mode the damping (stretch, shear: N*s; bend, twist: N*m^2*s)."""

    stretch: float
    shear: float
    bend: float
    twist: float


@dataclass
class CableMaterial:
    """A cable's material (SI): Young's modulus, Poisson's ratio, the structural stiffnesses where authored (each
    replaces what E and nu give), and the four dampings (0 where unauthored). None: no curve material (Newton's
    default gains: stretch and shear :data:`DEFAULT_STRETCH`, no bend or twist)."""

    young: float
    poisson: float
    stretch: float | None = None
    shear: float | None = None
    bend: float | None = None
    twist: float | None = None
    damping: tuple = (0.0, 0.0, 0.0, 0.0)

    def section(self, radius: float) -> Section:
        """The rigidities at ``radius`` (m)."""
        area, moment = math.pi * radius**2, 0.25 * math.pi * radius**4
        g = self.young / (2.0 * (1.0 + self.poisson))
        pick = lambda authored, derived: derived if authored is None else authored  # noqa: E731
        return Section(pick(self.stretch, self.young * area), pick(self.shear, SHEAR_CORRECTION * g * area),
                       pick(self.bend, self.young * moment), pick(self.twist, g * 2.0 * moment))  # fmt: skip


@dataclass
class Cable:
    """One cable prim of the builder (a BasisCurves' curves, each a chain of segment bodies).

    Attributes:
        label: the prim's path.
        bodies: its segment bodies, curve after curve.
        joints: its rod joints (the roots not among them).
        rest_rotations: (len(joints), 4) xyzw: each rod joint's child anchor frame relative to its parent's at rest.
        point_bodies, point_offsets: (points, 2): per authored point, the two segment ends it is read back from
            (an end point: its one segment twice): the body and the end's Z in the body frame (m).
        radius: (points,) m, each point's radius (half its thickness), for drawing.
        world: the world it is in (a replicated world's copy of a prim keeps its label, or takes its environment's).
        segment_length: (len(bodies),) m, each segment's rest length.
    """

    label: str
    bodies: list = field(default_factory=list)
    joints: list = field(default_factory=list)
    rest_rotations: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))
    point_bodies: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))
    point_offsets: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    radius: np.ndarray = field(default_factory=lambda: np.zeros(0))
    world: int = 0
    segment_length: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def points(self, body_q) -> np.ndarray:
        """The cable's points (world, m) from the segment poses ``body_q`` ((bodies, 7): position, xyzw)."""
        q = np.asarray(body_q, dtype=np.float64)[self.point_bodies]  # (points, 2, 7)
        z = np.zeros(q.shape[:2] + (3,))
        z[..., 2] = self.point_offsets
        return (q[..., :3] + quat_rotate(q[..., 3:], z)).mean(axis=1)


def quat_between(a, b) -> np.ndarray:
    """The shortest rotation (xyzw) taking unit ``a`` to unit ``b``; a half turn about an axis across ``a`` where they
    are opposite (X's cross, else Z's)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if np.sum((a - b) ** 2) <= 2.0e-8:
        return np.array([0.0, 0.0, 0.0, 1.0])
    if np.sum((a + b) ** 2) <= 2.0e-8:
        axis = np.cross(a, [0.0, 1.0, 0.0] if abs(a[0]) >= 0.9 else [1.0, 0.0, 0.0])
        axis = axis if np.linalg.norm(axis) > 1e-8 else np.cross(a, [0.0, 0.0, 1.0])
        return np.append(axis / np.linalg.norm(axis), 0.0)
    q = np.append(np.cross(a, b), 1.0 + float(a @ b))
    return q / np.linalg.norm(q)


def capsule_inertia(mass: float, radius: float, half_height: float) -> np.ndarray:
    """The inertia (kg*m^2, about the center, Z the axis) of a capsule of ``mass`` in the form Newton's cables take
    (ODE's capsule: its hemispheres' offset terms as ODE writes them), so that a segment turns as under Newton."""
    h = 2.0 * half_height
    sphere, barrel = 4.0 / 3.0 * math.pi * radius**3, math.pi * radius**2 * h
    axial_moment = barrel * (0.25 * radius**2 + h * h / 12.0) + sphere * (0.4 * radius**2 + 0.375 * radius * h
                                                                           + 0.25 * h * h)  # fmt: skip
    polar = (0.5 * barrel + 0.4 * sphere) * radius**2
    return np.diag([axial_moment, axial_moment, polar]) * (mass / (sphere + barrel))


def add_cable_curve(builder, label, points, rest_points, radius, point_radius, mass, material, *, friction=None,
                    root=None, collide=True, frames=None, rest_frames=None, closed=False) -> tuple:  # fmt: skip
    """Add one curve as a chain of segment bodies and rod joints to ``builder`` (SI, world).

    Args:
        label: the name its bodies and joints are labelled from (the prim path, ``_curveN`` for a curve of several).
        points, rest_points: (n, 3) its points now and at rest (None: the same); n >= 3.
        radius, mass: per segment (n - 1): the capsule's radius and the segment's mass.
        point_radius: per point: the radius at the joints' points (their bend and twist rigidities).
        material: its :class:`CableMaterial` (None: Newton's default gains).
        friction: the capsules' friction (None: the builder's default).
        root: None (a free joint) or ``(point, parent body, anchor in the parent's frame, label)``: the chain hangs
            from that end point (0 or n - 1) by a ball joint.
        frames, rest_frames: per segment, its frame now and at rest (xyzw, +Z along the segment: the authored material
            frames, :func:`frames_from_normals`); None: parallel transport from +Z (a pinned chain: each segment's
            turned from +Z alone, as Newton assembles one), the rest frames the frames turned onto the rest tangents.
        closed: a periodic curve: its last point joined to its first by a segment too (n segments, n >= 2), its last
            segment's end joined to its first's start by a rod joint that closes the loop (left out of the
            articulation, as Newton's builder leaves it); no ``root``.

    Returns ``(bodies, rod joints (a closed curve's loop joint last), rest rotations, per point (bodies, offsets))``.
    """
    p = np.asarray(points, dtype=np.float64)
    rest = p if rest_points is None else np.asarray(rest_points, dtype=np.float64)
    if closed:  # (the closing segment: the first point again at the end)
        p, rest = np.vstack([p, p[:1]]), np.vstack([rest, rest[:1]])
    n = len(p)
    d, dr = np.diff(p, axis=0), np.diff(rest, axis=0)
    length, rest_length = np.linalg.norm(d, axis=1), np.linalg.norm(dr, axis=1)
    t, tr = d / length[:, None], dr / rest_length[:, None]
    z = np.array([0.0, 0.0, 1.0])
    if frames is None and root is not None:  # (Newton's graph assembly of a pinned chain: no transport)
        frames = [quat_between(z, ti) for ti in t]
    elif frames is None:
        frames = transport_frames(t)
    if rest_frames is None:
        rest_frames = [_unit(quat_multiply(quat_between(t[i], tr[i]), frames[i])) for i in range(n - 1)]
    bodies = []
    for i in range(n - 1):
        half = 0.5 * float(rest_length[i])
        b = builder.add_body((0.5 * (p[i] + p[i + 1]), frames[i]), mass=float(mass[i]), com=np.zeros(3),
                             inertia=capsule_inertia(float(mass[i]), float(radius[i]), half),
                             label=f"{label}_edge_body_{i}")  # fmt: skip
        kw = {} if friction is None else {"mu": float(friction)}
        builder.add_shape_capsule(b, radius=float(radius[i]), half_height=half, label=f"{label}_edge_capsule_{i}",
                                  collision_enabled=collide, **kw)  # fmt: skip
        bodies.append(b)
    # the joints, a walk from the root's segment (as Newton's breadth-first one): toward the end, or back from it
    root_point = None if root is None else int(root[0])
    start = 0 if root_point in (None, 0) else n - 2
    if root is None:
        root_joint = builder.add_joint(JointType.FREE, -1, bodies[0], label=f"{label}_free_joint")
    else:
        _, parent, anchor, root_label = root
        back = root_point != 0
        x_p = (np.asarray(anchor, dtype=np.float64), np.array([0.0, 0.0, 0.0, 1.0]))
        x_c = _anchor(rest_length[start], back, back)
        root_joint = builder.add_joint(JointType.BALL, int(parent), bodies[start], x_p, x_c, label=root_label)
        parent_q = builder.body_q[parent] if parent >= 0 else (np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0]))
        rel = transform_multiply(transform_inverse(transform_multiply(parent_q, x_p)),
                                 transform_multiply(builder.body_q[bodies[start]], x_c))  # fmt: skip
        builder.joint_q[root_joint] = _unit(rel[1])
    pairs = [(i, i + 1) for i in range(n - 2)] if start == 0 else [(i + 1, i) for i in range(n - 3, -1, -1)]
    joints, rests = [], []
    for k, (a, c) in enumerate(pairs):
        joints.append(_rod_joint(builder, label, k + 1, bodies, a, c, rest_length, rest_frames, radius, point_radius,
                                 material, rests))  # fmt: skip
    builder.add_articulation([root_joint, *joints], label=label)
    if closed:  # (the loop: the last segment's end to the first's start, at point 0)
        j, rest_q = add_rod_joint(builder, f"{label}_cable_{len(joints) + 1}", bodies[-1], bodies[0],
                                  _anchor(rest_length[-1], True, False), _anchor(rest_length[0], False, False),
                                  rest_frames[-1], rest_frames[0])  # fmt: skip
        set_rod_gains(builder, material, float(rest_length[-1]), float(rest_length[0]), float(radius[n - 2]),
                      float(radius[0]), float(point_radius[0]))  # fmt: skip
        joints.append(j)
        rests.append(rest_q)
        n -= 1  # (the authored points: the last is the first)
    point_bodies, point_offsets = np.zeros((n, 2), dtype=np.int64), np.zeros((n, 2))
    for i in range(n):  # (a point: the end of the segment before it and the start of the one after)
        before = [(i - 1, 0.5 * rest_length[i - 1])] if i > 0 or closed else []
        ends = before + ([(i, -0.5 * rest_length[i])] if i < len(bodies) else [])
        ends = ends * 2 if len(ends) == 1 else ends
        point_bodies[i] = [bodies[e] for e, _ in ends]
        point_offsets[i] = [z for _, z in ends]
    return bodies, joints, np.array(rests).reshape(-1, 4), (point_bodies, point_offsets)


def transport_frames(tangents) -> list:
    """Per segment of unit ``tangents`` (in order along a curve), its frame by parallel transport: the first turned
    from +Z onto it, each next turned from the one before by the shortest rotation between their tangents."""
    frames, previous = [], np.array([0.0, 0.0, 1.0])
    for i, t in enumerate(np.asarray(tangents, dtype=np.float64)):
        turn = quat_between(previous, t)
        frames.append(turn if i == 0 else _unit(quat_multiply(turn, frames[-1])))
        previous = t
    return frames


def frames_from_normals(points, normals, strict: bool = False) -> np.ndarray | None:
    """Per segment of the polyline ``points`` (n, 3), its material frame (xyzw) from the normals (n, 3, world; each
    segment takes its first point's): +Z along the segment, +Y toward the normal's part across it; a normal along the
    segment (or zero) leaves the segment's frame turned from +Z alone (``strict``: None for the whole curve), as
    Newton's importer builds them."""
    p, nrm = np.asarray(points, dtype=np.float64), np.asarray(normals, dtype=np.float64)
    out = []
    for i in range(len(p) - 1):
        t = p[i + 1] - p[i]
        t = t / np.linalg.norm(t)
        q = quat_between(np.array([0.0, 0.0, 1.0]), t)
        across = nrm[i] - (nrm[i] @ t) * t
        length = float(np.linalg.norm(across))
        if not length > 1.0e-8 and strict:
            return None
        if length > 1.0e-8:
            y0 = quat_rotate(q, np.array([0.0, 1.0, 0.0]))
            roll = math.atan2(float(np.cross(y0, across / length) @ t), float(y0 @ (across / length)))
            q = _unit(quat_multiply(np.append(t * math.sin(0.5 * roll), math.cos(0.5 * roll)), q))
        out.append(q)
    return np.array(out).reshape(-1, 4)


def _unit(q) -> np.ndarray:
    q = np.asarray(q, dtype=np.float64)
    return q / np.linalg.norm(q)


def _anchor(rest_length: float, at_end: bool, back: bool) -> tuple:
    """A segment's anchor frame at its end (``at_end``) or start, facing back along it where ``back``."""
    z = 0.5 * float(rest_length) * (1.0 if at_end else -1.0)
    return np.array([0.0, 0.0, z]), (_FLIP if back else np.array([0.0, 0.0, 0.0, 1.0]))


def _rod_joint(builder, label, k, bodies, parent, child, rest_length, rest_frames, radius, point_radius, material,
               rests) -> int:  # fmt: skip
    """The rod joint between segments ``parent`` and ``child`` (neighbours) at their shared point, its gains from the
    material discretized over the joint's dual length (half of each segment), as Newton's importer does."""
    forward = child == parent + 1  # (walking toward the far end: the parent's end meets the child's start)
    shared = parent + 1 if forward else parent
    x_p = _anchor(rest_length[parent], forward, not forward)
    x_c = _anchor(rest_length[child], not forward, not forward)
    j, rest = add_rod_joint(builder, f"{label}_cable_{k}", bodies[parent], bodies[child], x_p, x_c,
                            rest_frames[parent], rest_frames[child])  # fmt: skip
    rests.append(rest)
    set_rod_gains(builder, material, float(rest_length[parent]), float(rest_length[child]), float(radius[parent]),
                  float(radius[child]), float(point_radius[shared]))  # fmt: skip
    return j


def add_rod_joint(builder, label, parent, child, x_p, x_c, rest_p, rest_c) -> tuple:
    """A rod joint from body ``parent`` to ``child`` at their anchor frames ``x_p``, ``x_c`` (body frames), its
    coordinates the relative pose now; returns (joint, rest rotation: the child's anchor frame relative to the
    parent's with the bodies at their rest frames ``rest_p``, ``rest_c``)."""
    j = builder.add_joint(JointType.ROD, parent, child, x_p, x_c, label=label)
    rp = quat_multiply(rest_p, x_p[1])
    rc = quat_multiply(rest_c, x_c[1])
    x_wp = transform_multiply(builder.body_q[parent], x_p)
    x_wc = transform_multiply(builder.body_q[child], x_c)
    rel = transform_multiply(transform_inverse(x_wp), x_wc)
    builder.joint_q[j] = np.concatenate([rel[0], _unit(rel[1])])
    return j, _unit(quat_multiply(quat_conjugate(rp), rc))


def set_rod_gains(builder, material, lp, lc, rp, rc, r_joint) -> None:
    """The last added rod joint's six gains (shear, shear, stretch, bend, bend, twist) from ``material`` (None:
    Newton's defaults) between segments of rest lengths ``lp``, ``lc`` and radii ``rp``, ``rc``, at a point of radius
    ``r_joint``: stretch and shear two springs in series (half of each segment), bend and twist the point's over the
    joint's dual length, the dampings over it too, as Newton's importer discretizes them."""
    if material is None:
        ke, kd = (DEFAULT_STRETCH, DEFAULT_STRETCH, DEFAULT_STRETCH, 0.0, 0.0, 0.0), (0.0,) * 6
    else:
        sp, sc = material.section(rp), material.section(rc)
        sj, dual = material.section(r_joint), 0.5 * (lp + lc)

        def series(a, b):
            return 0.0 if a == 0.0 or b == 0.0 else 1.0 / (0.5 * lp / a + 0.5 * lc / b)

        shear, stretch = series(sp.shear, sc.shear), series(sp.stretch, sc.stretch)
        ke = (shear, shear, stretch, sj.bend / dual, sj.bend / dual, sj.twist / dual)
        ds, dh, db, dt = (x / dual for x in material.damping)
        kd = (dh, dh, ds, db, db, dt)
    d0 = len(builder.joint_target_ke) - 6  # (its DOFs: the last added)
    builder.joint_target_ke[d0 : d0 + 6] = [float(x) for x in ke]
    builder.joint_target_kd[d0 : d0 + 6] = [float(x) for x in kd]


def add_cable(builder, cable: Cable) -> Cable:
    """Record ``cable`` (its curves added by :func:`add_cable_curve`) in ``builder.cables``."""
    builder.cables.append(cable)
    return cable


def rod_rest_rotations(cables) -> dict:
    """Every cable's rod joints -> their rest rotations (xyzw), for the solver that simulates them."""
    return {int(j): r for c in cables for j, r in zip(c.joints, c.rest_rotations, strict=True)}
