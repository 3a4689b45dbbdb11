"""The one traversal of a stage an import makes: the authored order of joints and bodies, the typed prims
(MuJoCo actuators, tendons, contact pairs, keyframes, PointInstancers), the sites, the visual geoms and the
authored displayNames (kept as MuJoCo element names).
"""

from __future__ import annotations

from pxr import Sdf, Tf, Usd

from .gprims import VISUAL_API
from .honored import TRACKED

MJC_TYPED = ("MjcActuator", "MjcTendon", "NewtonUsdContactPair")  # (MjcKeyframe: see usd/keyframes.py)
PHYSX_TENDON = "PhysxTendon"  # (the prefix of PhysxSchema's tendon APIs: see usd/physx_tendons.py)

_JOINT_TYPE = Tf.Type.FindByName("UsdPhysicsJoint")


def scan_stage(stage, paths, type_names, exclude=(), resolver=None):
    """One traversal: the authored order of ``paths`` (``Sdf.Path``s of joints and rigid bodies; prim path
    string -> index), the prims of each of ``type_names`` (type name -> prims, in order), the site prims
    (under "sites"), the MuJoCo visual geoms (under "visuals"), the joints and bodies with a PhysX tendon API
    applied (under "physx_tendons": PhysxSchema is not registered here, so ``GetAppliedSchemas`` leaves its APIs out;
    the prim's type info keeps them) and the authored displayNames of the prims an
    element can be labelled with (under "display_names", a dict: prim path -> name), and the prims of the schemas
    some engine does not honor (under "schemas", a dict: schema name -> prim paths; see
    :mod:`~newton_usd.usd.honored`). The subtrees of
    ``exclude`` are skipped. The ``resolver``'s views of the joints, rigid bodies and colliders are prepared on
    the way."""
    order, typed = {}, {t: [] for t in type_names}
    typed["sites"], typed["visuals"], typed["physx_tendons"], display_names = [], [], [], {}
    typed["display_names"] = display_names
    schemas = typed["schemas"] = {}  # (schema -> prim paths, of the schemas in honored.TRACKED)
    wanted = set(paths)
    skip = {Sdf.Path(p) for p in exclude}
    site_apis = ("MjcSiteAPI", "NewtonSiteAPI")
    of_type = {}  # type name -> (its list in ``typed`` or None, whether it is a UsdPhysics joint type)
    prims = iter(Usd.PrimRange(stage.GetPseudoRoot(), Usd.TraverseInstanceProxies()))
    for prim in prims:
        path = None
        if skip:
            path = prim.GetPath()
            if path in skip:
                prims.PruneChildren()
                continue
        type_name = prim.GetTypeName()
        kind = of_type.get(type_name)
        if kind is None:
            joint = Usd.SchemaRegistry.GetTypeFromName(type_name).IsA(_JOINT_TYPE)
            kind = of_type[type_name] = (typed.get(type_name), joint)
        if kind[0] is not None:
            kind[0].append(prim)
        applied = prim.GetAppliedSchemas()
        if type_name in TRACKED:
            schemas.setdefault(type_name, []).append(str(prim.GetPath()))
        # (the prims elements are labelled with: an applied schema's, a joint's or one of ``type_names``)
        if (applied or kind[0] is not None or kind[1]) and prim.HasAuthoredDisplayName():
            display_names[str(prim.GetPath())] = prim.GetDisplayName()
        # Only joints and rigid bodies are among ``paths`` (UsdPhysics' parser: IsA joint, RigidBodyAPI).
        if kind[1] or (applied and ("PhysicsRigidBodyAPI" in applied or "PhysicsCollisionAPI" in applied)):
            if path is None:
                path = prim.GetPath()
            if path in wanted:
                order[str(path)] = len(order)
                if any(s.startswith(PHYSX_TENDON) for s in prim.GetPrimTypeInfo().GetAppliedAPISchemas()):
                    typed["physx_tendons"].append(prim)
            if resolver is not None:
                resolver.add_view(prim, path, type_name, applied)
        if applied:
            for name in TRACKED.intersection(applied):
                schemas.setdefault(name, []).append(str(prim.GetPath()))
            if site_apis[0] in applied or site_apis[1] in applied:
                typed["sites"].append(prim)
            elif VISUAL_API in applied and "PhysicsCollisionAPI" not in applied:
                typed["visuals"].append(prim)
    return order, typed


def record_display_names(builder, display_names, labels_before) -> None:
    """The source's name of each element this import labelled with a prim that has an authored
    displayName (converters keep a name there where the prim name had to differ: ``tn__leftwaist_1_sY0``
    holds ``left\\waist``): MuJoCo element names are the source's names (``builder.element_names``).
    ``display_names``: prim path -> its authored displayName, of the prims that author one (:func:`scan_stage`)."""
    if not display_names:
        return
    for label in builder.labels():
        name = display_names.get(label)
        if name is not None and label not in labels_before:
            builder.element_names[label] = name
