"""Deformable bodies: cloth (a Mesh with PhysicsSurfaceDeformableSimAPI) imported as particles and triangles, run under
Newton's VBD (the vbd engine) beside the stage's colliders, written back onto its points, and bad input refused in
one line."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import newton
import numpy as np
import pytest
from newton_loops import newton_loop, vbd_model
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade

from newton_usd.cli import main
from newton_usd.core.builder import ModelBuilder
from newton_usd.errors import NewtonUsdError, SimulationError, UsdInputError
from newton_usd.sim import Simulation
from newton_usd.usd import add_usd

from stages import scaled_stage

NEWTON_ASSETS = Path(importlib.util.find_spec("newton").origin).parent / "tests" / "assets"
SAMPLES = Path(__file__).resolve().parent.parent / "sample_stages" / "deformables"
FPS, SUBSTEPS, FRAMES, ITERATIONS = 30, 4, 6, 10
SIDE = 8  # vertices along an edge of the cloth (64 in all)


def cloth_stage(path, meters_per_unit=1.0, *, scene_api=None, material_api="PhysicsSurfaceDeformableMaterialAPI",
                box=True, **edits):  # fmt: skip
    """A 0.8 m square cloth of SIDE x SIDE points 0.1 m above a static 0.4 m box (its top at 0.4 m), authored in stage
    units of ``meters_per_unit`` (the same cloth in SI at any unit). ``edits``: attribute overrides of the mesh
    (name -> value), of its material (``mat_<name>``) or of the scene (``scene_<name>``)."""
    stage, scene, u = scaled_stage(path, meters_per_unit, FPS)  # (u: a meter in stage units)
    if scene_api:
        scene.GetPrim().AddAppliedSchema(scene_api)
    friction = UsdShade.Material.Define(stage, "/World/Friction")  # (authored: the importers' defaults differ)
    UsdPhysics.MaterialAPI.Apply(friction.GetPrim()).CreateDynamicFrictionAttr(0.5)
    UsdPhysics.MaterialAPI(friction.GetPrim()).CreateStaticFrictionAttr(0.5)
    if box:
        cube = UsdGeom.Cube.Define(stage, "/World/Box")
        cube.CreateSizeAttr(0.4 * u)
        cube.AddTranslateOp().Set(Gf.Vec3d(0, 0, 0.2 * u))
        UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
        UsdShade.MaterialBindingAPI.Apply(cube.GetPrim()).Bind(friction, materialPurpose="physics")
    body = UsdGeom.Xform.Define(stage, "/World/Cloth")
    body.GetPrim().AddAppliedSchema("PhysicsDeformableBodyAPI")
    mesh = UsdGeom.Mesh.Define(stage, "/World/Cloth/sim")
    x = (np.arange(SIDE) / (SIDE - 1) - 0.5) * 0.8 * u
    points = [Gf.Vec3f(float(a), float(b), 0.0) for b in x for a in x]
    quads = [(j * SIDE + i, j * SIDE + i + 1, (j + 1) * SIDE + i + 1, (j + 1) * SIDE + i)
             for j in range(SIDE - 1) for i in range(SIDE - 1)]  # fmt: skip
    mesh.CreatePointsAttr(points)
    mesh.CreateFaceVertexCountsAttr([4] * len(quads))
    mesh.CreateFaceVertexIndicesAttr([i for q in quads for i in q])
    mesh.AddTranslateOp().Set(Gf.Vec3d(0.05 * u, 0, 0.5 * u))
    prim = mesh.GetPrim()
    for api in ("PhysicsSurfaceDeformableSimAPI", "PhysicsCollisionAPI", "MaterialBindingAPI"):
        prim.AddAppliedSchema(api)
    prim.CreateAttribute("physics:thicknesses", Sdf.ValueTypeNames.FloatArray).Set([0.004 * u])
    prim.CreateAttribute("physics:thicknesses:elementType", Sdf.ValueTypeNames.Token).Set("constant")
    material = UsdShade.Material.Define(stage, "/World/ClothMaterial")
    m = material.GetPrim()
    m.AddAppliedSchema(material_api)
    m.CreateAttribute("physics:surfaceStretchStiffness", Sdf.ValueTypeNames.Float).Set(1000.0)  # (N/m: no length)
    m.CreateAttribute("physics:surfaceBendStiffness", Sdf.ValueTypeNames.Float).Set(1.0e-4 * u * u)  # (N m)
    m.CreateAttribute("physics:density", Sdf.ValueTypeNames.Float).Set(250.0 / u**3)
    prim.CreateRelationship("material:binding:physics").SetTargets([m.GetPath()])
    for name, value in edits.items():
        target, name = (m, name[4:]) if name.startswith("mat_") else (prim, name)
        if name.startswith("scene_"):
            target, name = scene.GetPrim(), name[6:]
        attr = target.GetAttribute(name)
        if not attr:
            kind = Sdf.ValueTypeNames.IntArray if "Indices" in name else Sdf.ValueTypeNames.Float
            attr = target.CreateAttribute(name, kind)
        attr.Set(value)
    stage.GetRootLayer().Save()
    return str(path)


def newton_run(path, frames=FRAMES) -> np.ndarray:
    """Newton 1.8's own loop on the stage: add_usd, SolverVBD, CollisionPipeline, the same step and iterations."""
    nb = newton.ModelBuilder()
    nb.add_usd(path)
    model, solver = vbd_model(nb, ITERATIONS)
    return newton_loop(model, solver, frames * SUBSTEPS, 1.0 / (FPS * SUBSTEPS)).particle_q.numpy()


def our_run(path, frames=FRAMES, **kw) -> tuple[Simulation, np.ndarray]:
    sim = Simulation.open(path, fps=FPS, substeps=SUBSTEPS, solver_options={"iterations": ITERATIONS}, **kw)
    for _ in range(frames):
        sim.step_frame()
    return sim, sim.physics.state.particle_q.numpy()


def test_cloth_imports_as_particles_and_triangles(tmp_path):
    builder = ModelBuilder()
    imported = add_usd(builder, cloth_stage(tmp_path / "c.usda"))
    model = builder.finalize("cpu")
    assert model.particle_count == SIDE * SIDE and model.tri_count == 2 * (SIDE - 1) ** 2
    assert list(imported.deformables.cloth) == ["/World/Cloth/sim"]
    assert model.shape_label == ["/World/Box"]  # (the cloth's mesh is not a static collider)
    q = model.particle_q.numpy()
    np.testing.assert_allclose(q[:, 2], 0.5, atol=1e-6)
    np.testing.assert_allclose(q[:, 0].min(), -0.35, atol=1e-6)
    np.testing.assert_allclose(model.particle_mass.numpy().sum(), 250.0 * 0.64 * 0.004, rtol=1e-5)
    np.testing.assert_allclose(model.particle_radius.numpy(), 0.002, rtol=1e-5)
    cloth = model.cloth[0]
    assert cloth.stretch_stiffness == pytest.approx(1000.0) and cloth.bend_stiffness == pytest.approx(1e-4)


def test_cloth_drapes_over_a_box_as_newton_runs_it(tmp_path):
    path = cloth_stage(tmp_path / "drape.usda")
    sim, ours = our_run(path)
    assert type(sim.solver).__name__ == "SolverVBD"  # (the default engine of a stage with cloth)
    theirs = newton_run(path)
    assert np.all(np.isfinite(ours))
    middle = np.linalg.norm(ours[:, :2] - [0.05, 0.0], axis=1) < 0.15
    assert ours[middle, 2].min() > 0.39  # (held up by the box)
    assert ours[~middle, 2].min() < 0.45  # (its edges fall)
    np.testing.assert_allclose(ours, theirs, atol=5e-4)  # (6e-5 m seen)


def test_written_points_of_a_cm_stage_are_the_m_stages_times_100(tmp_path):
    frames = 2
    m_sim, _ = our_run(cloth_stage(tmp_path / "m.usda"), frames)
    cm_sim, _ = our_run(cloth_stage(tmp_path / "cm.usda", 0.01), frames)
    written = []
    for sim in (m_sim, cm_sim):
        attr = sim.stage.GetPrimAtPath("/World/Cloth/sim").GetAttribute("points")
        times = attr.GetTimeSamples()
        assert len(times) >= frames
        written.append(np.asarray(attr.Get(times[-1]), dtype=np.float64))
    source = Usd.Stage.Open(str(tmp_path / "m.usda"))
    authored = np.asarray(source.GetPrimAtPath("/World/Cloth/sim").GetAttribute("points").Get())
    assert np.abs(written[0] - authored).max() > 1e-3  # (moved)
    np.testing.assert_allclose(written[1], 100.0 * written[0], rtol=1e-4, atol=2e-3)


@pytest.mark.parametrize(
    ("edits", "attribute", "words"),
    [
        ({"faceVertexIndices": [0, 1, 9, 999] + [0] * (4 * (SIDE - 1) ** 2 - 4)}, "faceVertexIndices", "out of range"),
        ({"points": [Gf.Vec3f(0, 0, 0)] * (SIDE * SIDE)}, "points", "zero area"),
        ({"physics:thicknesses": [-0.01]}, "physics:thicknesses", "positive"),
        ({"mat_physics:density": -1.0}, "physics:density", "at least 0"),
        ({"mat_physics:youngsModulus": -5.0}, "physics:youngsModulus", "at least 0"),
    ],
)
def test_bad_cloth_is_refused_in_one_line(tmp_path, edits, attribute, words):
    path = cloth_stage(tmp_path / "bad.usda", **edits)
    with pytest.raises(UsdInputError) as e:
        add_usd(ModelBuilder(), path)
    message = str(e.value)
    assert "\n" not in message and attribute in message and words in message
    assert "/World/Cloth" in message


def test_a_material_of_another_family_is_refused(tmp_path):
    path = cloth_stage(tmp_path / "vol.usda", material_api="PhysicsVolumeDeformableMaterialAPI")
    with pytest.raises(UsdInputError, match="PhysicsVolumeDeformableMaterialAPI material: a cloth takes a Physics"):
        add_usd(ModelBuilder(), path)


def test_cloth_under_another_engine_is_refused(tmp_path):
    path = cloth_stage(tmp_path / "c.usda", box=False)
    with pytest.raises(NewtonUsdError, match="are simulated by the vbd solver, not by kamino"):
        Simulation.open(path, solver="kamino")  # (mujoco and xpbd couple with vbd: tests/test_coupled.py)


def test_a_vbd_scene_sets_the_solver_and_its_settings(tmp_path):
    path = cloth_stage(tmp_path / "vbd.usda", box=False, scene_api="NewtonVbdSceneAPI",
                       **{"scene_newton:vbd:rigid:jointLinearStiffness": 5.0e4})  # fmt: skip
    builder = ModelBuilder()
    add_usd(builder, path)
    assert builder.vbd_config == {"rigid_joint_linear_ke": pytest.approx(5.0e4)}
    sim = Simulation.open(path, fps=FPS, substeps=1)
    assert type(sim.solver).__name__ == "SolverVBD"
    assert sim.solver.options["rigid_joint_linear_ke"] == pytest.approx(5.0e4)


def block(cells=2, size=0.3):
    """A cube of ``cells``^3 cells, six tetrahedra each (positively oriented): (points, tetrahedra)."""
    n = cells + 1
    grid = np.stack(np.meshgrid(*[np.arange(n)] * 3, indexing="ij"), -1).reshape(-1, 3)
    points = grid * size / cells
    tets = []
    index = lambda i, j, k: (i * n + j) * n + k  # noqa: E731
    for i in range(cells):
        for j in range(cells):
            for k in range(cells):
                c = [index(i + a, j + b, k + d) for a in (0, 1) for b in (0, 1) for d in (0, 1)]
                for t in ((0, 4, 6, 7), (0, 6, 2, 7), (0, 2, 3, 7), (0, 3, 1, 7), (0, 1, 5, 7), (0, 5, 4, 7)):
                    tet = [c[v] for v in t]
                    p = points[tet]
                    if np.dot(np.cross(p[1] - p[0], p[2] - p[0]), p[3] - p[0]) < 0:
                        tet[1], tet[2] = tet[2], tet[1]
                    tets.append(tet)
    return points, np.array(tets)


def soft_stage(path, meters_per_unit=1.0, tets=None):
    """A 0.3 m soft cube (27 points, 48 tetrahedra, E 50 kPa) 0.3 m above a ground plane, in stage units."""
    u = 1.0 / meters_per_unit
    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, "Z")
    UsdGeom.SetStageMetersPerUnit(stage, meters_per_unit)
    UsdPhysics.SetStageKilogramsPerUnit(stage, 1.0)
    scene = UsdPhysics.Scene.Define(stage, "/World/Scene")
    scene.CreateGravityMagnitudeAttr(9.81 * u)
    scene.CreateGravityDirectionAttr(Gf.Vec3f(0, 0, -1))
    ground = UsdGeom.Plane.Define(stage, "/World/Ground")
    ground.CreateAxisAttr("Z")
    UsdPhysics.CollisionAPI.Apply(ground.GetPrim())
    friction = UsdShade.Material.Define(stage, "/World/Friction")
    UsdPhysics.MaterialAPI.Apply(friction.GetPrim()).CreateDynamicFrictionAttr(0.5)
    UsdShade.MaterialBindingAPI.Apply(ground.GetPrim()).Bind(friction, materialPurpose="physics")
    points, block_tets = block()
    mesh = UsdGeom.TetMesh.Define(stage, "/World/Soft")
    mesh.CreatePointsAttr([Gf.Vec3f(*(p * u)) for p in points])
    mesh.CreateTetVertexIndicesAttr([Gf.Vec4i(*map(int, t)) for t in (block_tets if tets is None else tets)])
    mesh.AddTranslateOp().Set(Gf.Vec3d(-0.15 * u, -0.15 * u, 0.3 * u))
    prim = mesh.GetPrim()
    for api in ("PhysicsDeformableBodyAPI", "PhysicsVolumeDeformableSimAPI", "PhysicsCollisionAPI"):
        prim.AddAppliedSchema(api)
    material = UsdShade.Material.Define(stage, "/World/Rubber")
    m = material.GetPrim()
    m.AddAppliedSchema("PhysicsVolumeDeformableMaterialAPI")
    m.CreateAttribute("physics:youngsModulus", Sdf.ValueTypeNames.Float).Set(5.0e4 / u)
    m.CreateAttribute("physics:poissonsRatio", Sdf.ValueTypeNames.Float).Set(0.3)
    m.CreateAttribute("physics:density", Sdf.ValueTypeNames.Float).Set(200.0 / u**3)
    UsdShade.MaterialBindingAPI.Apply(prim)
    prim.CreateRelationship("material:binding:physics").SetTargets([m.GetPath()])
    stage.GetRootLayer().Save()
    return str(path)


def test_a_soft_volume_falls_on_the_ground_as_newton_runs_it(tmp_path):
    path = soft_stage(tmp_path / "soft.usda")
    builder = ModelBuilder()
    add_usd(builder, path)
    model = builder.finalize("cpu")
    assert (model.particle_count, model.tet_count) == (27, 48)
    np.testing.assert_allclose(model.particle_mass.numpy().sum(), 200.0 * 0.3**3, rtol=1e-5)
    volume = model.volumes[0]
    assert volume.mu == pytest.approx(5.0e4 / 2.6) and volume.lam == pytest.approx(5.0e4 * 0.3 / (1.3 * 0.4))
    frames = 8
    sim, ours = our_run(path, frames)
    theirs = newton_run(path, frames)
    # (fallen onto its particles' 0.1 m contact radius: Newton's default, which the proposal does not author)
    assert np.all(np.isfinite(ours)) and 0.09 < ours[:, 2].min() < 0.12
    np.testing.assert_allclose(ours, theirs, atol=1e-5)  # (2e-7 m seen)


def test_an_inverted_tetrahedron_is_refused(tmp_path):
    _, tets = block()
    tets[5, [1, 2]] = tets[5, [2, 1]]
    with pytest.raises(UsdInputError, match=r"tetrahedron 5 .* is inverted") as e:
        add_usd(ModelBuilder(), soft_stage(tmp_path / "inv.usda", tets=tets))
    assert "/World/Soft" in str(e.value) and "tetVertexIndices" in str(e.value)


def soft_block_with_a_box(path, meters_per_unit=1.0):
    """:func:`soft_stage` with a 0.5 kg, 0.1 m rigid box dropped onto the soft cube from 0.75 m."""
    u = 1.0 / meters_per_unit
    soft_stage(path, meters_per_unit)
    stage = Usd.Stage.Open(str(path))
    box = UsdGeom.Cube.Define(stage, "/World/Box")
    box.CreateSizeAttr(0.1 * u)
    box.AddTranslateOp().Set(Gf.Vec3d(0, 0, 0.75 * u))
    UsdPhysics.RigidBodyAPI.Apply(box.GetPrim())
    UsdPhysics.CollisionAPI.Apply(box.GetPrim())
    UsdPhysics.MassAPI.Apply(box.GetPrim()).CreateMassAttr(0.5)
    stage.GetRootLayer().Save()
    return str(path)


def test_a_rigid_box_on_a_soft_block_in_centimetres(tmp_path):
    """VBD steps the rigid box with the soft block (before, the block was dropped without a word): the box lands on
    it as in Newton's own loop, and the same stage in centimetres writes the metre stage's points and pose x100."""
    frames = 10
    m_path = soft_block_with_a_box(tmp_path / "m.usda")
    m_sim, ours = our_run(m_path, frames)
    theirs = newton_run(m_path, frames)
    np.testing.assert_allclose(ours, theirs, atol=1e-3)  # (3.5e-4 m seen: the box's contacts with the block)
    box = m_sim.physics.state.body_q.numpy()[0]
    assert 0.55 < box[2] < 0.65  # (fallen 0.15 m onto the block, not through it)
    cm_sim, _ = our_run(soft_block_with_a_box(tmp_path / "cm.usda", 0.01), frames)
    for name, path in (("points", "/World/Soft"), ("xformOp:translate:physics", "/World/Box")):
        written = []
        for sim in (m_sim, cm_sim):
            attr = sim.stage.GetPrimAtPath(path).GetAttribute(name)
            written.append(np.asarray(attr.Get(attr.GetTimeSamples()[-1]), dtype=np.float64))
        np.testing.assert_allclose(written[1], 100.0 * written[0], rtol=1e-4, atol=1e-3)


@pytest.mark.soak
@pytest.mark.parametrize(
    ("stage", "simulated"),
    [
        (
            "deformables_mixed.usda",
            ["/World/Cloth/sim", "/World/SoftA/sim", "/World/SoftB/sim", "/World/CableA/sim", "/World/CableB/sim"],
        ),
        ("tetmesh_with_material.usda", ["/World/SoftBody"]),
        ("tetmesh_multi.usda", ["/Root/TetA", "/Root/TetB"]),
        ("tetmesh_simple.usda", ["/SimpleTetMesh"]),
        (SAMPLES / "cloth_over_box.usda", ["/World/Cloth/sim"]),
        (SAMPLES / "box_on_soft_block.usda", ["/World/Soft"]),
    ],
)
def test_newtons_deformable_stages_run(tmp_path, stage, simulated):
    """Newton 1.8's own deformable stages, and our samples, run under usdsim: every simulated prim's points written,
    finite and moving (the cables of deformables_mixed: their curves' points)."""
    source = tmp_path / Path(stage).name
    shutil.copy(NEWTON_ASSETS / stage, source)
    out = tmp_path / "out.usda"
    assert main(["run", str(source), "-q", "-n", "10", "-o", str(out)]) == 0
    result = Usd.Stage.Open(str(out))
    for path in simulated:
        attr = result.GetPrimAtPath(path).GetAttribute("points")
        times = attr.GetTimeSamples()
        assert len(times) >= 10, path
        first, last = (np.asarray(attr.Get(t), dtype=np.float64) for t in (times[0], times[-1]))
        assert np.all(np.isfinite(last)) and np.abs(last - first).max() > 1e-3, path


def test_a_vbd_scene_of_rigid_bodies_only_runs_vbd_with_its_settings(tmp_path):
    stage = Usd.Stage.CreateNew(str(tmp_path / "rigid.usda"))
    UsdGeom.SetStageUpAxis(stage, "Z")
    scene = UsdPhysics.Scene.Define(stage, "/World/Scene").GetPrim()
    scene.AddAppliedSchema("NewtonVbdSceneAPI")
    scene.CreateAttribute("newton:vbd:rigid:contactHistory", Sdf.ValueTypeNames.Bool).Set(True)
    cube = UsdGeom.Cube.Define(stage, "/World/Box")
    cube.CreateSizeAttr(0.1)
    UsdPhysics.RigidBodyAPI.Apply(cube.GetPrim())
    UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
    stage.GetRootLayer().Save()
    sim = Simulation.open(str(tmp_path / "rigid.usda"), fps=FPS, substeps=2)
    assert type(sim.solver).__name__ == "SolverVBD" and sim.solver.options["rigid_contact_history"] is True
    sim.step_frame()
    assert sim.physics.state.body_q.numpy()[0, 2] < 0.0  # (falls: no ground)


def test_cloth_of_a_second_scene_runs_in_its_own_engine(tmp_path):
    """A cloth owned by the stage's second PhysicsScene is opened as that scene's (vbd), beside the first scene's
    rigid box (mujoco): each its own engine."""
    path = cloth_stage(tmp_path / "two.usda", box=False)
    stage = Usd.Stage.Open(path)
    UsdPhysics.Scene.Define(stage, "/World/ClothScene")
    stage.GetPrimAtPath("/World/Cloth").CreateRelationship("physics:simulationOwner").SetTargets(["/World/ClothScene"])
    cube = UsdGeom.Cube.Define(stage, "/World/Box")
    cube.CreateSizeAttr(0.1)
    UsdPhysics.RigidBodyAPI.Apply(cube.GetPrim())
    UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
    stage.GetRootLayer().Save()
    sim = Simulation.open(path, fps=FPS, substeps=2)
    engines = sorted(type(s.solver).__name__ for s in (sim, *sim.scenes))
    assert engines == ["SolverMuJoCo", "SolverVBD"]
    sim.step_frame()
    cloth = next(s for s in (sim, *sim.scenes) if type(s.solver).__name__ == "SolverVBD")
    assert cloth.physics.state.particle_q.numpy()[:, 2].max() < 0.5  # (falling)


def test_a_reset_starts_the_cloth_over(tmp_path):
    path = cloth_stage(tmp_path / "reset.usda")
    sim, first = our_run(path, 3)
    sim.reset()
    np.testing.assert_array_equal(sim.physics.state.particle_q.numpy(), sim.model.particle_q.numpy())
    attr = sim.stage.GetPrimAtPath("/World/Cloth/sim").GetAttribute("points")
    assert attr.GetNumTimeSamples() == 0  # (the authored points shown again)
    for _ in range(3):
        sim.step_frame()
    np.testing.assert_allclose(sim.physics.state.particle_q.numpy(), first, atol=1e-6)  # (the run repeats)


def test_a_flung_cloth_ends_the_run_naming_its_prim(tmp_path):
    path = cloth_stage(tmp_path / "flung.usda", box=False)
    stage = Usd.Stage.Open(path)
    mesh = UsdGeom.Mesh(stage.GetPrimAtPath("/World/Cloth/sim"))
    mesh.CreateVelocitiesAttr([Gf.Vec3f(0, 0, 1.0e3)] * (SIDE * SIDE))  # (33 m a frame)
    stage.GetRootLayer().Save()
    sim = Simulation.open(path, fps=FPS, substeps=SUBSTEPS, max_distance=10.0)
    with pytest.raises(SimulationError, match="/World/Cloth/sim"):
        sim.step_frame()


def test_thicknesses_without_an_element_type_are_not_read_as_newton(tmp_path, caplog):
    path = cloth_stage(tmp_path / "untyped.usda")
    stage = Usd.Stage.Open(path)
    stage.GetPrimAtPath("/World/Cloth/sim").RemoveProperty("physics:thicknesses:elementType")
    stage.GetRootLayer().Save()
    builder = ModelBuilder()
    with caplog.at_level("WARNING", logger="newton_usd"):
        add_usd(builder, path)
    assert "physics:thicknesses without physics:thicknesses:elementType" in caplog.text
    model = builder.finalize("cpu")
    np.testing.assert_allclose(model.particle_radius.numpy(), 0.0005, rtol=1e-5)  # (the 1 mm fallback, halved)
    newton_builder = newton.ModelBuilder()
    newton_builder.add_usd(path)
    np.testing.assert_allclose(model.particle_mass.numpy(), newton_builder.particle_mass, rtol=1e-5)


def test_check_names_the_engine_and_counts_the_deformables(tmp_path, capsys):
    path = soft_stage(tmp_path / "soft.usda")
    assert main(["check", path]) == 0
    out = capsys.readouterr().out
    assert "27 particles of 1 prim (0 triangles, 48 tetrahedra); vbd solver (SolverVBD)" in out
    assert main(["check", path, "--solver", "featherstone"]) == 2  # (mujoco, xpbd: coupled, tests/test_coupled.py)
    err = capsys.readouterr().err
    assert "/World/Soft: deformable bodies (cloth, soft volumes) are simulated by the vbd solver" in err


def test_cloth_masses_as_newton_reads_them(tmp_path):
    """The body prim's physics:mass scales the cloth's mass to it; physics:masses (constant: the total) wins over it."""
    path = cloth_stage(tmp_path / "mass.usda")
    stage = Usd.Stage.Open(path)
    stage.GetPrimAtPath("/World/Cloth").CreateAttribute("physics:mass", Sdf.ValueTypeNames.Float).Set(2.0)
    stage.GetRootLayer().Save()
    builder = ModelBuilder()
    add_usd(builder, path)
    newton_builder = newton.ModelBuilder()
    newton_builder.add_usd(path)
    assert sum(builder.particle_mass) == pytest.approx(2.0)
    np.testing.assert_allclose(builder.particle_mass, newton_builder.particle_mass, rtol=1e-5)
    mesh = stage.GetPrimAtPath("/World/Cloth/sim")
    mesh.CreateAttribute("physics:masses", Sdf.ValueTypeNames.FloatArray).Set([0.5])
    mesh.CreateAttribute("physics:masses:elementType", Sdf.ValueTypeNames.Token).Set("constant")
    stage.GetRootLayer().Save()
    builder = ModelBuilder()
    add_usd(builder, path)
    newton_builder = newton.ModelBuilder()
    newton_builder.add_usd(path)
    assert sum(builder.particle_mass) == pytest.approx(0.5)
    np.testing.assert_allclose(builder.particle_mass, newton_builder.particle_mass, rtol=1e-5)
