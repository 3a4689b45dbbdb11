"""Newton's Warp solvers (xpbd, featherstone, semi_implicit, kamino) under usdsim, on Warp's CPU device and,
where one is present, on CUDA (the ``device`` fixture: its ``cuda`` cases are ``gpu``-marked, skipped without one).

Each test authors its own small stage, runs ``usdsim`` on it as a user would and reads the poses or joint
states it wrote. Newton's kernels compile on first use (slow once; cached in ~/.cache/warp).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import warp as wp
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from newton_usd.cli import main
from newton_usd.core.quat import quat_rotate

from stages import add_box, add_ground, new_stage, pendulum

SAMPLE_PENDULUM = str(Path(__file__).resolve().parent.parent / "sample_stages" / "pendulum.usda")
# Kamino on Warp's CPU device: minutes a case (a third of the suite's time), so soak: .ci/run's second step
KAMINO = pytest.param("kamino", marks=[pytest.mark.slow, pytest.mark.soak])
NEWTON = ("xpbd", "featherstone", KAMINO)
"""Solvers every behaviour below holds for (at the default step, 1/480 s)."""
UNJOINTED = (*NEWTON, "semi_implicit")
"""And for bodies without joints: semi_implicit's penalty joints diverge at 1/480 s with these 1 kg bodies
(the pendulum, D6 and drive tests stop with exit 3)."""


def usdsim(stage_path, *args, device="cpu") -> int:
    return main([str(stage_path), "-q", "--device", device, *[str(a) for a in args]])


def positions(out, prim_path, frames):
    """World positions of ``prim_path`` at each time code of ``frames`` in the output stage ``out``."""
    stage = Usd.Stage.Open(str(out))
    prim = stage.GetPrimAtPath(prim_path)
    return np.array(
        [list(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(t).ExtractTranslation()) for t in frames]
    )


def rotations(out, prim_path, frames):
    """World rotations (Gf.Rotation) of ``prim_path`` at each time code of ``frames``."""
    stage = Usd.Stage.Open(str(out))
    prim = stage.GetPrimAtPath(prim_path)
    return [Gf.Transform(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(t)).GetRotation() for t in frames]


def joint_positions(out, joint_path, frames, axis="angular"):
    """The joint state ``state:<axis>:physics:position`` written at each time code (usdsim
    --write-joint-states)."""
    stage = Usd.Stage.Open(str(out))
    attr = stage.GetPrimAtPath(joint_path).GetAttribute(f"state:{axis}:physics:position")
    return np.array([attr.Get(t) for t in frames])


def contact_stiffness(stage, ke=1.0e5, kd=5.0e2):
    """Penalty contacts stiff enough for a 0.2 m, 8 kg cube (featherstone and semi_implicit)."""
    scene = stage.GetPrimAtPath("/PhysicsScene")
    scene.CreateAttribute("newton:contact_ke", Sdf.ValueTypeNames.Float).Set(ke)
    scene.CreateAttribute("newton:contact_kd", Sdf.ValueTypeNames.Float).Set(kd)


@pytest.mark.parametrize("solver", UNJOINTED)
def test_cube_rests_on_plane(tmp_path, solver, device):
    stage = new_stage(tmp_path / "cube.usda")
    add_ground(stage)
    add_box(stage, "/Cube", 0.2, (0, 0, 0.3))
    contact_stiffness(stage)
    stage.Save()
    assert usdsim(tmp_path / "cube.usda", "--solver", solver, "-n", 40, device=device) == 0  # (at rest by frame 30)
    z = positions(tmp_path / "cube.sim.usda", "/Cube", [40])[0, 2]
    assert abs(z - 0.1) < 0.002, z


PENDULUM_PERIOD = 2 * math.pi * math.sqrt((0.004 + 1.0 * 0.5**2) / (1.0 * 9.81 * 0.5))
"""s: the small-angle period of ``stages.pendulum`` (1 kg, 0.5 m, its bob's own inertia 0.004 kg*m^2)."""
PERIOD_FRAMES = 70
"""Frames at 60 fps from a 5 deg start that reach the first upward zero crossing (3/4 of a period, 1.07 s)."""


def swing_period(q, fps=60.0):
    """The period of a swing started at rest at a positive angle, from the joint angles ``q`` at each frame: twice
    the time from its first downward zero crossing to the next upward one (interpolated)."""
    t = np.arange(len(q)) / fps
    down = [i for i in range(len(q) - 1) if q[i] > 0 >= q[i + 1]]
    up = [i for i in range(down[0] + 1, len(q) - 1) if q[i] < 0 <= q[i + 1]] if down else []
    assert down and up, q
    crossing = [t[i] + (t[i + 1] - t[i]) * q[i] / (q[i] - q[i + 1]) for i in (down[0], up[0])]
    return 2.0 * (crossing[1] - crossing[0])


@pytest.mark.parametrize("solver", NEWTON)
def test_pendulum_small_angle_period(tmp_path, solver, device):
    pendulum(tmp_path / "p.usda", angle_deg=5.0).Save()
    frames = PERIOD_FRAMES
    assert usdsim(tmp_path / "p.usda", "--solver", solver, "-n", frames, "--write-joint-states", device=device) == 0
    period = swing_period(joint_positions(tmp_path / "p.sim.usda", "/Hinge", range(frames + 1)))
    assert abs(period / PENDULUM_PERIOD - 1) < 0.01, (period, PENDULUM_PERIOD)


def _bob(stage, path="/Bob", pos=(0, 0, 1.5), offset=(0, 0, -0.5), velocity=None):
    """A 1 kg body whose COM (a small sphere) is ``offset`` from its origin at ``pos``."""
    body = UsdGeom.Xform.Define(stage, path)
    body.AddTranslateOp().Set(Gf.Vec3d(*pos))
    prim = body.GetPrim()
    rb = UsdPhysics.RigidBodyAPI.Apply(prim)
    if velocity is not None:
        rb.CreateAngularVelocityAttr(Gf.Vec3f(*velocity))
    mass = UsdPhysics.MassAPI.Apply(prim)
    mass.CreateMassAttr(1.0)
    mass.CreateCenterOfMassAttr(Gf.Vec3f(*offset))
    mass.CreateDiagonalInertiaAttr(Gf.Vec3f(0.004, 0.004, 0.004))
    return prim


@pytest.mark.parametrize("solver", NEWTON)
def test_d6_joint_swings_about_its_free_axis_only(tmp_path, solver, device):
    stage = new_stage(tmp_path / "d6.usda")
    # Spun about X and Y and started off vertical about X and Y: only the Y rotation is free.
    _bob(stage, velocity=(90.0, 90.0, 45.0))
    joint = UsdPhysics.Joint.Define(stage, "/D6")
    joint.CreateBody1Rel().SetTargets([Sdf.Path("/Bob")])
    joint.CreateLocalPos0Attr(Gf.Vec3f(0, 0, 1.5))
    for dof in ("transX", "transY", "transZ", "rotX", "rotZ"):
        limit = UsdPhysics.LimitAPI.Apply(joint.GetPrim(), dof)
        limit.CreateLowAttr(1.0)
        limit.CreateHighAttr(-1.0)  # low > high: locked
    stage.Save()
    assert usdsim(tmp_path / "d6.usda", "--solver", solver, "-n", 60, device=device) == 0
    out = tmp_path / "d6.sim.usda"
    swung = off_axis = 0.0
    for r in rotations(out, "/Bob", range(1, 61)):
        axis, angle = r.GetAxis(), r.GetAngle()
        off_axis = max(off_axis, angle * math.hypot(axis[0], axis[2]))  # degrees about X and Z
        swung = max(swung, angle * abs(axis[1]))
    print(f"{solver}: swung {swung:.2f} deg about Y, at most {off_axis:.3f} deg about X and Z")
    assert swung > 5.0  # it did swing
    assert off_axis < 1.0
    pos = positions(out, "/Bob", [60])[0]
    assert np.allclose(pos, (0, 0, 1.5), atol=2e-3), pos


@pytest.mark.parametrize("solver", UNJOINTED)
def test_filtered_pair_passes_through_unfiltered_collides(tmp_path, solver, device):
    stage = new_stage(tmp_path / "pair.usda")
    add_ground(stage)
    add_box(stage, "/Low", 0.2, (0, 0, 0.1))
    add_box(stage, "/Filtered", 0.2, (0, 0, 0.35))
    add_box(stage, "/Low2", 0.2, (1, 0, 0.1))
    add_box(stage, "/Stacked", 0.2, (1, 0, 0.35))
    UsdPhysics.FilteredPairsAPI.Apply(stage.GetPrimAtPath("/Filtered")).CreateFilteredPairsRel().SetTargets(["/Low"])
    contact_stiffness(stage)
    stage.Save()
    assert usdsim(tmp_path / "pair.usda", "--solver", solver, "-n", 40, device=device) == 0  # (at rest by frame 30)
    out = tmp_path / "pair.sim.usda"
    assert abs(positions(out, "/Filtered", [40])[0, 2] - 0.1) < 0.01  # through /Low, onto the ground
    assert abs(positions(out, "/Stacked", [40])[0, 2] - 0.3) < 0.01  # on /Low2


@pytest.mark.parametrize("solver", UNJOINTED)
def test_centimeter_y_up_stage_falls_along_minus_y(tmp_path, solver, device):
    stage = new_stage(tmp_path / "cm.usda", up="Y", meters_per_unit=0.01)
    add_box(stage, "/Box", 20.0, (30.0, 1000.0, -40.0))
    stage.Save()
    assert usdsim(tmp_path / "cm.usda", "--solver", solver, "-n", 60, device=device) == 0
    x, y, z = positions(tmp_path / "cm.sim.usda", "/Box", [60])[0]
    assert abs((1000.0 - y) - 490.5) < 2.0, y  # 0.5 g t^2 = 4.905 m in 1 s (stage units: cm)
    assert abs(x - 30.0) < 1e-3 and abs(z + 40.0) < 1e-3


@pytest.mark.parametrize("solver", NEWTON)
def test_position_drive_reaches_its_target(tmp_path, solver, device):
    stage = new_stage(tmp_path / "drive.usda")
    _bob(stage, pos=(0, 0, 1.0), offset=(0.3, 0, 0))
    joint = UsdPhysics.RevoluteJoint.Define(stage, "/Hinge")
    joint.CreateBody1Rel().SetTargets([Sdf.Path("/Bob")])
    joint.CreateAxisAttr("Z")  # gravity does not act about the axis
    joint.CreateLocalPos0Attr(Gf.Vec3f(0, 0, 1.0))
    drive = UsdPhysics.DriveAPI.Apply(joint.GetPrim(), "angular")
    drive.CreateTargetPositionAttr(30.0)
    drive.CreateStiffnessAttr(2.0)  # N*m per degree
    drive.CreateDampingAttr(0.2)
    stage.Save()
    # (overdamped, its slow mode's time constant about 0.09 s: at the target well within 1 s)
    assert usdsim(tmp_path / "drive.usda", "--solver", solver, "-n", 60, "--write-joint-states", device=device) == 0
    q = joint_positions(tmp_path / "drive.sim.usda", "/Hinge", [60])[0]
    assert abs(q - 30.0) < 0.5, q  # degrees


def three_link_chain(path, angles=(20.0, -10.0, 15.0), stage=None, prefix="", y=0.0):
    """Three 0.3 m links hinged about Y end to end from a pivot at 2 m, no contact; each link's joint at
    ``angles`` (degrees). Semi-implicit Euler for MuJoCo and no angular damping for Newton, so that both
    integrate the same equations the same way. ``stage``: added to it (``prefix``ed names, the pivot at ``y``)."""
    if stage is None:
        stage = new_stage(path)
        scene = stage.GetPrimAtPath("/PhysicsScene")
        scene.CreateAttribute("mjc:option:integrator", Sdf.ValueTypeNames.Token).Set("euler")
        scene.CreateAttribute("newton:solver:angular_damping", Sdf.ValueTypeNames.Float).Set(0.0)
    parent, top, total = None, Gf.Vec3d(0, y, 2.0), 0.0
    for i, angle in enumerate(angles):
        total += angle
        rot = Gf.Rotation(Gf.Vec3d(0, 1, 0), total)
        link = UsdGeom.Xform.Define(stage, f"/{prefix}Link{i}")
        link.AddTranslateOp().Set(top)
        link.AddOrientOp().Set(Gf.Quatf(rot.GetQuat()))
        prim = link.GetPrim()
        UsdPhysics.RigidBodyAPI.Apply(prim)
        mass = UsdPhysics.MassAPI.Apply(prim)
        mass.CreateMassAttr(1.0)
        mass.CreateCenterOfMassAttr(Gf.Vec3f(0, 0, -0.15))
        mass.CreateDiagonalInertiaAttr(Gf.Vec3f(0.0075, 0.0075, 0.001))
        joint = UsdPhysics.RevoluteJoint.Define(stage, f"/{prefix}Joint{i}")
        if parent is not None:
            joint.CreateBody0Rel().SetTargets([Sdf.Path(parent)])
            joint.CreateLocalPos0Attr(Gf.Vec3f(0, 0, -0.3))
        else:
            joint.CreateLocalPos0Attr(Gf.Vec3f(top))
            joint.CreateLocalRot0Attr(Gf.Quatf(rot.GetQuat()))
        joint.CreateBody1Rel().SetTargets([Sdf.Path(f"/{prefix}Link{i}")])
        joint.CreateAxisAttr("Y")
        top = top + rot.TransformDir(Gf.Vec3d(0, 0, -0.3))
        parent = f"/{prefix}Link{i}"
    return stage


def test_featherstone_agrees_with_mujoco_on_a_three_link_chain(tmp_path, device):
    three_link_chain(tmp_path / "chain.usda").Save()
    runs = {}
    for solver in ("featherstone", "mujoco"):
        out = tmp_path / f"chain_{solver}.usda"
        args = ("--solver", solver, "-n", 60, "--write-joint-states", "-o", out, "--dt", 1.0 / 960)
        on = {"device": device} if solver == "featherstone" else {}  # (MuJoCo's C library: the reference)
        assert usdsim(tmp_path / "chain.usda", *args, *(("--backend", "cpu") if solver == "mujoco" else ()), **on) == 0
        runs[solver] = np.stack([joint_positions(out, f"/Joint{i}", range(61)) for i in range(3)], axis=1)
    error = np.radians(np.abs(runs["featherstone"] - runs["mujoco"])).max()
    print(f"featherstone vs mujoco: largest joint angle difference over 1 s: {error:.2e} rad")
    assert np.radians(np.abs(runs["mujoco"][-1] - runs["mujoco"][0])).max() > 0.1  # it moved
    assert error < 1e-3


def test_xpbd_restitution_rebounds_to_a_quarter_of_the_drop(tmp_path, device):
    from pxr import UsdShade  # noqa: PLC0415

    stage = new_stage(tmp_path / "ball.usda", fps=120)
    scene = stage.GetPrimAtPath("/PhysicsScene")
    scene.ApplyAPI("NewtonXpbdSceneAPI")  # (no newton:usd:solver: a scene made for XPBD runs it)
    scene.CreateAttribute("newton:xpbd:restitutionEnabled", Sdf.ValueTypeNames.Bool).Set(True)
    add_ground(stage)
    ball = UsdGeom.Sphere.Define(stage, "/Ball")
    ball.CreateRadiusAttr(0.05)
    ball.AddTranslateOp().Set(Gf.Vec3d(0, 0, 1.05))  # its bottom 1 m above the ground
    UsdPhysics.RigidBodyAPI.Apply(ball.GetPrim())
    UsdPhysics.CollisionAPI.Apply(ball.GetPrim())
    material = UsdShade.Material.Define(stage, "/Bouncy")
    physics = UsdPhysics.MaterialAPI.Apply(material.GetPrim())
    physics.CreateRestitutionAttr(0.5)
    for path in ("/Ball", "/Ground"):
        binding = UsdShade.MaterialBindingAPI.Apply(stage.GetPrimAtPath(path))
        binding.Bind(material, UsdShade.Tokens.weakerThanDescendants, "physics")
    stage.Save()
    assert usdsim(tmp_path / "ball.usda", "-n", 120, device=device) == 0
    z = positions(tmp_path / "ball.sim.usda", "/Ball", range(121))[:, 2] - 0.05
    bounce = int(np.argmin(z[:80]))
    rebound = z[bounce:].max()
    print(f"xpbd: dropped from 1 m, rebounds to {rebound:.4f} m")
    assert abs(rebound - 0.25) < 0.03


@pytest.mark.soak  # (its own process compiles Newton's kernels with their adjoints: a minute on an empty cache)
def test_differentiable_through_semi_implicit_steps(tmp_path, device):
    """d(final height)/d(initial upward velocity) by wp.Tape through a Simulation's solver steps, against a
    central finite difference (the docs example), in a process that compiles the kernels' adjoints."""
    script = Path(__file__).resolve().parent / "differentiate_steps.py"
    done = subprocess.run([sys.executable, str(script), str(tmp_path), device], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    gradient, fd = found["tape"], found["finite_difference"]
    print(f"semi_implicit: d(height)/d(v0) tape {gradient:.5f}, finite difference {fd:.5f}")
    assert abs(gradient - fd) < 0.01 * abs(fd)


def test_unknown_solver_lists_the_valid_ones(tmp_path, capsys):
    stage = new_stage(tmp_path / "s.usda")
    add_box(stage, "/Box")
    stage.Save()
    assert usdsim(tmp_path / "s.usda", "--solver", "style3d") == 2
    err = capsys.readouterr().err
    assert "unknown solver 'style3d'; valid: mujoco, xpbd, featherstone, semi_implicit, kamino" in err


def test_the_scene_can_name_every_solver():
    """``newton:usd:solver`` takes every solver name ``--solver`` does (vbd and implicit_mpm were refused)."""
    from newton_usd.solvers import SOLVERS  # noqa: PLC0415
    from newton_usd.usd.properties import SOLVER_NAMES  # noqa: PLC0415

    assert set(SOLVER_NAMES) == set(SOLVERS)


def test_scene_solver_and_settings_with_provenance(tmp_path, capsys):
    """``newton:usd:solver`` picks the solver; the seed's newton:* settings reach it, and explain names them."""
    stage = new_stage(tmp_path / "s.usda")
    scene = stage.GetPrimAtPath("/PhysicsScene")
    scene.CreateAttribute("newton:usd:solver", Sdf.ValueTypeNames.Token).Set("featherstone")
    scene.CreateAttribute("newton:solver:angular_damping", Sdf.ValueTypeNames.Float).Set(0.25)
    scene.CreateAttribute("newton:contact_ke", Sdf.ValueTypeNames.Float).Set(5.0e4)
    add_ground(stage)
    add_box(stage, "/Box")
    stage.Save()
    assert main(["info", str(tmp_path / "s.usda")]) == 0
    out = capsys.readouterr().out
    assert "SolverFeatherstone" in out and "angular_damping 0.25" in out and "contact_ke 50000" in out
    assert main(["explain", str(tmp_path / "s.usda"), "/PhysicsScene"]) == 0
    out = capsys.readouterr().out
    rows = out.splitlines()
    assert any("newton.angular_damping" in line and "newton:solver:angular_damping" in line for line in rows)
    assert any("solver" in line and "featherstone" in line and "newton:usd:solver" in line for line in out.splitlines())


def test_xpbd_scene_api_picks_xpbd_in_explain(tmp_path, capsys):
    stage = new_stage(tmp_path / "s.usda")
    stage.GetPrimAtPath("/PhysicsScene").ApplyAPI("NewtonXpbdSceneAPI")
    add_box(stage, "/Box")
    stage.Save()
    assert main(["explain", str(tmp_path / "s.usda"), "/PhysicsScene"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if " solver " in f" {line} "]
    assert rows and "xpbd" in rows[0] and "NewtonXpbdSceneAPI" in rows[0], rows


def test_check_lists_what_the_solver_ignores(tmp_path, capsys):
    from pxr import UsdShade  # noqa: PLC0415

    stage = new_stage(tmp_path / "s.usda")
    add_ground(stage)
    add_box(stage, "/Box")
    material = UsdShade.Material.Define(stage, "/Bouncy")
    UsdPhysics.MaterialAPI.Apply(material.GetPrim()).CreateRestitutionAttr(0.5)
    binding = UsdShade.MaterialBindingAPI.Apply(stage.GetPrimAtPath("/Box"))
    binding.Bind(material, UsdShade.Tokens.weakerThanDescendants, "physics")
    pendulum_joint = UsdPhysics.SphericalJoint.Define(stage, "/Ball")
    pendulum_joint.CreateBody1Rel().SetTargets([Sdf.Path("/Box")])
    pendulum_joint.CreateConeAngle0LimitAttr(30.0)
    pendulum_joint.CreateConeAngle1LimitAttr(30.0)
    stage.Save()
    assert main(["check", str(tmp_path / "s.usda"), "--solver", "featherstone"]) == 0
    out = capsys.readouterr().out
    assert "featherstone solver (SolverFeatherstone)" in out
    assert "restitution is not simulated by the featherstone solver (xpbd and kamino do): /Box" in out
    said = "spherical joint cone limits are approximated by the featherstone solver as limits of two swing angles"
    assert said in out and "/Ball" in out


def test_a_diverging_newton_solver_stops_with_exit_3(tmp_path, capsys):
    # A 1 g bob on the semi-implicit solver's penalty joint, at a step far too long for it.
    stage = pendulum(tmp_path / "s.usda", mass=0.001, inertia=1e-7)
    stage.Save()
    assert usdsim(tmp_path / "s.usda", "--solver", "semi_implicit", "--dt", 0.01, "-n", 60) == 3
    err = capsys.readouterr().err
    # (NaN, or beyond the bounds first: the message says it blew up either way)
    assert "frame" in err and "/Pendulum" in err and "(the simulation blew up)" in err, err


def test_environment_worlds_under_xpbd_simulate_as_the_whole_stage_does(device):
    from newton_usd import Simulation  # noqa: PLC0415

    from stages import environments  # noqa: PLC0415

    plain = Simulation.open(environments(n=3, style="flat"), solver="xpbd", live=False, device=device)
    plain.run(20)
    expected = dict(zip(plain.model.body_label, plain.state.body_q.numpy(), strict=True))
    plain.close()
    sim = Simulation.open(
        environments(n=3, style="flat"), solver="xpbd", env_root="/World/envs", live=False, device=device
    )
    assert sim.worlds == 3 and sim.solver.newton_model.world_count == 3
    sim.run(20)
    for label, pose in zip(sim.model.body_label, sim.state.body_q.numpy(), strict=True):
        np.testing.assert_allclose(pose, expected[label], atol=1e-4, err_msg=label)
    sim.close()


def test_worlds_and_live_edits_under_featherstone(tmp_path, device):
    """--worlds replicates the stage; an edit of a drive target, of a mass, and a prim added while running
    (a rebuild that keeps the state) go into the running Newton solver."""
    from newton_usd import Simulation  # noqa: PLC0415

    stage = new_stage(tmp_path / "w.usda")
    _bob(stage, pos=(0, 0, 1.0), offset=(0.3, 0, 0))
    joint = UsdPhysics.RevoluteJoint.Define(stage, "/Hinge")
    joint.CreateBody1Rel().SetTargets([Sdf.Path("/Bob")])
    joint.CreateAxisAttr("Z")
    joint.CreateLocalPos0Attr(Gf.Vec3f(0, 0, 1.0))
    drive = UsdPhysics.DriveAPI.Apply(joint.GetPrim(), "angular")
    drive.CreateTargetPositionAttr(0.0)
    drive.CreateStiffnessAttr(2.0)
    drive.CreateDampingAttr(0.2)
    sim = Simulation.open(stage, solver="featherstone", worlds=2, joint_states=True, device=device)
    sim.run(10)
    drive.GetTargetPositionAttr().Set(20.0)
    sim.run(50)  # (the drive of test_position_drive_reaches_its_target: there in under 1 s)
    q = sim.state.joint_q.numpy()
    np.testing.assert_allclose(np.degrees(q), [20.0, 20.0], atol=0.5)  # both worlds
    UsdPhysics.MassAPI(stage.GetPrimAtPath("/Bob")).GetMassAttr().Set(2.0)
    sim.step_frame()
    assert sim.rebuilds == 0 and sim.solver.newton_model.body_mass.numpy()[0] == pytest.approx(2.0)
    add_box(stage, "/Dropped", 0.2, (2, 0, 3))
    solver = sim.solver
    sim.step_frame()
    assert sim.rebuilds == 1 and sim.solver is not solver and type(sim.solver) is type(solver)
    np.testing.assert_allclose(np.degrees(sim.state.joint_q.numpy()[[0, 8]]), [20.0, 20.0], atol=0.5)
    sim.close()


def test_keyframe_start_under_featherstone(tmp_path, device):
    """`usdsim --keyframe` puts a Newton solver's model into the keyframe: the first frame written is the
    keyframe's pose, as MuJoCo gives it."""
    import mujoco  # noqa: PLC0415

    xml = """<mujoco model="pendulum"><worldbody><body name="arm" pos="0 0 1">
      <joint name="swing" type="hinge" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.03"/>
      <body name="tip" pos="0.5 0 0"><geom size="0.05"/></body></body></worldbody>
      <keyframe><key name="raised" qpos="1.4"/></keyframe></mujoco>"""
    (tmp_path / "pendulum.xml").write_text(xml)
    assert main(["convert", str(tmp_path / "pendulum.xml")]) == 0
    out = tmp_path / "out.usda"
    args = ("--solver", "featherstone", "-n", 2, "--keyframe", "raised", "-o", out)
    assert usdsim(tmp_path / "pendulum.usda", *args, device=device) == 0
    stage = Usd.Stage.Open(str(out))
    world = UsdGeom.Xformable(stage.GetPrimAtPath("/pendulum/arm/tip")).ComputeLocalToWorldTransform(
        stage.GetStartTimeCode()
    )
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    mujoco.mj_forward(m, d)
    np.testing.assert_allclose(world.ExtractTranslation(), d.xpos[m.body("tip").id], atol=1e-5)


@pytest.mark.parametrize("solver", ["xpbd", KAMINO, "featherstone"])
def test_contacts_of_a_resting_cube(tmp_path, solver, device):
    """update_contacts on a Newton solver: the cube's contacts with the ground, by label, in world 0, barely
    penetrating; the forces the ground exerts on a 1 kg cube add up to its weight where the solver reports
    them (xpbd, kamino), and are unknown (NaN), never a false zero, where it does not (featherstone)."""
    from newton_usd import Simulation  # noqa: PLC0415

    stage = new_stage(tmp_path / "cube.usda")
    add_ground(stage)
    # Away from the origin and turned 30 deg about Z: a contact point rotated or placed wrongly lands off its face.
    add_box(stage, "/Cube", 0.2, (0.5, -0.3, 0.1005), mass=1.0, rotate_xyz=(0.0, 0.0, 30.0))
    contact_stiffness(stage, ke=1.0e4, kd=1.0e2)
    stage.Save()
    sim = Simulation.open(str(tmp_path / "cube.usda"), solver=solver, device=device)
    sim.run(30)
    contacts = sim.model.contacts(64)
    sim.solver.update_contacts(contacts)
    n = contacts.rigid_contact_count
    assert n >= 4, n  # a face on a plane: its corners
    pairs = contacts.shape_pairs(sim.model)
    assert {frozenset(pair) for pair in pairs} == {frozenset(("/Cube", "/Ground"))}
    assert (contacts.rigid_contact_world.numpy()[:n] == 0).all()
    assert (np.abs(contacts.rigid_contact_depth.numpy()[:n]) < 0.01).all()
    # The points, in the cube's frame (as it rests now): on its bottom face (z -0.1), within it, reaching its
    # corners.
    pose = sim.state.body_q.numpy()[0].astype(np.float64)
    inverse = np.array([-pose[3], -pose[4], -pose[5], pose[6]])
    local = quat_rotate(inverse, contacts.rigid_contact_point.numpy()[:n].astype(np.float64) - pose[:3])
    np.testing.assert_allclose(local[:, 2], -0.1, atol=0.01)
    assert (np.abs(local[:, :2]) < 0.1 + 0.005).all(), local
    assert np.abs(local[:, :2]).max() > 0.09, local  # (at the corners, not all at the middle)
    force = contacts.rigid_contact_force.numpy()[:n].astype(np.float64)
    if solver == "featherstone":
        assert np.isnan(force).all()
        return
    on_cube = np.array([f if a == "/Ground" else -f for f, (a, _) in zip(force, pairs, strict=True)]).sum(axis=0)
    assert abs(on_cube[2] / 9.81 - 1.0) < 0.03, on_cube  # its weight, upwards
    assert np.hypot(on_cube[0], on_cube[1]) < 0.01 * 9.81, on_cube  # no friction at rest


@pytest.mark.parametrize("solver", ["xpbd", "featherstone"])
def test_a_view_setting_joint_positions_moves_the_bodies(solver, device):
    """A joint coordinate written through a view is where the next step starts, also under XPBD, which steps
    body poses only (the bodies follow the written joint state)."""
    from newton_usd import Simulation  # noqa: PLC0415
    from newton_usd.selection import ArticulationView  # noqa: PLC0415

    sim = Simulation.open(SAMPLE_PENDULUM, solver=solver, device=device, record=False)
    view = ArticulationView(sim, "/World/*")
    assert view.dof_names == ["Hinge"]
    view.set_dof_positions(wp.array([[0.5]], dtype=wp.float32, device=device))
    sim.run(1)  # 1/60 s: the 0.5 rad start has barely moved (without the bodies following, XPBD reads 0.03)
    q = view.get_dof_positions().numpy()[0, 0]
    assert abs(q - 0.5) < 0.05, q  # (its drive lifts it toward 60 deg: MuJoCo 0.525, xpbd at 16 iterations 0.539)


def test_semi_implicit_joint_states_follow_the_bodies(device):
    """semi_implicit integrates body states only: the joint coordinates read are the bodies' (eval_ik), not the
    start's."""
    from newton_usd import Simulation  # noqa: PLC0415

    sim = Simulation.open(pendulum(angle_deg=20.0), solver="semi_implicit", device=device, record=False, dt=1e-4)
    sim.run(6)  # 0.1 s: the bob has swung back a few degrees
    q = sim.state.body_q.numpy()[0][3:].astype(np.float64)
    angle = 2.0 * math.atan2(q[1], q[3])  # (the hinge is about Y)
    assert math.degrees(angle) < 19.0, math.degrees(angle)
    assert sim.state.joint_q.numpy()[0] == pytest.approx(angle, abs=1e-4)
    sim.close()


def test_semi_implicit_says_its_stable_step_and_holds_at_it(tmp_path, caplog, capsys):
    """semi_implicit's penalty joints blow up at the stage's 1/480 s step on a 1 kg pendulum whose bob's own
    inertia is small: said before, with the step they hold at (an estimate); at that step the period is right."""
    from newton_usd import Simulation  # noqa: PLC0415

    pendulum(tmp_path / "p.usda", angle_deg=5.0).Save()
    assert usdsim(tmp_path / "p.usda", "--solver", "semi_implicit", "-n", 60) == 3
    said = "the semi_implicit solver's penalty joints (joint_attach_ke 10000) and drives are estimated stable at steps"
    assert said in caplog.text and "not 0.00208 s" in caplog.text and "/Hinge" in caplog.text, caplog.text
    caplog.clear()
    capsys.readouterr()
    assert main(["check", str(tmp_path / "p.usda"), "--solver", "semi_implicit"]) == 0
    listed = [line for line in capsys.readouterr().out.splitlines() if said in line]
    assert listed and "not 0.00208 s" in listed[0] and "/Hinge" in listed[0], listed
    sim = Simulation.open(str(tmp_path / "p.usda"), solver="semi_implicit", live=False, record=False)
    stable = sim.solver.stable_dt
    sim.close()
    assert 1e-4 < stable < 1.0 / 480.0, stable
    frames = PERIOD_FRAMES
    args = ("--solver", "semi_implicit", "-n", frames, "--dt", stable, "--write-joint-states")
    assert usdsim(tmp_path / "p.usda", *args) == 0 and said not in caplog.text
    period = swing_period(joint_positions(tmp_path / "p.sim.usda", "/Hinge", range(frames + 1)))
    print(f"semi_implicit at {stable:.3g} s: period {period:.4f} s, expected {PENDULUM_PERIOD:.4f} s")
    assert abs(period / PENDULUM_PERIOD - 1) < 0.01, (period, PENDULUM_PERIOD)
