"""Environments: N identical environment prims under one parent, imported once and replicated as N worlds.

Cloned environments are authored the way Isaac Lab and Newton users author them: ``/World/envs/env_0``
... ``env_N-1``, each an Xform at its own place holding the same robot (each often inheriting or
referencing ``env_0`` or a shared asset), and shared static things (a ground, a scene) outside them.
``add_usd(builder, stage, env_root="/World/envs")`` reads the first environment (and what lies outside
the environments) only, and replicates it into one world per environment prim, each placed at its own
prim's transform and labelled with its own prim paths (:meth:`ModelBuilder.replicate`).

Replicating is right only if the environments are identical: :func:`check_identical` proves it from
the composition, cheaply, and compares values only where an environment authors its own opinions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pxr import Sdf, Usd, UsdGeom, UsdPhysics

from ..core.quat import gf_to_xyzw, matrix_to_quat, quat_conjugate, quat_multiply, quat_rotate
from ..errors import UsdInputError
from . import properties as props
from .resolver import Property
from .scan import MJC_TYPED

RIGID_TOLERANCE = 1e-6
"""An environment's transform relative to the first one must be rigid (no scale, shear or mirror) to
this tolerance on its rotation matrix."""


@dataclass
class Environments:
    """The environment prims of a stage, in world order (the authored order of the children of
    ``root``; world 0 is the first, the one imported).

    Attributes:
        root: the parent prim's path. paths: the environment prims' paths, world by world.
        placements: per world, the rigid transform (position, Warp quat; simulation units and axes)
            that takes the first environment's place to this one's.
        relative: the same transforms as 4x4 row-vector matrices in stage units and axes (numpy,
            (worlds, 4, 4)): a point at ``p`` in the first environment is at ``p @ relative[w]`` in world w.
    """

    root: str
    paths: list
    placements: list
    relative: np.ndarray = None

    def __len__(self) -> int:
        return len(self.paths)

    def local(self, label: str) -> bool:
        """Whether an element labelled ``label`` belongs to the first environment."""
        first = self.paths[0]
        return label == first or label.startswith(first + "/") or label.startswith(first + "[")

    def relabel(self, label: str, world: int) -> str:
        """The label of world ``world``'s copy of the element labelled ``label``: the same prim in its own
        environment (labels outside the environments are kept)."""
        if not self.local(label):
            return label
        return self.paths[world] + label[len(self.paths[0]) :]

    def world_of(self, path: str) -> int | None:
        """The world of the environment holding prim ``path`` (None: outside every environment)."""
        root = self.root.rstrip("/") + "/"
        if not path.startswith(root):
            return None
        name = path[len(root) :].split("/", 1)[0].split("[", 1)[0]
        return self._index.get(root + name)

    def __post_init__(self):
        self._index = {p: w for w, p in enumerate(self.paths)}


def find_environments(stage: Usd.Stage, env_root: str, frame, file=None) -> Environments:
    """The environments under ``env_root``: every active, defined child prim, in authored order.

    Raises:
        UsdInputError: no such prim, no children, or an environment that is scaled, sheared or mirrored
            relative to the first (environments may differ by a translation and a rotation only).
    """
    if not Sdf.Path.IsValidPathString(str(env_root)) or not Sdf.Path(str(env_root)).IsAbsolutePath():
        raise UsdInputError(f"env_root must be an absolute prim path such as /World/envs, got {env_root!r}", file=file)
    parent = stage.GetPrimAtPath(str(env_root))
    if not parent:
        raise UsdInputError("no such prim (env_root: the parent of the environment prims)", file=file,
                            prim=str(env_root))  # fmt: skip
    envs = parent.GetChildren()
    if not envs:
        raise UsdInputError("has no active child prims to simulate as environments", file=file, prim=str(env_root))
    cache = UsdGeom.XformCache(Usd.TimeCode.Default())
    matrices = np.array([cache.GetLocalToWorldTransform(e) for e in envs], dtype=np.float64)
    # Row vectors (USD): a point of env 0 at world p sits at p @ inv(M0) @ Mw in env w.
    relative = np.linalg.inv(matrices[0]) @ matrices
    rot = relative[:, :3, :3]  # rows: R^T of the column-vector rotation
    gram = np.einsum("nij,nkj->nik", rot, rot) - np.eye(3)
    bad = np.nonzero((np.abs(gram).max(axis=(1, 2)) > RIGID_TOLERANCE) | (np.linalg.det(rot) <= 0))[0]
    if len(bad):
        env = envs[int(bad[0])]
        raise UsdInputError(
            f"is scaled, sheared or mirrored relative to {envs[0].GetPath()}: environments may differ by a "
            "translation and a rotation only (they are replicated from the first one)",
            file=file,
            prim=str(env.GetPath()),
        )
    r = frame.rotation
    quats = matrix_to_quat(np.swapaxes(rot, -1, -2))
    placements = []
    for q, t in zip(quats, relative[:, 3, :3], strict=True):
        q_sim = quat_multiply(quat_multiply(r, q), quat_conjugate(r))
        placements.append((frame.meters_per_unit * quat_rotate(r, t), q_sim / np.linalg.norm(q_sim)))
    return Environments(str(parent.GetPath()), [str(e.GetPath()) for e in envs], placements, relative)


# ---------------------------------------------------------------- identity
def _attribute_names(table) -> set:
    names = set()
    for value in table:
        if isinstance(value, Property):
            names.update(c.attribute for c in value.candidates)
    return names


_RESOLVED = _attribute_names(
    v for v in vars(props).values() if isinstance(v, Property)
) | _attribute_names(
    p for v in vars(props).values() if isinstance(v, (dict, tuple)) for p in (v.values() if isinstance(v, dict) else v)
)  # fmt: skip
_READ_BY_NAME = ("xformOp:", "xformOpOrder", "physx", "newton:", "mjc:", "state:", "material:binding", "collection:")
_NOT_PHYSICS = frozenset(("visibility", "purpose", "proxyPrim"))


def _relevant(prim: Usd.Prim, name: str) -> bool:
    """Whether the import may read property ``name`` of ``prim``: one its schemas define (UsdPhysics, the
    gprim's geometry, the codeless newton/mjc schemas), a transform op, or one of the namespaces read by
    name (physx*, newton:, mjc:, joint states, material bindings, collections). Custom attributes in other
    namespaces (e.g. ``physics:newton:articulation_index``, ``physics:engine``) and display-only ones are
    not."""
    if name in _NOT_PHYSICS or name.startswith("primvars:"):
        return False
    if name.startswith(_READ_BY_NAME) or name in _RESOLVED:
        return True
    return bool(prim.GetPrimDefinition().GetPropertyDefinition(name))


def _key(spec) -> tuple:
    return spec.layer.identifier, spec.path


@dataclass
class Difference:
    """Where an environment first differs from the first one."""

    prim: str  # the prim of the environment that differs (or the first environment's, if only it has it)
    attribute: str | None
    what: str


def check_identical(stage: Usd.Stage, envs: Environments, file=None) -> None:
    """Raise :class:`UsdInputError` naming the first environment whose physics differs from the first one.

    The check follows the composition. An environment's prim stack (its contributing specs, strongest
    first) splits into the specs it shares with the first environment's (an inherited ``env_0``, a
    referenced asset) and its own. Shared specs compose the same content under both; so only the
    environment's own specs (and the first one's) can make them differ. Those are walked (with their
    descendants, at the Sdf level): every property they author that the import may read (see
    :func:`_relevant`; the environment prim's own transform excepted, which places the world) must have the
    same composed value in both environments (relationship targets compared relative to each environment);
    a prim whose own spec authors its type, applied schemas, activation or composition arcs must have the
    same type and schemas, and its prim stack is split again (an arc of its own brings specs of its own); a
    prim only one of them has must hold no physics. Where the shared specs compose in another order, every
    spec is the environment's own. Cost: one prim stack per environment and a walk of the specs it authors
    itself, plus a value for each relevant property it authors.
    """
    first = stage.GetPrimAtPath(envs.paths[0])
    memo = {}
    for w, path in enumerate(envs.paths[1:], start=1):
        env = stage.GetPrimAtPath(path)
        diff = _Comparison(env, first, memo, envs.relative[w]).run()
        if diff is not None:
            raise UsdInputError(
                f"environment {path} differs from {envs.paths[0]}, which is imported once for every world: "
                f"{diff.what} (make the environments identical, or import the stage without env_root)",
                file=file,
                prim=diff.prim,
                attribute=diff.attribute,
            )


_ARC_FIELDS = frozenset(("inheritPaths", "references", "payload", "specializes", "variantSelection",
                         "variantSetNames"))  # fmt: skip
_PRIM_FIELDS = _ARC_FIELDS | {"typeName", "apiSchemas", "active"}


class _Comparison:
    """One environment against the first (``memo`` holds the first one's prim stacks, prims and values,
    shared by all). Prims are named by their path relative to the environment ("" for itself,
    "/Robot/torso"), as strings: cheaper than ``Sdf.Path`` operations."""

    def __init__(self, env, first, memo, relative):
        self.env, self.first, self.memo, self.relative = env, first, memo, relative
        self.root, self.root0 = env.GetPath(), first.GetPath()
        self.text, self.text0 = str(self.root), str(self.root0)
        self.stage = env.GetStage()
        self.walked = {}  # layer identifier -> paths of the own specs walked with their descendants

    def run(self) -> Difference | None:
        return self._level("")

    def _prim0(self, rel):
        prim0 = self.memo.get(("prim", rel))
        if prim0 is None:
            prim0 = self.memo[("prim", rel)] = self.first if not rel else self.stage.GetPrimAtPath(self.text0 + rel)
        return prim0

    def _prim(self, rel):
        return self.env if not rel else self.stage.GetPrimAtPath(self.text + rel)

    def _level(self, rel) -> Difference | None:
        """Split the prim stacks of the prims at ``rel`` and compare what their own specs author."""
        prim, prim0 = self._prim(rel), self._prim0(rel)
        stack = prim.GetPrimStack()
        stack0 = self.memo.get(("stack", rel))
        if stack0 is None:
            stack0 = self.memo[("stack", rel)] = [(s, _key(s)) for s in prim0.GetPrimStack()]
        keyed = [(s, _key(s)) for s in stack]
        in0, in_env = {k for _, k in stack0}, {k for _, k in keyed}
        if [k for _, k in keyed if k in in0] == [k for _, k in stack0 if k in in_env]:
            own = [s for s, k in keyed if k not in in0] + [s for s, k in stack0 if k not in in_env]
        else:  # the shared specs compose in another order: compare all
            own = list(stack) + [s for s, _ in stack0]
        if not own:
            return None
        props, prims, levels = {}, {rel: None}, {}  # (dicts: sets in the order found)
        for spec in own:
            base, layer = spec.path, spec.layer
            walked = self.walked.setdefault(layer.identifier, [])
            if any(base.HasPrefix(w) for w in walked):
                continue
            walked.append(base)
            paths = []
            layer.Traverse(base, paths.append)
            skip = len(str(base.StripAllVariantSelections()))
            for path in paths:
                text = str(path)
                if "{" in text:
                    text = str(path.StripAllVariantSelections())
                if "[" in text:
                    continue  # a relationship target or attribute connection (its property is listed too)
                tail = text[skip:]
                dot = tail.find(".", tail.rfind("/") + 1)
                if dot >= 0:
                    props[(rel + tail[:dot], tail[dot + 1 :])] = None
                    continue
                where = rel + tail
                prims[where] = None
                if tail and not _PRIM_FIELDS.isdisjoint(layer.GetPrimAtPath(path).ListInfoKeys()):
                    levels[where] = None
        for where in prims:
            diff = self._compare_prims(where, where == rel or where in levels)
            if diff is not None:
                return diff
        for where, name in props:
            diff = self._compare_property(where, name)
            if diff is not None:
                return diff
        for where in levels:  # an own arc, type or schema: its stack may hold specs of its own
            if self._prim(where) and self._prim0(where):
                diff = self._level(where)
                if diff is not None:
                    return diff
        return None

    def _compare_prims(self, rel, fields) -> Difference | None:
        """The prims at ``rel``: there in both environments, or holding no physics; and with the same type,
        schemas and activation where an own spec authors them (``fields``)."""
        prim, prim0 = self._prim(rel), self._prim0(rel)
        if not prim or not prim0:
            extra = prim or prim0
            if extra and _holds_physics(extra):
                where = "here only" if prim else f"only in {self.root0}, not here"
                return Difference(str(extra.GetPath()), None, f"a prim with physics exists {where}")
            return None
        if not fields:
            return None
        for what, get in (("prim type", Usd.Prim.GetTypeName), ("applied schemas", Usd.Prim.GetAppliedSchemas),
                          ("active", Usd.Prim.IsActive)):  # fmt: skip
            mine, theirs = get(prim), get(prim0)
            if list(mine) != list(theirs) if what == "applied schemas" else mine != theirs:
                return Difference(str(prim.GetPath()), None, f"{what} {mine} here, {theirs} in {prim0.GetPath()}")
        return None

    def _compare_property(self, rel, name) -> Difference | None:
        if not rel and name.startswith(("xformOp:", "xformOpOrder")):
            return None  # the environment's own place
        entry = self.memo.get((rel, name))
        if entry is None:  # whether the import reads it (by the first environment's schemas), and its value
            prim0 = self._prim0(rel)
            relevant = bool(prim0) and _relevant(prim0, name)
            value = _value(prim0.GetProperty(name), self.root0, self.root0) if relevant else None
            entry = self.memo[(rel, name)] = (relevant, value)
        relevant, theirs = entry
        if not relevant:
            return None
        prop = self.stage.GetPropertyAtPath(f"{self.text}{rel}.{name}")
        if not prop.GetPrim().IsActive():
            return None  # (compared as a prim)
        mine = _value(prop, self.root, self.root0)
        if mine != theirs and not self._moved_world_frame(prop.GetPrim(), name, mine, theirs):
            what = f"{name} is {_show(mine)} here, {_show(theirs)} in {self.text0}{rel}"
            return Difference(str(prop.GetPrim().GetPath()), name, what)
        return None

    def _moved_world_frame(self, prim, name, mine, theirs) -> bool:
        """A joint's frame on the world side (``physics:localPos0``/``localRot0`` without ``physics:body0``,
        or 1) is in world coordinates (UsdPhysics): an environment may author the first one's moved to its
        own place (the import attaches every world's joint there, whether or not it is authored)."""
        side = _WORLD_FRAME.get(name)
        if side is None or mine is _MISSING or theirs is _MISSING or mine[2] or theirs[2]:
            return False
        joint = UsdPhysics.Joint(prim)
        if not joint or (joint.GetBody0Rel() if side == 0 else joint.GetBody1Rel()).GetTargets():
            return False
        m = self.relative
        if name.startswith("physics:localPos"):
            moved = np.append(np.array(theirs[1], dtype=np.float64), 1.0) @ m
            scale = max(1.0, float(np.abs(moved[:3]).max()))
            return bool(np.allclose(np.array(mine[1], dtype=np.float64), moved[:3], atol=1e-6 * scale))
        q_rel = matrix_to_quat(m[:3, :3].T)
        q = quat_multiply(q_rel, gf_to_xyzw(theirs[1]))
        q_mine = gf_to_xyzw(mine[1])
        return bool(abs(abs(float(np.dot(q, q_mine))) - 1.0) < 1e-6)


_WORLD_FRAME = {"physics:localPos0": 0, "physics:localRot0": 0, "physics:localPos1": 1, "physics:localRot1": 1}
_MISSING = ("<not authored>",)


def _value(prop, root, root0):
    """The composed value of property ``prop`` (relationship targets relative to the environment), with
    its time samples; a tuple for comparing."""
    if not prop:
        return _MISSING
    if isinstance(prop, Usd.Relationship):
        return ("targets", tuple(str(t.ReplacePrefix(root, root0)) for t in prop.GetTargets()))
    samples = prop.GetTimeSamples()
    return ("value", prop.Get(), tuple(samples), tuple(prop.Get(t) for t in samples))


def _show(value) -> str:
    if value is _MISSING:
        return "not authored"
    if value[0] == "targets":
        return f"[{', '.join(value[1])}]"
    text = repr(value[1])
    return (text[:80] + "...") if len(text) > 80 else text + (f" (+{len(value[2])} time samples)" if value[2] else "")


_PHYSICS_PREFIXES = ("Physics", "Physx", "Newton", "Mjc")


def _holds_physics(prim) -> bool:
    for p in Usd.PrimRange(prim, Usd.TraverseInstanceProxies()):
        if str(p.GetTypeName()).startswith(_PHYSICS_PREFIXES):
            return True
        if any(api.startswith(_PHYSICS_PREFIXES) for api in p.GetAppliedSchemas()):
            return True
    return False


# ---------------------------------------------------------------- references across environments
def check_references(stage: Usd.Stage, envs: Environments, paths, file=None) -> None:
    """The prims ``paths`` (the physics prims imported: the first environment's and those outside the
    environments) must not tie environments together: a prim of the first environment may target prims of
    its own environment only; a prim outside may target prims inside environments only if it targets the
    same ones (relative to each) in every environment (a collision group of every environment's robot),
    since each world gets the outside prim's copy for its own environment.

    Raises:
        UsdInputError: naming the prim, the relationship and a target.
    """
    n = len(envs)
    for path in paths:
        prim = stage.GetPrimAtPath(path)
        if not prim:
            continue
        home = envs.world_of(str(path))
        for rel in prim.GetRelationships():
            targets = rel.GetTargets()
            inside = {}
            for t in targets:
                w = envs.world_of(str(t))
                if w is not None:
                    inside.setdefault(w, set()).add(str(t)[len(envs.paths[w]) :])
            if not inside:
                continue
            if home is not None:
                other = next((w for w in inside if w != home), None)
                if other is not None:
                    raise UsdInputError(
                        f"targets {envs.paths[other]}{sorted(inside[other])[0]}, in another environment: "
                        "environments are replicated from the first one and must not refer to each other",
                        file=file, prim=str(path), attribute=rel.GetName(),
                    )  # fmt: skip
                continue
            same = len(inside) == n and all(v == inside[0] for v in inside.values())
            if not same:
                w = min(inside)
                raise UsdInputError(
                    f"targets {envs.paths[w]}{sorted(inside[w])[0]} but not the same prim of every environment: "
                    "prims outside the environments apply to all of them alike (author it inside the "
                    f"environment, or target {envs.root})",
                    file=file, prim=str(path), attribute=rel.GetName(),
                )  # fmt: skip


def replicate_environments(builder, stage, descs, typed, result):
    """One world per environment: the builder (the first environment and what lies outside) replicated,
    each world's copy of the first environment placed and labelled as its own environment."""
    envs = result.environments
    imported = [str(p) for entries in descs.values() for p, _ in entries]
    imported += [str(prim.GetPath()) for key in MJC_TYPED + ("MjcKeyframe",) for prim in typed[key]]
    check_references(stage, envs, imported, result.file)
    for path, b in result.body_index.items():
        if not envs.local(path) and not builder.body_kinematic[b]:
            result.diagnostics.add(
                "rigid body outside the environments: every world simulates its own copy (world 0's is written)",
                path,
            )
    for path in builder.particle_groups:
        if not envs.local(path):
            result.diagnostics.add("grains or deformable body outside the environments: every world simulates its own "
                                   "copy (world 0's is written)", path)  # fmt: skip
    n_before = {"body": builder.body_count, "shape": builder.shape_count, "joint": builder.joint_count,
                "distance": len(builder.distance_label)}  # fmt: skip
    builder.replicate(len(envs), placements=envs.placements, local=envs.local, relabel=envs.relabel)
    for index, kind in ((result.body_index, "body"), (result.shape_index, "shape"), (result.joint_index, "joint"),
                        (result.distance_index, "distance")):  # fmt: skip
        first = [(p, i) for p, i in index.items() if envs.local(p)]
        for w in range(1, len(envs)):
            for p, i in first:
                index[envs.relabel(p, w)] = i + w * n_before[kind]
    for runs in (result.grains.groups, result.deformables.cloth, result.deformables.volumes):  # (each env's own prims)
        copies = [envs.relabel(p, w) for p in runs if envs.local(p) for w in range(1, len(envs))]
        runs.update({p: builder.particle_groups[p] for p in copies})
