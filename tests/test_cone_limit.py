"""A cone-limited SphericalJoint holds its cone whatever the swinging body's inertia."""

import math

import numpy as np
import pytest
from pxr import Gf, Sdf, UsdGeom, UsdPhysics

from newton_usd import ModelBuilder
from newton_usd.core.quat import quat_rotate
from newton_usd.core.types import JointType
from newton_usd.solvers import SolverMuJoCo

from stages import new_stage

CONE_DEG = 30.0
ARM = 0.5


def cone_stage(mass, collider, axis="X", com=(ARM, 0, 0)):
    """A body hung from a spherical joint at (0, 0, 2) whose cone (30 deg) is about +X (``axis``), its center of
    mass 0.5 m out along +X (``com``): gravity swings it down, against the cone. ``collider``: a 5 cm ball there."""
    stage = new_stage()
    body = UsdGeom.Xform.Define(stage, "/Bob")
    body.AddTranslateOp().Set(Gf.Vec3d(0, 0, 2))
    prim = body.GetPrim()
    UsdPhysics.RigidBodyAPI.Apply(prim)
    mass_api = UsdPhysics.MassAPI.Apply(prim)
    mass_api.CreateMassAttr(mass)
    mass_api.CreateCenterOfMassAttr(Gf.Vec3f(*com))
    if collider:
        ball = UsdGeom.Sphere.Define(stage, "/Bob/Ball")
        ball.CreateRadiusAttr(0.05)
        ball.AddTranslateOp().Set(Gf.Vec3d(*com))
        UsdPhysics.CollisionAPI.Apply(ball.GetPrim())
    joint = UsdPhysics.SphericalJoint.Define(stage, "/Cone")
    joint.CreateBody1Rel().SetTargets([Sdf.Path("/Bob")])
    joint.CreateAxisAttr(axis)
    joint.CreateConeAngle0LimitAttr(CONE_DEG)
    joint.CreateConeAngle1LimitAttr(CONE_DEG)
    joint.CreateLocalPos0Attr(Gf.Vec3f(0, 0, 2))
    return stage


@pytest.mark.parametrize("collider", [False, True], ids=["no collider", "collider"])
@pytest.mark.parametrize("mass", [1.0, 50.0], ids=["light", "heavy"])
def test_cone_limit_holds(mass, collider):
    builder = ModelBuilder()
    builder.add_usd(cone_stage(mass, collider))
    model = builder.finalize("cpu")
    solver = SolverMuJoCo(model, backend="cpu")
    s0, s1, control = model.state(), model.state(), model.control()
    dt, worst = 1.0 / 480.0, 0.0
    for _ in range(960):  # 2 s: the swing reaches the cone and settles on it
        solver.step(s0, s1, control, None, dt)
        s0, s1 = s1, s0
        arm = quat_rotate(s0.body_q.numpy()[0][3:].astype(np.float64), np.array([1.0, 0.0, 0.0]))
        worst = max(worst, math.degrees(math.acos(np.clip(arm[0], -1.0, 1.0))))
    assert worst > CONE_DEG - 3.0  # it swung onto the cone ...
    assert worst < CONE_DEG + 3.0  # ... and the cone held it


def _tilt(body_q, axis=(1.0, 0.0, 0.0)):
    """deg: how far the body has turned ``axis`` (body frame) away from where it points at rest."""
    turned = quat_rotate(body_q[3:].astype(np.float64), np.array(axis))
    return math.degrees(math.acos(np.clip(float(np.dot(turned, axis)), -1.0, 1.0)))


def _worst_tilt(sim, frames):
    worst = 0.0
    for _ in range(frames):
        sim.run(1)
        worst = max(worst, _tilt(sim.state.body_q.numpy()[0]))
    return worst


# The body's own inertia a 0.1 m sphere's (no collider), or 250 times below its inertia about the joint (the 5 cm
# collider), one light and one heavy: its mass scales its inertia and its weight alike, and a light and a heavy body
# of either kind swung the same under both solvers (to 0.01 deg, measured), so each kind is run at one mass.
BODIES = [pytest.param(1.0, False, id="light-no collider"), pytest.param(100.0, True, id="heavy-collider")]
# Each kind under each solver; XPBD's light body (its iterations are chosen for the heavy one, where the swing
# would overshoot) is soak: 120 frames of XPBD on Warp's CPU device, half a minute with coverage on 2 cores.
CONE_CASES = [
    pytest.param(solver, *body.values, id=f"{solver}-{body.id}", marks=[pytest.mark.soak] if soak else [])
    for solver in ("xpbd", "featherstone")
    for body in BODIES
    for soak in [solver == "xpbd" and body.id == "light-no collider"]
]


@pytest.mark.parametrize(("solver", "mass", "collider"), CONE_CASES)
def test_cone_limit_holds_under_newton_solvers(solver, mass, collider, caplog, device):
    """Newton's solvers simulate the cone as a D6 joint's two swing-angle limits (exact in the swing plane,
    where gravity swings this body), said as an approximation."""
    from newton_usd import Simulation  # noqa: PLC0415

    stage = cone_stage(mass, collider)
    # XPBD's hard limit and its ball-joint point pull against each other where the body's own inertia is far
    # below its inertia about the joint (the 5 cm collider: 250 times): at Newton's default 2 iterations the swing
    # overshoots to 35.9 deg and bounces; the stage sets none, so the xpbd solver takes enough to hold the limit.
    sim = Simulation.open(stage, solver=solver, device=device, record=False)
    assert sim.solver.newton_model.joint_type.numpy().tolist() == [int(JointType.D6)]
    said = f"spherical joint cone limits are approximated by the {solver} solver as limits of two swing angles"
    assert said in caplog.text and "/Cone" in caplog.text
    worst = _worst_tilt(sim, 120)  # 2 s: the swing reaches the cone and settles on it
    final = _tilt(sim.state.body_q.numpy()[0])
    sim.close()
    assert worst > CONE_DEG - 3.0  # it swung onto the cone ...
    assert worst < CONE_DEG + 2.0, worst  # ... and the cone held it
    assert abs(final - CONE_DEG) < 1.5, final  # resting on it


@pytest.mark.parametrize("solver", ["xpbd", "featherstone"])
def test_twist_about_the_cone_axis_is_free_under_newton_solvers(solver, device):
    """A body hanging on a cone-limited spherical joint whose axis is vertical spins about it freely; its joint
    state (a quaternion, ours) follows; a joint state written moves the body."""
    from newton_usd import Simulation  # noqa: PLC0415

    stage = cone_stage(1.0, False, axis="Z", com=(0, 0, -ARM))
    prim = stage.GetPrimAtPath("/Bob")
    UsdPhysics.RigidBodyAPI(prim).CreateAngularVelocityAttr(Gf.Vec3f(0, 0, math.degrees(3.0)))
    UsdPhysics.MassAPI(prim).CreateDiagonalInertiaAttr(Gf.Vec3f(0.01, 0.01, 0.01))
    sim = Simulation.open(stage, solver=solver, device=device, record=False)
    sim.run(30)  # 0.5 s at 3 rad/s: 1.5 rad about Z
    q = sim.state.body_q.numpy()[0][3:].astype(np.float64)
    yaw = math.degrees(2.0 * math.atan2(q[2], q[3]))
    assert abs(yaw - math.degrees(1.5)) < 1.0, (yaw, q)
    assert _tilt(sim.state.body_q.numpy()[0], (0.0, 0.0, 1.0)) < 0.5  # no swing
    np.testing.assert_allclose(np.abs(sim.state.joint_q.numpy() @ q), 1.0, atol=1e-4)  # the joint's rotation
    np.testing.assert_allclose(sim.state.joint_qd.numpy(), [0.0, 0.0, 3.0], atol=0.05)
    # A joint state written (as a view or a keyframe writes it): 20 deg about X, within the cone.
    half = math.radians(10.0)
    sim.state.joint_q.assign(np.array([math.sin(half), 0.0, 0.0, math.cos(half)], dtype=np.float32))
    sim.state.joint_qd.zero_()
    sim.solver.joint_states_written(sim.state)
    assert abs(_tilt(sim.state.body_q.numpy()[0], (0.0, 0.0, 1.0)) - 20.0) < 0.01
    sim.run(1)
    assert abs(_tilt(sim.state.body_q.numpy()[0], (0.0, 0.0, 1.0)) - 20.0) < 2.0  # started from there
    sim.close()


@pytest.mark.parametrize("solver", ["xpbd", "featherstone"])
def test_an_unlimited_ball_joint_stays_newtons_ball_joint(solver):
    from newton_usd import Simulation  # noqa: PLC0415

    stage = cone_stage(1.0, False)
    stage.GetPrimAtPath("/Cone").GetAttribute("physics:coneAngle0Limit").Clear()
    stage.GetPrimAtPath("/Cone").GetAttribute("physics:coneAngle1Limit").Clear()
    sim = Simulation.open(stage, solver=solver, device="cpu", record=False)
    assert sim.solver.newton_model.joint_type.numpy().tolist() == [int(JointType.BALL)]
    worst = _worst_tilt(sim, 30)  # 0.5 s: it swings down, past where the cone would hold it
    assert worst > 80.0, worst
    q = sim.state.joint_q.numpy().astype(np.float64)
    np.testing.assert_allclose(np.abs(q @ sim.state.body_q.numpy()[0][3:]), 1.0, atol=1e-4)
    sim.close()


def test_mjcf_ball_range_limits_every_angle_under_featherstone(tmp_path):
    """MuJoCo's ball range bounds the whole rotation: Newton's D6 limits all three of its angles (twist too)."""
    from newton_usd import Simulation  # noqa: PLC0415
    from newton_usd.cli import main  # noqa: PLC0415

    (tmp_path / "ball.xml").write_text(
        '<mujoco><compiler angle="degree"/><worldbody><body name="bob" pos="0 0 2"><joint name="ball" type="ball" '
        f'range="0 {CONE_DEG}"/><geom type="sphere" size="0.05" pos="{ARM} 0 0" mass="1"/></body></worldbody></mujoco>'
    )
    assert main(["convert", str(tmp_path / "ball.xml"), "-o", str(tmp_path / "ball.usda")]) == 0
    sim = Simulation.open(str(tmp_path / "ball.usda"), solver="featherstone", device="cpu", record=False)
    np.testing.assert_allclose(sim.solver.newton_model.joint_limit_upper.numpy(), [math.radians(CONE_DEG)] * 3)
    worst = _worst_tilt(sim, 120)
    sim.close()
    assert CONE_DEG - 3.0 < worst < CONE_DEG + 3.0, worst


def test_cone_joint_state_round_trips_through_newtons_euler_angles(device):
    """Our ball joint state (quaternion, angular velocity in the child joint frame) -> Newton's D6 angles and
    rates -> the body's pose and velocity (eval_fk), and back from the body (eval_ik): a swing off both swing
    axes with a twist."""
    from newton_usd import Simulation  # noqa: PLC0415
    from newton_usd.core.quat import quat_from_axis_angle, quat_multiply, quat_rotate  # noqa: PLC0415

    sim = Simulation.open(cone_stage(1.0, False), solver="xpbd", device=device, record=False)
    swing = quat_from_axis_angle(np.array([0.0, 0.6, 0.8]), math.radians(25.0))
    twist = quat_from_axis_angle(np.array([1.0, 0.0, 0.0]), math.radians(140.0))  # (about the cone axis, X)
    q = quat_multiply(swing, twist)
    w = np.array([0.3, -0.2, 1.0])
    state = sim.state
    state.joint_q.assign(q.astype(np.float32))
    state.joint_qd.assign(w.astype(np.float32))
    sim.solver.joint_states_written(state)
    body = state.body_q.numpy()[0].astype(np.float64)
    np.testing.assert_allclose(abs(float(body[3:] @ q)), 1.0, atol=1e-6)  # the joint frames are the bodies'
    # (the parent joint frame is the world's: the body turns at w turned by q, the child joint frame's axes)
    np.testing.assert_allclose(state.body_qd.numpy()[0][3:], quat_rotate(q, w), atol=1e-5)
    state.joint_q.zero_()
    state.joint_qd.zero_()
    sim.solver.exchange.joints_from_bodies(state)
    np.testing.assert_allclose(abs(float(state.joint_q.numpy() @ q)), 1.0, atol=1e-6)
    np.testing.assert_allclose(state.joint_qd.numpy(), w, atol=1e-5)
    sim.close()


def test_check_lists_the_cone_as_approximated_under_xpbd(tmp_path, capsys):
    from newton_usd.cli import main  # noqa: PLC0415

    cone_stage(1.0, False).Export(str(tmp_path / "cone.usda"))
    assert main(["check", str(tmp_path / "cone.usda"), "--solver", "xpbd"]) == 0
    out = capsys.readouterr().out
    listed = [line for line in out.splitlines() if "cone limits are approximated by the xpbd solver" in line]
    assert listed and "/Cone" in listed[0] and "not simulated" not in out, out


def test_explain_says_the_xpbd_iterations_chosen_for_a_stage_that_limits_a_joint(tmp_path, capsys):
    from newton_usd.cli import main  # noqa: PLC0415

    cone_stage(1.0, False).Export(str(tmp_path / "cone.usda"))
    free = cone_stage(1.0, False)
    free.GetPrimAtPath("/Cone").GetAttribute("physics:coneAngle0Limit").Set(-1.0)  # (negative: no cone)
    free.GetPrimAtPath("/Cone").GetAttribute("physics:coneAngle1Limit").Set(-1.0)
    free.Export(str(tmp_path / "free.usda"))
    rows = {}
    for name in ("cone", "free"):
        assert main(["explain", str(tmp_path / f"{name}.usda"), "/PhysicsScene"]) == 0
        rows[name] = [line.split() for line in capsys.readouterr().out.splitlines() if " newton.iterations " in line]
    assert rows["cone"][0][2] == "16" and "xpbd: 16 where the stage sets none and limits a joint" in " ".join(
        rows["cone"][0]
    )
    assert rows["free"][0][2:4] == ["(engine", "default)"], rows["free"]


# Each order of the two angles once (the limits' order in the model is checked for either, and the swing against
# the narrow or the wide side), each solver once.
ELLIPSES = [
    pytest.param("xpbd", 40.0, 20.0, id="xpbd-40.0-20.0", marks=pytest.mark.soak),  # (XPBD's run: half a minute)
    pytest.param("featherstone", 20.0, 40.0, id="featherstone-20.0-40.0"),
]


@pytest.mark.parametrize(("solver", "angle0", "angle1"), ELLIPSES)
def test_elliptical_cone_limits_each_swing_plane_under_newton_solvers(solver, angle0, angle1, caplog, device):
    """An elliptical cone about X: coneAngle0Limit bounds the tilt toward Y, coneAngle1Limit the tilt toward Z,
    where gravity swings this body (about Y); MuJoCo's ball range is circular, of the smaller angle (said)."""
    from newton_usd import Simulation  # noqa: PLC0415

    stage = cone_stage(1.0, False)
    stage.GetPrimAtPath("/Cone").GetAttribute("physics:coneAngle0Limit").Set(angle0)
    stage.GetPrimAtPath("/Cone").GetAttribute("physics:coneAngle1Limit").Set(angle1)
    if solver == "xpbd":
        scene = stage.GetPrimAtPath("/PhysicsScene")
        scene.CreateAttribute("newton:maxSolverIterations", Sdf.ValueTypeNames.Int).Set(8)
    sim = Simulation.open(stage, solver=solver, device=device, record=False)
    np.testing.assert_allclose(sim.solver.newton_model.joint_limit_upper.numpy()[:2], np.radians([angle1, angle0]))
    assert "elliptical" not in caplog.text
    worst = _worst_tilt(sim, 120)
    sim.close()
    print(f"{solver} cone ({angle0}, {angle1}) deg: worst tilt {worst:.2f} deg")
    assert angle1 - 3.0 < worst < angle1 + 3.0, worst
    mujoco = Simulation.open(stage, solver="mujoco", record=False)
    mujoco.close()
    assert "elliptical cone limits are simulated as a circular cone of the smaller angle" in caplog.text
