"""Cable graphs in the builder: curves welded at shared points into one rod graph (Newton's ``add_rod`` of a ``Rod``
with explicit edges, as its USD importer builds curve-to-curve junctions).

Each edge (segment) of the graph is a capsule body at its midpoint, its local +Z along the edge (each frame turned
from +Z on its own: a graph has no parallel transport), its rest frame the initial one turned onto the rest tangent.
The rod joints are a spanning tree of the edges, walked breadth-first from edge 0 (a free joint its root): at each of
a parent edge's two nodes, every edge there not yet reached becomes its child, the joint at the shared node, each
anchor frame facing away from its edge's far end where the node is its start (parent) or its end (child). Each
joint's gains are the material's over its dual length (half of each edge), its bend and twist at the shared node's
radius, as :func:`~newton_usd.core.cables.add_cable_curve` gives a chain's.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from .cables import _anchor, _unit, add_rod_joint, capsule_inertia, quat_between, set_rod_gains
from .quat import quat_multiply
from .types import JointType


def add_cable_graph(builder, label, nodes, edges, rest_vectors, radius, node_radius, mass, material, *, friction=None,
                    collide=True, frames=None, rest_frames=None) -> tuple:  # fmt: skip
    """Add a rod graph to ``builder`` (SI, world).

    Args:
        label: its bodies' and joints' label stem.
        nodes: (V, 3) the welded points now.
        edges: (E, 2) node indices of each segment (a connected tree).
        rest_vectors: (E, 3) each segment's rest vector from its first node to its second (its rest length and
            direction).
        radius, mass: per edge: the capsule's radius and the segment's mass.
        node_radius: per node: the radius at a joint there (its bend and twist rigidities).
        material: a :class:`~newton_usd.core.cables.CableMaterial` (None: Newton's default gains).
        frames, rest_frames: per edge, its material frame now and at rest (None: turned from +Z onto the edge; the
            frames turned onto the rest tangents).

    Returns ``(bodies (per edge), rod joints, their rest rotations, the child edge of each joint)``.
    """
    p = np.asarray(nodes, dtype=np.float64)
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    d = p[edges[:, 1]] - p[edges[:, 0]]
    t = d / np.linalg.norm(d, axis=1)[:, None]
    rv = np.asarray(rest_vectors, dtype=np.float64)
    rest_length = np.linalg.norm(rv, axis=1)
    tr = rv / rest_length[:, None]
    z = np.array([0.0, 0.0, 1.0])
    frames = [quat_between(z, ti) for ti in t] if frames is None else list(frames)
    if rest_frames is None:
        rest_frames = [_unit(quat_multiply(quat_between(ti, ri), f)) for ti, ri, f in zip(t, tr, frames, strict=True)]
    bodies = []
    kw = {} if friction is None else {"mu": float(friction)}
    for e in range(len(edges)):
        half = 0.5 * float(rest_length[e])
        center = 0.5 * (p[edges[e, 0]] + p[edges[e, 1]])
        b = builder.add_body((center, frames[e]), mass=float(mass[e]), com=np.zeros(3),
                             inertia=capsule_inertia(float(mass[e]), float(radius[e]), half),
                             label=f"{label}_edge_body_{e}")  # fmt: skip
        builder.add_shape_capsule(b, radius=float(radius[e]), half_height=half, label=f"{label}_edge_capsule_{e}",
                                  collision_enabled=collide, **kw)  # fmt: skip
        bodies.append(b)
    incidence = [[] for _ in range(len(p))]
    for e, (u, v) in enumerate(edges.tolist()):
        incidence[u].append(e)
        incidence[v].append(e)
    root = builder.add_joint(JointType.FREE, -1, bodies[0], label=f"{label}_free_joint")
    joints, rests, children = [], [], []
    seen = [False] * len(edges)
    seen[0] = True
    queue = deque([0])
    while queue:
        a = queue.popleft()
        for node in edges[a].tolist():
            for c in incidence[node]:
                if seen[c]:
                    continue
                seen[c] = True
                queue.append(c)
                j, rest = _graph_joint(builder, label, len(joints) + 1, bodies, edges, a, c, node, rest_length,
                                       rest_frames, radius, node_radius[node], material)  # fmt: skip
                joints.append(j)
                rests.append(rest)
                children.append(c)
    builder.add_articulation([root, *joints], label=label)
    return bodies, joints, np.array(rests).reshape(-1, 4), children


def _graph_joint(builder, label, k, bodies, edges, parent, child, node, rest_length, rest_frames, radius, node_radius,
                 material) -> tuple:  # fmt: skip
    """The rod joint between edges ``parent`` and ``child`` at their shared ``node``: (joint, rest rotation)."""
    p_back, c_back = node == edges[parent, 0], node == edges[child, 1]
    x_p = _anchor(rest_length[parent], node == edges[parent, 1], p_back)
    x_c = _anchor(rest_length[child], node == edges[child, 1], c_back)
    j, rest = add_rod_joint(builder, f"{label}_cable_{k}", bodies[parent], bodies[child], x_p, x_c,
                            rest_frames[parent], rest_frames[child])  # fmt: skip
    set_rod_gains(builder, material, float(rest_length[parent]), float(rest_length[child]), float(radius[parent]),
                  float(radius[child]), float(node_radius))  # fmt: skip
    return j, rest
