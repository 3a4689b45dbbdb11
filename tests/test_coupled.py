"""Rigid bodies under MuJoCo and cloth under VBD in one scene, coupled through Newton's proxy coupling (the
mujoco_vbd engine, solvers/newton/coupled.py): chosen where a scene with deformables asks for mujoco, run as Newton
1.8's own coupled loop runs the same stage, and the rigid bodies feel the cloth."""

from __future__ import annotations

from pathlib import Path

import newton
import numpy as np
import pytest
from newton.solvers.experimental.coupled import SolverCoupledProxy
from newton_loops import newton_loop
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade

from newton_usd.cli import main
from newton_usd.errors import NewtonUsdError
from newton_usd.sim import Simulation

FPS, SUBSTEPS, ITERATIONS, FRAMES = 30, 4, 10, 15
BOX = 0.25  # m: the box's edge
HALF_GAP = 0.2  # m: half the gap between the two tables


def arm_and_cloth(path, *, solver="mujoco", across=19, along=7, cloth=True, scene_api=None, box_mass=2.0):
    """A cloth (``across`` x ``along`` points, 1.8 x 0.6 m, 1 cm thick) laid across two tables 0.4 m high with a
    0.4 m gap between them, a 0.25 m box of ``box_mass`` kg dropped from 0.7 m into the gap, and a two-link arm
    (0.2 m links of 0.3 kg, hinged about Y, the first to the world at (-0.3, 0.25, 0.75)) started level, swinging
    down onto the cloth on the first table. ``solver``: the scene's ``newton:usd:solver`` (None: not authored).
    (A lighter box, 0.2 or 0.5 kg, is flung up off this cloth at 4 steps a frame under the lagged coupling, in
    Newton's own loop too; at 8 steps a frame 0.5 kg is held, sample_stages/deformables/arm_and_cloth.usda.)"""
    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, "Z")
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdPhysics.SetStageKilogramsPerUnit(stage, 1.0)
    stage.SetTimeCodesPerSecond(FPS)
    stage.SetDefaultPrim(UsdGeom.Xform.Define(stage, "/World").GetPrim())
    scene = UsdPhysics.Scene.Define(stage, "/World/Scene")
    scene.CreateGravityMagnitudeAttr(9.81)
    scene.CreateGravityDirectionAttr(Gf.Vec3f(0, 0, -1))
    if solver:
        scene.GetPrim().CreateAttribute("newton:usd:solver", Sdf.ValueTypeNames.Token).Set(solver)
    if scene_api:
        scene.GetPrim().AddAppliedSchema(scene_api)
    friction = UsdShade.Material.Define(stage, "/World/Friction")
    UsdPhysics.MaterialAPI.Apply(friction.GetPrim()).CreateDynamicFrictionAttr(1.0)
    UsdPhysics.MaterialAPI(friction.GetPrim()).CreateStaticFrictionAttr(1.0)

    def collider(prim):
        UsdPhysics.CollisionAPI.Apply(prim)
        UsdShade.MaterialBindingAPI.Apply(prim).Bind(friction, materialPurpose="physics")

    ground = UsdGeom.Plane.Define(stage, "/World/Ground")
    ground.CreateAxisAttr("Z")
    collider(ground.GetPrim())
    for name, x in (("TableA", -0.55), ("TableB", 0.55)):
        table = UsdGeom.Cube.Define(stage, f"/World/{name}")
        table.CreateSizeAttr(1.0)
        table.AddTranslateOp().Set(Gf.Vec3d(x, 0, 0.2))
        table.AddScaleOp().Set(Gf.Vec3f(0.7, 0.8, 0.4))
        collider(table.GetPrim())
    if cloth:
        UsdGeom.Xform.Define(stage, "/World/Cloth").GetPrim().AddAppliedSchema("PhysicsDeformableBodyAPI")
        mesh = UsdGeom.Mesh.Define(stage, "/World/Cloth/sim")
        xs = (np.arange(across) / (across - 1) - 0.5) * 1.8
        ys = (np.arange(along) / (along - 1) - 0.5) * 0.6
        mesh.CreatePointsAttr([Gf.Vec3f(float(x), float(y), 0.0) for y in ys for x in xs])
        quads = [(j * across + i, j * across + i + 1, (j + 1) * across + i + 1, (j + 1) * across + i)
                 for j in range(along - 1) for i in range(across - 1)]  # fmt: skip
        mesh.CreateFaceVertexCountsAttr([4] * len(quads))
        mesh.CreateFaceVertexIndicesAttr([i for q in quads for i in q])
        mesh.AddTranslateOp().Set(Gf.Vec3d(0, 0, 0.42))
        prim = mesh.GetPrim()
        for api in ("PhysicsSurfaceDeformableSimAPI", "PhysicsCollisionAPI", "MaterialBindingAPI"):
            prim.AddAppliedSchema(api)
        prim.CreateAttribute("physics:thicknesses", Sdf.ValueTypeNames.FloatArray).Set([0.01])
        prim.CreateAttribute("physics:thicknesses:elementType", Sdf.ValueTypeNames.Token).Set("constant")
        material = UsdShade.Material.Define(stage, "/World/ClothMaterial").GetPrim()
        material.AddAppliedSchema("PhysicsSurfaceDeformableMaterialAPI")
        for name, value in (("surfaceStretchStiffness", 5000.0), ("surfaceBendStiffness", 1e-3), ("density", 100.0)):
            material.CreateAttribute(f"physics:{name}", Sdf.ValueTypeNames.Float).Set(value)
        prim.CreateRelationship("material:binding:physics").SetTargets([material.GetPath()])
    box = UsdGeom.Cube.Define(stage, "/World/Box")
    box.CreateSizeAttr(BOX)
    box.AddTranslateOp().Set(Gf.Vec3d(0, 0, 0.7))
    UsdPhysics.RigidBodyAPI.Apply(box.GetPrim())
    UsdPhysics.MassAPI.Apply(box.GetPrim()).CreateMassAttr(box_mass)
    collider(box.GetPrim())
    UsdPhysics.ArticulationRootAPI.Apply(UsdGeom.Xform.Define(stage, "/World/Arm").GetPrim())
    pivot, length, parent = np.array([-0.3, 0.25, 0.75]), 0.2, None
    for k in range(2):
        link = UsdGeom.Xform.Define(stage, f"/World/Arm/Link{k}")
        link.AddTranslateOp().Set(Gf.Vec3d(*(pivot + [length * (k + 0.5), 0, 0])))
        UsdPhysics.RigidBodyAPI.Apply(link.GetPrim())
        UsdPhysics.MassAPI.Apply(link.GetPrim()).CreateMassAttr(0.3)
        geom = UsdGeom.Cube.Define(stage, f"/World/Arm/Link{k}/geom")
        geom.CreateSizeAttr(1.0)
        geom.AddScaleOp().Set(Gf.Vec3f(length, 0.04, 0.04))
        collider(geom.GetPrim())
        hinge = UsdPhysics.RevoluteJoint.Define(stage, f"/World/Arm/Joint{k}")
        if parent is not None:
            hinge.CreateBody0Rel().SetTargets([parent])
        hinge.CreateLocalPos0Attr(Gf.Vec3f(*pivot) if parent is None else Gf.Vec3f(length / 2, 0, 0))
        hinge.CreateBody1Rel().SetTargets([link.GetPath()])
        hinge.CreateLocalPos1Attr(Gf.Vec3f(-length / 2, 0, 0))
        hinge.CreateAxisAttr("Y")
        parent = link.GetPath()
    stage.GetRootLayer().Save()
    return str(path)


def newton_coupled_run(path, frames=FRAMES, rigid="mujoco"):
    """Newton 1.8's own coupled loop on the stage, as its example_mujoco_vbd_coupled_solver builds it: add_usd,
    SolverCoupledProxy of SolverMuJoCo (C MuJoCo: use_mujoco_cpu, its own contacts) owning the bodies and joints and
    SolverVBD owning the particles, the bodies VBD's proxies (lagged, a collision pipeline on VBD's view), one
    relaxation pass; the pipeline's collide before each step, the same step and iterations (``rigid`` "xpbd":
    SolverXPBD instead of SolverMuJoCo, its contacts the pipeline's). Body poses by label, particle positions."""
    nb = newton.ModelBuilder()
    nb.add_usd(path)
    nb.color(include_bending=True)
    model = nb.finalize(device="cpu")
    bodies = list(range(model.body_count))
    solver = SolverCoupledProxy(
        model=model,
        entries=[
            SolverCoupledProxy.Entry(
                name="rigid",
                solver=(lambda v: newton.solvers.SolverMuJoCo(model=v, use_mujoco_cpu=True))
                if rigid == "mujoco"
                else (lambda v: newton.solvers.SolverXPBD(model=v)),
                bodies=bodies,
                joints=list(range(model.joint_count)),
            ),
            SolverCoupledProxy.Entry(
                name="vbd",
                solver=lambda v: newton.solvers.SolverVBD(model=v, iterations=ITERATIONS),
                particles=list(range(model.particle_count)),
            ),
        ],
        coupling=SolverCoupledProxy.Config(
            proxies=[
                SolverCoupledProxy.Proxy(
                    source="rigid",
                    destination="vbd",
                    bodies=bodies,
                    collision_pipeline=lambda v: newton.CollisionPipeline(v),
                    collide_interval=1,
                )
            ],
            iterations=1,
        ),
    )
    s0 = newton_loop(model, solver, frames * SUBSTEPS, 1.0 / (FPS * SUBSTEPS), fk=True)
    return dict(zip(model.body_label, s0.body_q.numpy(), strict=True)), s0.particle_q.numpy()


def our_run(path, frames=FRAMES, **kw):
    sim = Simulation.open(path, fps=FPS, substeps=SUBSTEPS, solver_options={"iterations": ITERATIONS}, **kw)
    for _ in range(frames):
        sim.step_frame()
    poses = dict(zip(sim.model.body_label, sim.physics.state.body_q.numpy(), strict=True))
    points = sim.physics.state.particle_q.numpy() if sim.model.particle_count else None
    return sim, poses, points


@pytest.fixture(scope="module")
def coupled(tmp_path_factory):
    """The stage, and our run of it (the scene asks for mujoco)."""
    path = arm_and_cloth(tmp_path_factory.mktemp("coupled") / "arm_and_cloth.usda")
    return (path, *our_run(path))


def test_a_robot_and_cloth_run_coupled_as_newton_runs_them(coupled):
    path, sim, poses, points = coupled
    assert type(sim.solver).__name__ == "SolverMuJoCoVBD"
    assert type(sim.solver.newton_solver).__name__ == "SolverCoupledProxy"
    their_poses, their_points = newton_coupled_run(path)
    assert sorted(poses) == sorted(their_poses) == ["/World/Arm/Link0", "/World/Arm/Link1", "/World/Box"]
    for label, pose in poses.items():
        np.testing.assert_allclose(pose[:3], their_poses[label][:3], atol=1e-4, err_msg=label)  # (0 m seen)
    np.testing.assert_allclose(points, their_points, atol=1e-4)


def test_asked_for_xpbd_it_runs_xpbd_coupled_as_newton_does(coupled):
    """Asked for xpbd, the same stage runs XPBD coupled with VBD, as Newton's own loop with SolverXPBD; the box is
    held as under MuJoCo."""
    path = coupled[0]
    sim, poses, points = our_run(path, solver="xpbd")
    assert type(sim.solver).__name__ == "SolverXPBDVBD"
    their_poses, their_points = newton_coupled_run(path, rigid="xpbd")
    for label, pose in poses.items():
        np.testing.assert_allclose(pose[:3], their_poses[label][:3], atol=1e-4, err_msg=label)
    np.testing.assert_allclose(points, their_points, atol=1e-4)
    assert poses["/World/Box"][2] - BOX / 2 > 0.08  # (held: 0.15 m seen)


def test_the_rigid_bodies_feel_the_cloth(coupled, tmp_path):
    """The box falls into the cloth hanging between the tables and is held above the floor; without the cloth (its
    prim deactivated, the same stage under mujoco) it lands on the floor."""
    _, sim, poses, points = coupled
    box = poses["/World/Box"][2] - BOX / 2  # (its bottom)
    in_gap = np.abs(points[:, 0]) < HALF_GAP
    assert box > 0.08  # (held: 0.18 m seen)
    assert 0.05 < points[in_gap, 2].min() < 0.3  # (the cloth sags under it, off the floor: 0.09 m)
    _, alone, _ = our_run(arm_and_cloth(tmp_path / "bare.usda", cloth=False))
    assert alone["/World/Box"][2] - BOX / 2 == pytest.approx(0.0, abs=5e-3)  # (on the floor)


def test_poses_and_points_are_written_back(coupled):
    _, sim, poses, points = coupled
    stage = sim.stage
    attr = stage.GetPrimAtPath("/World/Cloth/sim").GetAttribute("points")
    times = attr.GetTimeSamples()
    assert len(times) >= FRAMES
    local = points - [0.0, 0.0, 0.42]  # (in the mesh's own space: it is translated 0.42 m up)
    np.testing.assert_allclose(np.asarray(attr.Get(times[-1])), local, atol=1e-5)
    box = UsdGeom.Xformable(stage.GetPrimAtPath("/World/Box")).ComputeLocalToWorldTransform(times[-1])
    np.testing.assert_allclose(np.asarray(box.ExtractTranslation()), poses["/World/Box"][:3], atol=1e-5)


@pytest.mark.parametrize("solver", ["mujoco", "xpbd"])
def test_a_reset_starts_the_coupled_run_over(tmp_path, solver):
    """Newton's coupled solver is reset with the simulation (its entries, the lagged forces): the run repeats."""
    sim, poses, points = our_run(arm_and_cloth(tmp_path / "r.usda"), 6, solver=solver)  # (0.05 m apart unreset)
    sim.reset()
    for _ in range(6):
        sim.step_frame()
    np.testing.assert_array_equal(sim.physics.state.particle_q.numpy(), points)
    for label, pose in zip(sim.model.body_label, sim.physics.state.body_q.numpy(), strict=True):
        np.testing.assert_array_equal(pose, poses[label])


def test_a_driven_arm_holds_its_targets_as_under_mujoco(tmp_path):
    """The robot's joint drives (UsdPhysics DriveAPI: the first joint to -30 deg, the second to 0) reach MuJoCo
    through the coupling: its joint angles as under the mujoco engine on the stage without the cloth."""
    path = arm_and_cloth(tmp_path / "driven.usda", across=4, along=3)
    stage = Usd.Stage.Open(path)
    for k, target in ((0, -30.0), (1, 0.0)):
        drive = UsdPhysics.DriveAPI.Apply(stage.GetPrimAtPath(f"/World/Arm/Joint{k}"), "angular")
        drive.CreateStiffnessAttr(50.0)
        drive.CreateDampingAttr(5.0)
        drive.CreateTargetPositionAttr(target)
    stage.GetRootLayer().Save()
    angles = {}
    for cloth in (True, False):
        stage.GetPrimAtPath("/World/Cloth").SetActive(cloth)
        stage.GetRootLayer().Save()
        sim = Simulation.open(path, fps=FPS, substeps=SUBSTEPS)
        assert type(sim.solver).__name__ == ("SolverMuJoCoVBD" if cloth else "SolverMuJoCo")
        for _ in range(20):
            sim.step_frame()
        start = sim.model.joint_q_start.numpy()
        joints = [sim.model.joint_label.index(f"/World/Arm/Joint{k}") for k in (0, 1)]
        angles[cloth] = sim.physics.state.joint_q.numpy()[[start[j] for j in joints]]
    np.testing.assert_allclose(angles[True], angles[False], atol=1e-3)  # (-0.5227 and 1e-4 rad both)
    assert angles[True][0] == pytest.approx(np.radians(-30.0), abs=0.02)


@pytest.mark.parametrize(
    ("solver", "scene_api", "engine"),
    [
        (None, "MjcSceneAPI", "SolverMuJoCoVBD"),
        (None, "NewtonXpbdSceneAPI", "SolverXPBDVBD"),
        ("vbd", None, "SolverVBD"),
        (None, None, "SolverVBD"),
    ],
)
def test_the_scene_chooses(tmp_path, solver, scene_api, engine):
    """A scene applying MjcSceneAPI (no solver named) couples mujoco and vbd, one applying NewtonXpbdSceneAPI xpbd
    and vbd; one naming vbd, or nothing, runs vbd alone."""
    path = arm_and_cloth(tmp_path / "s.usda", solver=solver, scene_api=scene_api, across=4, along=3)
    sim = Simulation.open(path, fps=FPS, substeps=1)
    assert type(sim.solver).__name__ == engine


def test_bodies_of_another_scene_than_the_cloths_are_said_not_coupled(tmp_path, caplog):
    """The cloth owned by a second PhysicsScene (its own engine, vbd), the arm and the box by the first (mujoco): not
    coupled, said once naming the bodies and the cloth's scene."""
    path = arm_and_cloth(tmp_path / "two.usda", across=4, along=3)
    stage = Usd.Stage.Open(path)
    UsdPhysics.Scene.Define(stage, "/World/ClothScene")
    stage.GetPrimAtPath("/World/Cloth").CreateRelationship("physics:simulationOwner").SetTargets(["/World/ClothScene"])
    stage.GetRootLayer().Save()
    with caplog.at_level("WARNING", logger="newton_usd"):
        sim = Simulation.open(path, fps=FPS, substeps=1)
    assert sorted(type(s.solver).__name__ for s in (sim, *sim.scenes)) == ["SolverMuJoCo", "SolverVBD"]
    said = [r.getMessage() for r in caplog.records if "not coupled with the deformable bodies" in r.getMessage()]
    assert len(said) == 1 and "/World/ClothScene (another PhysicsScene)" in said[0]
    assert all(p in said[0] for p in ("/World/Box", "/World/Arm/Link0", "/World/Arm/Link1"))


def test_grains_cloth_and_rigid_bodies_in_one_scene_are_refused_naming_them(tmp_path):
    """Grains and cloth together run vbd_mpm (tests/test_vbd_mpm.py), without rigid bodies: beside this stage's arm
    and box, refused naming them; under mujoco, refused naming the grains and the cloth."""
    path = arm_and_cloth(tmp_path / "sand.usda", solver=None, scene_api="NewtonMPMSceneAPI", across=4, along=3)
    stage = Usd.Stage.Open(path)
    sand = UsdGeom.Points.Define(stage, "/World/Sand")
    sand.CreatePointsAttr([Gf.Vec3f(0.05 * i, 0.0, 0.02) for i in range(4)])
    sand.CreateWidthsAttr([0.04] * 4)
    for api in ("NewtonPointsDeformableSimAPI", "PhysicsDeformableBodyAPI"):
        sand.GetPrim().AddAppliedSchema(api)
    stage.GetRootLayer().Save()
    bodies = "/World/Box, /World/Arm/Link0, /World/Arm/Link1: rigid bodies beside grains"
    for solver, words in ((None, bodies), ("mujoco", "/World/Sand, /World/Cloth/sim: grains and deformable bodies")):
        with pytest.raises(NewtonUsdError) as e:
            Simulation.open(path, solver=solver)
        said = str(e.value)
        assert "\n" not in said and words in said


def test_worlds_under_c_mujoco_are_refused_in_one_line(tmp_path):
    with pytest.raises(NewtonUsdError, match=r"2 worlds: the mujoco_vbd engine on the CPU steps its bodies with C Mu"):
        Simulation.open(arm_and_cloth(tmp_path / "w.usda", across=4, along=3), worlds=2)


def test_two_worlds_under_xpbd_run_alike(tmp_path):
    sim, _, points = our_run(arm_and_cloth(tmp_path / "w.usda", across=10, along=4), 6, solver="xpbd", worlds=2)
    q, half = sim.physics.state.body_q.numpy(), len(points) // 2
    np.testing.assert_array_equal(points[:half], points[half:])
    np.testing.assert_array_equal(q[: len(q) // 2], q[len(q) // 2 :])
    assert np.abs(points[:half] - sim.model.particle_q.numpy()[:half]).max() > 0.05  # (moved)
    # (both alike could hide a leak between them, symmetric from the same start: each world runs as one alone)
    one, _, alone = our_run(arm_and_cloth(tmp_path / "one.usda", across=10, along=4), 6, solver="xpbd")
    np.testing.assert_allclose(points[:half], alone, atol=1e-5)
    np.testing.assert_allclose(q[: len(q) // 2, :3], one.physics.state.body_q.numpy()[:, :3], atol=1e-5)


def test_another_rigid_engine_is_refused_naming_the_cloth(tmp_path, capsys):
    path = arm_and_cloth(tmp_path / "x.usda", across=4, along=3)
    with pytest.raises(NewtonUsdError, match=r"/World/Cloth/sim: deformable bodies .* not by kamino \(vbd couples"):
        Simulation.open(path, solver="kamino")
    assert main(["run", path, "-q", "-n", "1", "--solver", "featherstone"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "/World/Cloth/sim" in err and "not by featherstone" in err
    assert main(["check", path]) == 0
    assert "mujoco_vbd solver (SolverCoupledProxy)" in capsys.readouterr().out


def test_the_sample_stage_runs_coupled():
    sample = Path(__file__).resolve().parent.parent / "sample_stages" / "deformables" / "arm_and_cloth.usda"
    sim = Simulation.open(str(sample))
    assert type(sim.solver).__name__ == "SolverMuJoCoVBD" and sim.options.substeps == 8
    sim.step_frame()
    assert np.isfinite(sim.physics.state.particle_q.numpy()).all()
    assert sim.physics.state.body_q.numpy()[:, 2].min() < 0.75  # (falling, swinging)


def test_collision_filters_of_a_coupled_cloth_are_said_not_applied(tmp_path, caplog):
    """Under mujoco_vbd VBD takes its contacts from the collision pipeline Newton's coupling builds, which the
    deformables' filters do not reach: said once, naming the cloth (under vbd they are applied)."""
    path = arm_and_cloth(tmp_path / "filtered.usda", across=4, along=3)
    stage = Usd.Stage.Open(path)
    UsdPhysics.FilteredPairsAPI.Apply(stage.GetPrimAtPath("/World/Cloth")).CreateFilteredPairsRel().SetTargets(
        ["/World/Box"]
    )
    stage.GetRootLayer().Save()
    with caplog.at_level("WARNING", logger="newton_usd"):
        sim = Simulation.open(path, fps=FPS, substeps=1)
    said = [r.getMessage() for r in caplog.records if "not applied under mujoco_vbd" in r.getMessage()]
    assert type(sim.solver).__name__ == "SolverMuJoCoVBD" and len(said) == 1 and "/World/Cloth" in said[0], said
    sim.close()
