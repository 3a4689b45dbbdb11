"""The stable step a solver estimates, and what a run is told of it (issue 45): never a division by zero or an
absurd substep count; a force no practical step holds is named with the engines that take it. Featherstone takes
its drives implicitly (issue 43): a drive of damping 1e8 holds a chain as MuJoCo's does."""

from __future__ import annotations

import math
import re
from types import SimpleNamespace

import numpy as np
import pytest
from pxr import Gf, Sdf, UsdPhysics
from test_newton_solvers import joint_positions, positions, usdsim

from newton_usd.errors import NewtonUsdError
from newton_usd.solvers.newton.stable_step import StableStep, explicit_stable_dt
from newton_usd.solvers.stability import auto_substeps, step_advice

from stages import add_box, add_hinge, new_stage


def _solver(stable, limit=None):
    """A stand-in solver whose estimate is ``stable`` s, set by ``limit`` (a StableStep of joint 0: /Arm/Hinge)."""
    model = SimpleNamespace(joint_label=["/Arm/Hinge"], body_label=["/Arm/Link"])
    return SimpleNamespace(name="semi_implicit", model=model, stable_step=lambda: stable, step_limit=lambda: limit)


@pytest.mark.parametrize("stable", [0.0, math.nan, 1e-12])
def test_an_estimate_no_run_can_take_names_the_force_and_the_engines_that_take_it(stable):
    drive = StableStep(stable, joint=0, kind="drive", what="its drive's damping 5.73e+09 N*m*s/rad")
    advice = step_advice(_solver(stable, drive), 1 / 480, 60.0)
    assert "the force of /Arm/Hinge, its drive's damping 5.73e+09 N*m*s/rad, explicitly" in advice, advice
    assert "--solver mujoco, --solver xpbd or --solver featherstone" in advice, advice
    assert "--substeps" not in advice, advice  # (no absurd count)
    with pytest.raises(NewtonUsdError, match=r"--substeps auto: .*/Arm/Hinge.*--solver mujoco"):
        auto_substeps(_solver(stable, drive), 60.0, 8, None)
    # A drive's stiffness is explicit under MuJoCo too; a limit is a constraint under MuJoCo and XPBD.
    stiff = StableStep(stable, joint=0, kind="drive", what="its drive's stiffness 1e+12 N*m/rad")
    assert "--solver xpbd or --solver featherstone, which" in step_advice(_solver(stable, stiff), 1 / 480, 60.0)
    limit = StableStep(stable, body=0, kind="contacts", what="its penalty contacts (ke 1e+12 N/m, kd 0 N*s/m)")
    assert "/Arm/Link, its penalty contacts" in step_advice(_solver(stable, limit), 1 / 480, 60.0)
    assert "a stiff force of this model" in step_advice(_solver(stable), 1 / 480, 60.0)


def test_a_practical_estimate_is_advised_as_substeps():
    advice = step_advice(_solver(1e-4), 1 / 480, 60.0)
    assert advice.endswith("--substeps 167 at 60 frames per second (or --substeps auto, or --dt 0.0001)"), advice
    assert step_advice(_solver(1.0), 1 / 480, 60.0) == ""  # (the run's step is within it)
    assert auto_substeps(_solver(1e-4), 60.0, 8, None) == (167, None)


def test_the_explicit_bound_never_cancels_to_zero():
    """(sqrt(c^2 + 4 w^2) - c) / w^2 in floating point is 0 for c = 1e10 and w^2 = 1: the bound is 2 / c there."""
    assert explicit_stable_dt(1.0, 1e10) == pytest.approx(2e-10, rel=1e-6)
    assert explicit_stable_dt(1e4, 0.0) == pytest.approx(0.02)
    assert explicit_stable_dt(0.0, 0.0) == math.inf
    assert explicit_stable_dt(math.nan, 1.0) == 0.0 and explicit_stable_dt(math.inf, 0.0) == 0.0


def _chain(path, damping=1e8, links=4):
    """PhysX's ``links_chain_sample.usda`` made small: capsule links along X on hinges about Y, each held by an
    angular drive of damping ``damping`` (N*m*s/deg) only, the first link fixed to the world."""
    stage = new_stage(path)
    art = stage.DefinePrim("/Chain", "Xform")
    UsdPhysics.ArticulationRootAPI.Apply(art)
    for i in range(links):
        add_box(stage, f"/Chain/Link{i}", 0.25, (0.5 * i, 0, 2))
    root = UsdPhysics.FixedJoint.Define(stage, "/Chain/Root")
    root.CreateBody1Rel().SetTargets([Sdf.Path("/Chain/Link0")])
    root.CreateLocalPos0Attr(Gf.Vec3f(0, 0, 2))
    for i in range(1, links):
        hinge = add_hinge(stage, f"/Chain/Hinge{i}", f"/Chain/Link{i - 1}", f"/Chain/Link{i}", (0.25, 0, 0),
                          (-0.25, 0, 0), limits=(-5.625, 5.625))  # fmt: skip
        UsdPhysics.DriveAPI.Apply(hinge.GetPrim(), "angular").CreateDampingAttr(damping)
    stage.Save()


def test_a_drive_of_damping_1e8_holds_a_chain_under_featherstone_and_names_itself_under_semi_implicit(tmp_path, capsys):
    _chain(tmp_path / "chain.usda")
    tip = {}
    for solver in ("mujoco", "featherstone"):
        out = tmp_path / f"{solver}.usda"
        assert usdsim(tmp_path / "chain.usda", "--solver", solver, "-n", 20, "-o", out) == 0, capsys.readouterr().err
        tip[solver] = positions(out, "/Chain/Link3", [0, 20])
    # Gravity's torque against 5.7e9 N*m*s/rad: the tip sinks micrometres in a third of a second, not metres.
    for solver, (start, end) in tip.items():
        assert np.abs(end - start).max() < 1e-3, (solver, start, end)
    capsys.readouterr()
    assert usdsim(tmp_path / "chain.usda", "--solver", "semi_implicit", "-n", 20) == 3
    err = capsys.readouterr().err
    said = re.search(r"the simulation blew up\); the semi_implicit solver integrates the force of /Chain/Hinge\d, "
                     r"its drive's damping 5.73e\+09 N\*m\*s/rad, explicitly and would need steps of ([0-9.e-]+) s",
                     err)  # fmt: skip
    assert said and float(said.group(1)) < 1e-7, err
    assert "--solver mujoco, --solver xpbd or --solver featherstone, which take it as it is" in err, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert usdsim(tmp_path / "chain.usda", "--solver", "semi_implicit", "-n", 2, "--substeps", "auto") == 2
    assert "--substeps auto: the semi_implicit solver integrates the force of /Chain/Hinge" in capsys.readouterr().err


def test_featherstone_integrates_a_damping_drive_implicitly_as_mujoco_does(tmp_path):
    """A 1 kg bob 0.5 m out from its hinge, held by a drive of damping 35 N*m*s/deg (2,005 per rad) against a
    joint-space inertia of 0.254 kg*m^2: explicitly stable below 2.5e-4 s only. Taken implicitly at 1/480 s it
    creeps at gravity's torque over the damping, 4.9 N*m / 2,005 = 2.45e-3 rad/s, as under MuJoCo."""
    stage = new_stage(tmp_path / "creep.usda")
    bob = add_box(stage, "/Bob", 0.1, (0.5, 0, 1), mass=1.0)
    UsdPhysics.MassAPI(bob.GetPrim()).CreateDiagonalInertiaAttr(Gf.Vec3f(0.004, 0.004, 0.004))
    hinge = add_hinge(stage, "/Hinge", None, "/Bob", (0, 0, 1), (-0.5, 0, 0))
    UsdPhysics.DriveAPI.Apply(hinge.GetPrim(), "angular").CreateDampingAttr(35.0)
    stage.Save()
    frames, rate = 30, 1.0 * 9.81 * 0.5 / (35.0 * 180.0 / math.pi)
    angle = {}
    for solver in ("mujoco", "featherstone"):
        out = tmp_path / f"{solver}.usda"
        assert usdsim(tmp_path / "creep.usda", "--solver", solver, "-n", frames, "--write-joint-states", "-o", out) == 0
        angle[solver] = math.radians(abs(joint_positions(out, "/Hinge", [frames])[0]))
    expected = rate * frames / 60.0
    assert angle["featherstone"] == pytest.approx(expected, rel=0.03), (angle, expected)
    assert angle["featherstone"] == pytest.approx(angle["mujoco"], rel=0.03), angle


def _whip(path, physx: bool = False):
    """PhysX's FixedTendonTest.usda without its (forceless) tendon: five 8 g links (inertia 1e-5 kg*m^2) hinged about
    Y 1 m apart in a level row, the first welded to the world, under gravity 1000 m/s^2: a chain of near point masses
    that whips as it falls. ``physx``: its links apply PhysxRigidBodyAPI (no value authored), as PhysX writes them."""
    stage = new_stage(path)
    UsdPhysics.Scene.Get(stage, "/PhysicsScene").CreateGravityMagnitudeAttr(1000.0)
    for i in range(5):
        link = add_box(stage, f"/Chain/Link{i}", 0.2, (i, 0, 0), mass=0.008)
        UsdPhysics.MassAPI(link.GetPrim()).CreateDiagonalInertiaAttr(Gf.Vec3f(1e-5, 1e-5, 1e-5))
        link.GetPrim().RemoveAPI(UsdPhysics.CollisionAPI)
        if physx:
            link.GetPrim().AddAppliedSchema("PhysxRigidBodyAPI")
        if i:
            add_hinge(stage, f"/Chain/Hinge{i}", f"/Chain/Link{i - 1}", f"/Chain/Link{i}", (0.5, 0, 0), (-0.5, 0, 0))
    UsdPhysics.FixedJoint.Define(stage, "/Chain/Weld").CreateBody1Rel().SetTargets([Sdf.Path("/Chain/Link0")])
    stage.Save()


def test_mujoco_that_blows_up_is_told_to_halve_its_step_which_holds(tmp_path, capsys):
    """C MuJoCo goes NaN at t = 0.2958 s at 1/480 s (native MuJoCo on the same model too): it takes Coriolis and
    centrifugal forces explicitly, and their stable step depends on how fast the chain whips, which the model at rest
    does not say: the error names the step the run took and half of it, at which the chain falls 10 frames."""
    _whip(tmp_path / "whip.usda")
    assert usdsim(tmp_path / "whip.usda", "-n", 10, "--fps", 24) == 3
    err = capsys.readouterr().err
    assert "the acceleration became NaN, infinite or huge (the simulation blew up); MuJoCo integrates" in err, err
    assert "shorter step than this run's 0.00208 s (--dt 0.00104, half of it" in err, err
    assert usdsim(tmp_path / "whip.usda", "-n", 10, "--fps", 24, "--dt", 0.00104) == 0
