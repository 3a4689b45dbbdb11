"""Grains that Newton's implicit MPM grid cannot hold end the run, naming their prim (issue 50): a grain that leaves a
fixed grid (Newton clamps it to the boundary cells without a word), a sparse grid past its reserved cells."""

from __future__ import annotations

import numpy as np
import pytest
from pxr import Gf, Vt
from test_granular import FPS, SUBSTEPS, VOXEL, sand_stage

from newton_usd.cli import main
from newton_usd.errors import SimulationError
from newton_usd.sim import Simulation

SIDE, LAYERS = 3, 2
N = SIDE * SIDE * LAYERS
FIXED = {"scene_newton:mpm:gridType": "fixed"}


def thrown(path, velocity=(3.0, 0.0, 0.0), **edits):
    """:func:`sand_stage`'s 3 x 3 x 2 block thrown at ``velocity`` (m/s; a tenth of a metre a frame along +X)."""
    return sand_stage(path, side=SIDE, layers=LAYERS, velocities=Vt.Vec3fArray([Gf.Vec3f(*velocity)] * N), **edits)


def test_a_grain_leaving_a_fixed_grid_ends_the_run_naming_its_prim(tmp_path, capsys):
    src = thrown(tmp_path / "fixed.usda", **FIXED)
    sim = Simulation.open(str(src), fps=FPS, substeps=SUBSTEPS, device="cpu")
    grid = sim.solver.newton_solver._scratchpad.grid  # (Newton's: the block's box, 0.2 x 0.2 x 0.1 m)
    box = [list(grid.bounds_lo), list(grid.bounds_hi)]
    np.testing.assert_allclose(box, [[-VOXEL, -VOXEL, 0], [VOXEL, VOXEL, VOXEL]], atol=1e-6)
    with pytest.raises(SimulationError) as e:
        sim.run(4)
    assert e.value.label == "/World/Pile" and e.value.frame in (1, 2), (e.value.frame, str(e.value))
    message = str(e.value)
    assert "left the MPM grid (-0.1, -0.1, 0) .. (0.1, 0.1, 0.1) m" in message and "gridPadding" in message
    x = sim.physics.state.particle_q.numpy()[:, 0].max()
    assert x > VOXEL  # (it did leave)
    sim.close()
    assert (
        main(
            [
                "run",
                str(src),
                "-q",
                "-n",
                "4",
                "--substeps",
                str(SUBSTEPS),
                "--fps",
                str(FPS),
                "-o",
                str(tmp_path / "out.usda"),
            ]
        )
        == 3
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "/World/Pile" in err[0] and "left the MPM grid" in err[0], err


def test_a_padded_fixed_grid_or_a_sparse_one_holds_the_thrown_grains(tmp_path):
    for name, edits in (("padded", {**FIXED, "scene_newton:mpm:gridPadding": 6}), ("sparse", {})):
        sim = Simulation.open(str(thrown(tmp_path / f"{name}.usda", **edits)), fps=FPS, substeps=SUBSTEPS, device="cpu")
        sim.run(4)
        assert sim.physics.state.particle_q.numpy()[:, 0].min() > 0.2, name  # (the whole block 0.3 m along)
        sim.close()


def test_a_sparse_grid_past_its_cells_ends_the_run_naming_the_grains(tmp_path, device):
    spread = [Gf.Vec3f(*(8.0 * np.array([np.cos(i), np.sin(i), 0.5]))) for i in range(N)]  # (apart, 8 m/s)
    src = sand_stage(tmp_path / "capped.usda", side=SIDE, layers=LAYERS, velocities=Vt.Vec3fArray(spread))
    sim = Simulation.open(str(src), fps=FPS, substeps=SUBSTEPS, device=device,
                          solver_options={"max_active_cell_count": 8})  # fmt: skip
    with pytest.raises(SimulationError, match=r"outgrew newton:mpm:maxActiveCellCount 8 cells") as e:
        sim.run(6)
    assert e.value.label == "/World/Pile"
    sim.close()
