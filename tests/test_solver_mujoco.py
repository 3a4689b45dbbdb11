import logging
import math

import numpy as np
import pytest

from newton_usd import ModelBuilder, NewtonUsdError
from newton_usd.solvers import SolverMuJoCo

from conftest import SAMPLE_STAGES, SAMPLES
from stages import falling_cube, new_stage, pendulum


def simulate(stage, seconds, dt=1.0 / 480.0, backend="cpu", record=None, device="cpu"):
    b = ModelBuilder()
    b.add_usd(stage)
    model = b.finalize(device)
    solver = SolverMuJoCo(model, backend=backend)
    s0, s1, control = model.state(), model.state(), model.control()
    samples = []
    for _ in range(int(round(seconds / dt))):
        solver.step(s0, s1, control, None, dt)
        s0, s1 = s1, s0
        if record is not None:
            samples.append(getattr(s0, record).numpy().copy())
    return model, s0, solver, np.array(samples)


def test_cube_dropped_from_1m_rests_at_half_its_size():
    _, state, _, traj = simulate(falling_cube(height=1.0), 2.0, record="body_q")
    z = state.body_q.numpy()[0][2]
    assert z == pytest.approx(0.1, abs=0.002)
    # MuJoCo contacts are soft (default solref timeconst 0.02 s): at the 4 m/s impact the cube dips
    # about 3 cm into the ground for a moment, but never passes through it.
    assert traj[:, 0, 2].min() > 0.05
    t_fall = np.argmax(traj[:, 0, 2] < 0.2) / 480.0  # free fall of 0.8 m: sqrt(2 * 0.8 / g)
    assert t_fall == pytest.approx(math.sqrt(2 * 0.8 / 9.81), abs=0.01)
    np.testing.assert_allclose(state.body_q.numpy()[0][3:], [0, 0, 0, 1], atol=1e-4)


def _period(angles, dt):
    a = angles - angles.mean()
    up = np.nonzero((a[:-1] < 0) & (a[1:] >= 0))[0]
    t = (up + (-a[up]) / (a[up + 1] - a[up])) * dt  # linear interpolation of each crossing
    return np.diff(t).mean(), len(t)


@pytest.mark.parametrize("length,inertia", [(0.5, 0.004), (1.0, 0.05)])
def test_pendulum_small_angle_period(length, inertia):
    mass, g, dt = 1.0, 9.81, 1.0 / 480.0
    _, _, _, q = simulate(pendulum(mass=mass, length=length, inertia=inertia, angle_deg=3.0), 6.0, dt, record="joint_q")
    period, crossings = _period(q[:, 0], dt)
    expected = 2 * math.pi * math.sqrt((inertia + mass * length**2) / (mass * g * length))
    assert crossings >= 3
    assert period == pytest.approx(expected, rel=0.01)
    assert q[:, 0].max() == pytest.approx(math.radians(3.0), rel=0.02)  # amplitude kept


def test_driven_pendulum_settles_where_drive_balances_gravity():
    _, state, _, _ = simulate(str(SAMPLES / "pendulum.usda"), 3.0)
    ke = 1.745 * 180 / math.pi
    target = math.radians(60)
    theta = state.joint_q.numpy()[0]
    # ke * (target - theta) = m g d sin(theta), m = 1 kg, d = 0.5 m
    assert ke * (target - theta) == pytest.approx(9.81 * 0.5 * math.sin(theta), rel=0.01)
    np.testing.assert_allclose(state.body_q.numpy()[0][:3], [0, 0, 1.5], atol=1e-5)  # pivot stays


def test_cartpole_prismatic_limit_holds():
    model, state, _, traj = simulate(str(SAMPLES / "cartpole.usda"), 3.0, record="joint_q")
    assert np.abs(traj[:, 0]).max() <= 1.8 + 0.01
    assert abs(traj[-1, 1] - traj[0, 1]) > 0.5  # the pole fell


def test_body_velocity_is_com_velocity():
    model, state, solver, _ = simulate(pendulum(angle_deg=20.0), 0.3)
    body_q = state.body_q.numpy()[0]
    v_com = state.body_qd.numpy()[0][:3]
    w = state.body_qd.numpy()[0][3:]
    from newton_usd.core.quat import quat_rotate

    r = quat_rotate(body_q[3:], [0, 0, -0.5])  # pivot to COM
    np.testing.assert_allclose(v_com, np.cross(w, r), atol=1e-4)


def test_unknown_backend_is_an_error():
    b = ModelBuilder()
    b.add_usd(falling_cube())
    with pytest.raises(NewtonUsdError, match="valid: auto, cpu, warp"):
        SolverMuJoCo(b.finalize("cpu"), backend="gpu")


@pytest.mark.soak  # (a second of MuJoCo-Warp on the CPU a sample; test_warp_backend's exchange tests are main)
@pytest.mark.parametrize("name", SAMPLE_STAGES)
def test_cpu_and_warp_backends_agree_for_one_second(name):
    _, _, _, cpu = simulate(str(SAMPLES / name), 1.0, backend="cpu", record="body_q")
    _, _, solver, warp = simulate(str(SAMPLES / name), 1.0, backend="warp", record="body_q")
    assert solver.mjw_data is not None
    assert np.abs(cpu - warp).max() < 1e-4


@pytest.mark.gpu
@pytest.mark.parametrize("name", SAMPLE_STAGES)
def test_warp_backend_on_cuda_agrees_with_cpu(name):
    _, _, _, cpu = simulate(str(SAMPLES / name), 1.0, backend="cpu", record="body_q")
    _, _, solver, gpu = simulate(str(SAMPLES / name), 1.0, backend="auto", record="body_q", device="cuda")
    assert solver.backend == "warp" and solver.device.is_cuda
    assert np.abs(cpu - gpu).max() < 1e-4


def planar_box_stage(x=0.3, z=1.2, pitch_deg=10.0):
    """A box on three stacked joints to the world (slide x, slide z, hinge y), as MJCF converters write."""
    from pxr import Gf, Sdf, UsdPhysics

    from stages import add_box, add_ground, new_stage

    stage = new_stage()
    add_ground(stage)
    add_box(stage, "/Robot/Torso", 0.2, (x, 0, z), mass=1.0, rotate_xyz=(0, pitch_deg, 0))
    for name, kind, axis in (("rootx", "Prismatic", "X"), ("rootz", "Prismatic", "Z"), ("rooty", "Revolute", "Y")):
        joint = getattr(UsdPhysics, f"{kind}Joint").Define(stage, f"/Robot/{name}")
        joint.CreateBody1Rel().SetTargets([Sdf.Path("/Robot/Torso")])
        joint.CreateAxisAttr(axis)
        joint.CreateLocalPos0Attr(Gf.Vec3f(0, 0, 1))
    return stage


def test_stacked_joints_between_two_bodies_match_native_mujoco():
    import mujoco

    dt = 1.0 / 480.0
    model, state, solver, traj = simulate(planar_box_stage(), 1.0, dt, record="body_q")
    assert model.joint_label == ["/Robot/rootx", "/Robot/rootz", "/Robot/rooty"]  # authored order kept
    np.testing.assert_allclose(model.joint_q.numpy(), [0.3, 0.2, math.radians(10)], atol=1e-6)
    assert solver.mj_model.njnt == 3 and solver.mj_model.nbody == 2
    xml = f"""<mujoco><option timestep="{dt!r}" integrator="implicitfast"/><worldbody>
      <geom type="plane" size="0 0 1" friction="0.5 0.005 0.0001"/><!-- UsdPhysics default: 0.5 -->
      <body pos="0 0 1"><joint type="slide" axis="1 0 0"/><joint type="slide" axis="0 0 1"/>
        <joint type="hinge" axis="0 1 0"/><geom type="box" size=".1 .1 .1" mass="1" friction="0.5 0.005 0.0001"/></body>
    </worldbody></mujoco>"""
    ref = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(ref)
    data.qpos[:] = [0.3, 0.2, math.radians(10)]
    expected = []
    for _ in range(len(traj)):
        mujoco.mj_step(ref, data)
        mujoco.mj_kinematics(ref, data)  # poses of the new coordinates (mj_step leaves those of the old)
        expected.append(data.xpos[1].copy())
    np.testing.assert_allclose(traj[:, 0, :3], np.array(expected), atol=1e-5)
    assert traj[-1, 0, 2] == pytest.approx(0.1, abs=0.003)  # fell and rests on the ground


def test_joint_excluded_from_articulation_does_not_become_a_tree_joint():
    from pxr import Gf, Sdf, UsdPhysics

    stage = pendulum(angle_deg=10.0)
    weld = UsdPhysics.FixedJoint.Define(stage, "/AWeld")  # sorts first, but is a loop closure
    weld.CreateBody1Rel().SetTargets([Sdf.Path("/Pendulum")])
    weld.CreateLocalPos0Attr(Gf.Vec3f(0, 0, 2))
    weld.CreateExcludeFromArticulationAttr(True)
    model, state, _, q = simulate(stage, 0.5, record="joint_q")
    assert model.joint_label == ["/Hinge"]  # the hinge is the tree joint, the weld a constraint
    assert model.equality_label == ["/AWeld"]
    # The weld holds its joint frames together (both identity here): the pendulum is pulled to 0 degrees.
    assert abs(q[-1, 0]) < 0.01 and abs(q[0, 0]) < math.radians(10.0)


def test_kinematic_root_is_held_in_place():
    from pxr import UsdPhysics

    stage = falling_cube()
    UsdPhysics.RigidBodyAPI(stage.GetPrimAtPath("/Cube")).CreateKinematicEnabledAttr(True)
    _, state, _, _ = simulate(stage, 0.5)
    np.testing.assert_allclose(state.body_q.numpy()[0][:3], [0, 0, 1], atol=1e-6)


def d6_pendulum_stage(lock_translations=True, free_rot=("rotY",), limit_rot=None):
    """The pendulum() stage with its revolute hinge replaced by a generic PhysicsJoint (D6): axes in
    ``free_rot`` have no limit (free), the others are locked (low > high), as the UsdPhysics spec says."""
    from pxr import Gf, Sdf, UsdPhysics

    stage = pendulum(angle_deg=5.0)
    stage.RemovePrim("/Hinge")
    joint = UsdPhysics.Joint.Define(stage, "/D6")
    joint.CreateBody1Rel().SetTargets([Sdf.Path("/Pendulum")])
    joint.CreateLocalPos0Attr(Gf.Vec3f(0, 0, 2.0))
    for dof in ("transX", "transY", "transZ", "rotX", "rotY", "rotZ"):
        free = dof in free_rot or (dof.startswith("trans") and not lock_translations)
        if limit_rot and dof == limit_rot[0]:
            lim = UsdPhysics.LimitAPI.Apply(joint.GetPrim(), dof)
            lim.CreateLowAttr(limit_rot[1])
            lim.CreateHighAttr(limit_rot[2])
        elif not free:
            lim = UsdPhysics.LimitAPI.Apply(joint.GetPrim(), dof)
            lim.CreateLowAttr(1.0)
            lim.CreateHighAttr(-1.0)
    return stage


def test_d6_with_one_free_rotation_swings_like_the_revolute_pendulum():
    from newton_usd import JointType

    dt = 1.0 / 480.0
    model, _, solver, q = simulate(d6_pendulum_stage(), 2.0, dt, record="body_q")
    assert model.joint_type.numpy().tolist() == [JointType.D6]
    assert model.joint_dof_dim.numpy().tolist() == [[0, 1]]
    assert model.joint_q.numpy()[0] == pytest.approx(math.radians(5.0), abs=1e-5)
    assert solver.mj_model.njnt == 1
    _, _, _, ref = simulate(pendulum(angle_deg=5.0), 2.0, dt, record="body_q")
    np.testing.assert_allclose(q, ref, atol=1e-6)


def test_d6_axes_without_limits_are_free_and_limits_hold():
    # Translations free (no limit: free, as the spec says), rotations locked: the body falls freely.
    model, state, solver, _ = simulate(d6_pendulum_stage(lock_translations=False, free_rot=()), 0.5)
    assert model.joint_dof_dim.numpy().tolist() == [[3, 0]] and solver.mj_model.njnt == 3
    assert state.body_q.numpy()[0][2] == pytest.approx(2.0 - 0.5 * 9.81 * 0.25, abs=0.01)
    # Rotations are locked to the joint frames (aligned with the world here), whatever the authored tilt.
    np.testing.assert_allclose(state.body_q.numpy()[0][3:], [0, 0, 0, 1], atol=1e-5)
    # One limited rotation: the 5-degree start swings back but stays within -3..+6 degrees.
    _, _, _, q = simulate(d6_pendulum_stage(free_rot=(), limit_rot=("rotY", -3.0, 6.0)), 2.0, record="joint_q")
    assert q[:, 0].min() >= math.radians(-3.0) - 0.01
    # Every axis locked: a fixed joint.
    model, state, _, _ = simulate(d6_pendulum_stage(free_rot=()), 0.2)
    from newton_usd import JointType

    assert model.joint_type.numpy().tolist() == [JointType.FIXED]
    np.testing.assert_allclose(state.body_q.numpy()[0], [0, 0, 2, 0, 0, 0, 1], atol=1e-6)  # held at the joint frame


def test_d6_with_every_rotation_free_is_a_ball_joint(caplog):
    """Three free rotations, no limit or drive: a ball joint (any rotation, no gimbal lock of stacked hinges),
    moving as the spherical joint does; one of them limited: hinges, as said in a warning."""
    from pxr import Gf, Sdf, UsdPhysics

    from newton_usd import JointType

    stage = d6_pendulum_stage(free_rot=("rotX", "rotY", "rotZ"))
    spin = Gf.Vec3f(40, 200, 90)  # (deg/s) about every axis
    UsdPhysics.RigidBodyAPI(stage.GetPrimAtPath("/Pendulum")).CreateAngularVelocityAttr(spin)
    with caplog.at_level(logging.WARNING, logger="newton_usd"):
        model, _, solver, q = simulate(stage, 1.0, record="body_q")
    assert model.joint_type.numpy().tolist() == [JointType.BALL] and solver.mj_model.njnt == 1
    assert not any("several free rotation axes" in r.getMessage() for r in caplog.records)
    ball = d6_pendulum_stage(free_rot=())
    ball.RemovePrim("/D6")
    joint = UsdPhysics.SphericalJoint.Define(ball, "/Ball")
    joint.CreateBody1Rel().SetTargets([Sdf.Path("/Pendulum")])
    joint.CreateLocalPos0Attr(Gf.Vec3f(0, 0, 2.0))
    UsdPhysics.RigidBodyAPI(ball.GetPrimAtPath("/Pendulum")).CreateAngularVelocityAttr(spin)
    _, _, _, ref = simulate(ball, 1.0, record="body_q")
    np.testing.assert_allclose(q, ref, atol=1e-6)
    assert np.ptp(q[:, 0, 3:], axis=0).max() > 0.5  # (it tumbles: the body frame origin is the pivot)
    # Limits of -180 and 180 degrees bound no rotation: still a ball joint.
    wide = d6_pendulum_stage(free_rot=("rotX", "rotY", "rotZ"), limit_rot=("rotY", -180.0, 180.0))
    b = ModelBuilder()
    b.add_usd(wide)
    assert b.finalize("cpu").joint_type.numpy().tolist() == [JointType.BALL]
    # One rotation limited: three hinges, and the warning.
    caplog.clear()
    limited = d6_pendulum_stage(free_rot=("rotX", "rotY", "rotZ"), limit_rot=("rotZ", -30.0, 30.0))
    with caplog.at_level(logging.WARNING, logger="newton_usd"):
        b = ModelBuilder()
        b.add_usd(limited)
        model = b.finalize("cpu")
    assert model.joint_type.numpy().tolist() == [JointType.D6] and model.joint_dof_dim.numpy().tolist() == [[0, 3]]
    assert any("several free rotation axes" in r.getMessage() for r in caplog.records)


def tilted_ball_pendulum():
    """The pendulum stage with its hinge replaced by a spherical joint at (0, 0, 2), the bob tilted by
    rotateXYZ (20, 10, 0); returns (stage, joint)."""
    from pxr import Gf, Sdf, UsdGeom, UsdPhysics

    stage = pendulum(angle_deg=0.0)
    UsdGeom.Xformable(stage.GetPrimAtPath("/Pendulum")).GetOrderedXformOps()[1].Set(Gf.Vec3f(20, 10, 0))
    stage.RemovePrim("/Hinge")
    joint = UsdPhysics.SphericalJoint.Define(stage, "/Ball")
    joint.CreateBody1Rel().SetTargets([Sdf.Path("/Pendulum")])
    joint.CreateLocalPos0Attr(Gf.Vec3f(0, 0, 2))
    return stage, joint


def test_spherical_joint_started_tilted_matches_native_mujoco():
    import mujoco

    from newton_usd.core.quat import quat_multiply, xyzw_to_wxyz

    stage, _ = tilted_ball_pendulum()
    dt = 1.0 / 480.0
    model, _, solver, traj = simulate(stage, 1.0, dt, record="body_q")
    r0 = model.joint_q.numpy()[:4].astype(np.float64)
    # rotateXYZ (20, 10, 0): X first, then Y.
    rx = np.array([math.sin(math.radians(10)), 0, 0, math.cos(math.radians(10))])
    ry = np.array([0, math.sin(math.radians(5)), 0, math.cos(math.radians(5))])
    np.testing.assert_allclose(np.abs(np.dot(r0, quat_multiply(ry, rx))), 1.0, atol=1e-6)
    xml = f"""<mujoco><option timestep="{dt!r}" integrator="implicitfast"/><worldbody>
      <body pos="0 0 2"><joint type="ball"/><inertial pos="0 0 -0.5" mass="1" diaginertia="0.004 0.004 0.004"/>
      </body></worldbody></mujoco>"""
    ref = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(ref)
    data.qpos[:] = xyzw_to_wxyz(r0)
    expected = []
    for _ in range(len(traj)):
        mujoco.mj_step(ref, data)
        expected.append(np.concatenate([data.xpos[1], data.xquat[1]]))
    expected = np.array(expected)
    np.testing.assert_allclose(traj[:, 0, :3], expected[:, :3], atol=1e-5)
    np.testing.assert_allclose(np.abs(np.sum(traj[:, 0, 3:] * expected[:, [4, 5, 6, 3]], axis=1)), 1.0, atol=1e-5)
    assert abs(np.dot(traj[-1, 0, 3:], traj[0, 0, 3:])) < 0.999  # it swung (the pivot itself stays)


def test_a_state_read_back_and_pushed_again_goes_on_the_same():
    """joint_q/joint_qd as the solver reports them are exact model coordinates: pushed into a fresh solver
    (a ball joint with a rotated child frame and a tilted start, a tumbling free body), the motion goes on
    as in the solver that never left MuJoCo's own state."""
    from pxr import Gf, UsdPhysics

    from stages import add_box

    stage, joint = tilted_ball_pendulum()
    joint.CreateLocalRot0Attr(Gf.Quatf(0.9, 0.1, 0.3, 0.2).GetNormalized())
    joint.CreateLocalRot1Attr(Gf.Quatf(0.8, -0.2, 0.1, 0.4).GetNormalized())
    add_box(stage, "/Tumbler", 0.2, (3, 0, 2), mass=1.0, rotate_xyz=(30, 40, 10))
    UsdPhysics.RigidBodyAPI(stage.GetPrimAtPath("/Tumbler")).CreateAngularVelocityAttr(Gf.Vec3f(200, -100, 300))
    b = ModelBuilder()
    b.add_usd(stage)
    model = b.finalize("cpu")
    dt = 1.0 / 480.0
    solver = SolverMuJoCo(model, backend="cpu")
    s0, s1, control = model.state(), model.state(), model.control()
    for _ in range(120):
        solver.step(s0, s1, control, None, dt)
        s0, s1 = s1, s0
    copy, fresh_out = model.state(), model.state()
    copy.joint_q.assign(s0.joint_q.numpy())
    copy.joint_qd.assign(s0.joint_qd.numpy())
    fresh = SolverMuJoCo(model, backend="cpu")
    for _ in range(60):
        solver.step(s0, s1, control, None, dt)
        s0, s1 = s1, s0
        fresh.step(copy, fresh_out, control, None, dt)
        copy, fresh_out = fresh_out, copy
    assert np.abs(s0.joint_qd.numpy()).max() > 1.0  # both joints moving
    np.testing.assert_allclose(copy.body_q.numpy(), s0.body_q.numpy(), atol=2e-5)
    np.testing.assert_allclose(copy.joint_qd.numpy(), s0.joint_qd.numpy(), atol=1e-3)


def test_applied_joint_force_pushes_and_stops_pushing():
    """Control.joint_f reaches MuJoCo while it is set (a 4 N push on a 2 kg slider for 0.2 s gives
    0.4 m/s), and once it is back to zero the slider coasts."""
    b = ModelBuilder()
    b.add_mjcf("""<mujoco><option timestep="0.002" gravity="0 0 0"/><worldbody>
      <body name="cart"><joint name="rail" type="slide" axis="1 0 0"/><inertial pos="0 0 0" mass="2"
        diaginertia="1 1 1"/></body></worldbody></mujoco>""")
    model = b.finalize("cpu")
    solver = SolverMuJoCo(model, backend="cpu")
    s0, s1, control = model.state(), model.state(), model.control()
    for force, steps in ((4.0, 100), (0.0, 100)):
        control.joint_f.assign(np.array([force], dtype=np.float32))
        for _ in range(steps):
            solver.step(s0, s1, control, None, 0.002)
            s0, s1 = s1, s0
        assert s0.joint_qd.numpy()[0] == pytest.approx(0.4, rel=1e-4)


def four_bar_stage(tilt_deg=20.0):
    """A parallelogram four-bar linkage: crank and rocker hinged to the world, a coupler on both; the
    rocker-coupler hinge closes the loop."""
    from pxr import Gf, Sdf, UsdGeom, UsdPhysics

    from stages import add_ground, new_stage

    stage = new_stage()
    add_ground(stage)
    t = math.radians(tilt_deg)
    tip = (0.4 * math.sin(t), 0.0, 0.4 * math.cos(t))

    def link(path, base, height, rot_y):
        body = UsdGeom.Xform.Define(stage, path)
        body.AddTranslateOp().Set(Gf.Vec3d(*base))
        body.AddRotateXYZOp().Set(Gf.Vec3f(0, rot_y, 0))
        UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
        UsdPhysics.MassAPI.Apply(body.GetPrim()).CreateMassAttr(1.0)
        cap = UsdGeom.Capsule.Define(stage, path + "/Shape")
        cap.CreateAxisAttr("Z" if height else "X")
        cap.CreateRadiusAttr(0.02)
        cap.CreateHeightAttr(abs(height) or 1.0)
        cap.AddTranslateOp().Set(Gf.Vec3d(0, 0, height / 2) if height else Gf.Vec3d(0.5, 0, 0))
        return body

    link("/Crank", (0, 0, 1), 0.4, tilt_deg)
    link("/Rocker", (1, 0, 1), 0.4, tilt_deg)
    link("/Coupler", (tip[0], 0, 1 + tip[2]), 0.0, 0.0)

    def hinge(path, body0, body1, pos0, pos1):
        j = UsdPhysics.RevoluteJoint.Define(stage, path)
        if body0:
            j.CreateBody0Rel().SetTargets([Sdf.Path(body0)])
        j.CreateBody1Rel().SetTargets([Sdf.Path(body1)])
        j.CreateAxisAttr("Y")
        j.CreateLocalPos0Attr(Gf.Vec3f(*pos0))
        j.CreateLocalPos1Attr(Gf.Vec3f(*pos1))

    hinge("/J1_CrankBase", None, "/Crank", (0, 0, 1), (0, 0, 0))
    hinge("/J2_RockerBase", None, "/Rocker", (1, 0, 1), (0, 0, 0))
    hinge("/J3_CrankCoupler", "/Crank", "/Coupler", (0, 0, 0.4), (0, 0, 0))
    hinge("/J4_RockerCoupler", "/Rocker", "/Coupler", (0, 0, 0.4), (1, 0, 0))
    return stage


def test_four_bar_linkage_loop_stays_closed():
    from newton_usd.core.quat import quat_rotate

    model, state, solver, traj = simulate(four_bar_stage(), 1.5, record="body_q")
    assert model.joint_label == ["/J1_CrankBase", "/J2_RockerBase", "/J3_CrankCoupler"]
    assert model.equality_label == ["/J4_RockerCoupler", "/J4_RockerCoupler"]
    assert solver.mj_model.neq == 2
    rocker, coupler = model.body_label.index("/Rocker"), model.body_label.index("/Coupler")
    gaps = []
    for q in traj:
        rocker_tip = q[rocker, :3] + quat_rotate(q[rocker, 3:], [0, 0, 0.4])
        coupler_end = q[coupler, :3] + quat_rotate(q[coupler, 3:], [1, 0, 0])
        gaps.append(np.linalg.norm(rocker_tip - coupler_end))
    assert max(gaps) < 0.005  # the loop stays closed (soft equality constraints)
    np.testing.assert_allclose(np.abs(traj[:, coupler, 3:]), np.tile([0, 0, 0, 1], (len(traj), 1)), atol=0.01)
    assert np.abs(traj[-1, coupler, :3] - traj[0, coupler, :3]).max() > 0.05  # and the linkage moved


def stacked_boxes():
    from stages import add_box, add_ground, new_stage

    stage = new_stage()
    add_ground(stage)
    add_box(stage, "/Lower", 0.2, (0, 0, 0.1), mass=1.0)
    add_box(stage, "/Upper", 0.2, (0, 0, 0.5), mass=1.0)
    return stage


def test_filtered_pairs_do_not_collide():
    from pxr import Sdf, UsdPhysics

    _, state, _, _ = simulate(stacked_boxes(), 1.0)
    assert state.body_q.numpy()[1][2] == pytest.approx(0.3, abs=0.003)  # rests on the lower box
    stage = stacked_boxes()
    UsdPhysics.FilteredPairsAPI.Apply(stage.GetPrimAtPath("/Upper")).CreateFilteredPairsRel().SetTargets(
        [Sdf.Path("/Lower")]
    )
    model, state, _, _ = simulate(stage, 1.0)
    assert model.body_collision_filter_pairs == [(0, 1)]
    assert state.body_q.numpy()[1][2] == pytest.approx(0.1, abs=0.003)  # passed through, rests on the ground


def test_collision_groups_filter_each_other():
    from pxr import Sdf, UsdPhysics

    stage = stacked_boxes()
    boxes = UsdPhysics.CollisionGroup.Define(stage, "/Groups/Boxes")
    floor = UsdPhysics.CollisionGroup.Define(stage, "/Groups/Floor")
    boxes.GetCollidersCollectionAPI().GetIncludesRel().SetTargets([Sdf.Path("/Upper")])
    floor.GetCollidersCollectionAPI().GetIncludesRel().SetTargets([Sdf.Path("/Ground"), Sdf.Path("/Lower")])
    boxes.CreateFilteredGroupsRel().SetTargets([Sdf.Path("/Groups/Floor")])
    model, state, solver, _ = simulate(stage, 0.6)
    assert state.body_q.numpy()[1][2] < -0.5  # the upper box fell through the lower box and the floor
    assert state.body_q.numpy()[0][2] == pytest.approx(0.1, abs=0.003)  # the lower box still rests


def test_an_inverted_collision_group_collides_with_its_filtered_groups_only_not_with_colliders_in_none():
    """invertFilteredGroups: "the filter will disable collisions against all colliders except for those in the
    selected filter groups" (UsdPhysics), colliders in no group among them: the lower box, inverted against the
    upper box's group, passes through the ungrouped ground; the upper box, in a plain group, lands on it."""
    from pxr import Sdf, UsdPhysics

    stage = stacked_boxes()
    lower = UsdPhysics.CollisionGroup.Define(stage, "/Groups/Lower")
    upper = UsdPhysics.CollisionGroup.Define(stage, "/Groups/Upper")
    lower.GetCollidersCollectionAPI().GetIncludesRel().SetTargets([Sdf.Path("/Lower")])
    upper.GetCollidersCollectionAPI().GetIncludesRel().SetTargets([Sdf.Path("/Upper")])
    lower.CreateFilteredGroupsRel().SetTargets([Sdf.Path("/Groups/Upper")])
    lower.CreateInvertFilteredGroupsAttr(True)
    _, state, _, _ = simulate(stage, 0.6)
    z_lower, z_upper = state.body_q.numpy()[0][2], state.body_q.numpy()[1][2]
    assert z_lower < -0.5  # through the ground
    assert z_upper == pytest.approx(0.1, abs=0.003)  # on the ground


def test_spherical_cone_limit_bounds_the_swing():
    from pxr import Gf, Sdf, UsdPhysics

    def stage_with(cone_deg):
        stage = pendulum(angle_deg=0.0)
        stage.RemovePrim("/Hinge")
        joint = UsdPhysics.SphericalJoint.Define(stage, "/Ball")
        joint.CreateBody1Rel().SetTargets([Sdf.Path("/Pendulum")])
        joint.CreateLocalPos0Attr(Gf.Vec3f(0, 0, 2))
        joint.CreateAxisAttr("Z")
        if cone_deg is not None:
            joint.CreateConeAngle0LimitAttr(cone_deg)
            joint.CreateConeAngle1LimitAttr(cone_deg)
        UsdPhysics.RigidBodyAPI(stage.GetPrimAtPath("/Pendulum")).CreateAngularVelocityAttr(Gf.Vec3f(0, 200, 0))
        return stage

    def max_tilt(stage):
        _, _, _, traj = simulate(stage, 1.0, record="body_q")
        return np.degrees(2 * np.arccos(np.clip(np.abs(traj[:, 0, 6]), 0, 1))).max()

    assert max_tilt(stage_with(None)) > 30.0
    assert max_tilt(stage_with(10.0)) < 14.0  # soft limit (MuJoCo solref 0.02): a 3.5 rad/s hit overshoots ~2.5 deg

    # UsdPhysics leaves the twist about the joint axis free; MuJoCo's ball range bounds it too: said once,
    # unless the joint is MuJoCo's own (MjcJointAPI, as mujoco-usd-converter writes an MJCF ball range).
    said = "spherical joint cone limits bound the whole rotation angle, twist about the joint axis included"
    stage = stage_with(10.0)
    UsdPhysics.RigidBodyAPI(stage.GetPrimAtPath("/Pendulum")).CreateAngularVelocityAttr(Gf.Vec3f(0, 0, 200))

    def solver_kinds(stage):
        builder = ModelBuilder()
        builder.add_usd(stage)
        return SolverMuJoCo(builder.finalize("cpu"), backend="cpu").diagnostics.kinds

    assert [paths for kind, paths in solver_kinds(stage).items() if kind.startswith(said)] == [["/Ball"]]
    assert max_tilt(stage) < 14.0  # a spin about the axis is stopped at the cone angle, as the warning says
    stage.GetPrimAtPath("/Ball").AddAppliedSchema("MjcJointAPI")
    assert not any(kind.startswith(said) for kind in solver_kinds(stage))


def test_joint_state_sets_the_initial_angle_and_body_pose():
    from pxr import Sdf

    stage = pendulum(angle_deg=0.0)
    hinge = stage.GetPrimAtPath("/Hinge")
    hinge.CreateAttribute("state:angular:physics:position", Sdf.ValueTypeNames.Float).Set(30.0)
    hinge.CreateAttribute("state:angular:physics:velocity", Sdf.ValueTypeNames.Float).Set(-10.0)
    b = ModelBuilder()
    b.add_usd(stage)
    model = b.finalize("cpu")
    assert model.joint_q.numpy()[0] == pytest.approx(math.radians(30), rel=1e-6)
    assert model.joint_qd.numpy()[0] == pytest.approx(math.radians(-10), rel=1e-6)
    q = model.body_q.numpy()[0]
    np.testing.assert_allclose(q[3:], [0, math.sin(math.radians(15)), 0, math.cos(math.radians(15))], atol=1e-6)
    _, state, _, _ = simulate(stage, 1.0 / 480.0)
    assert state.joint_q.numpy()[0] == pytest.approx(math.radians(30) - math.radians(10) / 480, abs=2e-4)


def test_authored_velocity_of_an_articulated_body_becomes_its_joint_velocity():
    from pxr import Gf, UsdPhysics

    stage = pendulum(angle_deg=0.0)
    UsdPhysics.RigidBodyAPI(stage.GetPrimAtPath("/Pendulum")).CreateAngularVelocityAttr(Gf.Vec3f(0, 90, 0))
    b = ModelBuilder()
    b.add_usd(stage)
    assert b.finalize("cpu").joint_qd.numpy()[0] == pytest.approx(math.pi / 2, rel=1e-6)


def driven_pendulum(mass, acceleration, gravity=9.81, stiffness=100.0, damping=20.0):
    """The pendulum (bob 0.5 m below the pivot) with a drive to 45 deg; inertia scales with the mass."""
    from pxr import UsdPhysics

    stage = pendulum(mass=mass, inertia=0.004 * mass, angle_deg=0.0)
    UsdPhysics.Scene(stage.GetPrimAtPath("/PhysicsScene")).CreateGravityMagnitudeAttr(gravity)
    drive = UsdPhysics.DriveAPI.Apply(stage.GetPrimAtPath("/Hinge"), "angular")
    drive.CreateTypeAttr("acceleration" if acceleration else "force")
    drive.CreateTargetPositionAttr(45.0)
    drive.CreateStiffnessAttr(stiffness)  # (deg/s^2)/deg for acceleration drives; N*m/deg for force drives
    drive.CreateDampingAttr(damping)
    return stage


def test_acceleration_drive_moves_the_same_for_any_link_mass():
    dt = 1.0 / 480.0
    light = simulate(driven_pendulum(1.0, True, gravity=0.0), 1.5, dt, record="joint_q")[3][:, 0]
    heavy = simulate(driven_pendulum(10.0, True, gravity=0.0), 1.5, dt, record="joint_q")[3][:, 0]
    np.testing.assert_allclose(heavy, light, atol=1e-5)
    # q'' = 100 (45 deg - q) - 20 q': critically damped at 10 rad/s, settled on the target in 1.5 s
    assert light[-1] == pytest.approx(math.radians(45), abs=1e-3)
    t = 0.2
    expected = math.radians(45) * (1 - (1 + 10 * t) * math.exp(-10 * t))
    assert light[int(round(t / dt)) - 1] == pytest.approx(expected, abs=0.01)
    # With gravity the motion still does not depend on the mass (gravity's torque scales with it too).
    light_g = simulate(driven_pendulum(1.0, True), 1.0, dt, record="joint_q")[3][:, 0]
    heavy_g = simulate(driven_pendulum(10.0, True), 1.0, dt, record="joint_q")[3][:, 0]
    np.testing.assert_allclose(heavy_g, light_g, atol=1e-5)
    # A force drive (about the same stiffness for the light link) moves the heavy link much more slowly.
    force = {"gravity": 0.0, "stiffness": 100.0 * 0.254 * math.pi / 180, "damping": 20.0 * 0.254 * math.pi / 180}
    light_f = simulate(driven_pendulum(1.0, False, **force), 0.2, dt, record="joint_q")[3][:, 0]
    heavy_f = simulate(driven_pendulum(10.0, False, **force), 0.2, dt, record="joint_q")[3][:, 0]
    assert light_f[-1] == pytest.approx(light[len(light_f) - 1], abs=0.01)
    assert heavy_f[-1] < 0.5 * light_f[-1]


def rope_stage(min_distance=None, max_distance=None, d6=False):
    """A 1 kg ball 1 m from an anchor point in the world, hanging or thrown, held by a distance joint
    (or a generic joint with free axes and a distance limit)."""
    from pxr import Gf, Sdf, UsdGeom, UsdPhysics

    stage = new_stage()
    ball = UsdGeom.Sphere.Define(stage, "/Ball")
    ball.CreateRadiusAttr(0.05)
    ball.AddTranslateOp().Set(Gf.Vec3d(0.6, 0, 2.0))
    UsdPhysics.RigidBodyAPI.Apply(ball.GetPrim()).CreateVelocityAttr(Gf.Vec3f(0, 3, 0))
    UsdPhysics.CollisionAPI.Apply(ball.GetPrim())
    UsdPhysics.MassAPI.Apply(ball.GetPrim()).CreateMassAttr(1.0)
    if d6:
        joint = UsdPhysics.Joint.Define(stage, "/Rope")  # no LimitAPI on an axis: every axis free
        limit = UsdPhysics.LimitAPI.Apply(joint.GetPrim(), "distance")
        limit.CreateLowAttr(min_distance if min_distance is not None else -1.0)
        limit.CreateHighAttr(max_distance)
    else:
        joint = UsdPhysics.DistanceJoint.Define(stage, "/Rope")
        if min_distance is not None:
            joint.CreateMinDistanceAttr(min_distance)
        if max_distance is not None:
            joint.CreateMaxDistanceAttr(max_distance)
    joint.CreateBody1Rel().SetTargets([Sdf.Path("/Ball")])
    joint.CreateLocalPos0Attr(Gf.Vec3f(0, 0, 2.0))  # the world anchor
    return stage


@pytest.mark.parametrize("d6", [False, True])
def test_distance_joint_keeps_the_ball_within_its_range(d6):
    anchor = np.array([0.0, 0.0, 2.0])
    _, _, _, traj = simulate(rope_stage(max_distance=1.0, d6=d6), 2.0, record="body_q")
    dist = np.linalg.norm(traj[:, 0, :3] - anchor, axis=1)
    assert dist.max() < 1.0 + 0.03  # a rope: the snap overshoots 2 cm (a soft MuJoCo limit), no more
    assert dist[-1] > 0.95  # it fell until the rope went taut
    assert traj[:, 0, 2].min() > 0.9  # and never fell past it
    # a minimum too: started at 0.6 m, the ball is pushed out to 0.8 m at once and stays beyond it
    _, _, _, traj = simulate(rope_stage(min_distance=0.8, max_distance=1.0, d6=d6), 1.0, record="body_q")
    dist = np.linalg.norm(traj[:, 0, :3] - anchor, axis=1)
    assert dist[48:].min() > 0.79 and dist.max() < 1.05  # from 0.1 s on (the push-out overshoots)


def test_unconstrained_ball_falls_past_where_the_rope_would_hold():
    from newton_usd import ModelBuilder

    stage = rope_stage(max_distance=1.0)
    stage.GetPrimAtPath("/Rope").GetAttribute("physics:jointEnabled").Set(False)
    _, _, _, traj = simulate(stage, 1.0, record="body_q")
    assert traj[:, 0, 2].min() < 0.5
    b = ModelBuilder()
    b.add_usd(rope_stage(max_distance=1.0))
    assert b.distance_max == [1.0] and b.distance_body0 == [-1]


@pytest.mark.parametrize("backend", ["cpu", "warp"])
def test_joint_q_of_several_free_bodies_is_each_body_pose(backend):
    # Each free joint's 7 coordinates are its body's position and Warp quaternion (world-attached free joints
    # at the body frames), not the positions of all free joints followed by all quaternions.
    _, state, _, _ = simulate(str(SAMPLES / "boxes_on_ground.usda"), 0.05, backend=backend)
    joint_q, body_q = state.joint_q.numpy().reshape(-1, 7), state.body_q.numpy()
    assert len(joint_q) == len(body_q) == 3
    np.testing.assert_allclose(joint_q, body_q, atol=1e-5)


@pytest.mark.parametrize("axis", ["Z", "X"])
def test_cone_collider_has_the_cones_mass_and_rests_on_its_base_but_not_on_its_apex(axis):
    """A UsdGeom.Cone collider (MuJoCo has none: a convex mesh of the cone's volume): mass and center of mass
    of a true cone of that density; base down it stands; apex down, nudged, it falls over."""
    from pxr import Gf, UsdGeom, UsdPhysics

    from stages import add_ground, new_stage

    radius, height, density = 0.2, 0.6, 500.0
    tilt = {"Z": (0, 0, 0), "X": (0, -90, 0)}[axis]  # (the X-axis cone turned so that its apex points up)

    def stage_with(apex_down):
        stage = new_stage()
        add_ground(stage)
        cone = UsdGeom.Cone.Define(stage, "/Cone")
        cone.CreateRadiusAttr(radius)
        cone.CreateHeightAttr(height)
        cone.CreateAxisAttr(axis)
        cone.AddTranslateOp().Set(Gf.Vec3d(0, 0, 0.5))
        # apex down: turned a further 175 degrees about a horizontal axis
        flip = (175, 0, 0) if axis == "Z" else (0, 175, 0)
        cone.AddRotateXYZOp().Set(Gf.Vec3f(*(t + f * apex_down for t, f in zip(tilt, flip, strict=True))))
        UsdPhysics.RigidBodyAPI.Apply(cone.GetPrim())
        UsdPhysics.CollisionAPI.Apply(cone.GetPrim())
        UsdPhysics.MassAPI.Apply(cone.GetPrim()).CreateDensityAttr(density)
        return stage

    model, state, _, _ = simulate(stage_with(False), 2.0)
    volume = math.pi * radius**2 * height / 3.0
    assert model.body_mass.numpy()[0] == pytest.approx(density * volume, rel=1e-6)
    com = model.body_com.numpy()[0]  # a quarter of the height above the base: height/4 below the middle
    np.testing.assert_allclose(com, np.array({"Z": (0, 0, -height / 4), "X": (-height / 4, 0, 0)}[axis]), atol=1e-9)
    # Base down: at rest with the base on the ground, the middle half the height up, the axis vertical.
    q = state.body_q.numpy()[0]
    assert q[2] == pytest.approx(height / 2, abs=2e-3)
    up = {"Z": np.array([0.0, 0.0, 1.0]), "X": np.array([1.0, 0.0, 0.0])}[axis]
    from newton_usd.core.quat import quat_rotate

    assert quat_rotate(q[3:], up)[2] == pytest.approx(1.0, abs=1e-3)
    # Apex down, 5 degrees off: it falls onto its side (the axis ends up far from vertical).
    _, state, _, _ = simulate(stage_with(True), 2.0)
    q = state.body_q.numpy()[0]
    assert abs(quat_rotate(q[3:], up)[2]) < 0.6


def _box_with_mesh(points, collider: bool):
    from pxr import UsdGeom, UsdPhysics

    from stages import add_box, add_ground, new_stage

    stage = new_stage()
    add_ground(stage)
    add_box(stage, "/Box", 0.2, (0, 0, 0.5), mass=1.0)
    mesh = UsdGeom.Mesh.Define(stage, "/Box/Decal")
    mesh.CreatePointsAttr(points)
    mesh.CreateFaceVertexCountsAttr([3] * (len(points) - 2))
    mesh.CreateFaceVertexIndicesAttr([i for k in range(1, len(points) - 1) for i in (0, k, k + 1)])
    if collider:
        UsdPhysics.CollisionAPI.Apply(mesh.GetPrim())
        UsdPhysics.MeshCollisionAPI.Apply(mesh.GetPrim()).CreateApproximationAttr("none")
    return stage


@pytest.mark.parametrize("collider", [False, True])
def test_flat_mesh_compiles_and_the_body_keeps_its_mass(collider):
    """A flat mesh (a decal, MJCF's inertia="shell" meshes) has no volume: MuJoCo's default mesh inertia
    refuses it ("mesh volume is too small"); the body's mass is given, so it compiles as a shell."""
    square = [(-0.1, -0.1, 0.1), (0.1, -0.1, 0.1), (0.1, 0.1, 0.1), (-0.1, 0.1, 0.1)]
    model, state, solver, _ = simulate(_box_with_mesh(square, collider), 1.0)
    assert solver.mj_model.body_mass[1] == pytest.approx(1.0)
    assert state.body_q.numpy()[0][2] == pytest.approx(0.1, abs=0.005)  # fell and rests on the ground


def test_compile_error_names_the_prim():
    from newton_usd import NewtonUsdError

    point = [(0.0, 0.0, 0.1)] * 3  # no area, no volume
    with pytest.raises(NewtonUsdError, match=r"(?s)could not compile the model at /Box/Decal: .*Decal"):
        simulate(_box_with_mesh(point, True), 0.01)


def test_box_rests_on_a_quad_mesh_ground():
    """A ground authored as one flat quad Mesh collider (common in USD scenes): MuJoCo cannot hull
    coplanar points, so it is thickened behind its face; the box rests on the face itself."""
    from pxr import Gf, UsdGeom, UsdPhysics

    from stages import add_box, new_stage

    stage = new_stage()
    ground = UsdGeom.Mesh.Define(stage, "/Ground")
    ground.CreatePointsAttr([(-5, -5, 0), (5, -5, 0), (5, 5, 0), (-5, 5, 0)])
    ground.CreateFaceVertexCountsAttr([4])
    ground.CreateFaceVertexIndicesAttr([0, 1, 2, 3])
    ground.AddTranslateOp().Set(Gf.Vec3d(0, 0, 0.25))
    UsdPhysics.CollisionAPI.Apply(ground.GetPrim())
    add_box(stage, "/Box", 0.2, (0, 0, 1.0), mass=1.0)
    _, state, solver, _ = simulate(stage, 1.5)
    assert state.body_q.numpy()[0][2] == pytest.approx(0.35, abs=0.003)
    assert any("flat mesh colliders" in k for k in solver.diagnostics.kinds)
