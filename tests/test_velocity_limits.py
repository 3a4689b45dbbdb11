"""PhysX's bounds on a body's speeds: ``physxRigidBody:maxLinearVelocity`` (stage units per second) and
``maxAngularVelocity`` (degrees per second) where authored, and PhysX's own 100 rad/s angular bound on a stage PhysX
wrote; kept by C MuJoCo, XPBD and semi-implicit, said once by the engines that do not keep them."""

from __future__ import annotations

import logging
import math

import mujoco
import numpy as np
import pytest
from pxr import Gf, Sdf, UsdPhysics
from test_newton_solvers import usdsim
from test_stability import _whip

from newton_usd import Simulation
from newton_usd.cli import main
from newton_usd.solvers.velocity_limits import MuJoCoSpeedBounds

from stages import add_box, new_stage

KEEPING = ("mujoco", "xpbd", "semi_implicit")


def _max_spin(path, frames, solver="mujoco", worlds=1, **options):
    """The largest angular speed (rad/s) of any body at the end of each frame, over ``frames`` frames at 24 fps."""
    sim = Simulation.open(str(path), solver=solver, device="cpu", record=False, fps=24, worlds=worlds, **options)
    top = 0.0
    for _ in range(frames):
        sim.step_frame()
        qd = sim.state.body_qd.numpy()
        top = max(top, float(np.linalg.norm(qd[:, 3:], axis=1).max()))
    sim.close()
    return top


def test_physx_s_own_angular_bound_holds_the_whip_at_its_step_under_mujoco(tmp_path):
    """Without a bound the chain whips to 103-404 rad/s and C MuJoCo goes NaN at frame 8 at 1/480 s (as native MuJoCo
    does); on the stage as PhysX writes it (PhysxRigidBodyAPI on its links) PhysX's 100 rad/s holds: five seconds run
    at the same step, no link faster than the bound."""
    _whip(tmp_path / "bare.usda", physx=False)
    _whip(tmp_path / "physx.usda", physx=True)
    assert usdsim(tmp_path / "bare.usda", "-n", 10, "--fps", 24) == 3
    assert usdsim(tmp_path / "physx.usda", "-n", 120, "--fps", 24, "-o", tmp_path / "out.usda") == 0
    assert _max_spin(tmp_path / "physx.usda", 24) <= 100.0 * (1 + 1e-4)
    assert _max_spin(tmp_path / "physx.usda", 24, worlds=2) <= 100.0 * (1 + 1e-4)  # (C MuJoCo's batch of worlds)


_CHAIN = """<mujoco><option timestep="{dt}" gravity="0 0 -1000"/><worldbody>
<body name="l0"><inertial pos="0 0 0" mass="0.008" diaginertia="1e-5 1e-5 1e-5"/>{links}</body>
</worldbody></mujoco>"""
_LINK = """<body pos="1 0 0"><joint type="hinge" axis="0 1 0" pos="-0.5 0 0"/>
<inertial pos="0 0 0" mass="0.008" diaginertia="1e-5 1e-5 1e-5"/>"""


def _native_chain(bound: float | None, seconds: float = 1.0) -> float:
    """Native MuJoCo, the same chain as MJCF at 1/480 s: the time it goes NaN (inf: it does not), each step followed by
    the bound's scaling where ``bound`` is given."""
    xml = _CHAIN.format(dt=1 / 480, links=_LINK * 4 + "</body>" * 4)
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    bounds = None
    if bound is not None:
        bounds = MuJoCoSpeedBounds(m, np.arange(m.nbody), np.tile((math.inf, bound), (m.nbody, 1)))
    mujoco.mj_forward(m, d)
    for _ in range(int(seconds * 480)):
        t = d.time  # (MuJoCo's warning names the time the step started at)
        mujoco.mj_step(m, d)
        if d.warning[mujoco.mjtWarning.mjWARN_BADQACC].number:  # (MuJoCo then resets the data: its time too)
            return t
        if bounds is not None:
            mujoco.mj_forward(m, d)
            qvel = d.qvel[None]
            if bounds.apply(qvel, d.cvel[None], d.cdof[None], d.xipos[None], d.subtree_com[None]):
                mujoco.mj_forward(m, d)
            assert np.linalg.norm(d.cvel[:, :3], axis=1).max() <= bound * (1 + 1e-6)
    return math.inf


def test_native_mujoco_goes_nan_on_the_whip_unless_bounded_as_physx_does():
    """The same chain in native MuJoCo: NaN at t = 0.2958 s unbounded; bounded at PhysX's 100 rad/s, one second
    runs."""
    assert _native_chain(None) == pytest.approx(0.2958, abs=2e-3)
    assert _native_chain(100.0) == math.inf


def _free_box(path, meters_per_unit=1.0, **authored):
    """A 1 kg box with no collider falling from rest, or spun (``angular`` deg/s about Z), the PhysX attributes
    ``authored`` (name -> value, stage units) applied with PhysxRigidBodyAPI."""
    stage = new_stage(path, meters_per_unit=meters_per_unit)
    box = add_box(stage, "/Box", 0.2 / meters_per_unit, (0, 0, 1 / meters_per_unit), mass=1.0)
    box.GetPrim().RemoveAPI(UsdPhysics.CollisionAPI)
    UsdPhysics.MassAPI(box.GetPrim()).CreateDiagonalInertiaAttr(Gf.Vec3f(0.01, 0.01, 0.01) / meters_per_unit**2)
    prim = box.GetPrim()
    spin = authored.pop("spin", None)
    if spin is not None:
        UsdPhysics.RigidBodyAPI(prim).CreateAngularVelocityAttr(Gf.Vec3f(0, 0, spin))
    prim.AddAppliedSchema("PhysxRigidBodyAPI")
    for name, value in authored.items():
        prim.CreateAttribute(f"physxRigidBody:{name}", Sdf.ValueTypeNames.Float).Set(value)
    stage.Save()


@pytest.mark.parametrize("solver", KEEPING)
def test_a_falling_body_is_held_to_its_linear_bound_in_a_centimetre_stage(tmp_path, solver):
    """50 cm/s authored on a stage in centimetres: the box falls at 0.5 m/s once gravity would take it past that
    (after 0.05 s), not at g*t."""
    _free_box(tmp_path / "fall.usda", meters_per_unit=0.01, maxLinearVelocity=50.0)
    sim = Simulation.open(str(tmp_path / "fall.usda"), solver=solver, device="cpu", record=False)
    for _ in range(12):
        sim.step_frame()
    speed = np.linalg.norm(sim.state.body_qd.numpy()[0, :3])
    sim.close()
    assert speed == pytest.approx(0.5, rel=1e-3)


@pytest.mark.parametrize("solver", KEEPING)
def test_a_spinning_body_is_held_to_its_angular_bound(tmp_path, solver):
    """A box spun at 20 rad/s, its bound 572.958 deg/s (10 rad/s): 10 rad/s after the first step. Without an authored
    value on a PhysX-written stage, PhysX's own 100 rad/s: a box spun at 150 rad/s slows to 100."""
    _free_box(tmp_path / "spin.usda", spin=math.degrees(20.0), maxAngularVelocity=572.958)
    _free_box(tmp_path / "default.usda", spin=math.degrees(150.0))
    for name, expected in (("spin.usda", 10.0), ("default.usda", 100.0)):
        sim = Simulation.open(str(tmp_path / name), solver=solver, device="cpu", record=False)
        sim.step_frame()
        spin = np.linalg.norm(sim.state.body_qd.numpy()[0, 3:])
        sim.close()
        # (at the bound, less what the solver's own angular damping took in the frame's last step: semi_implicit's)
        assert expected * (1 - 2e-3) <= spin <= expected * (1 + 1e-5), (name, spin)


def test_mujoco_warp_keeps_the_bounds_as_c_mujoco_does(tmp_path):
    """The warp backend (MuJoCo-Warp, here on Warp's CPU device) scales the same way in a kernel: the spun box to its
    10 rad/s, the centimetre box's fall to 0.5 m/s, and the whip (two worlds) within PhysX's 100 rad/s, each link's
    speed as C MuJoCo's after the same frames."""
    _free_box(tmp_path / "spin.usda", spin=math.degrees(20.0), maxAngularVelocity=572.958)
    _free_box(tmp_path / "fall.usda", meters_per_unit=0.01, maxLinearVelocity=50.0)
    for name, frames, expected, part in (("spin.usda", 1, 10.0, slice(3, 6)), ("fall.usda", 12, 0.5, slice(0, 3))):
        sim = Simulation.open(str(tmp_path / name), solver="mujoco", backend="warp", device="cpu", record=False)
        for _ in range(frames):
            sim.step_frame()
        speed = float(np.linalg.norm(sim.state.body_qd.numpy()[0, part]))
        sim.close()
        assert speed == pytest.approx(expected, rel=1e-4), (name, speed)
    _whip(tmp_path / "physx.usda", physx=True)
    spins = {backend: _max_spin(tmp_path / "physx.usda", 6, worlds=2, backend=backend) for backend in ("cpu", "warp")}
    assert spins["warp"] <= 100.0 * (1 + 1e-4), spins
    assert spins["warp"] == pytest.approx(spins["cpu"], rel=1e-2), spins


@pytest.mark.gpu
def test_mujoco_warp_keeps_the_bounds_in_its_captured_frame_on_cuda(tmp_path):
    """On CUDA the bounds' kernel is part of the captured frame: the whip (two worlds) within 100 rad/s, as on the
    CPU."""
    _whip(tmp_path / "physx.usda", physx=True)
    cpu = _max_spin(tmp_path / "physx.usda", 6, worlds=2, backend="warp")
    sim = Simulation.open(str(tmp_path / "physx.usda"), solver="mujoco", backend="warp", device="cuda", record=False,
                          fps=24, worlds=2)  # fmt: skip
    top = 0.0
    for _ in range(6):
        sim.step_frame()
        top = max(top, float(np.linalg.norm(sim.state.body_qd.numpy()[:, 3:], axis=1).max()))
    replays = sim.solver.frame_capture.replays
    sim.close()
    assert replays > 1 and top <= 100.0 * (1 + 1e-4) and top == pytest.approx(cpu, rel=1e-2), (top, cpu, replays)


def test_a_stage_phsyx_did_not_write_is_not_bounded(tmp_path):
    """No PhysX schema on the stage: a box spun at 150 rad/s keeps its spin (no bound of PhysX's is imposed)."""
    _free_box(tmp_path / "spin.usda", spin=math.degrees(150.0))
    stage_text = (tmp_path / "spin.usda").read_text().replace('"PhysxRigidBodyAPI", ', "")
    stage_text = stage_text.replace(', "PhysxRigidBodyAPI"', "")
    (tmp_path / "plain.usda").write_text(stage_text)
    assert "Physx" not in stage_text
    sim = Simulation.open(str(tmp_path / "plain.usda"), device="cpu", record=False)
    sim.step_frame()
    spin = np.linalg.norm(sim.state.body_qd.numpy()[0, 3:])
    sim.close()
    assert spin == pytest.approx(150.0, rel=1e-4)


def test_an_engine_that_does_not_keep_the_bounds_says_so_once(tmp_path, caplog):
    """featherstone does not keep them: said once, naming the body, and the run goes on."""
    _free_box(tmp_path / "spin.usda", spin=math.degrees(20.0), maxAngularVelocity=572.958)
    with caplog.at_level(logging.WARNING, logger="newton_usd"):
        assert usdsim(tmp_path / "spin.usda", "--solver", "featherstone", "-n", 3, "-o", tmp_path / "out.usda") == 0
    said = [r.getMessage() for r in caplog.records if "not kept by the featherstone solver" in r.getMessage()]
    assert len(said) == 1, caplog.text
    assert "physxRigidBody:maxAngularVelocity" in said[0] or "maxAngularVelocity" in said[0]
    assert "/Box" in said[0]


def test_a_negative_bound_is_a_one_line_error_naming_the_attribute(tmp_path, capsys):
    _free_box(tmp_path / "bad.usda", maxLinearVelocity=-1.0)
    assert usdsim(tmp_path / "bad.usda", "-n", 1) == 2
    err = capsys.readouterr().err
    assert "/Box" in err and "physxRigidBody:maxLinearVelocity" in err and "Traceback" not in err, err


def test_explain_shows_physx_s_own_bound_where_it_holds(tmp_path, capsys):
    _free_box(tmp_path / "default.usda", spin=math.degrees(1.0))
    assert main(["explain", str(tmp_path / "default.usda"), "/Box"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "max_angular_velocity" in line)
    assert " 100 " in row and "PhysX's own bound" in row, row
