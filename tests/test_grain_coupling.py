"""Rigid bodies and grains coupled two ways (solvers/newton/grain_coupling.py): a box dropped into a small sand bed
under the implicit_mpm engine (its bodies stepped by xpbd or featherstone) slows and stops in it and pushes the
grains under it, as Newton 1.8's own coupled loop (its example_mpm_twoway_coupling's scheme, same step) runs it."""

from __future__ import annotations

import newton
import numpy as np
import pytest
import warp as wp
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade
from test_granular import sand_stage

from newton_usd.errors import NewtonUsdError
from newton_usd.sim import Simulation
from newton_usd.solvers.newton.grain_coupling import GrainCoupling

FPS, SUBSTEPS, FRAMES = 30, 4, 18
HALF, MASS, DROP = 0.1, 8.0, 0.35  # m: the box's half side; kg; m: its centre's start height (sand top: 0.2 m)
DENSITY = MASS / (2 * HALF) ** 3  # kg/m^3: Newton's box of that mass (its inertia too)


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


def newton_own_coupled_run(path, steps: int, dt: float):
    """Newton 1.8's own loop, its two-way coupling example's scheme with one rigid step (XPBD) per MPM step of
    ``dt``: the sand from its add_usd of the stage, the box and ground built as the stage authors them. Returns the
    box's heights after each step and the grains' positions."""
    sand_builder = newton.ModelBuilder()
    newton.solvers.SolverImplicitMPM.register_custom_attributes(sand_builder)
    stage = Usd.Stage.Open(str(path))
    result = sand_builder.add_usd(stage)
    config = newton.solvers.SolverImplicitMPM.Config.create_from_usd(stage.GetPrimAtPath(result["particle_scene_path"]))
    sand_model = sand_builder.finalize(device="cpu")
    builder = newton.ModelBuilder()
    builder.default_shape_cfg.mu = 0.5
    body = builder.add_body(xform=wp.transform(wp.vec3(0.0, 0.0, DROP), wp.quat_identity()))
    builder.add_shape_box(body, hx=HALF, hy=HALF, hz=HALF, cfg=newton.ModelBuilder.ShapeConfig(mu=0.5, density=DENSITY))
    builder.add_ground_plane()
    model = builder.finalize(device="cpu")
    mpm = newton.solvers.SolverImplicitMPM(sand_model, config)
    mpm.setup_collider(model=model)
    collider_body = mpm.collider_body_index.numpy()
    rigid = newton.solvers.SolverXPBD(model)
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    s0, s1, control = model.state(), model.state(), model.control()
    sand = sand_model.state()
    sand.body_q, sand.body_qd = wp.empty_like(s0.body_q), wp.empty_like(s0.body_qd)
    forces = wp.zeros_like(s0.body_f)
    heights = []
    impulses = None
    for _ in range(steps):
        s0.clear_forces()
        if impulses is not None:
            imp, pos, ids = (a.numpy() for a in impulses)
            on_box = (ids >= 0) & (collider_body[np.maximum(ids, 0)] == body)  # (the box's collider nodes)
            force = imp[on_box] / dt
            com = s0.body_q.numpy()[0, :3]  # (the box's centre of mass: its origin)
            f = np.concatenate([force.sum(axis=0), np.cross(pos[on_box] - com, force).sum(axis=0)])
            s0.body_f.assign(f[None].astype(np.float32))
        forces.assign(s0.body_f)
        pipeline.collide(s0, contacts)
        rigid.step(s0, s1, control, contacts, dt)
        s0, s1 = s1, s0
        qd = s0.body_qd.numpy().copy()
        qd[0, :3] -= dt * forces.numpy()[0, :3] / MASS
        sand.body_q.assign(s0.body_q)
        sand.body_qd.assign(qd)
        mpm.step(sand, sand, None, None, dt)
        mpm.project_outside(sand, sand, dt)
        impulses = mpm.collect_collider_impulses(sand)
        heights.append(float(s0.body_q.numpy()[0, 2]))
    return np.array(heights), sand.particle_q.numpy()


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
    moved_q = sim.state.particle_q.numpy()
    moved = np.linalg.norm(moved_q - sim.model.particle_q.numpy(), axis=1)
    start = sim.model.particle_q.numpy()
    under = np.abs(start[:, :2]).max(axis=1) < HALF
    sim.close()
    theirs, grains = newton_own_coupled_run(src, FRAMES * SUBSTEPS, 1.0 / (FPS * SUBSTEPS))
    assert abs(heights[-1] - theirs[-1]) <= 0.02 * theirs[-1], (heights[-1], theirs[-1])
    np.testing.assert_allclose(heights, theirs[SUBSTEPS - 1 :: SUBSTEPS], atol=2e-3)  # (frame by frame)
    assert np.abs(grains - moved_q).max() < 5e-3  # (m: the grains where Newton's loop leaves them)
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
    with pytest.raises(NewtonUsdError, match="rigid_solver 'kamino' cannot be coupled"):
        Simulation.open(str(src), device="cpu", solver_options={"rigid_solver": "kamino"})


@pytest.mark.parametrize("engine", ["featherstone", "mujoco"])
def test_featherstone_and_mujoco_bodies_are_coupled_too(tmp_path, engine):
    """The box stepped by featherstone or C MuJoCo (the MPM scene's rigid_solver; MuJoCo: the grains' forces as its
    xfrc_applied) falls into the sand as under xpbd: as Newton's own coupled loop, its first frames (it touches the
    grains only: the rigid engines integrate it alike)."""
    src = box_in_sand(tmp_path / "box.usda")
    sim, heights = our_run(src, frames=6, solver_options={"rigid_solver": engine})
    assert sim.solver.rigid.name == engine
    sim.close()
    theirs, _ = newton_own_coupled_run(src, 6 * SUBSTEPS, 1.0 / (FPS * SUBSTEPS))
    np.testing.assert_allclose(heights, theirs[SUBSTEPS - 1 :: SUBSTEPS], atol=1e-3)
    assert heights[-1] > DROP - 0.5 * 9.81 * (6 / FPS) ** 2 + 0.01  # (held up by the grains: above free fall)


def test_the_sample_box_plows_into_the_sand(samples):
    """sample_stages/granular/box_through_sand.usda: the thrown box slows in the sand (6 of its 60 frames), the grains
    it hits are pushed and written onto the points."""
    sim = Simulation.open(str(samples / "granular" / "box_through_sand.usda"), device="cpu")
    assert (sim.solver.name, sim.solver.rigid.name, sim.substeps) == ("implicit_mpm", "xpbd", 4)
    sim.run(6)
    v = np.linalg.norm(sim.state.body_qd.numpy()[0, :3])
    assert v < 0.5 * np.hypot(2.0, 1.0 + 9.81 * 6 / 30), v  # (thrown at 2.2 m/s, falling: well below half that)
    moved = np.linalg.norm(sim.state.particle_q.numpy() - sim.model.particle_q.numpy(), axis=1)
    assert moved.max() > 0.03
    points = sim.stage.GetPrimAtPath("/World/SandBed").GetAttribute("points")
    assert len(points.GetTimeSamples()) == 7
    sim.close()


def test_a_reset_runs_the_box_and_grains_over_alike(tmp_path):
    """After a reset the box falls into the grains as the first time: no grain impulse and no MPM history (strains,
    warm starts) carried over."""
    sim = Simulation.open(str(box_in_sand(tmp_path / "box.usda", side=4, layers=2)), fps=FPS, substeps=2, device="cpu")
    runs = []
    for _ in range(2):
        heights = []
        for _ in range(5):
            sim.step_frame()
            heights.append(float(sim.state.body_q.numpy()[0, 2]))
        runs.append((heights, sim.state.particle_q.numpy().copy()))
        sim.reset()
    assert runs[0][0][-1] < DROP - 0.01  # (it fell)
    np.testing.assert_allclose(runs[1][0], runs[0][0], atol=1e-6)
    np.testing.assert_allclose(runs[1][1], runs[0][1], atol=1e-6)
    sim.close()


@pytest.mark.gpu
def test_the_box_falls_into_the_sand_on_cuda_as_on_the_cpu(tmp_path):
    """On CUDA (xpbd and Newton's MPM on the device, the coupling's kernels there): as on the CPU (not run on a machine
    without a GPU)."""
    src = box_in_sand(tmp_path / "box.usda")
    runs = {}
    for device in ("cpu", "cuda"):
        sim = Simulation.open(str(src), fps=FPS, substeps=SUBSTEPS, device=device)
        heights = []
        for _ in range(6):
            sim.step_frame()
            heights.append(float(sim.state.body_q.numpy()[0, 2]))
        runs[device] = np.array(heights)
        sim.close()
    np.testing.assert_allclose(runs["cuda"], runs["cpu"], atol=2e-3)
