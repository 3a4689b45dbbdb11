"""MJCF conversion checks: bad input named by file and line with no partial output."""

import importlib
import os

import pytest
from pxr import Usd
from test_cli import usdsim

from newton_usd import ModelBuilder, UsdInputError
from newton_usd.mjcf import convert

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

    monkeypatch.setattr(conversion, "_write_keyframes", fail)
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
