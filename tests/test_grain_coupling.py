"""Rigid bodies and grains coupled two ways (solvers/newton/grain_coupling.py): a box dropped into a small sand bed
under the implicit_mpm engine (its bodies stepped by xpbd or featherstone) slows and stops in it and pushes the
grains under it; bodies the engine does not couple are said, naming them."""

from __future__ import annotations

import numpy as np
import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade
from test_granular import sand_stage

from newton_usd.errors import NewtonUsdError
from newton_usd.sim import Simulation
from newton_usd.solvers.newton.grain_coupling import GrainCoupling

FPS, SUBSTEPS, FRAMES = 30, 4, 18
HALF, MASS, DROP = 0.1, 8.0, 0.35  # m: the box's half side; kg; m: its centre's start height (sand top: 0.2 m)


def box_in_sand(path, side=8, layers=4, owner=None):
    """A ``side`` x ``side`` x ``layers`` sand bed (5 cm grains) and a box above its middle (``owner``: the scene
    that simulates the box; None: the MPM scene's)."""
    src = sand_stage(path, side=side, layers=layers)
    stage = Usd.Stage.Open(str(src))
    box = UsdGeom.Cube.Define(stage, "/World/Box")
    box.CreateSizeAttr(2 * HALF)
    box.AddTranslateOp().Set(Gf.Vec3d(0, 0, DROP))
    UsdPhysics.CollisionAPI.Apply(box.GetPrim())
    body = UsdPhysics.RigidBodyAPI.Apply(box.GetPrim())
    UsdPhysics.MassAPI.Apply(box.GetPrim()).CreateMassAttr(MASS)
    UsdShade.MaterialBindingAPI.Apply(box.GetPrim()).Bind(
        UsdShade.Material(stage.GetPrimAtPath("/World/Floor")), materialPurpose="physics"
    )
    if owner is not None:
        UsdPhysics.Scene.Define(stage, owner)
        body.CreateSimulationOwnerRel().SetTargets([Sdf.Path(owner)])
    stage.Save()
    return src


def our_run(path, frames=FRAMES, **kw):
    sim = Simulation.open(str(path), fps=FPS, substeps=SUBSTEPS, device="cpu", **kw)
    heights = []
    for _ in range(frames):
        sim.step_frame()
        heights.append(float(sim.state.body_q.numpy()[0, 2]))
    return sim, np.array(heights)


def test_a_box_dropped_into_sand_slows_stops_and_pushes_the_grains(tmp_path):
    src = box_in_sand(tmp_path / "box.usda")
    sim, heights = our_run(src)
    assert sim.solver.name == "implicit_mpm" and sim.solver.rigid.name == "xpbd"
    assert isinstance(sim.solver.coupling, GrainCoupling)
    t = np.arange(1, FRAMES + 1) / FPS
    free = DROP - 0.5 * 9.81 * t**2  # (where it would be, falling freely: below the floor by the end)
    speed = abs(heights[-1] - heights[-2]) * FPS
    assert np.all(np.isfinite(heights)) and free[-1] < 0
    assert speed < 0.1 * 9.81 * t[-1], (heights, speed)  # (well below free fall's speed)
    assert HALF + 0.01 < heights[-1] < 0.2 + HALF, heights  # (above the floor, in or on the sand)
    moved = np.linalg.norm(sim.state.particle_q.numpy() - sim.model.particle_q.numpy(), axis=1)
    start = sim.model.particle_q.numpy()
    under = np.abs(start[:, :2]).max(axis=1) < HALF
    sim.close()
    bare = sand_stage(tmp_path / "bare.usda", side=8, layers=4)  # (the same bed without the box: it settles)
    alone = Simulation.open(str(bare), fps=FPS, substeps=SUBSTEPS, device="cpu")
    alone.run(FRAMES)
    settled = np.linalg.norm(alone.state.particle_q.numpy() - alone.model.particle_q.numpy(), axis=1)
    alone.close()
    bottom = under & (start[:, 2] < 0.05)  # (the layer on the floor: it hardly moves unless pushed)
    assert moved[under].mean() > 1.25 * settled[under].mean(), (moved[under].mean(), settled[under].mean())
    assert moved[bottom].mean() > 2 * settled[bottom].mean(), (moved[bottom].mean(), settled[bottom].mean())


def test_an_unknown_rigid_engine_is_refused(tmp_path):
    src = box_in_sand(tmp_path / "box.usda", side=2, layers=2)
    with pytest.raises(NewtonUsdError, match="rigid_solver 'mujoco' cannot be coupled"):
        Simulation.open(str(src), device="cpu", solver_options={"rigid_solver": "mujoco"})
