"""Sites as MuJoCo sites on their bodies."""

from __future__ import annotations

import mujoco
import numpy as np

from ....core.quat import (
    xyzw_to_wxyz,
)
from ....core.types import GeoType
from .values import SITE_VALUES, ElementNames, set_from

_SITE_GEOM = {
    GeoType.SPHERE: mujoco.mjtGeom.mjGEOM_SPHERE,
    GeoType.CAPSULE: mujoco.mjtGeom.mjGEOM_CAPSULE,
    GeoType.CYLINDER: mujoco.mjtGeom.mjGEOM_CYLINDER,
    GeoType.BOX: mujoco.mjtGeom.mjGEOM_BOX,
}


def add_sites(spec, model, body_handles):
    """MuJoCo sites for the model's sites; returns (site label -> MuJoCo name, the site handles)."""
    names, handles, unique = {}, [], ElementNames(model)
    if not getattr(model, "site_count", 0):
        return names, handles
    bodies = model.site_body.numpy()
    xforms = model.site_transform.numpy().astype(np.float64)
    types, sizes = model.site_type.numpy(), model.site_size.numpy().astype(np.float64)
    for i, label in enumerate(model.site_label):
        holder = spec.worldbody if bodies[i] < 0 else body_handles[bodies[i]]
        site = holder.add_site(
            name=unique(label),
            pos=xforms[i][:3],
            quat=xyzw_to_wxyz(xforms[i][3:]),
            type=_SITE_GEOM.get(GeoType(int(types[i])), mujoco.mjtGeom.mjGEOM_SPHERE),
            size=np.maximum(sizes[i], 1e-6),
        )
        set_from(site, model, i, SITE_VALUES)
        names[label] = site.name
        handles.append(site)
    return names, handles
