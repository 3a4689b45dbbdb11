"""Graphics meshes bound to a deformable's simulation mesh: each graphics point embedded in one simulation element
(a cloth's triangle, a volume's tetrahedron) by barycentric weights at the bind pose, and placed each frame at that
weighted sum of the element's particles (the way Newton's ``add_deformable_visual_mesh`` binds and its
``DeformableVisuals`` skin them):

- in a triangle: the closest point of the closest triangle (the point's distance off the surface is dropped: the
  graphics point lies on the simulation surface);
- in a tetrahedron: the tetrahedron that contains it (the one it lies deepest in); a point outside them all goes
  to the tetrahedron of nearest centroid, its weights clamped to that tetrahedron (none negative, summing to one).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

WORK = 1_000_000
"""Graphics points x elements weighed at once (a chunk of the points against every element)."""


@dataclass
class GraphicsMesh:
    """A graphics mesh that follows a deformable (SI).

    Attributes:
        label: the graphics prim's path (its points are written).
        parents: (n, k) int64, each of its points' element's points, as indices into the deformable's own points
            (k = 3: a cloth's triangle, 4: a volume's tetrahedron).
        weights: (n, k) float64, the barycentric weights of those points (none negative, summing to one).
    """

    label: str
    parents: np.ndarray
    weights: np.ndarray

    def skinned(self, x: np.ndarray, first: int = 0) -> np.ndarray:
        """Its points from the rows ``x`` of the deformable's points (positions or velocities; its first at row
        ``first``)."""
        rows = self.parents if first == 0 else self.parents + first
        return np.einsum("nk,nkj->nj", self.weights, np.asarray(x)[rows].astype(np.float64))  # (its rows only)


def embed_in_triangles(points, triangles, vertices) -> tuple[np.ndarray, np.ndarray]:
    """``(parents, weights)`` of each of ``vertices`` (m, 3) in its closest triangle of ``triangles`` ((t, 3) indices
    into ``points``): the closest point's barycentric weights."""
    p = np.asarray(points, dtype=np.float64)
    tris = np.asarray(triangles, dtype=np.int64)
    a, b, c = (p[tris[:, k]][None] for k in range(3))
    parents, weights = [], []
    chunk = max(1, WORK // max(1, len(tris)))
    for start in range(0, len(vertices), chunk):
        x = np.asarray(vertices[start : start + chunk], dtype=np.float64)[:, None, :]
        w = _closest_weights(x, a, b, c)  # (m, t, 3)
        closest = w[..., 0:1] * a + w[..., 1:2] * b + w[..., 2:3] * c
        best = np.argmin(np.sum((closest - x) ** 2, axis=-1), axis=1)
        parents.append(tris[best])
        weights.append(w[np.arange(len(best)), best])
    return np.concatenate(parents), np.concatenate(weights)


def _closest_weights(x, a, b, c) -> np.ndarray:
    """Barycentric weights of the closest point to ``x`` on each triangle ``(a, b, c)`` (broadcast), by the
    triangle's Voronoi regions (vertex, edge, face)."""
    ab, ac, ax = b - a, c - a, x - a
    d1, d2 = np.sum(ab * ax, -1), np.sum(ac * ax, -1)
    bx, cx = x - b, x - c
    d3, d4 = np.sum(ab * bx, -1), np.sum(ac * bx, -1)
    d5, d6 = np.sum(ab * cx, -1), np.sum(ac * cx, -1)
    va, vb, vc = d3 * d6 - d5 * d4, d5 * d2 - d1 * d6, d1 * d4 - d3 * d2
    with np.errstate(divide="ignore", invalid="ignore"):
        denom = 1.0 / (va + vb + vc)
        v, w = vb * denom, vc * denom  # (inside the face)
        out = np.stack([1.0 - v - w, v, w], axis=-1)
        t_ab = d1 / (d1 - d3)
        t_ac = d2 / (d2 - d6)
        t_bc = (d4 - d3) / ((d4 - d3) + (d5 - d6))
    regions = [  # (outside the face: a vertex's region, an edge's)
        ((d1 <= 0) & (d2 <= 0), np.stack([np.ones_like(d1), 0 * d1, 0 * d1], -1)),
        ((d3 >= 0) & (d4 <= d3), np.stack([0 * d1, np.ones_like(d1), 0 * d1], -1)),
        ((d6 >= 0) & (d5 <= d6), np.stack([0 * d1, 0 * d1, np.ones_like(d1)], -1)),
        ((vc <= 0) & (d1 >= 0) & (d3 <= 0), np.stack([1 - t_ab, t_ab, 0 * d1], -1)),
        ((vb <= 0) & (d2 >= 0) & (d6 <= 0), np.stack([1 - t_ac, 0 * d1, t_ac], -1)),
        ((va <= 0) & (d4 - d3 >= 0) & (d5 - d6 >= 0), np.stack([0 * d1, 1 - t_bc, t_bc], -1)),
    ]
    done = np.zeros(d1.shape, dtype=bool)
    for mask, values in regions:
        take = mask & ~done
        out[take] = values[take]
        done |= take
    return out


def embed_in_tetrahedra(points, tetrahedra, vertices) -> tuple[np.ndarray, np.ndarray, int]:
    """``(parents, weights, outside)`` of each of ``vertices`` in the tetrahedron of ``tetrahedra`` ((t, 4) indices
    into ``points``) that holds it deepest, else in that of nearest centroid, weights clamped (``outside``: how
    many were)."""
    p = np.asarray(points, dtype=np.float64)
    tets = np.asarray(tetrahedra, dtype=np.int64)
    origin = p[tets[:, 0]]
    inverse = np.linalg.inv(np.stack([p[tets[:, k]] - origin for k in (1, 2, 3)], axis=2))  # (t, 3, 3)
    centroid = p[tets].mean(axis=1)
    parents, weights, outside = [], [], 0
    chunk = max(1, WORK // max(1, len(tets)))
    for start in range(0, len(vertices), chunk):
        x = np.asarray(vertices[start : start + chunk], dtype=np.float64)
        bary = np.einsum("tij,mtj->mti", inverse, x[:, None, :] - origin[None])  # (m, t, 3)
        w = np.concatenate([1.0 - bary.sum(-1, keepdims=True), bary], axis=-1)  # (m, t, 4)
        depth = w.min(axis=-1)
        best = np.argmax(depth, axis=1)
        rows = np.arange(len(x))
        out = depth[rows, best] < -1.0e-6
        if out.any():
            best[out] = np.argmin(np.sum((x[out][:, None, :] - centroid[None]) ** 2, axis=-1), axis=1)
            outside += int(out.sum())
        chosen = np.maximum(w[rows, best], 0.0)
        parents.append(tets[best])
        weights.append(chosen / chosen.sum(axis=1, keepdims=True))
    return np.concatenate(parents), np.concatenate(weights), outside
