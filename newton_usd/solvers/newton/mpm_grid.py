"""Where Newton's implicit MPM grid cannot hold the grains: a grain outside a fixed grid, a sparse grid past its
capacity. Either ends the run (:class:`~newton_usd.simulation.bounds.BlowUpCheck` asks after each frame it checks),
naming the grains' prim, instead of the grains going on wrong.

``SolverImplicitMPM.Config.grid_type`` (``newton:mpm:gridType``) says how Newton grids the grains each step:

- ``"sparse"`` (the default): the cells around the grains, made anew each step: no bounds to leave. With
  ``max_active_cell_count`` > 0 (``newton:mpm:maxActiveCellCount``) and no padding the grid is rebuilt in place
  within that many cells; more cells than that is a failed rebuild, which Newton records on the device
  (``check_sparse_grid_rebuild_status`` raises it).
- ``"dense"``: the box around the grains, ``grid_padding`` voxels beyond them, made anew each step: no bounds to
  leave.
- ``"fixed"``: that box made once, around the grains where they start (``grid_padding`` voxels beyond them), and kept:
  a grain that leaves it is clamped to the boundary cells (Newton's lookups), so it moves wrong without a word.
"""

from __future__ import annotations

import numpy as np

TOLERANCE = 1e-6
"""m: a grain this far beyond the grid's face is still on it (the bounds are float32)."""


def fixed_bounds(newton_solver):
    """``(lo, hi)`` (m, numpy) of a fixed grid, as Newton made it; None for the other grid types (or a grid not made
    yet)."""
    if getattr(newton_solver, "grid_type", None) != "fixed":
        return None
    grid = getattr(getattr(newton_solver, "_scratchpad", None), "grid", None)
    lo, hi = getattr(grid, "bounds_lo", None), getattr(grid, "bounds_hi", None)
    if lo is None or hi is None:
        return None
    return np.array([float(x) for x in lo]), np.array([float(x) for x in hi])


def off_grid(newton_solver, positions, config) -> tuple[int | None, str] | None:
    """The first grain of ``positions`` (numpy ``(n, 3)``, m) that Newton's grid cannot hold, and what is wrong:
    ``(row, message)``; ``(None, message)`` where the grid as a whole failed (a sparse grid past its capacity); None
    where every grain is on the grid."""
    bounds = fixed_bounds(newton_solver)
    if bounds is not None:
        lo, hi = bounds
        p = np.asarray(positions, dtype=np.float64)[:, :3]
        outside = ((p < lo - TOLERANCE) | (p > hi + TOLERANCE)).any(axis=1)
        if outside.any():
            row = int(np.argmax(outside))
            at = ", ".join(f"{x:.3g}" for x in p[row])
            box = f"({', '.join(f'{x:.3g}' for x in lo)}) .. ({', '.join(f'{x:.3g}' for x in hi)}) m"
            return row, (
                f"grain at ({at}) m left the MPM grid {box} (newton:mpm:gridType fixed: made once around the grains "
                f"where they start, newton:mpm:gridPadding {config.grid_padding} voxels of {config.voxel_size:g} m "
                "beyond them; outside it Newton clamps a grain's grid lookups to the boundary cells); pad it more, or "
                "let the grid follow the grains (gridType sparse or dense)"
            )
    check = getattr(newton_solver, "check_sparse_grid_rebuild_status", None)  # (no-op but for a rebuilt sparse grid)
    if check is not None:
        try:
            check()
        except RuntimeError as e:
            return None, (
                f"the MPM grid outgrew newton:mpm:maxActiveCellCount {config.max_active_cell_count} cells "
                f"(Newton: {str(e).rstrip('.')}); author more cells, or -1 for a grid made anew each step"
            )
    return None
