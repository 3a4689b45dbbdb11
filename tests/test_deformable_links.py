"""What ties a cloth or soft volume to the scene: PhysicsAttachment prims (pinned to the world, tied to a rigid body),
run under vbd and against Newton 1.8's own loop on the same stage."""

from __future__ import annotations

import warnings

import newton
import numpy as np
import pytest
from newton_loops import newton_loop as newtons_loop
from newton_loops import vbd_model
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics
from test_deformables import FPS, ITERATIONS, SIDE, SUBSTEPS, cloth_stage, our_run

from newton_usd.core.builder import ModelBuilder
from newton_usd.errors import UsdInputError
from newton_usd.sim import Simulation
from newton_usd.usd import add_usd

CORNERS = (0, SIDE - 1)  # (the cloth's two corners at y = -0.4 m)


def attach(path, indices, src1=None, coords=None, **attrs):
    """A PhysicsAttachment /World/Attach tying the cloth's points ``indices`` to ``src1`` (None: the world)."""
    stage = Usd.Stage.Open(path)
    prim = stage.DefinePrim("/World/Attach", "PhysicsAttachment")
    prim.CreateRelationship("physics:src0").SetTargets(["/World/Cloth/sim"])
    if src1:
        prim.CreateRelationship("physics:src1").SetTargets([src1])
    prim.CreateAttribute("physics:type0", Sdf.ValueTypeNames.Token).Set("point")
    prim.CreateAttribute("physics:type1", Sdf.ValueTypeNames.Token).Set("xform")
    prim.CreateAttribute("physics:indices0", Sdf.ValueTypeNames.IntArray).Set(list(indices))
    if coords is not None:
        prim.CreateAttribute("physics:coords1", Sdf.ValueTypeNames.Vector3fArray).Set([Gf.Vec3f(*c) for c in coords])
    for name, value in attrs.items():
        kind = Sdf.ValueTypeNames.Bool if isinstance(value, bool) else Sdf.ValueTypeNames.Float
        prim.CreateAttribute(f"physics:{name}", kind).Set(value)
    stage.GetRootLayer().Save()
    return path


def corner_points(indices, u=1.0):
    """The cloth's authored points ``indices`` in world (stage units)."""
    x = (np.arange(SIDE) / (SIDE - 1) - 0.5) * 0.8
    return [((x[i % SIDE] + 0.05) * u, x[i // SIDE] * u, 0.5 * u) for i in indices]


def newton_loop(path, frames, pinned=(), visuals=False):
    """Newton 1.8's own loop on the stage (add_usd, color, SolverVBD, CollisionPipeline): ``pinned`` particles made
    fixed as Newton's examples pin cloth (its import drops attachments to the world). Returns (particle_q, body_q),
    and its first deformable visual mesh's points (``DeformableVisuals``) where ``visuals``."""
    nb = newton.ModelBuilder()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nb.add_usd(path)
    for i in pinned:
        nb.particle_flags[i] = int(nb.particle_flags[i]) & ~int(newton.ParticleFlags.ACTIVE)
        nb.particle_mass[i] = 0.0
    model, solver = vbd_model(nb, ITERATIONS)
    s0 = newtons_loop(model, solver, frames * SUBSTEPS, 1.0 / (FPS * SUBSTEPS))
    out = s0.particle_q.numpy(), s0.body_q.numpy() if model.body_count else None
    if visuals:
        return *out, newton.geometry.DeformableVisuals(model).update(s0).get_points(0).numpy()
    return out


def test_a_cloth_pinned_at_two_corners_hangs_as_newton_pins_it(tmp_path):
    path = attach(cloth_stage(tmp_path / "pinned.usda", box=False), CORNERS, coords=corner_points(CORNERS))
    builder = ModelBuilder()
    add_usd(builder, path)
    model = builder.finalize("cpu")
    (attachment,) = model.cloth[0].links.attachments
    assert attachment.body == -1 and list(attachment.particles) == list(CORNERS)
    assert np.all(model.particle_mass.numpy()[list(CORNERS)] == 0.0)
    frames = 8
    sim, ours = our_run(path, frames)
    theirs, _ = newton_loop(path, frames, pinned=CORNERS)
    start = sim.model.particle_q.numpy()
    np.testing.assert_array_equal(ours[list(CORNERS)], start[list(CORNERS)])  # (held where authored)
    assert ours[:, 2].min() < 0.2  # (the far edge has swung down 0.3 m and more)
    np.testing.assert_allclose(ours, theirs, atol=1e-5)  # (3e-7 m seen; 5e-6 m at 30 frames)
    written = UsdGeom.Mesh(sim.stage.GetPrimAtPath("/World/Cloth/sim")).GetPointsAttr().Get(sim.time_code)
    np.testing.assert_allclose(np.asarray(written)[list(CORNERS)], np.asarray(corner_points(CORNERS)) -
                               [0.05, 0, 0.5], atol=1e-6)  # fmt: skip


def falling_box_stage(path):
    """The box-less cloth with a 1 kg, 0.1 m rigid box at one corner's edge (its near corners tied to it)."""
    cloth_stage(path, box=False)
    stage = Usd.Stage.Open(str(path))
    box = UsdGeom.Cube.Define(stage, "/World/Box")
    box.CreateSizeAttr(0.1)
    box.AddTranslateOp().Set(Gf.Vec3d(0.05, -0.45, 0.5))
    UsdPhysics.RigidBodyAPI.Apply(box.GetPrim())
    UsdPhysics.CollisionAPI.Apply(box.GetPrim())
    UsdPhysics.MassAPI.Apply(box.GetPrim()).CreateMassAttr(1.0)
    UsdPhysics.RigidBodyAPI(box.GetPrim()).CreateVelocityAttr(Gf.Vec3f(0, 0, 1.0))
    stage.GetRootLayer().Save()
    return str(path)


def test_a_cloth_tied_to_a_rigid_body_follows_it_as_newton_ties_it(tmp_path):
    path = falling_box_stage(tmp_path / "tied.usda")
    ties = CORNERS
    local = [(c[0] - 0.05, c[1] + 0.45, c[2] - 0.5) for c in corner_points(ties)]
    attach(path, ties, src1="/World/Box", coords=local)
    builder = ModelBuilder()
    add_usd(builder, path)
    (attachment,) = builder.cloth[0].links.attachments
    np.testing.assert_allclose(attachment.anchors, local, atol=1e-6)
    newton_builder = newton.ModelBuilder()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        newton_builder.add_usd(path)
    np.testing.assert_allclose(newton_builder.attachment_particle_body_body_point, local, atol=1e-6)
    frames = 8
    sim, ours = our_run(path, frames)
    theirs, their_box = newton_loop(path, frames)
    box = sim.physics.state.body_q.numpy()[0]
    assert box[2] < 0.45  # (thrown up at 1 m/s, it has fallen, dragging the cloth)
    for k, i in enumerate(ties):  # (each tied point stays at its anchor on the box)
        anchor = box[:3] + _rotate(box[3:], local[k])
        np.testing.assert_allclose(ours[i], anchor, atol=1e-4)  # (2e-6 m seen)
    np.testing.assert_allclose(box, their_box[0], atol=5e-5)  # (3e-6 seen)
    np.testing.assert_allclose(ours, theirs, atol=5e-5)  # (4e-6 m seen; 1.4e-5 m at 30 frames)


def _rotate(q, v):
    x, y, z, w = q
    u = np.array([x, y, z])
    t = 2.0 * np.cross(u, v)
    return np.asarray(v) + w * t + np.cross(u, t)


@pytest.mark.parametrize(
    "attrs, attribute, words",
    [
        ({"indices": [SIDE * SIDE]}, "physics:indices0", "out of range"),
        ({"coords": [(0, 0, 0)]}, "physics:coords1", "2 points"),
        ({"stiffness": -1.0}, "physics:stiffness", "at least 0"),
    ],
)
def test_a_bad_attachment_is_refused_in_one_line(tmp_path, attrs, attribute, words):
    indices = attrs.pop("indices", CORNERS)
    coords = attrs.pop("coords", None)
    path = attach(cloth_stage(tmp_path / "bad.usda", box=False), indices, coords=coords, **attrs)
    with pytest.raises(UsdInputError, match=words) as e:
        add_usd(ModelBuilder(), path)
    assert "/World/Attach" in str(e.value) and attribute in str(e.value)


def test_a_compliant_world_attachment_is_said_not_simulated(tmp_path, caplog):
    path = attach(cloth_stage(tmp_path / "soft.usda", box=False), CORNERS, coords=corner_points(CORNERS),
                  stiffness=100.0)  # fmt: skip
    builder = ModelBuilder()
    with caplog.at_level("WARNING", logger="newton_usd"):
        add_usd(builder, path)
    assert "compliant attachment" in caplog.text and "/World/Attach" in caplog.text
    assert not builder.cloth[0].links.attachments and min(builder.particle_mass) > 0


def element_filter(path, src0="/World/Cloth/sim", src1="/World/Box", **attrs):
    """A PhysicsElementCollisionFilter /World/Filter between ``src0`` and ``src1`` (``attrs``: its int arrays)."""
    stage = Usd.Stage.Open(path)
    prim = stage.DefinePrim("/World/Filter", "PhysicsElementCollisionFilter")
    prim.CreateRelationship("physics:src0").SetTargets([src0])
    prim.CreateRelationship("physics:src1").SetTargets([src1])
    for name, value in attrs.items():
        prim.CreateAttribute(f"physics:{name}", Sdf.ValueTypeNames.IntArray).Set(value)
    stage.GetRootLayer().Save()
    return path


def test_a_filtered_cloth_falls_through_the_box_it_would_rest_on(tmp_path):
    """Filtered from the box, the cloth falls as Newton's loop runs it with no box at all (Newton 1.8's import
    does not filter a cloth: it says so)."""
    frames = 6
    path = element_filter(cloth_stage(tmp_path / "filtered.usda"))
    sim, ours = our_run(path, frames)
    assert ours[:, 2].max() < 0.39  # (through the box's top: draped, its middle stayed above 0.39 m)
    theirs, _ = newton_loop(cloth_stage(tmp_path / "boxless.usda", box=False), frames)
    np.testing.assert_allclose(ours, theirs, atol=1e-6)


def test_filtered_pairs_and_element_groups_name_the_points(tmp_path):
    path = cloth_stage(tmp_path / "pairs.usda")
    stage = Usd.Stage.Open(path)
    UsdPhysics.FilteredPairsAPI.Apply(stage.GetPrimAtPath("/World/Cloth")).CreateFilteredPairsRel().SetTargets(
        ["/World/Box"]
    )
    stage.GetRootLayer().Save()
    builder = ModelBuilder()
    add_usd(builder, path)
    ((points, shapes),) = builder.cloth[0].links.filtered
    assert list(points) == list(range(SIDE * SIDE)) and shapes == [0]
    sim, ours = our_run(path, 6)
    assert ours[:, 2].max() < 0.39  # (through the box)
    # faces 0 and 8 (the first quad of the first row, the second of the second) against the box: their 7 points
    path = element_filter(cloth_stage(tmp_path / "groups.usda"), groupElemCounts0=[2], groupElemIndices0=[0, 8],
                          groupElemCounts1=[0], groupElemIndices1=[])  # fmt: skip
    builder = ModelBuilder()
    add_usd(builder, path)
    ((points, shapes),) = builder.cloth[0].links.filtered
    assert list(points) == [0, 1, 8, 9, 10, 17, 18] and shapes == [0]
    with pytest.raises(UsdInputError, match="out of range") as e:
        add_usd(ModelBuilder(), element_filter(path, groupElemCounts0=[1], groupElemIndices0=[49]))
    assert "/World/Filter" in str(e.value) and "physics:groupElemIndices0" in str(e.value)


def graphics_mesh(path, scale=0.5, bind=False):
    """A 15 x 15 graphics mesh /World/Cloth/render over the cloth, in its own space: scaled by ``scale`` (its points
    1/scale apart as far); ``bind``: its points authored 0.3 m off, its bind pose (PhysicsDeformablePoseAPI) where the
    cloth is."""
    stage = Usd.Stage.Open(path)
    mesh = UsdGeom.Mesh.Define(stage, "/World/Cloth/render")
    n = 15
    x = (np.arange(n) / (n - 1) - 0.5) * 0.8 / scale
    points = [Gf.Vec3f(float(a), float(b), 0.0) for b in x for a in x]
    quads = [
        (j * n + i, j * n + i + 1, (j + 1) * n + i + 1, (j + 1) * n + i) for j in range(n - 1) for i in range(n - 1)
    ]
    mesh.CreateFaceVertexCountsAttr([4] * len(quads))
    mesh.CreateFaceVertexIndicesAttr([i for q in quads for i in q])
    mesh.AddTranslateOp().Set(Gf.Vec3d(0.05, 0, 0.5))
    mesh.AddScaleOp().Set(Gf.Vec3f(scale))
    if bind:
        prim = mesh.GetPrim()
        prim.AddAppliedSchema("PhysicsDeformablePoseAPI:rest")
        prim.CreateAttribute("physics:deformablePose:rest:purposes", Sdf.ValueTypeNames.TokenArray).Set(["bindPose"])
        prim.CreateAttribute("physics:deformablePose:rest:points", Sdf.ValueTypeNames.Point3fArray).Set(points)
        points = [p + Gf.Vec3f(0, 0, 0.3 / scale) for p in points]
    mesh.CreatePointsAttr(points)
    stage.GetRootLayer().Save()
    return path


@pytest.mark.parametrize("bind", [False, True])
def test_a_graphics_mesh_follows_its_cloth_as_newton_skins_it(tmp_path, bind):
    path = attach(cloth_stage(tmp_path / "render.usda", box=False), CORNERS, coords=corner_points(CORNERS))
    graphics_mesh(path, bind=bind)
    frames = 6
    sim, ours = our_run(path, frames)
    (mesh,) = sim.model.cloth[0].links.graphics
    assert mesh.label == "/World/Cloth/render" and mesh.parents.shape == (225, 3)
    theirs, _, their_render = newton_loop(path, frames, pinned=CORNERS, visuals=True)
    prim = sim.stage.GetPrimAtPath("/World/Cloth/render")
    written = np.asarray(UsdGeom.Mesh(prim).GetPointsAttr().Get(sim.time_code), dtype=np.float64)
    m = np.array(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default()))
    world = written @ m[:3, :3] + m[3, :3]  # (written in its own space: scaled by 0.5)
    assert world[:, 2].min() < 0.3  # (it swung down with the cloth)
    np.testing.assert_allclose(world, their_render, atol=1e-5)
    np.testing.assert_allclose(world, mesh.skinned(ours), atol=1e-5)
    sim.reset()
    assert UsdGeom.Mesh(prim).GetPointsAttr().GetNumTimeSamples() == 0  # (the authored points shown again)


def author(path, prim_path, **attrs):
    """Author attributes (name -> (Sdf type, value)) on ``prim_path`` of the stage file ``path``."""
    stage = Usd.Stage.Open(str(path))
    prim = stage.GetPrimAtPath(prim_path)
    for name, (kind, value) in attrs.items():
        prim.CreateAttribute(name.replace("__", ":"), kind).Set(value)
    stage.GetRootLayer().Save()
    return str(path)


def masses_of(path):
    ours, theirs = ModelBuilder(), newton.ModelBuilder()
    add_usd(ours, path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs.add_usd(path)
    return np.asarray(ours.particle_mass), np.asarray(theirs.particle_mass)


@pytest.mark.parametrize("kind", ["point", None])
def test_per_point_masses_of_cloth_and_volumes_as_newton_reads_them(tmp_path, kind):
    from test_deformables import soft_stage

    rng = np.random.default_rng(3)
    typed = {} if kind is None else {"physics__masses__elementType": (Sdf.ValueTypeNames.Token, kind)}
    path = author(cloth_stage(tmp_path / "cloth.usda", box=False), "/World/Cloth/sim",
                  physics__masses=(Sdf.ValueTypeNames.FloatArray, rng.uniform(0.01, 0.05, SIDE * SIDE).tolist()),
                  **typed)  # fmt: skip
    ours, theirs = masses_of(path)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)
    path = author(
        soft_stage(tmp_path / "soft.usda"),
        "/World/Soft",
        physics__masses=(Sdf.ValueTypeNames.FloatArray, rng.uniform(0.1, 0.5, 27).tolist()),
        **typed,
    )
    ours, theirs = masses_of(path)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)
    if kind == "point":  # (the volume-weighted conversion: not the authored values themselves)
        assert not np.allclose(ours, Usd.Stage.Open(path).GetPrimAtPath("/World/Soft").GetAttribute(
            "physics:masses").Get(), rtol=1e-3)  # fmt: skip


def test_volume_masses_per_tetrahedron_and_constant_as_newton_reads_them(tmp_path):
    from test_deformables import soft_stage

    for kind, values in (("tetrahedron", np.linspace(0.01, 0.1, 48).tolist()), ("constant", [3.0])):
        path = author(soft_stage(tmp_path / f"{kind}.usda"), "/World/Soft",
                      physics__masses=(Sdf.ValueTypeNames.FloatArray, values),
                      physics__masses__elementType=(Sdf.ValueTypeNames.Token, kind))  # fmt: skip
        ours, theirs = masses_of(path)
        np.testing.assert_allclose(ours, theirs, rtol=1e-5)
        np.testing.assert_allclose(ours.sum(), sum(values), rtol=1e-5)


def test_a_cloth_with_a_rest_shape_shrinks_to_it_as_newton_runs_it(tmp_path):
    """Authored stretched 25% over its rest shape (physics:restShapePoints, 0.8 of its points), pinned at two corners:
    it pulls in as Newton's loop runs it; its masses follow the rest areas, as Newton's import."""
    path = attach(cloth_stage(tmp_path / "rest.usda", box=False), CORNERS, coords=corner_points(CORNERS))
    stage = Usd.Stage.Open(path)
    points = np.asarray(stage.GetPrimAtPath("/World/Cloth/sim").GetAttribute("points").Get())
    rest = [Gf.Vec3f(*p) for p in (0.8 * points).tolist()]
    author(path, "/World/Cloth/sim", physics__restShapePoints=(Sdf.ValueTypeNames.Point3fArray, rest))
    ours_mass, their_mass = masses_of(path)
    free = np.ones(SIDE * SIDE, dtype=bool)
    free[list(CORNERS)] = False
    np.testing.assert_allclose(ours_mass[free], their_mass[free], rtol=1e-5)
    assert ours_mass.sum() == pytest.approx(250.0 * 0.64 * 0.64 * 0.004 - their_mass[~free].sum(), rel=1e-4)
    frames = 4
    sim, ours = our_run(path, frames)
    theirs, _ = newton_loop(path, frames, pinned=CORNERS)
    start = sim.model.particle_q.numpy()
    width = lambda q: q[SIDE * SIDE - 1, 0] - q[SIDE * (SIDE - 1), 0]  # noqa: E731 (its far edge's length)
    assert width(ours) < 0.97 * width(start)  # (pulled in toward its rest length, 0.8 of it)
    np.testing.assert_allclose(ours, theirs, atol=1e-5)  # (7e-7 m seen; 2e-6 m at 15 frames)


def test_a_soft_volume_with_a_rest_shape_as_newton_runs_it(tmp_path):
    from test_deformables import block, soft_stage

    path = soft_stage(tmp_path / "soft.usda")
    points, _ = block()
    author(path, "/World/Soft", physics__restShapePoints=(Sdf.ValueTypeNames.Point3fArray,
                                                          [Gf.Vec3f(*p) for p in 0.9 * points]))  # fmt: skip
    ours_mass, their_mass = masses_of(path)
    np.testing.assert_allclose(ours_mass, their_mass, rtol=1e-5)
    assert ours_mass.sum() == pytest.approx(200.0 * (0.27**3), rel=1e-5)  # (the rest volume's mass)
    frames = 4
    sim, ours = our_run(path, frames)
    from test_deformables import newton_run

    theirs = newton_run(path, frames)
    np.testing.assert_allclose(ours, theirs, atol=1e-5)  # (6e-7 m seen; 2e-6 m at 15 frames)


@pytest.mark.parametrize("default", [None, "restShape"])
def test_a_curved_cloth_bends_back_as_newton_rests_its_edges(tmp_path, caplog, default):
    """A cloth authored curved (z = x^2): unauthored physics:restBendAnglesDefault, its edges rest flat (said), as
    Newton's import; restShape: at its curved angles. Either way as Newton's loop runs it."""
    curved = [(c[0], c[1], c[2] + (c[0] - 0.05) ** 2) for c in corner_points(CORNERS)]
    stiff = {"mat_physics:surfaceBendStiffness": 0.01}  # (N m: the two rest angles 1 mm apart at 4 frames)
    path = attach(cloth_stage(tmp_path / "curved.usda", box=False, **stiff), CORNERS, coords=curved)
    stage = Usd.Stage.Open(path)
    prim = stage.GetPrimAtPath("/World/Cloth/sim")
    prim.GetAttribute("points").Set([Gf.Vec3f(p[0], p[1], p[0] ** 2) for p in prim.GetAttribute("points").Get()])
    if default:
        prim.CreateAttribute("physics:restBendAnglesDefault", Sdf.ValueTypeNames.Token).Set(default)
    stage.GetRootLayer().Save()
    with caplog.at_level("WARNING", logger="newton_usd"):
        sim, ours = our_run(path, 4)
    assert ("restBendAnglesDefault unauthored" in caplog.text) == (default is None)
    theirs, _ = newton_loop(path, 4, pinned=CORNERS)
    np.testing.assert_allclose(ours, theirs, atol=1e-5)  # (1-2e-6 m seen)


def test_the_pinned_flag_sample_hangs_from_its_corners():
    from test_deformables import SAMPLES

    sim = Simulation.open(str(SAMPLES / "flag_pinned.usda"), fps=FPS, substeps=SUBSTEPS)
    for _ in range(8):
        sim.step_frame()
    q = sim.physics.state.particle_q.numpy()
    np.testing.assert_array_equal(q[[0, 160]], sim.model.particle_q.numpy()[[0, 160]])  # (pinned: never moved)
    assert np.all(np.isfinite(q)) and q[:, 2].min() < 0.9  # (its free edge swings down 0.3 m and more)


def soft_body_stage(path):
    """The soft cube of test_deformables under a PhysicsDeformableBodyAPI Xform /World/Body (its TetMesh ``sim``), with
    a graphics mesh ``skin``: a 5 x 5 grid over its top face and one on its side, 2 cm outside (clamped in), its top
    four corner points pinned to the world."""
    from test_deformables import soft_stage

    soft_stage(path)
    stage = Usd.Stage.Open(str(path))
    body = UsdGeom.Xform.Define(stage, "/World/Body")
    body.GetPrim().AddAppliedSchema("PhysicsDeformableBodyAPI")
    Sdf.CopySpec(stage.GetRootLayer(), "/World/Soft", stage.GetRootLayer(), "/World/Body/sim")
    stage.RemovePrim("/World/Soft")
    sim = stage.GetPrimAtPath("/World/Body/sim")
    sim.SetMetadata("apiSchemas", Sdf.TokenListOp.CreateExplicit(
        ["PhysicsVolumeDeformableSimAPI", "PhysicsCollisionAPI", "MaterialBindingAPI"]))  # fmt: skip
    g = np.linspace(0.0, 0.3, 5)
    top = [(a, b, 0.3) for b in g for a in g]
    side = [(a, -0.02, c) for c in g for a in g]
    skin = UsdGeom.Mesh.Define(stage, "/World/Body/skin")
    skin.CreatePointsAttr([Gf.Vec3f(*p) for p in top + side])
    quads = [(j * 5 + i, j * 5 + i + 1, (j + 1) * 5 + i + 1, (j + 1) * 5 + i) for j in range(4) for i in range(4)]
    skin.CreateFaceVertexCountsAttr([4] * 32)
    skin.CreateFaceVertexIndicesAttr([i + k for k in (0, 25) for q in quads for i in q])
    skin.AddTranslateOp().Set(Gf.Vec3d(-0.15, -0.15, 0.3))
    stage.GetRootLayer().Save()
    tops = [i for i in range(27) if i % 3 == 2 and (i // 3) % 3 != 1 and i // 9 != 1]  # (z = top; x, y at the edges)
    prim = stage.DefinePrim("/World/Pin", "PhysicsAttachment")
    prim.CreateRelationship("physics:src0").SetTargets(["/World/Body/sim"])
    prim.CreateAttribute("physics:type0", Sdf.ValueTypeNames.Token).Set("point")
    prim.CreateAttribute("physics:type1", Sdf.ValueTypeNames.Token).Set("xform")
    prim.CreateAttribute("physics:indices0", Sdf.ValueTypeNames.IntArray).Set(tops)
    from test_deformables import block

    points, _ = block()
    corners = [(points[i] + [-0.15, -0.15, 0.3]).tolist() for i in tops]
    prim.CreateAttribute("physics:coords1", Sdf.ValueTypeNames.Vector3fArray).Set([Gf.Vec3f(*c) for c in corners])
    stage.GetRootLayer().Save()
    return str(path), tops


def test_a_pinned_soft_volume_and_its_skin_as_newton_runs_them(tmp_path, caplog):
    path, tops = soft_body_stage(tmp_path / "skin.usda")
    with caplog.at_level("WARNING", logger="newton_usd"):
        sim, ours = our_run(path, 6)
    assert "lie outside /World/Body/sim's tetrahedra" in caplog.text  # (the side grid, 2 cm out: clamped in)
    theirs, _, their_skin = newton_loop(path, 6, pinned=tops, visuals=True)
    np.testing.assert_allclose(ours, theirs, atol=1e-5)
    prim = sim.stage.GetPrimAtPath("/World/Body/skin")
    written = np.asarray(UsdGeom.Mesh(prim).GetPointsAttr().Get(sim.time_code), dtype=np.float64)
    m = np.array(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default()))
    np.testing.assert_allclose(written @ m[:3, :3] + m[3, :3], their_skin, atol=1e-5)  # (8e-8 m seen, as the cube)
    assert ours[tops, 2].min() == pytest.approx(0.6, abs=1e-6) and ours[:, 2].min() < 0.298  # (pinned; it sags)


def test_a_cloth_of_panels_rests_as_newton_runs_it(tmp_path):
    """Its rest shape of its own topology (physics:restTriVertexIndices: three rest points of its own per triangle,
    0.8 of the authored shape): as Newton's loop runs it, and as the same rest shape welded (one rest point a point)."""
    runs = {}
    for panels in (True, False):
        path = attach(cloth_stage(tmp_path / f"panels{panels}.usda", box=False), CORNERS, coords=corner_points(CORNERS))
        stage = Usd.Stage.Open(path)
        prim = stage.GetPrimAtPath("/World/Cloth/sim")
        points = 0.8 * np.asarray(prim.GetAttribute("points").Get(), dtype=np.float64)
        quads = np.asarray(prim.GetAttribute("faceVertexIndices").Get()).reshape(-1, 4)
        tris = np.stack([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]], axis=1).reshape(-1, 3)  # (each quad's fan)
        if panels:
            rest = points[tris.reshape(-1)]
            prim.CreateAttribute("physics:restTriVertexIndices", Sdf.ValueTypeNames.Int3Array).Set(
                [Gf.Vec3i(3 * k, 3 * k + 1, 3 * k + 2) for k in range(len(tris))]
            )
        else:
            rest = points
        prim.CreateAttribute("physics:restShapePoints", Sdf.ValueTypeNames.Point3fArray).Set(
            [Gf.Vec3f(*p) for p in rest.tolist()]
        )
        prim.CreateAttribute("physics:restBendAnglesDefault", Sdf.ValueTypeNames.Token).Set("restShape")
        stage.GetRootLayer().Save()
        ours_mass, their_mass = masses_of(path)
        np.testing.assert_allclose(ours_mass[SIDE:], their_mass[SIDE:], rtol=1e-5)  # (the first row holds the pins)
        sim, runs[panels] = our_run(path, 4)
        if panels:
            assert len(sim.model.cloth[0].rest) == 3 * len(tris)
            theirs, _ = newton_loop(path, 4, pinned=CORNERS)
            np.testing.assert_allclose(runs[panels], theirs, atol=1e-5)
    np.testing.assert_allclose(runs[True], runs[False], atol=1e-5)


def test_rest_angles_between_faces_fold_the_cloth_as_newton_runs_it(tmp_path):
    """physics:restAdjTriPairs / restBendAngles: the edges between the 4th and 5th columns of faces rest at 60
    degrees, the others flat (restBendAnglesDefault unauthored): the cloth folds there, as Newton's loop runs it."""
    runs = {}
    for fold in (True, False):
        stiff = {"mat_physics:surfaceBendStiffness": 0.01}
        path = attach(cloth_stage(tmp_path / f"fold{fold}.usda", box=False, **stiff), CORNERS,
                      coords=corner_points(CORNERS))  # fmt: skip
        if fold:
            pairs = [Gf.Vec2i(row * (SIDE - 1) + 3, row * (SIDE - 1) + 4) for row in range(SIDE - 1)]
            author(path, "/World/Cloth/sim", physics__restAdjTriPairs=(Sdf.ValueTypeNames.Int2Array, pairs),
                   physics__restBendAngles=(Sdf.ValueTypeNames.FloatArray, [60.0] * len(pairs)))  # fmt: skip
        sim, runs[fold] = our_run(path, 4)
        theirs, _ = newton_loop(path, 4, pinned=CORNERS)
        np.testing.assert_allclose(runs[fold], theirs, atol=1e-5)  # (3e-7 m seen; 1e-6 m at 15 frames)
    assert np.abs(runs[True] - runs[False]).max() > 1e-3  # (the fold shows: 5.7 mm)
    with pytest.raises(UsdInputError, match="share no edge") as e:
        add_usd(ModelBuilder(), author(path, "/World/Cloth/sim", physics__restAdjTriPairs=(
            Sdf.ValueTypeNames.Int2Array, [Gf.Vec2i(0, 2)]), physics__restBendAngles=(
            Sdf.ValueTypeNames.FloatArray, [10.0])))  # fmt: skip
    assert "physics:restAdjTriPairs" in str(e.value)


def test_a_cloth_tied_to_a_kinematic_body_moves_with_it(tmp_path):
    """A kinematic box animated 0.6 m/s along x (its translate time-sampled): the cloth's tied corners are carried
    along at their anchors on it."""
    path = cloth_stage(tmp_path / "kinematic.usda", box=False)
    stage = Usd.Stage.Open(path)
    box = UsdGeom.Cube.Define(stage, "/World/Box")
    box.CreateSizeAttr(0.1)
    op = box.AddTranslateOp()
    for f in range(61):
        op.Set(Gf.Vec3d(0.05 + 0.02 * f, -0.45, 0.5), f)
    UsdPhysics.RigidBodyAPI.Apply(box.GetPrim()).CreateKinematicEnabledAttr(True)
    UsdPhysics.CollisionAPI.Apply(box.GetPrim())
    stage.GetRootLayer().Save()
    local = [(c[0] - 0.05, c[1] + 0.45, c[2] - 0.5) for c in corner_points(CORNERS)]
    sim, ours = our_run(attach(path, CORNERS, src1="/World/Box", coords=local), 10)
    box_q = sim.physics.state.body_q.numpy()[0]
    np.testing.assert_allclose(box_q[:3], [0.25, -0.45, 0.5], atol=1e-6)  # (moved 0.2 m)
    for k, i in enumerate(CORNERS):
        np.testing.assert_allclose(ours[i], box_q[:3] + _rotate(box_q[3:], local[k]), atol=1e-4)  # (3e-5 m seen)


def test_a_soft_volume_filtered_from_the_ground_falls_through_it(tmp_path):
    from test_deformables import block, soft_stage

    path = element_filter(soft_stage(tmp_path / "through.usda"), src0="/World/Soft", src1="/World/Ground",
                          groupElemCounts0=[1], groupElemIndices0=[5], groupElemCounts1=[0])  # fmt: skip
    builder = ModelBuilder()
    add_usd(builder, path)
    ((points, shapes),) = builder.volumes[0].links.filtered
    assert list(points) == sorted(block()[1][5]) and shapes == [0]  # (tetrahedron 5's four points)
    path = element_filter(soft_stage(tmp_path / "all.usda"), src0="/World/Soft", src1="/World/Ground")  # (all of it)
    sim, ours = our_run(path, 12)
    assert ours[:, 2].max() < 0.0  # (fallen through the ground: unfiltered, it rests 0.1 m above it)
