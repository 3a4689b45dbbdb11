"""Live edits: what the user changes on the stage while a Simulation runs is applied at the next frame."""

import logging
import os

import numpy as np
import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from newton_usd.kit_kernel import PROJECT_ROOT
from newton_usd.sim import Simulation

SAMPLES = os.path.join(PROJECT_ROOT, "sample_stages")


def world_pos(stage, path):
    return np.array(
        UsdGeom.Xformable(stage.GetPrimAtPath(path))
        .ComputeLocalToWorldTransform(Usd.TimeCode.Default())
        .ExtractTranslation()
    )


def private_stage(name):
    """The sample stage in a layer of its own: edits must not reach the shared sample layer."""
    return Usd.Stage.Open(Sdf.Layer.OpenAsAnonymous(os.path.join(SAMPLES, name)))


def open_sim(name, **kw):
    return Simulation.open(private_stage(name), device="cpu", record=False, **kw)


def test_own_writes_are_not_edits():
    sim = open_sim("boxes_on_ground.usda")
    sim.run(5)
    assert not sim.watcher.pending and sim.edits_applied == 0
    # a look edit is not a physics edit
    sim.stage.GetPrimAtPath("/World/Box").CreateAttribute("primvars:displayColor", Sdf.ValueTypeNames.Color3fArray).Set(
        [Gf.Vec3f(1, 0, 0)]
    )
    assert not sim.watcher.pending


def test_gravity_edit_applies_next_frame_without_rebuild():
    sim = open_sim("boxes_on_ground.usda")
    sim.run(3)
    solver, z = sim.solver, world_pos(sim.stage, "/World/Box")[2]
    v = sim.state.body_qd.numpy()[0, 2]
    assert v < -0.1  # falling
    scene = UsdPhysics.Scene(sim.stage.GetPrimAtPath("/World/PhysicsScene"))
    scene.CreateGravityDirectionAttr(Gf.Vec3f(0, 0, 1))  # now it falls up
    sim.step_frame()
    assert sim.solver is solver and sim.edits_applied == 1 and sim.rebuilds == 0
    assert np.allclose(sim.solver.mj_model.opt.gravity, [0, 0, 9.81], atol=1e-3)
    for _ in range(10):
        sim.step_frame()
    assert sim.state.body_qd.numpy()[0, 2] > 0 and world_pos(sim.stage, "/World/Box")[2] > z - 0.05


def test_drive_target_edit_moves_the_pendulum_to_it():
    sim = open_sim("pendulum.usda")
    hinge = sim.stage.GetPrimAtPath("/World/Pendulum/Hinge")
    j = sim.model.joint_label.index("/World/Pendulum/Hinge")
    dof = int(sim.model.joint_qd_start.numpy()[j])
    sim.run(10)
    hinge.GetAttribute("drive:angular:physics:targetPosition").Set(-30.0)
    sim.step_frame()
    assert sim.rebuilds == 0
    assert sim.control.joint_target_pos.numpy()[dof] == pytest.approx(np.radians(-30.0), abs=1e-6)
    # stiffness edits reach the running actuator too
    hinge.GetAttribute("drive:angular:physics:stiffness").Set(17.45)
    hinge.GetAttribute("drive:angular:physics:damping").Set(2.0)
    sim.step_frame()
    assert sim.rebuilds == 0
    ke = sim.solver.mj_model.actuator_biasprm[0, 1]
    assert ke == pytest.approx(-17.45 * 180 / np.pi, rel=1e-5)  # per degree -> per radian
    sim.run(600)
    q = sim.state.joint_q.numpy()[int(sim.model.joint_q_start.numpy()[j])]
    assert abs(q - np.radians(-30.0)) < abs(np.radians(60.0) - np.radians(-30.0)) * 0.5  # heading to -30 deg


def test_mass_edit_goes_into_the_compiled_model():
    sim = open_sim("cartpole.usda")
    sim.run(2)
    b = sim.model.body_label.index("/CartPole/Pole")
    mb = int(sim.solver.spec_map.body_mj[b])
    sim.stage.GetPrimAtPath("/CartPole/Pole").GetAttribute("physics:mass").Set(0.5)
    sim.step_frame()
    assert sim.rebuilds == 0 and sim.solver.mj_model.body_mass[mb] == pytest.approx(0.5)
    assert sim.model.body_mass.numpy()[b] == pytest.approx(0.5)


def test_joint_limit_edit():
    sim = open_sim("cartpole.usda")
    j = sim.model.joint_label.index("/CartPole/CartSlider")
    dof = int(sim.model.joint_qd_start.numpy()[j])
    sim.run(2)
    sim.stage.GetPrimAtPath("/CartPole/CartSlider").GetAttribute("physics:upperLimit").Set(0.25)
    sim.step_frame()
    mj = int(sim.solver.spec_map.dof_mj[dof])
    assert sim.rebuilds == 0 and sim.solver.mj_model.jnt_range[mj][1] == pytest.approx(0.25)


def test_added_prim_rebuilds_and_the_others_keep_their_state():
    sim = open_sim("boxes_on_ground.usda")
    sim.run(10)
    z_before = world_pos(sim.stage, "/World/Box")[2]
    v_before = sim.state.body_qd.numpy()[sim.model.body_label.index("/World/Box")]
    cube = UsdGeom.Cube.Define(sim.stage, "/World/NewBox")
    cube.CreateSizeAttr(0.2)
    cube.AddTranslateOp().Set(Gf.Vec3d(2, 0, 1))
    UsdPhysics.RigidBodyAPI.Apply(cube.GetPrim())
    UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
    assert sim.apply_edits() == "rebuilt"
    assert "/World/NewBox" in sim.model.body_label and sim.rebuilds == 1
    i = sim.model.body_label.index("/World/Box")
    # Where it was, as fast as it was: the rebuild kept the simulated state of the body.
    assert sim.state.body_q.numpy()[i, 2] == pytest.approx(z_before, abs=1e-5)
    assert np.allclose(sim.state.body_qd.numpy()[i], v_before, atol=1e-4)
    sim.step_frame()
    assert world_pos(sim.stage, "/World/Box")[2] < z_before  # still falling, on from where it was
    assert world_pos(sim.stage, "/World/NewBox")[2] < 1.0
    # reset: the authored stage again, the new box included (it is authored now)
    sim.reset()
    assert sim.rebuilds == 0 and sim.model.body_count == 4
    assert world_pos(sim.stage, "/World/Box")[2] == pytest.approx(1.0)


def test_disabled_body_stops_being_simulated_and_reset_restores_it():
    sim = Simulation.open(private_stage("boxes_on_ground.usda"), device="cpu", record=True)
    sim.run(10)
    z_frozen = sim.state.body_q.numpy()[sim.model.body_label.index("/World/TiltedBox"), 2]
    UsdPhysics.RigidBodyAPI(sim.stage.GetPrimAtPath("/World/TiltedBox")).CreateRigidBodyEnabledAttr(False)
    sim.run(5)
    assert "/World/TiltedBox" not in sim.model.body_label and sim.rebuilds == 1
    # The recording goes on for the others, from frame 0; the disabled body keeps its samples so far.
    box = sim.stage.GetPrimAtPath("/World/Box").GetAttribute("xformOp:translate:physics")
    assert len(box.GetTimeSamples()) == 16
    assert box.Get(Usd.TimeCode.Default())[2] == pytest.approx(1.0)  # the default is still the authored pose
    tilted = sim.stage.GetPrimAtPath("/World/TiltedBox").GetAttribute("xformOp:translate:physics")
    assert len(tilted.GetTimeSamples()) == 11
    assert tilted.Get(10.0)[2] == pytest.approx(z_frozen, abs=1e-6)
    sim.reset()
    assert not sim.stage.GetPrimAtPath("/World/TiltedBox").GetAttribute("xformOp:translate:physics")
    assert not sim.stage.GetPrimAtPath("/World/Box").GetAttribute("xformOp:translate:physics")


def test_invalid_edit_is_reported_and_the_run_goes_on(caplog):
    sim = open_sim("cartpole.usda")
    sim.run(2)
    sim.stage.GetPrimAtPath("/CartPole/Pole").GetAttribute("physics:mass").Set(-3.0)
    with caplog.at_level(logging.WARNING, logger="newton_usd"):
        sim.step_frame()
    assert "an edit was not applied" in caplog.text and "/CartPole/Pole" in caplog.text
    assert sim.model.body_mass.numpy()[sim.model.body_label.index("/CartPole/Pole")] == pytest.approx(0.1)
    assert sim.frame == 3


def test_live_false_ignores_edits():
    sim = open_sim("boxes_on_ground.usda", live=False)
    sim.run(2)
    UsdPhysics.Scene(sim.stage.GetPrimAtPath("/World/PhysicsScene")).CreateGravityMagnitudeAttr(0.0)
    sim.step_frame()
    assert sim.watcher is None and sim.solver.mj_model.opt.gravity[2] == pytest.approx(-9.81, abs=1e-3)


def test_drive_target_edits_skip_the_re_import_and_match_it(monkeypatch):
    """A drive target edit (a slider dragged in a viewer) is applied without importing the stage again,
    to the value a re-import gives, in every world; other edits still go through the import."""
    import newton_usd.simulation.edits as edits_module

    sim = open_sim("pendulum.usda", worlds=2)
    sim.run(2)
    hinge = sim.stage.GetPrimAtPath("/World/Pendulum/Hinge")
    imports = []
    real_import = edits_module.import_stage
    monkeypatch.setattr(edits_module, "import_stage", lambda *a: imports.append(a) or real_import(*a))
    hinge.GetAttribute("drive:angular:physics:targetPosition").Set(-30.0)
    hinge.GetAttribute("drive:angular:physics:targetVelocity").Set(5.0)
    sim.step_frame()
    assert imports == [] and sim.edits_applied == 1 and sim.rebuilds == 0
    hinges = [j for j, label in enumerate(sim.model.joint_label) if label.endswith("Hinge")]
    dofs = [int(sim.model.joint_qd_start.numpy()[j]) for j in hinges]
    assert len(dofs) == 2  # one per world
    fresh = real_import(sim.stage, None, 2)[0].finalize("cpu")
    for name in ("joint_target_pos", "joint_target_vel"):
        np.testing.assert_allclose(getattr(sim.control, name).numpy()[dofs], getattr(fresh, name).numpy()[dofs])
        np.testing.assert_allclose(getattr(sim.model, name).numpy(), getattr(fresh, name).numpy())
    assert sim.control.joint_target_pos.numpy()[dofs[1]] == pytest.approx(np.radians(-30.0))
    # a gain edit is not a target: it takes the import
    hinge.GetAttribute("drive:angular:physics:stiffness").Set(10.0)
    sim.step_frame()
    assert len(imports) == 1 and sim.edits_applied == 2 and sim.rebuilds == 0


@pytest.mark.parametrize("up, meters_per_unit", [("Z", 1.0), ("Y", 0.01)])
def test_gravity_edits_take_the_fast_path_and_match_a_fresh_import(monkeypatch, up, meters_per_unit):
    """Edits of the scene's gravity direction and magnitude skip the re-import, and give the gravity a
    fresh import of the edited stage gives (units, up axis, a zero direction meaning -up, the -inf
    fallback magnitude meaning Earth's); with gravity disabled they go through the import and stay off."""
    import newton_usd.simulation.edits as edits_module
    from newton_usd.core.builder import ModelBuilder
    from newton_usd.usd import add_usd

    from stages import add_box, new_stage

    def stage_with(enabled=True):
        stage = new_stage(up=up, meters_per_unit=meters_per_unit)
        add_box(stage, "/Box", 0.2 / meters_per_unit, (0, 0, 0), mass=1.0)
        if not enabled:
            stage.GetPrimAtPath("/PhysicsScene").CreateAttribute("mjc:flag:gravity", Sdf.ValueTypeNames.Bool).Set(False)
        return stage

    def fresh(stage):
        b = ModelBuilder()
        add_usd(b, stage)
        return np.array(b.gravity, dtype=np.float32)

    stage = stage_with()
    sim = Simulation.open(stage, device="cpu", record=False)
    scene = UsdPhysics.Scene(stage.GetPrimAtPath("/PhysicsScene"))
    real_import = edits_module.import_stage
    monkeypatch.setattr(edits_module, "import_stage", lambda *a, **k: pytest.fail("the gravity edit re-imported"))
    for edit in (
        lambda: scene.CreateGravityDirectionAttr(Gf.Vec3f(1, 0, 0)),
        lambda: scene.CreateGravityMagnitudeAttr(500.0),
        lambda: scene.GetGravityDirectionAttr().Set(Gf.Vec3f(0, 0, 0)),  # -up
        lambda: scene.GetGravityMagnitudeAttr().Set(float("-inf")),  # Earth's, in stage units
    ):
        edit()
        sim.step_frame()
        np.testing.assert_allclose(np.array(sim.model.gravity), fresh(stage), rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(sim.solver.mj_model.opt.gravity, fresh(stage), rtol=1e-6, atol=1e-9)
    assert sim.edits_applied == 4 and sim.rebuilds == 0
    sim.close()
    monkeypatch.setattr(edits_module, "import_stage", real_import)
    stage = stage_with(enabled=False)
    sim = Simulation.open(stage, device="cpu", record=False)
    UsdPhysics.Scene(stage.GetPrimAtPath("/PhysicsScene")).CreateGravityDirectionAttr(Gf.Vec3f(1, 0, 0))
    sim.step_frame()
    assert not np.any(np.array(sim.model.gravity)) and not np.any(sim.solver.mj_model.opt.gravity)
    sim.close()
