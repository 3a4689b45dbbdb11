"""Bodies moved by hand during a run: a live edit of a body's transform or velocity rewrites the running State.

A moved body is teleported, keeping its velocity; the bodies its joints carry (its subtree) move with it, rigidly,
as a reduced-coordinate engine moves them (PhysX moves an articulation so). Its joint coordinates follow: a free
joint's are the new pose; any other joint takes the coordinates that bring the body nearest to where it was put
(``core.joint_coords``: a hinge turns toward it; what the joint cannot reach, the body does not reach), and the
body and its subtree go where those coordinates put them. A welded body (a fixed joint) and a kinematic body (the
stage moves it) are not moved. A velocity edit sets the body's velocity (a free body's; a jointed body's joint
velocities that come nearest to it).

The State's four arrays are written (``joint_q``, ``joint_qd`` and the poses and velocities that follow), so that
every engine sees the same state: MuJoCo takes the edited joint coordinates at its next step, Newton's solvers are
told (``joint_states_written``).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ..core.joint_coords import body_q_from_joint_q, joint_q_from_body_q, joint_qd_from_body_qd
from ..core.quat import cross, quat_rotate, transform_inverse, transform_multiply
from ..core.types import JointType


class JointTree:
    """A model's joints as a tree over its bodies (numpy, float64): each body's joints (a stack, as MJCF nests
    them) and the bodies each one carries."""

    def __init__(self, model):
        self.type = model.joint_type.numpy().astype(np.int64)
        self.parent = model.joint_parent.numpy().astype(np.int64)
        self.child = model.joint_child.numpy().astype(np.int64)
        self.q_start = model.joint_q_start.numpy().astype(np.int64)
        self.qd_start = model.joint_qd_start.numpy().astype(np.int64)
        self.X_p = model.joint_X_p.numpy().astype(np.float64)
        self.X_c = model.joint_X_c.numpy().astype(np.float64)
        self.axis = model.joint_axis.numpy().astype(np.float64)
        self.dof_dim = model.joint_dof_dim.numpy().astype(np.int64)
        self.joints_of = defaultdict(list)  # child body -> its joints, in order
        self.children = defaultdict(list)  # body -> the bodies its joints carry
        for j, c in enumerate(self.child):
            self.joints_of[int(c)].append(j)
            if len(self.joints_of[int(c)]) == 1 and self.parent[j] >= 0:
                self.children[int(self.parent[j])].append(int(c))

    def subtree(self, body: int) -> list:
        """``body`` and the bodies its joints carry, parents first."""
        out, k = [body], 0
        while k < len(out):
            out.extend(self.children.get(out[k], ()))
            k += 1
        return out

    def depth(self, body: int) -> int:
        d, seen = 0, set()
        while body >= 0 and body not in seen:
            seen.add(body)
            joints = self.joints_of.get(body)
            body = int(self.parent[joints[0]]) if joints else -1
            d += 1
        return d


class _Stack:
    """One body's joint stack as ``core.joint_coords`` reads a builder: body 0 the child, body 1 the parent."""

    def __init__(self, tree: JointTree, joints, child_pose, parent_pose, joint_q, body_qd=None):
        self.joint_type = [JointType(int(tree.type[j])) for j in joints]
        parent = int(tree.parent[joints[0]])
        self.joint_parent = [1 if parent >= 0 else -1] * len(joints)
        self.joint_child = [0] * len(joints)
        self.joint_X_p = [(tree.X_p[j, :3], tree.X_p[j, 3:]) for j in joints]
        self.joint_X_c = [(tree.X_c[j, :3], tree.X_c[j, 3:]) for j in joints]
        self.joint_dof_dim = [tuple(tree.dof_dim[j]) for j in joints]
        self.joint_q = [joint_q[tree.q_start[j] : tree.q_start[j + 1]].astype(np.float64) for j in joints]
        self.joint_qd = [np.zeros(tree.qd_start[j + 1] - tree.qd_start[j]) for j in joints]
        self.joint_axis = [tree.axis[d] for j in joints for d in range(tree.qd_start[j], tree.qd_start[j + 1])]
        self.body_q = [child_pose] + ([parent_pose] if parent >= 0 else [])
        self.body_qd = body_qd


def _pose(row) -> tuple:
    return np.asarray(row[:3], dtype=np.float64), np.asarray(row[3:], dtype=np.float64)


def _origin_velocity(qd_com, pose, com) -> np.ndarray:
    """A body's origin velocity (builder convention) from its center-of-mass velocity (State convention)."""
    lin, ang = qd_com[:3], qd_com[3:]
    return np.concatenate([lin - cross(ang, quat_rotate(pose[1], com)), ang])


def move_bodies(model, tree: JointTree, state, poses: dict, velocities: dict) -> list:
    """Teleport bodies to ``poses`` (body index -> (position, Warp quaternion), SI) and set the origin velocities
    ``velocities`` (body index -> 6 values: linear of the body origin, angular; world frame), writing ``state``
    (see the module). Returns ``[(body, why)]`` of the bodies that could not be moved."""
    body_q = state.body_q.numpy().astype(np.float64)
    body_qd = state.body_qd.numpy().astype(np.float64)
    joint_q = state.joint_q.numpy().astype(np.float64)
    joint_qd = state.joint_qd.numpy().astype(np.float64)
    com = model.body_com.numpy().astype(np.float64)
    kinematic = model.body_kinematic.numpy()
    refused = []
    for b in sorted(poses, key=tree.depth):  # parents first: a child's pose is relative to its moved parent
        joints = tree.joints_of.get(b, [])
        if kinematic[b]:
            refused.append((b, "it is kinematic: its prim's transform moves it"))
            continue
        if not joints or all(tree.type[j] == JointType.FIXED for j in joints):
            refused.append((b, "it is welded (a fixed joint): it moves with what it is welded to"))
            continue
        old = _pose(body_q[b])
        new = (np.asarray(poses[b][0], dtype=np.float64), np.asarray(poses[b][1], dtype=np.float64))
        j0 = joints[0]
        if tree.type[j0] == JointType.FREE and len(joints) == 1:
            reached = new
            joint_q[tree.q_start[j0] : tree.q_start[j0] + 7] = np.concatenate(new)
        else:  # the coordinates nearest the new pose, and where they put the body
            parent = int(tree.parent[j0])
            stack = _Stack(tree, joints, new, _pose(body_q[parent]) if parent >= 0 else None, joint_q)
            joint_q_from_body_q(stack)
            body_q_from_joint_q(stack)
            for j, q in zip(joints, stack.joint_q, strict=True):
                joint_q[tree.q_start[j] : tree.q_start[j + 1]] = q
            reached = stack.body_q[0]
        motion = transform_multiply(reached, transform_inverse(old))
        for s in tree.subtree(b):
            pose = reached if s == b else transform_multiply(motion, _pose(body_q[s]))
            body_q[s, :3], body_q[s, 3:] = pose
            for j in tree.joints_of.get(s, []) if s != b else ():
                if tree.type[j] == JointType.FREE:  # (a free joint's coordinates are its body's world pose)
                    joint_q[tree.q_start[j] : tree.q_start[j] + 7] = body_q[s]
    for b, v in velocities.items():
        joints = tree.joints_of.get(b, [])
        if kinematic[b] or not joints or all(tree.type[j] == JointType.FIXED for j in joints):
            refused.append((b, "it cannot move: it is kinematic or welded"))
            continue
        v = np.asarray(v, dtype=np.float64)
        pose = _pose(body_q[b])
        j0 = joints[0]
        if tree.type[j0] == JointType.FREE and len(joints) == 1:
            joint_qd[tree.qd_start[j0] : tree.qd_start[j0] + 6] = v
        else:
            parent = int(tree.parent[j0])
            parent_pose = _pose(body_q[parent]) if parent >= 0 else None
            qd = [v] + ([_origin_velocity(body_qd[parent], parent_pose, com[parent])] if parent >= 0 else [])
            stack = _Stack(tree, joints, pose, parent_pose, joint_q, qd)
            joint_qd_from_body_qd(stack)
            for j, qd_j in zip(joints, stack.joint_qd, strict=True):
                joint_qd[tree.qd_start[j] : tree.qd_start[j + 1]] = qd_j
        body_qd[b, :3] = v[:3] + cross(v[3:], quat_rotate(pose[1], com[b]))  # (the State's: the COM's velocity)
        body_qd[b, 3:] = v[3:]
    for name, values in (("body_q", body_q), ("body_qd", body_qd), ("joint_q", joint_q), ("joint_qd", joint_qd)):
        getattr(state, name).assign(values.astype(np.float32))
    return refused


def hold_bodies(tree: JointTree, state, bodies) -> None:
    """Free bodies switched between kinematic and dynamic: each stays where it is, at rest (its velocity zero), its
    free joint's coordinates its pose (a solver stepping joint coordinates, or compiled anew, starts from them)."""
    body_q, body_qd = state.body_q.numpy(), state.body_qd.numpy().copy()
    joint_q, joint_qd = state.joint_q.numpy().copy(), state.joint_qd.numpy().copy()
    for b in np.asarray(bodies, dtype=np.int64).tolist():
        body_qd[b] = 0.0
        for j in tree.joints_of.get(b, []):
            if tree.type[j] == JointType.FREE:
                joint_q[tree.q_start[j] : tree.q_start[j] + 7] = body_q[b]
                joint_qd[tree.qd_start[j] : tree.qd_start[j] + 6] = 0.0
    for name, values in (("body_qd", body_qd), ("joint_q", joint_q), ("joint_qd", joint_qd)):
        getattr(state, name).assign(values)
