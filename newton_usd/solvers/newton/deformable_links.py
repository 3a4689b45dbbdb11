"""What ties a cloth or soft volume to the scene (:class:`~newton_usd.core.deformables.DeformableLinks`), given to
Newton's builder and collision pipeline as Newton simulates it under VBD.

- An attachment to the world (:class:`~newton_usd.core.deformables.Attachment` of body -1) pins its particles: they
  lose Newton's ``ParticleFlags.ACTIVE`` and their mass (the way Newton's cloth examples and ``add_cloth_grid``'s
  ``fix_*`` pin points), so VBD moves them no more and no contact pushes them;
- an attachment to a rigid body is one of Newton's particle-body attachments per point
  (``ModelBuilder.add_attachment_particle_body``: hard for an infinite stiffness), which ``SolverVBD`` solves with
  the body's own augmented VBD step, forces both ways.
"""

from __future__ import annotations

import newton
import warp as wp

_ACTIVE = int(newton.ParticleFlags.ACTIVE)


def bridge_links(nb, record, first: int) -> None:
    """The deformable ``record``'s attachments (its points from ``first`` in Newton's builder ``nb``) into ``nb``."""
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
