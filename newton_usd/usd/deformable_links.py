"""What ties the imported cloth and soft volumes to the rest of the scene, read once the rigid bodies and colliders
are imported: their attachments (:mod:`.attachments`), collision filters (:mod:`.deformable_filters`) and graphics
meshes."""

from __future__ import annotations

from .attachments import import_attachments
from .deformable_filters import import_deformable_filters
from .deformable_graphics import import_graphics

ATTACHMENT_TYPE = "PhysicsAttachment"
FILTER_TYPE = "PhysicsElementCollisionFilter"


def import_deformable_links(builder, stage, descs, frame, result, typed) -> None:
    """The imported deformables' attachments, collision filters and graphics meshes onto their records (and pinned
    points in ``builder``); nothing to do without cloth or soft volumes. ``typed``: the import's scan of the stage
    (:func:`~newton_usd.usd.scan.scan_stage`), with the prims of :data:`ATTACHMENT_TYPE` and :data:`FILTER_TYPE`."""
    if not result.deformables.simulated:
        return
    import_attachments(builder, stage, typed[ATTACHMENT_TYPE], frame, result.file, result)
    import_deformable_filters(builder, stage, typed[FILTER_TYPE], descs, result)
    import_graphics(builder, stage, frame, result)
