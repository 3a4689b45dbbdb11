"""Articulation links placed where their joints put them.

PhysX simulates an articulation (``PhysicsArticulationRootAPI``) in reduced coordinates: when it creates one, it
places each link from the root's pose, the joint frames (``physics:localPos0/1``, ``localRot0/1``) and the joint
positions, whatever pose the link's prim authors; MuJoCo and Featherstone build their bodies so by construction. The
maximal-coordinate solvers (XPBD, semi-implicit, Kamino) start from ``State.body_q``, where a link whose authored pose
disagrees with its joint would be yanked onto the joint at the first step. So every engine starts an articulation's
links where their joints put them: each joint's coordinates are read from the authored relative pose
(:meth:`~newton_usd.core.builder.ModelBuilder.joint_q_from_body_q`: the rotation about a hinge, the offset along a
slide), and the links placed from them by forward kinematics. Joints outside articulations keep their bodies as
authored (PhysX's maximal joints pull such bodies together too), as do kinematic bodies (their pose is the stage's).
"""

from __future__ import annotations

import math

import numpy as np

from ..core.joint_coords import off_their_joints
from ..core.quat import transform_inverse, transform_multiply
from ..core.types import JointType

PLACED_WITHIN = 1e-6
"""m or rad: a link this close to where its joint puts it is left as authored (a float32 joint frame's rounding)."""
MOVED_DISTANCE = 1e-3
"""m: a joint whose frames are farther apart than this at the authored poses is named in the warning."""
MOVED_ANGLE = math.radians(0.1)
"""rad: a joint whose frames turn more than this off its free axes at the authored poses is named too."""

MOVED_KIND = (
    "articulation links start where their joints put them, not at their authored poses (PhysX builds an "
    "articulation so): these joints' frames disagree with their bodies' poses, their child links moved by"
)


def place_articulation_links(builder, result) -> list[tuple[str, str, float, float]]:
    """Place the links of ``builder``'s articulations where their joints put them (forward kinematics from the joint
    coordinates); warn once (``result``'s diagnostics) naming the joints whose frames disagreed with the authored
    poses. Returns ``(joint, child body, m, rad)``: each such joint, its child and how far the child moved."""
    children, first_joint = set(), {}
    kinematic = builder.body_kinematic
    for j, child in enumerate(builder.joint_child):
        first_joint.setdefault(child, j)
        if builder.joint_articulation[j] >= 0 and builder.joint_type[j] != JointType.FREE and not kinematic[child]:
            children.add(child)
    if not children:
        return []
    children = _with_descendants(builder, off_their_joints(builder, children, PLACED_WITHIN), children)
    if not children:
        return []
    before = {b: _pose(builder.body_q[b]) for b in children}
    for j in first_joint.values():
        if builder.joint_child[j] in children and builder.joint_parent[j] >= 0:
            before.setdefault(builder.joint_parent[j], _pose(builder.body_q[builder.joint_parent[j]]))
    builder.body_q_from_joint_q(children)
    moved = []
    for child in sorted(children):
        j = first_joint[child]
        parent = builder.joint_parent[j]
        after = _pose(builder.body_q[child])
        if parent >= 0:  # the joint's own disagreement: the child relative to its parent, before and after
            rel_before = transform_multiply(transform_inverse(before[parent]), before[child])
            rel_after = transform_multiply(transform_inverse(_pose(builder.body_q[parent])), after)
        else:
            rel_before, rel_after = before[child], after
        if not _apart(rel_before, rel_after):
            continue
        distance = float(np.linalg.norm(after[0] - before[child][0]))
        moved.append((builder.joint_label[j], builder.body_label[child], distance, _angle(before[child], after)))
    for joint, body, distance, angle in moved:
        turned = f", turned {math.degrees(angle):.3g} deg" if angle > MOVED_ANGLE else ""
        result.diagnostics.add(MOVED_KIND, f"{joint} ({body}: {distance:.3g} m{turned})")
    return moved


def _with_descendants(builder, off, children) -> set:
    """The bodies of ``off`` and their descendants among ``children`` (a parent moved moves its links)."""
    kids = {}
    for parent, child in zip(builder.joint_parent, builder.joint_child, strict=True):
        if child in children:
            kids.setdefault(parent, []).append(child)
    out, stack = set(), list(off)
    while stack:
        b = stack.pop()
        if b not in out:
            out.add(b)
            stack.extend(kids.get(b, ()))
    return out


def _pose(q) -> tuple:
    return np.asarray(q[0], dtype=np.float64), np.asarray(q[1], dtype=np.float64)


def _angle(a, b) -> float:
    """rad: the rotation between the orientations of poses ``a`` and ``b``."""
    return 2.0 * math.acos(min(1.0, abs(float(np.dot(a[1], b[1])))))


def _apart(a, b) -> bool:
    return float(np.linalg.norm(a[0] - b[0])) > MOVED_DISTANCE or _angle(a, b) > MOVED_ANGLE
