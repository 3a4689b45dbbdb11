"""The ``physx*`` attributes a stage authors that its import did not read: PhysX's own settings that no engine here
honors (solver iteration counts, contact and rest offsets, sleep thresholds, ...), said once per run in one warning
that names each with its number of prims, so that a stage written for PhysX does not lose them silently.

What an import reads is what its resolver recorded (``Resolver.used``: every value resolved from an authored
attribute, and the ones read by hand, as the tendons' and the actuators'); ``usdsim check`` lists the same attributes
(:func:`~newton_usd.inspect.unused_attributes`, with the ``newton:*`` and ``mjc:*`` ones). What an engine reads but
does not keep is said by that engine (the bodies' speed bounds: :mod:`~newton_usd.solvers.velocity_limits`).
"""

from __future__ import annotations

from pxr import Sdf, Usd

from ..diagnostics import logger

PHYSX_PREFIX = "physx"


def unread_physx_attributes(imported) -> dict[str, list[str]]:
    """Attribute name -> the paths of the prims that author it, for every ``physx*`` attribute of the stage of
    ``imported`` (a :class:`~newton_usd.usd.importer.UsdImport`) that its import did not read, on the prims it
    simulates: those of its scene (where the stage has several) and of its first environment (where it replicates
    one)."""
    used = imported.resolver.used
    skip = set()
    environments = getattr(imported, "environments", None)
    if environments is not None:
        skip = {Sdf.Path(p) for p in environments.paths[1:]}
    scenes = getattr(imported, "scenes", None)
    several = scenes is not None and len(getattr(scenes, "paths", ())) > 1
    out: dict[str, list[str]] = {}
    prims = iter(Usd.PrimRange(imported.stage.GetPseudoRoot(), Usd.TraverseInstanceProxies()))
    for prim in prims:
        if skip and prim.GetPath() in skip:
            prims.PruneChildren()
            continue
        names = [n for n in prim.GetAuthoredPropertyNames() if n.startswith(PHYSX_PREFIX)]
        if not names:
            continue
        path = str(prim.GetPath())
        if several and path != imported.scene_path and (scenes.scene_of(path) or scenes.default) != imported.scene_path:
            continue
        for name in names:
            if (path, name) in used or prim.GetRelationship(name):
                continue
            out.setdefault(name, []).append(path)
    return out


def say_unread_physx(imported, engine: str, source: str | None = None) -> str | None:
    """Say (one warning) the ``physx*`` attributes that ``imported`` authors and did not read, each with how many prims
    author it (see :func:`unread_physx_attributes`); returns the message, None where there are none."""
    unread = unread_physx_attributes(imported)
    if not unread:
        return None
    listed = ", ".join(
        f"{name} ({len(paths)} prim{'s' if len(paths) > 1 else ''})" for name, paths in sorted(unread.items())
    )
    message = (
        f"{len(unread)} PhysX setting{'s' if len(unread) > 1 else ''} that no engine here reads, not honored by the "
        f"{engine} solver: {listed} (usdsim check lists their prims)"
    )
    logger.warning("%s%s", f"{source}: " if source else "", message)
    return message
