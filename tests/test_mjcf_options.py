"""MJCF import options (fix_base, import_scene, self_collision, collision_from_visuals, merge_meshes): the
same for add_mjcf and convert (then add_usd), and as usdsim convert flags."""

import logging

import mujoco
import numpy as np
import pytest
from pxr import Usd, UsdGeom, UsdPhysics

from newton_usd import ModelBuilder, UsdInputError
from newton_usd.cli import main
from newton_usd.mjcf import convert
from newton_usd.solvers import SolverMuJoCo

WALKER = """
<mujoco model="walker">
  <option gravity="0 0 -9.81"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1"/>
    <body name="torso" pos="0 0 1"><freejoint name="root"/><geom type="box" size=".2 .1 .1"/>
      <body name="thigh" pos="0.3 0 0"><joint name="hip" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/>
        <body name="shin" pos="0.3 0 0"><joint name="knee" axis="0 1 0" ref="0.2"/>
          <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/></body></body>
      <body name="head" pos="-0.3 0 0"><joint name="neck" type="ball"/><geom type="sphere" size=".05"/></body>
    </body>
    <body name="table" pos="2 0 .3"><geom type="box" size=".3 .3 .3"/></body>
  </worldbody>
  <actuator><motor name="hip_motor" joint="hip"/></actuator>
  <keyframe>
    <key name="crouch" qpos="0.5 0.2 0.8 0.9239 0 0.3827 0  0.4  0.9  0.9659 0.2588 0 0  "
         qvel="0 0 0 0 0 0  0.5 -0.5  0 0 0"/>
  </keyframe>
</mujoco>
"""

ARM = """
<mujoco model="arm">
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1"/>
    <body name="base" pos="0 0 0.5"><geom type="cylinder" size=".1 .05"/>
      <body name="upper" pos="0 0 .1"><joint name="shoulder" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0 0 .3" size=".03"/>
        <body name="lower" pos="0 0 .3"><joint name="elbow" axis="0 1 0"/>
          <geom type="capsule" fromto="0 0 0 0 0 .3" size=".03"/></body></body></body>
    <body name="table" pos="2 0 .3"><geom type="box" size=".3 .3 .3"/></body>
  </worldbody>
  <keyframe><key name="bent" qpos="0.6 -1.2" qvel="0.1 0"/></keyframe>
</mujoco>
"""


def build(route, xml, tmp_path, **options):
    """A finalized model and its SolverMuJoCo, through add_mjcf or convert then add_usd."""
    b = ModelBuilder()
    if route == "mjcf":
        b.add_mjcf(xml, **options)
    else:
        b.add_usd(convert(xml, tmp_path / "model.usda", **options))
    model = b.finalize("cpu")
    return model, SolverMuJoCo(model, backend="cpu")


def step(solver, n, dt=0.002):
    model = solver.model
    s0, s1, control = model.state(), model.state(), model.control()
    for _ in range(n):
        solver.step(s0, s1, control, None, dt)
        s0, s1 = s1, s0
    return s0


def body_pos(model, state, name):
    i = next(i for i, label in enumerate(model.body_label) if label.rsplit("/", 1)[-1] == name)
    return state.body_q.numpy()[i, :3]


def keyframe_pos(model, solver, key, names):
    s = model.state()
    solver.reset_to_keyframe(s, next(k for k in model.keyframe_label if k.endswith(key)))
    return np.array([body_pos(model, s, n) for n in names])


def native_pos(xml, qpos, names):
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qpos[:] = qpos
    mujoco.mj_kinematics(m, d)
    return np.array([d.xpos[m.body(n).id] for n in names])


@pytest.mark.parametrize("route", ["mjcf", "usd"])
def test_fix_base_fixed_welds_the_floating_robot_and_keeps_its_keyframe(route, tmp_path):
    ref = mujoco.MjModel.from_xml_string(WALKER)
    model, solver = build(route, WALKER, tmp_path, fix_base=True)
    m = solver.mj_model
    assert (m.njnt, m.nq, m.nv) == (ref.njnt - 1, ref.nq - 7, ref.nv - 6)
    assert mujoco.mjtJoint.mjJNT_FREE not in m.jnt_type
    assert m.body_mass.sum() == pytest.approx(ref.body_mass.sum())
    # The keyframe: the joints as the source's keyframe, the torso where it is at qpos0.
    names = ["torso", "thigh", "shin", "head"]
    expected = native_pos(WALKER, np.concatenate([ref.qpos0[:7], ref.key_qpos[0][7:]]), names)
    np.testing.assert_allclose(keyframe_pos(model, solver, "crouch", names), expected, atol=1e-6)
    s = step(solver, 300)
    np.testing.assert_allclose(body_pos(model, s, "torso"), [0, 0, 1], atol=1e-9)  # held up, welded
    assert body_pos(model, s, "shin")[2] < 0.95  # the legs swing


def test_fix_base_fixed_leaves_a_loose_prop_free(tmp_path):
    xml = """<mujoco><worldbody>
      <body name="robot" pos="0 0 1"><freejoint/><geom size=".1"/>
        <body name="arm" pos=".2 0 0"><joint axis="0 1 0"/><geom size=".05"/></body></body>
      <body name="crate" pos="1 0 1"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
    </worldbody></mujoco>"""
    model, solver = build("mjcf", xml, tmp_path, fix_base=True)
    m = solver.mj_model
    assert list(m.jnt_type) == [mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_FREE]
    s = step(solver, 200)
    np.testing.assert_allclose(body_pos(model, s, "robot"), [0, 0, 1], atol=1e-9)  # welded
    assert body_pos(model, s, "crate")[2] < 0.9  # falls


def test_fix_base_source_keeps_the_keyframe_and_the_free_joint(tmp_path):
    ref = mujoco.MjModel.from_xml_string(WALKER)
    model, solver = build("mjcf", WALKER, tmp_path)
    assert solver.mj_model.nq == ref.nq
    names = ["torso", "thigh", "shin", "head"]
    np.testing.assert_allclose(
        keyframe_pos(model, solver, "crouch", names), native_pos(WALKER, ref.key_qpos[0], names), atol=1e-6
    )


@pytest.mark.parametrize("route", ["mjcf", "usd"])
def test_fix_base_floating_frees_the_arm_base_but_not_the_table(route, tmp_path):
    ref = mujoco.MjModel.from_xml_string(ARM)
    model, solver = build(route, ARM, tmp_path, fix_base=False)
    m = solver.mj_model
    assert (m.njnt, m.nq, m.nv) == (ref.njnt + 1, ref.nq + 7, ref.nv + 6)
    assert list(m.jnt_type).count(mujoco.mjtJoint.mjJNT_FREE) == 1
    if route == "mjcf":
        assert "base_free" in model.joint_label
    assert m.body_mass.sum() == pytest.approx(ref.body_mass.sum())
    # The keyframe: the base where it was, the arm bent as the source's keyframe says.
    names = ["base", "upper", "lower"]
    np.testing.assert_allclose(keyframe_pos(model, solver, "bent", names), native_pos(ARM, ref.key_qpos[0], names),
                               atol=1e-6)  # fmt: skip
    s = step(solver, 300)
    assert body_pos(model, s, "base")[2] < 0.3  # it falls to the floor
    np.testing.assert_allclose(body_pos(model, s, "table"), [2, 0, 0.3], atol=1e-9)  # scenery stays


def test_fix_base_fixed_refuses_a_free_joint_that_is_used(tmp_path):
    src = tmp_path / "thruster.xml"
    src.write_text(WALKER.replace('<motor name="hip_motor" joint="hip"/>', '<motor name="thrust" joint="root"/>'))
    with pytest.raises(UsdInputError, match=r"thruster.xml: .*free joint 'root' of body 'torso'.*actuator 'thrust'"):
        ModelBuilder().add_mjcf(str(src), fix_base=True)


SCENE = """
<mujoco model="scene">
  <option gravity="0 0 -1" timestep="0.01" integrator="RK4"/>
  <worldbody><body name="ball" pos="0 0 1"><freejoint/><geom size=".1"/></body></worldbody>
</mujoco>
"""


def test_import_scene_false_leaves_the_scene_settings_alone(tmp_path):
    b = ModelBuilder()
    b.add_mjcf(SCENE)
    assert b.gravity[2] == -1.0 and b.mujoco["option"]["integrator"] == "rk4"
    b = ModelBuilder(gravity=(0.0, 0.0, -3.0))
    b.add_mjcf(SCENE, import_scene=False)
    np.testing.assert_allclose(b.gravity, [0, 0, -3])
    assert "option" not in b.mujoco and "flag" not in b.mujoco
    m = SolverMuJoCo(b.finalize("cpu"), backend="cpu").mj_model
    assert m.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST  # SolverMuJoCo's default

    out = convert(SCENE, tmp_path / "scene.usda", import_scene=False)
    stage = Usd.Stage.Open(str(out))
    assert not [p for p in stage.Traverse() if p.IsA(UsdPhysics.Scene)]
    b = ModelBuilder()
    b.add_usd(out)  # no scene: usdsim's defaults
    np.testing.assert_allclose(b.gravity, [0, 0, -9.81])


GRIPPER = """
<mujoco model="gripper">
  <option gravity="0 0 0"/>
  <worldbody>
    <body name="palm" pos="0 0 1"><geom type="box" size=".2 .05 .02"/>
      <body name="left" pos="-0.045 0 -0.1"><joint name="l" type="slide" axis="1 0 0"/>
        <geom type="box" size=".05 .03 .05"/></body>
      <body pos="0.045 0 -0.1"><joint name="r" type="slide" axis="1 0 0"/>
        <geom type="box" size=".05 .03 .05"/></body>
    </body>
    <body pos="1 0 1"><freejoint/><geom type="box" size=".05 .05 .05"/></body>
  </worldbody>
</mujoco>
"""


@pytest.mark.parametrize("route", ["mjcf", "usd"])
def test_self_collision_off_removes_contacts_between_links_of_one_robot(route, tmp_path):
    """The two fingers overlap: as the source they push apart; without self-collision they stay."""
    _, solver = build(route, GRIPPER, tmp_path)
    model, solver = build(route, GRIPPER, tmp_path)
    fingers = [body_pos(model, step(solver, 50), n)[0] for n in ("left", "body_3")]
    assert fingers[0] < -0.05 and fingers[1] > 0.05  # pushed apart by their contact
    model, solver = build(route, GRIPPER, tmp_path, self_collision=False)
    m = solver.mj_model
    assert m.nexclude >= 3  # palm-left, palm-right, left-right; the free box is another tree
    fingers = [body_pos(model, step(solver, 50), n)[0] for n in ("left", "body_3")]
    np.testing.assert_allclose(fingers, [-0.045, 0.045], atol=1e-9)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    assert d.ncon == 0
    assert any(label.endswith("body_3") for label in model.body_label)  # named as it was labelled


MESHES = """
<mujoco model="rocks">
  <compiler meshdir="."/>
  <asset>
    <mesh name="ell" file="ell.obj"/>
    <mesh name="tetra" vertex="0 0 0  0.1 0 0  0 0.1 0  0 0 0.1"/>
  </asset>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 .1"/>
    <body name="rock" pos="0 0 0.3" euler="0 0 30"><freejoint/>
      <frame pos="0 0 0.01" euler="0 0 10">
        <geom name="shell" type="mesh" mesh="ell" contype="0" conaffinity="0" group="1" rgba="0.5 0.5 0.5 1"/>
      </frame>
      <geom type="mesh" mesh="tetra" pos="0.05 0.05 0.1" contype="0" conaffinity="0" group="1" rgba="0.5 0.5 0.5 1"/>
      <geom type="mesh" mesh="tetra" pos="0.15 0.05 0.1" euler="0 0 90" contype="0" conaffinity="0" group="1"
            rgba="0.5 0.5 0.5 1"/>
      <geom type="mesh" mesh="tetra" pos="0.05 0.15 0.1" contype="0" conaffinity="0" group="2"/>
    </body>
    <body name="crate" pos="1 0 0.3"><freejoint/>
      <geom type="box" size=".05 .05 .05"/>
      <geom type="mesh" mesh="tetra" pos="0 0 0.05" contype="0" conaffinity="0"/>
      <geom type="mesh" mesh="tetra" pos="0 0 -0.1" contype="0" conaffinity="0"/>
      <geom type="mesh" mesh="tetra" pos="0 0.1 0"/><geom type="mesh" mesh="tetra" pos="0 -0.1 0"/>
    </body>
  </worldbody>
</mujoco>
"""


def write_meshes(tmp_path):
    """An L-shaped prism (concave: its hull is not itself) as an OBJ file, and the MJCF using it."""
    outline = [(0, 0), (0.2, 0), (0.2, 0.1), (0.1, 0.1), (0.1, 0.2), (0, 0.2)]
    lines = [f"v {x} {y} {z}" for z in (0, 0.1) for x, y in outline]
    for a, b, c in [(0, 2, 1), (0, 3, 2), (0, 5, 3), (3, 5, 4)]:
        lines += [f"f {a + 1} {b + 1} {c + 1}", f"f {a + 7} {c + 7} {b + 7}"]
    for i in range(6):
        j = (i + 1) % 6
        lines += [f"f {i + 1} {j + 1} {j + 7}", f"f {i + 1} {j + 7} {i + 7}"]
    (tmp_path / "ell.obj").write_text("\n".join(lines) + "\n")
    src = tmp_path / "rocks.xml"
    src.write_text(MESHES)
    return str(src)


@pytest.mark.parametrize(
    ("route", "token", "added"),
    [
        ("mjcf", None, 0),
        ("mjcf", "convexHull", 0),
        ("mjcf", "boundingSphere", 4),
        ("mjcf", "boundingCube", 4),
        ("mjcf", "convexDecomposition", None),
        ("usd", "convexHull", 0),
        ("usd", "convexDecomposition", None),
    ],
)
def test_collision_from_visuals_lands_a_visual_only_body_on_the_floor(route, token, added, tmp_path):
    src = write_meshes(tmp_path)
    ref = mujoco.MjModel.from_xml_path(src)
    model, solver = build(route, src, tmp_path, collision_from_visuals=token)
    m = solver.mj_model
    assert sorted(m.body_mass) == pytest.approx(sorted(ref.body_mass))  # masses unchanged
    colliders = int(((m.geom_contype != 0) | (m.geom_conaffinity != 0)).sum())
    if added is not None:
        assert m.ngeom == ref.ngeom + added
    if token is None:
        assert colliders == 4  # floor, crate box and the two crate tetrahedra
    elif token == "convexDecomposition":
        assert m.ngeom > ref.ngeom + 4 and colliders > 4 + 4  # the L in two parts or more
    else:
        assert colliders == 4 + 4  # the rock's four visual geoms; not the crate's, which has colliders
    s = step(solver, 400)
    z = body_pos(model, s, "rock")[2]
    if token is None:
        assert z < -1.0  # fell through the floor
    else:
        assert -0.05 < z < 0.3  # rests on it (its origin 1 cm below the shell)
    assert body_pos(model, s, "crate")[2] > 0.0


def test_merge_meshes_merges_visual_meshes_of_one_look(tmp_path, caplog):
    src = write_meshes(tmp_path)
    ref = mujoco.MjModel.from_xml_path(src)
    with caplog.at_level(logging.WARNING, logger="newton_usd"):
        model, solver = build("mjcf", src, tmp_path, merge_meshes=True)
    m = solver.mj_model
    # rock: shell + two tetrahedra of one group and colour -> 1 (the group-2 one stays); crate: two visual
    # tetrahedra -> 1; the crate's colliding tetrahedra stay apart.
    assert m.ngeom == ref.ngeom - 3
    assert "merge_meshes: 5 visual mesh geoms merged into 2" in caplog.text
    assert sorted(m.body_mass) == pytest.approx(sorted(ref.body_mass))
    assert model.shape_label.count("shell") == 1  # the first geom of a merge keeps its name

    def world_box(mm, body, visual):
        d = mujoco.MjData(mm)
        mujoco.mj_forward(mm, d)
        points = []
        for g in range(mm.ngeom):
            if mm.geom_bodyid[g] != mm.body(body).id or mm.geom_type[g] != mujoco.mjtGeom.mjGEOM_MESH:
                continue
            if visual != (mm.geom_contype[g] == 0):
                continue
            i = mm.geom_dataid[g]
            v = mm.mesh_vert[mm.mesh_vertadr[i] : mm.mesh_vertadr[i] + mm.mesh_vertnum[i]]
            points.append(v @ d.geom_xmat[g].reshape(3, 3).T + d.geom_xpos[g])
        points = np.concatenate(points)
        return points.min(axis=0), points.max(axis=0), len(points)

    for body in ("rock", "crate"):  # the visuals cover the same space, vertex for vertex
        lo, hi, n = world_box(m, body, True)
        lo0, hi0, n0 = world_box(ref, body, True)
        np.testing.assert_allclose(lo, lo0, atol=1e-6)
        np.testing.assert_allclose(hi, hi0, atol=1e-6)
        assert n == n0

    out = convert(src, tmp_path / "merged.usda", merge_meshes=True)
    stage = Usd.Stage.Open(out)
    meshes = [p for p in stage.Traverse() if p.IsA(UsdGeom.Mesh)]
    assert len(meshes) == 8 - 3


def test_options_are_checked():
    with pytest.raises(ValueError, match="self_collision.*already says what self-collides"):
        ModelBuilder().add_mjcf(SCENE, self_collision=True)
    with pytest.raises(ValueError, match="collision_from_visuals must be None or one of convexHull"):
        ModelBuilder().add_mjcf(SCENE, collision_from_visuals="hull")


def test_usdsim_convert_flags(tmp_path):
    src = tmp_path / "walker.xml"
    src.write_text(WALKER)
    out = tmp_path / "walker.usda"
    rc = main(["convert", str(src), "-o", str(out), "--fix-base", "fixed", "--no-scene", "--no-self-collision"])
    assert rc == 0
    stage = Usd.Stage.Open(str(out))
    assert not [p for p in stage.Traverse() if p.IsA(UsdPhysics.Scene)]
    torso = stage.GetPrimAtPath("/walker/torso")
    assert torso.HasAPI(UsdPhysics.ArticulationRootAPI)
    fixed = [p for p in stage.Traverse() if p.IsA(UsdPhysics.FixedJoint)]
    assert any(UsdPhysics.Joint(p).GetBody1Rel().GetTargets() == ["/walker/torso"] for p in fixed)  # welded
    assert torso.HasAPI(UsdPhysics.FilteredPairsAPI)  # no self-collision

    src = write_meshes(tmp_path)
    out = tmp_path / "rocks.usda"
    args = ["convert", src, "-o", str(out), "--collision-from-visuals", "boundingCube", "--merge-meshes"]
    assert main(args) == 0
    stage = Usd.Stage.Open(str(out))
    rock = stage.GetPrimAtPath("/rocks/rock")
    cubes = [p for p in Usd.PrimRange(rock) if p.IsA(UsdGeom.Cube) and p.HasAPI(UsdPhysics.CollisionAPI)]
    assert len(cubes) == 4
    with pytest.raises(SystemExit):
        main(["convert", src, "--fix-base", "bolted"])
