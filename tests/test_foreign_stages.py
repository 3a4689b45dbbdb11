"""Stages as other projects author them (PhysX, OpenUSD's examples, Newton's assets): what they mean by
UsdPhysics runs so under every engine (issue 33). Each test writes a small stage reproducing one case."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics
from test_newton_solvers import _bob, contact_stiffness, joint_positions, positions, rotations, three_link_chain, usdsim

from newton_usd.cli import main
from newton_usd.errors import SimulationError
from newton_usd.usd.collision_filters import INERT_GROUPS

from stages import add_box, add_ground, falling_cube, new_stage

ENGINES = ("mujoco", "xpbd", "featherstone")


def _static_base(stage, path, pos, yaw_deg, scale):
    """A static collider (no rigid body) under a scaled, turned Xform."""
    holder = UsdGeom.Xform.Define(stage, path.rsplit("/", 1)[0])
    holder.AddTranslateOp().Set(Gf.Vec3d(*pos))
    holder.AddRotateXYZOp().Set(Gf.Vec3f(0, 0, yaw_deg))
    holder.AddScaleOp().Set(Gf.Vec3f(scale, scale, scale))
    base = UsdGeom.Cube.Define(stage, path)
    base.CreateSizeAttr(0.1)
    UsdPhysics.CollisionAPI.Apply(base.GetPrim())
    return base


_YAW90 = Gf.Quatf(math.sqrt(0.5), 0, 0, math.sqrt(0.5))


def _hinge(stage, path, body0, body1, local0, local1, rot0, rot1):
    joint = UsdPhysics.RevoluteJoint.Define(stage, path)
    joint.CreateBody0Rel().SetTargets([Sdf.Path(body0)])
    joint.CreateBody1Rel().SetTargets([Sdf.Path(body1)])
    joint.CreateAxisAttr("Y")
    joint.CreateLocalPos0Attr(Gf.Vec3f(*local0))
    joint.CreateLocalPos1Attr(Gf.Vec3f(*local1))
    joint.CreateLocalRot0Attr(rot0)
    joint.CreateLocalRot1Attr(rot1)
    return joint


@pytest.mark.parametrize("engine", ENGINES)
def test_joint_to_a_static_collider_or_disabled_body_holds_at_that_prims_frame(tmp_path, engine):
    stage = new_stage(tmp_path / "static.usda")
    # The hinge's body0 is a static collider turned 90 degrees about Z and scaled 2x: its local position
    # (0.25, 0, 0) is (0, 0.5, 0) in the world, its Y axis the world's -X (the bob's joint frame, turned
    # the same, keeps the bob unturned).
    _static_base(stage, "/Rail/Base", (1, 2, 2), 90.0, 2.0)
    _bob(stage, "/Bob", pos=(1, 2.5, 2), velocity=(120.0, 0, 0))
    _hinge(stage, "/Hinge", "/Rail/Base", "/Bob", (0.25, 0, 0), (0, 0, 0), Gf.Quatf(1), _YAW90)
    # The same on a disabled rigid body (its colliders are static), here on body1's side of another hinge.
    disabled = UsdGeom.Xform.Define(stage, "/Off")
    disabled.AddTranslateOp().Set(Gf.Vec3d(-1, 0, 2))
    disabled.AddRotateXYZOp().Set(Gf.Vec3f(0, 0, 90))
    UsdPhysics.RigidBodyAPI.Apply(disabled.GetPrim()).CreateRigidBodyEnabledAttr(False)
    _bob(stage, "/Bob2", pos=(-1, 0.25, 2), velocity=(120.0, 0, 0))
    _hinge(stage, "/Hinge2", "/Bob2", "/Off", (0, 0, 0), (0.25, 0, 0), _YAW90, Gf.Quatf(1))
    stage.Save()
    assert usdsim(tmp_path / "static.usda", "--solver", engine, "-n", 30) == 0
    out = tmp_path / "static.sim.usda"
    for bob, pivot in (("/Bob", (1, 2.5, 2)), ("/Bob2", (-1, 0.25, 2))):
        assert np.allclose(positions(out, bob, range(0, 31, 5)), pivot, atol=5e-3), bob  # held at the pivot
        swung = off_axis = 0.0
        for r in rotations(out, bob, range(1, 31)):
            axis, angle = r.GetAxis(), r.GetAngle()
            swung = max(swung, angle * abs(axis[0]))
            off_axis = max(off_axis, angle * math.hypot(axis[1], axis[2]))
        assert swung > 10.0 and off_axis < 1.0, (bob, swung, off_axis)  # about the world's X only


@pytest.mark.parametrize("engine", ENGINES)
def test_two_fixed_base_chains_run_each_as_alone(tmp_path, engine):
    """Two chains hinged to the world, authored one after the other (a breadth-first walk from the world
    interleaves their joints): Newton's solvers need each tree's joints together. Each chain moves as it
    does alone, its joint states read back where they belong."""
    angles = {"A": (20.0, -10.0, 15.0), "B": (-35.0, 25.0, 5.0)}
    both = None
    for name, y in (("A", 0.0), ("B", 1.0)):
        both = three_link_chain(tmp_path / "both.usda", angles[name], stage=both, prefix=name, y=y)
        three_link_chain(tmp_path / f"{name}.usda", angles[name], prefix=name, y=y).Save()
    both.Save()
    for stage in ("both", "A", "B"):
        args = ("--solver", engine, "-n", 15, "--write-joint-states")
        assert usdsim(tmp_path / f"{stage}.usda", *args) == 0, stage
    for name in "AB":
        for i in range(3):
            alone = joint_positions(tmp_path / f"{name}.sim.usda", f"/{name}Joint{i}", range(16))
            together = joint_positions(tmp_path / "both.sim.usda", f"/{name}Joint{i}", range(16))
            assert np.abs(alone[-1] - alone[0]) > 1.0  # it swung (degrees)
            np.testing.assert_allclose(together, alone, atol=1e-3)
            for frame in (0, 15):  # the bodies where the joint states say
                np.testing.assert_allclose(
                    positions(tmp_path / "both.sim.usda", f"/{name}Link{i}", [frame]),
                    positions(tmp_path / f"{name}.sim.usda", f"/{name}Link{i}", [frame]),
                    atol=1e-4,
                )


@pytest.mark.parametrize("engine", ENGINES)
def test_a_body_filtered_against_a_static_collider_passes_through_it(tmp_path, engine):
    stage = new_stage(tmp_path / "filtered.usda")
    add_ground(stage)
    shelf = UsdGeom.Cube.Define(stage, "/Shelf")
    shelf.CreateSizeAttr(0.2)
    shelf.AddTranslateOp().Set(Gf.Vec3d(0, 0, 0.5))
    UsdPhysics.CollisionAPI.Apply(shelf.GetPrim())
    add_box(stage, "/Through", 0.2, (0, 0, 0.8))
    UsdPhysics.FilteredPairsAPI.Apply(stage.GetPrimAtPath("/Through")).CreateFilteredPairsRel().SetTargets(["/Shelf"])
    add_box(stage, "/Held", 0.2, (0, 1, 0.8))  # the same, unfiltered, over a shelf of its own
    other = UsdGeom.Cube.Define(stage, "/Shelf2")
    other.CreateSizeAttr(0.2)
    other.AddTranslateOp().Set(Gf.Vec3d(0, 1, 0.5))
    UsdPhysics.CollisionAPI.Apply(other.GetPrim())
    contact_stiffness(stage)
    stage.Save()
    assert usdsim(tmp_path / "filtered.usda", "--solver", engine, "-n", 60) == 0
    out = tmp_path / "filtered.sim.usda"
    assert abs(positions(out, "/Through", [60])[0, 2] - 0.1) < 0.01  # through the shelf, onto the ground
    assert abs(positions(out, "/Held", [60])[0, 2] - 0.7) < 0.01  # on its shelf


def test_check_names_limit_values_authored_without_their_limit_api(tmp_path, capsys):
    stage = new_stage(tmp_path / "d6.usda")
    _bob(stage)
    joint = UsdPhysics.Joint.Define(stage, "/D6")
    joint.CreateBody1Rel().SetTargets([Sdf.Path("/Bob")])
    joint.CreateLocalPos0Attr(Gf.Vec3f(0, 0, 1.5))
    UsdPhysics.LimitAPI.Apply(joint.GetPrim(), "transX").CreateLowAttr(1.0)  # applied: used
    joint.GetPrim().CreateAttribute("limit:rotX:physics:low", Sdf.ValueTypeNames.Float).Set(-10.0)  # not applied
    stage.Save()
    assert main(["check", str(tmp_path / "d6.usda")]) == 0
    out = capsys.readouterr().out
    assert "every authored value is used" not in out
    assert "limit:rotX:physics:low (no effect: PhysicsLimitAPI:rotX is not applied) (1 prim: /D6)" in out
    assert "transX" not in out


def test_check_names_collision_groups_that_filter_nothing(tmp_path, capsys):
    """Kamino's cartpole puts its rail, cart and pole each in a PhysicsCollisionGroup and filters none of them:
    by UsdPhysics every group collides with every other, so the cart's box, authored around the static rail,
    collides with it (as in Newton's and PhysX's importers). The user is told that the groups do nothing."""
    stage = new_stage(tmp_path / "groups.usda")
    rail = UsdGeom.Cube.Define(stage, "/Rail")
    rail.CreateSizeAttr(0.03)
    UsdPhysics.CollisionAPI.Apply(rail.GetPrim())
    add_box(stage, "/Cart", 0.2, (0, 0, 0))
    groups = {}
    for name, member in (("RailGroup", "/Rail"), ("CartGroup", "/Cart")):
        groups[name] = UsdPhysics.CollisionGroup.Define(stage, f"/Groups/{name}")
        groups[name].GetCollidersCollectionAPI().GetIncludesRel().SetTargets([Sdf.Path(member)])
    stage.Save()
    assert main(["check", str(tmp_path / "groups.usda")]) == 0
    out = capsys.readouterr().out
    said = [line.split(f"{INERT_GROUPS}: ")[1] for line in out.splitlines() if INERT_GROUPS in line]
    assert said and sorted(said[0].split(", ")) == ["/Groups/CartGroup", "/Groups/RailGroup"], out
    overlap = re.search(r"  - (/Rail and /Cart|/Cart and /Rail): ([0-9.]+) m", out)
    assert overlap and float(overlap.group(2)) == pytest.approx(0.115, abs=0.005), out  # 0.1 + 0.015
    groups["CartGroup"].CreateFilteredGroupsRel().SetTargets([Sdf.Path("/Groups/RailGroup")])  # now they filter
    stage.Save()
    assert main(["check", str(tmp_path / "groups.usda")]) == 0
    out = capsys.readouterr().out
    assert INERT_GROUPS not in out and "in each other" not in out, out


def test_check_lists_colliders_that_start_in_each_other(tmp_path, capsys):
    """Newton's humanoid_mjc starts its feet 1.29 m below its floor: usdsim check names such pairs, deepest
    first; a box resting on the ground, or sunk less than 1 cm, is not one."""
    stage = new_stage(tmp_path / "sunk.usda")
    add_ground(stage)
    add_box(stage, "/Sunk", 0.2, (0, 0, -0.05))  # its bottom 0.15 m below the ground
    add_box(stage, "/Deeper", 0.2, (2, 0, -0.2))  # 0.3 m
    add_box(stage, "/Resting", 0.2, (4, 0, 0.1))
    add_box(stage, "/Settled", 0.2, (6, 0, 0.095))  # 5 mm
    stage.Save()
    assert main(["check", str(tmp_path / "sunk.usda")]) == 0
    out = capsys.readouterr().out
    said = re.findall(r"  - /Ground and (/\w+): ([0-9.]+) m", out)
    assert "colliders that start more than 1 cm in each other (2 pairs" in out, out
    assert [(name, round(float(depth), 2)) for name, depth in said] == [("/Deeper", 0.3), ("/Sunk", 0.15)], out


def test_batch_resume_hash_changes_with_the_newton_usd_version(monkeypatch):
    import newton_usd  # noqa: PLC0415
    from newton_usd.batch.resume import input_hash  # noqa: PLC0415

    before = input_hash({"solver": "mujoco"}, [("stage.usda", "abc")])
    monkeypatch.setattr(newton_usd, "__version__", "99.0")
    assert input_hash({"solver": "mujoco"}, [("stage.usda", "abc")]) != before


@pytest.mark.parametrize(("api", "solver"), [("NewtonSolverFeatherstoneAPI", "featherstone"),
                                             ("NewtonSolverSemiImplicitAPI", "semi_implicit")])  # fmt: skip
def test_newton_solver_api_on_the_scene_picks_the_solver(tmp_path, capsys, api, solver):
    """Newton's stage-driven runtime chooses the solver by the NewtonSolver<Name>API applied to the scene."""
    stage = new_stage(tmp_path / "s.usda")
    stage.GetPrimAtPath("/PhysicsScene").AddAppliedSchema(api)
    add_box(stage, "/Box")
    stage.Save()
    assert main(["explain", str(tmp_path / "s.usda"), "/PhysicsScene"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if " solver " in f" {line} "]
    assert rows and solver in rows[0] and api in rows[0], rows


def test_mujoco_warnings_go_through_the_newton_usd_logger(caplog, capfd):
    import mujoco  # noqa: PLC0415

    from newton_usd import Simulation  # noqa: PLC0415

    Simulation.open(falling_cube(), solver="mujoco", backend="cpu")  # (routes them)
    m = mujoco.MjModel.from_xml_string(
        '<mujoco><worldbody><body><freejoint/><geom size=".1"/></body></worldbody></mujoco>'
    )
    d = mujoco.MjData(m)
    d.qvel[:] = float("nan")
    with caplog.at_level("WARNING", logger="newton_usd"):
        mujoco.mj_step(m, d)
    assert any("MuJoCo: Nan, Inf or huge value in QVEL" in r.getMessage() for r in caplog.records)
    assert "Nan, Inf" not in capfd.readouterr().out


def test_compare_leaves_out_the_margin_of_a_joint_without_a_limit(tmp_path):
    """gym's ant puts ``margin`` on its free root joint: it activates limits only (none there), so the stage
    that cannot carry it is no different."""
    from newton_usd.compare import compare  # noqa: PLC0415
    from newton_usd.mjcf import convert  # noqa: PLC0415

    xml = tmp_path / "free.xml"
    xml.write_text("""<mujoco><worldbody><geom type="plane" size="5 5 0.1"/>
      <body name="torso" pos="0 0 1"><joint name="root" type="free" margin="0.01"/><geom size="0.1"/>
        <body name="leg"><joint name="knee" type="hinge" range="-30 30" margin="0.02"/><geom size="0.05"/></body>
      </body></worldbody></mujoco>""")
    usda = convert(str(xml), str(tmp_path / "free.usda"))
    c = compare(str(xml), str(usda))
    assert not [(d.name, d.field) for d in c.differences if d.field == "margin"]
    assert c.counts["joint"][0] == 2


def _hinge_with_joint_values(path):
    """A driven hinge authoring a drive force limit, joint friction, armature and passive damping."""
    stage = new_stage(path)
    _bob(stage)
    joint = UsdPhysics.RevoluteJoint.Define(stage, "/Hinge")
    joint.CreateBody1Rel().SetTargets([Sdf.Path("/Bob")])
    joint.CreateLocalPos0Attr(Gf.Vec3f(0, 0, 1.5))
    joint.CreateAxisAttr("Y")
    drive = UsdPhysics.DriveAPI.Apply(joint.GetPrim(), "angular")
    drive.CreateStiffnessAttr(10.0)
    drive.CreateMaxForceAttr(5.0)
    for name in ("newton:friction", "newton:damping", "newton:armature"):
        joint.GetPrim().CreateAttribute(name, Sdf.ValueTypeNames.Float).Set(0.1)
    stage.Save()


@pytest.mark.parametrize(
    ("solver", "dropped", "kept"),
    [
        ("xpbd", ("physics:maxForce", "newton:friction", "newton:armature", "newton:damping"), ()),
        ("featherstone", ("physics:maxForce", "newton:friction"), ("newton:armature", "newton:damping")),
        pytest.param(  # (its check makes the solver: Kamino's kernels, a minute to compile on the CPU: soak)
            "kamino",
            ("newton:damping",),
            ("physics:maxForce", "newton:friction", "newton:armature"),
            marks=[pytest.mark.slow, pytest.mark.soak],
        ),
    ],
)
def test_check_solver_names_the_joint_values_a_newton_solver_drops(tmp_path, capsys, solver, dropped, kept):
    _hinge_with_joint_values(tmp_path / "hinge.usda")
    assert main(["check", str(tmp_path / "hinge.usda"), "--solver", solver]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if f"not simulated by the {solver} solver" in line]
    for attribute in dropped:
        assert any(attribute in line and line.endswith(": /Hinge") for line in lines), (attribute, out)
    for attribute in kept:
        assert not any(attribute in line for line in lines), (attribute, out)


@pytest.mark.parametrize("engine, reach", [("mujoco", 10.0), ("featherstone", 6.0)])
def test_a_stiff_limit_stops_a_fast_hinge_at_the_limit(tmp_path, engine, reach):
    """A 1 kg bob spun at 600 deg/s on a hinge limited to +-5 deg whose limit spring is stiff (the scene's
    ``newton:joint_limit_ke`` 1e6 N*m/rad against 0.254 kg*m^2 about the hinge: explicitly stable below about
    4e-4 s only): Featherstone takes it implicitly at 1/480 s, and the bob stops at the limit (MuJoCo's soft limit,
    solref 0.02 s, lets it overshoot to 9.3 deg)."""
    stage = new_stage(tmp_path / "hinge.usda")
    stage.GetPrimAtPath("/PhysicsScene").CreateAttribute("newton:joint_limit_ke", Sdf.ValueTypeNames.Float).Set(1e6)
    _bob(stage, velocity=(0, 600.0, 0))
    joint = UsdPhysics.RevoluteJoint.Define(stage, "/Hinge")
    joint.CreateBody1Rel().SetTargets([Sdf.Path("/Bob")])
    joint.CreateLocalPos0Attr(Gf.Vec3f(0, 0, 1.5))
    joint.CreateAxisAttr("Y")
    joint.CreateLowerLimitAttr(-5.0)
    joint.CreateUpperLimitAttr(5.0)
    stage.Save()
    assert usdsim(tmp_path / "hinge.usda", "--solver", engine, "-n", 12, "--write-joint-states") == 0
    angles = joint_positions(tmp_path / "hinge.sim.usda", "/Hinge", range(13))
    assert 4.5 < np.abs(angles).max() < reach, angles  # (600 deg/s: at the limit by frame 1)


def test_a_body_flung_out_of_the_scene_stops_the_run(tmp_path, capsys):
    """Two boxes authored one inside the other: XPBD pushes them apart at hundreds of m/s, every number finite
    (below max_speed): a blow-up, named with the body and the frame. A body thrown by its authored velocity, falling
    with no ground beneath it, goes as far and is not."""
    stage = new_stage(tmp_path / "overlap.usda", fps=24)
    add_box(stage, "/A", 1.0, (0, 0, 0))
    add_box(stage, "/B", 1.0, (0.05, 0, 0))
    stage.Save()
    assert usdsim(tmp_path / "overlap.usda", "--solver", "xpbd", "-n", 60) == 3
    err = capsys.readouterr().err
    said = re.search(r"frame (\d+): /[AB]: body was flung ([0-9.e+]+) m from its start in ([0-9.e-]+) s, beyond the "
                     r"([0-9.e+]+) m that free fall from rest", err)  # fmt: skip
    assert said, err
    assert int(said.group(1)) < 10 and float(said.group(2)) > float(said.group(4)), err
    start = re.search(r"; at the start, colliders (/A and /B|/B and /A) are ([0-9.]+) m in each other, which", err)
    assert start and float(start.group(2)) == pytest.approx(0.95, abs=0.01), err  # what set them flying
    stage = new_stage(tmp_path / "thrown.usda", fps=24)
    add_box(stage, "/Thrown", 0.2, (0, 0, 1))
    UsdPhysics.RigidBodyAPI(stage.GetPrimAtPath("/Thrown")).CreateVelocityAttr(Gf.Vec3f(50, 0, 0))
    stage.Save()
    # (nothing to collide with: two steps a frame fly it as the stage's twenty do)
    assert usdsim(tmp_path / "thrown.usda", "--solver", "xpbd", "-n", 60, "--substeps", 2) == 0
    moved = positions(tmp_path / "thrown.sim.usda", "/Thrown", [60])[0] - np.array([0, 0, 1])
    assert moved[0] > 120 and moved[2] < -30  # 50 m/s for 2.5 s, and free fall


def test_simulation_from_python_stops_a_flung_body_and_measures_again_from_a_view_write(tmp_path):
    """``Simulation.run`` from Python gets the same flung check as usdsim (the two overlapping boxes); a view that
    throws a body by hand, mid-run, starts the check again from there: a body thrown at 60 m/s is not flung."""
    from newton_usd.selection import RigidBodyView  # noqa: PLC0415
    from newton_usd.sim import Simulation  # noqa: PLC0415

    stage = new_stage(tmp_path / "overlap.usda", fps=24)
    add_box(stage, "/A", 1.0, (0, 0, 0))
    add_box(stage, "/B", 1.0, (0.05, 0, 0))
    stage.Save()
    sim = Simulation.open(str(tmp_path / "overlap.usda"), solver="xpbd", device="cpu")
    with pytest.raises(SimulationError) as raised:
        sim.run(60)
    assert raised.value.label in ("/A", "/B") and raised.value.frame < 10 and "flung" in str(raised.value)
    sim.reset()
    sim.check_flung = False
    sim.run(20)  # (asked not to check: the boxes fly apart, and the run goes on)
    sim.close()

    stage = new_stage(tmp_path / "thrown.usda", fps=24)
    add_box(stage, "/Thrown", 0.2, (0, 0, 1))
    stage.Save()
    sim = Simulation.open(str(tmp_path / "thrown.usda"), solver="xpbd", device="cpu", substeps=2)  # (nothing to hit)
    sim.run(5)  # (the check starts from the box at rest)
    RigidBodyView(sim, "/Thrown").set_velocities(np.array([[60.0, 0, 0, 0, 0, 0]], dtype=np.float32))
    sim.run(40)
    x = sim.state.body_q.numpy()[0, 0]
    assert x > 90, x  # 60 m/s for 1.67 s: farther than free fall, the extent and 10 m allow from the first start
    sim.close()


def _folded_chain(path, self_collisions=None, attribute="physxArticulation:enabledSelfCollisions"):
    """A floating articulation of three boxes hinged about Y, A-B-C, C folded back onto A's top (0.03 m into it):
    A and C are not jointed to each other, so only the articulation's self-collision setting (``attribute`` on its
    root, A; None: unauthored) keeps them apart. No ground: the chain falls."""
    stage = new_stage(path)
    root = add_box(stage, "/Robot/A", 0.2, (0, 0, 1)).GetPrim()
    UsdPhysics.ArticulationRootAPI.Apply(root)
    if self_collisions is not None:
        root.CreateAttribute(attribute, Sdf.ValueTypeNames.Bool).Set(self_collisions)
    add_box(stage, "/Robot/B", 0.2, (0.3, 0, 1))
    add_box(stage, "/Robot/C", 0.1, (0, 0, 1.12))
    _hinge(stage, "/Robot/AB", "/Robot/A", "/Robot/B", (0.15, 0, 0), (-0.15, 0, 0), Gf.Quatf(1), Gf.Quatf(1))
    _hinge(stage, "/Robot/BC", "/Robot/B", "/Robot/C", (0, 0, 0.12), (0.3, 0, 0), Gf.Quatf(1), Gf.Quatf(1))
    stage.Save()


@pytest.mark.parametrize("engine", ENGINES)
def test_an_articulation_with_self_collisions_off_lets_its_links_overlap(tmp_path, engine):
    """PhysX's ``physxArticulation:enabledSelfCollisions = 0`` (Newton's ant stages author it; so does
    ``newton:selfCollisionEnabled``): no two bodies of the articulation collide, jointed or not. Unauthored, the
    folded link is pushed off the one it overlaps."""
    moved = {}
    for case, value in (("off", False), ("default", None)):
        _folded_chain(tmp_path / f"{case}.usda", value)
        assert usdsim(tmp_path / f"{case}.usda", "--solver", engine, "-n", 10) == 0
        out = tmp_path / f"{case}.sim.usda"
        gap = positions(out, "/Robot/C", [10])[0, 2] - positions(out, "/Robot/A", [10])[0, 2]
        moved[case] = gap - 0.12
    assert abs(moved["off"]) < 1e-3, moved
    assert moved["default"] > 0.01, moved


def test_newton_self_collision_attribute_filters_the_articulation(tmp_path):
    from newton_usd import ModelBuilder  # noqa: PLC0415

    for value, filtered in ((False, True), (True, False)):
        _folded_chain(tmp_path / "chain.usda", value, attribute="newton:selfCollisionEnabled")
        builder = ModelBuilder()
        builder.add_usd(str(tmp_path / "chain.usda"))
        labels = builder.body_label
        pairs = {(labels[a], labels[b]) for a, b in builder.body_collision_filter_pairs}
        assert (("/Robot/A", "/Robot/C") in pairs) is filtered, pairs


def _two_armed_robot(path):
    """A floating hub (its ArticulationRootAPI on the body) with two arms of two boxes each, hinged about Y and
    out along X, the boxes of different sizes; the bodies authored hub, left arm, right arm, the joints hub-first
    (a breadth-first walk meets the bodies in another order). No collisions: the robot falls as one piece."""
    stage = new_stage(path)
    sizes = {"Hub": 0.3, "L1": 0.2, "L2": 0.1, "R1": 0.15, "R2": 0.25}
    xs = {"Hub": 0.0, "L1": -0.4, "L2": -0.8, "R1": 0.4, "R2": 0.8}
    for name in ("Hub", "L1", "L2", "R1", "R2"):
        box = add_box(stage, f"/Robot/{name}", sizes[name], (xs[name], 0, 1))
        UsdPhysics.CollisionAPI(box.GetPrim()).CreateCollisionEnabledAttr(False)
    UsdPhysics.ArticulationRootAPI.Apply(stage.GetPrimAtPath("/Robot/Hub"))
    for parent, child in (("Hub", "L1"), ("Hub", "R1"), ("L1", "L2"), ("R1", "R2")):
        half = 0.5 * (xs[child] - xs[parent])
        _hinge(stage, f"/Robot/{parent}{child}", f"/Robot/{parent}", f"/Robot/{child}", (half, 0, 0), (-half, 0, 0),
               Gf.Quatf(1), Gf.Quatf(1))  # fmt: skip
    stage.Save()


def test_featherstone_robot_whose_joints_meet_its_bodies_out_of_order_falls_as_one(tmp_path):
    """Newton's Featherstone takes joint j's link inertia from body j: the importer orders the joints by their child
    bodies (the bodies here are authored parent first), else the arms' inertias are swapped in the mass matrix and
    the falling robot flails."""
    _two_armed_robot(tmp_path / "robot.usda")
    assert usdsim(tmp_path / "robot.usda", "--solver", "featherstone", "-n", 30) == 0
    out = tmp_path / "robot.sim.usda"
    hub = positions(out, "/Robot/Hub", [30])[0]
    assert abs(hub[2] - (1 - 0.5 * 9.81 * 0.5**2)) < 0.01, hub
    for name, x in (("L1", -0.4), ("L2", -0.8), ("R1", 0.4), ("R2", 0.8)):
        np.testing.assert_allclose(positions(out, f"/Robot/{name}", [30])[0] - hub, (x, 0, 0), atol=1e-3, err_msg=name)


def test_check_featherstone_names_joints_whose_bodies_come_before_their_parents(tmp_path, capsys):
    """A floating pair whose articulation root is authored after the body it holds: joint 1 moves body 0, which
    Newton's Featherstone mass matrix does not allow for; ``usdsim check`` says so before a run."""
    stage = new_stage(tmp_path / "late_root.usda")
    add_box(stage, "/Robot/A", 0.2, (0, 0, 1))
    UsdPhysics.ArticulationRootAPI.Apply(add_box(stage, "/Robot/B", 0.2, (0.3, 0, 1)).GetPrim())
    _hinge(stage, "/Robot/AB", "/Robot/A", "/Robot/B", (0.15, 0, 0), (-0.15, 0, 0), Gf.Quatf(1), Gf.Quatf(1))
    stage.Save()
    main(["check", str(tmp_path / "late_root.usda"), "--solver", "featherstone"])
    out = capsys.readouterr().out
    said = [line for line in out.splitlines() if "takes joint j's link inertia from body j" in line]
    assert any("/Robot/AB" in line for line in said), out
    main(["check", str(tmp_path / "late_root.usda"), "--solver", "xpbd"])
    assert "link inertia" not in capsys.readouterr().out


def test_featherstone_names_the_step_a_light_body_on_its_contacts_needs(tmp_path, caplog):
    """A 0.2 kg, 0.1 m box resting on the ground: Newton's default penalty contact (ke 2.5e3 N/m, kd 100 N*s/m)
    against so little inertia at its corners bounces it off the ground at 1/480 s. The featherstone solver's stable
    step counts the contacts (no joint pulls on anything here): said before the run, taken by ``--substeps auto``."""
    stage = new_stage(tmp_path / "light.usda")
    add_ground(stage)
    add_box(stage, "/Box", 0.1, (0, 0, 0.05), mass=0.2)
    stage.Save()
    assert usdsim(tmp_path / "light.usda", "--solver", "featherstone", "-n", 20) == 0
    said = re.search(r"integrates its penalty contacts \(ke 2.5e\+03 N/m, kd 100 N\*s/m\) explicitly: estimated "
                     r"stable at steps up to ([0-9.e-]+) s on this model, not 0.00208 s.*/Box",
                     caplog.text)  # fmt: skip
    assert said
    assert 1e-4 < float(said.group(1)) < 1e-3
    assert positions(tmp_path / "light.sim.usda", "/Box", [20])[0, 2] > 0.1  # bounced off
    assert usdsim(tmp_path / "light.usda", "--solver", "featherstone", "-n", 20, "--substeps", "auto") == 0
    assert abs(positions(tmp_path / "light.sim.usda", "/Box", [20])[0, 2] - 0.05) < 0.002  # at rest


@pytest.mark.parametrize("solver", ["featherstone", "semi_implicit"])
def test_passive_joint_damping_and_spring_reach_newtons_solvers(tmp_path, solver):
    """A hinged bob swung at 60 deg/s on a joint with MuJoCo's passive spring (20 N*m/rad toward 30 deg) and damping
    (2 N*m*s/rad): Featherstone and semi-implicit Euler move it as MuJoCo does; without them it swings freely."""
    for case, values in (("passive", True), ("free", False)):
        stage = new_stage(tmp_path / f"{case}.usda")
        scene = stage.GetPrimAtPath("/PhysicsScene")
        scene.CreateAttribute("mjc:option:integrator", Sdf.ValueTypeNames.Token).Set("implicitfast")
        _bob(stage, velocity=(0, 60.0, 0))
        joint = UsdPhysics.RevoluteJoint.Define(stage, "/Hinge")
        joint.CreateBody1Rel().SetTargets([Sdf.Path("/Bob")])
        joint.CreateLocalPos0Attr(Gf.Vec3f(0, 0, 1.5))
        joint.CreateAxisAttr("Y")
        if values:
            for name, value in (("mjc:stiffness", 20.0), ("mjc:springref", 30.0), ("mjc:damping", 2.0)):
                joint.GetPrim().CreateAttribute(name, Sdf.ValueTypeNames.Double).Set(value)
        stage.Save()
    ends = {}
    for case in ("passive", "free"):
        for engine in ("mujoco", solver):
            step = ("--substeps", "auto") if engine == "semi_implicit" else ()  # (its penalty joint's stable step)
            assert usdsim(tmp_path / f"{case}.usda", "--solver", engine, "-n", 15, *step) == 0
            out = Usd.Stage.Open(str(tmp_path / f"{case}.sim.usda"))
            bob = UsdGeom.Xformable(out.GetPrimAtPath("/Bob")).ComputeLocalToWorldTransform(15)
            ends[case, engine] = np.array(bob.Transform(Gf.Vec3d(0, 0, -0.5)))  # its center of mass
    assert np.linalg.norm(ends["passive", solver] - ends["passive", "mujoco"]) < 0.01, ends
    assert np.linalg.norm(ends["free", solver] - ends["passive", solver]) > 0.05, ends


def test_a_jointed_body_beyond_its_chains_reach_is_joints_come_apart():
    """A fixed-base chain bounds its bodies tighter than free fall: the world hinge at (0, 0, 2), link A's origin
    0.5 m from it, B's origin 0.25 m from the A-B hinge, 0.75 m from A's hinge along A: B reaches 1.0 m, A 0.5 m. B 4 m
    from its start (beyond 2.5 x 1.0 + 1 m) is a chain come apart (XPBD's flung arms of PhysX's test stages, 11-13 m at
    exit 0 before); 3 m is not (what soft joints may stretch)."""
    from newton_usd.core import ModelBuilder
    from newton_usd.simulation.runaway import RunawayCheck, chain_reach

    from stages import add_hinge

    stage = new_stage()
    add_box(stage, "/A", 0.2, (0.5, 0, 2))
    add_box(stage, "/B", 0.2, (1.0, 0, 2))
    add_hinge(stage, "/HingeA", None, "/A", (0, 0, 2), (-0.5, 0, 0))
    add_hinge(stage, "/HingeB", "/A", "/B", (0.25, 0, 0), (-0.25, 0, 0))
    b = ModelBuilder()
    b.add_usd(stage)
    model = b.finalize("cpu")
    a_, b_ = model.body_label.index("/A"), model.body_label.index("/B")
    reach, anchor = chain_reach(model)
    assert reach[a_] == pytest.approx(0.5, abs=1e-5) and reach[b_] == pytest.approx(1.0, abs=1e-5)
    np.testing.assert_allclose(anchor[[a_, b_]], [[0, 0, 2], [0, 0, 2]], atol=1e-5)
    start = model.body_q.numpy().copy()
    check = RunawayCheck(model, start, model.body_qd.numpy())
    moved = start.copy()
    moved[b_, 2] -= 3.0
    check.check(moved, 0.1, 6)  # (within 2.5 x 1.0 + 1 m: no error)
    moved[b_, 2] -= 1.0
    with pytest.raises(SimulationError, match=r"within 1 m of their anchor on the world: the joints came apart") as e:
        check.check(moved, 0.1, 6)
    assert e.value.label == "/B" and e.value.frame == 6


def _jointed_static_pair(path, collision_enabled=None, disabled_base=False):
    """PhysX's cart-pole benchmark as a prismatic joint from the static ``/Base`` cube to the ``/Cart`` cube, 0.3 m
    in each other; ``physics:collisionEnabled`` authored only where given. ``disabled_base``: the base is a disabled
    rigid body holding the cube collider (its colliders static) instead of a static collider."""
    stage = new_stage(path)
    if disabled_base:
        holder = UsdGeom.Xform.Define(stage, "/Base")
        holder.AddTranslateOp().Set(Gf.Vec3d(0, 0, 1))
        UsdPhysics.RigidBodyAPI.Apply(holder.GetPrim()).CreateRigidBodyEnabledAttr(False)
        base = UsdGeom.Cube.Define(stage, "/Base/Geom")
    else:
        base = UsdGeom.Cube.Define(stage, "/Base")
        base.AddTranslateOp().Set(Gf.Vec3d(0, 0, 1))
    base.CreateSizeAttr(1.0)
    UsdPhysics.CollisionAPI.Apply(base.GetPrim())
    add_box(stage, "/Cart", 1.0, (0.7, 0, 1), mass=1.0)
    slider = UsdPhysics.PrismaticJoint.Define(stage, "/Slider")
    slider.CreateBody0Rel().SetTargets([Sdf.Path("/Base")])
    slider.CreateBody1Rel().SetTargets([Sdf.Path("/Cart")])
    slider.CreateAxisAttr("X")
    slider.CreateLocalPos0Attr(Gf.Vec3f(0.7, 0, 0))
    if collision_enabled is not None:
        slider.CreateCollisionEnabledAttr(collision_enabled)
    stage.Save()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("collision_enabled", [None, True])
def test_a_joints_static_side_does_not_collide_with_its_body_unless_enabled(tmp_path, engine, collision_enabled):
    """UsdPhysics: a joint's two sides do not collide unless physics:collisionEnabled is true, a static collider on
    one side included (PhysX's cart-pole: its cart on a prismatic joint from the static base, 0.3 m in it)."""
    _jointed_static_pair(tmp_path / "pair.usda", collision_enabled)
    code = usdsim(tmp_path / "pair.usda", "--solver", engine, "-n", 30)
    moved = positions(tmp_path / "pair.sim.usda", "/Cart", [0, 5])[:, 0] - 0.7
    if collision_enabled:
        assert code == 0 if engine == "mujoco" else code in (0, 3)  # (XPBD, featherstone: flung at once)
        assert moved[1] > 0.1, moved  # pushed out along the slider
    else:
        assert code == 0
        np.testing.assert_allclose(positions(tmp_path / "pair.sim.usda", "/Cart", [0, 30]), [[0.7, 0, 1]] * 2,
                                   atol=1e-3)  # fmt: skip


@pytest.mark.parametrize("disabled_base", [False, True])
def test_check_leaves_out_a_joints_static_side_unless_its_collisions_are_enabled(tmp_path, capsys, disabled_base):
    _jointed_static_pair(tmp_path / "pair.usda", disabled_base=disabled_base)
    assert main(["check", str(tmp_path / "pair.usda")]) == 0
    out = capsys.readouterr().out
    assert "in each other" not in out, out
    _jointed_static_pair(tmp_path / "on.usda", True, disabled_base=disabled_base)
    assert main(["check", str(tmp_path / "on.usda")]) == 0
    out = capsys.readouterr().out
    base = "/Base/Geom" if disabled_base else "/Base"
    assert re.search(rf"  - ({base} and /Cart|/Cart and {base}): 0.3 m", out), out


def _quad_ground(path, left_handed):
    """OpenUSD's usdPhysicsBoxOnQuad: a 0.2 m box dropped onto a ground of two triangles of zero thickness (a 2 m
    quad at z = 0), their points wound clockwise seen from above: the faces' front is down (their back up), unless
    the mesh says ``orientation = leftHanded``."""
    stage = new_stage(path)
    _quad_ground_prims(stage, left_handed)
    add_box(stage, "/Box", 0.2, (0.3, 0.2, 0.6), mass=1.0)
    stage.Save()


def _quad_ground_prims(stage, left_handed):
    quad = UsdGeom.Mesh.Define(stage, "/Quad")
    quad.CreatePointsAttr([(-1, -1, 0), (1, -1, 0), (1, 1, 0), (-1, 1, 0)])
    quad.CreateFaceVertexCountsAttr([3, 3])
    quad.CreateFaceVertexIndicesAttr([0, 2, 1, 0, 3, 2])
    if left_handed:
        quad.CreateOrientationAttr(UsdGeom.Tokens.leftHanded)
    UsdPhysics.CollisionAPI.Apply(quad.GetPrim())
    return quad


def test_mesh_triangles_face_where_usd_says():
    """A leftHanded mesh and a mirrored one wind the other way round: their triangles are turned so that each
    faces its front (right-handed), the side a one-sided collider collides."""
    from newton_usd import ModelBuilder

    up = {}
    for left_handed, mirrored in ((False, False), (True, False), (False, True), (True, True)):
        stage = new_stage()
        quad = _quad_ground_prims(stage, left_handed)
        if mirrored:
            quad.AddScaleOp().Set(Gf.Vec3f(-1, 1, 1))
        add_box(stage, "/Box", 0.2, (0, 0, 1))
        builder = ModelBuilder()
        builder.add_usd(stage)
        mesh = builder.shape_source[builder.shape_label.index("/Quad")]
        tri = mesh.vertices[mesh.indices.reshape(-1, 3)]
        up[left_handed, mirrored] = np.sign(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])[:, 2]).tolist()
    assert up == {(False, False): [-1, -1], (True, False): [1, 1], (False, True): [1, 1], (True, True): [-1, -1]}


@pytest.mark.parametrize("engine", ("mujoco", "xpbd"))
@pytest.mark.parametrize("left_handed", [False, True])
def test_a_box_rests_on_a_two_triangle_ground_of_zero_thickness(tmp_path, engine, left_handed):
    """Newton collides a triangle mesh on its triangles' front only: XPBD dropped the box through a ground whose
    back faces up (frame 38 of OpenUSD's usdPhysicsBoxOnQuad). A flat mesh has no inside: Newton gets its triangles
    both ways round, and rests the box on it from either side; MuJoCo collides a slab behind its faces (1% of the
    ground's size: on the ground, or 2 cm above it where its back is up)."""
    _quad_ground(tmp_path / "quad.usda", left_handed)
    assert usdsim(tmp_path / "quad.usda", "--solver", engine, "-n", 45) == 0  # (landed and at rest by frame 40)
    z = positions(tmp_path / "quad.sim.usda", "/Box", [45])[0, 2]
    slab = 0.02 if engine == "mujoco" and not left_handed else 0.0
    assert z == pytest.approx(0.1 + slab, abs=0.004), z


def test_the_jointed_pair_and_the_quad_ground_from_python(tmp_path):
    """The same two stages through Simulation (XPBD): the cart held still beside its static base, the box at rest
    on the back of the two-triangle ground."""
    from newton_usd.sim import Simulation

    _jointed_static_pair(tmp_path / "pair.usda")
    _quad_ground(tmp_path / "quad.usda", left_handed=False)
    for name, body, where in (("pair", "/Cart", (0.7, 0.0, 1.0)), ("quad", "/Box", (0.3, 0.2, 0.1))):
        sim = Simulation.open(str(tmp_path / f"{name}.usda"), solver="xpbd", device="cpu")
        try:
            sim.run(45)  # (the box landed and at rest by frame 40)
            q = sim.state.body_q.numpy()[sim.model.body_label.index(body)]
        finally:
            sim.close()
        off = np.abs(q[:3] - where)
        assert off[2] < 4e-3 and off[:2].max() < (4e-3 if name == "pair" else 0.02), (name, q)  # (the box slides)


@pytest.mark.parametrize("solver", ["featherstone", "semi_implicit"])
def test_a_body_too_heavy_for_the_penalty_contacts_is_said_before_the_run(tmp_path, capsys, solver):
    """A 1000 kg, 1 m box on the two-triangle ground sank through it under featherstone at Newton's contact stiffness
    (2.5e3 N/m: 0.98 m deep on four points), at exit 0. It is named before the run with its sink and the stiffness
    that holds it (a 1 kg box is not); at that stiffness (and the step --substeps auto takes) it rests on the ground."""
    stage = new_stage(tmp_path / "heavy.usda")
    _quad_ground_prims(stage, left_handed=False)
    add_box(stage, "/Heavy", 1.0, (0.0, 0.0, 0.51), mass=1000.0)
    add_box(stage, "/Light", 0.2, (0.7, 0.7, 0.11), mass=1.0)
    stage.Save()
    assert main(["check", str(tmp_path / "heavy.usda"), "--solver", solver]) == 0
    out = capsys.readouterr().out
    assert f"the {solver} solver's penalty contacts (Newton's contact stiffness, ke 2.5e+03 N/m) cannot hold" in out
    assert "/Heavy (sinks 0.981 m of its 1 m; ke 2.45e+05 N/m holds it)" in out and "/Light (" not in out, out
    if solver == "semi_implicit":
        return
    scene = stage.GetPrimAtPath("/PhysicsScene")
    scene.CreateAttribute("newton:contactStiffness", Sdf.ValueTypeNames.Float).Set(2.45e5)
    stage.Save()
    assert main(["check", str(tmp_path / "heavy.usda"), "--solver", solver]) == 0
    assert "cannot hold" not in capsys.readouterr().out
    assert usdsim(tmp_path / "heavy.usda", "--solver", solver, "-n", 30, "--substeps", "auto") == 0
    z = positions(tmp_path / "heavy.sim.usda", "/Heavy", [30])[0, 2]
    assert z == pytest.approx(0.5, abs=0.01), z
