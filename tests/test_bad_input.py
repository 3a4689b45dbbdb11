"""Bad input through ``usdsim``: one line naming the file, prim and attribute (exit 2), or a warning naming
the prim where the simulation sensibly goes on (exit 0); never a traceback, never a silent drop."""

import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics
from test_cli import usdsim

from stages import add_box, add_ground, add_tetrahedron, falling_cube, new_stage


def _mass_string(stage):
    spec = stage.GetRootLayer().GetPrimAtPath("/Cube")
    del spec.properties["physics:mass"]
    Sdf.AttributeSpec(spec, "physics:mass", Sdf.ValueTypeNames.String).default = "heavy"


def _nan_mesh_point(stage):
    add_tetrahedron(stage, "/Tet", pos=(0, 0, 2), points=[(0, 0, 0), (1, 0, 0), (0, 1, 0), (float("nan"), 0, 1)])


def _infinite_size(stage):
    UsdGeom.Cube(stage.GetPrimAtPath("/Cube")).GetSizeAttr().Set(float("inf"))


def _negative_stiffness(stage):
    joint = UsdPhysics.RevoluteJoint.Define(stage, "/Hinge")
    joint.CreateBody1Rel().SetTargets(["/Cube"])
    drive = UsdPhysics.DriveAPI.Apply(joint.GetPrim(), "angular")
    drive.CreateStiffnessAttr(-10.0)
    drive.CreateDampingAttr(1.0)


def _nan_damping(stage):
    joint = UsdPhysics.PrismaticJoint.Define(stage, "/Slider")
    joint.CreateBody1Rel().SetTargets(["/Cube"])
    UsdPhysics.DriveAPI.Apply(joint.GetPrim(), "linear").CreateDampingAttr(float("nan"))


def _huge_iterations(stage):
    stage.GetPrimAtPath("/PhysicsScene").AddAppliedSchema("MjcSceneAPI")
    spec = stage.GetRootLayer().GetPrimAtPath("/PhysicsScene")  # (Sdf: the schema would refuse a double)
    Sdf.AttributeSpec(spec, "mjc:option:iterations", Sdf.ValueTypeNames.Double).default = 1e30  # (found by fuzzing)


def _nan_mass(stage):
    UsdPhysics.MassAPI(stage.GetPrimAtPath("/Cube")).GetMassAttr().Set(float("nan"))


@pytest.mark.parametrize(
    ("author", "where", "says"),
    [
        (_mass_string, "/Cube.physics:mass", "authored as str 'heavy', expected a float"),
        (_nan_mesh_point, "/Tet.points", "point 3 is (nan, 0.0, 1.0): every point must be finite"),
        (_infinite_size, "/Cube.size", "the collider's size is (inf, inf, inf)"),
        (_negative_stiffness, "/Hinge.drive:angular:physics:stiffness", "must be a finite number >= 0, got -10.0"),
        (_nan_damping, "/Slider.drive:linear:physics:damping", "must be a finite number >= 0, got nan"),
        (_nan_mass, "/Cube.physics:mass", "must be a finite number >= 0 (0: not set), got nan"),
        (_huge_iterations, "/PhysicsScene.mjc:option:iterations", "value 1e+30 cannot be read as iterations"),
    ],
)
def test_bad_values_end_in_one_line_naming_file_prim_and_attribute(tmp_path, author, where, says):
    src = tmp_path / "bad.usda"
    stage = falling_cube(src)
    author(stage)
    stage.Save()
    r = usdsim(src, "-n", "5")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == f"usdsim: error: {src}: {where}: {says}" or r.stderr.strip().startswith(
        f"usdsim: error: {src}: {where}: {says}"
    )
    assert not (tmp_path / "bad.sim.usda").exists()


def test_a_joint_targeting_a_missing_prim_is_dropped_with_a_warning(tmp_path):
    """USD's parser reads a relationship to no prim as the world: the joint would weld the cube in place."""
    src = tmp_path / "dangling.usda"
    stage = falling_cube(src)
    joint = UsdPhysics.RevoluteJoint.Define(stage, "/Hinge")
    joint.CreateBody0Rel().SetTargets(["/Cube"])
    joint.CreateBody1Rel().SetTargets(["/Missing"])
    stage.Save()
    r = usdsim(src, "-n", "30", "-q")
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip() == (
        f"usdsim: warning: {src}: joint whose physics:body1 targets no prim (deleted or misspelled?): dropped "
        "(1 prim: /Hinge)"
    )
    out = Usd.Stage.Open(str(tmp_path / "dangling.sim.usda"))
    assert out.GetAttributeAtPath("/Cube.xformOp:translate:physics").Get(30)[2] < 0.5  # it fell: not welded


def test_a_loop_of_joints_in_an_articulation_warns(tmp_path):
    src = tmp_path / "cycle.usda"
    stage = new_stage(src)
    add_ground(stage)
    UsdPhysics.ArticulationRootAPI.Apply(UsdGeom.Xform.Define(stage, "/Robot").GetPrim())
    for i in range(3):
        add_box(stage, f"/Robot/B{i}", pos=(0.5 * i, 0, 1))
    for i in range(3):
        joint = UsdPhysics.RevoluteJoint.Define(stage, f"/Robot/J{i}")
        joint.CreateBody0Rel().SetTargets([f"/Robot/B{i}"])
        joint.CreateBody1Rel().SetTargets([f"/Robot/B{(i + 1) % 3}"])
        joint.CreateLocalPos0Attr(Gf.Vec3f(0.25, 0, 0) if i < 2 else Gf.Vec3f(-0.5, 0, 0))
        joint.CreateLocalPos1Attr(Gf.Vec3f(-0.25, 0, 0) if i < 2 else Gf.Vec3f(0.5, 0, 0))
    stage.Save()
    r = usdsim(src, "-n", "5", "-q")
    assert r.returncode == 0, r.stderr
    assert "joint closes a loop of joints and is not excluded from the articulation" in r.stderr
    assert "(1 prim: /Robot/J" in r.stderr and r.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("velocity", "height", "args", "says"),
    [
        (1e9, 1.0, (), "frame 1: /Cube: body is 1.67e+07 m from the origin, beyond max_distance 1e+06 m"),
        (2e4, 1.0, (), "frame 1: /Cube: body moves at 2e+04 m/s, beyond max_speed 10000 m/s"),
        (0.0, 2e6, (), "frame 1: /Cube: body is 2e+06 m from the origin, beyond max_distance 1e+06 m"),
        (50.0, 1.0, ("--max-speed", "10"), "frame 1: /Cube: body moves at 50 m/s, beyond max_speed 10 m/s"),
    ],
)
def test_a_body_beyond_the_bounds_stops_the_run_with_exit_3(tmp_path, velocity, height, args, says):
    """MuJoCo's own check fires near 1e10 only: our runtime stops a run whose state is absurd."""
    src = tmp_path / "fast.usda"
    stage = falling_cube(src, height=height)
    UsdPhysics.RigidBodyAPI(stage.GetPrimAtPath("/Cube")).CreateVelocityAttr(Gf.Vec3f(velocity, 0, 0))
    stage.Save()
    r = usdsim(src, "-n", "30", "-q", *args)
    assert r.returncode == 3, r.stderr
    assert f"usdsim: {src}: {says} (the simulation blew up)" in r.stderr


def test_the_bounds_can_be_raised(tmp_path):
    src = tmp_path / "far.usda"
    falling_cube(src, height=2e6).Save()
    r = usdsim(src, "-n", "3", "-q", "--max-distance", "1e7")
    assert r.returncode == 0, r.stderr
    r = usdsim(src, "-n", "3", "-q", "--max-distance", "0")
    assert r.returncode == 2 and "--max-distance must be > 0, got 0.0" in r.stderr


def test_a_time_step_too_small_for_a_frame_to_end_is_bad_input(tmp_path):
    """Found by benchmarks/fuzz_stages.py: 1e30 steps per second made one frame take 1.7e28 steps (a hang)."""
    src = tmp_path / "tiny.usda"
    stage = falling_cube(src)
    stage.GetPrimAtPath("/PhysicsScene").CreateAttribute("newton:timeStepsPerSecond", Sdf.ValueTypeNames.Double).Set(
        1e30
    )
    stage.Save()
    r = usdsim(src, "-n", "3", "-q")
    assert r.returncode == 2
    assert r.stderr.strip() == (
        f"usdsim: error: {src}: /PhysicsScene.newton:timeStepsPerSecond: 1.67e+28 physics steps per frame "
        "(more than 100,000): the time step is too small for the frame rate"
    )
