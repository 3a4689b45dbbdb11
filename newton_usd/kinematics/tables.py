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
        order: world 0's joints, parents before children (``wp.array`` int32).
        joint_linear: linear DOFs of each joint (D6: its first ``n``; prismatic 1; free 3; others 0).
        dof_angular: 1 where a DOF is a rotation (int32 per world-0 DOF).
        chain: ``(bodies, dofs)`` int32, 1 where the DOF moves the body (its joint is on the body's path to
            the world).
        pair_i, pair_j, pair_start, pair_bodies: the mass matrix's structurally non-zero entries ``i <= j`` and,
            for each, the bodies both DOFs move (``pair_bodies[pair_start[k]:pair_start[k + 1]]``).
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
        joint_of = np.full(B, -1, dtype=np.int64)  # the joint that moves each body
        for j in range(J):
            if joint_of[child[j]] >= 0:
                raise NewtonUsdError(
                    f"{model.body_label[child[j]]}: child of two joints ({model.joint_label[joint_of[child[j]]]}, "
                    f"{model.joint_label[j]}); kinematics needs a tree"
                )
            joint_of[child[j]] = j
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
        for b in range(B):
            a = b
            while a >= 0 and joint_of[a] >= 0:
                j = joint_of[a]
                chain[b, qd_start[j] : qd_start[j + 1]] = 1
                a = int(parent[j])
        self.chain_np = chain
        self.chain = wp.array(chain, dtype=wp.int32, device=model.device)
        pi, pj, starts, bodies = [], [], [0], []
        for i in range(self.dofs):
            for j in range(i, self.dofs):
                both = np.nonzero(chain[:, i] & chain[:, j])[0]
                if len(both):
                    pi.append(i)
                    pj.append(j)
                    bodies.extend(both.tolist())
                    starts.append(len(bodies))
        self.pairs = len(pi)
        self.pair_i = wp.array(np.asarray(pi, dtype=np.int32), dtype=wp.int32, device=model.device)
        self.pair_j = wp.array(np.asarray(pj, dtype=np.int32), dtype=wp.int32, device=model.device)
        self.pair_start = wp.array(np.asarray(starts, dtype=np.int32), dtype=wp.int32, device=model.device)
        self.pair_bodies = wp.array(np.asarray(bodies, dtype=np.int32), dtype=wp.int32, device=model.device)
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
