"""ParticleView (newton_usd.selection): deformables' and grains' points and velocities by prim pattern, read and
written as Warp arrays in SI; a write goes into the State and the next frame runs from it."""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp
from pxr import Gf, Sdf, Usd, UsdGeom
from test_deformables import FPS, SIDE, SUBSTEPS, cloth_stage
from test_granular import sand_stage

from newton_usd.errors import NewtonUsdError
from newton_usd.selection import ParticleView, SimulationView
from newton_usd.sim import Simulation


def two_cloths(path, meters_per_unit=1.0):
    """:func:`cloth_stage`'s cloth and a copy of it 2 m along +Y (``/World/Cloth2``), no box."""
    cloth_stage(path, meters_per_unit, box=False)
    layer = Sdf.Layer.FindOrOpen(str(path))
    Sdf.CopySpec(layer, "/World/Cloth", layer, "/World/Cloth2")
    layer.Save()
    stage = Usd.Stage.Open(str(path))
    UsdGeom.Xformable(stage.GetPrimAtPath("/World/Cloth2")).AddTranslateOp().Set(Gf.Vec3d(0, 2.0 / meters_per_unit, 0))
    stage.Save()
    return str(path)


def test_read_set_step_read_of_two_cloths_in_centimetres(tmp_path, device):
    sim = Simulation.open(two_cloths(tmp_path / "cloths.usda", 0.01), fps=FPS, substeps=SUBSTEPS, device=device)
    view = ParticleView(sim, "/World/Cloth*")
    assert view.count == 2 and view.prim_paths == ["/World/Cloth", "/World/Cloth2"]
    assert view.particle_paths == [["/World/Cloth/sim"], ["/World/Cloth2/sim"]] and view.point_count == SIDE * SIDE
    assert list(view.worlds) == [0, 0]
    q = view.get_positions()
    assert isinstance(q, wp.array) and q.shape == (2, SIDE * SIDE, 3) and q.device == sim.model.device
    q = q.numpy()
    np.testing.assert_allclose(q[:, :, 2], 0.5, atol=1e-6)  # (SI: the cloth 50 cm up is 0.5 m up)
    np.testing.assert_allclose(q[1, :, 1] - q[0, :, 1], 2.0, atol=1e-6)
    np.testing.assert_allclose(view.points_to_stage(q)[:, :, 2], 50.0, rtol=1e-6)  # (and back in stage units)
    np.testing.assert_allclose(view.get_masses().numpy().sum(axis=1), 250.0 * 0.64 * 0.004, rtol=1e-4)
    # lift the second cloth 1 m and throw it up at 2 m/s; the first is not written
    lifted = q[1] + np.array([0.0, 0.0, 1.0])
    view.set_positions(lifted[None], indices=[1])
    view.set_velocities(np.tile([0.0, 0.0, 2.0], (1, SIDE * SIDE, 1)), indices=np.array([1]))
    np.testing.assert_allclose(view.get_positions().numpy()[1], lifted, atol=1e-6)
    np.testing.assert_allclose(view.get_positions().numpy()[0], q[0])
    sim.step_frame()
    after = view.get_positions().numpy()
    dt = 1.0 / FPS
    rise = 2.0 * dt - 0.5 * 9.81 * dt**2  # (about 6 cm: the cloth's own stretch is far less)
    fall = -0.5 * 9.81 * dt**2
    np.testing.assert_allclose(after[1, :, 2].mean(), 1.5 + rise, atol=2e-3)
    np.testing.assert_allclose(after[0, :, 2].mean(), 0.5 + fall, atol=2e-3)
    np.testing.assert_allclose(view.get_velocities().numpy()[1, :, 2].mean(), 2.0 - 9.81 * dt, atol=5e-2)
    # the frame written onto the stage shows it, in the prim's own space and centimetres
    attr = sim.stage.GetPrimAtPath("/World/Cloth2/sim").GetAttribute("points")
    written = np.array(attr.Get(attr.GetTimeSamples()[-1]))
    np.testing.assert_allclose(written[:, 2].mean(), 100.0 * (1.5 + rise) - 50.0, atol=0.2)  # (its translate: 50 cm)
    sim.close()


def test_grains_are_thrown_by_their_velocities(tmp_path):
    src = sand_stage(tmp_path / "pile.usda", side=3, layers=2)
    sim = Simulation.open(str(src), fps=FPS, substeps=SUBSTEPS, device="cpu")
    view = SimulationView(sim).create_particle_view("/World/Pile")
    assert view.count == 1 and view.point_count == 18
    start = view.get_positions().numpy()
    np.testing.assert_array_equal(start[0], sim.model.particle_q.numpy())
    v = np.zeros((1, 18, 3), dtype=np.float32)
    v[..., 0] = 3.0  # (3 m/s along +X, a tenth of a metre a frame)
    view.set_velocities(wp.array(v, dtype=wp.float32))
    sim.step_frame()
    moved = view.get_positions().numpy() - start
    assert 0.07 < moved[0, :, 0].mean() < 0.11, moved[0, :, 0].mean()  # (friction with the floor slows it)
    sim.close()


def test_patterns_that_match_no_particles_or_rows_that_differ_say_so(tmp_path):
    path = two_cloths(tmp_path / "cloths.usda")
    stage = Usd.Stage.Open(path)
    stage.RemovePrim("/World/Cloth2/sim")  # (a smaller cloth in its place: 4 points)
    mesh = UsdGeom.Mesh.Define(stage, "/World/Cloth2/sim")
    mesh.CreatePointsAttr([(0, 0, 1), (0.1, 0, 1), (0.1, 0.1, 1), (0, 0.1, 1)])
    mesh.CreateFaceVertexCountsAttr([4])
    mesh.CreateFaceVertexIndicesAttr([0, 1, 2, 3])
    mesh.GetPrim().AddAppliedSchema("PhysicsSurfaceDeformableSimAPI")
    stage.Save()
    sim = Simulation.open(path, fps=FPS, substeps=SUBSTEPS, device="cpu", live=False)
    with pytest.raises(NewtonUsdError, match=r"no prim matches '/World/Box\*' among the model's particle prims"):
        ParticleView(sim, "/World/Box*")
    with pytest.raises(NewtonUsdError, match=r"different numbers of points \(/World/Cloth: 64, /World/Cloth2: 4\)"):
        ParticleView(sim, "/World/Cloth*")
    view = ParticleView(sim, "/World/Cloth2/sim")
    assert view.get_positions().shape == (1, 4, 3)
    with pytest.raises(NewtonUsdError, match="no colliders"):
        view.get_friction_coefficients()
    sim.close()


def test_a_row_per_world_of_a_replicated_cloth(tmp_path):
    """worlds=3: a row per world of the one cloth prim; a write into world 1's row moves world 1's cloth only."""
    sim = Simulation.open(cloth_stage(tmp_path / "cloth.usda", box=False), fps=FPS, substeps=SUBSTEPS, worlds=3)
    view = ParticleView(sim, "/World/Cloth")
    assert view.count == 3 and list(view.worlds) == [0, 1, 2] and view.prim_paths == ["/World/Cloth"] * 3
    assert view.get_positions().shape == (3, SIDE * SIDE, 3)
    view.set_velocities(np.tile([0.0, 0.0, 5.0], (1, SIDE * SIDE, 1)), indices=[1])
    sim.step_frame()
    z = view.get_positions().numpy()[:, :, 2].mean(axis=1)
    assert z[1] > z[0] + 0.15 and z[0] == pytest.approx(z[2], abs=1e-6), z  # (world 1 thrown up, 0 and 2 alike)
    sim.close()


def test_a_row_per_environment_of_cloths_under_env_root(tmp_path):
    """env_root: each environment's cloth its own prim and world; a row per environment, in natural order; a write into
    env_1's row moves env_1's cloth only, and moving env_1's cloth prim by hand moves it alone."""
    from test_deformable_worlds import env_cloth_stage  # noqa: PLC0415

    path = env_cloth_stage(tmp_path / "envs.usda")
    sim = Simulation.open(path, fps=FPS, substeps=SUBSTEPS, device="cpu", env_root="/World/envs")
    view = ParticleView(sim, "/World/envs/env_*/Cloth")
    assert view.prim_paths == ["/World/envs/env_0/Cloth", "/World/envs/env_1/Cloth"] and list(view.worlds) == [0, 1]
    assert view.particle_paths == [["/World/envs/env_0/Cloth/sim"], ["/World/envs/env_1/Cloth/sim"]]
    q = view.get_positions().numpy()
    np.testing.assert_allclose(q[1] - q[0], np.tile([2.0, 0.0, 0.0], (SIDE * SIDE, 1)), atol=1e-6)
    view.set_positions(q[1:] + [0.0, 0.0, 1.0], indices=[1])
    cloth = sim.stage.GetPrimAtPath("/World/envs/env_1/Cloth/sim")
    UsdGeom.Xformable(cloth).GetOrderedXformOps()[0].Set(Gf.Vec3d(0.05, 0.5, 0.5))  # (0.5 m along +Y)
    sim.step_frame()
    after = view.get_positions().numpy()
    assert after[1, :, 2].mean() > after[0, :, 2].mean() + 0.9  # (lifted 1 m: env_1's only)
    np.testing.assert_allclose(after[1, :, 1].mean() - after[0, :, 1].mean(), 0.5, atol=1e-3)  # (moved: env_1's only)
    sim.close()
