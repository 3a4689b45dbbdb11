"""Sites: prims with MjcSiteAPI or NewtonSiteAPI, on their nearest rigid-body ancestor (or the world)."""

from __future__ import annotations

import numpy as np
from pxr import Gf, Sdf, Usd, UsdGeom

from ..core.quat import gf_to_xyzw, transform_inverse, transform_multiply
from ..core.types import GeoType
from . import properties as props

_SITE_SHAPES = {"Sphere": GeoType.SPHERE, "Capsule": GeoType.CAPSULE, "Cylinder": GeoType.CYLINDER, "Cube": GeoType.BOX}


def import_sites(builder, sites, result, frame, ctx):
    """Prims with MjcSiteAPI or NewtonSiteAPI: sites on their nearest rigid-body ancestor (or the
    world), at their authored pose; their gprim type and size are kept for display."""
    if not sites:
        return
    cache = UsdGeom.XformCache(Usd.TimeCode.Default())
    s = frame.meters_per_unit
    for prim in sites:
        world = Gf.Transform(cache.GetLocalToWorldTransform(prim))
        pos, rot = frame.world_pose_to_sim(
            np.array(world.GetTranslation(), dtype=np.float64), gf_to_xyzw(world.GetRotation().GetQuat())
        )
        body, ancestor = -1, prim
        while ancestor and ancestor.GetPath() != Sdf.Path.absoluteRootPath:
            if str(ancestor.GetPath()) in result.body_index:
                body = result.body_index[str(ancestor.GetPath())]
                break
            ancestor = ancestor.GetParent()
        if body >= 0:
            pos, rot = transform_multiply(transform_inverse(builder.body_q[body]), (pos, rot))
        scale = np.array(world.GetScale(), dtype=np.float64) * s
        geo = _SITE_SHAPES.get(str(prim.GetTypeName()), GeoType.SPHERE)
        size = (0.01, 0.0, 0.0)
        if geo == GeoType.SPHERE:
            size = (float(prim.GetAttribute("radius").Get() or 0.01) * scale.max(), 0.0, 0.0)
        elif geo in (GeoType.CAPSULE, GeoType.CYLINDER):
            size = (float(prim.GetAttribute("radius").Get() or 0.01) * scale.max(),
                    0.5 * float(prim.GetAttribute("height").Get() or 0.02) * scale.max(), 0.0)  # fmt: skip
        elif geo == GeoType.BOX:
            size = tuple(0.5 * float(prim.GetAttribute("size").Get() or 0.02) * scale)
        site = builder.add_site(body, (pos, rot), geo_type=geo, size=size, label=str(prim.GetPath()))
        group = result.resolver.resolve(prim, props.SHAPE_GROUP, ctx)
        if group.kind != "default":
            builder.set_mujoco("site", "site_group", site, group.value)
