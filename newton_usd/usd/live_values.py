"""One element's values read again from the stage as the import reads them, for a live edit (no import).

A running :class:`~newton_usd.sim.Simulation` that sees a property of a joint, a body, a collider or a material
edited asks here for that element's new values. USD's UsdPhysics parser reads the edited prims only, and the
importer's own functions turn them into values, with its units, degrees and schema precedence
(``newton:*`` > ``mjc:*`` > ``physx*`` > ``physics:*``): :func:`~.joints.add_joint` adds the joint to a builder of
its own, :func:`~.mass.import_mass` sums a body's mass over the model's colliders, :func:`~.colliders.material_values`
reads a material, :func:`~.bodies.import_bodies` a body's initial velocity. A value the import refuses raises its
:class:`~newton_usd.errors.UsdInputError`; an edit that changes what the import would build (a joint locked, a body
that lost its mass, a drive on another joint) raises :class:`NotInPlace`: the caller imports the stage again.
"""

from __future__ import annotations

import numpy as np
from pxr import UsdShade

from ..core.builder import ModelBuilder
from ..core.types import GeoType
from ..diagnostics import Diagnostics
from . import properties as props
from .articulations import JOINT_TYPES
from .bodies import import_bodies
from .colliders import collider_material, material_values
from .descriptors import OT, SHAPE_TYPES, load_descriptors
from .importer import UsdImport
from .joints import add_joint
from .mass import import_mass
from .resolver import Context, Resolver


class NotInPlace(Exception):  # noqa: N818  (a signal, not an error: the edit is applied by an import instead)
    """The edit changes what the import builds (not only values): the stage must be imported again."""


class _ModelShapes:
    """What :func:`~.mass.import_mass` reads of a builder, over a model's colliders (their types, sizes, frames and
    meshes, by model shape index), and the mass properties it sets."""

    def __init__(self, model, shapes):
        types, scales = model.shape_type.numpy(), model.shape_scale.numpy()
        frames = model.shape_transform.numpy().astype(np.float64)
        self.shape_type = {s: GeoType(int(types[s])) for s in shapes}
        self.shape_scale = {s: scales[s].astype(np.float64) for s in shapes}
        self.shape_source = {s: model.shape_source[s] for s in shapes}
        self.shape_transform = {s: (frames[s, :3], frames[s, 3:]) for s in shapes}
        self.mass = None

    def set_body_mass(self, body, mass, com=None, inertia=None):
        self.mass = (float(mass), np.asarray(com, dtype=np.float64), np.asarray(inertia, dtype=np.float64))


class LiveValues:
    """Reads the edited elements of ``imported``'s stage again (one instance per batch of edits: its resolver
    reads the prims as they are now).

    Args:
        imported: the :class:`~.importer.UsdImport` of the running model (stage, file, units, context).
        order: the resolver's dialect order, as the import's.
    """

    def __init__(self, imported, order):
        self.stage, self.file, self.frame = imported.stage, imported.file, imported.frame
        frame = imported.frame
        self.context = imported.context or Context(frame.meters_per_unit, frame.kilograms_per_unit)
        self.resolver = Resolver(order=tuple(order), file=self.file)
        self.diagnostics = Diagnostics()  # (what the import already said: not said again)
        self._descs = {}

    def _result(self) -> UsdImport:
        out = UsdImport(stage=self.stage, file=self.file, frame=self.frame, resolver=self.resolver)
        out.diagnostics = self.diagnostics
        out.context = self.context
        return out

    def descriptors(self, paths) -> dict:
        """USD's parse of the prims ``paths`` (prim path strings): path -> (object type, descriptor), their
        colliders', bodies', joints' and materials' (read once per instance)."""
        wanted = [p for p in dict.fromkeys(paths) if p not in self._descs]
        if wanted:
            for obj_type, items in load_descriptors(self.stage, wanted).items():
                for path, desc in items:
                    self._descs.setdefault(str(path), {})[obj_type] = desc
            for p in wanted:
                self._descs.setdefault(p, {})
        return {p: self._descs[p] for p in paths}

    def _one(self, path, types):
        found = self.descriptors([path])[path]
        for obj_type in types:
            if obj_type in found:
                return obj_type, found[obj_type]
        raise NotInPlace(f"{path} is no longer parsed as it was")

    # ------------------------------------------------------------------ joints
    def joint(self, path: str, child: str, parent: str | None, is_body) -> ModelBuilder:
        """The joint ``path`` as the import adds it, in a builder of its own: body 0 its child (the model's body
        ``child``), body 1 its parent (``parent``; None: the world). ``is_body(label)``: whether a prim is a
        simulated body (a joint now aimed at one where it was aimed at the world changes the tree)."""
        obj_type, d = self._one(path, tuple(JOINT_TYPES))
        jt = JOINT_TYPES[obj_type]
        if not d.jointEnabled or d.excludeFromArticulation:
            raise NotInPlace(f"{path} was disabled or excluded from its articulation")
        ends = [str(b) if b and not b.isEmpty else None for b in (d.body0, d.body1)]
        if ends[1] == child:
            reverse = False
        elif ends[0] == child:
            reverse = True
        else:
            raise NotInPlace(f"{path} joins other bodies now")
        other = ends[0] if not reverse else ends[1]
        if other != parent and (parent is not None or (other is not None and is_body(other))):
            raise NotInPlace(f"{path} joins other bodies now")
        builder = ModelBuilder()
        builder.add_body(label=child)
        if parent is not None:
            builder.add_body(label=parent)
        mine, theirs = 0, (1 if parent is not None else -1)
        b0, b1 = (theirs, mine) if not reverse else (mine, theirs)
        add_joint(builder, path, d, jt, b0, b1, reverse, self.frame, self._result(), {}, {}, self.stage,
                  self.context)  # fmt: skip
        return builder

    # ------------------------------------------------------------------ bodies
    def body(self, path: str) -> ModelBuilder:
        """The rigid body ``path`` as the import adds it (its pose as USD's parser reads it at the default time,
        its initial velocity, kinematic flag and MuJoCo values), in a builder of its own."""
        _, d = self._one(path, (OT.RigidBody,))
        builder = ModelBuilder()
        import_bodies(builder, self.stage, [(path, d)], self.frame, self._result())
        if not builder.body_count:
            raise NotInPlace(f"{path} was disabled (physics:rigidBodyEnabled)")
        return builder

    def body_switches(self, path: str) -> tuple:
        """``(enabled, kinematic)`` of the rigid body ``path``, as USD's parser reads them
        (``physics:rigidBodyEnabled``, ``physics:kinematicEnabled``)."""
        _, d = self._one(path, (OT.RigidBody,))
        return bool(d.rigidBodyEnabled), bool(d.kinematicBody)

    def mass(self, path: str, model, shapes, shape_materials) -> tuple:
        """``(mass, com, inertia)`` of the body ``path`` as the import computes them (its MassAPI, its colliders'
        and their materials' densities) over the model's colliders ``shapes`` (model shape indices: their
        geometry is the model's); ``shape_materials``: each one's material path (None: none)."""
        adapter = _ModelShapes(model, shapes)
        prims = [collider_prim(model.shape_label[s]) for s in shapes]
        materials = {m: self.material_descriptor(m) for m in set(shape_materials) if m is not None}
        parts = []
        for s, prim_path, material in zip(shapes, prims, shape_materials, strict=True):
            prim = self.stage.GetPrimAtPath(prim_path)
            md = materials.get(material)
            mujoco_mass = None
            if adapter.shape_type[s] == GeoType.MESH:
                resolved = self.resolver.resolve_all(prim, props.SHAPE_PROPERTIES, self.context)
                if resolved["mass_model"].value in ("convex", "shell"):
                    mujoco_mass = (resolved["mass_model"].value, resolved["shell_thickness"].value)
            parts.append((s, prim, md, prim_path, mujoco_mass))
        massless = []
        import_mass(adapter, self.stage, 0, path, parts, {}, self.frame, self.diagnostics, self.file, massless,
                    self.resolver)  # fmt: skip
        if massless or adapter.mass is None:
            raise NotInPlace(f"{path} has no mass now (the import gives it one by its joints)")
        return adapter.mass

    # ------------------------------------------------------------------ colliders and materials
    def collider_materials(self, labels) -> dict:
        """Each collider's material prim path (None: none) as USD's parser binds it (``labels``: shape labels; a
        convex part ``<path>:partN`` is its collider's)."""
        paths = [collider_prim(label) for label in labels]
        descs = self.descriptors(paths)
        out = {}
        for label, path in zip(labels, paths, strict=True):
            d = next((descs[path][t] for t in SHAPE_TYPES if t in descs[path]), None)
            if d is None:
                raise NotInPlace(f"{path} is no longer a collider")
            bound = [str(m) for m in d.materials]
            known = {m: self.material_descriptor(m) for m in bound}
            md = collider_material(d, {m: v for m, v in known.items() if v is not None})
            out[label] = None if md is None else next(m for m in bound if known[m] is md)
        return out

    def collision_enabled(self, path: str) -> bool:
        """Whether the collider ``path`` collides (``physics:collisionEnabled``, as USD's parser reads it)."""
        found = self.descriptors([path])[path]
        d = next((found[t] for t in SHAPE_TYPES if t in found), None)
        if d is None:
            raise NotInPlace(f"{path} is no longer a collider")
        return bool(d.collisionEnabled)

    def material_descriptor(self, path: str):
        """USD's descriptor of the physics material ``path`` (None: the prim is no physics material)."""
        return self.descriptors([path])[path].get(OT.RigidBodyMaterial)

    def material(self, path: str | None) -> tuple:
        """``(mu, restitution, torsional friction, rolling friction)`` of colliders bound to material ``path``."""
        md = self.material_descriptor(path) if path is not None else None
        return material_values(self.stage, md, self.resolver, self.context)


def bound_materials(stage, labels) -> dict:
    """Shape label -> the path of the material bound to its prim for physics, as USD's UsdPhysics parser binds it
    (None: none): a collider with MaterialBindingAPI applied has the material UsdShade computes for the ``physics``
    purpose (or its fallback to an all-purpose binding), bound to the prim or an ancestor, directly or through a
    collection; one without the API has none. For many colliders at once. A binding to a prim that is no material
    (not defined yet) gives the path it targets: the material defined there later is the collider's."""
    paths = [collider_prim(label) for label in labels]
    prims = [p for p in (stage.GetPrimAtPath(p) for p in paths) if p and p.HasAPI(UsdShade.MaterialBindingAPI)]
    found, rels = UsdShade.MaterialBindingAPI.ComputeBoundMaterials(prims, "physics")
    by_path = {}
    for prim, material, rel in zip(prims, found, rels, strict=True):
        by_path[str(prim.GetPath())] = str(material.GetPath()) if material else _binding_target(rel)
    return {label: by_path.get(path) for label, path in zip(labels, paths, strict=True)}


def _binding_target(rel) -> str | None:
    """The material path a binding relationship targets (a collection binding's targets: the collection, then the
    material), or None."""
    targets = [t for t in rel.GetTargets() if t.IsPrimPath()] if rel else []
    return str(targets[-1]) if targets else None


def collider_prim(label: str) -> str:
    """The prim path of a shape label (a convex part ``<path>:partN`` is its collider prim's)."""
    head, sep, tail = label.rpartition(":part")
    return head if sep and tail.isdigit() else label
