"""A particle prim moved while the stage runs (its transform, or its body prim's, edited live): its points teleported
with it, deformed as they are, velocities turned with it, and written in its new space; a material edit is still said
and not taken."""

from __future__ import annotations

import numpy as np
from pxr import Gf, Usd, UsdGeom
from test_deformables import FPS, SUBSTEPS, cloth_stage
from test_granular import sand_stage

from newton_usd.sim import Simulation


def world_points(stage, path, time):
    """The prim's written points at ``time`` through its transform now, stage units."""
    prim = stage.GetPrimAtPath(path)
    local = np.array(prim.GetAttribute("points").Get(time), dtype=np.float64)
    m = np.array(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default()))
    return local @ m[:3, :3] + m[3, :3]


def test_a_cloth_moved_by_its_translate_in_centimetres_goes_on_from_there(tmp_path):
    sim = Simulation.open(cloth_stage(tmp_path / "cloth.usda", 0.01, box=False), fps=FPS, substeps=SUBSTEPS)
    sim.step_frame()
    before = sim.physics.state.particle_q.numpy().copy()
    prim = sim.stage.GetPrimAtPath("/World/Cloth/sim")
    UsdGeom.Xformable(prim).GetOrderedXformOps()[0].Set(Gf.Vec3d(105.0, 0, 50.0))  # (1 m along +X: from 5 cm)
    sim.step_frame()
    after = sim.physics.state.particle_q.numpy()
    assert sim.edits_applied == 1 and sim.rebuilds == 0
    np.testing.assert_allclose(after[:, 0] - before[:, 0], 1.0, atol=1e-3)  # (teleported, then one more frame)
    assert -0.05 < after[:, 2].mean() - before[:, 2].mean() < 0  # (still falling: not back at the start)
    time = sim.time_code
    np.testing.assert_allclose(world_points(sim.stage, "/World/Cloth/sim", time), after * 100.0, atol=1e-3)
    sim.close()


def test_a_cloth_turned_by_its_body_prim_turns_its_points_and_velocities(tmp_path):
    sim = Simulation.open(cloth_stage(tmp_path / "cloth.usda", box=False), fps=FPS, substeps=SUBSTEPS, live=True)
    sim.step_frame()
    state = sim.physics.state
    q0, v0 = state.particle_q.numpy().copy(), state.particle_qd.numpy().copy()
    assert v0[:, 2].mean() < -0.2  # (falling)
    UsdGeom.Xformable(sim.stage.GetPrimAtPath("/World/Cloth")).AddRotateXOp().Set(90.0)  # (about the world X axis)
    sim.apply_edits()
    q, v = state.particle_q.numpy(), state.particle_qd.numpy()
    turn = np.array([[1, 0, 0], [0, 0, 1], [0, -1, 0]], dtype=np.float64)  # (row vectors: +90 degrees about X)
    np.testing.assert_allclose(q, q0 @ turn, atol=1e-5)
    np.testing.assert_allclose(v, v0 @ turn, atol=1e-5)  # (falling along -Z before: along +Y now)
    sim.step_frame()
    np.testing.assert_allclose(world_points(sim.stage, "/World/Cloth/sim", sim.time_code),
                               sim.physics.state.particle_q.numpy(), atol=1e-4)  # fmt: skip
    sim.close()


def test_grains_moved_with_their_prim(tmp_path):
    src = sand_stage(tmp_path / "pile.usda", side=3, layers=2)
    sim = Simulation.open(str(src), fps=FPS, substeps=SUBSTEPS, device="cpu")
    sim.step_frame()
    before = sim.physics.state.particle_q.numpy().copy()
    UsdGeom.Xformable(sim.stage.GetPrimAtPath("/World/Pile")).AddTranslateOp().Set(Gf.Vec3d(0.5, 0, 0))
    sim.step_frame()  # (they were left where they were, the move not seen)
    after = sim.physics.state.particle_q.numpy()
    np.testing.assert_allclose(after[:, 0].mean() - before[:, 0].mean(), 0.5, atol=0.01)
    np.testing.assert_allclose(world_points(sim.stage, "/World/Pile", sim.time_code), after, atol=1e-4)
    sim.close()


def test_a_material_edit_is_still_said_and_a_move_is_not(tmp_path, caplog):
    sim = Simulation.open(cloth_stage(tmp_path / "live.usda"), fps=FPS, substeps=SUBSTEPS)
    sim.step_frame()
    prim = sim.stage.GetPrimAtPath("/World/Cloth/sim")
    with caplog.at_level("WARNING", logger="newton_usd"):
        UsdGeom.Xformable(prim).GetOrderedXformOps()[0].Set(Gf.Vec3d(1, 0, 0.5))
        sim.stage.GetPrimAtPath("/World/ClothMaterial").GetAttribute("physics:density").Set(10.0)
        sim.step_frame()
    said = caplog.text
    assert "/World/ClothMaterial.physics:density: live edits of deformable bodies" in said
    assert "xformOp" not in said
    assert sim.physics.state.particle_q.numpy()[:, 0].mean() > 0.9
    sim.close()


def test_a_replicated_cloth_moves_in_every_world_or_the_first(tmp_path):
    for edit_worlds, moved in (("all", [True, True, True]), ("first", [True, False, False])):
        path = cloth_stage(tmp_path / f"{edit_worlds}.usda", box=False)  # (a stage each: the edit stays in its layer)
        sim = Simulation.open(path, fps=FPS, substeps=SUBSTEPS, worlds=3)
        sim.edit_worlds = edit_worlds
        sim.step_frame()
        per_world = sim.physics.state.particle_q.numpy().reshape(3, -1, 3)[:, :, 0].mean(axis=1)
        UsdGeom.Xformable(sim.stage.GetPrimAtPath("/World/Cloth/sim")).GetOrderedXformOps()[0].Set(
            Gf.Vec3d(1.05, 0, 0.5)
        )
        sim.apply_edits()
        shift = sim.physics.state.particle_q.numpy().reshape(3, -1, 3)[:, :, 0].mean(axis=1) - per_world
        np.testing.assert_allclose(shift, np.where(moved, 1.0, 0.0), atol=1e-5, err_msg=edit_worlds)
        sim.close()


def test_a_graphics_mesh_moves_with_its_clothes_body_prim(tmp_path):
    """A graphics mesh under the cloth's body prim: the body prim moved 1 m, the mesh's written points, through its
    transform now, are still where its cloth skins them."""
    from test_deformable_links import graphics_mesh  # noqa: PLC0415

    path = graphics_mesh(cloth_stage(tmp_path / "render.usda", box=False))
    sim = Simulation.open(path, fps=FPS, substeps=SUBSTEPS)
    sim.step_frame()
    UsdGeom.Xformable(sim.stage.GetPrimAtPath("/World/Cloth")).AddTranslateOp().Set(Gf.Vec3d(1.0, 0, 0))
    sim.step_frame()
    (mesh,) = sim.model.cloth[0].links.graphics
    q = sim.physics.state.particle_q.numpy()
    assert q[:, 0].mean() > 0.9  # (moved with its body prim)
    np.testing.assert_allclose(world_points(sim.stage, "/World/Cloth/render", sim.time_code), mesh.skinned(q),
                               atol=1e-5)  # fmt: skip
    sim.close()


def test_a_rigid_body_moved_beside_a_soft_block_under_vbd_goes_on_from_there(samples):
    """A box moved 0.6 m by its translate while vbd runs lands there and falls on (AVBD takes a body's velocity from
    its pose before the step: without its history rebaselined the box was flung at 288 m/s and the run blew up)."""
    sim = Simulation.open(str(samples / "deformables" / "box_on_soft_block.usda"))
    for _ in range(3):
        sim.step_frame()
    i = sim.model.body_label.index("/World/Box")
    before = sim.state.body_q.numpy()[i, :3].copy()
    box = sim.stage.GetPrimAtPath("/World/Box")
    UsdGeom.Xformable(box).GetOrderedXformOps()[0].Set(Gf.Vec3d(0.6, 0.0, float(before[2])))
    sim.step_frame()
    after = sim.state.body_q.numpy()[i, :3]
    speed = float(np.linalg.norm(sim.state.body_qd.numpy()[i, :3]))
    assert sim.edits_applied == 1
    np.testing.assert_allclose(after[:2], [0.6, 0.0], atol=1e-3)
    assert before[2] - 0.1 < after[2] < before[2] and speed < 3.0, (after, speed)  # (falling on, as before the move)
    for _ in range(10):
        sim.step_frame()  # (no blow-up)
    sim.close()
