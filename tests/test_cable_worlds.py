"""Cables in several worlds (issue 49): ``worlds=N`` replicates a cable's segment bodies and rod joints, each world's
cable a record of its own, run by Newton's VBD world by world: two worlds run as one, a kick to world 1's cable
leaves world 0's as it was; world 0 is written onto the curve, with ``write_worlds="all"`` each other world's points
onto its copy of the environment; against Newton's own loop on its replicated builder."""

from __future__ import annotations

import newton
import numpy as np
from newton_loops import newton_loop, vbd_model
from pxr import Gf, Sdf, Usd, UsdGeom
from test_cables import FPS, ITERATIONS, SUBSTEPS, N, cable_stage

from newton_usd.sim import Simulation


def cable_run(path, worlds, frames=3, kick=None, **kw):
    """``frames`` frames of the cable stage in ``worlds`` worlds; ``kick``: world 1's segments start with this
    velocity added (m/s)."""
    sim = Simulation.open(path, fps=FPS, substeps=SUBSTEPS, solver_options={"iterations": ITERATIONS},
                          worlds=worlds, device="cpu", **kw)  # fmt: skip
    if kick is not None:
        qd = sim.physics.state.body_qd.numpy()
        qd[sim.model.cables[1].bodies, :3] += np.asarray(kick, dtype=np.float32)
        sim.physics.state.body_qd.assign(qd)
    for _ in range(frames):
        sim.step_frame()
    return sim, sim.physics.state.body_q.numpy()


def test_two_worlds_of_a_cable_run_as_one_and_do_not_touch(tmp_path):
    path = cable_stage(tmp_path / "cable.usda")
    _, one = cable_run(path, 1)
    sim, two = cable_run(path, 2)
    n = len(one)
    cables = sim.model.cables
    assert [(c.label, c.world) for c in cables] == [("/World/Cable/sim", 0), ("/World/Cable/sim", 1)]
    assert cables[1].bodies == [b + n for b in cables[0].bodies]
    assert np.array_equal(sim.model.body_world.numpy()[cables[1].bodies], np.ones(N - 1))
    assert one[-1, 2] < 1.0 - 0.02  # (the free end swings down)
    np.testing.assert_allclose(two[:n], one, atol=1e-6)
    np.testing.assert_allclose(two[n:], one, atol=1e-6)
    _, kicked = cable_run(path, 2, kick=(0.0, 0.0, 3.0))  # (world 1's cable thrown up: world 0's as before)
    np.testing.assert_allclose(kicked[:n], one, atol=1e-6)
    assert np.abs(kicked[n:, :3] - one[:, :3]).max() > 0.1
    sim.reset()
    np.testing.assert_array_equal(sim.physics.state.body_q.numpy(), sim.model.body_q.numpy())


def test_each_world_of_a_cable_is_written_onto_its_copy(tmp_path):
    path = cable_stage(tmp_path / "copies.usda")
    sim, q = cable_run(path, 2, frames=2, kick=(0.0, 0.0, 3.0), write_worlds="all")
    stage, t = sim.stage, sim.time_code
    source = stage.GetPrimAtPath("/World/Cable/sim")
    copy = stage.GetPrimAtPath("/World/Cable_world1/sim")
    assert copy and not copy.HasAPI("PhysicsCurvesDeformableSimAPI")  # (a picture of world 1, not simulated)
    for k in range(N - 1):  # (no segment body is written onto a prim of its own)
        assert not stage.GetPrimAtPath(f"/World/Cable_world1/sim_edge_body_{k}")
        assert not stage.GetPrimAtPath(f"/World/Cable/sim_edge_body_{k}")

    def world_points(prim):  # (the prim's written points placed by its transform: m, Z up stage)
        local = np.array(UsdGeom.BasisCurves(prim).GetPointsAttr().Get(t), dtype=np.float64)
        m = np.array(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default()))
        return local @ m[:3, :3] + m[3, :3]

    cables = sim.model.cables
    np.testing.assert_allclose(world_points(source), cables[0].points(q), atol=1e-5)
    offset = np.array(stage.GetPrimAtPath("/World/Cable_world1").GetAttribute("xformOp:translate:worldOffset").Get())
    assert np.linalg.norm(offset) > 0.3  # (shown beside world 0)
    np.testing.assert_allclose(world_points(copy), cables[1].points(q) + offset, atol=1e-5)
    assert np.abs(cables[1].points(q) - cables[0].points(q)).max() > 0.05  # (the kicked world's own points)


def test_three_worlds_of_a_cable_as_newtons_replicated_loop(tmp_path):
    """Newton 1.8's own loop on ``ModelBuilder.replicate`` of its ``add_usd`` of the stage (a world per copy)."""
    path = cable_stage(tmp_path / "cable.usda")
    _, ours = cable_run(path, 3, frames=2)
    one, builder = newton.ModelBuilder(), newton.ModelBuilder()
    one.add_usd(path)
    builder.replicate(one, 3)
    model, solver = vbd_model(builder, ITERATIONS)
    theirs = newton_loop(model, solver, 2 * SUBSTEPS, 1.0 / (FPS * SUBSTEPS)).body_q.numpy()
    assert theirs.shape == ours.shape
    np.testing.assert_allclose(ours[:, :3], theirs[:, :3], atol=1e-5)


def env_cable_stage(path, envs=2, spacing=2.0):
    """The pinned cable and its pin moved into ``/World/envs/env_0`` and authored again in env_1 .. (each environment
    ``spacing`` m further along x; the pin's anchor in the world: moved with it)."""
    src = cable_stage(path)
    layer = Sdf.Layer.FindOrOpen(src)
    for prim_path in ("/World/envs", "/World/envs/env_0"):
        spec = Sdf.CreatePrimInLayer(layer, prim_path)
        spec.specifier, spec.typeName = Sdf.SpecifierDef, "Xform"
    for name in ("Cable", "Pin"):
        Sdf.CopySpec(layer, f"/World/{name}", layer, f"/World/envs/env_0/{name}")
        del layer.GetPrimAtPath("/World").nameChildren[name]
    stage = Usd.Stage.Open(layer)
    for k in range(1, envs):
        Sdf.CopySpec(layer, "/World/envs/env_0", layer, f"/World/envs/env_{k}")
        UsdGeom.Xformable(stage.GetPrimAtPath(f"/World/envs/env_{k}")).AddTranslateOp().Set((spacing * k, 0.0, 0.0))
    for k in range(envs):
        pin = stage.GetPrimAtPath(f"/World/envs/env_{k}/Pin")
        pin.GetRelationship("physics:src0").SetTargets([Sdf.Path(f"/World/envs/env_{k}/Cable/sim")])
        pin.GetAttribute("physics:coords1").Set([Gf.Vec3f(spacing * k, 0.0, 1.0)])
    layer.Save()
    return src


def test_environments_with_cables_import_as_worlds_each_written_onto_its_own(tmp_path):
    """env_* clones each holding the pinned cable: one world per environment, each cable written onto its own prim;
    they run as the same stage run in one world without env_root (both cables imported, 2 m apart)."""
    path = env_cable_stage(tmp_path / "envs.usda")
    flat, q_flat = cable_run(path, 1)
    sim, q = cable_run(path, 1, env_root="/World/envs")
    cables = ["/World/envs/env_0/Cable/sim", "/World/envs/env_1/Cable/sim"]
    assert sim.worlds == 2 and [(c.label, c.world) for c in sim.model.cables] == [(cables[0], 0), (cables[1], 1)]
    np.testing.assert_allclose(q, q_flat, atol=1e-5)
    t = sim.time_code
    for k, cable in enumerate(sim.model.cables):
        prim = sim.stage.GetPrimAtPath(cables[k])
        local = np.array(UsdGeom.BasisCurves(prim).GetPointsAttr().Get(t), dtype=np.float64)
        m = np.array(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default()))
        world = local @ m[:3, :3] + m[3, :3]
        np.testing.assert_allclose(world, cable.points(q), atol=1e-5)
        assert abs(world[0, 0] - 2.0 * k) < 1e-3 and world[-1, 2] < 1.0 - 0.02  # (pinned in its place, swinging)
