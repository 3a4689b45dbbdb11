"""Joints oriented into trees rooted at the world (a breadth-first walk from the world and from each
floating tree's root, ArticulationRootAPI first), and the joints that close loops, simulated as
equality constraints.
"""

from __future__ import annotations

from collections import defaultdict, deque
from functools import partial

import numpy as np

from ..core.quat import quat_rotate, transform_inverse, transform_multiply
from ..core.types import JointType
from . import properties as props
from .descriptors import AXIS_VECTORS, OT, axis_token
from .joints import add_joint, joint_bodies, joint_frames

JOINT_TYPES = {
    OT.RevoluteJoint: JointType.REVOLUTE,
    OT.PrismaticJoint: JointType.PRISMATIC,
    OT.SphericalJoint: JointType.BALL,
    OT.FixedJoint: JointType.FIXED,
    OT.D6Joint: JointType.D6,
}
"""UsdPhysics joint object types -> the joint type they import as (before a lock or a free rotation changes it)."""


_UNSUPPORTED_JOINTS = (OT.CustomJoint,)


def import_joints(builder, stage, descs, frame, result, kinematic, ctx, order):
    diag = result.diagnostics
    joints = []  # (path, desc, joint type)
    for obj_type in _UNSUPPORTED_JOINTS:
        for path, _ in descs.get(obj_type, []):
            diag.add(f"{obj_type.name} joints are not supported yet and were ignored", path)
    for obj_type, jt in JOINT_TYPES.items():
        for path, d in descs.get(obj_type, []):
            if not d.jointEnabled and not _is_equality(stage, path, d):
                diag.add("joint disabled (physics:jointEnabled = false): not simulated", path)
                continue
            joints.append((path, d, jt))
    # Authored (traversal) order: stacked joints between two bodies compose in this order, as in MJCF.
    joints.sort(key=lambda j: order.get(str(j[0]), len(order)))

    # Undirected graph of bodies (and the world, -1) connected by joints.
    edges = defaultdict(list)
    valid = []
    loops = []  # loop-closing joints: equality constraints
    for path, d, jt in joints:
        bodies = joint_bodies(d, path, result)
        if bodies is None:
            continue
        b0, b1 = bodies
        if d.excludeFromArticulation or not d.jointEnabled:  # (disabled: an inactive MjcEquality)
            loops.append((path, d, jt, b0, b1))
            continue
        i = len(valid)
        valid.append((path, d, jt, b0, b1))
        edges[b0].append(i)
        edges[b1].append(i)

    articulation_of = {}
    for path, d in descs.get(OT.Articulation, []):
        for jp in d.articulatedJoints:
            articulation_of[str(jp)] = path
    art_index = {}

    visited = set()
    used = set()
    tree_parent = {}
    adds = []  # (child body, the call adding its joint), in the walks' order: see _in_body_order

    def walk(root, from_world=None):
        """Breadth first from ``root`` (the world: through the joints ``from_world`` only, one tree's)."""
        queue = deque([root])
        visited.add(root)
        while queue:
            parent = queue.popleft()
            for i in from_world if parent == -1 and from_world is not None else edges[parent]:
                if i in used:
                    continue
                path, d, jt, b0, b1 = valid[i]
                child = b1 if b0 == parent else b0
                used.add(i)
                if child in visited and tree_parent.get(child) != parent:
                    loops.append((path, d, jt, b0, b1))  # it closes a cycle of joints
                    diag.add(
                        "joint closes a loop of joints and is not excluded from the articulation "
                        "(physics:excludeFromArticulation): simulated as an equality constraint",
                        path,
                    )
                    continue
                stacked = child in visited  # another joint between the same two bodies
                visited.add(child)
                tree_parent[child] = parent
                adds.append((child, partial(add_joint, builder, path, d, jt, b0, b1, reverse=(b0 != parent),
                                            frame=frame, result=result, articulation_of=articulation_of,
                                            art_index=art_index, stage=stage, ctx=ctx)))  # fmt: skip
                if not stacked:
                    queue.append(child)

    # One connected group of bodies after another from the world, so that each tree's joints are contiguous
    # (Newton's articulations need it; two fixed-base chains walked together would interleave theirs).
    for from_world in _world_joints_by_tree(edges, valid):
        walk(-1, from_world)
    roots = {
        result.body_index[str(rp)]
        for _, d in descs.get(OT.Articulation, [])
        for rp in d.rootPrims
        if str(rp) in result.body_index
    }
    moving = {result.body_index[p] for p in kinematic if p in result.body_index}
    for b in sorted(result.body_index.values()):
        if b not in visited:  # a floating tree: its root gets a free joint (a kinematic root's too)
            root = _pick_root(b, edges, valid, moving) if moving else None
            if root is None or root not in moving:
                root = _pick_root(b, edges, valid, roots)
            adds.append((root, partial(_add_root_joint, builder, root, result)))
            tree_parent[root] = -1
            walk(root)
    for _, add in _in_body_order(adds, tree_parent):
        add()
    for path, d, jt, b0, b1 in loops:
        add_loop_closure(builder, stage, path, d, jt, b0, b1, frame, result, ctx)


def _add_root_joint(builder, root, result) -> None:
    """A floating tree's root: a free joint. A kinematic root's too (as Newton's USD importer gives it): the
    stage's (animated) transform moves it through its pose and free coordinates (see Simulation), its flag says that
    nothing else does, so that switching it on or off during a run changes no joint."""
    label = builder.body_label[root]
    j = builder.add_joint_free(root, label=label)
    result.joint_index.setdefault(label, j)


def _in_body_order(adds, tree_parent) -> list:
    """The joints to add, ``adds`` ((child body, add) in the walks' order), sorted by their child bodies where
    that order still adds every parent's joint before its children's: then joint j moves body j, as Newton's
    Featherstone solver assumes (its mass matrix takes joint j's link inertia from body j; Newton's USD importer
    orders bodies so, ``bodies_follow_joint_ordering``). Where a body precedes its parent (a tree rooted at a later
    body), the walks' order is kept."""
    if not all(tree_parent.get(c, -1) < c for c, _ in adds):
        return adds
    ordered = sorted(adds, key=lambda a: a[0])  # (stable: stacked joints on one body keep their order)

    def tree(b):
        while tree_parent.get(b, -1) >= 0:
            b = tree_parent[b]
        return b

    runs = [tree(c) for c, _ in ordered]
    starts = [r for i, r in enumerate(runs) if i == 0 or r != runs[i - 1]]
    return ordered if len(starts) == len(set(starts)) else adds  # (each tree's joints stay contiguous)


def _world_joints_by_tree(edges, valid) -> list:
    """The joints to the world grouped by the group of bodies (connected by joints between bodies) each holds,
    groups in the order of their first joint to the world, joints in ``edges[-1]``'s order."""
    group_of, out = {}, []
    for i in edges[-1]:
        _, _, _, b0, b1 = valid[i]
        b = b1 if b0 == -1 else b0
        if b not in group_of:
            out.append([])
            for member in _component(b, edges, valid):
                group_of[member] = len(out) - 1
        out[group_of[b]].append(i)
    return out


def _component(b, edges, valid) -> set:
    """The bodies connected to body ``b`` by joints between bodies."""
    component, stack = {b}, [b]
    while stack:
        n = stack.pop()
        for i in edges[n]:
            _, _, _, b0, b1 = valid[i]
            for o in (b0, b1):
                if o >= 0 and o not in component:
                    component.add(o)
                    stack.append(o)
    return component


def _pick_root(b, edges, valid, roots):
    """The articulation root body of ``b``'s connected component if one is marked (``roots``: the
    body indices of the ArticulationRootAPI prims), else ``b``."""
    component = _component(b, edges, valid)
    marked = component & roots
    return min(marked) if marked else min(component)


_EQUALITY_APIS = ("MjcEqualityConnectAPI", "MjcEqualityWeldAPI")


def _is_equality(stage, path, d) -> bool:
    """A joint excluded from articulations that carries an MjcEquality API: an equality constraint
    (``physics:jointEnabled`` false: inactive at the start, as MuJoCo's ``active``)."""
    if not d.excludeFromArticulation:
        return False
    applied = stage.GetPrimAtPath(path).GetAppliedSchemas()
    return any(api in applied for api in _EQUALITY_APIS)


LOOP_HINGE_SPAN = 0.1
"""m: a revolute loop closure is two connect constraints this far apart along its axis."""


COINCIDENT = 1e-6
"""m: two joint-frame origins closer than this in the initial pose coincide (a connect constraint then
joins them where they are; farther apart, it pulls them together)."""


def add_loop_closure(builder, stage, path, d, jt, b0, b1, frame, result, ctx):
    """A joint that closes a loop (or is excluded from articulations) as equality constraints: a fixed
    joint welds, a spherical joint connects, a revolute joint connects at two points of its axis. The
    joint frames are brought together (UsdPhysics), so a connect holds both frames' points."""
    x0, x1_pose = joint_frames(d, b0, b1, frame, stage)
    x1 = x1_pose[0]
    label = str(path)
    active = bool(d.jointEnabled)

    def connect(p0, p1):
        world = [transform_multiply(builder.body_q[b], (p, np.array([0.0, 0.0, 0.0, 1.0])))[0] if b >= 0 else p
                 for b, p in ((b0, p0), (b1, p1))]  # fmt: skip
        apart = np.linalg.norm(world[0] - world[1]) > COINCIDENT
        return builder.add_equality("connect", b0, b1, p0, anchor2=p1 if apart else None, active=active, label=label)

    if jt == JointType.FIXED:  # body1 keeps the pose that makes the two joint frames coincide
        relpose = transform_multiply(x0, transform_inverse(x1_pose))
        ids = [builder.add_equality("weld", b0, b1, x1, relpose=relpose, active=active, label=label)]
    elif jt == JointType.BALL:
        ids = [connect(x0[0], x1)]
    elif jt == JointType.REVOLUTE:
        axis = AXIS_VECTORS[axis_token(d.axis)]
        ids = [
            connect(x0[0], x1),
            connect(
                x0[0] + LOOP_HINGE_SPAN * quat_rotate(x0[1], axis),
                x1 + LOOP_HINGE_SPAN * quat_rotate(x1_pose[1], axis),
            ),
        ]
    else:
        result.diagnostics.add(f"loop-closing {jt.name.lower()} joints are not simulated yet", path)
        return
    prim = stage.GetPrimAtPath(path)
    resolved = result.resolver.resolve_all(prim, (props.SHAPE_SOLREF, props.SHAPE_SOLIMP, props.EQ_TORQUESCALE), ctx)
    for i in ids:
        for name, key in (("solref", "eq_solref"), ("solimp", "eq_solimp"), ("torquescale", "eq_torquescale")):
            if resolved[name].kind != "default":
                builder.set_mujoco("equality", key, i, resolved[name].value)
