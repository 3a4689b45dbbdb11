"""What ties the imported cloth and soft volumes to the rest of the scene, read once the rigid bodies and colliders
are imported: their attachments (:mod:`.attachments`), collision filters (:mod:`.deformable_filters`) and graphics
meshes."""

from __future__ import annotations

from pxr import Usd

from .attachments import import_attachments
from .deformable_filters import import_deformable_filters
from .deformable_graphics import import_graphics

ATTACHMENT_TYPE = "PhysicsAttachment"
FILTER_TYPE = "PhysicsElementCollisionFilter"


def find_typed(stage, type_names, exclude=()) -> dict:
    """Type name -> the stage's prims of that type (instance proxies included), in traversal order (not under
    ``exclude``: the environments replicated from the first)."""
    out = {name: [] for name in type_names}
    skip = {str(e) for e in exclude}
    it = iter(Usd.PrimRange(stage.GetPseudoRoot(), Usd.TraverseInstanceProxies()))
    for prim in it:
        if skip and str(prim.GetPath()) in skip:
            it.PruneChildren()
            continue
        name = prim.GetTypeName()
        if name in out:
            out[name].append(prim)
    return out


def import_deformable_links(builder, stage, descs, frame, result) -> None:
    """The imported deformables' attachments, collision filters and graphics meshes onto their records (and pinned
    points in ``builder``); nothing to do, and no traversal, without cloth or soft volumes."""
    if not result.deformables.simulated:
        return
    envs = result.environments
    typed = find_typed(stage, (ATTACHMENT_TYPE, FILTER_TYPE), envs.paths[1:] if envs is not None else ())
    import_attachments(builder, stage, typed[ATTACHMENT_TYPE], frame, result.file, result)
    import_deformable_filters(builder, stage, typed[FILTER_TYPE], descs, result)
    import_graphics(builder, stage, frame, result)
