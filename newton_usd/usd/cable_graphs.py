"""Cable junctions from the stage: curves welded into shared rod graphs by curve-to-curve ``PhysicsAttachment`` prims,
as Newton 1.8 reads them (its ``_deformable_prepare_cable_topology``), built by
:func:`~newton_usd.core.cable_graphs.add_cable_graph`.

A junction is an enabled ``PhysicsAttachment`` whose ``physics:src0`` and ``physics:src1`` are two cables of one
linear, open curve each, ``type0 = type1 = "point"``, ``indices0``/``indices1`` pairs of their points (as many of
each, in range), hard (``physics:stiffness`` unauthored or inf), each pair within a tenth of the thinner point's
radius of each other. Junctions union their cables into components; each component of several curves becomes one
graph (its curves in path order, each curve's segments in order; welded points one node, where the first-welded
point is), unless welding collapses a segment or closes a cycle (said: its curves import one by one); a component
whose segments, so numbered, run node to node in order is one chain (:func:`~newton_usd.core.cables.add_cable_curve`:
parallel-transported frames, as Newton assembles an ordered chain), any other a graph. A component takes
its first curve's material, friction and (for all) collisions where any curve collides; each segment keeps its curve's
radius and mass, each node the mean of its points' radii. Other attachments between cables are said, not simulated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core.cable_graphs import add_cable_graph
from ..core.cables import Cable, add_cable_curve, frames_from_normals, quat_between, transport_frames
from ..core.quat import quat_multiply
from .stage import authored_value


@dataclass
class CurvesRecord:
    """A cable prim's curves as read (SI, world): ``counts``/``starts`` of its curves, ``pos`` (n, 3) its points,
    ``rest`` its rest points (None: ``pos``), per segment ``seg_radius`` and ``seg_mass``, per point
    ``point_radius``; its :class:`~newton_usd.core.cables.CableMaterial` (or None), friction, whether it collides;
    its authored ``normals`` and ``physics:restNormals`` (world directions, per point; None: not read); ``closed``:
    periodic curves (each with a segment from its last point back to its first); ``seg_length`` its segments' rest
    lengths (m)."""

    path: str
    counts: np.ndarray
    starts: np.ndarray
    pos: np.ndarray
    rest: np.ndarray | None
    seg_radius: np.ndarray
    point_radius: np.ndarray
    seg_mass: np.ndarray
    material: object
    friction: float | None
    collide: bool
    normals: np.ndarray | None = None
    rest_normals: np.ndarray | None = None
    closed: bool = False
    seg_length: np.ndarray | None = None


class _UnionFind:
    def __init__(self):
        self.parent = {}

    def find(self, key):
        self.parent.setdefault(key, key)
        while self.parent[key] != key:
            self.parent[key] = self.parent[self.parent[key]]
            key = self.parent[key]
        return key

    def union(self, a, b) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


def junction(prim, src0: str, src1: str, records: dict) -> tuple | str:
    """The welded point pairs ``(indices0, indices1)`` of the curve-to-curve attachment ``prim`` between cables
    ``src0`` and ``src1`` (see the module), or why it welds none ("" where it is disabled)."""
    enabled = authored_value(prim, "physics:attachmentEnabled")
    if enabled is not None and not bool(enabled):
        return ""
    a, b = records.get(src0), records.get(src1)
    if a is None or b is None or len(a.counts) != 1 or len(b.counts) != 1 or a.closed or b.closed:
        return "a curve-to-curve junction welds two simulated cables of one open curve each"
    types = str(authored_value(prim, "physics:type0") or ""), str(authored_value(prim, "physics:type1") or "")
    if types != ("point", "point"):
        return f"type0 {types[0] or '(none)'} to type1 {types[1] or '(none)'} (a junction is point to point)"
    i0 = [int(i) for i in (authored_value(prim, "physics:indices0") or [])]
    i1 = [int(i) for i in (authored_value(prim, "physics:indices1") or [])]
    if not i0 or len(i0) != len(i1) or not all(0 <= i < len(a.pos) for i in i0) or not all(
            0 <= i < len(b.pos) for i in i1):  # fmt: skip
        return "physics:indices0 and physics:indices1 are not pairs of the two curves' points"
    stiffness = authored_value(prim, "physics:stiffness")
    if stiffness is not None and float(stiffness) != math.inf:
        return "a compliant junction (finite physics:stiffness) is not welded"
    for p, q in zip(i0, i1, strict=True):
        if np.linalg.norm(a.pos[p] - b.pos[q]) > 0.1 * min(a.point_radius[p], b.point_radius[q]):
            return f"points {p} and {q} are not coincident (within a tenth of the thinner radius): not welded"
    return i0, i1


def import_graphs(builder, records: dict, welds: list, diag) -> dict:
    """Weld the cables of ``records`` (path -> :class:`CurvesRecord`) joined by ``welds`` ([(attachment path, src0,
    src1, indices0, indices1)]) into rod graphs in ``builder``; returns path -> its
    :class:`~newton_usd.core.cables.Cable` for each cable welded (the others: for the per-curve import)."""
    if not welds:
        return {}
    curves = _UnionFind()
    for path in records:
        curves.find(path)
    for _, s0, s1, _, _ in welds:
        curves.union(s0, s1)
    components = {}
    for path in records:
        components.setdefault(curves.find(path), []).append(path)
    out = {}
    for cid, paths in components.items():
        mine = [w for w in welds if curves.find(w[1]) == cid]
        if len(paths) > 1:
            out.update(_graph(builder, cid, sorted(paths), mine, records, diag))
    return out


def _graph(builder, cid, paths, welds, records, diag) -> dict:
    """One component's rod graph (see the module); {} where it cannot be one (said)."""
    points = _UnionFind()
    for _, s0, s1, i0, i1 in welds:
        for p, q in zip(i0, i1, strict=True):
            points.union((s0, p), (s1, q))
    node_of, nodes, edges, owner = {}, [], [], []

    def node(key):
        root = points.find(key)
        if root not in node_of:
            node_of[root] = len(nodes)
            nodes.append(records[root[0]].pos[root[1]])
        return node_of[root]

    for path in paths:
        for s in range(len(records[path].pos) - 1):
            u, v = node((path, s)), node((path, s + 1))
            if u == v:
                _say(diag, f"welding collapses a segment of {path}: its curves import one by one", welds)
                return {}
            edges.append((u, v))
            owner.append((path, s))
    if len(edges) >= len(nodes):
        _say(diag, "the welded curves close a cycle, which a rod graph cannot: its curves import one by one", welds)
        return {}
    nodes = np.asarray(nodes, dtype=np.float64)
    node_radius = np.zeros(len(nodes))
    hits = np.zeros(len(nodes))
    rest_vectors = []
    for path in paths:
        rec = records[path]
        for i, r in enumerate(rec.point_radius):
            node_radius[node((path, i))] += r
            hits[node((path, i))] += 1
        merged = nodes[[node((path, i)) for i in range(len(rec.pos))]]
        rest_vectors.append(np.diff(merged if rec.rest is None else rec.rest, axis=0))
    first = records[paths[0]]
    radius = np.concatenate([records[p].seg_radius for p in paths])
    mass = np.concatenate([records[p].seg_mass for p in paths])
    rest_vectors = np.concatenate(rest_vectors)
    chain = edges == [(i, i + 1) for i in range(len(nodes) - 1)]
    kw = {"friction": first.friction, "collide": any(records[p].collide for p in paths),
          **_graph_frames(nodes, edges, rest_vectors, paths, records, node, chain, diag)}  # fmt: skip
    if chain:  # (an ordered chain: Newton assembles it as one curve)
        rest = np.concatenate([nodes[:1], nodes[0] + np.cumsum(rest_vectors, axis=0)])
        bodies, joints, rests, _ = add_cable_curve(builder, cid, nodes, rest, radius, node_radius / hits, mass,
                                                   first.material, **kw)  # fmt: skip
        children = list(range(1, len(edges)))
    else:
        bodies, joints, rests, children = add_cable_graph(builder, cid, nodes, edges, rest_vectors, radius,
                                                          node_radius / hits, mass, first.material, **kw)  # fmt: skip
    out, e0 = {}, 0
    for path in paths:
        rec = records[path]
        n = len(rec.pos)
        mine = list(range(e0, e0 + n - 1))
        e0 += n - 1
        cable = Cable(path, radius=rec.point_radius, bodies=[bodies[e] for e in mine])
        picked = [k for k, c in enumerate(children) if c in mine]  # (a joint is its child segment's curve's)
        cable.joints = [joints[k] for k in picked]
        cable.rest_rotations = rests[picked].reshape(-1, 4)
        length = cable.segment_length = np.linalg.norm(rest_vectors[mine], axis=1)
        pb, po = np.zeros((n, 2), dtype=np.int64), np.zeros((n, 2))
        for i in range(n):  # (a point: the end of its curve's segment before it, the start of the one after)
            ends = ([(i - 1, 0.5 * length[i - 1])] if i > 0 else []) + ([(i, -0.5 * length[i])] if i < n - 1 else [])
            ends = ends * 2 if len(ends) == 1 else ends
            pb[i] = [cable.bodies[e] for e, _ in ends]
            po[i] = [z for _, z in ends]
        cable.point_bodies, cable.point_offsets = pb, po
        out[path] = cable
    sigs = {(records[p].material == first.material, records[p].friction == first.friction) for p in paths}
    if sigs != {(True, True)}:
        for p in paths[1:]:
            diag.add(f"welded curves of differing materials or friction take {paths[0]}'s (as Newton)", p)
    return out


def curve_frames(points, rest, normals, rest_normals, path, diag) -> tuple:
    """One curve's (frames, rest frames) from its authored directors (None: not authored, the assembly's own), as
    Newton's importer: the frames from ``normals``, a bad one turned from +Z alone; the rest frames (where a rest
    shape or rest normals are authored) from ``physics:restNormals`` along the rest tangents, else from ``normals``
    there (a bad one: said, the frames turned onto the rest tangents)."""
    frames = None if normals is None else frames_from_normals(points, normals)
    if rest is None and rest_normals is None:
        return frames, None
    at = points if rest is None else rest
    for name, values in (("physics:restNormals", rest_normals), ("normals", normals)):
        if values is not None:
            rest_frames = frames_from_normals(at, values, strict=True)
            if rest_frames is not None:
                return frames, rest_frames
            diag.add(f"{name} along a rest segment (or zero) gives no rest frame: not read", path)
    return frames, None


def _graph_frames(nodes, edges, rest_vectors, paths, records, node, chain, diag) -> dict:
    """A welded component's ``frames`` and ``rest_frames`` per edge where a curve authors directors (else none: the
    assembly's own), as Newton's importer: a curve's frames from its normals along its welded points, the others the
    assembly's (a chain's transported, a graph's turned from +Z); rest frames likewise, the others turned onto their
    rest tangents."""
    per = []
    for path in paths:
        rec = records[path]
        merged = nodes[[node((path, i)) for i in range(len(rec.pos))]]
        per.append(curve_frames(merged, rec.rest, rec.normals, rec.rest_normals, path, diag))
    if all(f is None and r is None for f, r in per):
        return {}
    e = np.asarray(edges)
    t = nodes[e[:, 1]] - nodes[e[:, 0]]
    t /= np.linalg.norm(t, axis=1)[:, None]
    own = transport_frames(t) if chain else [quat_between(np.array([0.0, 0.0, 1.0]), ti) for ti in t]
    tr = rest_vectors / np.linalg.norm(rest_vectors, axis=1)[:, None]
    frames, rest_frames, e0 = [], [], 0
    for path, (f, r) in zip(paths, per, strict=True):
        mine = range(e0, e0 + len(records[path].pos) - 1)
        e0 = mine.stop
        frames += list(f) if f is not None else [own[i] for i in mine]
        rest_frames += list(r) if r is not None else [quat_multiply(quat_between(t[i], tr[i]), frames[i]) for i in mine]
    return {"frames": frames, "rest_frames": rest_frames}


def _say(diag, why, welds) -> None:
    for w in welds:
        diag.add(why, w[0])
