"""MJCF conversion checks: bad input named by file and line with no partial output."""

import importlib
import json
import os

import pytest
from pxr import Usd
from test_cli import usdsim
from test_schemas import run_python

from newton_usd import ModelBuilder, UsdInputError
from newton_usd.mjcf import convert

from conftest import REPO

BALL = """<mujoco model="ball">
  <worldbody>
    <body name="ball">
      <freejoint/>
      <geom type="sphere" size="0.1"/>
    </body>
  </worldbody>
</mujoco>
"""
MESH = """<mujoco>
  <compiler meshdir="meshes"/>
  <asset>
    <mesh name="hull" file="hull.stl"/>
  </asset>
  <worldbody>
    <body>
      <freejoint/>
      <geom type="mesh" mesh="hull"/>
    </body>
  </worldbody>
</mujoco>
"""

# name -> ({file: text}, the file MuJoCo is given, the file:line named, words of MuJoCo's message in it)
BAD_INPUT = {
    "malformed XML": (
        {"model.xml": '<mujoco>\n  <worldbody>\n    <body name="a">\n      <geom size="0.1"\n    </body>\n'},
        "model.xml", "model.xml:4", "XML parse error 6: Error=XML_ERROR_PARSING_ELEMENT",
    ),
    "malformed included file": (
        {
            "model.xml": '<mujoco>\n  <worldbody>\n    <include file="part.xml"/>\n  </worldbody>\n</mujoco>\n',
            "part.xml": '<mujoco>\n  <body name="a">\n    <geom size="0.1"\n  </body>\n</mujoco>\n',
        },
        "model.xml", "part.xml:3", "Include error: 'XML parse error 6",
    ),
    "missing mesh file": (
        {"model.xml": MESH},
        "model.xml", "model.xml:4", "meshes/hull.stl' at <mesh name=\"hull\" file=\"hull.stl\">; no such file: ",
    ),
    "missing mesh file named in an included file": (
        {
            "model.xml": MESH.replace('  <compiler meshdir="meshes"/>\n', "").replace(
                '<asset>\n    <mesh name="hull" file="hull.stl"/>\n  </asset>', '<include file="assets.xml"/>'
            ),
            "assets.xml": '<mujoco>\n  <asset>\n\n    <mesh name="hull" file="hull.obj"/>\n  </asset>\n</mujoco>\n',
        },
        "model.xml", "assets.xml:4", "Error opening file",
    ),
    "repeated name, the second in an included file": (
        {
            "model.xml": '<mujoco>\n  <worldbody>\n    <body name="a">\n      <joint name="j"/>\n'
            '      <geom size="0.1"/>\n    </body>\n    <include file="part.xml"/>\n  </worldbody>\n</mujoco>\n',
            "part.xml": '<mujoco>\n  <body name="b">\n    <geom size="0.1"/>\n    <joint name="j"/>\n'
            "  </body>\n</mujoco>\n",
        },
        "model.xml", "part.xml:4", "repeated name 'j' in joint at <joint name=\"j\">",
    ),
    "include cycle": (
        {
            "model.xml": '<mujoco>\n  <include file="a.xml"/>\n</mujoco>\n',
            "a.xml": '<mujoco>\n  <include file="b.xml"/>\n</mujoco>\n',
            "b.xml": '<mujoco>\n\n  <include file="model.xml"/>\n</mujoco>\n',
        },
        "model.xml", "b.xml:3", "File 'model.xml' already included at <include file=\"model.xml\">",
    ),
}  # fmt: skip


def _write(tmp_path, files):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return sorted(os.listdir(tmp_path))


@pytest.mark.parametrize("case", list(BAD_INPUT))
def test_bad_mjcf_names_file_and_line_through_the_python_api(case, tmp_path):
    files, model, located, words = BAD_INPUT[case]
    before = _write(tmp_path, files)
    src, out = str(tmp_path / model), tmp_path / "model.usda"
    for load in (lambda: ModelBuilder().add_mjcf(src), lambda: convert(src, out)):
        with pytest.raises(UsdInputError) as e:
            load()
        message = str(e.value)
        assert message.startswith(f"{tmp_path / located}: "), message
        assert words in message
        assert (e.value.file, e.value.line) == (str(tmp_path / located.split(":")[0]), int(located.split(":")[1]))
        if located.split(":")[0] != model:  # the error is in another file than the one loaded: say which
            assert f"MuJoCo could not load {src}: " in message
    assert sorted(os.listdir(tmp_path)) == before  # no output, no temporary file


@pytest.mark.parametrize("case", list(BAD_INPUT))
def test_bad_mjcf_through_the_cli_exits_2_and_writes_nothing(case, tmp_path):
    files, model, located, words = BAD_INPUT[case]
    before = _write(tmp_path, files)
    r = usdsim("convert", tmp_path / model, "-o", tmp_path / "out.usda")
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"usdsim: error: {tmp_path / located}: MuJoCo could not load"), r.stderr
    assert words in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = usdsim("convert", tmp_path / model)  # the default output, next to the model
    assert r.returncode == 2 and located in r.stderr
    r = usdsim("run", tmp_path / model)  # usdsim runs USD stages only: it says so, and writes nothing
    assert r.returncode == 2 and "usdsim convert" in r.stderr
    assert sorted(os.listdir(tmp_path)) == before


def test_mjcf_text_errors_name_the_line():
    with pytest.raises(UsdInputError, match=r"^<xml string>:3: MuJoCo could not load the MJCF: XML parse error"):
        convert("<mujoco>\n<worldbody>\n<body name='a'<geom/></body>\n</worldbody></mujoco>", "out.usda")
    with pytest.raises(UsdInputError, match=r"^<xml string>:4: .*mass and inertia .* at the element named 'a'"):
        ModelBuilder().add_mjcf("<mujoco>\n<worldbody>\n\n<body name='a'><joint/></body></worldbody></mujoco>")
    assert not os.path.exists("out.usda")


def test_a_failure_after_the_stage_was_made_leaves_no_file_and_keeps_the_old_one(tmp_path, monkeypatch):
    import newton_usd.cli

    conversion = importlib.import_module("newton_usd.mjcf.convert")  # the module, not the function
    src, out = tmp_path / "ball.xml", tmp_path / "ball.usda"
    src.write_text(BALL)
    convert(src, out)
    old = out.read_text()

    def fail(stage, *args, **kwargs):
        assert stage.GetPrimAtPath("/ball/ball")  # well into the conversion
        raise UsdInputError("late failure", file=str(src))

    monkeypatch.setattr(conversion, "write_keyframes", fail)
    with pytest.raises(UsdInputError, match="late failure"):
        convert(src, out)
    assert newton_usd.cli.main(["convert", str(src), "-o", str(tmp_path / "new.usda")]) == 2
    assert newton_usd.cli.main(["convert", str(src)]) == 2
    assert out.read_text() == old
    assert sorted(os.listdir(tmp_path)) == ["ball.usda", "ball.xml"]


def test_convert_replaces_an_output_open_in_the_process(tmp_path):
    src, out = tmp_path / "ball.xml", tmp_path / "ball.usda"
    src.write_text(BALL)
    convert(src, out)
    stage = Usd.Stage.Open(str(out))
    assert stage.GetPrimAtPath("/ball/ball")
    src.write_text(BALL.replace('name="ball">', 'name="sphere">'))
    convert(src, out)
    assert Usd.Stage.Open(str(out)).GetPrimAtPath("/ball/sphere")  # not the layer cached before
    assert sorted(os.listdir(tmp_path)) == ["ball.usda", "ball.xml"]


@pytest.mark.parametrize(
    ("output", "expected"),
    [("model.txt", "not a .usd, .usda or .usdc file name"), ("no/such/dir/model.usda", "not a writable directory")],
)
def test_unwritable_output_is_an_input_error(output, expected, tmp_path):
    src = tmp_path / "ball.xml"
    src.write_text(BALL)
    with pytest.raises(UsdInputError, match=expected):
        convert(src, tmp_path / output)
    r = usdsim("convert", src, "-o", tmp_path / output)
    assert r.returncode == 2 and expected in r.stderr


# Many features in one model, with names that are not USD identifiers or are used twice in one body.
MANY = """<mujoco model="many features">
  <option timestep="0.002"/>
  <default><geom friction="0.8 0.01 0.001"/></default>
  <asset>
    <mesh name="tetra" vertex="0 0 0  0.1 0 0  0 0.1 0  0 0 0.1"/>
    <mesh name="hull" file="hull.obj"/>
  </asset>
  <worldbody>
    <geom name="floor" type="plane" size="3 3 0.1"/>
    <site name="hook" pos="0.6 -0.6 1.2"/>
    <body name="left-hip" pos="0 0 1">
      <joint name="1st joint" type="hinge" axis="0 1 0" range="-60 60" ref="10"/>
      <geom name="thigh bone" type="capsule" fromto="0 0 0 0.4 0 0" size=".03"/>
      <geom name="look" type="mesh" mesh="tetra" contype="0" conaffinity="0" group="2"/>
      <site name="thigh bone" pos="0.2 0 0"/>
      <body name="shin" pos="0.4 0 0">
        <joint name="knee" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size=".03"/>
        <body name="laser" pos="0.3 0 0">
          <inertial pos="0 0 0" mass="0.01" diaginertia="0 0 0"/>
          <geom type="box" size=".01 .01 .01" contype="0" conaffinity="0" mass="0"/>
        </body>
      </body>
    </body>
    <body name="slider" pos="0 1 1"><joint name="rail" type="slide" axis="1 0 0" range="-0.5 0.5"/>
      <geom type="box" size=".05 .05 .05"/></body>
    <body name="follower" pos="0.5 1 1"><joint name="rail 2" type="slide" axis="1 0 0"/>
      <geom type="cylinder" size=".05 .05"/></body>
    <body name="pendulum" pos="0.6 -0.6 1"><freejoint/>
      <geom type="mesh" mesh="hull"/>
      <site name="tip" pos="0 0 0.25"/><site name="frame" pos="0 0 -0.3" euler="0 0 40"/></body>
    <body name="ball" pos="1 1 1"><joint name="swivel" type="ball"/>
      <geom type="sphere" size=".05" pos="0 0 -0.2"/></body>
    <body name="target" mocap="true" pos="1 -1 1">
      <geom type="box" size=".05 .05 .05" contype="0" conaffinity="0"/></body>
    <body name="puck" pos="1 -1 0.5"><freejoint/><geom type="cylinder" size=".05 .02"/></body>
    <body name="egg" pos="-1 0 0.5" euler="30 20 0"><freejoint/>
      <geom name="shell" type="ellipsoid" size="0.05 0.08 0.12"/>
      <geom name="glaze" type="ellipsoid" size="0.06 0.09 0.13" contype="0" conaffinity="0" group="1"/></body>
  </worldbody>
  <contact><exclude body1="left-hip" body2="slider"/></contact>
  <tendon>
    <fixed name="pair"><joint joint="1st joint" coef="1"/><joint joint="knee" coef="0.5"/></fixed>
    <fixed name="rails"><joint joint="rail" coef="1"/><joint joint="rail 2" coef="1"/></fixed>
    <spatial name="rope line" limited="true" range="0 1.5"><site site="hook"/><site site="tip"/></spatial>
  </tendon>
  <equality>
    <tendon name="hold pair" tendon1="pair" polycoef="0.05 0 0 0 0"/>
    <joint name="mimic" joint1="rail 2" joint2="rail" polycoef="0.02 -0.5 0 0 0"/>
    <connect name="hang" site1="tip" site2="hook"/>
    <weld name="glue-1" body1="puck" body2="target"/>
  </equality>
  <actuator>
    <position name="servo/1" joint="1st joint" kp="20"/>
    <motor name="push" joint="rail"/>
    <motor name="pull" tendon="rails"/>
    <general name="thrust" site="tip" gear="0 0 1 0 0 0"/>
  </actuator>
  <keyframe><key name="start pose" ctrl="0.1 0 0 0" mpos="1 -1 1.2"/></keyframe>
</mujoco>
"""
CUBE_OBJ = "".join(f"v {x} {y} {z}\n" for z in (-0.05, 0.05) for y in (-0.05, 0.05) for x in (-0.05, 0.05)) + (
    "f 1 3 4\nf 1 4 2\nf 5 6 8\nf 5 8 7\nf 1 2 6\nf 1 6 5\nf 3 7 8\nf 3 8 4\nf 1 5 7\nf 1 7 3\nf 2 4 8\nf 2 8 6\n"
)


def write_many(tmp_path):
    (tmp_path / "hull.obj").write_text(CUBE_OBJ)
    src = tmp_path / "many.xml"
    src.write_text(MANY)
    return src


def test_prims_named_otherwise_keep_the_mjcf_name_as_display_name(tmp_path):
    out = convert(write_many(tmp_path), tmp_path / "many.usda")
    stage = Usd.Stage.Open(out)
    shown = {str(p.GetPath()): p.GetDisplayName() for p in stage.Traverse() if p.HasAuthoredDisplayName()}
    assert shown == {
        "/many_features": "many features",  # the model
        "/many_features/left_hip": "left-hip",  # a body
        "/many_features/left_hip/thigh_bone": "thigh bone",  # a geom
        "/many_features/left_hip/thigh_bone_2": "thigh bone",  # a site of the geom's name: made unique
        "/many_features/left_hip/_st_joint": "1st joint",  # joints
        "/many_features/follower/rail_2": "rail 2",
        "/many_features/Tendons/rope_line": "rope line",
        "/many_features/Actuators/servo_1": "servo/1",
        "/many_features/Equalities/glue_1": "glue-1",
        "/many_features/Keyframes/start_pose": "start pose",
    }  # unnamed elements (geom_3, ...) and valid names have none
    assert stage.GetPrimAtPath("/many_features/Tendons/pair").HasAPI("NewtonUsdTendonEqualityAPI", "hold_pair")


MOCAP_KEY = """<mujoco><worldbody>
  <body name="t1" mocap="true" pos="1 -1 1"><geom type="box" size=".05 .05 .05" contype="0" conaffinity="0"/></body>
  <body name="b" pos="0 0 1"><freejoint/><geom type="sphere" size=".1"/></body>
  <body name="t2" mocap="true" pos="0 0 1"><geom type="box" size=".05 .05 .05" contype="0" conaffinity="0"/></body>
  </worldbody>
  <keyframe><key name="k" qpos="0 0 2 1 0 0 0" mpos="1 2 3 4 5 6" mquat="1 0 0 0 0.6 0 0 0.8"/></keyframe>
</mujoco>"""


@pytest.mark.parametrize("route", ["mjcf", "usd"])
def test_keyframes_with_several_mocap_bodies_match_native(route, tmp_path):
    import mujoco

    from newton_usd.solvers import SolverMuJoCo

    b = ModelBuilder()
    if route == "mjcf":
        b.add_mjcf(MOCAP_KEY)
    else:
        b.add_usd(convert(MOCAP_KEY, tmp_path / "mocap.usda"))
    m = SolverMuJoCo(b.finalize("cpu"), backend="cpu").mj_model
    ref = mujoco.MjModel.from_xml_string(MOCAP_KEY)

    def poses(model):  # the mocap bodies' keyframe poses, in any order
        rows = zip(model.key_mpos[0].reshape(-1, 3), model.key_mquat[0].reshape(-1, 4), strict=True)
        return {tuple(p) + tuple(q) for p, q in rows}

    assert poses(m) == poses(ref) and len(poses(m)) == 2


def validation_errors(path) -> list[str]:
    """What pxr's validators (as usdchecker runs them, less the usdz package checks) call errors."""
    from pxr import UsdValidation

    registry = UsdValidation.ValidationRegistry()
    names = [v.name for v in registry.GetAllValidatorMetadata() if "UsdzValidators" not in v.GetKeywords()]
    assert "usdPhysicsValidators:ColliderChecker" in names and "usdValidation:StageMetadataChecker" in names
    context = UsdValidation.ValidationContext(registry.GetOrLoadValidatorsByName(names))
    errors = context.Validate(Usd.Stage.Open(str(path)))
    return [e.GetErrorAsString() for e in errors if e.GetType() == UsdValidation.ValidationErrorType.Error]


def test_converted_asset_passes_usd_validation(tmp_path):
    from newton_usd.core.types import GeoType
    from newton_usd.diagnostics import Diagnostics

    diagnostics = Diagnostics()
    out = convert(write_many(tmp_path), tmp_path / "many.usda", diagnostics=diagnostics)
    assert validation_errors(out) == []
    # What it took: an ellipsoid collider is a Mesh the newton_usd schema makes an ellipsoid again (UsdPhysics
    # takes no non-uniformly scaled Sphere); a zero inertia is left unwritten (UsdPhysics takes positive ones).
    stage = Usd.Stage.Open(out)
    egg = stage.GetPrimAtPath("/many_features/egg/shell")
    assert egg.GetTypeName() == "Mesh" and "NewtonUsdEllipsoidAPI" in egg.GetAppliedSchemas()
    assert stage.GetPrimAtPath("/many_features/egg/glaze").GetTypeName() == "Sphere"  # visual: a scaled Sphere
    laser = stage.GetPrimAtPath("/many_features/left_hip/shin/laser")
    assert not laser.GetAttribute("physics:diagonalInertia").HasAuthoredValue()
    assert not laser.GetAttribute("physics:principalAxes").HasAuthoredValue()
    assert any("zero inertia" in kind for kind in diagnostics.kinds)
    b = ModelBuilder()
    b.add_usd(out)
    shape = b.shape_label.index("/many_features/egg/shell")
    assert b.shape_type[shape] == GeoType.ELLIPSOID
    assert tuple(b.shape_scale[shape]) == pytest.approx((0.05, 0.08, 0.12))


PLAIN_PXR = """
import json, sys
from pxr import Usd, UsdValidation
stage = Usd.Stage.Open(sys.argv[1])
unknown = set()
for prim in stage.Traverse():
    if prim.GetTypeName() and not prim.GetPrimTypeInfo().GetSchemaType():
        unknown.add(str(prim.GetTypeName()))
    listed = prim.GetMetadata("apiSchemas")
    for api in listed.GetAddedOrExplicitItems() if listed else []:
        if api not in prim.GetAppliedSchemas():
            unknown.add(api)
registry = UsdValidation.ValidationRegistry()
names = [v.name for v in registry.GetAllValidatorMetadata() if "UsdzValidators" not in v.GetKeywords()]
errors = UsdValidation.ValidationContext(registry.GetOrLoadValidatorsByName(names)).Validate(stage)
print(json.dumps({
    "prims": len(list(stage.Traverse())),
    "unknown": sorted(unknown),
    "errors": [e.GetErrorAsString() for e in errors if e.GetType() == UsdValidation.ValidationErrorType.Error],
}))
"""


def test_converted_asset_opens_in_plain_pxr_and_runs_in_usdsim(tmp_path):
    out = convert(write_many(tmp_path), tmp_path / "many.usda")
    plugins = REPO / "newton_usd" / "schemas_plugins"
    r = run_python(PLAIN_PXR, out, pluginpath=plugins)  # pxr alone: no newton_usd, no PYTHONPATH
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert report["prims"] > 40 and report["unknown"] == [] and report["errors"] == []
    r = run_python(PLAIN_PXR, out)  # without the plugins, the mjc and newton schemas are unknown
    assert {"MjcActuator", "MjcSceneAPI", "NewtonUsdEllipsoidAPI"} <= set(json.loads(r.stdout)["unknown"])

    r = usdsim("run", out, "--num-frames", "10", "-q")
    assert r.returncode == 0, r.stderr
    motion = Usd.Stage.Open(str(tmp_path / "many.sim.usda"))
    for body in ("egg", "pendulum", "left_hip/shin"):
        attr = motion.GetPrimAtPath(f"/many_features/{body}").GetAttribute("xformOp:translate:physics")
        assert attr.GetNumTimeSamples() == 11, body  # the start and 10 frames
