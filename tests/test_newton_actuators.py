"""NewtonActuator prims (newton-usd-schemas 0.6): imported into the model, bad ones refused by name, and stepped by
every engine: a PD actuator holds a horizontal arm where its gains balance gravity, a max-effort clamp lets it
sink, a PID removes the steady error, a delay shifts the response.

The stage: a 1 kg arm, a uniform rod 1 m long hinged at one end about Y (horizontal), at rest along +X. Gravity's torque
about +Y is ``m g l cos(q)``, turning the arm down (q > 0); a PD toward ``q_t`` holds it where
``kp (q_t - q) + m g l cos(q) = 0``.
"""

from __future__ import annotations

import math
import subprocess

import numpy as np
import pytest
import warp as wp
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from newton_usd.core.builder import ModelBuilder
from newton_usd.errors import UsdInputError
from newton_usd.solvers import SOLVERS

from conftest import usdsim_command
from stages import new_stage

M, L, G = 1.0, 0.5, 9.81
INERTIA = M * (2 * L) ** 2 / 12  # (a uniform rod 1 m long, hinged at its end: 1/3 kg m^2 about the hinge)
DT = 0.002


def arm_stage(
    path=None, drive="NewtonPDControlAPI", values=None, apis=(), target_deg=None, joint_type="revolute", gravity=True
):
    """The arm, its hinge and one NewtonActuator /Actuator on it with ``drive`` and ``apis`` applied (the
    apiSchemas list authored as metadata: the schemas need not be registered) and ``values`` authored
    (``newton:NAME`` -> value); ``target_deg``: the hinge's PhysicsDriveAPI targetPosition (no gains)."""
    stage = new_stage(path)
    if not gravity:
        UsdPhysics.Scene.Get(stage, "/PhysicsScene").CreateGravityMagnitudeAttr(0.0)
    body = UsdGeom.Xform.Define(stage, "/Arm")
    body.AddTranslateOp().Set(Gf.Vec3d(L, 0, 1))
    prim = body.GetPrim()
    UsdPhysics.RigidBodyAPI.Apply(prim)
    mass = UsdPhysics.MassAPI.Apply(prim)
    mass.CreateMassAttr(M)
    mass.CreateCenterOfMassAttr(Gf.Vec3f(0, 0, 0))
    mass.CreateDiagonalInertiaAttr(Gf.Vec3f(1e-3, INERTIA, INERTIA))
    if joint_type == "revolute":
        joint = UsdPhysics.RevoluteJoint.Define(stage, "/Hinge")
    else:
        joint = UsdPhysics.SphericalJoint.Define(stage, "/Hinge")
    joint.CreateBody1Rel().SetTargets([Sdf.Path("/Arm")])
    joint.CreateAxisAttr("Y")
    joint.CreateLocalPos0Attr(Gf.Vec3f(0, 0, 1))
    joint.CreateLocalPos1Attr(Gf.Vec3f(-L, 0, 0))
    if target_deg is not None:
        UsdPhysics.DriveAPI.Apply(joint.GetPrim(), "angular").CreateTargetPositionAttr(float(target_deg))
    act = stage.DefinePrim("/Actuator", "NewtonActuator")
    act.CreateRelationship("newton:targets").SetTargets([Sdf.Path("/Hinge")])
    schemas = ([drive] if drive else []) + list(apis)
    act.SetMetadata("apiSchemas", Sdf.TokenListOp.CreateExplicit(schemas))
    for name, value in (values or {}).items():
        if isinstance(value, int) and not isinstance(value, bool):
            type_name = Sdf.ValueTypeNames.Int
        elif isinstance(value, list | tuple):
            type_name = Sdf.ValueTypeNames.FloatArray
        elif isinstance(value, str):
            type_name = Sdf.ValueTypeNames.Asset
        else:
            type_name = Sdf.ValueTypeNames.Float
        act.CreateAttribute(f"newton:{name}", type_name).Set(value)
    return stage


def held_angle(kp, target=0.0):
    """q where ``kp (target - q) + m g l cos(q) = 0``."""
    q = target
    for _ in range(50):
        q = target + M * G * L * math.cos(q) / kp
    return q


def make_solver(model, solver):
    """``solver`` for ``model``: a name of SOLVERS, "mujoco" the cpu backend, "mujoco_warp" the warp backend."""
    if solver.startswith("mujoco"):
        return SOLVERS["mujoco"](model, backend="warp" if solver == "mujoco_warp" else "cpu")
    return SOLVERS[solver](model)


def simulate(stage, solver, steps, record=False, target_at=None, dt=DT, device="cpu"):
    """The hinge's angle (rad) after ``steps`` steps of ``dt`` under ``solver`` on ``device`` (each step's, with
    ``record``); ``target_at``: (step, rad), the Control's target set before that step."""
    builder = ModelBuilder()
    builder.add_usd(stage)
    model = builder.finalize(device)
    engine = make_solver(model, solver)
    s0, s1, control = model.state(), model.state(), model.control()
    angles = []
    for i in range(steps):
        if target_at is not None and i == target_at[0]:
            control.joint_target_pos.assign(np.array([target_at[1]], dtype=np.float32))
        engine.step(s0, s1, control, None, dt)
        s0, s1 = s1, s0
        if record:
            angles.append(float(s0.joint_q.numpy()[0]))
    return np.array(angles) if record else float(s0.joint_q.numpy()[0])


# ---------------------------------------------------------------- import


def test_pd_actuator_is_imported_with_its_clamps_and_delay():
    stage = arm_stage(
        values={"kp": 100.0, "kd": 5.0, "constEffort": 0.5, "maxEffort": 3.0, "delaySteps": 4},
        apis=("NewtonMaxEffortClampingAPI", "NewtonActuatorDelayAPI"),
        target_deg=-10.0,
    )
    builder = ModelBuilder()
    builder.add_usd(stage)
    model = builder.finalize("cpu")
    assert model.actuator_count == 1 and model.actuator_label == ["/Actuator"]
    assert model.joint_label[model.actuator_joint.numpy()[0]] == "/Hinge"
    spec = model.actuator_spec[0]
    assert (spec.drive, spec.kp, spec.kd, spec.const_effort, spec.delay_steps) == ("pd", 100.0, 5.0, 0.5, 4)
    assert spec.clamps == (("max_effort", {"max_effort": 3.0}),)
    # the hinge's drive target, in degrees on the stage, without gains: the actuator's target in radians
    assert model.joint_target_pos.numpy()[0] == pytest.approx(math.radians(-10.0), rel=1e-6)


def test_pid_dc_motor_and_lookup_table_are_imported():
    stage = arm_stage(
        drive="NewtonPIDControlAPI",
        values={"kp": 50.0, "ki": 20.0, "integralMax": 0.3, "saturationEffort": 8.0, "velocityLimit": 10.0,
                "maxMotorEffort": 6.0, "lookupPositions": [-1.0, 0.0, 1.0], "lookupEfforts": [2.0, 4.0, 2.0]},
        apis=("NewtonDCMotorClampingAPI", "NewtonPositionBasedClampingAPI"),
    )  # fmt: skip
    builder = ModelBuilder()
    builder.add_usd(stage)
    spec = builder.actuator_spec[0]
    assert (spec.drive, spec.kp, spec.ki, spec.integral_max) == ("pid", 50.0, 20.0, pytest.approx(0.3))
    assert spec.clamp("dc_motor") == {"saturation_effort": 8.0, "velocity_limit": 10.0, "max_motor_effort": 6.0}
    assert spec.clamp("position_based") == {"lookup_positions": (-1.0, 0.0, 1.0), "lookup_efforts": (2.0, 4.0, 2.0)}
    assert spec.delay_steps == 0


@pytest.mark.parametrize(
    "case, expected",
    [
        ("no_drive", "exactly one control law"),
        ("two_drives", "two or more (NewtonPDControlAPI, NewtonPIDControlAPI)"),
        ("ball_target", "not a 1-DOF joint"),
        ("no_target", "needs a target"),
        ("missing_model", "cannot be read"),
        ("negative_kp", "newton:kp: must be a number >= 0"),
    ],
)
def test_bad_actuator_is_refused_naming_its_prim(case, expected):
    kw = {}
    if case == "no_drive":
        kw["drive"] = None
    elif case == "two_drives":
        kw["apis"] = ("NewtonPIDControlAPI",)
    elif case == "ball_target":
        kw["joint_type"] = "spherical"
    elif case == "missing_model":
        kw.update(drive="NewtonNeuralControlAPI", values={"modelPath": "/nonexistent/policy.onnx"})
    elif case == "negative_kp":
        kw["values"] = {"kp": -1.0}
    stage = arm_stage(**kw)
    if case == "no_target":
        stage.GetPrimAtPath("/Actuator").GetRelationship("newton:targets").ClearTargets(True)
    with pytest.raises(UsdInputError) as err:
        ModelBuilder().add_usd(stage)
    message = str(err.value)
    assert "/Actuator" in message and expected in message, message
    assert "\n" not in message


def test_usdsim_exits_2_on_a_bad_actuator(tmp_path):
    arm_stage(tmp_path / "bad.usda", drive=None).Save()
    done = subprocess.run(usdsim_command() + [str(tmp_path / "bad.usda"), "-n", "1"], capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if "/Actuator" in line]
    assert lines and "exactly one control law" in lines[0], done.stderr


# ---------------------------------------------------------------- stepped by each engine

ENGINES = ["mujoco", "xpbd", "featherstone"]
KAMINO = pytest.param("kamino", marks=pytest.mark.soak)  # (Kamino's kernels compiled on the CPU: a minute and more)
WARP = pytest.param("mujoco_warp", marks=pytest.mark.soak)  # (MuJoCo-Warp's kernels compiled on the CPU: minutes cold)
KP, KD = 100.0, 5.0  # (17 rad/s against the arm's 1/3 kg m^2 about the hinge, damping ratio 0.43: settled in 0.8 s)


@pytest.mark.parametrize("solver", [*ENGINES, "semi_implicit", KAMINO, WARP])
def test_pd_actuator_holds_the_arm_where_its_gains_balance_gravity(solver):
    stage = arm_stage(values={"kp": KP, "kd": KD}, target_deg=-10.0)
    # (semi_implicit's penalty joint is stable at steps up to 0.49 ms here: 0.8 s in steps of 0.4 ms)
    q = simulate(stage, solver, 2000, dt=4e-4) if solver == "semi_implicit" else simulate(stage, solver, 400)
    expected = held_angle(KP, math.radians(-10.0))
    assert abs(math.degrees(q - expected)) < 0.2, (math.degrees(q), math.degrees(expected))


@pytest.mark.parametrize("solver", [None, "featherstone"])
def test_pd_actuator_holds_the_arm_under_usdsim(tmp_path, solver):
    """usdsim's default engine (MuJoCo), and a Newton solver's frames (its steps as one frame function)."""
    arm_stage(tmp_path / "arm.usda", values={"kp": KP, "kd": KD}, target_deg=-10.0).Save()
    args = [str(tmp_path / "arm.usda"), "-q", "-n", "48", "--write-joint-states"]
    done = subprocess.run(usdsim_command() + args + (["--solver", solver] if solver else []), capture_output=True,
                          text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = Usd.Stage.Open(str(tmp_path / "arm.sim.usda"))
    q = out.GetPrimAtPath("/Hinge").GetAttribute("state:angular:physics:position").Get(48)  # degrees
    assert abs(q - math.degrees(held_angle(KP, math.radians(-10.0)))) < 0.2, q


@pytest.mark.parametrize("solver", ENGINES)
def test_max_effort_below_gravity_lets_the_arm_sink(solver):
    """A clamp at 2 N·m, below gravity's 4.9 N·m at the horizontal: the arm sinks until gravity's torque
    ``m g l cos(q)`` is down to the clamp (66 deg), far below the 2.8 deg the gains alone would hold it at."""
    stage = arm_stage(values={"kp": KP, "kd": KD, "maxEffort": 2.0}, apis=("NewtonMaxEffortClampingAPI",))
    q = simulate(stage, solver, 400)
    assert math.degrees(q) > 30.0, math.degrees(q)
    unclamped = simulate(arm_stage(values={"kp": KP, "kd": KD}), solver, 400)
    assert math.degrees(unclamped) < 3.0


@pytest.mark.parametrize("solver", ENGINES)
def test_pid_removes_the_steady_state_error(solver):
    pd = simulate(arm_stage(values={"kp": KP, "kd": KD}), solver, 400)
    pid = simulate(arm_stage(drive="NewtonPIDControlAPI", values={"kp": KP, "kd": KD, "ki": 400.0}), solver, 400)
    assert math.degrees(pd) > 2.5  # (the PD's error, gravity over its kp)
    assert abs(math.degrees(pid)) < 0.1 * math.degrees(pd), (math.degrees(pid), math.degrees(pd))


@pytest.mark.gpu
@pytest.mark.parametrize("solver", ["xpbd", "featherstone", "mujoco_warp"])
def test_actuators_step_alike_on_cuda(solver):
    """The CUDA path of the actuators (their kernels on the solver's device, MuJoCo-Warp's between its steps): a PID
    and a delayed PD with a max-effort clamp give the CPU's angles."""
    cases = (
        arm_stage(drive="NewtonPIDControlAPI", values={"kp": KP, "kd": KD, "ki": 400.0}),
        arm_stage(
            values={"kp": KP, "kd": KD, "maxEffort": 2.0, "delaySteps": 3},
            apis=("NewtonMaxEffortClampingAPI", "NewtonActuatorDelayAPI"),
        ),  # fmt: skip
    )
    for stage in cases:
        cpu = simulate(stage, solver, 200)
        cuda = simulate(stage, solver, 200, device="cuda")
        assert abs(math.degrees(cuda - cpu)) < 0.05, (math.degrees(cuda), math.degrees(cpu))


@pytest.mark.parametrize("solver", [*ENGINES, WARP])
def test_delay_shifts_the_response_by_its_steps(solver):
    """Without gravity the arm rests at its target, 0, until the Control's target steps to -10 deg at step 10: the
    actuator delayed by 6 steps moves the arm as the one delayed by 1 does, 5 steps later. (An undelayed PD is a
    MuJoCo actuator of its own under MuJoCo, its damping taken implicitly: a delayed one's effort is applied as a
    force, so delays are compared with delays.)"""
    n, k = 5, 10
    change = (k, math.radians(-10.0))

    def run(steps):
        values = {"kp": KP, "kd": KD, "delaySteps": steps}
        stage = arm_stage(values=values, apis=("NewtonActuatorDelayAPI",), gravity=False)
        return simulate(stage, solver, 40, record=True, target_at=change)

    one, delayed = run(1), run(1 + n)
    assert np.abs(one[: k + 1]).max() < 1e-6 and np.abs(delayed[: k + 1 + n]).max() < 1e-6  # (at rest until then)
    assert abs(one[k + 10]) > 1e-3  # (it moves)
    np.testing.assert_allclose(delayed[k + n :], one[k:-n], atol=1e-5)


@pytest.mark.parametrize("solver", ["mujoco", "featherstone"])
def test_reset_starts_a_pid_and_a_delay_over(solver):
    """Run, reset the actuators (as a Simulation's reset and an environment's do), run again from the start: the same
    motion; without the reset the PID's integral and the delay's history carry over."""
    stage = arm_stage(drive="NewtonPIDControlAPI", values={"kp": KP, "kd": KD, "ki": 400.0, "delaySteps": 3},
                      apis=("NewtonActuatorDelayAPI",))  # fmt: skip
    builder = ModelBuilder()
    builder.add_usd(stage)
    model = builder.finalize("cpu")
    engine = make_solver(model, solver)

    def run():
        s0, s1, control = model.state(), model.state(), model.control()
        for _ in range(100):
            engine.step(s0, s1, control, None, DT)
            s0, s1 = s1, s0
        return float(s0.joint_q.numpy()[0])

    first, carried = run(), run()
    engine.reset_actuators()
    assert run() == pytest.approx(first, abs=1e-6) and abs(carried - first) > 1e-4, (first, carried)


@pytest.mark.parametrize("solver", ["mujoco", "featherstone"])
def test_actuators_are_replicated_into_worlds_and_reset_by_world(solver):
    builder = ModelBuilder()
    builder.add_usd(arm_stage(drive="NewtonPIDControlAPI", values={"kp": KP, "kd": KD, "ki": 400.0}))
    builder.replicate(2)
    model = builder.finalize("cpu")
    assert model.actuator_count == 2 and model.actuator_label == ["/Actuator", "/Actuator"]
    assert model.actuator_joint.numpy().tolist() == [0, 1]
    engine = make_solver(model, solver)
    s0, s1, control = model.state(), model.state(), model.control()
    for _ in range(100):
        engine.step(s0, s1, control, None, DT)
        s0, s1 = s1, s0
    q = s0.joint_q.numpy()
    assert q[0] == pytest.approx(q[1], abs=1e-9)
    (group,) = engine.actuators.actuators.groups
    engine.reset_actuators(wp.array([True, False], dtype=wp.bool, device="cpu"))
    integral = group.state.drive_state.integral.numpy()
    assert integral[0] == 0.0 and integral[1] != 0.0


def test_a_vector_environment_s_position_actions_are_the_actuator_s_targets():
    from newton_usd.envs import StageVectorEnv

    stage = arm_stage(values={"kp": KP, "kd": KD})
    env = StageVectorEnv(2, stage, actions="position", observations=["dof_positions:/Hinge"], device="cpu")
    assert env.action_space.shape == (2, 1)  # (the actuated DOF: no joint drive of its own)
    env.reset(seed=0)
    target = math.radians(-10.0)
    for _ in range(48):
        obs, *_ = env.step(np.full((2, 1), target, dtype=np.float32))
    np.testing.assert_allclose(obs[:, 0], held_angle(KP, target), atol=math.radians(0.2))
    env.close()


def test_live_edits_of_the_drive_target_and_the_gains_reach_the_actuator():
    from newton_usd.sim import Simulation

    stage = arm_stage(values={"kp": KP, "kd": KD}, target_deg=-10.0)
    sim = Simulation.open(stage, device="cpu", record=False)
    sim.run(12)
    stage.GetPrimAtPath("/Hinge").GetAttribute("drive:angular:physics:targetPosition").Set(-20.0)
    sim.step_frame()
    assert sim.rebuilds == 0  # (in place: the target of a drive without gains)
    assert sim.control.joint_target_pos.numpy()[0] == pytest.approx(math.radians(-20.0), abs=1e-6)
    sim.run(48)
    q = float(sim.state.joint_q.numpy()[0])
    assert abs(math.degrees(q - held_angle(KP, math.radians(-20.0)))) < 0.2, math.degrees(q)
    stage.GetPrimAtPath("/Actuator").GetAttribute("newton:kp").Set(
        2 * KP
    )  # (the actuator's own values: imported again)
    sim.run(48)
    q = float(sim.state.joint_q.numpy()[0])
    assert abs(math.degrees(q - held_angle(2 * KP, math.radians(-20.0)))) < 0.2, math.degrees(q)


def test_a_prismatic_actuator_s_values_are_converted_from_stage_units():
    """A centimeter stage: forces in kg cm/s^2 (0.01 N), lengths in cm; an actuator's gains per cm."""
    stage = new_stage(meters_per_unit=0.01)
    body = UsdGeom.Xform.Define(stage, "/Slider")
    UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
    UsdPhysics.MassAPI.Apply(body.GetPrim()).CreateMassAttr(1.0)
    joint = UsdPhysics.PrismaticJoint.Define(stage, "/Rail")
    joint.CreateBody1Rel().SetTargets([Sdf.Path("/Slider")])
    joint.CreateAxisAttr("X")
    UsdPhysics.DriveAPI.Apply(joint.GetPrim(), "linear").CreateTargetPositionAttr(5.0)  # cm
    act = stage.DefinePrim("/Actuator", "NewtonActuator")
    act.CreateRelationship("newton:targets").SetTargets([Sdf.Path("/Rail")])
    act.SetMetadata(
        "apiSchemas",
        Sdf.TokenListOp.CreateExplicit(
            ["NewtonPDControlAPI", "NewtonMaxEffortClampingAPI", "NewtonPositionBasedClampingAPI"]
        ),
    )
    for name, type_name, value in (
        ("kp", Sdf.ValueTypeNames.Float, 100.0),
        ("constEffort", Sdf.ValueTypeNames.Float, 10.0),
        ("maxEffort", Sdf.ValueTypeNames.Float, 500.0),
        ("lookupPositions", Sdf.ValueTypeNames.FloatArray, [0.0, 10.0]),
        ("lookupEfforts", Sdf.ValueTypeNames.FloatArray, [100.0, 200.0]),
    ):
        act.CreateAttribute(f"newton:{name}", type_name).Set(value)
    builder = ModelBuilder()
    builder.add_usd(stage)
    model = builder.finalize("cpu")
    spec = model.actuator_spec[0]
    assert spec.kp == pytest.approx(100.0)  # (0.01 N per cm = 1 N/m: 100 N/m)
    assert spec.const_effort == pytest.approx(0.1) and spec.clamp("max_effort")["max_effort"] == pytest.approx(5.0)
    table = spec.clamp("position_based")
    assert table["lookup_positions"] == pytest.approx((0.0, 0.1)) and table["lookup_efforts"] == pytest.approx(
        (1.0, 2.0)
    )
    assert model.joint_target_pos.numpy()[0] == pytest.approx(0.05)


def test_featherstone_s_stable_step_counts_a_stiff_actuator():
    """Featherstone takes joint drives implicitly but an actuator's effort explicitly: a kp of 1e5 N m/rad on the
    arm (1/3 kg m^2 about the hinge) sets its stable step, which --substeps auto and the step's warning use."""
    from newton_usd.solvers.newton.stable_step import MARGIN, explicit_stable_dt

    builder = ModelBuilder()
    builder.add_usd(arm_stage(values={"kp": 1e5, "kd": 5.0}))
    engine = SOLVERS["featherstone"](builder.finalize("cpu"))
    limit = engine.step_limit()
    assert limit.kind == "actuator" and "its actuator's kp 1e+05" in limit.what, limit
    inertia = M * L**2 + INERTIA
    assert limit.dt == pytest.approx(MARGIN * explicit_stable_dt(1e5 / inertia, 5.0 / inertia), rel=0.05)


def test_semi_implicit_s_stable_step_counts_an_actuator_as_a_drive_of_its_gains():
    """semi_implicit applies an actuator's effort explicitly, as it does a drive's: a kp of 1e7 N m/rad (kd 5) sets
    the same stable step as a PhysicsDriveAPI of those gains (per degree as UsdPhysics authors them)."""

    def stable_dt(stage):
        builder = ModelBuilder()
        builder.add_usd(stage)
        return SOLVERS["semi_implicit"](builder.finalize("cpu")).stable_dt

    actuated = stable_dt(arm_stage(values={"kp": 1e7, "kd": 5.0}))
    stage = arm_stage(values={"kp": 0.0, "kd": 0.0})
    unactuated = stable_dt(stage)
    drive = UsdPhysics.DriveAPI.Apply(stage.GetPrimAtPath("/Hinge"), "angular")
    drive.CreateStiffnessAttr(1e7 * math.pi / 180.0)
    drive.CreateDampingAttr(5.0 * math.pi / 180.0)
    assert actuated < 0.5 * unactuated, (actuated, unactuated)
    assert actuated == pytest.approx(stable_dt(stage), rel=1e-6)


@pytest.mark.parametrize("solver", ["mujoco", "featherstone"])
@pytest.mark.parametrize(
    "clamp, values",
    [
        ("NewtonDCMotorClampingAPI", {"saturationEffort": 2.0, "velocityLimit": 50.0, "maxMotorEffort": 20.0}),
        ("NewtonPositionBasedClampingAPI", {"lookupPositions": [-1.0, 1.0], "lookupEfforts": [2.0, 2.0]}),
    ],
)
def test_dc_motor_and_lookup_table_clamps_let_the_arm_sink(solver, clamp, values):
    """At most 2 N·m near standstill (a DC motor's stall effort; a flat lookup table), below gravity's 4.9: the arm
    sinks as under the max-effort clamp, however stiff the PD. (Applied as forces under MuJoCo: no actuator of its own
    clamps so.)"""
    q = simulate(arm_stage(values={"kp": KP, "kd": KD, **values}, apis=(clamp,)), solver, 400)
    assert math.degrees(q) > 30.0, math.degrees(q)


def test_the_actuators_kernels_load_beside_the_first_frame():
    """Their Warp modules are among those a solver names for the parallel load (kernel_loading)."""
    builder = ModelBuilder()
    builder.add_usd(
        arm_stage(drive="NewtonPIDControlAPI", values={"kp": KP, "delaySteps": 2}, apis=("NewtonActuatorDelayAPI",))
    )
    model = builder.finalize("cpu")
    for solver in ("featherstone", "mujoco"):
        names = {m.name for m in make_solver(model, solver).kernel_modules()}
        expected = {f"newton._src.actuators.{n}" for n in ("actuator", "drives.drive_pid", "delay")}
        assert expected <= names, (solver, names)


def test_explain_shows_the_actuator_as_simulated():
    from newton_usd.inspect import explain_rows

    stage = arm_stage(values={"kp": KP, "maxEffort": 3.0}, apis=("NewtonMaxEffortClampingAPI",))
    builder = ModelBuilder()
    imported = builder.add_usd(stage)
    rows = {row[1]: row[2:] for row in explain_rows(imported, ["/Actuator"], builder.finalize("cpu"))}
    assert rows["actuator.joint"][0] == "/Hinge" and rows["actuator.drive"][0] == "PD"
    assert rows["actuator.kp"] == ("100", "N*m/rad", "newton:kp")
    assert rows["actuator.kd"] == ("0", "N*m*s/rad", "schema fallback")
    assert rows["actuator.max_effort.max_effort"] == ("3", "N*m", "newton:maxEffort")
    assert rows["actuator.delay_steps"][2] == "none (no NewtonActuatorDelayAPI)"
