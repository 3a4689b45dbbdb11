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

from .camera import bounds_at, framed_parts
from .scene import Scene

CELLS = 10
"""Cells per section (a darker line every CELLS cells)."""
FLOOR_RGB = (0.90, 0.925, 0.96)
CELL_RGB = (0.64, 0.69, 0.78)
SECTION_RGB = (0.45, 0.52, 0.66)


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
    bodies = framed_parts(scene)
    for i in range(len(scene.parts)):
        if moving[i] or not len(scene.parts[i].vertices):
            continue
        lo, hi = bounds_at(scene, [i], 0)
        size = hi - lo
        others = [j for j in bodies if j != i]
        if others:
            b_lo, b_hi = bounds_at(scene, others, 0)
            spread = float(max(b_hi[0] - b_lo[0], b_hi[1] - b_lo[1]))
            below = b_lo[2] + 0.05 * max(float(np.linalg.norm(b_hi - b_lo)), 0.1)
        else:
            spread, below = 0.0, np.inf
        width = float(min(size[0], size[1]))
        if width > 0 and size[2] <= 0.1 * width and width >= spread and hi[2] <= below:
            return i
    return None


def floor(scene: Scene) -> Floor | None:
    """The grid to draw under ``scene``, or None where the stage has a ground of its own (or nothing drawn)."""
    if not scene.visible() or ground_of(scene) is not None:
        return None
    bodies = framed_parts(scene)
    lo0, hi0 = bounds_at(scene, bodies, 0)
    if not np.all(np.isfinite(lo0)):
        return None
    size = max(float(np.linalg.norm(hi0 - lo0)), 1e-3)
    cell = float(10.0 ** np.floor(np.log10(size)))
    section = cell * CELLS
    lo, hi = scene.bounds(range(len(scene.parts)))  # every part, colliders too, over the recording
    height = min(0.0, float(lo[2]))
    b_lo, b_hi = scene.bounds(bodies)
    reach = max(float(b_hi[0] - b_lo[0]), float(b_hi[1] - b_lo[1]), float(b_hi[2]) - height, size)
    half = section * np.ceil(max(50.0 * cell, 20.0 * reach) / section)
    center = tuple(float(section * np.round(c / section)) for c in ((b_lo[:2] + b_hi[:2]) / 2))
    return Floor(height, center, float(half), cell)


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
        edge = max(pixels // 330, 1)  # each side of the repeated texture's edge: a line twice that
        for band in (slice(0, edge), slice(pixels - edge, pixels)):
            image[band, :] = section
            image[:, band] = section
        _TEXTURE[pixels] = image
    return _TEXTURE[pixels]
