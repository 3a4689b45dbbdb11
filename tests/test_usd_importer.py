import math

import numpy as np
import pytest
from pxr import Gf, Sdf, UsdGeom, UsdPhysics

from newton_usd import GeoType, JointType, ModelBuilder, UsdInputError

from stages import add_box, add_ground, falling_cube, new_stage, pendulum


def load(stage):
    b = ModelBuilder()
    imported = b.add_usd(stage)
    return b.finalize("cpu"), imported


def test_boxes_sample(samples):
    m, imp = load(str(samples / "boxes_on_ground.usda"))
    assert m.body_label == ["/World/Box", "/World/TiltedBox", "/World/Crate"]
    assert set(m.shape_label) == {
        "/World/Ground",
        "/World/Box",
        "/World/TiltedBox",
        "/World/Crate/Base",
        "/World/Crate/Ball",
    }
    masses = m.body_mass.numpy()
    assert masses[0] == pytest.approx(1.0)  # MassAPI mass
    assert masses[1] == pytest.approx(1000.0 * 0.2**3, rel=1e-5)  # default density
    # Crate: 0.3 x 0.3 x 0.1 box plus a 0.08 m ball, both at 1000 kg/m^3.
    assert masses[2] == pytest.approx(1000.0 * (0.3 * 0.3 * 0.1 + 4 / 3 * math.pi * 0.08**3), rel=1e-5)
    assert m.joint_type.numpy().tolist() == [JointType.FREE] * 3
    np.testing.assert_allclose(m.gravity, [0, 0, -9.81], rtol=1e-6)
    ground = m.shape_label.index("/World/Ground")
    assert m.shape_type.numpy()[ground] == GeoType.PLANE and m.shape_body.numpy()[ground] == -1
    base = m.shape_label.index("/World/Crate/Base")
    np.testing.assert_allclose(m.shape_scale.numpy()[base], [0.15, 0.15, 0.05], rtol=1e-6)
    assert imp.body_index["/World/Crate"] == 2


def test_articulated_cartpole_joint_frames(samples):
    m, _ = load(str(samples / "cartpole.usda"))
    assert m.joint_label == ["/CartPole/CartSlider", "/CartPole/PoleHinge"]
    assert m.joint_type.numpy().tolist() == [JointType.PRISMATIC, JointType.REVOLUTE]
    assert m.joint_parent.numpy().tolist() == [-1, 0]
    assert m.articulation_label == ["/CartPole"]
    # The cart is scaled by 0.2 in Z: its local joint position 0.5 is 0.1 m.
    np.testing.assert_allclose(m.joint_X_p.numpy()[1][:3], [0, 0, 0.1], atol=1e-6)
    # The pole was authored 5 degrees off upright: the initial joint angle follows the poses.
    assert m.joint_q.numpy()[1] == pytest.approx(math.radians(5), abs=1e-4)
    np.testing.assert_allclose(m.joint_limit_upper.numpy()[0], 1.8, rtol=1e-6)


def test_drive_gains_are_converted_from_degrees(samples):
    m, _ = load(str(samples / "pendulum.usda"))
    assert m.joint_target_ke.numpy()[0] == pytest.approx(1.745 * 180 / math.pi, rel=1e-5)
    assert m.joint_target_kd.numpy()[0] == pytest.approx(0.1745 * 180 / math.pi, rel=1e-5)
    assert m.joint_target_pos.numpy()[0] == pytest.approx(math.radians(60), rel=1e-6)
    assert m.joint_limit_lower.numpy()[0] == pytest.approx(math.radians(-120), rel=1e-6)


def test_body0_only_joint_is_reversed_onto_the_world():
    stage = pendulum(angle_deg=0.0)
    joint = UsdPhysics.RevoluteJoint.Get(stage, "/Hinge")
    joint.GetBody1Rel().ClearTargets(True)
    joint.CreateBody0Rel().SetTargets([Sdf.Path("/Pendulum")])
    joint.GetLocalPos0Attr().Set(Gf.Vec3f(0, 0, 0))
    joint.GetLocalPos1Attr().Set(Gf.Vec3f(0, 0, 2))
    m, _ = load(stage)
    assert m.joint_parent.numpy().tolist() == [-1]
    np.testing.assert_allclose(m.joint_X_p.numpy()[0][:3], [0, 0, 2], atol=1e-6)
    np.testing.assert_allclose(m.joint_axis.numpy()[0], [0, -1, 0])


def test_centimeter_stage_is_converted_to_meters():
    stage = falling_cube(meters_per_unit=0.01, height=100.0)
    UsdGeom.Cube.Get(stage, "/Cube").GetSizeAttr().Set(20.0)
    m, _ = load(stage)
    np.testing.assert_allclose(m.body_q.numpy()[0][:3], [0, 0, 1.0], atol=1e-6)
    cube = m.shape_label.index("/Cube")
    np.testing.assert_allclose(m.shape_scale.numpy()[cube], [0.1, 0.1, 0.1], rtol=1e-6)
    np.testing.assert_allclose(m.gravity, [0, 0, -9.81], rtol=1e-5)


def test_y_up_stage_is_rotated_to_z_up():
    stage = new_stage(up="Y")
    add_ground(stage, axis="Y")
    add_box(stage, "/Cube", 0.2, (0.5, 1.0, 0.25), mass=1.0)
    m, _ = load(stage)
    # Y up -> Z up: (x, y, z) -> (x, -z, y)
    np.testing.assert_allclose(m.body_q.numpy()[0][:3], [0.5, -0.25, 1.0], atol=1e-6)
    np.testing.assert_allclose(m.gravity, [0, 0, -9.81], rtol=1e-5, atol=1e-6)


def test_missing_file_and_non_usd_and_no_physics(tmp_path):
    with pytest.raises(UsdInputError, match="no such file"):
        load(str(tmp_path / "missing.usda"))
    bad = tmp_path / "bad.usda"
    bad.write_text("this is not usd\n")
    with pytest.raises(UsdInputError, match="bad.usda: not a USD file"):
        load(str(bad))
    empty = new_stage(tmp_path / "empty.usda")
    empty.GetRootLayer().Save()
    with pytest.raises(UsdInputError, match="no physics to simulate"):
        load(str(tmp_path / "empty.usda"))


def test_mesh_collider_mass_matches_its_volume():
    stage = new_stage()
    add_ground(stage)
    mesh = UsdGeom.Mesh.Define(stage, "/Tet")
    pts = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)]
    mesh.CreatePointsAttr(pts)
    mesh.CreateFaceVertexCountsAttr([3, 3, 3, 3])
    mesh.CreateFaceVertexIndicesAttr([0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3])
    mesh.AddTranslateOp().Set(Gf.Vec3d(0, 0, 1))
    UsdPhysics.RigidBodyAPI.Apply(mesh.GetPrim())
    UsdPhysics.CollisionAPI.Apply(mesh.GetPrim())
    UsdPhysics.MeshCollisionAPI.Apply(mesh.GetPrim()).CreateApproximationAttr("convexHull")
    m, _ = load(stage)
    assert m.body_mass.numpy()[0] == pytest.approx(1000.0 / 6.0, rel=1e-5)
    np.testing.assert_allclose(m.body_com.numpy()[0], [0.25, 0.25, 0.25], atol=1e-6)


def test_ignored_joints_are_reported_once_per_kind(caplog):
    stage = falling_cube()
    add_box(stage, "/Other", 0.2, (1, 0, 1), mass=1.0)
    add_box(stage, "/Third", 0.2, (2, 0, 1), mass=1.0)
    for path, body in (("/Dist", "/Other"), ("/Dist2", "/Third")):  # no min or max: nothing to hold
        UsdPhysics.DistanceJoint.Define(stage, path).CreateBody1Rel().SetTargets([Sdf.Path(body)])
    with caplog.at_level("WARNING", logger="newton_usd"):
        load(stage)
    msgs = [r.getMessage() for r in caplog.records if "distance joint" in r.getMessage()]
    assert len(msgs) == 1 and "/Dist" in msgs[0] and "/Dist2" in msgs[0]


def test_negative_mass_names_prim_and_attribute():
    stage = falling_cube()
    UsdPhysics.MassAPI(stage.GetPrimAtPath("/Cube")).GetMassAttr().Set(-2.0)
    with pytest.raises(UsdInputError, match=r"/Cube.physics:mass: must be a finite number >= 0"):
        load(stage)


def test_non_uniformly_scaled_sphere_is_an_ellipsoid():
    stage = new_stage()
    add_ground(stage)
    body = UsdGeom.Xform.Define(stage, "/Egg")
    body.AddTranslateOp().Set(Gf.Vec3d(0, 0, 1))
    UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
    sphere = UsdGeom.Sphere.Define(stage, "/Egg/Shape")
    sphere.CreateRadiusAttr(2.0)
    sphere.AddScaleOp().Set(Gf.Vec3f(0.05, 0.1, 0.2))
    UsdPhysics.CollisionAPI.Apply(sphere.GetPrim())
    m, _ = load(stage)
    i = m.shape_label.index("/Egg/Shape")
    assert m.shape_type.numpy()[i] == GeoType.ELLIPSOID
    np.testing.assert_allclose(m.shape_scale.numpy()[i], [0.1, 0.2, 0.4], rtol=1e-5)
    assert m.body_mass.numpy()[0] == pytest.approx(1000.0 * 4 / 3 * math.pi * 0.1 * 0.2 * 0.4, rel=1e-4)


def two_towers_stage(approximation):
    """A static mesh collider of two 1 m towers 1 m apart (one mesh, concave as a whole), and a small
    ball dropped into the gap between them."""
    from pxr import Vt

    stage = new_stage()
    points, counts, indices = [], [], []
    for x0 in (-1.5, 0.5):  # two unit cubes, bottom at z = 0
        base = len(points)
        points += [Gf.Vec3f(x0 + dx, dy - 0.5, dz) for dz in (0, 1) for dy in (0, 1) for dx in (0, 1)]
        for quad in ((0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)):
            counts.append(4)
            indices += [base + q for q in quad]
    mesh = UsdGeom.Mesh.Define(stage, "/Towers")
    mesh.CreatePointsAttr(Vt.Vec3fArray(points))
    mesh.CreateFaceVertexCountsAttr(Vt.IntArray(counts))
    mesh.CreateFaceVertexIndicesAttr(Vt.IntArray(indices))
    UsdPhysics.CollisionAPI.Apply(mesh.GetPrim())
    UsdPhysics.MeshCollisionAPI.Apply(mesh.GetPrim()).CreateApproximationAttr(approximation)
    ball = UsdGeom.Sphere.Define(stage, "/Ball")
    ball.CreateRadiusAttr(0.1)
    ball.AddTranslateOp().Set(Gf.Vec3d(0, 0, 2.0))
    UsdPhysics.RigidBodyAPI.Apply(ball.GetPrim())
    UsdPhysics.CollisionAPI.Apply(ball.GetPrim())
    return stage


@pytest.mark.parametrize(
    "approximation,shapes,rest_z",
    [
        ("convexHull", ["MESH"], 1.1),  # the hull spans the gap: the ball rests on top
        ("convexDecomposition", ["MESH", "MESH"], 0.1),  # two convex towers: it falls to the floor (z = 0)
        ("boundingCube", ["BOX"], 1.1),
        ("boundingSphere", ["SPHERE"], None),
    ],
)
def test_mesh_collision_approximations(approximation, shapes, rest_z):
    from newton_usd.sim import Simulation

    stage = two_towers_stage(approximation)
    b = ModelBuilder()
    b.add_usd(stage)
    static = [GeoType(t).name for t, body in zip(b.shape_type, b.shape_body, strict=True) if body < 0]
    assert static == shapes
    i = b.shape_body.index(-1)
    if approximation == "boundingCube":
        np.testing.assert_allclose(b.shape_scale[i], (1.5, 0.5, 0.5))
        np.testing.assert_allclose(b.shape_transform[i][0], (0, 0, 0.5))
    if approximation == "boundingSphere":
        assert b.shape_scale[i][0] == pytest.approx(np.sqrt(1.5**2 + 0.5**2 + 0.5**2))
        return
    add_ground(stage)
    sim = Simulation.open(stage, device="cpu", record=False)
    sim.run(90)
    assert sim.state.body_q.numpy()[0, 2] == pytest.approx(rest_z, abs=0.01)


def test_mesh_polygons_are_fan_triangulated():
    from pxr import Usd, UsdGeom

    from newton_usd.usd.gprims import read_mesh

    stage = Usd.Stage.CreateInMemory()
    mesh = UsdGeom.Mesh.Define(stage, "/m")
    quad = [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0)]
    mesh.CreatePointsAttr(quad + [(2, 0, 0), (3, 0, 0), (3, 1, 0), (2.5, 2, 0), (2, 1, 0)])
    mesh.CreateFaceVertexCountsAttr([4, 5])
    mesh.CreateFaceVertexIndicesAttr([0, 1, 2, 3, 4, 5, 6, 7, 8])
    m = read_mesh(mesh.GetPrim(), 2.0, "mem")
    assert m.indices.reshape(-1, 3).tolist() == [[0, 1, 2], [0, 2, 3], [4, 5, 6], [4, 6, 7], [4, 7, 8]]
    assert m.vertices[1].tolist() == [2.0, 0.0, 0.0]
