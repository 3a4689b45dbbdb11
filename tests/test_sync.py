import hashlib

import numpy as np
import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from newton_usd import Simulation
from newton_usd.core.quat import gf_to_xyzw, matrix_to_quat, quat_conjugate, quat_multiply, quat_rotate
from newton_usd.sync import StageSync
from newton_usd.usd import StageFrame

from conftest import SAMPLES
from stages import add_box, add_ground, falling_cube, new_stage


def world_pos(stage, path, time):
    m = UsdGeom.Xformable(stage.GetPrimAtPath(path)).ComputeLocalToWorldTransform(time)
    return np.array(m.ExtractTranslation())


def test_prims_follow_the_simulated_bodies_every_frame():
    sim = Simulation.open(str(SAMPLES / "boxes_on_ground.usda"))
    history = []
    for _ in range(30):
        sim.step_frame()
        history.append(sim.state.body_q.numpy().copy())
    for frame in (1, 15, 30):
        for b, path in enumerate(sim.model.body_label):
            np.testing.assert_allclose(world_pos(sim.stage, path, frame), history[frame - 1][b][:3], atol=1e-5)
    # The tilted box keeps its authored rotation at frame 0 and rotates with the body afterwards.
    m = UsdGeom.Xformable(sim.stage.GetPrimAtPath("/World/TiltedBox")).ComputeLocalToWorldTransform(30)
    q = gf_to_xyzw(m.ExtractRotationQuat())
    np.testing.assert_allclose(np.abs(np.dot(q, history[29][1][3:])), 1.0, atol=1e-5)


def test_restore_brings_back_the_authored_poses_and_source_is_untouched(tmp_path):
    src = tmp_path / "cube.usda"
    authored = falling_cube(src)
    authored.Save()
    before = hashlib.sha256(src.read_bytes()).hexdigest()
    sim = Simulation.open(str(src))
    sim.run(20)
    assert world_pos(sim.stage, "/Cube", 20)[2] < 0.5
    out = sim.save(tmp_path / "cube.sim.usda")
    sim.reset()
    assert world_pos(sim.stage, "/Cube", 20)[2] == pytest.approx(1.0)
    assert not sim.output_layer.rootPrims
    sim.close()
    assert hashlib.sha256(src.read_bytes()).hexdigest() == before
    output = Usd.Stage.Open(out)
    attr = output.GetPrimAtPath("/Cube").GetAttribute("xformOp:translate:physics")
    assert attr.GetNumTimeSamples() == 21  # frame 0 (authored pose) and 20 simulated frames
    assert world_pos(output, "/Cube", 0)[2] == pytest.approx(1.0)
    assert world_pos(output, "/Cube", 20)[2] < 0.5
    assert (output.GetStartTimeCode(), output.GetEndTimeCode()) == (0, 20)


def test_body_under_scaled_parent_and_body_nested_in_body():
    stage = new_stage()
    add_ground(stage)
    group = UsdGeom.Xform.Define(stage, "/Group")
    group.AddTranslateOp().Set(Gf.Vec3d(1, 2, 0))
    group.AddRotateZOp().Set(30.0)
    group.AddScaleOp().Set(Gf.Vec3f(2, 2, 2))
    add_box(stage, "/Group/Box", 0.1, (0, 0, 1), mass=1.0)
    add_box(stage, "/Group/Box/Inner", 0.5, (1, 0, 0), mass=1.0)  # a body nested in a body
    before = {p: world_pos(stage, p, 0) for p in ("/Group/Box", "/Group/Box/Inner")}
    sim = Simulation.open(stage)
    assert sim.model.body_label == ["/Group/Box", "/Group/Box/Inner"]
    assert sim.model.body_q.numpy()[1][2] == pytest.approx(before["/Group/Box/Inner"][2])
    sim.run(10)
    body_q = sim.state.body_q.numpy()
    for b, path in enumerate(sim.model.body_label):
        np.testing.assert_allclose(world_pos(stage, path, 10), body_q[b][:3], atol=1e-5)
    # The box keeps its world scale (the parent's 2x) on the stage.
    m = UsdGeom.Xformable(stage.GetPrimAtPath("/Group/Box")).ComputeLocalToWorldTransform(10)
    assert Gf.Transform(m).GetScale()[0] == pytest.approx(2.0, rel=1e-5)


def test_centimeter_y_up_stage_written_back_in_stage_units():
    stage = new_stage(up="Y", meters_per_unit=0.01)
    add_ground(stage, axis="Y")
    add_box(stage, "/Cube", 20.0, (10, 100, 0), mass=1.0)
    sim = Simulation.open(stage)
    sim.run(120)  # 2 s at 60 fps: fallen and at rest
    p = world_pos(stage, "/Cube", 120)
    np.testing.assert_allclose(p, [10, 10, 0], atol=0.25)  # centimeters, Y up


def test_reset_xform_stack_is_kept():
    stage = falling_cube()
    parent = UsdGeom.Xform.Define(stage, "/Offset")
    parent.AddTranslateOp().Set(Gf.Vec3d(5, 0, 0))
    cube = UsdGeom.Cube.Define(stage, "/Offset/Cube")
    cube.CreateSizeAttr(0.2)
    cube.SetResetXformStack(True)
    cube.AddTranslateOp().Set(Gf.Vec3d(0, 1, 1))
    UsdPhysics.RigidBodyAPI.Apply(cube.GetPrim())
    UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
    sim = Simulation.open(stage)
    sim.run(5)
    ops = stage.GetPrimAtPath("/Offset/Cube").GetAttribute("xformOpOrder").Get()
    assert list(ops)[0] == "!resetXformStack!"
    b = sim.model.body_label.index("/Offset/Cube")
    np.testing.assert_allclose(world_pos(stage, "/Offset/Cube", 5), sim.state.body_q.numpy()[b][:3], atol=1e-5)


def test_default_time_shows_the_authored_pose():
    stage = falling_cube()
    sim = Simulation.open(stage)
    sim.run(30)
    assert world_pos(stage, "/Cube", Usd.TimeCode.Default())[2] == pytest.approx(1.0)
    assert world_pos(stage, "/Cube", 30)[2] < 1.0


def test_joint_states_written_in_degrees_and_removed_on_reset(tmp_path):
    import math

    sim = Simulation.open(str(SAMPLES / "pendulum.usda"), joint_states=True)
    sim.run(60)
    hinge = sim.stage.GetPrimAtPath("/World/Pendulum/Hinge")
    position = hinge.GetAttribute("state:angular:physics:position")
    assert position.GetNumTimeSamples() == 61
    assert position.Get(60) == pytest.approx(math.degrees(sim.state.joint_q.numpy()[0]), rel=1e-5)
    assert position.Get(0) == pytest.approx(0.0, abs=1e-6)
    assert hinge.GetAttribute("state:angular:physics:velocity").Get(60) == pytest.approx(
        math.degrees(sim.state.joint_qd.numpy()[0]), rel=1e-4, abs=1e-3
    )
    out = sim.save(tmp_path / "p.sim.usda")
    sim.reset()
    assert not hinge.GetAttribute("state:angular:physics:position").HasAuthoredValue()
    # The saved output imports again: its joint state starts at the authored (frame 0) angle.
    again = Simulation.open(out)
    assert again.model.joint_q.numpy()[0] == pytest.approx(0.0, abs=1e-6)


def test_animated_kinematic_body_follows_its_animation_and_carries_a_box():
    """A kinematic platform, animated up 0.5 m over 1 s, lifts the box resting on it; the platform
    is moved by its own animation (not written back), the box by the simulation."""
    from pxr import Gf, UsdGeom, UsdPhysics

    from newton_usd.sim import Simulation

    from stages import add_box, new_stage

    stage = new_stage()
    platform = UsdGeom.Cube.Define(stage, "/Platform")
    platform.CreateSizeAttr(1.0)
    op = platform.AddTranslateOp()
    op.Set(Gf.Vec3d(0, 0, 0), 0)
    op.Set(Gf.Vec3d(0, 0, 0.5), 60)
    UsdPhysics.RigidBodyAPI.Apply(platform.GetPrim()).CreateKinematicEnabledAttr(True)
    UsdPhysics.CollisionAPI.Apply(platform.GetPrim())
    add_box(stage, "/Box", 0.2, (0, 0, 0.6), mass=1.0)
    stage.SetStartTimeCode(0)
    stage.SetEndTimeCode(60)
    sim = Simulation.open(stage, device="cpu")
    assert sim.solver.mj_model.nmocap == 1
    sim.run(30)
    q = sim.state.body_q.numpy()
    assert q[0, 2] == pytest.approx(0.25, abs=1e-6)  # the platform is where its animation is at t = 0.5 s
    # The box rides on it, sunk about 2 cm into it: MuJoCo's contacts are soft (timeconst 0.02 s) and a
    # mocap body has no velocity for them, so a platform rising at 0.5 m/s pushes through by ~v * 0.02 s.
    assert q[1, 2] == pytest.approx(0.25 + 0.6, abs=0.03)
    sim.run(60)  # the animation holds its last value after frame 60
    assert sim.state.body_q.numpy()[0, 2] == pytest.approx(0.5, abs=1e-6)
    assert sim.state.body_q.numpy()[1, 2] == pytest.approx(0.5 + 0.6, abs=0.005)  # at rest on it again
    spec = sim.output_layer.GetPrimAtPath("/Platform")
    assert spec is None or "xformOp:translate:physics" not in spec.attributes  # its animation is its own
    assert "xformOp:translate:physics" in sim.output_layer.GetPrimAtPath("/Box").attributes


@pytest.mark.parametrize("xform_ops", ["trs", "matrix"])
@pytest.mark.parametrize("up, meters_per_unit", [("Z", 1.0), ("Y", 0.01)])
def test_stage_sync_puts_every_kind_of_body_prim_at_its_simulated_pose(xform_ops, up, meters_per_unit):
    """Random poses written for bodies at the top level, under a rotated Xform, under a scaled one,
    nested in a body, under a non-uniform scale (shear: a matrix op), with a reset xform stack: the
    composed world transform of each prim is its body's pose, in stage units and axes."""
    stage = new_stage(up=up, meters_per_unit=meters_per_unit)
    rotated = UsdGeom.Xform.Define(stage, "/Rotated")
    rotated.AddTranslateOp().Set(Gf.Vec3d(1, 2, 3))
    rotated.AddRotateXYZOp().Set(Gf.Vec3f(10, 20, 30))
    scaled = UsdGeom.Xform.Define(stage, "/Scaled")
    scaled.AddRotateZOp().Set(40.0)
    scaled.AddScaleOp().Set(Gf.Vec3f(2, 2, 2))
    stretched = UsdGeom.Xform.Define(stage, "/Stretched")
    stretched.AddScaleOp().Set(Gf.Vec3f(1, 3, 1))
    paths = ["/Top", "/Rotated/Body", "/Scaled/Body", "/Top/Inner", "/Stretched/Body", "/Rotated/Reset"]
    for path in paths:
        UsdGeom.Xform.Define(stage, path).AddTranslateOp().Set(Gf.Vec3d(0.1, 0.2, 0.3))
    UsdGeom.Xformable(stage.GetPrimAtPath("/Rotated/Reset")).SetResetXformStack(True)
    frame = StageFrame.of(stage)
    layer = Sdf.Layer.CreateAnonymous()
    layer.timeCodesPerSecond = stage.GetTimeCodesPerSecond()  # else USD rescales the layer's times
    stage.GetSessionLayer().subLayerPaths.append(layer.identifier)
    sync = StageSync(stage, layer, paths, frame, xform_ops=xform_ops)

    rng = np.random.default_rng(3)
    poses = []
    for t in (0.0, 1.0):
        body_q = np.concatenate([rng.uniform(-2, 2, (len(paths), 3)), rng.normal(size=(len(paths), 4))], axis=1)
        body_q[:, 3:] /= np.linalg.norm(body_q[:, 3:], axis=1, keepdims=True)
        sync.write(body_q, t)
        poses.append(body_q)
    r_inv = quat_conjugate(frame.rotation)
    for t, body_q in ((0.0, poses[0]), (1.0, poses[1]), (Usd.TimeCode.Default(), poses[0])):
        for b, path in enumerate(paths):
            m = np.array(UsdGeom.Xformable(stage.GetPrimAtPath(path)).ComputeLocalToWorldTransform(t))
            expected_pos = quat_rotate(r_inv, body_q[b, :3]) / meters_per_unit
            np.testing.assert_allclose(m[3, :3], expected_pos, atol=1e-9 / meters_per_unit, err_msg=f"{path} at {t}")
            rows = m[:3, :3] / np.linalg.norm(m[:3, :3], axis=1, keepdims=True)  # the prim's scale off
            q = matrix_to_quat(rows.T)
            expected_q = quat_multiply(r_inv, body_q[b, 3:])
            assert abs(np.dot(q, expected_q)) == pytest.approx(1.0, abs=1e-9), path
    ops = {p: list(stage.GetPrimAtPath(p).GetAttribute("xformOpOrder").Get()) for p in paths}
    if xform_ops == "matrix":
        assert ops["/Top"] == ops["/Scaled/Body"] == ["xformOp:transform:physics"]
    else:
        assert ops["/Top"] == ["xformOp:translate:physics", "xformOp:orient:physics"]
        assert ops["/Stretched/Body"] == ["xformOp:transform:physics"]  # a sheared local transform
    assert ops["/Rotated/Reset"][0] == "!resetXformStack!"
    sync.restore()
    assert not layer.rootPrims


def test_stage_sync_refuses_unknown_xform_ops():
    stage = falling_cube()
    with pytest.raises(ValueError, match="xform_ops"):
        StageSync(stage, Sdf.Layer.CreateAnonymous(), ["/Cube"], StageFrame.of(stage), xform_ops="euler")
