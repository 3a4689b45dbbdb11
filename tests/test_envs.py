"""Environments as worlds: ``add_usd(..., env_root=)`` imports the first of N identical environment prims once
and replicates it into one world per environment, placed and labelled as its own prims; Simulation and
usdsim write every environment."""

import json
import math

import numpy as np
import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from newton_usd import ModelBuilder
from newton_usd.cli import main
from newton_usd.core.quat import quat_conjugate, quat_multiply, quat_rotate
from newton_usd.errors import NewtonUsdError, UsdInputError
from newton_usd.sim import Simulation
from newton_usd.solvers import SolverMuJoCo

from stages import ENV_ARM, ENV_PIVOT, env_placement, environments

N = 4
ROOT = "/World/envs"


def env_frame(i):
    """Environment i's place: (position, Warp quaternion about Z)."""
    pos, deg = env_placement(i)
    half = math.radians(deg) / 2
    return np.array(pos), np.array([0.0, 0.0, math.sin(half), math.cos(half)])


def to_env(i, pose):
    """A world pose (7) in environment i's frame."""
    p, q = env_frame(i)
    qi = quat_conjugate(q)
    return np.concatenate([quat_rotate(qi, pose[:3] - p), quat_multiply(qi, pose[3:])])


def world_of(model, label):
    return [model.body_label.index(f"{ROOT}/env_{w}/{label}") for w in range(N)]


@pytest.mark.parametrize("style", ["inherit", "reference", "flat"])
def test_each_environment_is_a_world_placed_and_labelled_as_its_own(style):
    b = ModelBuilder()
    imported = b.add_usd(environments(n=N, style=style), env_root=ROOT)
    m = b.finalize("cpu")
    assert m.num_worlds == N and imported.environments.paths == [f"{ROOT}/env_{w}" for w in range(N)]
    assert m.body_count == 2 * N
    for w in range(N):
        view = m.world_view(w)
        assert view.body_label == [f"{ROOT}/env_{w}/box", f"{ROOT}/env_{w}/arm"]
        assert f"{ROOT}/env_{w}/hinge" in view.joint_label
        assert "/World/ground" in view.shape_label  # the shared ground, in every world, where it is
        body_q = view.body_q.numpy().astype(np.float64)
        np.testing.assert_allclose(to_env(w, body_q[0]), [0, 0, 0.5, 0, 0, 0, 1], atol=1e-6)  # the box
        np.testing.assert_allclose(to_env(w, body_q[1])[:3], ENV_PIVOT, atol=1e-6)  # the arm's hinge
        # the hinge's world side sits at this environment's pivot
        hinge = view.joint_label.index(f"{ROOT}/env_{w}/hinge")
        x_p = view.joint_X_p.numpy()[hinge].astype(np.float64)
        np.testing.assert_allclose(to_env(w, x_p)[:3], ENV_PIVOT, atol=1e-6)
        ground = view.shape_label.index("/World/ground")
        np.testing.assert_allclose(view.shape_transform.numpy()[ground][:3], 0.0, atol=1e-9)
    assert m.body_world.numpy().tolist() == [w for w in range(N) for _ in range(2)]
    assert imported.body_index[f"{ROOT}/env_3/arm"] == m.body_label.index(f"{ROOT}/env_3/arm")
    # each hinge starts 30 degrees off, as authored
    hinges = [m.joint_label.index(f"{ROOT}/env_{w}/hinge") for w in range(N)]
    q = m.joint_q.numpy()[m.joint_q_start.numpy()[hinges]]
    np.testing.assert_allclose(q, math.radians(30.0), atol=1e-6)


@pytest.mark.parametrize("up, meters_per_unit", [("Z", 1.0), ("Y", 0.01)])
def test_environment_worlds_simulate_as_the_whole_stage_does(up, meters_per_unit):
    """The flat stage (every environment authored in full, at its own place) simulated as N worlds gives
    every body the motion the plain import (one world holding all) gives it; each is written onto its own
    prim."""
    stage = environments(n=N, style="flat", up=up, meters_per_unit=meters_per_unit)
    frames = 30
    plain = Simulation.open(stage, live=False)
    plain.run(frames)
    expected = {label: pose for label, pose in zip(plain.model.body_label, plain.state.body_q.numpy(), strict=True)}
    plain.close()
    sim = Simulation.open(environments(n=N, style="flat", up=up, meters_per_unit=meters_per_unit), env_root=ROOT,
                          live=False, joint_states=True)  # fmt: skip
    assert sim.worlds == N and sim.model.body_count == len(expected)
    sim.run(frames)
    body_q = sim.state.body_q.numpy()
    moved = 0.0
    for b, label in enumerate(sim.model.body_label):
        np.testing.assert_allclose(body_q[b], expected[label], atol=2e-4, err_msg=label)
        moved = max(moved, float(np.abs(body_q[b] - sim.model.body_q.numpy()[b]).max()))
        # StageSync wrote every environment's prim: its world transform (stage units, axes) is the body's pose
        prim = sim.stage.GetPrimAtPath(label)
        m = np.array(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(sim.time_code))
        world = sim.imported.frame.world_pose_to_sim(m[3, :3], np.array([0.0, 0.0, 0.0, 1.0]))[0]
        np.testing.assert_allclose(world, body_q[b][:3], atol=1e-4, err_msg=label)
    assert moved > 0.05  # (it did simulate)
    # and every environment's hinge got its own joint state
    q, q_start = sim.state.joint_q.numpy(), sim.model.joint_q_start.numpy()
    for w in range(N):
        label = f"{ROOT}/env_{w}/hinge"
        angle = sim.stage.GetAttributeAtPath(f"{label}.state:angular:physics:position").Get(sim.time_code)
        assert angle == pytest.approx(math.degrees(q[q_start[sim.model.joint_label.index(label)]]), abs=1e-3)
    angles = [q[q_start[sim.model.joint_label.index(f"{ROOT}/env_{w}/hinge")]] for w in range(N)]
    assert abs(angles[0] - math.radians(30.0)) > 0.05  # (it swung)


def test_each_environment_moves_in_its_own_place():
    """Inherited environments (the hinge's world frame authored once, in env_0): every box falls onto the
    shared ground inside its own environment, every pendulum swings about its own environment's pivot, and
    each environment's motion in its own frame is env_0's (env_2 is turned 90 degrees)."""
    sim = Simulation.open(environments(n=N, style="inherit"), env_root=ROOT, live=False)
    solver = sim.solver
    assert solver.mj_models[2] is not solver.mj_models[0]  # the fixed bases are placed per world
    arm = solver.spec_map.body_mj[1]
    assert not np.allclose(solver.mj_models[2].body_pos[arm], solver.mj_models[0].body_pos[arm])
    swing = []
    for _ in range(4):
        sim.run(15)
        body_q = sim.state.body_q.numpy().astype(np.float64)
        swing.append(to_env(0, body_q[world_of(sim.model, "arm")[0]])[3:])
        for label, rows in (("box", world_of(sim.model, "box")), ("arm", world_of(sim.model, "arm"))):
            local = np.array([to_env(w, body_q[rows[w]]) for w in range(N)])
            np.testing.assert_allclose(local, np.broadcast_to(local[0], local.shape), atol=2e-4, err_msg=label)
    box = to_env(0, body_q[world_of(sim.model, "box")[0]])
    np.testing.assert_allclose(box[:3], [0.0, 0.0, 0.1], atol=5e-3)  # resting on the shared ground
    for w, row in enumerate(world_of(sim.model, "arm")):
        local = to_env(w, body_q[row])
        com = local[:3] + quat_rotate(local[3:], [0.0, 0.0, -ENV_ARM])
        assert np.linalg.norm(com - np.array(ENV_PIVOT)) == pytest.approx(ENV_ARM, abs=1e-3)
        np.testing.assert_allclose(local[:3], ENV_PIVOT, atol=1e-3)  # the hinge stays at its env's pivot
    assert np.ptp([abs(q[0]) for q in swing]) > 0.05  # it swung
    # every environment's prims were written
    for w in range(N):
        prim = sim.stage.GetPrimAtPath(f"{ROOT}/env_{w}/box")
        z = UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(sim.time_code).ExtractTranslation()[2]
        assert z == pytest.approx(0.1, abs=5e-3)
    sim.close()


def _edit(stage, edit):
    edit(stage)
    return stage


@pytest.mark.parametrize(
    "edit, prim, attribute",
    [
        (lambda s: UsdPhysics.MassAPI(s.GetPrimAtPath(f"{ROOT}/env_2/box")).GetMassAttr().Set(2.0),
         f"{ROOT}/env_2/box", "physics:mass"),
        (lambda s: UsdGeom.Cube(s.GetPrimAtPath(f"{ROOT}/env_1/box")).GetSizeAttr().Set(0.3),
         f"{ROOT}/env_1/box", "size"),
        (lambda s: s.GetPrimAtPath(f"{ROOT}/env_3/box").GetAttribute("xformOp:translate").Set(Gf.Vec3d(0, 0, 0.7)),
         f"{ROOT}/env_3/box", "xformOp:translate"),
        (lambda s: UsdPhysics.CollisionAPI.Apply(UsdGeom.Sphere.Define(s, f"{ROOT}/env_1/arm/bob").GetPrim()),
         f"{ROOT}/env_1/arm/bob", None),
        (lambda s: s.GetPrimAtPath(f"{ROOT}/env_1/hinge").CreateAttribute(
            "state:angular:physics:position", Sdf.ValueTypeNames.Float).Set(10.0),
         f"{ROOT}/env_1/hinge", "state:angular:physics:position"),
        (lambda s: UsdPhysics.RevoluteJoint(s.GetPrimAtPath(f"{ROOT}/env_2/hinge")).GetLocalPos0Attr().Set(
            Gf.Vec3f(6.0, 0.6, 1.0)),
         f"{ROOT}/env_2/hinge", "physics:localPos0"),
    ],
)  # fmt: skip
def test_an_environment_that_differs_is_named_with_its_first_difference(edit, prim, attribute):
    stage = _edit(environments(n=N, style="inherit"), edit)
    with pytest.raises(UsdInputError, match="differs from /World/envs/env_0") as e:
        ModelBuilder().add_usd(stage, env_root=ROOT)
    assert e.value.prim == prim and e.value.attribute == attribute
    ModelBuilder().add_usd(stage)  # the stage itself is fine: the environments are simply not alike


def test_what_environments_may_author_differently():
    """Their own place, the hinge's world-side frame moved with them, attributes the import never reads
    (Newton's custom ``physics:newton:articulation_index``), and equal values."""
    stage = environments(n=N, style="inherit")
    for w in range(1, N):
        box = stage.GetPrimAtPath(f"{ROOT}/env_{w}/box")
        box.CreateAttribute("physics:newton:articulation_index", Sdf.ValueTypeNames.UInt, custom=True).Set(w)
        box.CreateAttribute("primvars:displayColor", Sdf.ValueTypeNames.Color3fArray).Set([(w / N, 0, 0)])
        UsdPhysics.MassAPI(box).GetMassAttr().Set(1.0)  # the same value, authored again
    b = ModelBuilder()
    b.add_usd(stage, env_root=ROOT)
    assert b.num_worlds == N


def test_environments_must_differ_rigidly_and_stay_apart():
    scaled = environments(n=N, style="inherit")
    UsdGeom.Xformable(scaled.GetPrimAtPath(f"{ROOT}/env_1")).AddScaleOp().Set(Gf.Vec3f(2, 2, 2))
    with pytest.raises(UsdInputError, match="scaled, sheared or mirrored") as e:
        ModelBuilder().add_usd(scaled, env_root=ROOT)
    assert e.value.prim == f"{ROOT}/env_1"

    # a joint outside the environments that holds one environment's body
    tied = environments(n=N, style="inherit")
    joint = UsdPhysics.FixedJoint.Define(tied, "/World/tether")
    joint.CreateBody1Rel().SetTargets([Sdf.Path(f"{ROOT}/env_1/box")])
    with pytest.raises(UsdInputError, match="not the same prim of every environment") as e:
        ModelBuilder().add_usd(tied, env_root=ROOT)
    assert (e.value.prim, e.value.attribute) == ("/World/tether", "physics:body1")

    # outside prims that treat every environment alike are fine: a ground filtered against every box
    alike = environments(n=N, style="inherit")
    pairs = UsdPhysics.FilteredPairsAPI.Apply(alike.GetPrimAtPath("/World/ground"))
    pairs.CreateFilteredPairsRel().SetTargets([Sdf.Path(f"{ROOT}/env_{w}/box") for w in range(N)])
    assert ModelBuilder().add_usd(alike, env_root=ROOT).environments is not None

    missing = environments(n=N)
    with pytest.raises(UsdInputError, match="no such prim"):
        ModelBuilder().add_usd(missing, env_root="/World/nothing")
    with pytest.raises(NewtonUsdError, match="env_root"):
        Simulation.open(missing, env_root=ROOT, worlds=2)


def test_replicate_places_each_world():
    """ModelBuilder.replicate(placements=, local=, relabel=) on its own: local bodies, free-joint coordinates
    and velocities, static shapes, sites and keyframes move; the rest stays."""
    b = ModelBuilder()
    box = b.add_body(((1.0, 0.0, 0.5), (0, 0, 0, 1)), velocity=(1.0, 0.0, 0.0, 0.0, 0.0, 2.0), label="/e0/box")
    b.add_shape_box(box, hx=0.1, hy=0.1, hz=0.1, density=1000.0, label="/e0/box")
    j = b.add_joint_free(box, label="/e0/box")
    b.add_shape_box(-1, ((1.0, 1.0, 0.0), (0, 0, 0, 1)), label="/e0/table")
    b.add_shape_plane(label="/ground")
    b.add_site(-1, ((1.0, 0.0, 2.0), (0, 0, 0, 1)), label="/e0/mark")
    b.add_keyframe("/key", {j: np.array([1.0, 0.0, 2.0, 0, 0, 0, 1])}, {j: np.array([1.0, 0, 0, 0, 0, 0])})
    turn = (np.array([10.0, 0.0, 0.0]), np.array([0.0, 0.0, math.sin(math.pi / 4), math.cos(math.pi / 4)]))
    b.replicate(2, placements=[None, turn], local=lambda label: label.startswith("/e0"),
                relabel=lambda label, w: label.replace("/e0", f"/e{w}"))  # fmt: skip
    m = b.finalize("cpu")
    assert m.body_label == ["/e0/box", "/e1/box"] and m.shape_label[3:] == ["/e1/box", "/e1/table", "/ground"]
    np.testing.assert_allclose(m.body_q.numpy()[1][:3], [10.0, 1.0, 0.5], atol=1e-6)  # (1, 0) turned, moved
    np.testing.assert_allclose(m.joint_q.numpy()[7:10], [10.0, 1.0, 0.5], atol=1e-6)
    np.testing.assert_allclose(m.joint_qd.numpy()[6:12], [0.0, 1.0, 0.0, 0.0, 0.0, 2.0], atol=1e-6)
    np.testing.assert_allclose(m.shape_transform.numpy()[4][:3], [9.0, 1.0, 0.0], atol=1e-6)  # the table
    np.testing.assert_allclose(m.shape_transform.numpy()[5][:3], [0.0, 0.0, 0.0])  # the ground stays
    np.testing.assert_allclose(m.site_transform.numpy()[1][:3], [10.0, 1.0, 2.0], atol=1e-6)
    np.testing.assert_allclose(m.keyframe_joint_q[0][7:10], [10.0, 1.0, 2.0], atol=1e-6)
    np.testing.assert_allclose(m.keyframe_joint_qd[0][6:9], [0.0, 1.0, 0.0], atol=1e-6)
    # the solver puts each world into its own keyframe pose; the static table is placed per world
    solver = SolverMuJoCo(m, backend="cpu")
    state = m.state()
    solver.reset_to_keyframe(state, "/key")
    np.testing.assert_allclose(state.body_q.numpy()[:, :3], [[1.0, 0.0, 2.0], [10.0, 1.0, 2.0]], atol=1e-5)
    table = solver.spec_map.shape_mj[1]
    np.testing.assert_allclose(solver.mj_models[1].geom_pos[table], [9.0, 1.0, 0.0], atol=1e-9)
    np.testing.assert_allclose(solver.mj_models[0].geom_pos[table], [1.0, 1.0, 0.0], atol=1e-9)


def test_usdsim_runs_and_describes_environments(tmp_path, capsys):
    path = tmp_path / "envs.usda"
    environments(path, n=N, style="reference").Save()
    out = tmp_path / "out.usda"
    assert main(["run", str(path), "--envs", ROOT, "-n", "12", "-o", str(out), "--format", "json", "-q"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["worlds"] == N and summary["bodies"] == 2
    result = Usd.Stage.Open(str(out))
    for w in range(N):
        prim = result.GetPrimAtPath(f"{ROOT}/env_{w}/box")
        z = [UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(t).ExtractTranslation()[2] for t in (0, 12)]
        assert z[0] == pytest.approx(0.5, abs=1e-6) and z[1] < 0.45  # env w's box fell, written on its prim
    assert main(["info", str(path), "--envs", ROOT]) == 0
    text = capsys.readouterr().out
    assert f"worlds: {N}, one per environment under {ROOT} (env_0, env_1, env_2, env_3)" in text
    assert "model (per world): 2 bodies" in text
    assert main(["run", str(path), "--envs", "/World/none", "-n", "1", "-q"]) == 2
    assert "no such prim" in capsys.readouterr().err


def test_the_warp_backend_batches_the_per_world_places():
    """MuJoCo-Warp (on Warp's CPU device here): the fixed bases' places are a per-world ``body_pos`` batch,
    and the motion is the cpu backend's."""
    out = {}
    for backend in ("cpu", "warp"):
        b = ModelBuilder()
        b.add_usd(environments(n=N, style="inherit"), env_root=ROOT)
        model = b.finalize("cpu")
        solver = SolverMuJoCo(model, backend=backend)
        s0, s1, control = model.state(), model.state(), model.control()
        for _ in range(120):
            solver.step(s0, s1, control, None, 1.0 / 240.0)
            s0, s1 = s1, s0
        out[backend] = s0.body_q.numpy()
    assert solver.mjw_model.body_pos.shape[0] == N
    np.testing.assert_allclose(out["warp"], out["cpu"], atol=1e-4)
