"""The reference floor: a grid on the ground plane (perpendicular to the up axis) under a stage that has no
ground of its own, so that motion is seen against something.

A stage *has a ground* when a part that does not move (drawn, or a collider) is flat, horizontal, at least as
wide as the bodies spread at the first frame, and under them: a ``Plane``, a slab, a floor mesh. Otherwise the
grid lies at the lowest height anything reaches during the recording (its colliders too), or at 0 when nothing
goes below 0: the bodies never pass through it, and a body that falls without a ground is seen coming down
toward it. Its cells are a power of ten about the bodies' size (1 m for a metre-sized robot), with a darker
line every ten cells, and it reaches far enough to fill the view to the horizon.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .camera import bounds_at, framed_parts, part_bounds
from .deforming import cloud_bounds
from .scene import Scene

CELLS = 10
"""Cells per section (a darker line every CELLS cells)."""
FLOOR_RGB = (0.90, 0.925, 0.96)
CELL_RGB = (0.75, 0.79, 0.86)
SECTION_RGB = (0.52, 0.58, 0.70)


@dataclass
class Floor:
    """The grid to draw.

    Attributes:
        height: Its height (m, Z up).
        center: (x, y) of its centre, on a section line.
        half: Half its width (m), a whole number of sections.
        cell: The size of a cell (m).
    """

    height: float
    center: tuple
    half: float
    cell: float

    @property
    def section(self) -> float:
        return self.cell * CELLS


def ground_of(scene: Scene) -> int | None:
    """The index of the part that is the stage's own ground (see the module's docstring), or None."""
    moving = scene.moving()
    still = [i for i in range(len(scene.parts)) if not moving[i]]
    lo, hi = part_bounds(scene, still, 0)
    size = hi - lo
    width = np.minimum(size[:, 0], size[:, 1])
    flat = np.isfinite(width) & (width > 0) & (size[:, 2] <= 0.1 * width)
    if not flat.any():
        return None
    bodies = np.asarray(framed_parts(scene))
    b_lo, b_hi = part_bounds(scene, bodies, 0)
    candidates = np.flatnonzero(flat)
    for k in candidates[np.argsort(-width[candidates], kind="stable")][:8]:  # the widest flat parts that stay
        others = bodies != still[k]
        if others.any():
            o_lo, o_hi = b_lo[others].min(axis=0), b_hi[others].max(axis=0)
            spread = float(max(o_hi[0] - o_lo[0], o_hi[1] - o_lo[1]))
            below = o_lo[2] + 0.05 * max(float(np.linalg.norm(o_hi - o_lo)), 0.1)
        else:
            spread, below = 0.0, np.inf
        if width[k] >= spread and hi[k, 2] <= below:
            return still[k]
    return None


def floor(scene: Scene) -> Floor | None:
    """The grid to draw under ``scene``, or None where the stage has a ground of its own (or nothing drawn)."""
    if not (scene.visible() or scene.clouds) or ground_of(scene) is not None:
        return None
    bodies = framed_parts(scene)
    lo0, hi0 = _with_clouds(bounds_at(scene, bodies, 0), scene, 0)
    if not np.all(np.isfinite(lo0)):
        return None
    size = max(float(np.linalg.norm(hi0 - lo0)), 1e-3)
    cell = float(10.0 ** np.floor(np.log10(size)))
    section = cell * CELLS
    lo, hi = _with_clouds(scene.bounds(range(len(scene.parts))), scene)  # every part, colliders too, over the recording
    height = min(0.0, float(lo[2]))
    b_lo, b_hi = _with_clouds(scene.bounds(bodies), scene) if bodies else cloud_bounds(scene)
    reach = max(float(b_hi[0] - b_lo[0]), float(b_hi[1] - b_lo[1]), float(b_hi[2]) - height, size)
    half = section * np.ceil(max(50.0 * cell, 20.0 * reach) / section)
    center = tuple(float(section * np.round(c / section)) for c in ((b_lo[:2] + b_hi[:2]) / 2))
    return Floor(height, center, float(half), cell)


def _with_clouds(bounds, scene, frames=None) -> tuple:
    """``bounds`` (lower, upper) and the points' at ``frames`` (default: all)."""
    if not scene.clouds:
        return bounds
    c_lo, c_hi = cloud_bounds(scene, frames)
    return np.minimum(bounds[0], c_lo), np.maximum(bounds[1], c_hi)


_TEXTURE = {}


def grid_texture(pixels: int = 1000) -> np.ndarray:
    """(pixels, pixels, 3) uint8: one section of the grid (its CELLS x CELLS cells), to be repeated."""
    if pixels not in _TEXTURE:
        image = np.empty((pixels, pixels, 3), np.uint8)
        image[:] = np.round(np.array(FLOOR_RGB) * 255)
        step = pixels // CELLS
        cell = np.round(np.array(CELL_RGB) * 255)
        for k in range(step, pixels, step):
            image[k - 1 : k + 1, :] = cell
            image[:, k - 1 : k + 1] = cell
        section = np.round(np.array(SECTION_RGB) * 255)
        edge = max(pixels // 160, 1)  # each side of the repeated texture's edge: a line twice that (1.2%)
        for band in (slice(0, edge), slice(pixels - edge, pixels)):
            image[band, :] = section
            image[:, band] = section
        _TEXTURE[pixels] = image
    return _TEXTURE[pixels]
