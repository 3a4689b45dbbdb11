"""MJCF import options, the same for ``add_mjcf`` and ``convert``.

Both routes compile the MJCF through :func:`compile_with_options`: the spec is compiled once (m0), the
options edit the ``mujoco.MjSpec`` using m0's compiled values, and it is compiled again, so that the
builder and the USD asset get the same MuJoCo model. The options follow Isaac Sim's MJCF importer:

- ``fix_base``: None keeps the source. True ("fixed") deletes the free joints of the root bodies (the
  children of the world) of articulated trees (a root with jointed descendants): they stay welded where
  they are at qpos0; a loose prop (a free body without jointed descendants) stays free. False
  ("floating") gives a free joint (named ``<body>_free``) to each jointless root body whose subtree has
  joints (an articulated robot's base); jointless trees (static scenery: a table) and mocap bodies stay as they are.
  Keyframes keep their values: a deleted joint's 7 qpos and 6 qvel entries are removed, a new free
  joint gets the body's pose and zero velocity. An actuator, equality, tendon or sensor that uses a
  free joint to delete is an error naming it.
- ``import_scene``: False leaves out ``<option>`` (gravity, time step, integrator, ...) and its flags:
  :func:`newton_usd.mjcf.add_mjcf` leaves the builder's gravity and ``builder.mujoco["option"]`` /
  ``["flag"]`` as they are, and :func:`newton_usd.mjcf.convert` writes no PhysicsScene (``usdsim`` then
  simulates with its defaults: gravity 9.81 m/s^2 down the stage's up axis, SolverMuJoCo's options
  (the implicitfast integrator, MuJoCo's other defaults), a step of at most 1/480 s). Not a spec edit:
  the two routes read it.
- ``self_collision``: False adds an MJCF ``<exclude>`` for every pair of bodies of one kinematic tree
  (the bodies under one root body) that both have colliding geoms and are not welded together (MuJoCo
  never collides those). Explicit ``<pair>`` contacts stay. None keeps the source; True is not offered:
  an MJCF model already says what self-collides (contype/conaffinity, ``<exclude>``, filterparent).
  Unnamed bodies in such pairs get the name the importer labels them with (``body_<id>``).
- ``collision_from_visuals``: for each body (the world's own geoms excepted) that has geoms but no
  colliding one (contype = conaffinity = 0 and in no ``<pair>``), its visual geoms collide
  (contype = conaffinity = 1): "convexHull" as they are (MuJoCo collides a mesh as its convex hull);
  "boundingSphere" adds a sphere of radius ``geom_rbound`` at each geom, "boundingCube" a box of
  ``geom_aabb`` in each geom's frame, "convexDecomposition" the convex parts of each mesh geom found by
  CoACD (other geoms collide as they are). Added colliders are in geom group 3 (hidden in MuJoCo's
  viewer by default), named ``<geom or body>_collision[_<k>]``, with the visual geom's contact values;
  the visual geoms stay.
- ``merge_meshes``: per body, the visual mesh geoms with the same group, rgba and material are merged
  into one mesh geom (the first one's, which keeps its place); colliding meshes are never merged (the
  hull of a union is not the union of the hulls), nor meshes with texture coordinates or fluid shapes.

``collision_from_visuals`` and ``merge_meshes`` change geoms but not masses: every body's compiled
inertial (mass, ipos, iquat, inertia) is pinned as its explicit inertial first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import mujoco
import numpy as np

from ..core.quat import quat_to_matrix, wxyz_to_xyzw, xyzw_to_wxyz
from ..diagnostics import Diagnostics
from ..errors import UsdInputError
from .compiled import excluded_body_pairs, mesh_in_asset_frame, named

FIX_BASE = {"source": None, "fixed": True, "floating": False}
"""``usdsim convert --fix-base`` tokens and the ``fix_base`` values they stand for."""

COLLISION_FROM_VISUALS = ("convexHull", "convexDecomposition", "boundingSphere", "boundingCube")
"""The ``collision_from_visuals`` tokens (UsdPhysics ``physics:approximation`` names)."""

DECOMPOSITION = {
    "threshold": 0.2,
    "max_convex_hull": 8,
    "preprocess_mode": "off",
    "resolution": 500,
    "mcts_nodes": 8,
    "mcts_iterations": 20,
    "mcts_max_depth": 1,
    "max_ch_vertex": 64,
    "seed": 0,
}
"""Default ``coacd.run_coacd`` arguments for "convexDecomposition": coarse and fast (about a second for a
30,000-triangle mesh; CoACD's own defaults take over ten times longer); the ``decomposition`` option
overrides any of them (e.g. ``{"threshold": 0.05, "preprocess_mode": "auto"}`` for finer parts and
non-manifold meshes repaired first). A mesh asset used by several geoms is decomposed once."""

COLLIDER_GROUP = 3

_FREE = mujoco.mjtJoint.mjJNT_FREE
_MESH = mujoco.mjtGeom.mjGEOM_MESH
_QPOS = {mujoco.mjtJoint.mjJNT_FREE: (7, 6), mujoco.mjtJoint.mjJNT_BALL: (4, 3)}


@dataclass(frozen=True)
class MjcfOptions:
    """The MJCF import options (see the module docstring); the defaults import the model as it is."""

    fix_base: bool | None = None
    import_scene: bool = True
    self_collision: bool | None = None
    collision_from_visuals: str | None = None
    merge_meshes: bool = False
    decomposition: Mapping | None = None

    def __post_init__(self):
        if self.fix_base not in (None, True, False):
            raise ValueError(
                f"fix_base must be None (as the source), True (fixed) or False (floating), got {self.fix_base!r}"
            )
        if self.self_collision not in (None, False):
            raise ValueError(
                f"self_collision must be None (as the source) or False (no contacts within a kinematic tree), got "
                f"{self.self_collision!r}: an MJCF model already says what self-collides (contype/conaffinity, "
                "<exclude>, filterparent)"
            )
        if self.collision_from_visuals not in (None, *COLLISION_FROM_VISUALS):
            raise ValueError(
                f"collision_from_visuals must be None or one of {', '.join(COLLISION_FROM_VISUALS)}, got "
                f"{self.collision_from_visuals!r}"
            )

    @property
    def edits_spec(self) -> bool:
        """Whether the options change the compiled model (all but ``import_scene``)."""
        return (
            self.fix_base is not None
            or self.self_collision is False
            or self.collision_from_visuals is not None
            or bool(self.merge_meshes)
        )


def compile_with_options(spec, options: MjcfOptions | None, file: str, diagnostics: Diagnostics | None = None):
    """Compile ``spec``; with options that edit the model, edit the spec using that first compile's values
    and compile it again. Returns the compiled ``MjModel``."""
    m0 = spec.compile()
    if options is None or not options.edits_spec:
        return m0
    diag = diagnostics if diagnostics is not None else Diagnostics()
    edit = _Edit(spec, m0, file, diag)
    if options.collision_from_visuals is not None or options.merge_meshes:
        edit.pin_inertials()
    if options.collision_from_visuals is not None:
        edit.colliders_from_visuals(options.collision_from_visuals, {**DECOMPOSITION, **(options.decomposition or {})})
    if options.merge_meshes:
        edit.merge_visual_meshes()
    if options.fix_base is not None:
        edit.fix_base(options.fix_base)
    if options.self_collision is False:
        edit.exclude_self_collisions()
    return spec.compile()


class _Edit:
    """Edits of one spec, addressed by the ids of its first compile ``m0`` (taken before any edit)."""

    def __init__(self, spec, m0, file, diag):
        self.spec, self.m0, self.file, self.diag = spec, m0, file, diag
        self.label = named
        self.body = {b.id: b for b in spec.bodies}
        self.geom = {g.id: g for g in spec.geoms}
        self.joint = {j.id: j for j in spec.joints}
        self.collider_bodies = set()  # bodies that collision_from_visuals gave colliders
        self.flipped = set()  # visual geoms that now collide as they are
        self.parts = {}  # source mesh id -> names of its convex parts' mesh assets
        m = m0
        self.colliding = (m.geom_contype != 0) | (m.geom_conaffinity != 0)
        self.paired = {int(g) for g in np.concatenate([m.pair_geom1, m.pair_geom2])}

    def _unique(self, objects, base: str) -> str:
        used = {o.name for o in objects}
        name, n = base, 1
        while name in used:
            n += 1
            name = f"{base}_{n}"
        return name

    def _body_name(self, b: int) -> str:
        """Body ``b``'s name; an unnamed body is named as the importer labels it (unique)."""
        body = self.body[b]
        if not body.name:
            body.name = self._unique(self.spec.bodies, self.label(self.m0, mujoco.mjtObj.mjOBJ_BODY, b, "body"))
        return body.name

    def _geom_base(self, g: int) -> str:
        """A stem for names derived from geom ``g``: its name, else its body's and its index there."""
        if self.geom[g].name:
            return self.geom[g].name
        b = int(self.m0.geom_bodyid[g])
        return f"{self.label(self.m0, mujoco.mjtObj.mjOBJ_BODY, b, 'body')}_{g - int(self.m0.body_geomadr[b])}"

    def _geoms_of(self, b: int) -> list[int]:
        return [int(g) for g in np.flatnonzero(self.m0.geom_bodyid == b)]

    def pin_inertials(self):
        """Every body keeps m0's inertial, whatever happens to its geoms."""
        m = self.m0
        for b in range(1, m.nbody):
            body = self.body[b]
            if m.body_mass[b] <= 0:  # nothing to pin: with inertia from geoms off, it stays massless
                continue
            body.explicitinertial = True
            body.mass = float(m.body_mass[b])
            body.ipos = m.body_ipos[b].copy()
            body.iquat = m.body_iquat[b].copy()
            body.inertia = m.body_inertia[b].copy()
            body.fullinertia = [np.nan, 0.0, 0.0, 0.0, 0.0, 0.0]
        self.spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE

    # ------------------------------------------------------------------ colliders
    def colliders_from_visuals(self, token: str, decomposition: dict):
        m = self.m0
        touched = []
        for b in range(1, m.nbody):
            geoms = self._geoms_of(b)
            if not geoms or any(self.colliding[g] or g in self.paired for g in geoms):
                continue
            for g in geoms:
                gt = int(m.geom_type[g])
                if token == "convexHull" or gt not in _BOUNDABLE or (token == "convexDecomposition" and gt != _MESH):
                    self.geom[g].contype = self.geom[g].conaffinity = 1
                    self.flipped.add(g)
                elif token == "boundingSphere":
                    self._add_collider(g, mujoco.mjtGeom.mjGEOM_SPHERE, [float(m.geom_rbound[g]), 0, 0],
                                       m.geom_pos[g], m.geom_quat[g])  # fmt: skip
                elif token == "boundingCube":
                    center, half = m.geom_aabb[g][:3], m.geom_aabb[g][3:]
                    rot = quat_to_matrix(wxyz_to_xyzw(m.geom_quat[g]))
                    self._add_collider(g, mujoco.mjtGeom.mjGEOM_BOX, np.maximum(half, 1e-9),
                                       m.geom_pos[g] + rot @ center, m.geom_quat[g])  # fmt: skip
                else:
                    self._decompose(g, decomposition)
            self.collider_bodies.add(b)
            touched.append(self.label(m, mujoco.mjtObj.mjOBJ_BODY, b, "body"))
        kind = f"collision_from_visuals={token}: colliders made from the visual geoms of bodies without any"
        for body in touched:
            self.diag.add(kind, body)

    def _add_collider(self, g, geom_type, size, pos, quat_wxyz, mesh_name=None, part=None):
        m = self.m0
        suffix = "_collision" + (f"_{part}" if part is not None else "")
        name = self._unique(self.spec.geoms, self._geom_base(g) + suffix)
        geom = self.body[int(m.geom_bodyid[g])].add_geom()
        geom.name = name
        geom.type = geom_type
        if mesh_name is not None:
            geom.meshname = mesh_name
        else:
            geom.size = [float(x) for x in size]
        geom.pos = [float(x) for x in pos]
        geom.quat = [float(x) for x in quat_wxyz]
        geom.contype = geom.conaffinity = 1
        geom.group = COLLIDER_GROUP
        geom.rgba = m.geom_rgba[g].copy()
        geom.friction = m.geom_friction[g].copy()
        geom.condim = int(m.geom_condim[g])
        geom.priority = int(m.geom_priority[g])
        geom.solmix = float(m.geom_solmix[g])
        geom.solref = m.geom_solref[g].copy()
        geom.solimp = m.geom_solimp[g].copy()
        geom.margin = float(m.geom_margin[g])
        geom.gap = float(m.geom_gap[g])
        return geom

    def _decompose(self, g, decomposition):
        """Mesh geom ``g``'s convex parts (CoACD) as colliders, in the mesh's asset frame."""
        import coacd  # noqa: PLC0415  (loaded only when a decomposition is asked for)

        vertices, faces, pose = mesh_in_asset_frame(self.m0, g)
        mid = int(self.m0.geom_dataid[g])
        base = self._geom_base(g)
        if mid not in self.parts:  # the parts' mesh assets, once per source mesh (in its asset frame)
            coacd.set_log_level("error")
            parts = coacd.run_coacd(coacd.Mesh(vertices, faces.astype(np.int32)), **decomposition)
            self.parts[mid] = []
            for k, (v, f) in enumerate((v, f) for v, f in parts if len(f) and len(v) >= 4):
                mesh = self.spec.add_mesh()
                mesh.name = self._unique(self.spec.meshes, f"{base}_part_{k}")
                mesh.uservert = np.asarray(v, np.float64).ravel().tolist()
                mesh.userface = np.asarray(f, np.int32).ravel().tolist()
                self.parts[mid].append(mesh.name)
        if not self.parts[mid]:  # nothing usable: the mesh collides as its hull
            self.geom[g].contype = self.geom[g].conaffinity = 1
            self.flipped.add(g)
            return
        for k, name in enumerate(self.parts[mid]):
            self._add_collider(g, _MESH, None, pose[0], xyzw_to_wxyz(pose[1]), mesh_name=name, part=k)
        self.diag.add("convexDecomposition: mesh geoms split into convex parts by CoACD", f"{base} ({k + 1} parts)")

    # ------------------------------------------------------------------ merge
    def merge_visual_meshes(self):
        m = self.m0
        merged_in, merged_out, bodies = 0, 0, []
        for b in range(m.nbody):
            groups = {}
            for g in self._geoms_of(b):
                mid = int(m.geom_dataid[g])
                if (
                    int(m.geom_type[g]) != _MESH
                    or self.colliding[g]
                    or g in self.paired
                    or g in self.flipped
                    or (mid >= 0 and m.mesh_texcoordnum[mid] > 0)
                    or m.geom_fluid[g][0] > 0  # its own fluid ellipsoid
                ):
                    continue
                key = (int(m.geom_group[g]), tuple(float(x) for x in m.geom_rgba[g]), int(m.geom_matid[g]))
                groups.setdefault(key, []).append(g)
            for (_, _, matid), geoms in groups.items():
                if len(geoms) < 2:
                    continue
                # Into the first geom's mesh frame: it keeps its placement (and its <frame>, if any).
                _, _, (pos0, quat0) = mesh_in_asset_frame(m, geoms[0])
                rot0 = quat_to_matrix(quat0)
                vertices, faces, offset = [], [], 0
                for g in geoms:
                    v, f, (pos, quat) = mesh_in_asset_frame(m, g)
                    vertices.append(((v @ quat_to_matrix(quat).T + pos) - pos0) @ rot0)
                    faces.append(f.astype(np.int64) + offset)
                    offset += len(v)
                first = self.geom[geoms[0]]
                mesh = self.spec.add_mesh()
                mesh.name = self._unique(self.spec.meshes, f"{self._geom_base(geoms[0])}_merged")
                mesh.uservert = np.concatenate(vertices).ravel().tolist()
                mesh.userface = np.concatenate(faces).ravel().tolist()
                first.meshname = mesh.name
                first.material = (mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_MATERIAL, matid) or "") if matid >= 0 else ""
                for g in geoms[1:]:
                    self.spec.delete(self.geom.pop(g))
                merged_in += len(geoms)
                merged_out += 1
            if any(len(v) > 1 for v in groups.values()):
                bodies.append(self.label(m, mujoco.mjtObj.mjOBJ_BODY, b, "body"))
        if merged_in:
            kind = f"merge_meshes: {merged_in} visual mesh geoms merged into {merged_out}"
            for body in bodies:
                self.diag.add(kind, body)

    # ------------------------------------------------------------------ fix_base
    def fix_base(self, fixed: bool):
        m = self.m0
        roots = [b for b in range(1, m.nbody) if int(m.body_parentid[b]) == 0]
        deleted, added = set(), {}
        if fixed:  # the articulated trees' roots: a loose prop (a free body alone) stays free
            articulated = {
                int(m.body_rootid[int(m.jnt_bodyid[j])]) for j in range(m.njnt) if m.jnt_bodyid[j] not in roots
            }
            for b in (b for b in roots if b in articulated):
                for j in range(int(m.body_jntadr[b]), int(m.body_jntadr[b]) + int(m.body_jntnum[b])):
                    if int(m.jnt_type[j]) == _FREE:
                        self._check_unused(j)
                        deleted.add(j)
        else:
            has_joints = {int(m.body_rootid[int(m.jnt_bodyid[j])]) for j in range(m.njnt)}
            added = {b: (m.body_pos[b].copy(), m.body_quat[b].copy()) for b in roots
                     if m.body_jntnum[b] == 0 and b in has_joints and m.body_mocapid[b] < 0}  # fmt: skip
        if not deleted and not added:
            return
        for j in sorted(deleted):
            self.spec.delete(self.joint.pop(j))
        for b in added:
            body_name = self._body_name(b)
            joint = self.body[b].add_freejoint()
            joint.name = self._unique(self.spec.joints, f"{body_name}_free")
            joint.align = mujoco.mjtAlignFree.mjALIGNFREE_FALSE  # the body frame stays: keyframes hold its pose
        self._rebuild_keys(deleted, added)  # after the edits: MjSpec.delete checks the keys it has

    def _check_unused(self, j):
        m = self.m0
        users = []
        on_joint = (mujoco.mjtTrn.mjTRN_JOINT, mujoco.mjtTrn.mjTRN_JOINTINPARENT)
        for a in range(m.nu):
            if int(m.actuator_trntype[a]) in on_joint and int(m.actuator_trnid[a][0]) == j:
                users.append(("actuator", mujoco.mjtObj.mjOBJ_ACTUATOR, a))
        for e in range(m.neq):
            if int(m.eq_type[e]) == mujoco.mjtEq.mjEQ_JOINT and j in (int(m.eq_obj1id[e]), int(m.eq_obj2id[e])):
                users.append(("equality", mujoco.mjtObj.mjOBJ_EQUALITY, e))
        for t in range(m.ntendon):
            wraps = range(int(m.tendon_adr[t]), int(m.tendon_adr[t]) + int(m.tendon_num[t]))
            if any(int(m.wrap_type[w]) == mujoco.mjtWrap.mjWRAP_JOINT and int(m.wrap_objid[w]) == j for w in wraps):
                users.append(("tendon", mujoco.mjtObj.mjOBJ_TENDON, t))
        for s in range(m.nsensor):
            for objtype, objid in ((m.sensor_objtype[s], m.sensor_objid[s]), (m.sensor_reftype[s], m.sensor_refid[s])):
                if int(objtype) == mujoco.mjtObj.mjOBJ_JOINT and int(objid) == j:
                    users.append(("sensor", mujoco.mjtObj.mjOBJ_SENSOR, s))
        if users:
            kind, obj, i = users[0]
            joint = self.label(m, mujoco.mjtObj.mjOBJ_JOINT, j, "joint")
            body = self.label(m, mujoco.mjtObj.mjOBJ_BODY, int(m.jnt_bodyid[j]), "body")
            raise UsdInputError(
                f"fix_base=True (fixed) removes the free joint {joint!r} of body {body!r}, but {kind} "
                f"{self.label(m, obj, i, kind)!r} uses it: import with fix_base=None, or edit the MJCF",
                file=self.file,
            )

    def _rebuild_keys(self, deleted: set, added: dict):
        """Keyframes in the new joint layout: joints are numbered depth first, so a root body's new free
        joint comes where its body's joints would be, and the other joints keep their order."""
        m = self.m0
        if not m.nkey:
            return
        for key in self.spec.keys:
            k = key.id
            qpos, qvel = [], []
            for b in range(1, m.nbody):
                if b in added:
                    pos, quat = added[b]
                    qpos += [*pos, *quat]
                    qvel += [0.0] * 6
                for j in range(int(m.body_jntadr[b]), int(m.body_jntadr[b]) + int(m.body_jntnum[b])):
                    if j in deleted:
                        continue
                    nq, nv = _QPOS.get(int(m.jnt_type[j]), (1, 1))
                    qa, da = int(m.jnt_qposadr[j]), int(m.jnt_dofadr[j])
                    qpos += m.key_qpos[k][qa : qa + nq].tolist()
                    qvel += m.key_qvel[k][da : da + nv].tolist()
            key.qpos = qpos
            key.qvel = qvel

    # ------------------------------------------------------------------ self_collision
    def exclude_self_collisions(self):
        m = self.m0
        colliding = {int(m.geom_bodyid[g]) for g in range(m.ngeom) if self.colliding[g]} | self.collider_bodies
        existing = {tuple(sorted(p)) for p in excluded_body_pairs(m)}
        trees = {}
        for b in sorted(colliding - {0}):
            trees.setdefault(int(m.body_rootid[b]), []).append(b)
        for bodies in trees.values():
            for i, b1 in enumerate(bodies):
                for b2 in bodies[i + 1 :]:
                    if m.body_weldid[b1] == m.body_weldid[b2] or (b1, b2) in existing:
                        continue  # welded together: MuJoCo never collides them
                    self.spec.add_exclude(bodyname1=self._body_name(b1), bodyname2=self._body_name(b2))


_BOUNDABLE = {
    mujoco.mjtGeom.mjGEOM_SPHERE,
    mujoco.mjtGeom.mjGEOM_CAPSULE,
    mujoco.mjtGeom.mjGEOM_ELLIPSOID,
    mujoco.mjtGeom.mjGEOM_CYLINDER,
    mujoco.mjtGeom.mjGEOM_BOX,
    mujoco.mjtGeom.mjGEOM_MESH,
}


__all__ = ["COLLISION_FROM_VISUALS", "DECOMPOSITION", "FIX_BASE", "MjcfOptions", "compile_with_options"]
