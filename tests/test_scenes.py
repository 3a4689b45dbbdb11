"""Several PhysicsScenes: each simulates the bodies it owns (``physics:simulationOwner``; the first scene
also the unowned ones) with its own gravity and time step, and bodies of different scenes never touch."""

import json
import logging

import numpy as np
import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics
from test_cli import usdsim

from newton_usd.core import ModelBuilder
from newton_usd.errors import UsdInputError
from newton_usd.sim import Simulation
from newton_usd.usd import add_usd

G = 9.81


def new_stage(path=None, fps=50):
    stage = Usd.Stage.CreateNew(str(path)) if path else Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, "Z")
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    stage.SetTimeCodesPerSecond(fps)
    UsdGeom.Xform.Define(stage, "/World")
    return stage


def add_scene(stage, path, up=False, magnitude=None, timestep=None):
    scene = UsdPhysics.Scene.Define(stage, path)
    if up:
        scene.CreateGravityDirectionAttr(Gf.Vec3f(0, 0, 1))
    if magnitude is not None:
        scene.CreateGravityMagnitudeAttr(magnitude)
    if timestep is not None:
        scene.GetPrim().CreateAttribute("mjc:option:timestep", Sdf.ValueTypeNames.Double).Set(timestep)
    return scene


def add_box(stage, path, pos, owner=None, size=0.2):
    cube = UsdGeom.Cube.Define(stage, path)
    cube.CreateSizeAttr(size)
    cube.AddTranslateOp().Set(Gf.Vec3d(*pos))
    prim = cube.GetPrim()
    UsdPhysics.RigidBodyAPI.Apply(prim)
    UsdPhysics.CollisionAPI.Apply(prim)
    UsdPhysics.MassAPI.Apply(prim).CreateMassAttr(1.0)
    if owner:
        UsdPhysics.RigidBodyAPI(prim).CreateSimulationOwnerRel().SetTargets([owner])
    return prim


def two_scenes(path=None):
    """/World/SceneDown (default, -Z gravity) and /World/SceneUp (+Z): a box owned by each, one unowned."""
    stage = new_stage(path)
    add_scene(stage, "/World/SceneDown")
    add_scene(stage, "/World/SceneUp", up=True)
    add_box(stage, "/World/Down", (0, 0, 1), owner="/World/SceneDown")
    add_box(stage, "/World/Up", (2, 0, 1), owner="/World/SceneUp")
    add_box(stage, "/World/Unowned", (4, 0, 1))
    return stage


def pos(stage, path, time=None):
    time = Usd.TimeCode.Default() if time is None else time
    xf = UsdGeom.Xformable(stage.GetPrimAtPath(path)).ComputeLocalToWorldTransform(time)
    return np.array(xf.ExtractTranslation())


def euler_drop(dt, steps):
    """How far a body falls from rest in ``steps`` semi-implicit Euler steps (MuJoCo's default integrator)."""
    return G * dt * dt * steps * (steps + 1) / 2


def test_each_scene_has_its_gravity_and_unowned_bodies_follow_the_first():
    sim = Simulation.open(two_scenes(), device="cpu", record=False)
    assert sim.scene_path == "/World/SceneDown"
    assert [s.scene_path for s in sim.scenes] == ["/World/SceneUp"]
    assert sorted(sim.model.body_label) == ["/World/Down", "/World/Unowned"]
    assert sim.scenes[0].model.body_label == ["/World/Up"]
    sim.run(25)
    drop = euler_drop(sim.dt, sim.steps)
    assert drop > 0.4
    assert pos(sim.stage, "/World/Down") == pytest.approx([0, 0, 1 - drop], abs=1e-4)
    assert pos(sim.stage, "/World/Unowned") == pytest.approx([4, 0, 1 - drop], abs=1e-4)
    assert pos(sim.stage, "/World/Up") == pytest.approx([2, 0, 1 + drop], abs=1e-4)


def test_each_scene_steps_with_its_own_time_step_on_one_clock():
    stage = new_stage(fps=50)
    add_scene(stage, "/World/Fine", timestep=0.004)
    add_scene(stage, "/World/Coarse", timestep=0.01)
    add_scene(stage, "/World/Odd", timestep=0.006)  # does not divide the 0.02 s frame
    for name, x in (("Fine", 0), ("Coarse", 2), ("Odd", 4)):
        add_box(stage, f"/World/{name}Box", (x, 0, 5), owner=f"/World/{name}")
    sim = Simulation.open(stage, device="cpu", record=False)
    fine, (coarse, odd) = sim, sim.scenes
    assert (fine.dt, fine.substeps) == (pytest.approx(0.004), 5)
    assert (coarse.dt, coarse.substeps) == (pytest.approx(0.01), 2)
    assert coarse.solver.mj_model.opt.timestep == pytest.approx(0.01)
    sim.run(10)
    assert (fine.steps, coarse.steps) == (50, 20)
    # The odd step keeps to the first scene's clock: the steps closest to 0.2 s.
    assert odd.steps == 33 and abs(odd.sim_seconds - fine.sim_seconds) <= odd.dt / 2
    for s, name in ((fine, "Fine"), (coarse, "Coarse"), (odd, "Odd")):
        # Each body fell as many semi-implicit Euler steps of its scene's dt as its scene took.
        z = pos(stage, f"/World/{name}Box")[2]
        assert z == pytest.approx(5 - euler_drop(s.dt, s.steps), abs=1e-6), name
    assert euler_drop(0.004, 50) - euler_drop(0.01, 20) < -1e-3  # (the time steps are told apart)


def overlapping(second_owner):
    """Two overlapping boxes without gravity, the first owned by /World/A, the second by ``second_owner``."""
    stage = new_stage()
    add_scene(stage, "/World/A", magnitude=0.0)
    add_scene(stage, "/World/B", magnitude=0.0)
    add_box(stage, "/World/Left", (0, 0, 1), owner="/World/A")
    add_box(stage, "/World/Right", (0.1, 0, 1), owner=second_owner)
    return stage


@pytest.mark.parametrize("second_owner", ["/World/A", "/World/B"])
def test_bodies_of_different_scenes_do_not_collide(second_owner):
    sim = Simulation.open(overlapping(second_owner), device="cpu", record=False)
    sim.run(20)
    gap = pos(sim.stage, "/World/Right")[0] - pos(sim.stage, "/World/Left")[0]
    if second_owner == "/World/A":  # one scene: the contact pushes them apart
        assert gap > 0.15
    else:
        assert gap == pytest.approx(0.1, abs=1e-6)
        assert pos(sim.stage, "/World/Left") == pytest.approx([0, 0, 1], abs=1e-6)


def test_a_static_collider_owned_by_one_scene_collides_only_there():
    stage = new_stage()
    add_scene(stage, "/World/A")
    add_scene(stage, "/World/B")
    ground = UsdGeom.Plane.Define(stage, "/World/Ground")
    UsdPhysics.CollisionAPI.Apply(ground.GetPrim()).CreateSimulationOwnerRel().SetTargets(["/World/B"])
    add_box(stage, "/World/InA", (0, 0, 0.5), owner="/World/A")
    add_box(stage, "/World/InB", (2, 0, 0.5), owner="/World/B")
    sim = Simulation.open(stage, device="cpu", record=False)
    assert sim.model.shape_count == 1 and sim.scenes[0].model.shape_count == 2
    sim.run(50)
    assert pos(stage, "/World/InA")[2] < -2.0  # nothing under it in its scene
    assert pos(stage, "/World/InB")[2] == pytest.approx(0.1, abs=0.01)  # resting on the ground


def test_saved_output_holds_every_scene_motion(tmp_path):
    src = tmp_path / "scenes.usda"
    stage = two_scenes(src)
    # a pendulum hinged to the world in the second scene: its joint is imported with it
    UsdPhysics.RevoluteJoint.Define(stage, "/World/Hinge").CreateBody1Rel().SetTargets(["/World/Up"])
    stage.GetPrimAtPath("/World/Hinge").GetAttribute("physics:axis").Set("Y")
    stage.GetPrimAtPath("/World/Hinge").GetAttribute("physics:localPos0").Set(Gf.Vec3f(2.5, 0, 1))
    stage.GetPrimAtPath("/World/Hinge").GetAttribute("physics:localPos1").Set(Gf.Vec3f(0.5, 0, 0))
    stage.GetRootLayer().Save()
    sim = Simulation.open(str(src), device="cpu")
    assert sim.scenes[0].model.joint_label == ["/World/Hinge"]
    sim.run(20)
    out = sim.save(tmp_path / "scenes.sim.usda")
    sim.close()
    layer = Sdf.Layer.FindOrOpen(out)
    assert layer.endTimeCode == 20
    result = Usd.Stage.Open(out)
    for path in ("/World/Down", "/World/Up", "/World/Unowned"):
        attr = result.GetPrimAtPath(path).GetAttribute("xformOp:translate:physics")
        assert attr.GetNumTimeSamples() == 21, path
    assert pos(result, "/World/Down", 20)[2] < 0.6 and pos(result, "/World/Unowned", 20)[2] < 0.6
    up = pos(result, "/World/Up", 20)
    # hinged at (2.5, 0, 1), 0.5 m away: it swings up (+Z gravity) on its circle
    assert up[2] > 1.2 and np.linalg.norm(up - [2.5, 0, 1]) == pytest.approx(0.5, abs=1e-3)


def test_add_usd_imports_one_scene():
    stage = two_scenes()
    b = ModelBuilder()
    imported = add_usd(b, stage, scene="/World/SceneUp")
    assert imported.scene_path == "/World/SceneUp" and b.body_label == ["/World/Up"]
    assert np.allclose(b.gravity, [0, 0, G], atol=1e-5)
    b = ModelBuilder()
    add_usd(b, stage, scene="/World/SceneDown")
    assert b.body_label == ["/World/Down", "/World/Unowned"] and np.allclose(b.gravity, [0, 0, -G], atol=1e-5)
    with pytest.raises(UsdInputError, match=r"/World/Down is not a PhysicsScene .*/World/SceneDown, /World/SceneUp"):
        add_usd(ModelBuilder(), stage, scene="/World/Down")


def test_add_usd_without_scene_imports_the_default_one_and_names_the_others(caplog):
    b = ModelBuilder()
    with caplog.at_level(logging.WARNING, logger="newton_usd"):
        imported = add_usd(b, two_scenes())
    assert imported.scene_path == "/World/SceneDown" and b.body_label == ["/World/Down", "/World/Unowned"]
    warning = [r.getMessage() for r in caplog.records if "several PhysicsScenes" in r.getMessage()]
    assert len(warning) == 1 and "/World/SceneUp" in warning[0] and "scene=PATH" in warning[0]


def test_a_joint_across_scenes_is_an_error_naming_it():
    stage = two_scenes()
    joint = UsdPhysics.FixedJoint.Define(stage, "/World/Glue")
    joint.CreateBody0Rel().SetTargets(["/World/Down"])
    joint.CreateBody1Rel().SetTargets(["/World/Up"])
    expected = r"/World/Glue\.physics:simulationOwner: joins /World/Down \(simulated by /World/SceneDown\) and /World/"
    with pytest.raises(UsdInputError, match=expected):
        Simulation.open(stage, device="cpu")
    with pytest.raises(UsdInputError, match=expected):
        add_usd(ModelBuilder(), stage, scene="/World/SceneUp")
    # an unowned body is the default scene's: jointed to the other scene's body, the same error
    joint.CreateBody0Rel().SetTargets(["/World/Unowned"])
    with pytest.raises(UsdInputError, match=r"/World/Glue.*joins /World/Unowned \(simulated by /World/SceneDown\)"):
        add_usd(ModelBuilder(), stage)
    assert not stage.GetSessionLayer().subLayerPaths  # the failed open left no output layer


def test_an_owner_that_is_not_a_scene_is_an_error():
    stage = two_scenes()
    UsdPhysics.RigidBodyAPI(stage.GetPrimAtPath("/World/Up")).GetSimulationOwnerRel().SetTargets(["/World"])
    with pytest.raises(UsdInputError, match=r"/World/Up\.physics:simulationOwner: targets /World \(a Xform prim\), "
                       r"not a PhysicsScene"):  # fmt: skip
        Simulation.open(stage, device="cpu")
    # also with one scene (the stage's only one would otherwise simulate it)
    single = new_stage()
    add_scene(single, "/World/Scene")
    add_box(single, "/World/Box", (0, 0, 1), owner="/World/Nowhere")
    with pytest.raises(UsdInputError, match=r"/World/Box\.physics:simulationOwner: targets /World/Nowhere \(no prim\)"):
        add_usd(ModelBuilder(), single)


def test_a_gravity_edit_in_the_second_scene_applies_to_it_only():
    stage = two_scenes()
    sim = Simulation.open(stage, device="cpu", record=False)
    up = sim.scenes[0]
    sim.run(5)
    solver, up_solver = sim.solver, up.solver
    UsdPhysics.Scene(stage.GetPrimAtPath("/World/SceneUp")).CreateGravityMagnitudeAttr(0.0)
    sim.step_frame()
    assert up.solver is up_solver and up.edits_applied == 1 and up.rebuilds == 0
    assert np.allclose(up.solver.mj_model.opt.gravity, 0.0)
    assert sim.solver is solver and np.allclose(sim.solver.mj_model.opt.gravity, [0, 0, -G], atol=1e-4)
    v = up.state.body_qd.numpy()[0, 2]
    z = pos(stage, "/World/Up")[2]
    sim.run(5)  # no gravity: it goes on at its speed
    assert up.state.body_qd.numpy()[0, 2] == pytest.approx(v, rel=1e-6)
    assert pos(stage, "/World/Up")[2] == pytest.approx(z + 5 * v / sim.fps, rel=1e-6)


def test_reset_and_close_cover_every_scene():
    stage = two_scenes()
    sim = Simulation.open(stage, device="cpu")
    sim.run(5)
    assert pos(stage, "/World/Up", sim.time_code)[2] > 1.0
    sim.reset()
    assert sim.frame == 0 and sim.scenes[0].frame == 0 and sim.scenes[0].steps == 0
    assert not sim.output_layer.GetPrimAtPath("/World/Up")  # nothing written is left
    assert pos(stage, "/World/Up")[2] == pytest.approx(1.0)
    sim.run(3)
    assert sim.scenes[0].frame == 3
    sim.close()
    assert not stage.GetSessionLayer().subLayerPaths


def test_usdsim_info_and_run_show_every_scene(tmp_path):
    src = tmp_path / "scenes.usda"
    stage = two_scenes(src)
    stage.GetRootLayer().Save()
    r = usdsim("info", src)
    assert r.returncode == 0, r.stderr
    assert "scenes: 2 PhysicsScenes, 2 simulated" in r.stdout
    assert "/World/SceneDown (default): gravity (0.0, 0.0, -9.81), 2 bodies" in r.stdout
    assert "/World/SceneUp: gravity (0.0, 0.0, 9.81), 1 body" in r.stdout
    r = usdsim(src, "-n", "10")
    assert r.returncode == 0, r.stderr
    assert "2 scenes (/World/SceneDown: " in r.stdout and ", 3 bodies" in r.stdout
    r = usdsim(src, "-n", "10", "--format", "json", "-o", tmp_path / "out.usda")
    summary = json.loads(r.stdout)
    assert [s["path"] for s in summary["scenes"]] == ["/World/SceneDown", "/World/SceneUp"]
    assert [s["bodies"] for s in summary["scenes"]] == [2, 1] and summary["bodies"] == 3
    result = Usd.Stage.Open(str(tmp_path / "out.usda"))
    assert pos(result, "/World/Up", 10)[2] > 1.0 > pos(result, "/World/Down", 10)[2]


def test_one_scene_stages_are_imported_as_before():
    stage = new_stage()
    add_scene(stage, "/World/Scene")
    add_box(stage, "/World/Owned", (0, 0, 1), owner="/World/Scene")
    add_box(stage, "/World/Unowned", (2, 0, 1))
    sim = Simulation.open(stage, device="cpu", record=False)
    assert sim.scenes == [] and sim.scene_path == "/World/Scene"
    assert sim.model.body_label == ["/World/Owned", "/World/Unowned"]


def test_actuators_and_sites_go_with_the_scene_of_what_they_are_on():
    stage = two_scenes()
    hinge = UsdPhysics.RevoluteJoint.Define(stage, "/World/Hinge")
    hinge.CreateBody1Rel().SetTargets(["/World/Up"])
    hinge.CreateAxisAttr("Y")
    hinge.CreateLocalPos0Attr(Gf.Vec3f(2.5, 0, 1))
    hinge.CreateLocalPos1Attr(Gf.Vec3f(0.5, 0, 0))
    motor = stage.DefinePrim("/World/Motor", "MjcActuator")
    motor.CreateRelationship("mjc:target").SetTargets(["/World/Hinge"])
    site = UsdGeom.Sphere.Define(stage, "/World/Up/Tip").GetPrim()
    site.ApplyAPI("MjcSiteAPI")
    sim = Simulation.open(stage, device="cpu", record=False)
    up = sim.scenes[0]
    assert not getattr(sim.model.mujoco, "actuator", None) and sim.solver.mj_model.nu == 0
    assert [a["path"] for a in up.model.mujoco.actuator] == ["/World/Motor"] and up.solver.mj_model.nu == 1
    assert list(sim.model.site_label) == [] and list(up.model.site_label) == ["/World/Up/Tip"]


def scenes_in_environments(n=3):
    """/World/SceneDown (-Z gravity) and /World/SceneUp (+Z); ``n`` environments under /World/envs, 3 m apart,
    each with a box of each scene; a ground plane of the first scene outside them."""
    stage = new_stage()
    add_scene(stage, "/World/SceneDown")
    add_scene(stage, "/World/SceneUp", up=True)
    for i in range(n):
        env = UsdGeom.Xform.Define(stage, f"/World/envs/env_{i}")
        env.AddTranslateOp().Set(Gf.Vec3d(3 * i, 0, 0))
        add_box(stage, f"/World/envs/env_{i}/Down", (0, 0, 1), owner="/World/SceneDown")
        add_box(stage, f"/World/envs/env_{i}/Up", (1, 0, 1), owner="/World/SceneUp")
    ground = UsdGeom.Plane.Define(stage, "/World/Ground")
    ground.CreateAxisAttr("Z")
    UsdPhysics.CollisionAPI.Apply(ground.GetPrim())
    return stage


def test_env_root_gives_every_scene_one_world_per_environment():
    stage = scenes_in_environments(3)
    sim = Simulation.open(stage, device="cpu", record=False, env_root="/World/envs")
    up = sim.scenes[0]
    assert (sim.scene_path, up.scene_path) == ("/World/SceneDown", "/World/SceneUp")
    assert sim.worlds == up.worlds == 3
    assert sim.model.body_label == [f"/World/envs/env_{i}/Down" for i in range(3)]
    assert up.model.body_label == [f"/World/envs/env_{i}/Up" for i in range(3)]
    assert list(up.model.body_world.numpy()) == [0, 1, 2]
    sim.run(10)
    drop = euler_drop(sim.dt, sim.steps)
    assert drop > 0.15
    for i in range(3):
        # the ground (first scene, outside the environments) is 0.9 m below the boxes: nothing touches yet
        assert pos(stage, f"/World/envs/env_{i}/Down") == pytest.approx([3 * i, 0, 1 - drop], abs=1e-4)
        assert pos(stage, f"/World/envs/env_{i}/Up") == pytest.approx([3 * i + 1, 0, 1 + drop], abs=1e-4)


def set_fps(stage, scene, fps):
    stage.GetPrimAtPath(scene).CreateAttribute("newton:usd:framesPerSecond", Sdf.ValueTypeNames.Double).Set(fps)


def test_another_scenes_own_frame_rate_is_not_used_and_said_so(caplog):
    stage = two_scenes()  # timeCodesPerSecond 50
    set_fps(stage, "/World/SceneUp", 30.0)
    with caplog.at_level(logging.WARNING, logger="newton_usd"):
        sim = Simulation.open(stage, device="cpu", record=False)
    assert sim.fps == sim.scenes[0].fps == 50
    warnings = [r.getMessage() for r in caplog.records if "framesPerSecond" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].endswith(
        ": newton:usd:framesPerSecond = 30 of a PhysicsScene other than the first is not used: every scene steps on "
        "the first scene's clock, 50 frames per second (1 prim: /World/SceneUp)"
    )
    # the first scene's own rate is the clock: a second scene that authors the same one is not warned about
    set_fps(stage, "/World/SceneDown", 30.0)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="newton_usd"):
        sim = Simulation.open(stage, device="cpu", record=False)
    assert sim.fps == sim.scenes[0].fps == 30
    assert not [r for r in caplog.records if "framesPerSecond" in r.getMessage()]
    # a frame rate asked for overrides every scene's alike: no warning either
    set_fps(stage, "/World/SceneDown", 50.0)
    with caplog.at_level(logging.WARNING, logger="newton_usd"):
        sim = Simulation.open(stage, device="cpu", record=False, fps=20)
    assert sim.scenes[0].fps == 20
    assert not [r for r in caplog.records if "framesPerSecond" in r.getMessage()]


def second_scene_authors(path):
    """:func:`two_scenes` saved at ``path``, with values that only the second scene (/World/SceneUp) uses:
    its time step, a contact dimension on its box, a distance joint on its box that constrains nothing; and
    its own frame rate (not used: one clock), and an attribute nothing reads."""
    stage = two_scenes(path)
    up = stage.GetPrimAtPath("/World/Up")
    up.CreateAttribute("mjc:condim", Sdf.ValueTypeNames.Int).Set(1)
    up.CreateAttribute("mjc:unknownThing", Sdf.ValueTypeNames.Double).Set(1.0)
    scene = stage.GetPrimAtPath("/World/SceneUp")
    scene.CreateAttribute("mjc:option:timestep", Sdf.ValueTypeNames.Double).Set(0.004)
    set_fps(stage, "/World/SceneUp", 30.0)
    UsdPhysics.DistanceJoint.Define(stage, "/World/Tether").CreateBody1Rel().SetTargets(["/World/Up"])
    stage.GetRootLayer().Save()
    return stage


def test_usdsim_check_covers_every_scene(tmp_path):
    src = tmp_path / "scenes.usda"
    second_scene_authors(src)
    r = usdsim("check", src)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[:3] == [
        f"{src}: 2 PhysicsScenes simulate bodies, each its own model and solver:",
        "  /World/SceneDown: 2 bodies, 2 shapes, 2 joints; MuJoCo model: nbody 3, njnt 2, ngeom 2, nu 0",
        "  /World/SceneUp: 1 body, 1 shape, 1 joint; MuJoCo model: nbody 2, njnt 1, ngeom 1, nu 0",
    ]
    assert "  - distance joint with neither a minimum nor a maximum distance does not constrain: /World/Tether" in lines
    assert (
        "  - newton:usd:framesPerSecond = 30 of a PhysicsScene other than the first is not used: every scene steps "
        "on the first scene's clock, 50 frames per second: /World/SceneUp"
    ) in lines
    assert "several PhysicsScenes" not in r.stdout  # (what the default scene's import alone would say)
    # read by the second scene's import: used; read by none: listed
    unused = lines[lines.index("authored but not used (1 attributes):") :]
    assert unused == ["authored but not used (1 attributes):", "  - mjc:unknownThing (1 prim: /World/Up)"]


def test_usdsim_explain_covers_every_scene(tmp_path):
    src = tmp_path / "scenes.usda"
    second_scene_authors(src)
    r = usdsim("explain", src)
    assert r.returncode == 0, r.stderr
    rows = {tuple(line.split()[:2]): line.split()[2:] for line in r.stdout.splitlines()[2:]}
    assert rows[("/World/Up", "condim")] == ["1", "mjc:condim"]
    assert rows[("/World/Down", "condim")] == ["3", "default"]
    assert rows[("/World/SceneUp", "timestep")] == ["0.004", "s", "mjc:option:timestep"]
    assert rows[("/World/SceneUp", "frames_per_second")] == ["30", "1/s", "newton:usd:framesPerSecond"]
    assert rows[("/World/SceneDown", "timestep")][-1] == "default"
    # one row per prim and property, in prim order
    keys = [tuple(line.split()[:2]) for line in r.stdout.splitlines()[2:]]
    assert len(keys) == len(set(keys)) and keys == sorted(keys)
    r = usdsim("explain", src, "/World/Up")
    assert {line.split()[0] for line in r.stdout.splitlines()[2:]} == {"/World/Up"}


def test_write_worlds_all_shows_every_scene_of_each_world_on_one_copy(tmp_path):
    stage = new_stage()
    add_scene(stage, "/World/SceneDown")
    add_scene(stage, "/World/SceneUp", up=True)
    add_box(stage, "/World/Boxes/Down", (0, 0, 1), owner="/World/SceneDown")
    add_box(stage, "/World/Boxes/Up", (2, 0, 1), owner="/World/SceneUp")
    sim = Simulation.open(stage, device="cpu", worlds=2, write_worlds="all", world_spacing=10.0)
    up = sim.scenes[0]
    assert up.copies is sim.copies and [str(r) for r in sim.copies.roots] == ["/World/Boxes"]  # one copy, both scenes
    sim.run(10)
    drop = euler_drop(sim.dt, sim.steps)
    t = sim.time_code
    for root, dx in (("/World/Boxes", 0), ("/World/Boxes_world1", 10)):  # world 1 is 10 units along X
        assert pos(stage, f"{root}/Down", t) == pytest.approx([dx, 0, 1 - drop], abs=1e-4), root
        assert pos(stage, f"{root}/Up", t) == pytest.approx([dx + 2, 0, 1 + drop], abs=1e-4), root
    assert not stage.GetPrimAtPath("/World/Boxes_world1/Up").HasAPI(UsdPhysics.RigidBodyAPI)  # a picture
    # A body added to the second scene outside /World/Boxes rebuilds that scene: the environment to copy is now
    # /World, copied again, and both scenes go on writing onto the new copy.
    add_box(stage, "/World/Up2", (6, 0, 1), owner="/World/SceneUp")
    sim.run(10)
    assert up.rebuilds == 1 and sim.rebuilds == 0
    assert [str(r) for r in sim.copies.roots] == ["/World"]
    assert not stage.GetPrimAtPath("/World/Boxes_world1").IsDefined()  # (the poses written there: overs)
    t = sim.time_code
    for root, dx in (("/World", 0), ("/World_world1", 10)):
        assert pos(stage, f"{root}/Boxes/Down", t) == pytest.approx(pos(stage, "/World/Boxes/Down", t) + [dx, 0, 0])
        assert pos(stage, f"{root}/Boxes/Up", t) == pytest.approx(pos(stage, "/World/Boxes/Up", t) + [dx, 0, 0])
        assert pos(stage, f"{root}/Up2", t) == pytest.approx(pos(stage, "/World/Up2", t) + [dx, 0, 0], abs=1e-6)
    assert pos(stage, "/World/Boxes/Down", t)[2] < 1 - drop - 0.1 and pos(stage, "/World/Up2", t)[2] > 1.1
    out = sim.save(tmp_path / "out.usda", flatten=True)
    sim.close()
    assert not stage.GetPrimAtPath("/World_world1")
    saved = Usd.Stage.Open(out)
    assert pos(saved, "/World_world1/Boxes/Down", t) == pytest.approx(pos(saved, "/World/Boxes/Down", t) + [10, 0, 0])
