"""``usdsim explain``'s rows for what UsdPhysics authors (gravity, mass, joint limits and drives, materials): the
value the model simulates, in SI units, with the attribute it came from or how it was derived."""

import math

import pytest
from pxr import Gf, Sdf, UsdGeom, UsdPhysics, UsdShade
from test_scenes import two_scenes

from newton_usd import cli

from stages import add_box, add_ground, new_stage


def explain(capsys, stage, *prims) -> dict:
    """(prim, property) -> (value, unit, source) as ``usdsim explain`` prints them."""
    path = stage.GetRootLayer().realPath
    stage.Save()
    assert cli.main(["explain", path, *prims]) == 0
    lines = capsys.readouterr().out.splitlines()
    header, rule = lines[0], lines[1]
    cols = [len(c) for c in rule.split("  ")]
    starts = [sum(cols[:i]) + 2 * i for i in range(len(cols))]
    assert [header[s : s + w].strip() for s, w in zip(starts, cols, strict=True)] == [
        "prim", "property", "value", "unit", "source"
    ]  # fmt: skip
    rows = {}
    for line in lines[2:]:
        cells = [line[s : s + w].strip() for s, w in zip(starts[:-1], cols[:-1], strict=True)] + [line[starts[-1] :]]
        rows[(cells[0], cells[1])] = tuple(cells[2:])
    return rows


def floats(text) -> list:
    return [float(x) for x in text.strip("diag()").split(",")]


def test_body_mass_from_its_mass_a_collider_density_or_the_default(tmp_path, capsys):
    stage = new_stage(tmp_path / "mass.usda")
    add_ground(stage)
    add_box(stage, "/Heavy", size=0.2, mass=3.0)
    body = UsdGeom.Xform.Define(stage, "/Dense")
    UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
    cube = UsdGeom.Cube.Define(stage, "/Dense/Part")
    cube.CreateSizeAttr(0.2)
    UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
    UsdPhysics.MassAPI.Apply(cube.GetPrim()).CreateDensityAttr(500.0)
    add_box(stage, "/Plain", size=0.1, pos=(1, 0, 1))
    empty = UsdGeom.Xform.Define(stage, "/Empty")
    empty.AddTranslateOp().Set(Gf.Vec3d(2, 0, 1))
    UsdPhysics.RigidBodyAPI.Apply(empty.GetPrim())
    rows = explain(capsys, stage)
    assert rows[("/Heavy", "mass")] == ("3", "kg", "physics:mass")
    # 0.2^3 m^3 at 500 kg/m^3; its inertia a box's, m (a^2 + b^2) / 12
    assert rows[("/Dense", "mass")] == ("4", "kg", "physics:density (collider /Dense/Part)")
    value, unit, source = rows[("/Dense", "inertia")]
    assert floats(value) == pytest.approx([4 * 0.08 / 12] * 3, rel=1e-5) and unit == "kg*m^2"
    assert source.startswith("from colliders")
    value, unit, source = rows[("/Plain", "mass")]
    assert float(value) == pytest.approx(1.0) and source == "from colliders, default density 1000 kg/m^3"
    assert rows[("/Empty", "mass")] == ("1", "kg", "1 kg default (no collider, no mass)")
    assert rows[("/Heavy", "com")][2] == "from colliders (body frame)"


def test_revolute_limits_in_radians_and_drive_gains_per_radian(tmp_path, capsys):
    stage = new_stage(tmp_path / "joint.usda")
    add_box(stage, "/Arm", mass=1.0)
    add_box(stage, "/Cart", mass=1.0, pos=(1, 0, 1))
    hinge = UsdPhysics.RevoluteJoint.Define(stage, "/Hinge")
    hinge.CreateBody1Rel().SetTargets([Sdf.Path("/Arm")])
    hinge.CreateAxisAttr("Y")
    hinge.CreateLocalPos0Attr(Gf.Vec3f(0, 0, 1))
    hinge.CreateLowerLimitAttr(-30.0)
    hinge.CreateUpperLimitAttr(45.0)
    drive = UsdPhysics.DriveAPI.Apply(hinge.GetPrim(), "angular")
    drive.CreateStiffnessAttr(2.0)  # per degree
    drive.CreateDampingAttr(0.5)
    drive.CreateTargetPositionAttr(10.0)
    drive.CreateMaxForceAttr(7.0)
    slider = UsdPhysics.PrismaticJoint.Define(stage, "/Slider")
    slider.CreateBody1Rel().SetTargets([Sdf.Path("/Cart")])
    slider.CreateLocalPos0Attr(Gf.Vec3f(1, 0, 1))
    rows = explain(capsys, stage)
    assert rows[("/Hinge", "type")] == ("revolute", "", "PhysicsRevoluteJoint")
    assert rows[("/Hinge", "axis")][0] == "(0, 1, 0)"
    value, unit, source = rows[("/Hinge", "limit_lower")]
    assert float(value) == pytest.approx(math.radians(-30), rel=1e-6)
    assert (unit, source) == ("rad", "physics:lowerLimit (-30 deg)")
    value, unit, source = rows[("/Hinge", "limit_upper")]
    assert float(value) == pytest.approx(math.radians(45), rel=1e-6)
    assert (unit, source) == ("rad", "physics:upperLimit (45 deg)")
    value, unit, source = rows[("/Hinge", "drive_stiffness")]
    assert float(value) == pytest.approx(2.0 * 180 / math.pi, rel=1e-5)
    assert (unit, source) == ("N*m/rad", "drive:angular:physics:stiffness (2 per deg)")
    value, unit, source = rows[("/Hinge", "drive_damping")]
    assert float(value) == pytest.approx(0.5 * 180 / math.pi, rel=1e-5) and unit == "N*m*s/rad"
    assert source == "drive:angular:physics:damping (0.5 per deg/s)"
    value, unit, source = rows[("/Hinge", "drive_target_pos")]
    assert float(value) == pytest.approx(math.radians(10), rel=1e-5)
    assert (unit, source) == ("rad", "drive:angular:physics:targetPosition (10 deg)")
    assert rows[("/Hinge", "drive_target_vel")] == (
        "0", "rad/s", "drive:angular:physics:targetVelocity not authored (fallback 0)"
    )  # fmt: skip
    assert rows[("/Hinge", "effort_limit")] == ("7", "N*m", "drive:angular:physics:maxForce")
    assert rows[("/Slider", "type")] == ("prismatic", "", "PhysicsPrismaticJoint")
    assert rows[("/Slider", "axis")] == ("(1, 0, 0)", "", "physics:axis fallback X (joint frame)")
    assert rows[("/Slider", "limit_lower")] == ("-inf", "m", "free (no limit)")
    assert rows[("/Slider", "limit_upper")] == ("inf", "m", "free (no limit)")
    assert ("/Slider", "drive_stiffness") not in rows


def test_spherical_cone_limit_the_smaller_angle_in_radians(tmp_path, capsys):
    stage = new_stage(tmp_path / "ball.usda")
    for name, x in (("/Cone", 0), ("/Round", 1), ("/Mjc", 2), ("/Free", 3)):
        add_box(stage, name, mass=1.0, pos=(x, 0, 1))
        ball = UsdPhysics.SphericalJoint.Define(stage, name + "Joint")
        ball.CreateBody1Rel().SetTargets([Sdf.Path(name)])
        ball.CreateLocalPos0Attr(Gf.Vec3f(x, 0, 1))
        if name != "/Free":
            ball.CreateConeAngle0LimitAttr(40.0 if name == "/Cone" else 30.0)
            ball.CreateConeAngle1LimitAttr(30.0)
        if name == "/Mjc":
            ball.GetPrim().AddAppliedSchema("MjcJointAPI")
    rows = explain(capsys, stage)
    assert rows[("/ConeJoint", "type")] == ("ball", "", "PhysicsSphericalJoint")
    value, unit, source = rows[("/ConeJoint", "cone_limit")]
    assert float(value) == pytest.approx(math.radians(30), rel=1e-6) and unit == "rad"
    assert source == (
        "the smaller of physics:coneAngle0Limit (40 deg), physics:coneAngle1Limit (30 deg) (Newton's solvers: each "
        "angle in its own swing plane); bounds the whole rotation angle, twist included (MuJoCo's ball range)"
    )
    assert rows[("/RoundJoint", "cone_limit")][2].startswith("the smaller of physics:coneAngle0Limit (30 deg)")
    assert rows[("/MjcJoint", "cone_limit")][2].endswith("; MuJoCo's ball range (the whole rotation angle)")
    assert rows[("/FreeJoint", "cone_limit")] == ("inf", "rad", "free (no cone limit)")


def test_friction_and_restitution_from_the_bound_physics_material(tmp_path, capsys):
    stage = new_stage(tmp_path / "material.usda")
    add_ground(stage)
    box = add_box(stage, "/Box", mass=1.0)
    material = UsdShade.Material.Define(stage, "/Looks/Rubber")
    api = UsdPhysics.MaterialAPI.Apply(material.GetPrim())
    api.CreateDynamicFrictionAttr(0.9)
    api.CreateRestitutionAttr(0.25)
    UsdShade.MaterialBindingAPI.Apply(box.GetPrim()).Bind(material, UsdShade.Tokens.weakerThanDescendants, "physics")
    rows = explain(capsys, stage)
    value, _, source = rows[("/Box", "friction")]
    assert float(value) == pytest.approx(0.9) and source == "/Looks/Rubber physics:dynamicFriction"
    value, _, source = rows[("/Box", "restitution")]
    assert float(value) == pytest.approx(0.25)
    assert source == "/Looks/Rubber physics:restitution; not simulated by MuJoCo"
    assert rows[("/Ground", "friction")] == ("0.5", "", "0.5 default (PhysX's): no physics material")


def test_gravity_authored_unauthored_and_in_a_y_up_centimeter_stage(tmp_path, capsys):
    stage = new_stage(tmp_path / "g.usda")
    add_box(stage, "/Box", mass=1.0)
    rows = explain(capsys, stage)
    assert rows[("/PhysicsScene", "gravity")] == ("(0, 0, -9.81)", "m/s^2", "Earth gravity along -upAxis (Z)")
    scene = UsdPhysics.Scene(stage.GetPrimAtPath("/PhysicsScene"))
    scene.CreateGravityDirectionAttr(Gf.Vec3f(1, 0, 0))
    scene.CreateGravityMagnitudeAttr(2.5)
    rows = explain(capsys, stage)
    assert rows[("/PhysicsScene", "gravity")] == (
        "(2.5, 0, 0)", "m/s^2", "physics:gravityMagnitude (2.5 m/s^2) along physics:gravityDirection"
    )  # fmt: skip
    # Y up, centimeters: 9.81 m/s^2 down the stage's -Y, which is the simulation's -Z
    stage = new_stage(tmp_path / "ycm.usda", up="Y", meters_per_unit=0.01)
    add_box(stage, "/Box", size=20, pos=(0, 100, 0), mass=1.0)
    rows = explain(capsys, stage)
    value, unit, source = rows[("/PhysicsScene", "gravity")]
    assert floats(value) == pytest.approx([0, 0, -9.81]) and unit == "m/s^2"
    assert source == "Earth gravity along -upAxis (Y, -Z in the simulation's Z-up axes)"
    UsdPhysics.Scene(stage.GetPrimAtPath("/PhysicsScene")).CreateGravityMagnitudeAttr(490.5)  # cm/s^2
    rows = explain(capsys, stage)
    value, unit, source = rows[("/PhysicsScene", "gravity")]
    assert floats(value) == pytest.approx([0, 0, -4.905]) and unit == "m/s^2"
    assert source.startswith("physics:gravityMagnitude (490.5 stage units/s^2) along -upAxis (Y")
    assert floats(rows[("/Box", "inertia")][0]) == pytest.approx([1 * 0.08 / 12] * 3, rel=1e-5)


def test_prim_filter_and_gravity_per_scene(tmp_path, capsys):
    stage = two_scenes(tmp_path / "scenes.usda")
    rows = explain(capsys, stage, "/World/SceneUp", "/World/Up")
    assert {prim for prim, _ in rows} == {"/World/SceneUp", "/World/Up"}
    assert rows[("/World/SceneUp", "gravity")] == (
        "(0, 0, 9.81)", "m/s^2", "Earth gravity 9.81 m/s^2 along physics:gravityDirection"
    )  # fmt: skip
    assert rows[("/World/Up", "mass")] == ("1", "kg", "physics:mass")
    rows = explain(capsys, stage)
    assert rows[("/World/SceneDown", "gravity")][0] == "(0, 0, -9.81)"
    assert rows[("/World/Down", "mass")][0] == "1" and ("/World/Up", "friction") in rows
