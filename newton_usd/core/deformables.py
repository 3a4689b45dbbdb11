"""Deformables in the builder: a cloth's or a soft volume's points as a run of particles (:mod:`.particles`), and
its elements (a cloth's triangles, a volume's tetrahedra) and material, which a solver that simulates them (Newton's
VBD) turns into its membrane, bending and volume elements."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Attachment:
    """A ``PhysicsAttachment``'s ties of a deformable's points to a rigid body or to the world (SI).

    Attributes:
        label: the attachment prim's path.
        particles: (n,) int64, the tied points (indices into the deformable's own points, as its elements').
        body: the rigid body they are tied to; -1: the world (the particles are pinned where they are).
        anchors: (n, 3), each particle's anchor in the body's frame (m); the world's: world points.
        stiffness: N/m (``inf``: a hard tie).
        damping: N*s/m (a hard tie ignores it).
        enabled: whether the ties act.
    """

    label: str
    particles: np.ndarray
    body: int
    anchors: np.ndarray
    stiffness: float = float("inf")
    damping: float = 0.0
    enabled: bool = True


@dataclass
class DeformableLinks:
    """What ties a deformable to the rest of the scene, read after the bodies and colliders (each cloth or volume
    record has one, :attr:`Cloth.links`).

    Attributes:
        attachments: its :class:`Attachment` records.
        filtered: ``(points, shapes)`` pairs that do not collide: (n,) indices into its points, and our shape indices
            (``PhysicsElementCollisionFilter``, ``physics:filteredPairs``).
        graphics: its graphics meshes (:class:`~newton_usd.core.skinning.GraphicsMesh`: they follow its particles).
    """

    attachments: list = field(default_factory=list)
    filtered: list = field(default_factory=list)
    graphics: list = field(default_factory=list)


@dataclass
class Cloth:
    """One cloth prim of the builder (SI).

    Attributes:
        label: the prim's path (its particles' group).
        first: its first particle; its triangles' indices are relative to it.
        triangles: (n, 3) int64, the triangles' particles (counterclockwise seen from the outside).
        stretch_stiffness: N/m, the membrane's stretch stiffness (``E h / (1 - nu^2)``); None: the solver's default.
        bend_stiffness: N*m, the bending stiffness (``E h^3 / (12 (1 - nu^2))``); None: the solver's default.
        links: its attachments, collision filters and graphics meshes (:class:`DeformableLinks`).
        rest: (n, 3) its points' rest shape (m, world axes, any origin: only differences matter); None: where its
            points start.
        flat_bending: its bending edges rest flat (the proposal's ``restBendAnglesDefault`` fallback), else at the
            rest shape's angles.
        rest_triangles: (n, 3) each triangle's points in :attr:`rest`, for a rest shape of its own topology (panels:
            ``rest`` has a row per rest point then); None: ``rest`` is its points' (or None).
        bend_angles: ``{(face, face): radians}``, the rest angle of the bending edges between two of its faces (over
            the default); faces: (n,) each triangle's face, where there are such angles.
    """

    label: str
    first: int
    triangles: np.ndarray
    stretch_stiffness: float | None
    bend_stiffness: float | None
    links: DeformableLinks = field(default_factory=DeformableLinks)
    rest: np.ndarray | None = None
    flat_bending: bool = True
    rest_triangles: np.ndarray | None = None
    bend_angles: dict = field(default_factory=dict)
    faces: np.ndarray | None = None

    @property
    def global_triangles(self) -> np.ndarray:
        """The triangles' indices into the model's particles."""
        return self.triangles + self.first


def _elements(label: str, indices, width: int, n: int, kind: str) -> np.ndarray:
    """``indices`` as ``(m, width)`` int64 indices into a prim's ``n`` points; a ValueError where there are none or one
    is out of range."""
    elements = np.asarray(indices, dtype=np.int64).reshape(-1, width)
    if len(elements) == 0 or elements.min() < 0 or elements.max() >= n:
        raise ValueError(f"{label}: {kind} index {n} points out of range, or there are none")
    return elements


def add_cloth(builder, label: str, pos, vel, mass, radius, triangles, stretch_stiffness, bend_stiffness, *,
              rest=None, flat: bool = True, rest_triangles=None) -> Cloth:  # fmt: skip
    """Add the cloth prim ``label`` to ``builder``: its points as particles (world, m, m/s, kg, m) and its
    ``triangles`` ((n, 3) indices into its points), resting in the shape ``rest`` (None: ``pos``; with
    ``rest_triangles``, each triangle's rows of it), its bending edges ``flat`` or at the rest shape's angles. Returns
    its :class:`Cloth` record (in ``builder.cloth``)."""
    triangles = _elements(label, triangles, 3, len(pos), "triangles")
    first, _ = builder.add_particles(label, pos, vel, mass, radius)
    if rest_triangles is not None:
        rest_triangles = _elements(label, rest_triangles, 3, len(rest), "rest triangles")
        if len(rest_triangles) != len(triangles):
            raise ValueError(f"{label}: {len(rest_triangles)} rest triangles for {len(triangles)} triangles")
    rest = None if rest is None else np.asarray(rest, dtype=np.float64).reshape(-1 if rest_triangles is not None
                                                                               else len(pos), 3)  # fmt: skip
    cloth = Cloth(label, first, triangles, stretch_stiffness, bend_stiffness, rest=rest, flat_bending=flat,
                  rest_triangles=rest_triangles)  # fmt: skip
    builder.cloth.append(cloth)
    return cloth


@dataclass
class Volume:
    """One soft volume prim of the builder (SI).

    Attributes:
        label: the prim's path (its particles' group).
        first: its first particle; its tetrahedra's indices are relative to it.
        tetrahedra: (n, 4) int64, each of positive volume (the fourth point on the side the first three wind
            counterclockwise about).
        mu, lam: Pa, the Lame parameters of its material (``E / (2 (1 + nu))``, ``E nu / ((1 + nu)(1 - 2 nu))``);
            None: the solver's default.
        links: its attachments, collision filters and graphics meshes (:class:`DeformableLinks`).
        rest: (n, 3) its points' rest shape (as :attr:`Cloth.rest`); None: where its points start.
    """

    label: str
    first: int
    tetrahedra: np.ndarray
    mu: float | None
    lam: float | None
    links: DeformableLinks = field(default_factory=DeformableLinks)
    rest: np.ndarray | None = None


def add_volume(builder, label: str, pos, vel, mass, radius, tetrahedra, mu, lam, *, rest=None) -> Volume:
    """Add the soft volume prim ``label`` to ``builder``: its points as particles and its ``tetrahedra`` ((n, 4)
    indices into its points), resting in the shape ``rest`` (None: ``pos``). Returns its :class:`Volume` record (in
    ``builder.volumes``)."""
    tetrahedra = _elements(label, tetrahedra, 4, len(pos), "tetrahedra")
    first, _ = builder.add_particles(label, pos, vel, mass, radius)
    rest = None if rest is None else np.asarray(rest, dtype=np.float64).reshape(len(pos), 3)
    volume = Volume(label, first, tetrahedra, mu, lam, rest=rest)
    builder.volumes.append(volume)
    return volume


def triangle_indices(cloths) -> np.ndarray:
    """Every cloth's triangles as (n, 3) int32 indices into the model's particles."""
    if not cloths:
        return np.zeros((0, 3), dtype=np.int32)
    return np.concatenate([c.global_triangles for c in cloths]).astype(np.int32)


def tetrahedron_indices(volumes) -> np.ndarray:
    """Every soft volume's tetrahedra as (n, 4) int32 indices into the model's particles."""
    if not volumes:
        return np.zeros((0, 4), dtype=np.int32)
    return np.concatenate([v.tetrahedra + v.first for v in volumes]).astype(np.int32)
