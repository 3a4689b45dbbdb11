import logging
import math

import numpy as np
import pytest
from pxr import Gf, Sdf, UsdGeom, UsdPhysics

from newton_usd import GeoType, JointType, ModelBuilder, UsdInputError
from newton_usd.inspect import unused_attributes

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


def test_a_joint_to_a_static_xform_attaches_to_the_world_in_its_frame(caplog):
    """physics:body0 targeting a prim that is no body (mujoco-usd-converter welds a robot's base to its
    default prim this way) is the world in UsdPhysics; the local pose is in that prim's frame."""
    stage = pendulum(angle_deg=0.0, pivot=(1, 0, 2))
    UsdGeom.Xform.Define(stage, "/Robot").AddTranslateOp().Set(Gf.Vec3d(1, 0, 0))
    joint = UsdPhysics.RevoluteJoint.Get(stage, "/Hinge")
    joint.CreateBody0Rel().SetTargets([Sdf.Path("/Robot")])
    joint.GetLocalPos0Attr().Set(Gf.Vec3f(0, 0, 2))  # (1, 0, 2) in the world
    with caplog.at_level("WARNING", logger="newton_usd"):
        m, _ = load(stage)
    assert not [r.getMessage() for r in caplog.records if "joint" in r.getMessage()]
    assert m.joint_parent.numpy().tolist() == [-1]
    assert m.joint_type.numpy().tolist() == [JointType.REVOLUTE]
    np.testing.assert_allclose(m.joint_X_p.numpy()[0][:3], [1, 0, 2], atol=1e-6)


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


def heightfield_stage(meters_per_unit=1.0, scale=None, rotate_z=None, parent_scale=None, **values):
    """A cube above a static Mesh collider with NewtonUsdHeightfieldAPI (3 x 4 samples unless ``values`` say
    otherwise; a value of None is left unauthored)."""
    stage = new_stage(meters_per_unit=meters_per_unit)
    add_box(stage, "/Cube", 0.2, (0, 0, 2), mass=1.0)
    parent = UsdGeom.Xform.Define(stage, "/Terrain")
    if parent_scale is not None:
        parent.AddScaleOp().Set(Gf.Vec3d(*parent_scale))
    mesh = UsdGeom.Mesh.Define(stage, "/Terrain/Field")
    mesh.AddTranslateOp().Set(Gf.Vec3d(0.5, 0, 0))
    if rotate_z is not None:
        mesh.AddRotateZOp().Set(rotate_z)
    if scale is not None:
        mesh.AddScaleOp().Set(Gf.Vec3d(*scale))
    mesh.CreatePointsAttr([(0, 0, 0), (1, 0, 0), (0, 1, 0)])  # not read: the height field simulates
    mesh.CreateFaceVertexCountsAttr([3])
    mesh.CreateFaceVertexIndicesAttr([0, 1, 2])
    prim = mesh.GetPrim()
    UsdPhysics.CollisionAPI.Apply(prim)
    UsdPhysics.MeshCollisionAPI.Apply(prim).CreateApproximationAttr("none")
    prim.ApplyAPI("NewtonUsdHeightfieldAPI")
    authored = {"rows": 3, "columns": 4, "elevation": [0, 1, 2, 2, 0, 0, 1, 0, 2, 1, 0, 0], "size": [1, 2, 0.5, 0.1]}
    authored.update(values)
    types = {"rows": Sdf.ValueTypeNames.Int, "columns": Sdf.ValueTypeNames.Int}
    types.update(elevation=Sdf.ValueTypeNames.FloatArray, size=Sdf.ValueTypeNames.DoubleArray)
    for name, value in authored.items():
        if value is not None:
            prim.CreateAttribute(f"newton:usd:heightfield:{name}", types[name], custom=False).Set(value)
    return stage


def test_height_field_mesh_becomes_a_height_field_shape():
    """Not the mesh's hull: MuJoCo's hfield, elevations scaled to [0, 1] as MuJoCo scales them."""
    from newton_usd.core.builder import Heightfield
    from newton_usd.solvers import SolverMuJoCo

    b = ModelBuilder()
    imported = b.add_usd(heightfield_stage())
    s = imported.shape_index["/Terrain/Field"]
    assert b.shape_type[s] == GeoType.HFIELD and b.shape_body[s] == -1
    source = b.shape_source[s]
    assert isinstance(source, Heightfield) and source.size == (1, 2, 0.5, 0.1)
    np.testing.assert_array_equal(source.elevation, np.array([0, 1, 2, 2, 0, 0, 1, 0, 2, 1, 0, 0]).reshape(3, 4) / 2)
    np.testing.assert_allclose(b.shape_scale[s], [1, 2, 0.5])
    np.testing.assert_allclose(b.shape_transform[s][0], [0.5, 0, 0])
    mj = SolverMuJoCo(b.finalize("cpu"), backend="cpu").mj_model
    assert (mj.nhfield, mj.hfield_nrow[0], mj.hfield_ncol[0]) == (1, 3, 4)
    np.testing.assert_allclose(mj.hfield_data, source.elevation.ravel(), atol=1e-7)
    assert not imported.diagnostics


@pytest.mark.parametrize(
    "stage_kw, factors, warned",
    [
        ({"meters_per_unit": 0.01}, (0.01, 0.01, 0.01), False),
        ({"scale": (2, 2, 2), "rotate_z": 30}, (2, 2, 2), False),
        ({"scale": (1, 3, 0.5), "rotate_z": 30}, (1, 3, 0.5), False),  # scaled along its own axes: exact
        ({"parent_scale": (2, 2, 2), "rotate_z": 30}, (2, 2, 2), False),
        ({"parent_scale": (1, 3, 1), "rotate_z": 30}, None, True),  # sheared
        ({"scale": (1, 1, -1)}, (1, 1, 1), True),  # mirrored
    ],
)
def test_height_field_size_follows_scale_and_units(stage_kw, factors, warned):
    b = ModelBuilder()
    imported = b.add_usd(heightfield_stage(**stage_kw))
    source = b.shape_source[imported.shape_index["/Terrain/Field"]]
    if factors is not None:
        sx, sy, sz = factors
        np.testing.assert_allclose(source.size, [1 * sx, 2 * sy, 0.5 * sz, 0.1 * sz], rtol=1e-12)
    kinds = [k for k in imported.diagnostics.kinds if "height field" in k]
    assert bool(kinds) == warned


@pytest.mark.parametrize(
    "values, attribute, message",
    [
        ({"elevation": [0, 1, 2]}, "elevation", "has 3 values, not rows x columns = 3 x 4 = 12"),
        ({"elevation": None}, "elevation", "not authored"),
        ({"rows": 1, "elevation": [0, 1, 2, 3]}, "rows", "must be at least 2"),
        ({"rows": None}, "rows", "must be at least 2"),
        ({"columns": 0}, "columns", "must be at least 2"),
        ({"size": [1, 1, 1]}, "size", "expected 4 numbers, got 3"),
        ({"size": [1, 1, 0.5, 0]}, "size", "every value must be positive"),
    ],
)
def test_bad_height_field_names_prim_and_attribute(values, attribute, message):
    with pytest.raises(UsdInputError, match=rf"/Terrain/Field\.newton:usd:heightfield:{attribute}: .*{message}"):
        load(heightfield_stage(**values))


def _body_of_two_boxes(stage, path, x, density=None, box_mass=None):
    """A rigid body at (x, 0, 1) with two 0.2 m box colliders side by side."""
    body = UsdGeom.Xform.Define(stage, path)
    body.AddTranslateOp().Set(Gf.Vec3d(x, 0, 1))
    UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
    if density is not None:
        UsdPhysics.MassAPI.Apply(body.GetPrim()).CreateDensityAttr(density)
    for k, dx in enumerate((-0.1, 0.2)):
        cube = UsdGeom.Cube.Define(stage, f"{path}/Box{k}")
        cube.CreateSizeAttr(0.2)
        cube.AddTranslateOp().Set(Gf.Vec3d(dx, 0, 0))
        UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
        if box_mass is not None and k == 0:
            UsdPhysics.MassAPI.Apply(cube.GetPrim()).CreateMassAttr(box_mass)


def test_identical_colliders_get_their_own_mass_properties():
    """Colliders of the same shape and pose on different bodies share computed mass properties, but only where
    everything that decides them (density, authored collider mass) is the same, and never the arrays."""
    stage = new_stage()
    _body_of_two_boxes(stage, "/A", 0.0)
    _body_of_two_boxes(stage, "/B", 1.0)
    _body_of_two_boxes(stage, "/C", 2.0, density=500.0)
    _body_of_two_boxes(stage, "/D", 3.0, box_mass=2.0)
    b = ModelBuilder()
    imp = b.add_usd(stage)
    a, b_, c, d = (imp.body_index[p] for p in ("/A", "/B", "/C", "/D"))
    box = 0.2**3
    assert b.body_mass[a] == b.body_mass[b_] == pytest.approx(2 * 1000.0 * box)
    assert b.body_mass[c] == pytest.approx(2 * 500.0 * box)
    assert b.body_mass[d] == pytest.approx(2.0 + 1000.0 * box)
    np.testing.assert_array_equal(b.body_com[a], b.body_com[b_])
    np.testing.assert_array_equal(b.body_inertia[a], b.body_inertia[b_])
    np.testing.assert_allclose(b.body_com[a], [0.05, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(b.body_inertia[c], b.body_inertia[a] / 2, rtol=1e-12)
    assert b.body_com[d][0] == pytest.approx((2.0 * -0.1 + 8.0 * 0.2) / 10.0)  # 2 kg at -0.1, 8 kg at 0.2
    b.body_com[a][0] = 7.0  # each body owns its arrays
    b.body_inertia[a][0, 0] = 7.0
    assert b.body_com[b_][0] == pytest.approx(0.05) and b.body_inertia[b_][0, 0] != 7.0


@pytest.mark.parametrize("enabled", [True, False])
def test_add_usd_leaves_the_garbage_collector_as_it_was(enabled, tmp_path):
    import gc

    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        load(falling_cube())
        assert gc.isenabled() == enabled
        with pytest.raises(UsdInputError):
            load(str(tmp_path / "missing.usda"))
        assert gc.isenabled() == enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_diagnostics_one_warning_per_kind_each_prim_once(caplog):
    from newton_usd.diagnostics import Diagnostics

    d = Diagnostics()
    for i in range(3000):  # a kind touching many prims, each reported twice
        d.add("cone approximated", f"/World/j{i}")
        d.add("cone approximated", Sdf.Path(f"/World/j{i}"))
    d.add("mesh simplified", "/World/j0")
    assert list(d.kinds) == ["cone approximated", "mesh simplified"]
    assert d.kinds["cone approximated"][:2] == ["/World/j0", "/World/j1"] and len(d.kinds["cone approximated"]) == 3000
    with caplog.at_level(logging.WARNING, logger="newton_usd"):
        d.emit("stage.usda", max_paths=2)
    assert [r.getMessage() for r in caplog.records] == [
        "stage.usda: cone approximated (3000 prims: /World/j0, /World/j1 and 2998 more)",
        "stage.usda: mesh simplified (1 prim: /World/j0)",
    ]


def test_massless_bodies_welded_to_the_world_or_a_massive_body_are_frames_only_lone_ones_get_1_kg():
    stage = new_stage()
    add_box(stage, "/Arm", 0.2, (0, 0, 1), mass=2.0)
    for path in ("/Frame", "/Arm/Tip", "/Lone", "/A", "/A/B"):  # no colliders, no mass
        UsdPhysics.RigidBodyAPI.Apply(UsdGeom.Xform.Define(stage, path).GetPrim())
    for path, body0, body1, kind in (
        ("/WeldFrame", None, "/Frame", UsdPhysics.FixedJoint),  # to the world: static
        ("/WeldTip", "/Arm", "/Arm/Tip", UsdPhysics.FixedJoint),  # to a massive body: a frame on it
        ("/WeldAB", "/A", "/A/B", UsdPhysics.FixedJoint),  # two massless bodies ...
        ("/HingeA", None, "/A", UsdPhysics.RevoluteJoint),  # ... that move
    ):
        joint = kind.Define(stage, path)
        if body0:
            joint.CreateBody0Rel().SetTargets([Sdf.Path(body0)])
        joint.CreateBody1Rel().SetTargets([Sdf.Path(body1)])
    model, imported = load(stage)
    mass = dict(zip(model.body_label, model.body_mass.numpy().tolist(), strict=True))
    assert mass == {"/Arm": 2.0, "/Frame": 0.0, "/Arm/Tip": 0.0, "/Lone": 1.0, "/A": 0.0, "/A/B": 0.0}
    kinds = imported.diagnostics.kinds
    assert kinds["body without colliders or authored mass: given 1 kg, as PhysX does"] == ["/Lone"]
    inertia = dict(zip(model.body_label, model.body_inertia.numpy(), strict=True))
    np.testing.assert_allclose(inertia["/Lone"], np.eye(3) * 0.004, rtol=1e-6)  # (UsdPhysics' 0.1 m sphere)
    assert kinds["massless bodies welded together with no mass among them: simulated massless"] == ["/A", "/A/B"]


def _dented_cube(stage, path, **attrs):
    """A unit cube whose top is a pyramid dent down to its center: volume 5/6, convex hull 1, surface
    5 + 4 * sqrt(2)/4 m^2. Attributes ``attrs`` (name -> (type, value)) authored on the collider."""
    mesh = UsdGeom.Mesh.Define(stage, path)
    mesh.CreatePointsAttr([(x, y, z) for x in (0, 1) for y in (0, 1) for z in (0, 1)] + [(0.5, 0.5, 0.5)])
    faces = [0, 1, 3, 0, 3, 2, 4, 6, 7, 4, 7, 5, 0, 4, 5, 0, 5, 1, 2, 3, 7, 2, 7, 6, 0, 2, 6, 0, 6, 4]
    faces += [1, 5, 8, 5, 7, 8, 7, 3, 8, 3, 1, 8]  # the dent, its normals out of the solid
    mesh.CreateFaceVertexCountsAttr([3] * (len(faces) // 3))
    mesh.CreateFaceVertexIndicesAttr(faces)
    UsdPhysics.RigidBodyAPI.Apply(mesh.GetPrim())
    UsdPhysics.CollisionAPI.Apply(mesh.GetPrim())
    UsdPhysics.MeshCollisionAPI.Apply(mesh.GetPrim()).CreateApproximationAttr("convexHull")
    for name, (type_name, value) in attrs.items():
        mesh.GetPrim().ApplyAPI("MjcMeshCollisionAPI" if name.startswith("mjc:") else "NewtonMeshCollisionAPI")
        mesh.GetPrim().CreateAttribute(name, type_name).Set(value)


@pytest.mark.parametrize(
    "attrs, mass, mujoco_mode",
    [
        ({}, 1000 * 5 / 6, "LEGACY"),  # MuJoCo's default and newton "solid": the enclosed volume
        ({"newton:massModel": (Sdf.ValueTypeNames.Token, "solid")}, 1000 * 5 / 6, "EXACT"),
        ({"mjc:inertia": (Sdf.ValueTypeNames.Token, "exact")}, 1000 * 5 / 6, "EXACT"),
        ({"mjc:inertia": (Sdf.ValueTypeNames.Token, "convex")}, 1000.0, "CONVEX"),  # the convex hull's volume
        ({"mjc:inertia": (Sdf.ValueTypeNames.Token, "shell")}, 1000 * (5 + math.sqrt(2)), "SHELL"),  # per m^2
        (
            {"newton:massModel": (Sdf.ValueTypeNames.Token, "shell"),
             "newton:shellThickness": (Sdf.ValueTypeNames.Float, 0.002)},
            1000 * (5 + math.sqrt(2)) * 0.002,  # a 2 mm wall
            "SHELL",
        ),
    ],
)  # fmt: skip
def test_mesh_mass_model_solid_convex_hull_or_shell(attrs, mass, mujoco_mode):
    import mujoco

    from newton_usd.solvers.mujoco.spec import build_spec

    stage = new_stage()
    _dented_cube(stage, "/Dented", **attrs)
    m, imported = load(stage)
    assert m.body_mass.numpy()[0] == pytest.approx(mass, rel=1e-4)
    com_z = m.body_com.numpy()[0][2]
    if mujoco_mode == "CONVEX":  # the hull's center, the cube's
        assert com_z == pytest.approx(0.5, abs=1e-6)
    elif mujoco_mode == "SHELL":  # faces: the bottom at 0, the sides at 1/2, the dent's at 5/6
        assert com_z == pytest.approx((2 + math.sqrt(2) * 5 / 6) / (5 + math.sqrt(2)), abs=1e-5)
    else:  # the cube less the dent, a pyramid of volume 1/6 centered at 7/8
        assert com_z == pytest.approx((0.5 - 7 / 8 / 6) / (5 / 6), abs=1e-5)
    assert unused_attributes(imported) == {}
    spec, _ = build_spec(m)  # the MuJoCo mesh has the authored mode (unauthored: MuJoCo's default)
    assert spec.meshes[0].inertia == getattr(mujoco.mjtMeshInertia, f"mjMESH_INERTIA_{mujoco_mode}")


def test_unknown_mesh_inertia_names_the_attribute():
    stage = new_stage()
    _dented_cube(stage, "/Dented", **{"mjc:inertia": (Sdf.ValueTypeNames.Token, "hollow")})
    with pytest.raises(UsdInputError, match=r"/Dented.*mjc:inertia|mjc:inertia.*/Dented"):
        load(stage)
