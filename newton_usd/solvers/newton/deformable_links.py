"""What ties a cloth or soft volume to the scene (:class:`~newton_usd.core.deformables.DeformableLinks`), given to
Newton's builder and collision pipeline as Newton simulates it under VBD, with its rest data.

- A deformable with a rest shape of its own (:attr:`~newton_usd.core.deformables.Cloth.rest`) is added to Newton's
  builder at that shape (``add_cloth_mesh``/``add_soft_mesh`` make their rest geometry from the points they are
  given: triangles' rest shape and areas, bending edges' rest lengths and angles, tetrahedra's rest shape), then
  placed where it starts; a cloth whose rest shape has its own topology (panels: ``rest_triangles``) is added where
  it starts, then its triangles' rest shape and areas and its bending edges' rest lengths (and angles) are set from
  each triangle's own rest points, as Newton's import sets them; a cloth whose bending edges rest flat (the
  proposal's ``restBendAnglesDefault`` fallback, as Newton's import) has its edges' rest angles zeroed;
- An attachment to the world (:class:`~newton_usd.core.deformables.Attachment` of body -1) pins its particles: they
  lose Newton's ``ParticleFlags.ACTIVE`` and their mass (the way Newton's cloth examples and ``add_cloth_grid``'s
  ``fix_*`` pin points), so VBD moves them no more and no contact pushes them;
- an attachment to a rigid body is one of Newton's particle-body attachments per point
  (``ModelBuilder.add_attachment_particle_body``: hard for an infinite stiffness), which ``SolverVBD`` solves with
  the body's own augmented VBD step, forces both ways;
- points filtered from colliders (``filtered``) lose their candidate pairs with those shapes in Newton's collision
  pipeline (its particle-shape pair list, ``soft_rigid_contact_pairs``, made once with the pipeline): those
  contacts are never made.
"""

from __future__ import annotations

import newton
import numpy as np
import warp as wp

_ACTIVE = int(newton.ParticleFlags.ACTIVE)


def rest_points(record, points):
    """The points a deformable is added to Newton's builder at: its rest shape, else (or for panels) where it starts
    (``points``)."""
    return points if record.rest is None or getattr(record, "rest_triangles", None) is not None else record.rest


def _unit(v):
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-300)


def _panel_rest(nb, record, first: int, e0: int) -> None:
    """A cloth's triangles' rest shape (Newton's ``tri_poses``: the inverse of their two edges in the triangle's own
    frame) and areas, and its bending edges' rest lengths and angles, from each triangle's rest points."""
    tris, corners = record.triangles, record.rest_triangles
    x = record.rest[corners]  # (t, 3 corners, 3)
    qp, rp = x[:, 1] - x[:, 0], x[:, 2] - x[:, 0]
    e1 = _unit(qp)
    e2 = _unit(np.cross(_unit(np.cross(qp, rp)), e1))
    basis = np.stack([np.stack([np.sum(e1 * qp, -1), np.sum(e1 * rp, -1)], -1),
                      np.stack([np.sum(e2 * qp, -1), np.sum(e2 * rp, -1)], -1)], 1)  # fmt: skip
    t0 = nb.tri_count - len(tris)
    nb.tri_poses[t0:] = np.linalg.inv(basis).tolist()
    nb.tri_areas[t0:] = (np.linalg.det(basis) / 2.0).tolist()
    owner = {tuple(sorted(t)): k for k, t in enumerate(tris.tolist())}

    def corner(tri, v):  # (the rest point of simulation point v in triangle tri)
        return record.rest[corners[tri, tris[tri].tolist().index(v)]]

    lengths, angles = [], []
    for o0, o1, v0, v1 in (tuple(int(i) - first if i >= 0 else -1 for i in e) for e in nb.edge_indices[e0:]):
        a = owner.get(tuple(sorted((o0, v0, v1)))) if o0 >= 0 else None
        b = owner.get(tuple(sorted((o1, v0, v1)))) if o1 >= 0 else None
        last = b if b is not None else a
        lengths.append(float(np.linalg.norm(corner(last, v1) - corner(last, v0))))
        angle = 0.0
        if a is not None and b is not None:
            n1 = _unit(np.cross(corner(a, v0) - corner(a, o0), corner(a, v1) - corner(a, o0)))
            n2 = _unit(np.cross(corner(b, v1) - corner(b, o1), corner(b, v0) - corner(b, o1)))
            edge = _unit(corner(a, v1) - corner(a, v0))
            angle = float(np.arctan2(np.dot(np.cross(n1, n2), edge), np.clip(np.dot(n1, n2), -1.0, 1.0)))
        angles.append(angle)
    nb.edge_rest_length[e0:] = lengths
    nb.edge_rest_angle[e0:] = angles


def _face_pair_angles(nb, record, first: int, e0: int) -> None:
    """The rest angles authored between two of a cloth's faces onto the bending edges between them."""
    owner = {tuple(sorted(t)): k for k, t in enumerate(record.triangles.tolist())}
    for i, (o0, o1, v0, v1) in enumerate(nb.edge_indices[e0:]):
        if o0 < 0 or o1 < 0:
            continue
        v0, v1 = int(v0) - first, int(v1) - first
        a, b = (owner.get(tuple(sorted((int(o) - first, v0, v1)))) for o in (o0, o1))
        if a is None or b is None:
            continue
        faces = (int(record.faces[a]), int(record.faces[b]))
        angle = record.bend_angles.get((min(faces), max(faces)))
        if angle is not None:
            nb.edge_rest_angle[e0 + i] = angle


def bridge_links(nb, record, first: int, points) -> None:
    """The deformable ``record``, just added to Newton's builder ``nb`` (its points from ``first``, at
    :func:`rest_points`), placed at ``points`` (where it starts), its bending edges flat where it says so, and its
    attachments."""
    end = first + len(points)
    if rest_points(record, points) is not points:
        nb.particle_q[first:end] = [wp.vec3(*p) for p in np.asarray(points, dtype=np.float64).tolist()]
    e = nb.edge_count  # (a cloth's edges: the last ones added, all of its points)
    while hasattr(record, "triangles") and e > 0 and first <= int(nb.edge_indices[e - 1][2]) < end:
        e -= 1
    if getattr(record, "rest_triangles", None) is not None:
        _panel_rest(nb, record, first, e)
    if getattr(record, "flat_bending", False):
        nb.edge_rest_angle[e:] = [0.0] * (nb.edge_count - e)
    if getattr(record, "bend_angles", None):
        _face_pair_angles(nb, record, first, e)
    for a in record.links.attachments:
        particles = (a.particles + first).tolist()
        if a.body < 0:
            for i in particles:
                nb.particle_flags[i] = int(nb.particle_flags[i]) & ~_ACTIVE
                nb.particle_mass[i] = 0.0
            continue
        for i, anchor in zip(particles, a.anchors.tolist(), strict=True):
            nb.add_attachment_particle_body(i, int(a.body), body_point=wp.vec3(*anchor), stiffness=float(a.stiffness),
                                            damping=float(a.damping), enabled=bool(a.enabled))  # fmt: skip


def filter_soft_contacts(pipeline, model, shape_map) -> None:
    """Drop from ``pipeline``'s particle-shape candidate pairs those of the deformables' filtered points and shapes
    (``shape_map``: our shape index -> Newton's)."""
    filtered = [
        (d.first, points, shapes) for d in (*model.cloth, *model.volumes) for points, shapes in d.links.filtered
    ]
    if not filtered:
        return
    pairs = pipeline.soft_rigid_contact_pairs.numpy().reshape(-1, 2).astype(np.int64)
    width = int(max(np.max(shape_map), pairs[:, 1].max(initial=-1))) + 1  # (a pair's key: particle * width + shape)
    drop = []
    for first, points, shapes in filtered:
        theirs = np.asarray(shape_map, dtype=np.int64)[np.asarray(shapes, dtype=np.int64)]
        drop.append(((points[:, None] + first) * width + theirs[None, :]).reshape(-1))
    keep = ~np.isin(pairs[:, 0] * width + pairs[:, 1], np.concatenate(drop))
    kept = pairs[keep].astype(np.int32)
    pipeline.soft_rigid_contact_pairs = wp.array(kept, dtype=wp.vec2i, device=pipeline.soft_rigid_contact_pairs.device)
    pipeline._soft_contact_pair_count = len(kept)  # (what collide() launches over: Newton sets it with the list)
