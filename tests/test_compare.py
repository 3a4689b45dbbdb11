"""``usdsim compare``: native MuJoCo's model of an MJCF against ours of a stage."""

import json

import mujoco
import numpy as np
import pytest

from newton_usd.cli import main
from newton_usd.compare import compare, compare_models, load_native, load_ours, verdict
from newton_usd.mjcf import convert

ROBOT = """
<mujoco model="robot">
  <option timestep="0.002"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="base" pos="0 0 1.2">
      <joint name="slide" type="slide" axis="1 0 0" range="-0.3 0.3" damping="0.5"/>
      <geom type="box" size="0.1 0.1 0.1" density="500"/>
      <geom type="sphere" size="0.05" pos="0.1 0 0.1"/>
      <body name="arm" pos="0 0 -0.1">
        <joint name="hinge" type="hinge" axis="0 1 0" range="-90 90" armature="0.01" damping="0.2"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 -0.2" size="0.03"/>
      </body>
    </body>
  </worldbody>
  <actuator><motor name="motor" joint="hinge" gear="2" ctrlrange="-1 1"/></actuator>
</mujoco>
"""


@pytest.fixture
def files(tmp_path):
    def write(xml, name):
        path = tmp_path / f"{name}.xml"
        path.write_text(xml)
        return str(path), str(convert(str(path), str(tmp_path / f"{name}.usda")))

    return write


def test_the_converted_stage_matches_its_mjcf(files):
    xml, usda = files(ROBOT, "robot")
    c = compare(xml, usda)
    assert not c.differences and not c.unmatched and not c.differ, c.differences
    assert c.counts["geom"] == [4, 4, 4]
    assert [d.verdict for d in c.dynamics] == ["match", "match"]
    assert main(["compare", xml, usda]) == 0


def test_a_changed_damping_is_found_with_the_prim_that_authored_it(files, capsys):
    xml, _ = files(ROBOT, "robot")
    _, planted = files(ROBOT.replace('damping="0.2"', 'damping="2"'), "planted")
    c = compare(xml, planted)
    (d,) = c.differences
    assert (d.kind, d.name, d.field) == ("joint", "hinge", "damping")
    assert d.native == pytest.approx([0.2]) and d.ours == pytest.approx([2.0])
    assert d.prim.endswith("/hinge")
    assert c.dynamics[1].verdict == "differs"  # the arm swings differently from offset joints
    capsys.readouterr()
    assert main(["compare", xml, planted, "--format", "json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["differ"] and out["differences"][0]["field"] == "damping"


def test_a_flipped_quaternion_sign_does_not_count(files):
    xml, usda = files(ROBOT, "robot")
    native = load_native(xml)
    ours, prims = load_ours(usda)
    flipped = [g for g in range(ours.ngeom) if ours.geom_type[g] != mujoco.mjtGeom.mjGEOM_PLANE]
    ours.geom_quat[flipped] *= -1.0
    ours.body_quat[1:] *= -1.0
    assert np.all(ours.body_quat[1:, 0] < 0)  # (the signs really differ from native's)
    c = compare_models(native, ours, prims)
    assert not c.differences and not c.differ


def test_reordered_geoms_within_a_body_do_not_count(files):
    box = '<geom type="box" size="0.1 0.1 0.1" density="500"/>'
    sphere = '<geom type="sphere" size="0.05" pos="0.1 0 0.1"/>'
    reordered, _ = files(ROBOT.replace(box + "\n      " + sphere, sphere + "\n      " + box), "reordered")
    _, usda = files(ROBOT, "robot")
    native, (ours, _) = load_native(reordered), load_ours(usda)

    def first_geom(m):
        return int(m.geom_type[np.nonzero(m.geom_bodyid == m.body("base").id)[0][0]])

    assert (first_geom(native), first_geom(ours)) == (mujoco.mjtGeom.mjGEOM_SPHERE, mujoco.mjtGeom.mjGEOM_BOX)
    c = compare(reordered, usda)
    assert not c.differences and not c.differ, c.differences


def _disc(radius, half_height, n=8, phase=0.3):
    ring = [(radius * np.cos(phase + 2 * np.pi * k / n), radius * np.sin(phase + 2 * np.pi * k / n)) for k in range(n)]
    return " ".join(f"{x:.6f} {y:.6f} {z}" for z in (-half_height, half_height) for x, y in ring)


MESHES = f"""
<mujoco model="meshes">
  <asset>
    <mesh name="lid" vertex="{_disc(0.1, 0.005)}"/>
    <mesh name="block" vertex="0 0 0  0.2 0 0  0 0.1 0  0 0 0.05  0.2 0.1 0  0.2 0 0.05  0 0.1 0.05  0.2 0.1 0.05"/>
    <mesh name="spare" vertex="0 0 0  1 0 0  0 1 0  0 0 1"/>
  </asset>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="pot" pos="0 0 0.5"><freejoint/>
      <geom name="left" type="mesh" mesh="block" pos="-0.2 0 0"/>
      <geom name="right" type="mesh" mesh="block" pos="0.2 0 0" euler="0 0 30"/>
      <geom name="lid" type="mesh" mesh="lid" pos="0 0 0.1"/>
    </body>
  </worldbody>
</mujoco>
"""


def test_meshes_are_compared_by_the_geoms_that_use_them(files):
    """A mesh two geoms share (ours gives each its own), a disc whose in-plane principal axes MuJoCo picks
    arbitrarily, and an asset no geom uses do not count; a mesh that changes size does."""
    xml, usda = files(MESHES, "meshes")
    c = compare(xml, usda)
    assert not c.differences and not c.unmatched and not c.differ, (c.differences, c.unmatched)
    assert c.counts["mesh"][2] == 2  # (lid and block matched; the spare is no part of the model)
    _, planted = files(MESHES.replace('<mesh name="block"', '<mesh name="block" scale="1.1 1 1"'), "planted")
    fields = {(d.kind, d.name, d.field) for d in compare(xml, planted).differences}
    assert {("geom", "left", "mesh"), ("geom", "right", "mesh"), ("mesh", "block", "size")} <= fields


INERTIALS = """
<mujoco model="inertials">
  <worldbody>
    <body name="beam" pos="0 0 1"><freejoint/>
      <inertial pos="0 0 0" mass="20" fullinertia="110.9333 8.5333 110.9333 0 0 1e-14"/>
      <geom type="box" size="0.1 1 0.1" contype="0" conaffinity="0"/>
      <body name="frame" pos="0.3 0 0"><site name="tip"/></body>
    </body>
    <body name="anchor" pos="-3 0 0"/>
  </worldbody>
</mujoco>
"""


def test_massless_frames_and_float_principal_axes_do_not_count(files):
    """A massless body has no inertial frame to compare (native puts its ipos anywhere); an inertia whose
    principal axes a USD file stores as a float quaternion is compared relative to its largest moment."""
    xml, usda = files(INERTIALS, "inertials")
    native = load_native(xml)
    assert native.body_ipos[native.body("anchor").id].tolist() == [-3.0, 0.0, 0.0]  # (native's, for nothing)
    c = compare(xml, usda)
    assert not c.differences and not c.differ, c.differences


def test_chaos_is_told_from_a_real_difference():
    # native's own sensitivity (1e-9 at the start) grew to 1e-3: a 1e-2 divergence is what a 1e-8 initial
    # difference (float round-off) makes, chaos; with a 1e-9 sensitivity it is a real difference.
    assert verdict(1e-2, 1e-3, atol=1e-5) == "chaos"
    assert verdict(1e-2, 1e-9, atol=1e-5) == "differs"
    assert verdict(1e-6, 1e-9, atol=1e-5) == "match"
    # a knife-edge start: native itself moves 0.2 when its geometry moves by float32 round-off
    assert verdict(0.2, 1e-8, atol=1e-5, float32_sensitivity=0.2) == "chaos"


def test_bad_input_exits_2(tmp_path, capsys):
    bad = tmp_path / "bad.xml"
    bad.write_text("<mujoco><worldbody><body><geom type='nonsense'/></body></worldbody></mujoco>")
    assert main(["compare", str(tmp_path / "missing.xml"), str(bad)]) == 2
    assert "missing.xml: no such file" in capsys.readouterr().err
    assert main(["compare", str(bad), str(bad)]) == 2
    assert "bad.xml" in capsys.readouterr().err


def _two_boxes(first="", second="", contact=""):
    return f"""<mujoco><worldbody>
      <body name="a" pos="0 0 1"><freejoint/><geom name="ga" type="box" size=".1 .1 .1" {first}/></body>
      <body name="b" pos="0 0 1.5"><freejoint/><geom name="gb" type="box" size=".1 .1 .1" {second}/></body>
      </worldbody>{contact}</mujoco>"""


def test_what_may_collide_is_compared_not_how_it_is_said():
    bits = mujoco.MjModel.from_xml_string(_two_boxes('contype="1" conaffinity="1"', 'contype="2" conaffinity="2"'))
    exclude = mujoco.MjModel.from_xml_string(_two_boxes(contact='<contact><exclude body1="a" body2="b"/></contact>'))
    colliding = mujoco.MjModel.from_xml_string(_two_boxes())
    assert not compare_models(bits, exclude).differences  # two ways of saying "a and b never touch"
    (d,) = compare_models(bits, colliding).differences
    assert (d.kind, d.name, d.native, d.ours) == ("contact", "ga / gb", [False], [True])
