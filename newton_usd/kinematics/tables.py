"""Per-model index tables the kinematics kernels walk: joint order, each body's chain of DOFs, mass-matrix pairs.

Built once per Model on the host from world 0 (every world of a replicated model has the same structure;
world ``w``'s elements are world 0's shifted by ``w`` times the per-world counts) and kept on the model's device.
"""

from __future__ import annotations

import weakref

import numpy as np
import warp as wp

from ..core.types import JointType
from ..errors import NewtonUsdError

_CACHE = weakref.WeakKeyDictionary()


class KinematicTables:
    """Index tables of one Model (see the module docstring).

    Attributes:
        worlds, bodies, joints, dofs, coords: counts (per world for the last four).
        order: world 0's joints, parents before children, a body's stack of joints in order (``wp.array`` int32).
        joint_stacked: 1 for a joint that is not the first of its child body (MJCF's several joints in one body:
            it moves the body about its child frame ``X_c``, after the joints before it).
        joint_linear: linear DOFs of each joint (D6: its first ``n``; prismatic 1; free 3; others 0).
        dof_angular: 1 where a DOF is a rotation (int32 per world-0 DOF).
        chain: ``(bodies, dofs)`` int32, 1 where the DOF moves the body (its joint is on the body's path to
            the world).
        pair_i, pair_j, pair_body: the mass matrix's structurally non-zero entries ``i <= j`` and, for each, the
            body whose subtree both DOFs move (the deeper DOF's).
        body_parent, body_leaves_first: each body's parent body (-1: none) and the bodies, deepest first.
        body_of_label: world-0 body index by label, for every world's labels.
    """

    def __init__(self, model):
        W = model.num_worlds
        self.worlds = W
        self.bodies, self.joints = model.body_count // W, model.joint_count // W
        self.dofs, self.coords = model.joint_dof_count // W, model.joint_coord_count // W
        J, B = self.joints, self.bodies
        jt = model.joint_type.numpy()[:J]
        parent = model.joint_parent.numpy()[:J]
        child = model.joint_child.numpy()[:J]
        qd_start = model.joint_qd_start.numpy()[: J + 1]
        dim = model.joint_dof_dim.numpy().reshape(-1, 2)[:J]
        joint_of = np.full(B, -1, dtype=np.int64)  # the (first) joint that moves each body
        stacked = np.zeros(J, dtype=np.int32)  # 1: a joint after the first of its child (a stack, as MJCF nests them)
        for j in range(J):
            first = joint_of[child[j]]
            if first >= 0:
                if parent[first] != parent[j]:
                    raise NewtonUsdError(
                        f"{model.body_label[child[j]]}: child of joints from two parents ({model.joint_label[first]}, "
                        f"{model.joint_label[j]}); kinematics needs a tree"
                    )
                stacked[j] = 1
            else:
                joint_of[child[j]] = j
        self.joint_stacked = wp.array(stacked, dtype=wp.int32, device=model.device)
        depth = np.zeros(B, dtype=np.int64)

        def body_depth(b, seen=()):
            j = joint_of[b]
            if j < 0 or parent[j] < 0:
                return 0
            if b in seen:
                raise NewtonUsdError(f"{model.body_label[b]}: a kinematic loop; kinematics needs a tree")
            return 1 + body_depth(int(parent[j]), (*seen, b))

        for b in range(B):
            depth[b] = body_depth(b)
        order = sorted(range(J), key=lambda j: (depth[child[j]], j))
        self.order = wp.array(np.asarray(order, dtype=np.int32), dtype=wp.int32, device=model.device)
        linear = np.zeros(J, dtype=np.int32)
        angular = np.zeros(self.dofs, dtype=np.int32)
        for j in range(J):
            nd = qd_start[j + 1] - qd_start[j]
            if jt[j] == JointType.PRISMATIC:
                linear[j] = 1
            elif jt[j] == JointType.D6:
                linear[j] = dim[j, 0]
            elif jt[j] == JointType.FREE:
                linear[j] = 3
            angular[qd_start[j] + linear[j] : qd_start[j] + nd] = 1
        self.joint_linear = wp.array(linear, dtype=wp.int32, device=model.device)
        self.dof_angular = wp.array(angular, dtype=wp.int32, device=model.device)
        chain = np.zeros((B, self.dofs), dtype=np.int32)
        joints_of = [[] for _ in range(B)]
        for j in range(J):
            joints_of[child[j]].append(j)
        for b in range(B):
            a = b
            while a >= 0 and joints_of[a]:
                for j in joints_of[a]:
                    chain[b, qd_start[j] : qd_start[j + 1]] = 1
                a = int(parent[joints_of[a][0]])
        self.chain_np = chain
        self.chain = wp.array(chain, dtype=wp.int32, device=model.device)
        # The mass matrix's structurally non-zero entries: DOF pairs i <= j of which one moves the other's body;
        # the composite body of the deeper one's subtree is what both DOFs move.
        dof_body = np.zeros(self.dofs, dtype=np.int64)
        for j in range(J):
            dof_body[qd_start[j] : qd_start[j + 1]] = child[j]
        pi, pj, pb = [], [], []
        for i in range(self.dofs):
            for j in range(i, self.dofs):
                if chain[dof_body[j], i] or chain[dof_body[i], j]:
                    pi.append(i)
                    pj.append(j)
                    pb.append(dof_body[j] if chain[dof_body[j], i] else dof_body[i])
        self.pairs = len(pi)
        self.pair_i = wp.array(np.asarray(pi, dtype=np.int32), dtype=wp.int32, device=model.device)
        self.pair_j = wp.array(np.asarray(pj, dtype=np.int32), dtype=wp.int32, device=model.device)
        self.pair_body = wp.array(np.asarray(pb, dtype=np.int32), dtype=wp.int32, device=model.device)
        # Bodies children first (for composite inertias), each with the body its joints hang from (-1: none).
        body_parent = np.array([parent[joints_of[b][0]] if joints_of[b] else -1 for b in range(B)], dtype=np.int32)
        self.body_parent = wp.array(body_parent, dtype=wp.int32, device=model.device)
        leaves_first = sorted(range(B), key=lambda b: -depth[b])
        self.body_leaves_first = wp.array(np.asarray(leaves_first, dtype=np.int32), dtype=wp.int32, device=model.device)
        self.body_of_label = {}
        for b, label in enumerate(model.body_label):
            self.body_of_label.setdefault(label, b % B)

    def body_index(self, body) -> int:
        """World-0 index of ``body``: an index (of world 0) or a body's prim path (in any world)."""
        if isinstance(body, (int, np.integer)):
            if not 0 <= body < self.bodies:
                raise NewtonUsdError(f"body {body} does not exist (a world has {self.bodies})")
            return int(body)
        try:
            return self.body_of_label[body]
        except KeyError:
            raise NewtonUsdError(f"{body}: no such body in the model") from None


def tables(model) -> KinematicTables:
    """The model's :class:`KinematicTables` (made on first use; a new Model gets new ones)."""
    hit = _CACHE.get(model)
    if hit is None:
        hit = KinematicTables(model)
        _CACHE[model] = hit
    return hit
