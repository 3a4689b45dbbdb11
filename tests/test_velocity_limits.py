"""PhysX's bounds on a body's speeds: ``physxRigidBody:maxLinearVelocity`` (stage units per second) and
``maxAngularVelocity`` (degrees per second) where authored, and PhysX's own 100 rad/s angular bound on a stage PhysX
wrote; kept by C MuJoCo, MuJoCo-Warp, XPBD, semi-implicit, Featherstone, Kamino and VBD, said once by the engines
that do not keep them (mujoco_vbd, xpbd_vbd)."""

from __future__ import annotations

import logging
import math
from types import SimpleNamespace

import mujoco
import numpy as np
import pytest
import warp as wp
from pxr import Gf, Sdf, Usd, UsdPhysics
from test_newton_solvers import usdsim
from test_stability import _whip

from newton_usd import Simulation
from newton_usd.cli import main
from newton_usd.solvers.newton import SolverFeatherstone, SolverKamino, SolverSemiImplicit, SolverXPBD
from newton_usd.solvers.newton.coupled import SolverMuJoCoVBD
from newton_usd.solvers.newton.vbd import SolverVBD
from newton_usd.solvers.velocity_limits import ENGINES_KEEPING, MuJoCoSpeedBounds, unkept_message

from stages import add_box, add_hinge, new_stage

KEEPING = ("mujoco", "xpbd", "semi_implicit", "featherstone", "kamino", "vbd")


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
        # (at the bound, less what the solver's own angular damping took in the frame's last step: semi_implicit's;
        # VBD's rotation update loses spin on its own: an unbounded box spun at 100 rad/s has 97.2 after a frame)
        slack = 3e-2 if solver == "vbd" else 2e-3
        assert expected * (1 - slack) <= spin <= expected * (1 + 1e-5), (name, spin)


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
    """mujoco_vbd (MuJoCo coupled with VBD by Newton's coupled solver) does not keep them: said once, naming the
    body, and the run goes on."""
    from test_coupled import arm_and_cloth  # noqa: PLC0415

    path = tmp_path / "coupled.usda"
    arm_and_cloth(path, across=5, along=3)
    stage = Usd.Stage.Open(str(path))
    stage.GetPrimAtPath("/World/Box").CreateAttribute(
        "physxRigidBody:maxAngularVelocity", Sdf.ValueTypeNames.Float
    ).Set(572.958)
    stage.Save()
    with caplog.at_level(logging.WARNING, logger="newton_usd"):
        assert usdsim(path, "-n", 2, "-o", tmp_path / "out.usda") == 0
    said = [r.getMessage() for r in caplog.records if "not kept by the mujoco_vbd solver" in r.getMessage()]
    assert len(said) == 1, caplog.text
    assert "maxAngularVelocity" in said[0] and "/World/Box" in said[0]


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


def test_the_unkept_message_names_the_engine_the_bounded_bodies_and_those_that_keep_them():
    bounds = [(math.inf, math.inf), (math.inf, 10.0), (2.0, math.inf)]
    model = SimpleNamespace(
        body_count=3, body_label=["/A", "/B", "/C"], body_max_velocity=wp.array(bounds, dtype=wp.vec2, device="cpu")
    )
    message, labels = unkept_message(model, "vbd")
    assert labels == ["/B", "/C"]
    assert "not kept by the vbd solver" in message and f"(kept by {', '.join(ENGINES_KEEPING)})" in message, message
    # (the message's list is what the engines say of themselves: each listed one keeps them, the coupled one not)
    kept = {
        "featherstone": SolverFeatherstone, "kamino": SolverKamino, "vbd": SolverVBD, "xpbd": SolverXPBD,
        "semi_implicit": SolverSemiImplicit,
    }  # fmt: skip
    assert all(kept[name].keeps_speed_bounds for name in kept) and set(kept) <= set(ENGINES_KEEPING)
    assert not SolverMuJoCoVBD.keeps_speed_bounds and "mujoco_vbd" not in ENGINES_KEEPING
    unbounded = SimpleNamespace(body_count=1, body_label=["/A"], body_max_velocity=wp.array(bounds[:1], dtype=wp.vec2))
    assert unkept_message(unbounded, "vbd") is None


def _bound_links(path, angular: float, linear: float) -> None:
    """Author ``angular`` rad/s and ``linear`` m/s on each of the whip's links."""
    stage = Usd.Stage.Open(str(path))
    for i in range(5):
        prim = stage.GetPrimAtPath(f"/Chain/Link{i}")
        prim.CreateAttribute("physxRigidBody:maxAngularVelocity", Sdf.ValueTypeNames.Float).Set(math.degrees(angular))
        prim.CreateAttribute("physxRigidBody:maxLinearVelocity", Sdf.ValueTypeNames.Float).Set(linear)
    stage.Save()


def test_featherstone_keeps_the_whip_within_physx_s_bound_by_its_joint_velocities(tmp_path):
    """Unbounded the whip blows up under featherstone at frame 7; on the stage as PhysX writes it (100 rad/s) a second
    runs, no link faster than the bound, each frame's fastest link as under C MuJoCo (88.52 rad/s in the first second
    under both). With 20 rad/s on each link the bound holds at every frame end and the bodies' velocities are those
    of the scaled joint velocities (Newton's forward kinematics of them)."""
    _whip(tmp_path / "bare.usda", physx=False)
    _whip(tmp_path / "physx.usda", physx=True)
    assert usdsim(tmp_path / "bare.usda", "--solver", "featherstone", "-n", 10, "--fps", 24) == 3
    spins = {solver: _max_spin(tmp_path / "physx.usda", 24, solver=solver) for solver in ("featherstone", "mujoco")}
    assert spins["featherstone"] <= 100.0 * (1 + 1e-4), spins
    assert spins["featherstone"] == pytest.approx(spins["mujoco"], rel=1e-2), spins
    _whip(tmp_path / "tight.usda", physx=True)
    _bound_links(tmp_path / "tight.usda", 20.0, 100.0)
    sim = Simulation.open(str(tmp_path / "tight.usda"), solver="featherstone", device="cpu", record=False, fps=24)
    top, mismatch = 0.0, 0.0
    for _ in range(12):
        sim.step_frame()
        qd = sim.state.body_qd.numpy()
        top = max(top, float(np.linalg.norm(qd[:, 3:], axis=1).max()))
        sim.solver.exchange.bodies_from_joints(sim.state)  # (the body velocities from the joint velocities)
        mismatch = max(mismatch, float(np.abs(sim.state.body_qd.numpy() - qd).max()))
    sim.close()
    assert 20.0 * (1 - 1e-3) <= top <= 20.0 * (1 + 1e-4), top
    assert mismatch < 1e-4, mismatch


def _cart_pole(path):
    """A 1 kg cart on a slider along X from the world, bounded to 0.3 m/s, with a 0.5 kg pole hinged about Y on it,
    level at the start, bounded to 2 rad/s: the pole swings down and pushes the cart."""
    stage = new_stage(path)
    cart = add_box(stage, "/Cart", 0.2, (0, 0, 2), mass=1.0)
    pole = add_box(stage, "/Pole", 0.2, (0.5, 0, 2), mass=0.5)
    for body in (cart, pole):
        body.GetPrim().RemoveAPI(UsdPhysics.CollisionAPI)
        UsdPhysics.MassAPI(body.GetPrim()).CreateDiagonalInertiaAttr(Gf.Vec3f(0.01, 0.01, 0.01))
        body.GetPrim().AddAppliedSchema("PhysxRigidBodyAPI")
    cart.GetPrim().CreateAttribute("physxRigidBody:maxLinearVelocity", Sdf.ValueTypeNames.Float).Set(0.3)
    pole.GetPrim().CreateAttribute("physxRigidBody:maxAngularVelocity", Sdf.ValueTypeNames.Float).Set(math.degrees(2))
    slider = UsdPhysics.PrismaticJoint.Define(stage, "/Slider")
    slider.CreateAxisAttr("X")
    slider.CreateBody1Rel().SetTargets([Sdf.Path("/Cart")])
    slider.CreateLocalPos0Attr(Gf.Vec3f(0, 0, 2))
    add_hinge(stage, "/Hinge", "/Cart", "/Pole", (0, 0, 0), (-0.5, 0, 0))
    stage.Save()


def test_featherstone_scales_a_slider_and_a_hinge_as_c_mujoco_does(tmp_path):
    """The cart's translating DOF and the pole's rotating one each held to their body's bound (the cart reaches 0.3
    m/s at frame 8, the pole 2 rad/s at frame 2): every body velocity and joint velocity at every frame end as C
    MuJoCo's (same bounds, same scaling) within 1e-3."""
    _cart_pole(tmp_path / "cart.usda")
    runs = {}
    for solver in ("featherstone", "mujoco"):
        sim = Simulation.open(str(tmp_path / "cart.usda"), solver=solver, device="cpu", record=False, fps=24)
        frames = []
        for _ in range(12):
            sim.step_frame()
            frames.append(np.concatenate([sim.state.body_qd.numpy().ravel(), sim.state.joint_qd.numpy()]))
        sim.close()
        runs[solver] = np.array(frames)
    feather = runs["featherstone"]
    assert np.abs(feather - runs["mujoco"]).max() < 1e-3, np.abs(feather - runs["mujoco"]).max()
    cart, pole = feather[:, 0], np.linalg.norm(feather[:, 9:12], axis=1)
    assert cart.max() == pytest.approx(0.3, rel=1e-5) and pole.max() == pytest.approx(2.0, rel=1e-5), (cart, pole)


def test_kamino_keeps_the_bounds_on_its_bodies_and_reports_the_joint_velocities_of_them(tmp_path):
    """Kamino's state is its bodies' twists: each bounded body's scaled (the whip's links within 5 rad/s and 10 m/s
    at every frame end), and the joint velocities it reports are those of the scaled bodies (Newton's inverse
    kinematics of them), not those it computed before the scaling (which differ by up to 8 rad/s here)."""
    _whip(tmp_path / "tight.usda", physx=True)
    _bound_links(tmp_path / "tight.usda", 5.0, 10.0)
    sim = Simulation.open(str(tmp_path / "tight.usda"), solver="kamino", device="cpu", record=False, fps=24)
    spin, speed, mismatch = 0.0, 0.0, 0.0
    for _ in range(6):
        sim.step_frame()
        qd = sim.state.body_qd.numpy()
        spin = max(spin, float(np.linalg.norm(qd[:, 3:], axis=1).max()))
        speed = max(speed, float(np.linalg.norm(qd[:, :3], axis=1).max()))
        joint_qd = sim.state.joint_qd.numpy().copy()
        sim.solver.exchange.joints_from_bodies(sim.state)
        mismatch = max(mismatch, float(np.abs(sim.state.joint_qd.numpy() - joint_qd).max()))
    sim.close()
    assert spin <= 5.0 * (1 + 1e-4) and speed <= 10.0 * (1 + 1e-4), (spin, speed)
    assert spin > 4.99 and speed > 9.99, (spin, speed)  # (the bounds were reached: the scaling ran)
    assert mismatch < 1e-3, mismatch
