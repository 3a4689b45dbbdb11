"""Granular matter: Points prims of an MPM scene imported as grains, run under Newton's implicit MPM (the
implicit_mpm engine), written back onto their points, checked for blow-ups, and bad input refused in one line."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import newton
import numpy as np
import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade, Vt

from newton_usd.core.builder import ModelBuilder
from newton_usd.errors import NewtonUsdError, SimulationError, UsdInputError
from newton_usd.sim import Simulation

from stages import scaled_stage

NEWTON = Path(importlib.util.find_spec("newton").origin).parent
FPS, SUBSTEPS, FRAMES = 30, 2, 8
SPACING = 0.05  # m between grains, and their width
VOXEL = 0.1  # m: the MPM grid's cell


def sand_stage(path, meters_per_unit=1.0, side=6, layers=5, owner_api="NewtonMPMSceneAPI", **edits):
    """A block of ``side`` x ``side`` x ``layers`` grains on a ground plane, owned by an MPM scene, authored in stage
    units of ``meters_per_unit`` (the same block in SI at any unit). ``edits``: attribute overrides of the points
    prim (name -> value) or the scene's (``scene_<name>``)."""
    stage, scene, u = scaled_stage(path, meters_per_unit, FPS)  # (u: a meter in stage units)
    scene_prim = scene.GetPrim()
    scene_prim.AddAppliedSchema(owner_api)
    scene_prim.CreateAttribute("newton:mpm:voxelSize", Sdf.ValueTypeNames.Float).Set(VOXEL * u)
    scene_prim.CreateAttribute("newton:maxSolverIterations", Sdf.ValueTypeNames.Int).Set(50)
    ground = UsdGeom.Plane.Define(stage, "/World/Ground")
    ground.CreateAxisAttr("Z")
    UsdPhysics.CollisionAPI.Apply(ground.GetPrim())
    floor = UsdShade.Material.Define(stage, "/World/Floor")  # (its friction authored: importers' defaults differ)
    UsdPhysics.MaterialAPI.Apply(floor.GetPrim()).CreateDynamicFrictionAttr(0.5)
    UsdPhysics.MaterialAPI(floor.GetPrim()).CreateStaticFrictionAttr(0.5)
    UsdShade.MaterialBindingAPI.Apply(ground.GetPrim()).Bind(floor, materialPurpose="physics")
    material = UsdShade.Material.Define(stage, "/World/Sand")
    m = material.GetPrim()
    m.AddAppliedSchema("NewtonMPMMaterialAPI")
    m.CreateAttribute("physics:density", Sdf.ValueTypeNames.Float).Set(1500.0 / u**3)  # (kg per stage unit cubed)
    m.CreateAttribute("newton:mpm:youngsModulus", Sdf.ValueTypeNames.Float).Set(1.0e6 / u)  # (stage pressure)
    m.CreateAttribute("newton:mpm:internalFriction", Sdf.ValueTypeNames.Float).Set(0.5)
    points = UsdGeom.Points.Define(stage, "/World/Pile")
    prim = points.GetPrim()
    for api in ("MaterialBindingAPI", "NewtonPointsDeformableSimAPI", "PhysicsDeformableBodyAPI"):
        prim.AddAppliedSchema(api)
    half = 0.5 * (side - 1) * SPACING
    grid = np.array(
        [(i * SPACING - half, j * SPACING - half, (k + 0.5) * SPACING) for k in range(layers) for j in range(side)
         for i in range(side)]
    )  # fmt: skip
    points.CreatePointsAttr(Vt.Vec3fArray.FromNumpy((grid * u).astype(np.float32)))
    points.CreateWidthsAttr(Vt.FloatArray([SPACING * u] * len(grid)))
    prim.CreateRelationship("material:binding:physics").SetTargets([Sdf.Path("/World/Sand")])
    prim.CreateRelationship("physics:simulationOwner").SetTargets([scene.GetPath()])
    for name, value in edits.items():
        target = scene_prim if name.startswith("scene_") else prim
        name = name.removeprefix("scene_")
        attr = target.GetAttribute(name)
        if not attr:
            kind = Sdf.ValueTypeNames.Token if isinstance(value, str) else Sdf.ValueTypeNames.FloatArray
            if name == "velocities":
                kind = Sdf.ValueTypeNames.Vector3fArray
            attr = target.CreateAttribute(name, kind)
        attr.Set(value)
    stage.Save()
    return path


def pile_shape(q) -> tuple[float, float]:
    """(m: the pile's height, its 95th percentile of z; m: its spread, the RMS distance from its axis)."""
    q = np.asarray(q, dtype=np.float64)
    return float(np.percentile(q[:, 2], 95)), float(np.sqrt(np.mean(q[:, 0] ** 2 + q[:, 1] ** 2)))


def newton_own_run(path, steps: int, dt: float) -> np.ndarray:
    """Newton 1.8's own loop on the stage: its add_usd, SolverImplicitMPM from the scene, state swap and
    project_outside each step (as its examples)."""
    builder = newton.ModelBuilder()
    newton.solvers.SolverImplicitMPM.register_custom_attributes(builder)
    stage = Usd.Stage.Open(str(path))
    result = builder.add_usd(stage)
    config = newton.solvers.SolverImplicitMPM.Config.create_from_usd(stage.GetPrimAtPath(result["particle_scene_path"]))
    model = builder.finalize(device="cpu")
    solver = newton.solvers.SolverImplicitMPM(model, config)
    s0, s1 = model.state(), model.state()
    for _ in range(steps):
        solver.step(s0, s1, None, None, dt)
        solver.project_outside(s1, s1, dt)
        s0, s1 = s1, s0
    return s0.particle_q.numpy()


def our_run(path, frames=FRAMES, **kw) -> Simulation:
    sim = Simulation.open(str(path), fps=FPS, substeps=SUBSTEPS, device="cpu", **kw)
    sim.run(frames)
    return sim


def test_a_sand_pile_settles_as_under_newtons_own_loop(tmp_path):
    src = sand_stage(tmp_path / "pile.usda")
    sim = our_run(src)
    assert sim.solver.name == "implicit_mpm"  # (chosen by the scene's NewtonMPMSceneAPI)
    assert sim.solver.config.max_iterations == 50 and math.isclose(sim.solver.voxel_size, VOXEL, rel_tol=1e-6)
    ours = sim.state.particle_q.numpy()
    theirs = newton_own_run(src, FRAMES * SUBSTEPS, 1.0 / (FPS * SUBSTEPS))
    start = sim.model.particle_q.numpy()
    h0, s0 = pile_shape(start)
    h, s = pile_shape(ours)
    h_n, s_n = pile_shape(theirs)
    assert np.all(np.isfinite(ours))
    assert h < h0 - 0.01 and s > s0 + 0.005  # (it slumps and spreads: the grains moved)
    assert abs(h - h_n) <= 0.03 * h_n and abs(s - s_n) <= 0.03 * s_n, (h, h_n, s, s_n)
    sim.close()


def test_points_are_written_in_the_prims_units(tmp_path):
    """The points' time samples of a stage in centimetres are the metre stage's times 100 (and its velocities)."""
    out = {}
    for name, mpu in (("m", 1.0), ("cm", 0.01)):
        src = sand_stage(tmp_path / f"pile_{name}.usda", meters_per_unit=mpu, side=4, layers=2)
        sim = our_run(src, frames=3)
        attr = sim.stage.GetPrimAtPath("/World/Pile").GetAttribute("points")
        times = attr.GetTimeSamples()
        assert len(times) == 4  # (frame 0 and three frames)
        out[name] = (
            np.array(attr.Get(times[-1])),
            np.array(sim.stage.GetPrimAtPath("/World/Pile").GetAttribute("velocities").Get(times[-1])),
        )
        assert np.abs(out[name][0] - np.array(attr.Get(times[0]))).max() > 1e-3 / mpu  # (they moved)
        sim.close()
    np.testing.assert_allclose(out["cm"][0], 100.0 * out["m"][0], rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(out["cm"][1], 100.0 * out["m"][1], rtol=1e-3, atol=1e-2)


def test_grains_are_imported_as_newton_reads_them():
    """Newton's own test stages: positions, masses, radii and materials as its add_usd makes them (units, a scaled
    parent, per-point material subsets)."""
    for name in ("mpm_two_prims.usda", "mpm_material_subsets.usda"):
        path = NEWTON / "tests" / "assets" / name
        ours = ModelBuilder()
        ours.add_usd(str(path))
        theirs = newton.ModelBuilder()
        newton.solvers.SolverImplicitMPM.register_custom_attributes(theirs)
        theirs.add_usd(str(path))
        np.testing.assert_allclose(ours.particle_q, np.array(theirs.particle_q), rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(ours.particle_qd, np.array(theirs.particle_qd), rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(ours.particle_mass, theirs.particle_mass, rtol=1e-6)
        np.testing.assert_allclose(ours.particle_radius, theirs.particle_radius, rtol=1e-6)
        for key, values in ours.particle_attributes.items():
            attribute = theirs.custom_attributes[key]
            default = float(attribute.default)
            expected = [attribute.values.get(i, default) for i in range(len(values))]
            np.testing.assert_allclose(np.where(np.isnan(values), default, values), expected, rtol=1e-6, err_msg=key)


@pytest.mark.parametrize(
    ("edits", "where", "says"),
    [
        ({"widths": Vt.FloatArray([-0.05] * 8)}, "/World/Pile.widths", "point 0's width is -0.05"),
        ({"physics:masses": Vt.FloatArray([1.0] * 7 + [-1.0])}, "/World/Pile.physics:masses", "point 7's mass is -1"),
        ({"velocities": Vt.Vec3fArray([Gf.Vec3f(0)] * 3)}, "/World/Pile.velocities", "3 values for 8 points"),
        ({"scene_newton:mpm:gridType": "hexagonal"}, "/World/Scene.newton:mpm:gridType", "unknown token 'hexagonal'"),
        ({"scene_newton:mpm:gridShape": "cube"}, "/World/Scene.newton:mpm:gridShape", "unknown attribute"),
        ({"owner_api": "NewtonXpbdSceneAPI"}, "/World/Pile.physics:simulationOwner", "not an MPM scene"),
    ],
)
def test_bad_grains_are_one_line_errors_naming_prim_and_attribute(tmp_path, edits, where, says):
    src = sand_stage(tmp_path / "bad.usda", side=2, layers=2, **edits)
    with pytest.raises(UsdInputError) as e:
        ModelBuilder().add_usd(str(src))
    message = str(e.value)
    assert "\n" not in message and f"{where}: " in message and says in message, message


def test_grains_too_fast_end_the_run_naming_their_prim(tmp_path):
    src = sand_stage(tmp_path / "flung.usda", side=2, layers=2, velocities=Vt.Vec3fArray([Gf.Vec3f(0, 0, 30)] * 8))
    with pytest.raises(SimulationError) as e:
        our_run(src, frames=2, max_speed=20.0)
    assert e.value.label == "/World/Pile" and "m/s, beyond max_speed" in str(e.value)


def test_grains_beside_a_dynamic_body_say_it_is_not_coupled(tmp_path, caplog):
    src = sand_stage(tmp_path / "box.usda", side=2, layers=2)
    stage = Usd.Stage.Open(str(src))
    box = UsdGeom.Cube.Define(stage, "/World/Box")
    box.AddTranslateOp().Set(Gf.Vec3d(1, 0, 1))
    UsdPhysics.CollisionAPI.Apply(box.GetPrim())
    UsdPhysics.RigidBodyAPI.Apply(box.GetPrim())
    stage.Save()
    with caplog.at_level("WARNING", logger="newton_usd"):  # (coupled under xpbd unless asked not to be)
        sim = our_run(src, frames=1, solver_options={"rigid_solver": "none"})
    said = [r.getMessage() for r in caplog.records if "not coupled" in r.getMessage()]
    assert len(said) == 1 and "/World/Box" in said[0]
    sim.close()


def test_grains_under_another_engine_are_refused(tmp_path):
    src = sand_stage(tmp_path / "pile.usda", side=2, layers=2)
    with pytest.raises(
        NewtonUsdError, match=r"/World/Pile: grains .* simulated by the implicit_mpm solver, not by xpbd"
    ):
        Simulation.open(str(src), solver="xpbd", device="cpu")


def test_grains_of_their_own_mpm_scene_run_beside_a_rigid_scene(tmp_path, caplog):
    """A stage whose MPM scene owns the grains and another scene a falling box: both scenes run, the box said once
    as not coupled with the grains."""
    src = sand_stage(tmp_path / "two.usda", side=2, layers=2)
    stage = Usd.Stage.Open(str(src))
    rigid = UsdPhysics.Scene.Define(stage, "/Rigid")
    box = UsdGeom.Cube.Define(stage, "/Box")
    box.CreateSizeAttr(0.2)
    box.AddTranslateOp().Set(Gf.Vec3d(2, 0, 1))
    UsdPhysics.CollisionAPI.Apply(box.GetPrim())
    UsdPhysics.RigidBodyAPI.Apply(box.GetPrim()).CreateSimulationOwnerRel().SetTargets([rigid.GetPath()])
    stage.Save()
    with caplog.at_level("WARNING", logger="newton_usd"):
        sim = our_run(src, frames=2)
    said = [r.getMessage() for r in caplog.records if "not coupled with the grains" in r.getMessage()]
    assert len(said) == 1 and "/Box" in said[0] and "/World/Scene" in said[0], said
    assert sorted([sim.solver.name] + [s.solver.name for s in sim.scenes]) == ["implicit_mpm", "mujoco"]
    pile = sim.stage.GetPrimAtPath("/World/Pile").GetAttribute("points")
    assert len(pile.GetTimeSamples()) == 3
    sim.close()


@pytest.mark.soak
@pytest.mark.parametrize(
    "name",
    ["examples/assets/mpm_sand.usda", "tests/assets/mpm_two_prims.usda", "tests/assets/mpm_material_subsets.usda"],
)
def test_newtons_mpm_stages_run_with_their_points_written(name, tmp_path):
    sim = Simulation.open(str(NEWTON / name), fps=30, substeps=2, device="cpu")
    sim.run(5)
    stage = sim.stage
    for path in sim.model.particle_groups:
        attr = stage.GetPrimAtPath(path).GetAttribute("points")
        times = attr.GetTimeSamples()
        first, last = np.array(attr.Get(times[0])), np.array(attr.Get(times[-1]))
        assert len(times) == 6 and np.all(np.isfinite(last)) and np.abs(last - first).max() > 0, path
    sim.close()


def test_a_reset_and_a_new_solver_keep_the_grains_where_they_belong(tmp_path):
    src = sand_stage(tmp_path / "pile.usda", side=3, layers=2)
    sim = our_run(src, frames=2)
    points = sim.stage.GetPrimAtPath("/World/Pile").GetAttribute("points")
    assert len(points.GetTimeSamples()) == 3
    sim.reset()  # (back to the start: what was written removed)
    assert len(points.GetTimeSamples()) == 0
    np.testing.assert_array_equal(sim.state.particle_q.numpy(), sim.model.particle_q.numpy())
    sim.run(2)
    moved = sim.state.particle_q.numpy().copy()
    assert np.abs(moved - sim.model.particle_q.numpy()).max() > 1e-3
    sim.physics.new_solver()  # (a live edit's new solver goes on from the grains where they are)
    np.testing.assert_array_equal(sim.state.particle_q.numpy(), moved)
    sim.close()


def test_usdsim_check_counts_the_mpm_settings_as_used(tmp_path):
    """The scene's newton:mpm:* settings and the materials' (the prim's and its subsets') are read by the import:
    ``usdsim check`` lists none of them as authored but unused (it listed voxelSize, youngsModulus, ...)."""
    from newton_usd.inspect import unused_attributes  # noqa: PLC0415
    from newton_usd.usd import add_usd  # noqa: PLC0415

    sand_stage(tmp_path / "pile.usda")
    for path in (tmp_path / "pile.usda", NEWTON / "tests" / "assets" / "mpm_material_subsets.usda"):
        unused = unused_attributes(add_usd(ModelBuilder(), str(path)))
        assert not [name for name in unused if name.startswith("newton:")], (path, unused)


SAND_OF_THE_SCHEMAS = """#usda 1.0
(
    defaultPrim = "World"
    metersPerUnit = 1
    kilogramsPerUnit = 1
    upAxis = "Z"
)
def Xform "World"
{
    def PhysicsScene "Scene" (apiSchemas = ["NewtonMPMSceneAPI"])
    {
        vector3f physics:gravityDirection = (0, 0, -1)
        float physics:gravityMagnitude = 9.81
        uniform int newton:maxSolverIterations = 40
        uniform float newton:mpm:voxelSize = 0.05
        uniform token[] newton:mpm:rheologySolvers = ["cg", "gs"]
    }
    def Material "Loose" (apiSchemas = ["NewtonMPMMaterialAPI"])
    {
        float physics:density = 1500
        float newton:mpm:internalFriction = 0.6
        float newton:mpm:youngsModulus = 5000000
    }
    def Material "Packed" (apiSchemas = ["NewtonMPMMaterialAPI"])
    {
        float physics:density = 2000
        float newton:mpm:internalFriction = 0.9
        float newton:mpm:elasticDamping = 1000
        float newton:mpm:initialPlasticVolumeStrain = 0.95
    }
    def Points "Grains" (
        apiSchemas = ["MaterialBindingAPI", "NewtonPointsDeformableSimAPI", "PhysicsDeformableBodyAPI"]
    )
    {
        point3f[] points = [(0, 0, 1), (0.05, 0, 1), (0, 0.05, 1), (0.05, 0.05, 1)]
        float[] widths = [0.05, 0.05, 0.05, 0.05]
        float[] physics:masses = [0.1, 0.1, 0.3, 0.3]
        int64[] ids = [10, 11, 12, 13]
        rel physics:simulationOwner = </World/Scene>
        rel material:binding:physics = </World/Loose>
        uniform token subsetFamily:materialBind:familyType = "nonOverlapping"
        def GeomSubset "PackedHalf" (apiSchemas = ["MaterialBindingAPI"])
        {
            uniform token elementType = "point"
            uniform token familyName = "materialBind"
            int[] indices = [2, 3]
            rel material:binding:physics = </World/Packed>
        }
    }
}
"""


def test_a_stage_like_the_schemas_own_sand_runs(tmp_path):
    """newton-usd-schemas 0.6's test asset ``sand.usda`` names its rheology solvers by the solver's short names
    ("cg", "gs": not among the schema's allowedTokens, refused by Newton 1.8's Config.create_from_usd): a stage of
    the same shape (four grains, masses per point, a second material on a point subset) imports, the short names
    taken as the long ones, and its grains fall, written back."""
    src = tmp_path / "sand.usda"
    src.write_text(SAND_OF_THE_SCHEMAS)
    builder = ModelBuilder()
    builder.add_usd(str(src))
    assert builder.mpm_config["solver"] == ("cg", "gauss-seidel")
    np.testing.assert_allclose(builder.particle_mass, [0.1, 0.1, 0.3, 0.3], rtol=1e-6)
    friction = builder.particle_attributes["mpm:friction"]
    np.testing.assert_allclose(friction, [0.6, 0.6, 0.9, 0.9], rtol=1e-6)
    sim = Simulation.open(str(src), fps=FPS, substeps=SUBSTEPS, device="cpu")
    sim.run(2)
    points = sim.stage.GetPrimAtPath("/World/Grains").GetAttribute("points")
    last = np.array(points.Get(points.GetTimeSamples()[-1]))
    assert np.all(np.isfinite(last)) and np.all(last[:, 2] < 1.0)
    sim.close()
