"""Reading a compiled ``mujoco.MjModel``: an element's label, the ``<exclude>`` body pairs, a mesh in its asset
frame. Shared by the importer, the import options and the converter (which import each other's results, not
each other)."""

from __future__ import annotations

import mujoco
import numpy as np

from ..core.quat import quat_to_matrix, transform_inverse, transform_multiply, wxyz_to_xyzw


def excluded_body_pairs(m) -> list[tuple[int, int]]:
    """The MJCF ``<exclude>`` body pairs of a compiled model (MuJoCo body ids)."""
    return [(int(sig) >> 16, int(sig) & 0xFFFF) for sig in m.exclude_signature]


def named(m, obj, i, fallback):
    """Element ``i``'s MJCF name, else ``<fallback>_<i>`` (the label the importer gives an unnamed element)."""
    n = mujoco.mj_id2name(m, obj, i)
    return n if n else f"{fallback}_{i}"


def mesh_in_asset_frame(m, g):
    """Mesh geom ``g``'s vertices, faces and geom pose with the mesh in its asset frame (as in the file,
    scaled): MuJoCo's compiler moves a mesh onto its centroid and principal axes (``mesh_pos``,
    ``mesh_quat``) and places the geom to match; handing it the compiled vertices again would move
    them twice and change the convex hull's polygons, hence the contacts."""
    mid = int(m.geom_dataid[g])
    va, vn = m.mesh_vertadr[mid], m.mesh_vertnum[mid]
    fa, fn = m.mesh_faceadr[mid], m.mesh_facenum[mid]
    offset = (m.mesh_pos[mid].astype(np.float64), wxyz_to_xyzw(m.mesh_quat[mid]))
    vertices = m.mesh_vert[va : va + vn].astype(np.float64) @ quat_to_matrix(offset[1]).T + offset[0]
    geom = (m.geom_pos[g].copy(), wxyz_to_xyzw(m.geom_quat[g]))
    return vertices, m.mesh_face[fa : fa + fn].copy(), transform_multiply(geom, transform_inverse(offset))
