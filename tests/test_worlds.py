"""Several worlds in one model: ModelBuilder.replicate, Model.world_view, SolverMuJoCo stepping every
world (one MjData per world on the CPU, nworld on MuJoCo-Warp), per-world parameters."""

import math

import numpy as np
import pytest

from newton_usd import ModelBuilder
from newton_usd.solvers import SolverMuJoCo

from conftest import SAMPLES
from stages import pendulum


def replicated(source, n):
    b = ModelBuilder()
    b.add_usd(source)
    b.replicate(n)
    return b


def run(model, seconds, dt=1.0 / 240.0, state=None, backend="cpu", record=None):
    solver = SolverMuJoCo(model, backend=backend)
    s0 = state or model.state()
    s1, control = model.state(), model.control()
    out = []
    for _ in range(int(round(seconds / dt))):
        solver.step(s0, s1, control, None, dt)
        s0, s1 = s1, s0
        if record:
            out.append(getattr(s0, record).numpy().copy())
    return s0, solver, np.array(out)


def test_replicate_copies_every_element_with_its_world():
    one = ModelBuilder()
    one.add_usd(str(SAMPLES / "cartpole.usda"))
    b = replicated(str(SAMPLES / "cartpole.usda"), 3)
    m = b.finalize("cpu")
    assert m.num_worlds == 3
    counts = (m.body_count, m.joint_count, m.shape_count)
    assert counts == (3 * one.body_count, 3 * one.joint_count, 3 * one.shape_count)
    assert m.body_world.numpy().tolist() == [0] * one.body_count + [1] * one.body_count + [2] * one.body_count
    assert m.body_label[: one.body_count] == m.body_label[one.body_count : 2 * one.body_count]  # labels kept
    parents = m.joint_parent.numpy().reshape(3, -1)
    nb = one.body_count
    np.testing.assert_array_equal(parents[1], np.where(parents[0] >= 0, parents[0] + nb, -1))
    view = m.world_view(2)
    assert view.body_count == nb and view.num_worlds == 1
    np.testing.assert_array_equal(view.joint_parent.numpy(), parents[0])
    np.testing.assert_array_equal(view.joint_q_start.numpy(), m.world_view(0).joint_q_start.numpy())
    np.testing.assert_array_equal(view.shape_body.numpy(), m.world_view(0).shape_body.numpy())
    assert m.world_ranges(1)["body"] == (nb, 2 * nb)
    with pytest.raises(ValueError, match="replicate"):
        b.add_body()
    with pytest.raises(ValueError, match="already"):
        b.replicate(2)


def test_worlds_are_independent_and_each_matches_a_single_world_run():
    angles = (3.0, 10.0, 25.0)
    model = replicated(pendulum(angle_deg=0.0), len(angles)).finalize("cpu")
    state = model.state()
    state.joint_q.assign(np.radians(angles).astype(np.float32))
    final, solver, q = run(model, 1.0, state=state, record="joint_q")
    assert solver.mj_batch.nsim == 3
    for w, angle in enumerate(angles):
        single = ModelBuilder()
        single.add_usd(pendulum(angle_deg=angle))
        final1, _, q1 = run(single.finalize("cpu"), 1.0, record="joint_q")
        np.testing.assert_allclose(q[:, w], q1[:, 0], atol=1e-5)
        # body poses and velocities are stored world after world
        np.testing.assert_allclose(final.body_q.numpy()[w], final1.body_q.numpy()[0], atol=1e-5)
        np.testing.assert_allclose(final.body_qd.numpy()[w], final1.body_qd.numpy()[0], atol=1e-4)


def test_per_world_drive_gains_and_masses():
    """Domain randomization: values that differ between worlds at construction and through
    update_parameters each act on their own world only."""
    from pxr import UsdPhysics

    stage = pendulum(angle_deg=0.0)
    drive = UsdPhysics.DriveAPI.Apply(stage.GetPrimAtPath("/Hinge"), "angular")
    drive.CreateTargetPositionAttr(40.0)
    drive.CreateStiffnessAttr(0.2)
    drive.CreateDampingAttr(0.01)
    model = replicated(stage, 2).finalize("cpu")
    ke = model.joint_target_ke.numpy()
    ke[1] *= 4.0  # world 1: a stiffer drive (the CPU array is a view)
    _, solver, q = run(model, 1.0, record="joint_q")
    assert solver.mj_models[0] is not solver.mj_models[1]

    def single(gain_scale, mass_scale=1.0):
        b = ModelBuilder()
        b.add_usd(stage)
        m = b.finalize("cpu")
        m.joint_target_ke.numpy()[0] *= gain_scale
        m.body_mass.numpy()[0] *= mass_scale
        m.body_inertia.numpy()[0] *= mass_scale
        return run(m, 1.0, record="joint_q")[2][:, 0]

    np.testing.assert_allclose(q[:, 0], single(1.0), atol=1e-5)
    np.testing.assert_allclose(q[:, 1], single(4.0), atol=1e-5)
    assert abs(q[-1, 1] - q[-1, 0]) > 0.05

    # Live: world 0 gets twice the mass, world 1 keeps its own.
    edited = replicated(stage, 2).finalize("cpu")
    edited.joint_target_ke.numpy()[1] *= 4.0
    edited.body_mass.numpy()[0] *= 2.0
    edited.body_inertia.numpy()[0] *= 2.0
    solver = SolverMuJoCo(model, backend="cpu")
    assert solver.update_parameters(edited, {"body_mass", "body_inertia"}) == set()
    assert solver.mj_models[0].body_mass[1] == pytest.approx(2.0 * solver.mj_models[1].body_mass[1])


def test_acceleration_drives_scale_per_world():
    from pxr import UsdPhysics

    stage = pendulum(angle_deg=0.0)
    UsdPhysics.Scene(stage.GetPrimAtPath("/PhysicsScene")).CreateGravityMagnitudeAttr(0.0)
    drive = UsdPhysics.DriveAPI.Apply(stage.GetPrimAtPath("/Hinge"), "angular")
    drive.CreateTypeAttr("acceleration")
    drive.CreateTargetPositionAttr(45.0)
    drive.CreateStiffnessAttr(100.0)
    drive.CreateDampingAttr(20.0)
    model = replicated(stage, 2).finalize("cpu")
    for name in ("body_mass", "body_inertia"):
        getattr(model, name).numpy()[1] *= 10.0  # world 1: ten times heavier
    _, _, q = run(model, 0.5, dt=1.0 / 480.0, record="joint_q")
    np.testing.assert_allclose(q[:, 1], q[:, 0], atol=1e-5)
    assert q[-1, 0] > math.radians(30)


def test_simulation_with_worlds_writes_world_0_and_rebuilds_per_world():
    """``Simulation.open(worlds=N)`` / ``usdsim --worlds N``: world 0 drives the prims; a live rebuild
    keeps every world's bodies where each world had them."""
    import os

    from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

    from newton_usd.sim import Simulation

    stage = Usd.Stage.Open(Sdf.Layer.OpenAsAnonymous(os.path.join(SAMPLES, "boxes_on_ground.usda")))
    sim = Simulation.open(stage, device="cpu", record=False, worlds=3)
    n = sim.model.body_count // 3
    box = sim.model.body_label.index("/World/Box")
    joint = int(np.nonzero(sim.model.joint_child.numpy() == box + 2 * n)[0][0])
    sim.state.joint_q.numpy()[sim.model.joint_q_start.numpy()[joint] + 2] += 0.5  # world 2's box starts higher
    sim.run(10)
    q = sim.state.body_q.numpy()
    assert q[box, 2] == pytest.approx(q[box + n, 2], abs=1e-6)  # worlds 0 and 1 alike
    assert q[box + 2 * n, 2] > q[box, 2] + 0.3
    written = UsdGeom.Xformable(stage.GetPrimAtPath("/World/Box")).ComputeLocalToWorldTransform(0)
    assert written.ExtractTranslation()[2] == pytest.approx(q[box, 2], abs=1e-5)  # world 0 on the prim
    before = sim.state.body_q.numpy()[[box, box + n, box + 2 * n], 2].copy()
    cube = UsdGeom.Cube.Define(stage, "/World/NewBox")
    cube.AddTranslateOp().Set(Gf.Vec3d(2, 0, 1))
    UsdPhysics.RigidBodyAPI.Apply(cube.GetPrim())
    UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
    assert sim.apply_edits() == "rebuilt"
    n2 = sim.model.body_count // 3
    assert n2 == n + 1 and sim.model.num_worlds == 3 and sim.solver.mj_batch.nsim == 3
    box2 = sim.model.body_label.index("/World/Box")
    after = sim.state.body_q.numpy()[[box2, box2 + n2, box2 + 2 * n2], 2]
    np.testing.assert_allclose(after, before, atol=1e-5)
    sim.close()


def test_distance_constraints_replicate_per_world():
    from test_solver_mujoco import rope_stage

    model = replicated(rope_stage(max_distance=1.0), 2).finalize("cpu")
    assert model.distance_count == 2 and model.distance_body1.numpy().tolist() == [0, 1]
    final, solver, _ = run(model, 1.0)
    assert solver.mj_model.ntendon == 1
    q = final.body_q.numpy()
    np.testing.assert_allclose(q[0], q[1], atol=1e-6)
    assert abs(np.linalg.norm(q[0, :3] - [0, 0, 2.0]) - 1.0) < 0.03


def _two_link_stage(path):
    """``/World``: a ground, a box, a pendulum hinged to the world, a light and the PhysicsScene inside."""
    from pxr import Gf, UsdGeom, UsdLux, UsdPhysics

    from stages import add_box, add_ground, new_stage

    stage = new_stage(path)
    UsdGeom.Xform.Define(stage, "/World")
    UsdPhysics.Scene.Define(stage, "/World/PhysicsScene")
    add_ground(stage, "/World/Ground").CreateWidthAttr(4.0)
    add_box(stage, "/World/Box", 0.2, (0, 0, 1), mass=1.0)
    arm = add_box(stage, "/World/Arm", 0.1, (1, 0, 1), mass=1.0)
    UsdGeom.Sphere.Define(stage, "/World/Arm/Tip").CreateRadiusAttr(0.05)
    hinge = UsdPhysics.RevoluteJoint.Define(stage, "/World/Hinge")
    hinge.CreateBody1Rel().SetTargets([arm.GetPath()])
    hinge.CreateAxisAttr("Y")
    hinge.CreateLocalPos0Attr(Gf.Vec3f(1.3, 0, 1))
    hinge.CreateLocalPos1Attr(Gf.Vec3f(0.3, 0, 0))
    UsdLux.DistantLight.Define(stage, "/World/Sun")
    stage.SetStartTimeCode(0)
    stage.SetEndTimeCode(20)
    stage.GetRootLayer().Save()
    return stage


def test_write_worlds_all_shows_every_world_on_a_copy_without_physics(tmp_path):
    """``write_worlds="all"`` (``usdsim --write-worlds all``): world k's bodies move ``/World_world<k>``,
    a copy of the environment ``spacing`` apart on a grid; the copies hold no physics, so the saved
    output imports as the source does; the source keeps its bytes."""
    from pxr import Usd, UsdGeom, UsdPhysics

    from newton_usd.sim import Simulation

    src = tmp_path / "env.usda"
    _two_link_stage(src)
    before = src.read_bytes()
    sim = Simulation.open(str(src), device="cpu", worlds=4, write_worlds="all", world_spacing=5.0)
    n = sim.model.body_count // 4
    box = sim.model.body_label.index("/World/Box")
    start = sim.model.joint_q_start.numpy()
    joint = int(np.nonzero(sim.model.joint_child.numpy() == box + 3 * n)[0][0])
    sim.state.joint_q.numpy()[start[joint] + 2] += 0.5  # world 3's box starts higher
    sim.run(20)
    q = sim.state.body_q.numpy()
    assert q[box + 3 * n, 2] > q[box, 2] + 0.1
    stage = sim.stage
    cache = UsdGeom.XformCache(sim.time_code)
    offsets = {0: (0, 0, 0), 1: (5, 0, 0), 2: (0, 5, 0), 3: (5, 5, 0)}  # a 2x2 grid across the ground (Z up)
    for k, off in offsets.items():
        root = "/World" if k == 0 else f"/World_world{k}"
        for name in ("Box", "Arm"):
            b = sim.model.body_label.index(f"/World/{name}") + k * n
            written = cache.GetLocalToWorldTransform(stage.GetPrimAtPath(f"{root}/{name}"))
            np.testing.assert_allclose(np.array(written.ExtractTranslation()), q[b, :3] + off, atol=1e-5)
    # The copies are pictures: geometry kept, physics (and the light) gone.
    copy = stage.GetPrimAtPath("/World_world2")
    assert copy.GetChild("Ground").IsA(UsdGeom.Plane) and copy.GetChild("Arm").GetChild("Tip").IsA(UsdGeom.Sphere)
    for prim in Usd.PrimRange(copy):
        assert not prim.GetAppliedSchemas(), prim.GetPath()
        assert not [p for p in prim.GetPropertyNames() if p.startswith("physics:")], prim.GetPath()
        assert prim.GetName() not in ("Hinge", "PhysicsScene", "Sun"), prim.GetPath()
    out = sim.save(tmp_path / "env.sim.usda")
    sim.close()
    assert not stage.GetPrimAtPath("/World_world1")  # close() takes the copies away with the output
    assert src.read_bytes() == before
    saved = Usd.Stage.Open(out)
    at = UsdGeom.XformCache(20).GetLocalToWorldTransform(saved.GetPrimAtPath("/World_world3/Box"))
    np.testing.assert_allclose(np.array(at.ExtractTranslation()), q[box + 3 * n, :3] + (5, 5, 0), atol=1e-5)
    bodies = [p for p in saved.Traverse() if p.HasAPI(UsdPhysics.RigidBodyAPI)]
    assert sorted(str(p.GetPath()) for p in bodies) == ["/World/Arm", "/World/Box"]
    again = Simulation.open(out, device="cpu", live=False)
    assert again.model.body_count == n  # the saved output simulates the source's bodies only
    again.close()


def test_write_worlds_spacing_defaults_to_the_environment_size_and_zero_keeps_them_in_place(tmp_path):
    from pxr import UsdGeom

    from newton_usd.sim import Simulation
    from newton_usd.sync.world_copies import grid_offsets

    src = tmp_path / "env.usda"
    _two_link_stage(src)
    sim = Simulation.open(str(src), device="cpu", worlds=2, write_worlds="all", live=False)
    assert sim.world_spacing == pytest.approx(1.25 * 4.0)  # the 4-unit ground is the widest thing
    sim.close()
    sim = Simulation.open(str(src), device="cpu", worlds=2, write_worlds="all", world_spacing=0.0, live=False)
    sim.run(5)
    cache = UsdGeom.XformCache(sim.time_code)
    a, b = (cache.GetLocalToWorldTransform(sim.stage.GetPrimAtPath(p)) for p in ("/World/Box", "/World_world1/Box"))
    np.testing.assert_allclose(np.array(a), np.array(b), atol=1e-6)  # identical worlds, in place
    sim.close()
    # Y up: the grid spans X and Z.
    np.testing.assert_allclose(grid_offsets(4, 2.0, "Y"), [[0, 0, 0], [2, 0, 0], [0, 0, 2], [2, 0, 2]])


def test_write_worlds_all_bad_input_and_no_op_cases(tmp_path):
    from newton_usd.errors import NewtonUsdError
    from newton_usd.sim import Simulation

    src = tmp_path / "env.usda"
    _two_link_stage(src)
    with pytest.raises(NewtonUsdError, match="write_worlds"):
        Simulation.open(str(src), device="cpu", worlds=2, write_worlds="every")
    with pytest.raises(NewtonUsdError, match="world_spacing"):
        Simulation.open(str(src), device="cpu", worlds=2, write_worlds="all", world_spacing=-1.0)
    sim = Simulation.open(str(src), device="cpu", worlds=1, write_worlds="all", live=False)
    assert sim.copies is None  # one world: nothing to copy
    sim.close()
    sim = Simulation.open(str(src), device="cpu", worlds=2, write_worlds="all", live=False)
    with pytest.raises(NewtonUsdError, match="copies"):
        sim.save_in_place()
    sim.close()
