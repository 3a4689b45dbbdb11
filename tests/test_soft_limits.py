"""Soft joint limits (issue 43): ``physxLimit:<axis>:stiffness``/``damping`` and NewtonJointAPI's
``newton:limitStiffness``/``limitDamping`` push a joint back past its limit like a spring, under every engine
(MuJoCo: the limit's solref; Featherstone and semi-implicit: Newton's penalty limit; XPBD and Kamino: said hard)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pxr import Sdf, UsdPhysics
from test_newton_solvers import joint_positions, usdsim

from newton_usd import ModelBuilder
from newton_usd.cli import main
from newton_usd.sim import Simulation

from stages import pendulum

MASS, ARM, LOWER = 1.0, 0.5, 80.0  # kg, m, deg
STIFFNESS, DAMPING = 1.0, 0.5  # N*m/deg, N*m*s/deg: 57.3 N*m/rad, 28.6 N*m*s/rad


def _resting_angle(stiffness_per_deg) -> float:
    """deg: where the hinge's spring past its lower limit holds the bob's weight, K (lower - q) = m g L sin q."""
    k = stiffness_per_deg * 180.0 / math.pi
    q = math.radians(LOWER)
    for _ in range(50):  # Newton's method on f(q) = k (lower - q) - m g L sin q
        f = k * (math.radians(LOWER) - q) - MASS * 9.81 * ARM * math.sin(q)
        q -= f / (-k - MASS * 9.81 * ARM * math.cos(q))
    return math.degrees(q)


def _soft_pendulum(path=None, physx=True, mjc=False, newton=None):
    """A 1 kg bob 0.5 m from a hinge about Y, started horizontal (90 deg); gravity pulls it toward 0, past its
    limits of 80 to 100 deg: a soft limit holds it a few degrees beyond 80."""
    stage = pendulum(path, mass=MASS, length=ARM, angle_deg=90.0)
    hinge = UsdPhysics.RevoluteJoint.Get(stage, "/Hinge")
    hinge.CreateLowerLimitAttr(LOWER)
    hinge.CreateUpperLimitAttr(100.0)
    prim = hinge.GetPrim()
    if physx:
        prim.AddAppliedSchema("PhysxLimitAPI:angular")
        prim.CreateAttribute("physxLimit:angular:stiffness", Sdf.ValueTypeNames.Float).Set(STIFFNESS)
        prim.CreateAttribute("physxLimit:angular:damping", Sdf.ValueTypeNames.Float).Set(DAMPING)
    if mjc:
        prim.CreateAttribute("mjc:solreflimit", Sdf.ValueTypeNames.Double2).Set((0.02, 1.0))
    if newton is not None:
        prim.AddAppliedSchema("NewtonJointAPI")
        prim.CreateAttribute("newton:limitStiffness", Sdf.ValueTypeNames.Float).Set(newton[0])
        prim.CreateAttribute("newton:limitDamping", Sdf.ValueTypeNames.Float).Set(newton[1])
    if path:
        stage.Save()
    return stage


@pytest.mark.parametrize("engine", ("mujoco", "featherstone", "xpbd"))
def test_a_soft_limit_holds_the_joint_past_its_bound_like_a_spring(tmp_path, engine):
    _soft_pendulum(tmp_path / "soft.usda")
    # (MuJoCo's impedance lets the bob settle on the limit's spring at 3.4 rad/s, not the spring's 15: 4 s)
    frames = {"mujoco": 240, "featherstone": 120, "xpbd": 40}[engine]  # (XPBD's hard limit: there by frame 30)
    assert usdsim(tmp_path / "soft.usda", "--solver", engine, "-n", frames, "--write-joint-states") == 0
    q = float(joint_positions(tmp_path / "soft.sim.usda", "/Hinge", [frames])[0])  # (deg)
    expected = LOWER if engine == "xpbd" else _resting_angle(STIFFNESS)  # (about 75.3 deg)
    assert q == pytest.approx(expected, abs=0.3), (q, expected)


def test_xpbd_says_its_limits_are_hard(tmp_path, capsys):
    _soft_pendulum(tmp_path / "soft.usda")
    assert main(["check", str(tmp_path / "soft.usda"), "--solver", "xpbd"]) == 0
    out = capsys.readouterr().out
    assert "soft joint limits (newton:limitStiffness, physxLimit:*:stiffness): not simulated by the xpbd solver, " \
           "its limits are hard: /Hinge" in out, out  # fmt: skip
    assert "every authored value is used" in out, out


def test_which_limit_each_engine_takes(tmp_path):
    """newton:limitStiffness > mjc:solreflimit > physxLimit (the resolver's order): MuJoCo takes an authored
    solreflimit over PhysX's stiffness, while Newton's solvers, which have no solref, take PhysX's; NewtonJointAPI's
    stiffness wins under both. The stiffness per degree reaches the model per radian."""
    from newton_usd.solvers import SolverMuJoCo

    def built(stage):
        builder = ModelBuilder()
        imported = builder.add_usd(stage)
        model = builder.finalize("cpu")
        return model, SolverMuJoCo(model, backend="cpu").mj_model, imported

    model, mj, imported = built(_soft_pendulum(mjc=True))
    assert model.joint_limit_ke.numpy()[0] == pytest.approx(STIFFNESS * 180 / math.pi, rel=1e-6)
    assert model.joint_limit_kd.numpy()[0] == pytest.approx(DAMPING * 180 / math.pi, rel=1e-6)
    np.testing.assert_allclose(mj.jnt_solref[0], (0.02, 1.0))
    provenance = imported.resolver.provenance
    assert provenance["/Hinge", "limit_stiffness"].attribute == "physxLimit:angular:stiffness"
    model, mj, _ = built(_soft_pendulum(mjc=True, newton=(2.0, 0.3)))
    assert model.joint_limit_ke.numpy()[0] == pytest.approx(2.0 * 180 / math.pi, rel=1e-6)
    invweight = mj.dof_invweight0[0]
    k, b = (x * 180 / math.pi * invweight * (1 - mj.jnt_solimp[0][1]) for x in (2.0, 0.3))
    np.testing.assert_allclose(mj.jnt_solref[0], (2 / b, b / (2 * math.sqrt(k))), rtol=1e-6)
    model, mj, _ = built(_soft_pendulum(physx=False))  # none: MuJoCo's default limit, Newton's
    assert np.isnan(model.joint_limit_ke.numpy()[0])
    np.testing.assert_allclose(mj.jnt_solref[0], (0.02, 1.0))


def test_newton_limit_stiffness_from_python(tmp_path):
    """The same through Simulation, NewtonJointAPI's gains (per degree) on a stage with no PhysX value."""
    _soft_pendulum(tmp_path / "newton.usda", physx=False, newton=(2 * STIFFNESS, DAMPING))
    sim = Simulation.open(tmp_path / "newton.usda", solver="mujoco", device="cpu")
    try:
        sim.run(240)
        q = float(np.degrees(sim.state.joint_q.numpy()[0]))
    finally:
        sim.close()
    assert q == pytest.approx(_resting_angle(2 * STIFFNESS), abs=0.3)


@pytest.mark.parametrize("engine", ("mujoco", "featherstone"))
def test_a_live_edit_of_a_soft_limits_stiffness_takes_effect(tmp_path, engine):
    """The soft pendulum resting on its limit's spring; its stiffness made 50 times stiffer during the run: the next
    frames hold the bob closer to the limit, without a re-import (the joint's values set in place)."""
    _soft_pendulum(tmp_path / "soft.usda")
    sim = Simulation.open(str(tmp_path / "soft.usda"), solver=engine, record=False)
    sim.run(240 if engine == "mujoco" else 60)
    soft = math.degrees(sim.state.joint_q.numpy()[0])
    sim.stage.GetPrimAtPath("/Hinge").GetAttribute("physxLimit:angular:stiffness").Set(50.0 * STIFFNESS)
    sim.run(240 if engine == "mujoco" else 60)
    stiff = math.degrees(sim.state.joint_q.numpy()[0])
    assert sim.edits_applied == 1 and sim.rebuilds == 0
    sim.close()
    assert abs(LOWER - soft) > 2.0 and abs(LOWER - stiff) < 0.5 * abs(LOWER - soft), (soft, stiff)
