"""What ties a cloth or soft volume to the scene (:class:`~newton_usd.core.deformables.DeformableLinks`), given to
Newton's builder and collision pipeline as Newton simulates it under VBD, with its rest data.

- A deformable with a rest shape of its own (:attr:`~newton_usd.core.deformables.Cloth.rest`) is added to Newton's
  builder at that shape (``add_cloth_mesh``/``add_soft_mesh`` make their rest geometry from the points they are
  given: triangles' rest shape and areas, bending edges' rest lengths and angles, tetrahedra's rest shape), then
  placed where it starts; a cloth whose bending edges rest flat (the proposal's ``restBendAnglesDefault``
  fallback, as Newton's import) has its edges' rest angles zeroed;
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
    """The points a deformable is added to Newton's builder at: its rest shape, else where it starts (``points``)."""
    return points if record.rest is None else record.rest


def bridge_links(nb, record, first: int, points) -> None:
    """The deformable ``record``, just added to Newton's builder ``nb`` (its points from ``first``, at
    :func:`rest_points`), placed at ``points`` (where it starts), its bending edges flat where it says so, and its
    attachments."""
    end = first + len(points)
    if record.rest is not None:
        nb.particle_q[first:end] = [wp.vec3(*p) for p in np.asarray(points, dtype=np.float64).tolist()]
    if getattr(record, "flat_bending", False):  # (its edges: the last ones added, all of its points)
        e = nb.edge_count
        while e > 0 and first <= int(nb.edge_indices[e - 1][2]) < end:
            e -= 1
        nb.edge_rest_angle[e:] = [0.0] * (nb.edge_count - e)
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
    drop = []
    for d in (*model.cloth, *model.volumes):
        for points, shapes in d.links.filtered:
            theirs = np.asarray(shape_map, dtype=np.int64)[np.asarray(shapes, dtype=np.int64)]
            drop.append(((points[:, None] + d.first) * (int(np.max(shape_map)) + 1) + theirs[None, :]).reshape(-1))
    if not drop:
        return
    pairs = pipeline.soft_rigid_contact_pairs.numpy().reshape(-1, 2).astype(np.int64)
    keep = ~np.isin(pairs[:, 0] * (int(np.max(shape_map)) + 1) + pairs[:, 1], np.concatenate(drop))
    kept = pairs[keep].astype(np.int32)
    pipeline.soft_rigid_contact_pairs = wp.array(kept, dtype=wp.vec2i, device=pipeline.soft_rigid_contact_pairs.device)
    pipeline._soft_contact_pair_count = len(kept)  # (what collide() launches over: Newton sets it with the list)
