"""Live edits: what the user changes on the stage while a Simulation runs is applied at the next frame, in place
(no import of the stage) where it sets values or moves bodies, under every engine."""

import logging
import math
import os

import numpy as np
import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade

from newton_usd.kit_kernel import PROJECT_ROOT
from newton_usd.sim import Simulation

SAMPLES = os.path.join(PROJECT_ROOT, "sample_stages")


def world_pos(stage, path, time=None):
    return np.array(
        UsdGeom.Xformable(stage.GetPrimAtPath(path))
        .ComputeLocalToWorldTransform(Usd.TimeCode.Default() if time is None else time)
        .ExtractTranslation()
    )


def private_stage(name):
    """The sample stage in a layer of its own: edits must not reach the shared sample layer."""
    return Usd.Stage.Open(Sdf.Layer.OpenAsAnonymous(os.path.join(SAMPLES, name)))


def open_sim(name, **kw):
    kw.setdefault("record", False)
    return Simulation.open(private_stage(name), device="cpu", **kw)


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
    tilted_row = sim.model.body_label.index("/World/TiltedBox")
    z_frozen = sim.state.body_q.numpy()[tilted_row, 2]
    UsdPhysics.RigidBodyAPI(sim.stage.GetPrimAtPath("/World/TiltedBox")).CreateRigidBodyEnabledAttr(False)
    sim.run(5)
    # Held where it was (its colliders static), in place: no import, no rebuild (MuJoCo's weld to a mocap body lets
    # it sag a few micrometres).
    assert sim.rebuilds == 0 and sim.model.body_kinematic.numpy()[tilted_row]
    assert sim.state.body_q.numpy()[tilted_row, 2] == pytest.approx(z_frozen, abs=1e-5)
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
    assert "an edit was not applied" in caplog.text and "/CartPole/Pole.physics:mass" in caplog.text
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
    to the value a re-import gives, in every world; so is a gain; a prim added with no physics schema is not
    imported; a physics schema applied to it goes through the import."""
    import newton_usd.simulation.opening as edits_module

    sim = open_sim("pendulum.usda", worlds=2)
    sim.run(2)
    hinge = sim.stage.GetPrimAtPath("/World/Pendulum/Hinge")
    imports = []
    real_import = edits_module.reimport
    monkeypatch.setattr(edits_module, "reimport", lambda *a: imports.append(a) or real_import(*a))
    hinge.GetAttribute("drive:angular:physics:targetPosition").Set(-30.0)
    hinge.GetAttribute("drive:angular:physics:targetVelocity").Set(5.0)
    sim.step_frame()
    assert imports == [] and sim.edits_applied == 1 and sim.rebuilds == 0
    hinges = [j for j, label in enumerate(sim.model.joint_label) if label.endswith("Hinge")]
    dofs = [int(sim.model.joint_qd_start.numpy()[j]) for j in hinges]
    assert len(dofs) == 2  # one per world
    fresh = edits_module.import_stage(sim.stage, None, 2)[0].finalize("cpu")
    for name in ("joint_target_pos", "joint_target_vel"):
        np.testing.assert_allclose(getattr(sim.control, name).numpy()[dofs], getattr(fresh, name).numpy()[dofs])
        np.testing.assert_allclose(getattr(sim.model, name).numpy(), getattr(fresh, name).numpy())
    assert sim.control.joint_target_pos.numpy()[dofs[1]] == pytest.approx(np.radians(-30.0))
    hinge.GetAttribute("drive:angular:physics:stiffness").Set(10.0)
    sim.step_frame()
    assert imports == [] and sim.edits_applied == 2 and sim.rebuilds == 0
    assert sim.model.joint_target_ke.numpy()[dofs] == pytest.approx([10.0 * 180 / np.pi] * 2, rel=1e-6)
    UsdGeom.Cube.Define(sim.stage, "/World/Marker")  # (a prim added with no physics schema: simulated by nothing)
    sim.step_frame()
    assert imports == []
    UsdPhysics.MassAPI.Apply(sim.stage.GetPrimAtPath("/World/Marker"))  # (the import reads it, finds nothing new)
    sim.step_frame()
    assert len(imports) == 1 and sim.rebuilds == 0


@pytest.mark.parametrize("up, meters_per_unit", [("Z", 1.0), ("Y", 0.01)])
def test_gravity_edits_take_the_fast_path_and_match_a_fresh_import(monkeypatch, up, meters_per_unit):
    """Edits of the scene's gravity direction and magnitude skip the re-import, and give the gravity a
    fresh import of the edited stage gives (units, up axis, a zero direction meaning -up, the -inf
    fallback magnitude meaning Earth's); with gravity disabled they go through the import and stay off."""
    import newton_usd.simulation.opening as edits_module
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
    real_import = edits_module.reimport
    monkeypatch.setattr(edits_module, "reimport", lambda *a, **k: pytest.fail("the gravity edit re-imported"))
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
    monkeypatch.setattr(edits_module, "reimport", real_import)
    stage = stage_with(enabled=False)
    sim = Simulation.open(stage, device="cpu", record=False)
    UsdPhysics.Scene(stage.GetPrimAtPath("/PhysicsScene")).CreateGravityDirectionAttr(Gf.Vec3f(1, 0, 0))
    sim.step_frame()
    assert not np.any(np.array(sim.model.gravity)) and not np.any(sim.solver.mj_model.opt.gravity)
    sim.close()


# ---------------------------------------------------------------------------------------------- in place, no import
ENGINES = [
    pytest.param(("mujoco", "cpu"), id="mujoco"),
    pytest.param(("mujoco", "warp"), id="mujoco-warp"),
    pytest.param(("xpbd", None), id="xpbd"),
    pytest.param(("featherstone", None), id="featherstone"),
    pytest.param(("semi_implicit", None), id="semi_implicit"),
    pytest.param(("kamino", None), id="kamino", marks=pytest.mark.soak),
]


@pytest.fixture
def no_import(monkeypatch):
    """Edits must be applied in place: an import of the stage fails the test."""
    import newton_usd.simulation.opening as edits_module

    monkeypatch.setattr(edits_module, "reimport", lambda *a, **k: pytest.fail("the edit imported the stage"))


def body_z(sim, label):
    return float(sim.state.body_q.numpy()[sim.model.body_label.index(label), 2])


@pytest.mark.parametrize("engine", ENGINES)
def test_moved_body_is_where_it_was_moved_then_falls(engine, no_import):
    """The user drags /World/Box 2 m up during a run (its own translate op, at the current time, on the edit
    target): the next frame shows it there, and it falls from there; nothing is imported."""
    solver, backend = engine
    sim = open_sim("boxes_on_ground.usda", solver=solver, backend=backend, record=True)
    frames = 30 if solver == "mujoco" and backend == "cpu" else 12
    sim.run(frames)
    z = body_z(sim, "/World/Box")
    op = sim.stage.GetPrimAtPath("/World/Box").GetAttribute("xformOp:translate")
    op.Set(Gf.Vec3d(0.0, 0.0, z + 2.0), sim.time_code)
    sim.step_frame()
    assert sim.rebuilds == 0 and sim.edits_applied == 1
    moved = world_pos(sim.stage, "/World/Box", sim.time_code)
    assert moved[2] == pytest.approx(z + 2.0, abs=0.05)  # there (less one frame of falling)
    assert moved[:2] == pytest.approx([0.0, 0.0], abs=1e-3)
    sim.run(10)
    later = world_pos(sim.stage, "/World/Box", sim.time_code)[2]
    assert z + 1.0 < later < moved[2] - 0.05  # falling from there


def test_moved_body_keeps_its_velocity_and_the_physics_op_edit_is_taken(no_import):
    """A gizmo on the prim's composed ops edits ``xformOp:translate:physics`` on the root layer, at the default
    time, where the run's output layer has the stronger opinion: the body goes there all the same, its velocity
    kept; a move on the session layer at the current time too."""
    sim = open_sim("boxes_on_ground.usda", record=True)
    sim.run(6)
    b = sim.model.body_label.index("/World/Box")
    v = sim.state.body_qd.numpy()[b].copy()
    assert v[2] < -0.5  # falling
    prim = sim.stage.GetPrimAtPath("/World/Box")
    physics_op = prim.GetAttribute("xformOp:translate:physics")
    physics_op.Set(Gf.Vec3d(1.0, 0.5, 3.0))  # the edit target: the root layer; default time
    assert sim.stage.GetRootLayer().GetPropertyAtPath("/World/Box.xformOp:translate:physics") is not None
    sim.apply_edits()
    np.testing.assert_allclose(sim.state.body_q.numpy()[b, :3], [1.0, 0.5, 3.0], atol=1e-5)
    np.testing.assert_allclose(sim.state.body_qd.numpy()[b], v, atol=1e-5)
    sim.step_frame()
    assert world_pos(sim.stage, "/World/Box", sim.time_code)[0] == pytest.approx(1.0, abs=1e-3)
    with Usd.EditContext(sim.stage, sim.stage.GetSessionLayer()):
        physics_op.Set(Gf.Vec3d(-1.0, 0.0, 2.0), sim.time_code)
    sim.step_frame()
    assert world_pos(sim.stage, "/World/Box", sim.time_code)[0] == pytest.approx(-1.0, abs=1e-3)
    assert sim.edits_applied == 2 and sim.rebuilds == 0


def test_a_moved_articulation_moves_with_its_root_and_a_link_turns_toward_its_new_place(no_import):
    """Moving a floating articulation's root carries its links along (their joint angles kept); moving a hinged
    link takes the hinge angle nearest to where it was put (a reduced-coordinate joint cannot come apart)."""
    from stages import robot_environments

    sim = Simulation.open(robot_environments(n=1), device="cpu", record=False)
    sim.run(3)
    labels = sim.model.body_label
    base, link1, link2 = (labels.index(f"/World/envs/env_0/Robot/{n}") for n in ("base", "link1", "link2"))
    before = sim.state.body_q.numpy().copy()
    q_before = sim.state.joint_q.numpy().copy()
    prim = sim.stage.GetPrimAtPath("/World/envs/env_0/Robot/base")
    prim.GetAttribute("xformOp:translate").Set(Gf.Vec3d(*(before[base, :3] + [0.5, 0.0, 1.0]).tolist()))
    sim.apply_edits()
    after = sim.state.body_q.numpy()
    for b in (base, link1, link2):
        np.testing.assert_allclose(after[b, :3], before[b, :3] + [0.5, 0.0, 1.0], atol=1e-4)
    hinges = [sim.model.joint_q_start.numpy()[sim.model.joint_label.index(f"/World/envs/env_0/Robot/{n}")]
              for n in ("shoulder", "elbow")]  # fmt: skip
    np.testing.assert_allclose(sim.state.joint_q.numpy()[hinges], q_before[hinges], atol=1e-6)
    # link1 put where a 30 degree turn of the shoulder (about Y) would put it
    pivot = after[base, :3] + [0.0, 0.0, 0.3]
    turn = Gf.Rotation(Gf.Vec3d(0, 1, 0), 30.0)
    pos = Gf.Vec3d(*pivot.tolist())
    link_prim = sim.stage.GetPrimAtPath("/World/envs/env_0/Robot/link1")
    link_prim.GetAttribute("xformOp:translate").Set(pos)
    UsdGeom.Xformable(link_prim).AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Quatd(turn.GetQuat()))
    sim.apply_edits()
    assert sim.state.joint_q.numpy()[hinges[0]] == pytest.approx(np.radians(30.0), abs=1e-4)
    np.testing.assert_allclose(sim.state.body_q.numpy()[link1, :3], pivot, atol=1e-4)
    np.testing.assert_allclose(sim.state.body_q.numpy()[base], after[base], atol=1e-6)  # the root stays


def test_velocity_edit_sets_the_body_going(no_import):
    sim = open_sim("boxes_on_ground.usda")
    sim.run(40)  # resting
    prim = sim.stage.GetPrimAtPath("/World/Box")
    UsdPhysics.RigidBodyAPI(prim).CreateVelocityAttr(Gf.Vec3f(0.0, 0.0, 4.0))
    sim.step_frame()
    b = sim.model.body_label.index("/World/Box")
    assert sim.state.body_qd.numpy()[b, 2] == pytest.approx(4.0 - 9.81 / 60, abs=0.1)
    z0 = body_z(sim, "/World/Box")
    sim.run(10)
    assert body_z(sim, "/World/Box") > z0 + 0.3  # thrown up


def sag(sim, label="/World/Pendulum/Hinge", target=60.0):
    """Degrees below its drive target the pendulum hangs."""
    j = sim.model.joint_label.index(label)
    return target - math.degrees(sim.state.joint_q.numpy()[sim.model.joint_q_start.numpy()[j]])


SLOW_ENGINES = {"mujoco-warp", "xpbd", "semi_implicit", "kamino"}
"""Engines whose 180 pendulum frames take many seconds on the CPU (MuJoCo-Warp and XPBD on Warp's CPU device,
semi-implicit's short steps): their runs of the long tests are soak."""


def soak_where_slow(engines, slow=SLOW_ENGINES):
    """``engines`` with the runs of the engines named in ``slow`` marked soak (.ci/run's second step runs them)."""
    return [pytest.param(p.values[0], id=p.id, marks=pytest.mark.soak) if p.id in slow else p for p in engines]


@pytest.mark.parametrize("engine", soak_where_slow(ENGINES))
def test_a_heavier_bob_sags_more_and_a_stiffer_drive_holds_tighter(engine, no_import):
    """The driven pendulum holds its bob at 60 degrees against gravity, sagging by m g L / k: a mass edit (3x)
    makes it sag more, a stiffness edit (2x) less; both in place, in every engine."""
    solver, backend = engine
    substeps = 120 if solver == "semi_implicit" else None  # (its penalty joints need short steps)
    sim = open_sim("pendulum.usda", solver=solver, backend=backend, substeps=substeps)
    stage = sim.stage
    settle = 60
    sim.run(settle)
    base = sag(sim)
    assert 0.5 < base < 10.0
    stage.GetPrimAtPath("/World/Pendulum/Bob").GetAttribute("physics:mass").Set(3.0)
    sim.run(settle)
    heavy = sag(sim)
    assert heavy > 2.0 * base
    hinge = stage.GetPrimAtPath("/World/Pendulum/Hinge")
    hinge.GetAttribute("drive:angular:physics:stiffness").Set(1.745 * 2)  # (XPBD's damping moves its hold too)
    sim.run(settle)
    stiff = sag(sim)
    assert 0.0 < stiff < 0.7 * heavy
    assert sim.rebuilds == 0 and sim.edits_applied == 2


def test_in_place_values_are_the_import_s(no_import):
    """Every in-place value is what a fresh import of the edited stage gives (units, degrees, schema precedence):
    joint limits, drive gains, targets and force limits, armature and joint friction (newton over mjc over physx),
    masses from a collider's density, and a material's friction, in a stage of centimeters and grams."""
    from newton_usd.core.builder import ModelBuilder
    from newton_usd.usd import add_usd

    from stages import add_box, add_ground, add_hinge, new_stage

    stage = new_stage(meters_per_unit=0.01)
    UsdPhysics.SetStageKilogramsPerUnit(stage, 0.001)
    add_ground(stage)
    UsdPhysics.MassAPI.Apply(add_box(stage, "/Box", 20.0, (0, 0, 10.0)).GetPrim())
    arm = add_box(stage, "/Arm", 10.0, (0, 100, 150.0), mass=500.0)
    hinge = add_hinge(stage, "/Hinge", None, "/Arm", (0, 100, 160.0), (0, 0, 10.0), limits=(-45, 45)).GetPrim()
    drive = UsdPhysics.DriveAPI.Apply(hinge, "angular")
    drive.CreateStiffnessAttr(2.0)
    drive.CreateDampingAttr(0.1)
    drive.CreateMaxForceAttr(1e7)
    material = UsdShade.Material.Define(stage, "/Rubber")
    UsdPhysics.MaterialAPI.Apply(material.GetPrim()).CreateDynamicFrictionAttr(0.9)
    UsdShade.MaterialBindingAPI.Apply(stage.GetPrimAtPath("/Box")).Bind(material, materialPurpose="physics")
    sim = Simulation.open(stage, device="cpu", record=False)
    sim.run(2)
    hinge.GetAttribute("physics:upperLimit").Set(30.0)
    drive.GetStiffnessAttr().Set(5.0)
    drive.CreateTargetPositionAttr().Set(20.0)
    drive.GetMaxForceAttr().Set(2e6)
    hinge.CreateAttribute("mjc:armature", Sdf.ValueTypeNames.Double).Set(50.0)
    hinge.CreateAttribute("newton:armature", Sdf.ValueTypeNames.Float).Set(20.0)  # (newton wins)
    hinge.CreateAttribute("newton:friction", Sdf.ValueTypeNames.Float).Set(3000.0)
    UsdPhysics.MassAPI(stage.GetPrimAtPath("/Box")).CreateDensityAttr(0.5)  # g/cm^3
    arm.GetPrim().GetAttribute("physics:mass").Set(800.0)
    UsdPhysics.MaterialAPI(material.GetPrim()).CreateRestitutionAttr(0.25)
    material.GetPrim().GetAttribute("physics:dynamicFriction").Set(0.4)
    sim.step_frame()
    assert sim.rebuilds == 0
    fresh = ModelBuilder()
    add_usd(fresh, stage)
    fresh = fresh.finalize("cpu")
    for name in (
        "joint_limit_lower", "joint_limit_upper", "joint_target_ke", "joint_target_kd", "joint_target_pos",
        "joint_effort_limit", "joint_armature", "joint_friction", "body_mass", "body_inertia", "body_com",
        "body_inv_mass", "shape_material_mu", "shape_material_restitution",
    ):  # fmt: skip
        np.testing.assert_allclose(getattr(sim.model, name).numpy(), getattr(fresh, name).numpy(), rtol=1e-5,
                                   atol=1e-7, err_msg=name)  # fmt: skip
    box = sim.model.body_label.index("/Box")
    assert sim.model.body_mass.numpy()[box] == pytest.approx(0.5 * 20.0**3 * 1e-3)  # 4 kg
    dof = sim.model.joint_qd_start.numpy()[sim.model.joint_label.index("/Hinge")]
    assert sim.control.joint_target_pos.numpy()[dof] == pytest.approx(np.radians(20.0))
    m = sim.solver.mj_model
    assert m.body_mass[sim.solver.spec_map.body_mj[box]] == pytest.approx(4.0, rel=1e-6)


def test_edits_inside_one_environment_leave_the_others(no_import):
    """Environments are worlds: moving env_1's box and making it heavier changes world 1 only."""
    from stages import environments

    sim = Simulation.open(environments(n=3, style="flat"), env_root="/World/envs", device="cpu", record=False)
    sim.run(5)
    labels = sim.model.body_label
    boxes = [labels.index(f"/World/envs/env_{w}/box") for w in range(3)]
    before = sim.state.body_q.numpy().copy()
    prim = sim.stage.GetPrimAtPath("/World/envs/env_1/box")
    prim.GetAttribute("xformOp:translate").Set(Gf.Vec3d(0.0, 0.0, 2.0))  # (in env_1's frame)
    prim.GetAttribute("physics:mass").Set(5.0)
    sim.apply_edits()
    after = sim.state.body_q.numpy()
    env1 = np.array(UsdGeom.Xformable(sim.stage.GetPrimAtPath("/World/envs/env_1")).ComputeLocalToWorldTransform(0))
    assert after[boxes[1], 2] == pytest.approx(2.0 + env1[3, 2], abs=1e-5)
    for w in (0, 2):
        np.testing.assert_allclose(after[boxes[w]], before[boxes[w]], atol=1e-6)
    mass = sim.model.body_mass.numpy()
    assert mass[boxes[1]] == pytest.approx(5.0) and mass[boxes[0]] == mass[boxes[2]] == pytest.approx(1.0)
    mj = sim.solver.spec_map.body_mj[boxes[0]]
    assert [m.body_mass[mj] for m in sim.solver.mj_models] == pytest.approx([1.0, 5.0, 1.0])


@pytest.mark.parametrize("engine", [("mujoco", "cpu"), ("xpbd", None)], ids=["mujoco", "xpbd"])
def test_a_body_switched_in_one_environment_leaves_the_others(engine, no_import):
    """env_1's box made kinematic while the boxes fall: world 1's holds, the others fall on (MuJoCo: one compile makes
    the box switchable in every world, its weld active in world 1 only)."""
    from stages import environments

    solver, backend = engine
    sim = Simulation.open(environments(n=3, style="flat"), env_root="/World/envs", solver=solver, backend=backend,
                          device="cpu", record=False)  # fmt: skip
    sim.run(3)
    boxes = [sim.model.body_label.index(f"/World/envs/env_{w}/box") for w in range(3)]
    prim = sim.stage.GetPrimAtPath("/World/envs/env_1/box")
    UsdPhysics.RigidBodyAPI(prim).CreateKinematicEnabledAttr(True)
    sim.step_frame()
    before = sim.state.body_q.numpy()[boxes, 2].copy()
    sim.run(5)
    after = sim.state.body_q.numpy()[boxes, 2]
    assert after[1] == pytest.approx(before[1], abs=1e-5)
    assert after[0] < before[0] - 0.02 and after[2] < before[2] - 0.02
    assert sim.model.body_kinematic.numpy()[boxes].tolist() == [False, True, False]


def test_a_moved_environment_carries_its_free_bodies_and_the_stage_shows_them_there(no_import):
    """An edited ancestor of bodies (an environment's Xform lifted 1 m) moves its free box with it (its hinged arm
    stays held by its hinge to the world); the poses written after are where the stage shows them."""
    from stages import environments

    sim = Simulation.open(environments(n=2, style="flat"), env_root="/World/envs", device="cpu", record=True)
    sim.run(3)
    boxes = [sim.model.body_label.index(f"/World/envs/env_{w}/box") for w in range(2)]
    before = sim.state.body_q.numpy()[boxes].copy()
    env = UsdGeom.Xformable(sim.stage.GetPrimAtPath("/World/envs/env_1"))
    env.GetOrderedXformOps()[0].Set(Gf.Vec3d(*(np.array(env.GetOrderedXformOps()[0].Get()) + [0, 0, 1.0]).tolist()))
    sim.apply_edits()
    after = sim.state.body_q.numpy()[boxes]
    assert after[1, 2] == pytest.approx(before[1, 2] + 1.0, abs=1e-5)
    np.testing.assert_allclose(after[0], before[0], atol=1e-6)
    sim.step_frame()
    shown = world_pos(sim.stage, "/World/envs/env_1/box", sim.time_code)
    np.testing.assert_allclose(shown, sim.state.body_q.numpy()[boxes[1], :3], atol=1e-4)


def test_replicated_edit_reaches_every_world_or_only_the_first(no_import):
    sim = open_sim("cartpole.usda", worlds=2)
    sim.run(2)
    pole = [b for b, label in enumerate(sim.model.body_label) if label == "/CartPole/Pole"]
    attr = sim.stage.GetPrimAtPath("/CartPole/Pole").GetAttribute("physics:mass")
    attr.Set(0.5)
    sim.step_frame()
    assert sim.model.body_mass.numpy()[pole] == pytest.approx([0.5, 0.5])
    sim.edit_worlds = "first"
    attr.Set(0.7)
    sim.step_frame()
    assert sim.model.body_mass.numpy()[pole] == pytest.approx([0.7, 0.5])


def test_bad_edits_are_said_once_and_not_applied(caplog, no_import):
    """A negative mass, a NaN position and a transform of zero scale: each said once (file, prim, attribute),
    none applied; the run goes on, and a good edit of the same attribute later is taken."""
    sim = open_sim("boxes_on_ground.usda")
    sim.run(3)
    prim = sim.stage.GetPrimAtPath("/World/Box")
    b = sim.model.body_label.index("/World/Box")
    with caplog.at_level(logging.WARNING, logger="newton_usd"):
        for value in (-3.0, -4.0):
            prim.GetAttribute("physics:mass").Set(value)
            sim.step_frame()
        pose = sim.state.body_q.numpy()[b].copy()
        prim.GetAttribute("xformOp:translate").Set(Gf.Vec3d(float("nan"), 0.0, 1.0))
        sim.apply_edits()
        np.testing.assert_allclose(sim.state.body_q.numpy()[b], pose)
        prim.GetAttribute("xformOp:translate").Set(Gf.Vec3d(0.0, 0.0, 1.0))
        UsdGeom.Xformable(prim).AddScaleOp().Set(Gf.Vec3f(0.0, 1.0, 1.0))
        sim.step_frame()
    said = [r.getMessage() for r in caplog.records if "not applied" in r.getMessage()]
    assert len(said) == 3, said
    assert "/World/Box.physics:mass" in said[0] and sim.source_file in said[0]
    assert "NaN" in said[1] and "/World/Box.xformOp:translate" in said[1]
    assert "zero scale" in said[2] and "/World/Box.xformOp" in said[2]
    assert sim.model.body_mass.numpy()[b] == pytest.approx(1.0)
    assert sim.frame == 6 and np.isfinite(sim.state.body_q.numpy()).all()
    prim.GetAttribute("physics:mass").Set(2.0)
    sim.step_frame()
    assert sim.model.body_mass.numpy()[b] == pytest.approx(2.0)


def test_mass_constants_of_one_tree_are_mj_setconst_s():
    """set_const_trees gives what mj_setConst gives for the kinematic trees a mass or armature edit touched (free,
    hinged, ball, slide-only bodies and their actuators), without its cost over every other tree."""
    import copy

    import mujoco

    from newton_usd.solvers.mujoco.set_const import set_const_trees

    m = mujoco.MjModel.from_xml_string(
        """<mujoco><worldbody>
        <body name="free"><freejoint/><geom size=".1" mass="2"/></body>
        <body name="tilted" pos="0 2 0"><freejoint/>
          <geom type="box" size=".1 .2 .3" pos=".1 0 0" euler="10 20 30"/></body>
        <body name="arm" pos="1 0 0"><joint name="h" armature="0.1"/><geom size=".1" pos=".2 0 0"/>
          <body pos="0 0 .3"><joint type="ball"/><geom type="capsule" size=".1" fromto="0 0 0 0 0 .3"/>
            <body pos="0 0 .3"><joint name="s" type="slide"/><geom size=".05"/></body></body></body>
        <body name="slider" pos="3 0 0"><joint type="slide" axis="1 0 0"/><joint type="slide" axis="0 1 0"/>
          <geom size=".1"/></body>
        </worldbody><actuator><position joint="h" kp="3"/><position joint="s" kp="2"/></actuator></mujoco>"""
    )
    ref = copy.copy(m)
    d, d_ref = mujoco.MjData(m), mujoco.MjData(ref)
    for name in ("free", "tilted", "arm", "slider"):
        b = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)
        tree = m.body_treeid == m.body_treeid[b]
        for model in (m, ref):
            model.body_mass[tree] *= 1.7
            model.body_inertia[tree] *= 1.3
            model.dof_armature[m.dof_treeid == m.body_treeid[b]] += 0.01
        set_const_trees(m, d, [b])
        mujoco.mj_setConst(ref, d_ref)
        for field in ("body_subtreemass", "dof_M0", "body_invweight0", "dof_invweight0", "actuator_acc0"):
            np.testing.assert_allclose(getattr(m, field), getattr(ref, field), rtol=1e-10, atol=1e-12, err_msg=field)


@pytest.mark.parametrize("engine", [("xpbd", None), ("mujoco", "warp")], ids=["xpbd", "mujoco-warp"])
def test_a_captured_frame_keeps_replaying_after_value_edits(engine, device):
    """Edits that only change values (a mass, gravity, a moved body) leave the captured frame in place: it replays
    them (on CUDA; Warp records and replays the launches on its CPU device too); none is captured again."""
    solver, backend = engine
    sim = Simulation.open(private_stage("boxes_on_ground.usda"), solver=solver, backend=backend, device=device,
                          record=False)  # fmt: skip
    capture = sim.solver.frame_capture
    capture.cpu_graphs = True
    sim.run(4)
    assert capture.captures == 1
    prim = sim.stage.GetPrimAtPath("/World/Box")
    prim.GetAttribute("physics:mass").Set(3.0)
    UsdPhysics.Scene(sim.stage.GetPrimAtPath("/World/PhysicsScene")).GetGravityMagnitudeAttr().Set(5.0)
    sim.run(3)
    b = sim.model.body_label.index("/World/Box")
    prim.GetAttribute("xformOp:translate").Set(Gf.Vec3d(0.0, 0.0, 3.0))
    sim.run(3)
    assert capture.captures == 1 and capture.invalidations == 0, vars(capture)
    assert capture.replays >= 6
    assert sim.state.body_q.numpy()[b, 2] > 2.5  # moved up there, and falling at 5 m/s^2 from it


def switch_stage():
    """A box falling from 1 m (/Falling), a box resting on the ground (/Resting), and a pad in the air (/Pad) with a box
    0.2 m above it (/Dropped)."""
    from stages import add_box, add_ground, new_stage  # noqa: PLC0415

    stage = new_stage()
    add_ground(stage)
    add_box(stage, "/Falling", 0.2, (0, 0, 1.0), mass=1.0)
    add_box(stage, "/Resting", 0.2, (-1, 0, 0.1), mass=1.0)
    add_box(stage, "/Pad", 0.4, (1, 0, 0.5), mass=1.0)
    add_box(stage, "/Dropped", 0.2, (1, 0, 0.9), mass=1.0)
    return stage


@pytest.mark.parametrize("engine", soak_where_slow(ENGINES, {"mujoco-warp"}))  # (MuJoCo-Warp's: soak)
def test_switches_kinematic_enabled_and_collider_in_place(engine, no_import):
    """During a run: a falling box made kinematic stops and holds its pose, made dynamic again it falls; a body
    disabled (physics:rigidBodyEnabled off) hangs where it is and its collider holds a box dropped on it, as a static
    one; a collider switched off lets its box fall through the ground. Nothing is imported; each engine takes the
    switches in place (Kamino: the kinematic ones with a new solver of the edited model; MuJoCo: a body's first
    kinematic switch compiles it switchable, a weld to a mocap body, and the next switch is in place)."""
    solver, backend = engine
    stage = switch_stage()
    sim = Simulation.open(stage, solver=solver, backend=backend, device="cpu", record=False)
    sim.check_flung = False
    UsdPhysics.RigidBodyAPI(stage.GetPrimAtPath("/Pad")).CreateRigidBodyEnabledAttr(False)
    sim.run(6)
    z = body_z(sim, "/Falling")
    assert z < 0.99
    UsdPhysics.RigidBodyAPI(stage.GetPrimAtPath("/Falling")).CreateKinematicEnabledAttr(True)
    UsdPhysics.CollisionAPI(stage.GetPrimAtPath("/Resting")).CreateCollisionEnabledAttr(False)
    sim.run(10)
    held = body_z(sim, "/Falling")
    assert held == pytest.approx(z, abs=1e-4)  # (MuJoCo's weld to a mocap body: micrometres of sag)
    assert world_pos(stage, "/Falling")[2] == pytest.approx(z, abs=1e-4)  # the stage shows it where it stopped
    solver_before = sim.solver
    UsdPhysics.RigidBodyAPI(stage.GetPrimAtPath("/Falling")).GetKinematicEnabledAttr().Set(False)
    sim.run(10)
    assert body_z(sim, "/Falling") < z - 0.05  # falling again
    assert (sim.solver is solver_before) == (solver != "kamino")
    assert body_z(sim, "/Pad") == pytest.approx(0.5, abs=1e-4)  # disabled: held in the air
    assert body_z(sim, "/Dropped") == pytest.approx(0.8, abs=0.02)  # on the pad, as on a static collider
    assert body_z(sim, "/Resting") < -0.1  # through the ground
    assert sim.rebuilds == 0
    if solver == "mujoco":
        m, g = sim.solver.mj_model, sim.solver.spec_map.shape_mj[sim.model.shape_label.index("/Resting")]
        assert m.geom_contype[g] == m.geom_conaffinity[g] == 0 and m.body_contype[m.geom_bodyid[g]] == 0
        UsdPhysics.CollisionAPI(stage.GetPrimAtPath("/Resting")).GetCollisionEnabledAttr().Set(True)
        sim.apply_edits()
        assert m.geom_contype[g] == m.geom_conaffinity[g] == 1 and m.body_contype[m.geom_bodyid[g]] == 1


@pytest.mark.parametrize("record", [False, True], ids=["live", "recording"])
@pytest.mark.parametrize("engine", [("mujoco", "cpu"), ("xpbd", None)], ids=["mujoco", "xpbd"])
def test_a_body_made_kinematic_goes_where_the_user_moves_it(engine, record, no_import):
    """A body made kinematic during the run, then dragged by its own translate op (on the root layer, under the ops
    the run wrote): it goes there and holds, the stage shows it there; made dynamic, it falls from there."""
    solver, backend = engine
    stage = switch_stage()
    sim = Simulation.open(stage, solver=solver, backend=backend, device="cpu", record=record)
    sim.check_flung = False
    sim.run(5)
    prim = stage.GetPrimAtPath("/Falling")
    UsdPhysics.RigidBodyAPI(prim).CreateKinematicEnabledAttr(True)
    sim.run(2)
    prim.GetAttribute("xformOp:translate").Set(Gf.Vec3d(0.5, 0.0, 2.0), sim.time_code)
    sim.run(3)
    b = sim.model.body_label.index("/Falling")
    np.testing.assert_allclose(sim.state.body_q.numpy()[b, :3], [0.5, 0.0, 2.0], atol=1e-4)
    np.testing.assert_allclose(world_pos(stage, "/Falling", sim.time_code), [0.5, 0.0, 2.0], atol=1e-4)
    UsdPhysics.RigidBodyAPI(prim).GetKinematicEnabledAttr().Set(False)
    sim.run(5)
    x, _, z = sim.state.body_q.numpy()[b, :3]
    assert x == pytest.approx(0.5, abs=1e-3) and 1.8 < z < 2.0 - 0.02 and sim.rebuilds == 0


@pytest.mark.parametrize("engine", soak_where_slow(ENGINES, {"mujoco-warp"}))  # (MuJoCo-Warp's: soak)
def test_an_animated_kinematic_body_moves_and_made_dynamic_falls(engine, no_import):
    """A body kinematic from the start (its free joint flagged, as Newton's importer gives it) follows its prim's
    animation under every engine (Featherstone through the free joint's coordinates) and lifts a box resting on it;
    made dynamic during the run, it falls from where it was, with no import."""
    from stages import add_box, new_stage  # noqa: PLC0415

    solver, backend = engine
    stage = new_stage()
    platform = add_box(stage, "/Platform", 1.0, (0, 0, 0), mass=1.0)
    op = platform.GetPrim().GetAttribute("xformOp:translate")
    op.Set(Gf.Vec3d(0, 0, 0), 0)
    op.Set(Gf.Vec3d(0, 0, 0.5), 60)
    UsdPhysics.RigidBodyAPI(platform.GetPrim()).CreateKinematicEnabledAttr(True)
    add_box(stage, "/Box", 0.2, (0, 0, 0.6), mass=1.0)
    sim = Simulation.open(stage, solver=solver, backend=backend, device="cpu", record=False)
    sim.check_flung = False
    sim.run(15)
    assert body_z(sim, "/Platform") == pytest.approx(0.125, abs=1e-5)
    # Carried up: soft contacts let it sink a little into a platform moved without a velocity (Kamino's, 9 cm).
    assert body_z(sim, "/Box") == pytest.approx(0.125 + 0.6, abs=0.1 if solver == "kamino" else 0.06)
    UsdPhysics.RigidBodyAPI(platform.GetPrim()).GetKinematicEnabledAttr().Set(False)
    sim.run(10)
    assert body_z(sim, "/Platform") < 0.125 - 0.05 and sim.rebuilds == 0  # falling


@pytest.mark.soak
def test_a_collider_switched_under_mujoco_warp_s_sweep_and_prune(monkeypatch, no_import):
    """MuJoCo-Warp sweeps and prunes where a model has many geom pairs (250,000: 1,000 bodies), reading its table of
    pairs, not its list: a collider switched off there lets its box fall through the ground too, and switched on its
    pairs come back (the sweep forced on this small stage)."""
    import mujoco_warp as mjw  # noqa: PLC0415

    put = mjw.put_model

    def sweeping(mj_model):
        m = put(mj_model)
        m.opt.broadphase = mjw.BroadphaseType.SAP_TILE
        return m

    monkeypatch.setattr(mjw, "put_model", sweeping)
    stage = switch_stage()
    sim = Simulation.open(stage, solver="mujoco", backend="warp", device="cpu", record=False)
    sim.check_flung = False
    table = sim.solver.mjw_model.nxn_pairid.numpy().copy()
    sim.run(3)
    UsdPhysics.CollisionAPI(stage.GetPrimAtPath("/Resting")).CreateCollisionEnabledAttr(False)
    sim.run(15)
    assert body_z(sim, "/Resting") < -0.1 and body_z(sim, "/Falling") < 0.9
    UsdPhysics.CollisionAPI(stage.GetPrimAtPath("/Resting")).GetCollisionEnabledAttr().Set(True)
    sim.step_frame()
    np.testing.assert_array_equal(sim.solver.mjw_model.nxn_pairid.numpy(), table)
    assert sim.rebuilds == 0
