"""Deformables and grains in several worlds (issues 49, 50): ``worlds=N`` replicates a stage's cloth and grains, each
world's particles in Newton's world of their own (its ``particle_world``), so that worlds do not touch: every world
of a replicated stage runs as the stage alone does, and one world's perturbation leaves the others as they were.
World 0 is written onto the prims; with ``write_worlds="all"`` each other world's points onto its copy."""

from __future__ import annotations

import newton
import numpy as np
import pytest
from newton_loops import newton_loop, vbd_model
from pxr import Sdf, Usd, UsdGeom
from test_deformable_links import CORNERS, _rotate, attach, corner_points, element_filter, falling_box_stage
from test_deformables import FPS, ITERATIONS, SUBSTEPS, cloth_stage
from test_granular import sand_stage

from newton_usd.errors import NewtonUsdError
from newton_usd.sim import Simulation


def cloth_run(path, worlds, frames=8, kick=None, **kw):
    """``frames`` frames of the cloth stage in ``worlds`` worlds; ``kick``: world 1's particles start with this
    velocity added (m/s)."""
    sim = Simulation.open(path, fps=FPS, substeps=SUBSTEPS, solver_options={"iterations": ITERATIONS},
                          worlds=worlds, device="cpu", **kw)  # fmt: skip
    if kick is not None:
        lo, hi = sim.model.world_ranges(1)["particle"]
        qd = sim.physics.state.particle_qd.numpy()
        qd[lo:hi] += np.asarray(kick, dtype=np.float32)
        sim.physics.state.particle_qd.assign(qd)
    for _ in range(frames):
        sim.step_frame()
    return sim, sim.physics.state.particle_q.numpy()


def test_two_worlds_of_a_cloth_over_a_box_run_as_one_and_do_not_touch(tmp_path):
    path = cloth_stage(tmp_path / "cloth.usda")
    _, one = cloth_run(path, 1)
    sim, two = cloth_run(path, 2)
    n = len(one)
    model = sim.model
    assert (model.particle_count, model.tri_count) == (2 * n, 2 * len(sim.model.world_view(0).tri_indices))
    assert [(label, w) for label, _, _, w in model.particle_runs] == [("/World/Cloth/sim", 0), ("/World/Cloth/sim", 1)]
    np.testing.assert_array_equal(sim.solver.newton_model.particle_world.numpy(), np.repeat([0, 1], n))
    assert np.ptp(one[:, 2]) > 0.01  # (the cloth drapes over the box: it is not flat any more)
    np.testing.assert_allclose(two[:n], one, atol=1e-6)
    np.testing.assert_allclose(two[n:], one, atol=1e-6)
    view = model.world_view(1)  # (world 1's cloth on its own: its rows, its triangles from 0)
    np.testing.assert_array_equal(view.particle_q.numpy(), model.particle_q.numpy()[n:])
    np.testing.assert_array_equal(view.tri_indices.numpy(), model.world_view(0).tri_indices.numpy())
    _, kicked = cloth_run(path, 2, kick=(0.0, 0.0, 3.0))  # (world 1's cloth thrown up: world 0's as before)
    np.testing.assert_allclose(kicked[:n], one, atol=1e-6)
    assert np.abs(kicked[n:] - one).max() > 0.1
    sim.reset()
    np.testing.assert_array_equal(sim.physics.state.particle_q.numpy(), model.particle_q.numpy())


def test_every_world_is_written_onto_its_copy_of_the_environment(tmp_path):
    path = cloth_stage(tmp_path / "copies.usda")
    sim, q = cloth_run(path, 2, frames=2, kick=(0.0, 0.0, 3.0), write_worlds="all")
    n = len(q) // 2
    stage, t = sim.stage, sim.time_code
    source = stage.GetPrimAtPath("/World/Cloth/sim")
    copy = stage.GetPrimAtPath("/World_world1/Cloth/sim")
    assert copy and not copy.HasAPI("PhysicsSurfaceDeformableSimAPI")  # (a picture of world 1, not simulated)

    def world_points(prim):  # (the prim's written points placed by its transform: m, Z up stage)
        local = np.array(UsdGeom.Mesh(prim).GetPointsAttr().Get(t), dtype=np.float64)
        m = np.array(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default()))
        return local @ m[:3, :3] + m[3, :3]

    np.testing.assert_allclose(world_points(source), q[:n], atol=1e-5)
    offset = np.array(stage.GetPrimAtPath("/World_world1").GetAttribute("xformOp:translate:worldOffset").Get())
    assert np.linalg.norm(offset) > 0.5  # (shown beside world 0, where it is simulated plus its copy's offset)
    np.testing.assert_allclose(world_points(copy), q[n:] + offset, atol=1e-5)


def newton_replicated(path, worlds, frames, substeps, grains=False) -> np.ndarray:
    """Newton 1.8's own loop on ``worlds`` copies of the stage (``ModelBuilder.replicate`` of its ``add_usd``, a world
    each): VBD with its collision pipeline (cloth), or implicit MPM on separate worlds' grids (``grains``)."""
    one, builder = newton.ModelBuilder(), newton.ModelBuilder()
    if grains:
        for b in (one, builder):
            newton.solvers.SolverImplicitMPM.register_custom_attributes(b)
    stage = Usd.Stage.Open(str(path))
    result = one.add_usd(stage)
    builder.replicate(one, worlds)
    dt = 1.0 / (FPS * substeps)
    if grains:
        config = newton.solvers.SolverImplicitMPM.Config.create_from_usd(
            stage.GetPrimAtPath(result["particle_scene_path"])
        )
        config.separate_worlds = True
        model = builder.finalize(device="cpu")
        solver = newton.solvers.SolverImplicitMPM(model, config)
        s0, s1 = model.state(), model.state()
        for _ in range(frames * substeps):
            solver.step(s0, s1, None, None, dt)
            solver.project_outside(s1, s1, dt)
            s0, s1 = s1, s0
        return s0.particle_q.numpy()
    model, solver = vbd_model(builder, ITERATIONS)
    return newton_loop(model, solver, frames * substeps, dt).particle_q.numpy()


def test_worlds_of_cloth_and_grains_run_as_newtons_own_replicated_loop(tmp_path):
    """Three worlds of the cloth over a box, two of a sand pile: every world's points as Newton's own loop puts them on
    its replicated builder (``ModelBuilder.replicate``: a world per copy)."""
    path = cloth_stage(tmp_path / "cloth.usda")
    _, ours = cloth_run(path, 3, frames=6)
    np.testing.assert_allclose(ours, newton_replicated(path, 3, 6, SUBSTEPS), atol=1e-4)  # (1 world's: 6e-5 m)
    path = sand_stage(tmp_path / "sand.usda", side=3, layers=2, **{"scene_newton:mpm:gridType": "dense"})
    _, ours = sand_run(path, 2)
    np.testing.assert_allclose(ours, newton_replicated(path, 2, 2, 2, grains=True), atol=1e-5)


def sand_run(path, worlds, frames=2, kick=None, **kw):
    sim = Simulation.open(str(path), fps=FPS, substeps=2, worlds=worlds, device="cpu", **kw)
    if kick is not None:
        lo, hi = sim.model.world_ranges(1)["particle"]
        qd = sim.physics.state.particle_qd.numpy()
        qd[lo:hi] += np.asarray(kick, dtype=np.float32)
        sim.physics.state.particle_qd.assign(qd)
    for _ in range(frames):
        sim.step_frame()
    return sim, sim.physics.state.particle_q.numpy()


def test_grains_in_two_worlds_on_grids_of_their_own(tmp_path):
    """Newton's implicit MPM isolates worlds (``separate_worlds``: a grid each), which we ask for with several
    worlds: each world's pile falls as the pile alone does, a kick to world 1's leaves world 0's as it was (on one
    shared grid it would not)."""
    path = sand_stage(tmp_path / "sand.usda", side=3, layers=2, **{"scene_newton:mpm:gridType": "dense"})
    _, one = sand_run(path, 1)
    sim, two = sand_run(path, 2)
    n = len(one)
    assert sim.solver.config.separate_worlds and sim.model.particle_count == 2 * n
    assert np.abs(one - sim.model.particle_q.numpy()[:n]).max() > 0.003  # (the grains moved)
    np.testing.assert_allclose(two[:n], one, atol=1e-6)
    np.testing.assert_allclose(two[n:], one, atol=1e-6)
    _, kicked = sand_run(path, 2, kick=(0.0, 1.0, 2.0))
    np.testing.assert_allclose(kicked[:n], one, atol=1e-6)
    assert np.abs(kicked[n:] - one).max() > 0.05
    _, shared = sand_run(path, 2, kick=(0.0, 1.0, 2.0), solver_options={"separate_worlds": False})
    assert np.abs(shared[:n] - one).max() > 1e-3  # (one grid for both: world 1's grains push world 0's)


def test_grains_in_worlds_on_a_sparse_cpu_grid_are_refused_in_one_line(tmp_path):
    path = sand_stage(tmp_path / "sparse.usda", side=3, layers=2)
    with pytest.raises(NewtonUsdError, match=r"/World/Pile: grains in 2 worlds on the CPU need a dense or fixed MPM"):
        Simulation.open(str(path), worlds=2, device="cpu")


def env_cloth_stage(path, envs=2, spacing=2.0):
    """The cloth over a box moved into ``/World/envs/env_0`` and authored again, identical, in env_1 .. (each
    environment ``spacing`` m further along x)."""
    src = cloth_stage(path)
    layer = Sdf.Layer.FindOrOpen(src)
    for prim_path in ("/World/envs", "/World/envs/env_0"):
        spec = Sdf.CreatePrimInLayer(layer, prim_path)
        spec.specifier, spec.typeName = Sdf.SpecifierDef, "Xform"
    for name in ("Box", "Cloth"):
        Sdf.CopySpec(layer, f"/World/{name}", layer, f"/World/envs/env_0/{name}")
        del layer.GetPrimAtPath("/World").nameChildren[name]
    stage = Usd.Stage.Open(layer)
    for k in range(1, envs):
        Sdf.CopySpec(layer, "/World/envs/env_0", layer, f"/World/envs/env_{k}")
        UsdGeom.Xformable(stage.GetPrimAtPath(f"/World/envs/env_{k}")).AddTranslateOp().Set((spacing * k, 0.0, 0.0))
    layer.Save()
    return src


def test_environments_with_cloth_import_as_worlds_each_written_onto_its_own(tmp_path):
    """env_* clones holding a cloth over a box: one world per environment, each cloth where its environment is,
    written onto its own prim; they run as the same stage run in one world without env_root (every cloth imported)."""
    path = env_cloth_stage(tmp_path / "envs.usda")
    flat, q_flat = cloth_run(path, 1, frames=6)  # (both environments' cloths in one world: 2 m apart, untouched)
    sim, q = cloth_run(path, 1, frames=6, env_root="/World/envs")
    n = len(q) // 2
    assert sim.worlds == 2 and sim.model.particle_count == flat.model.particle_count == 2 * n
    cloths = ["/World/envs/env_0/Cloth/sim", "/World/envs/env_1/Cloth/sim"]
    assert [(label, w) for label, _, _, w in sim.model.particle_runs] == [(cloths[0], 0), (cloths[1], 1)]
    assert list(sim.imported.deformables.cloth) == cloths
    start = sim.model.particle_q.numpy()
    np.testing.assert_allclose(start[n:] - start[:n], np.tile([2.0, 0.0, 0.0], (n, 1)), atol=1e-6)
    assert q[:, 2].max() < 0.45  # (fallen onto its box)
    np.testing.assert_allclose(q, q_flat, atol=1e-4)
    t = sim.time_code
    for k, prim_path in enumerate(cloths):
        prim = sim.stage.GetPrimAtPath(prim_path)
        local = np.array(UsdGeom.Mesh(prim).GetPointsAttr().Get(t), dtype=np.float64)
        m = np.array(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default()))
        np.testing.assert_allclose(local @ m[:3, :3] + m[3, :3], q[k * n : (k + 1) * n], atol=1e-5)


def test_attachments_and_filters_of_a_cloth_in_each_world(tmp_path):
    """A cloth tied to a thrown box, and a cloth filtered from the box under it, in two worlds: each world's cloth
    tied to its own box (world 1's box thrown harder drags its cloth only), each filtered from its own box."""
    path = falling_box_stage(tmp_path / "tied.usda")
    local = [(c[0] - 0.05, c[1] + 0.45, c[2] - 0.5) for c in corner_points(CORNERS)]
    attach(path, CORNERS, src1="/World/Box", coords=local)
    _, one = cloth_run(path, 1, frames=6)
    sim = Simulation.open(path, fps=FPS, substeps=SUBSTEPS, solver_options={"iterations": ITERATIONS}, worlds=2,
                          device="cpu")  # fmt: skip
    qd = sim.physics.state.body_qd.numpy()
    qd[1, 2] += 2.0  # (world 1's box thrown up harder)
    sim.physics.state.body_qd.assign(qd)
    for _ in range(6):
        sim.step_frame()
    q, boxes = sim.physics.state.particle_q.numpy(), sim.physics.state.body_q.numpy()
    n = len(one)
    np.testing.assert_allclose(q[:n], one, atol=1e-6)
    assert boxes[1, 2] > boxes[0, 2] + 0.1
    for k, i in enumerate(CORNERS):  # (world 1's tied points on world 1's box)
        np.testing.assert_allclose(q[n + i], boxes[1, :3] + _rotate(boxes[1, 3:], local[k]), atol=1e-4)
    path = element_filter(cloth_stage(tmp_path / "filtered.usda"))
    _, q = cloth_run(path, 2, frames=6)
    assert q[:, 2].max() < 0.39  # (both worlds' cloths through their boxes)
    np.testing.assert_allclose(q[n:], q[:n], atol=1e-6)
