"""MuJoCo element names are the source's names: a prim's displayName, an MJCF name whole."""

import mujoco
import pytest
from pxr import Gf, Sdf, UsdPhysics

from newton_usd import ModelBuilder
from newton_usd.solvers import SolverMuJoCo

from stages import add_box, new_stage


def _solver(builder):
    model = builder.finalize("cpu")
    return model, SolverMuJoCo(model, backend="cpu")


def converted_style_stage():
    """Prims renamed the way mujoco-usd-converter renames them, the MJCF names kept as displayNames: a
    body ``left\\waist`` (not a valid prim name) and a joint ``right_knee`` whose name a body took first."""
    stage = new_stage()
    waist = add_box(stage, "/robot/tn__leftwaist_1_sY0", pos=(0, 0, 1), mass=1.0).GetPrim()
    waist.SetDisplayName("left\\waist")
    shin = add_box(stage, "/robot/right_knee", pos=(0, 0, 0.6), mass=1.0).GetPrim()
    knee = UsdPhysics.RevoluteJoint.Define(stage, "/robot/right_knee_1")
    knee.GetPrim().SetDisplayName("right_knee")
    knee.CreateBody0Rel().SetTargets([waist.GetPath()])
    knee.CreateBody1Rel().SetTargets([shin.GetPath()])
    knee.CreateAxisAttr("Y")
    knee.CreateLocalPos0Attr(Gf.Vec3f(0, 0, -0.2))
    knee.CreateLocalPos1Attr(Gf.Vec3f(0, 0, 0.2))
    hip = UsdPhysics.FixedJoint.Define(stage, "/robot/hip")
    hip.CreateBody1Rel().SetTargets([waist.GetPath()])
    hip.CreateLocalPos0Attr(Gf.Vec3f(0, 0, 1))
    return stage


def test_display_names_name_the_mujoco_elements():
    builder = ModelBuilder()
    builder.add_usd(converted_style_stage())
    model, solver = _solver(builder)
    m = solver.mj_model
    assert m.joint("right_knee").id == solver.spec_map.joint_mj[model.joint_label.index("/robot/right_knee_1")]
    assert m.body("left\\waist").id == solver.spec_map.body_mj[model.body_label.index("/robot/tn__leftwaist_1_sY0")]
    assert m.body("right_knee").id >= 0  # the body without a displayName keeps its prim name
    assert "/robot/right_knee_1" in model.joint_label  # labels stay prim paths


def test_colliding_names_are_made_unique_the_same_way_every_time():
    def names():
        stage = new_stage()
        for i, path in enumerate(("/a/box", "/b/box", "/c/other")):
            prim = add_box(stage, path, pos=(i, 0, 1), mass=1.0).GetPrim()
            if path == "/c/other":
                prim.SetDisplayName("box")
        builder = ModelBuilder()
        builder.add_usd(stage)
        _, solver = _solver(builder)
        m = solver.mj_model
        return [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b) for b in range(1, m.nbody)]

    assert names() == names() == ["box", "box_2", "box_3"]


PART = """
<mujoco model="part">
  <worldbody>
    <body name="link" pos="0 0 0.1"><joint name="joint_0" type="hinge" axis="0 1 0"/>
      <geom name="geom_0" type="capsule" fromto="0 0 0 0.2 0 0" size="0.02"/>
      <site name="tip" pos="0.2 0 0"/></body>
  </worldbody>
  <actuator><motor name="motor_0" joint="joint_0"/></actuator>
</mujoco>
"""

SCENE = """
<mujoco model="scene">
  <asset><model name="part" file="part.xml"/></asset>
  <worldbody>
    <body name="mount" pos="0 0 1">
      <attach model="part" body="link" prefix="partnet_100015/"/>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.fixture
def attached(tmp_path):
    (tmp_path / "part.xml").write_text(PART)
    scene = tmp_path / "scene.xml"
    scene.write_text(SCENE)
    return scene


def _assert_prefixed(m, native):
    for obj, name in (
        (mujoco.mjtObj.mjOBJ_JOINT, "partnet_100015/joint_0"),
        (mujoco.mjtObj.mjOBJ_BODY, "partnet_100015/link"),
        (mujoco.mjtObj.mjOBJ_GEOM, "partnet_100015/geom_0"),
        (mujoco.mjtObj.mjOBJ_SITE, "partnet_100015/tip"),
        (mujoco.mjtObj.mjOBJ_ACTUATOR, "partnet_100015/motor_0"),
    ):
        assert mujoco.mj_name2id(native, obj, name) >= 0  # (the name native MuJoCo gives it)
        assert mujoco.mj_name2id(m, obj, name) >= 0, name


def test_attach_prefixes_are_kept_through_add_mjcf(attached):
    native = mujoco.MjModel.from_xml_path(str(attached))
    builder = ModelBuilder()
    builder.add_mjcf(attached)
    model, solver = _solver(builder)
    _assert_prefixed(solver.mj_model, native)
    assert "partnet_100015/joint_0" in model.joint_label


def test_attach_prefixes_are_kept_through_usdsim_convert(attached, tmp_path):
    from newton_usd.mjcf import convert

    native = mujoco.MjModel.from_xml_path(str(attached))
    out = convert(attached, tmp_path / "scene.usda")
    builder = ModelBuilder()
    result = builder.add_usd(out)
    (label,) = [label for label in builder.joint_label if "joint_0" in label]
    joint_prim = result.stage.GetPrimAtPath(label)
    assert joint_prim.GetDisplayName() == "partnet_100015/joint_0"  # the prim name had to differ
    _, solver = _solver(builder)
    _assert_prefixed(solver.mj_model, native)


def test_display_name_of_a_keyframe_selects_it():
    stage = converted_style_stage()
    key = stage.DefinePrim("/robot/Keyframes/tn__home_pose", "MjcKeyframe")
    key.SetDisplayName("home pose")
    key.CreateAttribute("mjc:qpos", Sdf.ValueTypeNames.DoubleArray).Set([0.3])
    builder = ModelBuilder()
    builder.add_usd(stage)
    model, solver = _solver(builder)
    assert solver.keyframe_index("home pose") == 0
    assert mujoco.mj_name2id(solver.mj_model, mujoco.mjtObj.mjOBJ_KEY, "home pose") == 0
