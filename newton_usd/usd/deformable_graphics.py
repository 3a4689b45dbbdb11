"""Graphics meshes of a deformable body: the ``Mesh`` prims under its ``PhysicsDeformableBodyAPI`` prim that apply
no simulation API and no ``PhysicsCollisionAPI`` (the proposal's graphics geometry; not under a nested deformable
body, a rigid body or an articulation root), as Newton 1.8 finds and binds them (its
``utils/import_usd_deformable_visual.py``).

Each is bound at its bind pose: the points of its ``PhysicsDeformablePoseAPI:<name>`` instance whose
``physics:deformablePose:<name>:purposes`` holds ``bindPose`` (``physics:deformablePose:<name>:points``), else its
``points``; the simulation mesh at its own bind pose, read the same way. Each graphics point is embedded in a cloth's
triangle or a volume's tetrahedron (:mod:`~newton_usd.core.skinning`) and written back each frame where it follows
(:mod:`~newton_usd.sync.graphics_sync`), in the graphics prim's own space and the stage's units. Two bind poses on
one prim, or a bind pose of another point count, are a one-line :class:`~newton_usd.errors.UsdInputError`.
"""

from __future__ import annotations

import numpy as np
from pxr import Usd, UsdGeom

from ..core.quat import quat_rotate
from ..core.skinning import GraphicsMesh, embed_in_tetrahedra, embed_in_triangles
from ..errors import UsdInputError
from .deformables import BODY_API, SIM_APIS
from .granular import applied

POSE_API = "PhysicsDeformablePoseAPI"
STOP_APIS = {BODY_API, "PhysicsRigidBodyAPI", "PhysicsArticulationRootAPI"}
"""A graphics mesh's search stops at these (a nested body's geometry is its own)."""


def import_graphics(builder, stage, frame, result) -> None:
    """Bind the graphics meshes of every imported cloth and soft volume (see the module) onto its record
    (``links.graphics``)."""
    file, diag = result.file, result.diagnostics
    for record in (*builder.cloth, *builder.volumes):
        sim = stage.GetPrimAtPath(record.label)
        body = sim if BODY_API in applied(sim) else sim.GetParent()
        if not body or BODY_API not in applied(body):
            continue  # (a bare TetMesh: no body, no graphics)
        meshes = graphics_prims(body, sim)
        if not meshes:
            continue
        rest = _world(sim, bind_points(sim, file), frame)
        for prim in meshes:
            path = str(prim.GetPath())
            points = _world(prim, bind_points(prim, file), frame)
            if hasattr(record, "tetrahedra"):
                parents, weights, outside = embed_in_tetrahedra(rest, record.tetrahedra, points)
                if outside:
                    diag.add(f"{outside} of its {len(points)} points lie outside {record.label}'s tetrahedra: each "
                             "follows the one of nearest centre", path)  # fmt: skip
            else:
                parents, weights = embed_in_triangles(rest, record.triangles, points)
            record.links.graphics.append(GraphicsMesh(path, parents, weights))


def graphics_prims(body, sim) -> list:
    """The graphics ``Mesh`` prims of the deformable body prim ``body`` (its simulation prim ``sim`` aside)."""
    out = []
    it = iter(Usd.PrimRange(body, Usd.TraverseInstanceProxies()))
    for prim in it:
        if prim == body:
            continue
        names = applied(prim)
        if names & STOP_APIS:
            it.PruneChildren()
            continue
        if prim == sim or not prim.IsA(UsdGeom.Mesh) or "PhysicsCollisionAPI" in names or names & set(SIM_APIS):
            continue
        out.append(prim)
    return out


def bind_points(prim, file) -> np.ndarray:
    """The prim's bind-pose points (its own space, stage units): its ``PhysicsDeformablePoseAPI`` instance of
    purpose ``bindPose``, else its ``points``."""
    path = str(prim.GetPath())
    poses = []
    for name in applied(prim):
        if name.startswith(POSE_API + ":"):
            prefix = f"physics:deformablePose:{name.split(':', 1)[1]}"
            purposes = prim.GetAttribute(prefix + ":purposes").Get() if prim.HasAttribute(prefix + ":purposes") else ()
            if "bindPose" in (purposes or ()):
                poses.append(prefix + ":points")
    if len(poses) > 1:
        raise UsdInputError(f"{len(poses)} deformable poses have the bindPose purpose ({', '.join(sorted(poses))}): "
                            "one does", file=file, prim=path, attribute=sorted(poses)[0])  # fmt: skip
    points = UsdGeom.PointBased(prim).GetPointsAttr().Get()
    n = 0 if points is None else len(points)
    if poses:
        pose = prim.GetAttribute(poses[0]).Get()
        if pose is None or len(pose) != n:
            raise UsdInputError(f"{0 if pose is None else len(pose)} bind-pose points for the prim's {n} points",
                                file=file, prim=path, attribute=poses[0])  # fmt: skip
        points = pose
    if not n:
        raise UsdInputError("not authored: a graphics mesh has points", file=file, prim=path, attribute="points")
    out = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    if not np.all(np.isfinite(out)):
        raise UsdInputError("holds a value that is not finite", file=file, prim=path, attribute=poses[0] if poses
                            else "points")  # fmt: skip
    return out


def _world(prim, points, frame) -> np.ndarray:
    """``points`` of ``prim`` (its space, stage units) in world, SI and Z up."""
    m = np.array(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default()), dtype=np.float64)
    return frame.meters_per_unit * quat_rotate(frame.rotation, points @ m[:3, :3] + m[3, :3])
