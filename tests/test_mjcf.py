import mujoco
import numpy as np
import pytest

from newton_usd import ModelBuilder, UsdInputError
from newton_usd.core.quat import wxyz_to_xyzw
from newton_usd.solvers import SolverMuJoCo

ROBOT = """
<mujoco model="robot">
  <compiler angle="degree"/>
  <option timestep="0.002" integrator="RK4" cone="elliptic"/>
  <default><geom friction="0.8 0.01 0.001" solref="0.01 1"/></default>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="box" pos="0.5 0 0.6" euler="10 20 30"><freejoint name="box_free"/>
      <geom type="box" size="0.1 0.08 0.05" mass="1.5"/></body>
    <body name="base" pos="-0.5 0 1.2">
      <joint name="slide" type="slide" axis="1 0 0" range="-0.3 0.3" damping="0.5"/>
      <geom type="box" size="0.1 0.1 0.1" density="500"/>
      <body name="arm" pos="0 0 -0.1">
        <joint name="hinge" type="hinge" axis="0 1 0" range="-90 90" armature="0.01" frictionloss="0.02"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 -0.2" size="0.03"/>
        <body name="tip" pos="0.3 0 -0.2">
          <joint name="ball" type="ball" damping="0.01"/>
          <geom type="sphere" size="0.05" pos="0 0 -0.1" condim="4" priority="1"/>
        </body>
      </body>
    </body>
    <body name="planar" pos="1.2 0 0.5">
      <joint name="px" type="slide" axis="1 0 0"/><joint name="pz" type="slide" axis="0 0 1"/>
      <joint name="py" type="hinge" axis="0 1 0"/>
      <geom type="cylinder" size="0.05 0.1" euler="90 0 0"/>
    </body>
  </worldbody>
  <actuator><motor joint="hinge" gear="2" ctrlrange="-1 1"/><position joint="slide" kp="50"/></actuator>
</mujoco>
"""


def run_ours(xml, steps, ctrl=None):
    b = ModelBuilder()
    b.add_mjcf(xml)
    model = b.finalize("cpu")
    solver = SolverMuJoCo(model, backend="cpu")
    s0, s1, control = model.state(), model.state(), model.control()
    if ctrl is not None:
        control.mujoco.ctrl.assign(np.array(ctrl, dtype=np.float32))
    out = []
    for _ in range(steps):
        solver.step(s0, s1, control, None, solver.mj_model.opt.timestep)
        s0, s1 = s1, s0
        out.append(s0.body_q.numpy().copy())
    return model, solver, np.array(out)


def run_native(xml, steps, ctrl=None):
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    if ctrl is not None:
        d.ctrl[:] = ctrl
    out = []
    for _ in range(steps):
        mujoco.mj_step(m, d)
        mujoco.mj_kinematics(m, d)  # poses of the new coordinates (as SolverMuJoCo reports them)
        out.append(np.concatenate([d.xpos[1:], wxyz_to_xyzw(d.xquat[1:])], axis=1))
    return m, np.array(out)


def test_mjcf_round_trip_matches_native_mujoco():
    steps = 500  # 1 s
    model, solver, ours = run_ours(ROBOT, steps, ctrl=[0.7, 0.2])
    ref, native = run_native(ROBOT, steps, ctrl=[0.7, 0.2])
    assert model.body_label == ["box", "base", "arm", "tip", "planar"]
    assert model.joint_label == ["box_free", "slide", "hinge", "ball", "px", "pz", "py"]
    m = solver.mj_model
    assert (m.nq, m.nv, m.nu, m.ngeom) == (ref.nq, ref.nv, ref.nu, ref.ngeom)
    assert m.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4 and m.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC
    np.testing.assert_allclose(m.body_mass, ref.body_mass, rtol=1e-6)
    np.testing.assert_allclose(m.jnt_range, ref.jnt_range, atol=1e-6)
    np.testing.assert_allclose(m.geom_friction, ref.geom_friction, rtol=1e-6)
    np.testing.assert_allclose(ours[:, :, :3], native[:, :, :3], atol=2e-5)
    dots = np.abs(np.sum(ours[:, :, 3:] * native[:, :, 3:], axis=2))
    np.testing.assert_allclose(dots, 1.0, atol=2e-5)
    assert np.abs(native[-1, 0, :3] - native[0, 0, :3]).max() > 0.1  # things moved


def test_bad_mjcf_names_the_file(tmp_path):
    with pytest.raises(UsdInputError, match="no such file"):
        ModelBuilder().add_mjcf(str(tmp_path / "missing.xml"))
    bad = tmp_path / "bad.xml"
    bad.write_text("<mujoco><worldbody><body><joint type='nonsense'/></body></worldbody></mujoco>")
    with pytest.raises(UsdInputError, match=r"bad.xml:1: MuJoCo could not load the MJCF"):
        ModelBuilder().add_mjcf(str(bad))


def test_converted_usd_simulates_like_native_mujoco(tmp_path):
    from pxr import Usd

    from newton_usd.mjcf import convert

    out = convert(ROBOT, tmp_path / "robot.usda")
    stage = Usd.Stage.Open(str(out))
    assert stage.GetPrimAtPath("/robot/base/arm/tip").IsValid()
    assert stage.GetPrimAtPath("/PhysicsScene").GetAttribute("mjc:option:timestep").Get() == 0.002
    b = ModelBuilder()
    b.add_usd(str(out))
    model = b.finalize("cpu")
    # Each tree's joints together, in the tree's order (Newton's articulations need them contiguous), and in the
    # order of their child bodies (Newton's Featherstone takes joint j's link inertia from body j)
    assert model.joint_label == [
        "/robot/box", "/robot/base/slide", "/robot/base/arm/hinge", "/robot/base/arm/tip/ball",
        "/robot/planar/px", "/robot/planar/pz", "/robot/planar/py",
    ]  # fmt: skip
    assert list(model.joint_child.numpy()) == sorted(model.joint_child.numpy())
    solver = SolverMuJoCo(model, backend="cpu")
    ref, native = run_native(ROBOT, 500, ctrl=[0.7, 0.2])
    m = solver.mj_model
    assert m.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4 and m.opt.timestep == 0.002
    np.testing.assert_allclose(sorted(m.body_mass), sorted(ref.body_mass), rtol=1e-6)
    s0, s1, control = model.state(), model.state(), model.control()
    assert [e["path"] for e in model.mujoco.actuator] == ["/robot/Actuators/actuator_0", "/robot/Actuators/actuator_1"]
    control.mujoco.ctrl.assign(np.array([0.7, 0.2], dtype=np.float32))
    order = [model.body_label.index(f"/robot/{p}") for p in ("box", "base", "base/arm", "base/arm/tip", "planar")]
    ours = []
    for _ in range(500):
        solver.step(s0, s1, control, None, 0.002)
        s0, s1 = s1, s0
        ours.append(s0.body_q.numpy()[order].copy())
    ours = np.array(ours)
    # USD stores the converted poses and frames as float32: agreement is to float precision.
    np.testing.assert_allclose(ours[:, :, :3], native[:, :, :3], atol=2e-4)


def test_contype_conaffinity_become_filtered_pairs(tmp_path):
    from pxr import Usd

    from newton_usd.mjcf import convert

    xml = """<mujoco model="m"><worldbody><geom type="plane" size="1 1 .1"/>
      <body name="a" pos="0 0 0.3"><freejoint/><geom type="box" size=".1 .1 .1" contype="1" conaffinity="0"/></body>
      <body name="b" pos="0 0 0.6"><freejoint/><geom type="box" size=".1 .1 .1" contype="1" conaffinity="0"/></body>
    </worldbody></mujoco>"""
    out = convert(xml, tmp_path / "m.usda")
    stage = Usd.Stage.Open(str(out))
    rel = stage.GetPrimAtPath("/m/a").GetRelationship("physics:filteredPairs")
    assert [str(t) for t in rel.GetTargets()] == ["/m/b"]
    b = ModelBuilder()
    b.add_usd(str(out))
    model = b.finalize("cpu")
    solver = SolverMuJoCo(model)
    s0, s1, c = model.state(), model.state(), model.control()
    for _ in range(500):
        solver.step(s0, s1, c, None, 0.002)
        s0, s1 = s1, s0
    z = {label: q[2] for label, q in zip(model.body_label, s0.body_q.numpy(), strict=True)}
    assert z["/m/b"] == pytest.approx(z["/m/a"], abs=0.01)  # b fell through a, both rest on the floor


FEATURES = """
<mujoco model="features">
  <option timestep="0.002"/>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <body name="left" pos="-0.05 0 0.5"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
    <body name="right" pos="0.05 0 0.8"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
    <body name="floating" pos="1 0 1" gravcomp="0.5"><freejoint/><geom type="sphere" size=".05"/></body>
    <body name="carrier" pos="-1 0 0.5"><freejoint/>
      <body name="load" pos="0 0 0"><geom type="sphere" size=".1" mass="2"/></body></body>
    <body name="beam" pos="0 1 1"><joint type="ball"/><geom type="capsule" fromto="0 0 0 0.5 0 0" size=".02"/></body>
  </worldbody>
  <contact><exclude body1="left" body2="right"/></contact>
  <equality><weld body1="beam" relpose="0.5 0 0 0.9659 0 0.2588 0" torquescale="2"/></equality>
</mujoco>
"""


def side_by_side(xml, route, tmp_path, names, ctrl=None, steps=500):
    """Simulate ``xml`` through ``route`` ("mjcf": add_mjcf; "usd": convert, then add_usd) and natively;
    returns (our solver, native model, native data, our final positions of the bodies ``names``)."""
    from newton_usd.mjcf import convert

    b = ModelBuilder()
    if route == "mjcf":
        b.add_mjcf(xml)
    else:
        b.add_usd(convert(xml, tmp_path / "model.usda"))
    model = b.finalize("cpu")
    solver = SolverMuJoCo(model, backend="cpu")
    s0, s1, control = model.state(), model.state(), model.control()
    ref = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(ref)
    if ctrl is not None:
        control.mujoco.ctrl.assign(np.array(ctrl, dtype=np.float32))
        data.ctrl[:] = ctrl
    for _ in range(steps):
        solver.step(s0, s1, control, None, ref.opt.timestep)
        s0, s1 = s1, s0
        mujoco.mj_step(ref, data)
    mujoco.mj_kinematics(ref, data)  # poses of the new coordinates (as SolverMuJoCo reports them)
    index = [next(i for i, label in enumerate(model.body_label) if label.endswith(n)) for n in names]
    return solver, ref, data, s0.body_q.numpy()[index, :3]


@pytest.mark.parametrize("route", ["mjcf", "usd"])
def test_excludes_gravcomp_massless_carriers_and_weld_relpose_match_native(route, tmp_path):
    names = ["left", "right", "floating", "carrier", "beam"]
    _, ref, data, ours = side_by_side(FEATURES, route, tmp_path, names)
    for k, n in enumerate(names):
        np.testing.assert_allclose(ours[k], data.xpos[ref.body(n).id], atol=2e-4, err_msg=n)
    assert data.xpos[ref.body("right").id][2] < 0.15  # the exclude let it fall through "left"
    assert data.xpos[ref.body("floating").id][2] < 1.0  # half-compensated gravity still pulls it down


TENDON = """
<mujoco model="coupled">
  <option timestep="0.002"/>
  <worldbody>
    <body name="a" pos="0 0 1"><joint name="ja" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size=".02"/>
      <body name="b" pos="0.3 0 0"><joint name="jb" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size=".02"/></body></body>
  </worldbody>
  <tendon><fixed name="couple" limited="true" range="-0.3 0.3" stiffness="5" damping="0.2">
    <joint joint="ja" coef="1"/><joint joint="jb" coef="-0.5"/></fixed></tendon>
  <actuator><motor tendon="couple" gear="1"/></actuator>
</mujoco>
"""


@pytest.mark.parametrize("route", ["mjcf", "usd"])
def test_fixed_tendon_and_tendon_actuator_match_native(route, tmp_path):
    solver, _, data, ours = side_by_side(TENDON, route, tmp_path, ["a", "b"], ctrl=[0.4])
    assert solver.mj_model.ntendon == 1 and solver.mj_model.nu == 1
    np.testing.assert_allclose(ours, data.xpos[1:3], atol=2e-4)
    assert abs(data.ten_length[0]) > 0.01  # the tendon moved


CLAMPED = """
<mujoco model="clamped">
  <option timestep="0.002"/>
  <worldbody>
    <body name="upper" pos="0 0 1"><joint name="shoulder" axis="0 1 0" actuatorfrcrange="-2 2"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size=".03"/>
      <body name="lower" pos="0.3 0 0" gravcomp="1">
        <joint name="elbow" axis="0 1 0" actuatorfrcrange="-0.5 0.5" actuatorgravcomp="true"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size=".03"/></body></body>
  </worldbody>
  <actuator><position joint="shoulder" kp="200"/><position joint="elbow" kp="50"/></actuator>
</mujoco>
"""


@pytest.mark.parametrize("route", ["mjcf", "usd"])
def test_joint_actuator_force_range_and_gravcomp_match_native(route, tmp_path):
    """A joint's actuatorfrcrange clamps the total actuator force on it (the aloha arms' position actuators
    ask for 250 N m where the joint allows 144), and actuatorgravcomp counts gravity compensation as
    actuation, inside that clamp."""
    solver, ref, data, ours = side_by_side(CLAMPED, route, tmp_path, ["upper", "lower"], ctrl=[0.8, -0.6], steps=200)
    m = solver.mj_model
    assert m.jnt_actfrclimited.tolist() == [1, 1] and m.jnt_actgravcomp.tolist() == [0, 1]
    np.testing.assert_allclose(m.jnt_actfrcrange, ref.jnt_actfrcrange)
    np.testing.assert_allclose(ours, data.xpos[1:3], atol=1e-6)
    unclamped = mujoco.MjModel.from_xml_string(CLAMPED.replace('actuatorfrcrange="-2 2"', ""))
    free = mujoco.MjData(unclamped)
    free.ctrl[:] = [0.8, -0.6]
    for _ in range(200):
        mujoco.mj_step(unclamped, free)
    assert np.abs(free.xpos[1:3] - data.xpos[1:3]).max() > 1e-3  # the clamp matters here


def test_actuator_force_range_authored_without_limited_is_auto(tmp_path):
    """mujoco-usd-converter writes mjc:actuatorfrcrange:min/max and leaves mjc:actuatorfrclimited at its
    fallback "auto": limited where min < max, as MuJoCo's autolimits."""
    from pxr import Usd

    from newton_usd.mjcf import convert

    stage_path = convert(CLAMPED, tmp_path / "model.usda")
    stage = Usd.Stage.Open(str(stage_path))
    for prim in stage.Traverse():
        if prim.HasAttribute("mjc:actuatorfrclimited"):
            prim.RemoveProperty("mjc:actuatorfrclimited")
    stage.Save()
    b = ModelBuilder()
    b.add_usd(str(stage_path))
    assert SolverMuJoCo(b.finalize("cpu"), backend="cpu").mj_model.jnt_actfrclimited.tolist() == [1, 1]


AT_LIMITS = """
<mujoco model="legs">
  <option timestep="0.002"/>
  <worldbody>
    <body name="thigh" pos="0 0 1" euler="17 -23 41"><joint name="hip" axis="0.3 1 0.2"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.3" size=".03"/>
      <body name="shin" pos="0.01 0.02 -0.3" euler="-13 37 7"><joint name="knee" axis="0.1 1 -0.4" range="0 2.5"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.3" size=".03"/>
        <body name="foot" pos="0 0 -0.3" euler="29 -31 11"><joint name="ankle" axis="1 0.2 0.7" range="0 1"/>
          <geom type="box" size=".05 .03 .02"/></body></body></body>
  </worldbody>
</mujoco>
"""


def test_converted_joints_start_exactly_at_qpos0(tmp_path):
    """A knee that starts at its limit (barkour's, range 0..2.5 at qpos0 = 0) must not start past it: the
    float joint frames give the coordinates +-5e-8, so usdsim convert writes them (0) as PhysicsJointStateAPI
    positions. Without them the run drifts from native's."""
    from pxr import Usd

    from newton_usd.mjcf import convert

    def final_qpos(path):
        b = ModelBuilder()
        b.add_usd(str(path))
        model = b.finalize("cpu")
        solver = SolverMuJoCo(model, backend="cpu")
        s0, s1, control = model.state(), model.state(), model.control()
        for _ in range(200):
            solver.step(s0, s1, control, None, 0.002)
            s0, s1 = s1, s0
        return model.joint_q.numpy(), solver.mj_data.qpos.copy()

    ref = mujoco.MjModel.from_xml_string(AT_LIMITS)
    data = mujoco.MjData(ref)
    for _ in range(200):
        mujoco.mj_step(ref, data)
    q0, q = final_qpos(convert(AT_LIMITS, tmp_path / "legs.usda"))
    assert q0.tolist() == [0.0, 0.0, 0.0]
    matched = np.abs(q - data.qpos).max()
    assert matched < 2e-7
    stripped = tmp_path / "stripped.usda"
    stage = Usd.Stage.Open(str(convert(AT_LIMITS, stripped)))
    for prim in stage.Traverse():
        for name in prim.GetPropertyNames():
            if name.startswith("state:"):
                prim.RemoveProperty(name)
    stage.Save()
    q0, q = final_qpos(stripped)
    assert np.abs(q0).max() > 1e-9  # (what the float poses give)
    assert np.abs(q - data.qpos).max() > 10 * matched


SPRUNG = """
<mujoco model="tail">
  <option timestep="0.002"/>
  <worldbody>
    <body name="base" pos="0 0 1"><joint name="wag" axis="0 1 0" springdamper="0.05 0.7" stiffness="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size=".03"/></body>
  </worldbody>
</mujoco>
"""


def test_springdamper_authored_in_usd_sets_stiffness_and_damping_from_the_masses(tmp_path):
    """mujoco-usd-converter writes MJCF's springdamper as mjc:springdamper (and the uncompiled stiffness and
    damping beside it): MuJoCo's compiler makes stiffness and damping of it from the masses (dm_control's
    dog tail: 0.081 and 0.40 where the attributes say 0.1 and 0.01)."""
    from pxr import Sdf, Usd

    from newton_usd.mjcf import convert

    path = convert(SPRUNG, tmp_path / "tail.usda")
    stage = Usd.Stage.Open(str(path))
    joint = next(p for p in stage.Traverse() if p.GetName() == "wag")
    joint.GetAttribute("mjc:stiffness").Set(0.1)  # (the peer's: the spec's, not the compiled value)
    joint.GetAttribute("mjc:damping").Set(0.01)
    joint.CreateAttribute("mjc:springdamper", Sdf.ValueTypeNames.DoubleArray).Set([0.05, 0.7])
    stage.Save()
    ref = mujoco.MjModel.from_xml_string(SPRUNG)
    b = ModelBuilder()
    b.add_usd(str(path))
    m = SolverMuJoCo(b.finalize("cpu"), backend="cpu").mj_model
    assert ref.jnt_stiffness[0] != pytest.approx(0.1)  # (springdamper overrode it)
    assert m.jnt_stiffness[0] == pytest.approx(ref.jnt_stiffness[0], rel=1e-6)
    assert m.dof_damping[0] == pytest.approx(ref.dof_damping[0], rel=1e-6)


REF_LIMITS = """
<mujoco model="fingers">
  <worldbody>
    <body name="palm" pos="0 0 1">
      <body name="finger" pos="0.1 0 0"><joint name="knuckle" axis="0 1 0" range="-17 29" ref="29"/>
        <geom type="capsule" fromto="0 0 0 0.1 0 0" size=".01"/></body>
      <body name="slider" pos="-0.1 0 0"><joint name="rail" type="slide" axis="1 0 0" range="-0.02 0.05" ref="0.03"/>
        <geom type="box" size=".02 .02 .02"/></body></body>
  </worldbody>
</mujoco>
"""


def test_limits_beside_mjc_ref_are_mujocos_range(tmp_path):
    """With mjc:ref a joint's physics limits are MuJoCo's range, in qpos (mujoco-usd-converter writes MJCF's
    range so and Newton reads it so): the coordinate is qpos - ref, its limits range - ref."""
    import math

    from pxr import Usd, UsdPhysics

    from newton_usd.mjcf import convert

    path = convert(REF_LIMITS, tmp_path / "fingers.usda")
    stage = Usd.Stage.Open(str(path))
    knuckle = UsdPhysics.RevoluteJoint(next(p for p in stage.Traverse() if p.GetName() == "knuckle"))
    assert (knuckle.GetLowerLimitAttr().Get(), knuckle.GetUpperLimitAttr().Get()) == pytest.approx((-17, 29))
    b = ModelBuilder()
    b.add_usd(str(path))
    model = b.finalize("cpu")
    lower, upper = model.joint_limit_lower.numpy(), model.joint_limit_upper.numpy()
    assert lower.tolist() == pytest.approx([math.radians(-46), -0.05]) and upper.tolist() == pytest.approx([0, 0.02])
    ref = mujoco.MjModel.from_xml_string(REF_LIMITS)
    np.testing.assert_allclose(SolverMuJoCo(model, backend="cpu").mj_model.jnt_range, ref.jnt_range, atol=1e-6)


SITES = """
<mujoco model="thruster">
  <option timestep="0.002" gravity="0 0 -1"/>
  <worldbody>
    <site name="origin" pos="0 0 0"/>
    <body name="craft" pos="0 0 1"><freejoint/><geom type="box" size=".2 .1 .05"/>
      <site name="nozzle" pos="0.15 0 0" euler="0 0 30" type="box" size=".02 .02 .02"/></body>
  </worldbody>
  <actuator><general site="nozzle" gear="0 0 1 0 0 0.2"/>
    <general site="nozzle" refsite="origin" gear="1 0 0 0 0 0"/></actuator>
</mujoco>
"""


@pytest.mark.parametrize("route", ["mjcf", "usd"])
def test_site_actuators_match_native(route, tmp_path):
    solver, _, data, ours = side_by_side(SITES, route, tmp_path, ["craft"], ctrl=[1.5, 0.3])
    assert solver.mj_model.nsite == 2 and solver.mj_model.nu == 2
    np.testing.assert_allclose(ours[0], data.xpos[1], atol=2e-4)
    assert np.linalg.norm(data.xpos[1] - [0, 0, 1]) > 0.1  # the thrusters moved the craft


SPATIAL = """
<mujoco model="string">
  <option timestep="0.002"/>
  <worldbody>
    <site name="anchor" pos="0 0 1.5"/>
    <geom name="pulley" type="cylinder" pos="0.3 0 1.5" size="0.05 0.05" euler="90 0 0"/>
    <body name="weight" pos="0.35 0 1"><freejoint/><geom type="sphere" size="0.05"/>
      <site name="hook" pos="0 0 0.05"/></body>
  </worldbody>
  <tendon><spatial name="rope" limited="true" range="0 0.7" width="0.005">
    <site site="anchor"/><geom geom="pulley"/><site site="hook"/></spatial></tendon>
</mujoco>
"""


@pytest.mark.parametrize("route", ["mjcf", "usd"])
def test_spatial_tendon_through_sites_and_around_a_geom_matches_native(route, tmp_path):
    solver, _, data, ours = side_by_side(SPATIAL, route, tmp_path, ["weight"])
    assert solver.mj_model.ntendon == 1 and solver.mj_model.nwrap == 3
    np.testing.assert_allclose(ours[0], data.xpos[1], atol=2e-4)
    assert data.ten_length[0] == pytest.approx(0.7, abs=0.01)  # the rope holds the weight at its limit


ELLIPSOID = """
<mujoco model="egg">
  <option timestep="0.002"/>
  <worldbody><geom type="plane" size="2 2 .1"/>
    <body name="egg" pos="0 0 0.5" euler="30 20 0"><freejoint/>
      <geom type="ellipsoid" size="0.05 0.08 0.12" density="1000"/></body>
  </worldbody>
</mujoco>
"""


@pytest.mark.parametrize("route", ["mjcf", "usd"])
def test_ellipsoid_rolls_like_native(route, tmp_path):
    solver, ref, data, ours = side_by_side(ELLIPSOID, route, tmp_path, ["egg"])
    assert solver.mj_model.geom_type[1] == mujoco.mjtGeom.mjGEOM_ELLIPSOID
    np.testing.assert_allclose(solver.mj_model.body_mass[1], ref.body_mass[1], rtol=1e-5)
    np.testing.assert_allclose(sorted(solver.mj_model.body_inertia[1]), sorted(ref.body_inertia[1]), rtol=1e-4)
    np.testing.assert_allclose(ours[0], data.xpos[1], atol=2e-4)


WELDED_PARENT = """<mujoco><option timestep="0.002"/><worldbody>
  <body name="base" pos="0 0 1"><geom type="box" size=".1 .1 .1"/>
    <body name="arm" pos="0 0 0.15"><joint name="s" type="slide" axis="0 0 1"/><geom type="sphere" size="0.05"/>
    </body></body>
  <body name="slab" pos="0 0 0.2"><joint type="slide" axis="0 0 1"/><geom type="box" size=".2 .2 .05"/>
    <body name="tip" pos="0 0 0.06"><joint type="hinge" axis="1 0 0"/><geom type="sphere" size="0.05"/></body>
  </body></worldbody></mujoco>"""


@pytest.mark.parametrize("route", ["mjcf", "usd"])
def test_parent_child_contacts_follow_mujocos_filterparent(route, tmp_path):
    """MuJoCo lets a child collide with a parent welded to the world (the ball on its slide rests on
    the base), and filters it with a moving parent (the tip inside the falling slab falls with it)."""
    _, _, data, ours = side_by_side(WELDED_PARENT, route, tmp_path, ("base", "arm", "slab", "tip"), steps=200)
    np.testing.assert_allclose(ours, data.xpos[1:5], atol=1e-5)
    assert ours[1, 2] == pytest.approx(1.15, abs=0.01)


EQUALITIES = """
<mujoco model="linkage">
  <option timestep="0.002"/>
  <worldbody>
    <site name="hook" pos="0.6 -0.6 1.2"/>
    <body name="arm" pos="0 0 1"><joint name="shoulder" type="hinge" axis="0 1 0" ref="0.2"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size=".03"/>
      <body name="forearm" pos="0.4 0 0"><joint name="elbow" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size=".03"/></body></body>
    <body name="slider" pos="0 1 1"><joint name="rail" type="slide" axis="1 0 0" ref="0.1"/>
      <geom type="box" size=".05 .05 .05"/></body>
    <body name="follower" pos="0.5 1 1"><joint name="rail2" type="slide" axis="1 0 0"/>
      <geom type="box" size=".05 .05 .05"/></body>
    <body name="pendulum" pos="0.6 -0.6 1"><freejoint/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.3" size=".02"/>
      <site name="tip" pos="0 0 0.25"/><site name="frame" pos="0 0 -0.3" euler="0 0 40"/></body>
    <body name="welded" pos="0.6 -0.1 0.7"><freejoint/><geom type="box" size=".04 .04 .04"/>
      <site name="socket" pos="0 0 0" euler="0 0 40"/></body>
  </worldbody>
  <tendon><fixed name="pair"><joint joint="shoulder" coef="1"/><joint joint="elbow" coef="0.5"/></fixed>
    <fixed name="rails"><joint joint="rail" coef="1"/><joint joint="rail2" coef="1"/></fixed></tendon>
  <equality>
    <tendon name="hold_pair" tendon1="pair" polycoef="0.05 0 0 0 0"/>
    <joint name="mimic" joint1="rail2" joint2="rail" polycoef="0.02 -0.5 0.3 0 0"/>
    <connect name="hang" site1="tip" site2="hook"/>
    <weld name="glue" site1="frame" site2="socket" torquescale="3"/>
    <joint name="off" joint1="elbow" polycoef="0.3 0 0 0 0" active="false"/>
  </equality>
  <actuator><position name="servo" joint="shoulder" kp="20"/><motor name="push" joint="rail"/></actuator>
  <keyframe><key name="lifted" qpos="0.5 -0.2 0.3 0.1 0.6 -0.5 1.05 1 0 0 0 0.6 -0.1 0.7 1 0 0 0"
                  qvel="0.3 0 0 0 0 0 0 0 0 0 0 0 0 0" ctrl="0.4 1"/></keyframe>
</mujoco>
"""


@pytest.mark.parametrize("route", ["mjcf", "usd"])
def test_equalities_keyframes_and_joint_refs_match_native(route, tmp_path):
    """Joint (polynomial), tendon, site connect and site weld equalities, an inactive one, joints with a
    ref under a position actuator, and a keyframe: the same MuJoCo model and motion as native."""
    names = ["arm", "forearm", "slider", "follower", "pendulum", "welded"]
    solver, ref, data, ours = side_by_side(EQUALITIES, route, tmp_path, names, steps=300)
    m = solver.mj_model
    assert (m.neq, m.nkey, m.ntendon) == (ref.neq, ref.nkey, ref.ntendon)
    assert sorted(m.eq_type) == sorted(ref.eq_type) and sorted(m.eq_active0) == sorted(ref.eq_active0)
    for k, n in enumerate(names):
        np.testing.assert_allclose(ours[k], data.xpos[ref.body(n).id], atol=1e-5, err_msg=n)
    assert np.abs(data.qpos - ref.qpos0).max() > 0.05  # the constraints and the servo moved things

    # From the keyframe, with its controls: the same motion again.
    model = solver.model
    assert model.keyframe_label[-1].endswith("lifted")
    s0, s1, control = model.state(), model.state(), model.control()
    solver.reset_to_keyframe(s0, "lifted" if route == "mjcf" else model.keyframe_label[0], control)
    np.testing.assert_allclose(control.mujoco.ctrl.numpy(), [0.4, 1.0])
    native = mujoco.MjData(ref)
    mujoco.mj_resetDataKeyframe(ref, native, 0)
    mujoco.mj_forward(ref, native)
    index = [next(i for i, label in enumerate(model.body_label) if label.endswith(n)) for n in names]
    np.testing.assert_allclose(s0.body_q.numpy()[index, :3], native.xpos[[ref.body(n).id for n in names]], atol=1e-6)
    for _ in range(200):
        solver.step(s0, s1, control, None, ref.opt.timestep)
        s0, s1 = s1, s0
        mujoco.mj_step(ref, native)
    mujoco.mj_kinematics(ref, native)
    np.testing.assert_allclose(s0.body_q.numpy()[index, :3], native.xpos[[ref.body(n).id for n in names]], atol=1e-5)


def test_unknown_keyframe_is_named():
    model = ModelBuilder()
    model.add_mjcf(EQUALITIES)
    solver = SolverMuJoCo(model.finalize("cpu"), backend="cpu")
    with pytest.raises(Exception, match="no keyframe 'squat'; the model has: lifted"):
        solver.reset_to_keyframe(solver.model.state(), "squat")


OFFSET_MESH = """
<mujoco model="wedge">
  <option timestep="0.002"/>
  <asset><mesh name="wedge" vertex="1 1 0  1.4 1 0  1 1.3 0  1 1 0.2  1.4 1 0.2  1 1.3 0.2"/></asset>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <body name="piece" pos="0 0 0.3" euler="10 20 30"><freejoint/><geom type="mesh" mesh="wedge"/></body>
  </worldbody>
</mujoco>
"""


@pytest.mark.parametrize("route", ["mjcf", "usd"])
def test_mesh_keeps_its_asset_frame(route, tmp_path):
    """MuJoCo moves a mesh onto its centroid and principal axes when compiling: the import hands it the
    mesh as authored, so that it is moved once (not twice) and lands where native MuJoCo puts it."""
    solver, ref, data, ours = side_by_side(OFFSET_MESH, route, tmp_path, ["piece"], steps=400)
    m = solver.mj_model
    np.testing.assert_allclose(m.mesh_pos[0], ref.mesh_pos[0], atol=1e-6)
    np.testing.assert_allclose(np.abs(m.mesh_quat[0]), np.abs(ref.mesh_quat[0]), atol=1e-6)
    np.testing.assert_allclose(ours[0], data.xpos[ref.body("piece").id], atol=1e-5)
    assert data.xpos[ref.body("piece").id][2] < 0.1  # it fell onto the floor


VISUALS = """
<mujoco model="visuals">
  <asset><mesh name="tetra" vertex="0 0 0  0.1 0 0  0 0.1 0  0 0 0.1"/></asset>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <body name="box" pos="0 0 0.3"><freejoint/><geom type="box" size=".1 .1 .1"/>
      <geom type="sphere" size=".3" pos="0 0 -0.2" contype="0" conaffinity="0" group="2" mass="0"/>
      <geom type="mesh" mesh="tetra" contype="0" conaffinity="0" group="1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size=".05" contype="0" conaffinity="0" density="0"/></body>
  </worldbody>
</mujoco>
"""


def test_converted_visual_geoms_become_non_colliding_geoms(tmp_path):
    """MjcImageableAPI gprims (MJCF geoms with contype = conaffinity = 0) come back as MuJoCo geoms that
    neither collide nor add mass: the same geoms and groups as native, and the box still lands on the
    floor through its visual sphere."""
    solver, ref, data, ours = side_by_side(VISUALS, "usd", tmp_path, ["box"], steps=300)
    m = solver.mj_model
    assert m.ngeom == ref.ngeom == 5
    assert sorted(m.geom_group) == sorted(ref.geom_group)
    assert not m.geom_contype[m.geom_group > 0].any() and not m.geom_conaffinity[m.geom_group > 0].any()
    np.testing.assert_allclose(m.body_mass.sum(), ref.body_mass.sum(), rtol=1e-6)
    np.testing.assert_allclose(ours[0], data.xpos[ref.body("box").id], atol=1e-5)
    assert abs(ours[0][2] - 0.1) < 2e-3  # resting on its box, not on the visual sphere


HFIELD = """
<mujoco model="terrain">
  <asset><hfield name="terrain" nrow="3" ncol="4" size="1 1 0.3 0.1"
                 elevation="0 0.2 0.5 1  0 0.1 0.1 0.3  0.6 0.2 0 0.4"/></asset>
  <worldbody><geom type="hfield" hfield="terrain" pos="0.1 0 0"/>
    <body name="ball" pos="0.2 0.1 0.6"><freejoint/><geom type="sphere" size="0.1"/></body>
    <body name="box" pos="-0.5 -0.4 0.6"><freejoint/><geom type="box" size="0.1 0.1 0.1"/></body></worldbody>
</mujoco>
"""


@pytest.mark.parametrize("route", ["mjcf", "usd"])
def test_height_field_terrain_matches_native(route, tmp_path):
    solver, ref, data, ours = side_by_side(HFIELD, route, tmp_path, ["ball", "box"], steps=500)
    m = solver.mj_model
    assert m.nhfield == 1 and m.ngeom == ref.ngeom
    assert (m.hfield_nrow[0], m.hfield_ncol[0]) == (ref.hfield_nrow[0], ref.hfield_ncol[0]) == (3, 4)
    np.testing.assert_allclose(m.hfield_size, ref.hfield_size, rtol=1e-12)
    np.testing.assert_allclose(m.hfield_data, ref.hfield_data, atol=1e-7)
    np.testing.assert_allclose(ours, data.xpos[1:3], atol=1e-5)
    np.testing.assert_allclose(solver.mj_data.qpos, data.qpos, atol=1e-5)
    assert abs(data.xpos[1][1] - 0.1) > 0.1  # the ball rolled down the slope


CONTACT_PAIRS = """
<mujoco model="pairs">
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1" contype="0" conaffinity="0"/>
    <body name="ball" pos="0 0 0.3">
      <freejoint/>
      <geom name="ball_geom" type="sphere" size="0.1" contype="0" conaffinity="0"/>
    </body>
    <body name="box" pos="0.5 0 0.3" euler="10 0 20">
      <freejoint/>
      <geom name="box_geom" type="box" size="0.1 0.08 0.06"/>
    </body>
  </worldbody>
  <contact>
    <pair name="ball_floor" geom1="ball_geom" geom2="floor" condim="6" friction="0.8 0.8 0.01 0.001 0.001"
          solref="0.01 0.8" margin="0.001"/>
    <pair geom1="floor" geom2="box_geom" condim="4" solreffriction="0.03 1" gap="0.0005"
          solimp="0.8 0.9 0.002 0.5 2"/>
  </contact>
  <keyframe><key name="later" time="1.5" qpos="0 0 0.5 1 0 0 0 0.5 0 0.5 1 0 0 0"/></keyframe>
</mujoco>
"""


@pytest.mark.parametrize("route", ["mjcf", "usd"])
def test_contact_pairs_match_native(route, tmp_path):
    """Contact pairs, one between geoms that collide with nothing else (contype = conaffinity = 0), keep
    their parameters and the motion they give; a keyframe keeps its time."""
    solver, ref, data, ours = side_by_side(CONTACT_PAIRS, route, tmp_path, ["ball", "box"], steps=400)
    m = solver.mj_model
    assert m.npair == ref.npair == 2
    for field in ("pair_dim", "pair_friction", "pair_solref", "pair_solreffriction", "pair_solimp", "pair_margin"):
        np.testing.assert_allclose(getattr(m, field), getattr(ref, field), err_msg=field)
    np.testing.assert_allclose(m.pair_gap, ref.pair_gap)
    np.testing.assert_allclose(ours, data.xpos[[ref.body("ball").id, ref.body("box").id]], atol=1e-5)
    assert ours[0, 2] == pytest.approx(0.1, abs=2e-3)  # resting on the floor through its pair only
    assert ours[1, 2] < 0.1
    assert solver.model.keyframe_time[0] == 1.5 and m.key_time[0] == 1.5
    if route == "usd":
        from pxr import Usd

        stage = Usd.Stage.Open(str(tmp_path / "model.usda"))
        floor = stage.GetPrimAtPath("/pairs/floor")
        assert floor.HasAPI("PhysicsCollisionAPI") and not floor.GetAttribute("physics:collisionEnabled").Get()
        assert stage.GetPrimAtPath("/pairs/ContactPairs/ball_floor").GetTypeName() == "NewtonUsdContactPair"


CAMERAS_AND_LIGHTS = """
<mujoco model="cams">
  <visual><map znear="0.02" zfar="40"/></visual>
  <worldbody>
    <light name="sun" type="directional" dir="0 1 -1" diffuse="0.5 0.4 0.3" castshadow="false"/>
    <light name="spot" pos="0 0 3" dir="0.3 0 -1" cutoff="30"/>
    <light name="bulb" type="point" pos="1 1 2" active="false"/>
    <camera name="front" pos="2 0 1" xyaxes="0 1 0 -0.4 0 1" fovy="60" resolution="640 480"/>
    <camera name="ortho" pos="0 0 5" projection="orthographic" fovy="3"/>
    <camera name="phys" pos="0 -2 1" xyaxes="1 0 0 0 0.4 1" sensorsize="0.0036 0.0027" focal="0.004 0.004"
            resolution="640 480"/>
    <geom type="plane" size="3 3 0.1"/>
    <body name="ball" pos="0 0 1" euler="0 0 30">
      <freejoint/>
      <geom size="0.1"/>
      <camera name="onboard" pos="0 0.1 0.2" euler="20 0 0"/>
    </body>
  </worldbody>
</mujoco>
"""


def test_cameras_and_lights_are_converted(tmp_path):
    """MJCF cameras become UsdGeom cameras and lights UsdLux lights, on their bodies, where MuJoCo puts
    them, looking and shining where MuJoCo's do, with MuJoCo's field of view."""
    from pxr import Gf, Usd, UsdGeom, UsdLux

    from newton_usd.mjcf import convert

    stage = Usd.Stage.Open(convert(CAMERAS_AND_LIGHTS, tmp_path / "cams.usda"))
    m = mujoco.MjModel.from_xml_string(CAMERAS_AND_LIGHTS)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    cache = UsdGeom.XformCache()
    for name in ("front", "ortho", "phys", "onboard"):
        prim = stage.GetPrimAtPath(f"/cams/{name}" if name != "onboard" else "/cams/ball/onboard")
        camera = UsdGeom.Camera(prim).GetCamera()
        world = cache.GetLocalToWorldTransform(prim)
        c = m.camera(name).id
        np.testing.assert_allclose(world.ExtractTranslation(), d.cam_xpos[c], atol=1e-6, err_msg=name)
        looks = world.TransformDir(Gf.Vec3d(0, 0, -1))
        np.testing.assert_allclose(looks, -d.cam_xmat[c].reshape(3, 3)[:, 2], atol=1e-6, err_msg=name)
        if name == "ortho":
            assert camera.projection == Gf.Camera.Orthographic
            assert camera.verticalAperture == pytest.approx(30.0)  # 3 m high, in tenths of a unit
        else:
            assert camera.GetFieldOfView(Gf.Camera.FOVVertical) == pytest.approx(
                60.0 if name == "front" else 45.0 if name == "onboard" else 2 * np.degrees(np.arctan(1.35 / 4))
            )
    front = UsdGeom.Camera(stage.GetPrimAtPath("/cams/front")).GetCamera()
    assert front.aspectRatio == pytest.approx(640 / 480)
    assert front.clippingRange.min == pytest.approx(0.02 * m.stat.extent, rel=1e-6)

    sun, spot, bulb = (stage.GetPrimAtPath(f"/cams/{n}") for n in ("sun", "spot", "bulb"))
    assert sun.IsA(UsdLux.DistantLight) and spot.IsA(UsdLux.SphereLight) and bulb.IsA(UsdLux.SphereLight)
    for prim, light in ((sun, "sun"), (spot, "spot")):
        shines = cache.GetLocalToWorldTransform(prim).TransformDir(Gf.Vec3d(0, 0, -1))
        np.testing.assert_allclose(shines, d.light_xdir[m.light(light).id], atol=1e-6, err_msg=light)
    assert UsdLux.ShapingAPI(spot).GetShapingConeAngleAttr().Get() == pytest.approx(30.0)
    np.testing.assert_allclose(UsdLux.DistantLight(sun).GetColorAttr().Get(), [1.0, 0.8, 0.6], rtol=1e-6)
    assert not UsdLux.ShadowAPI(sun).GetShadowEnableAttr().Get()
    assert UsdGeom.Imageable(bulb).ComputeVisibility() == UsdGeom.Tokens.invisible  # inactive in MJCF


def test_converted_height_field_mesh_is_mujocos_surface(tmp_path):
    """The converted Mesh (NewtonUsdHeightfieldAPI, approximation "none") is the surface MuJoCo collides with:
    at its vertices and inside its triangles, its height is where a ray cast by native MuJoCo meets the field."""
    from pxr import Usd, UsdGeom, UsdPhysics

    from newton_usd.mjcf import convert

    stage = Usd.Stage.Open(convert(HFIELD, tmp_path / "terrain.usda"))
    prim = next(p for p in stage.Traverse() if p.HasAPI("NewtonUsdHeightfieldAPI"))
    assert prim.IsA(UsdGeom.Mesh) and prim.HasAPI(UsdPhysics.CollisionAPI)
    assert UsdPhysics.MeshCollisionAPI(prim).GetApproximationAttr().Get() == "none"
    assert prim.GetAttribute("newton:usd:heightfield:rows").Get() == 3
    assert prim.GetAttribute("newton:usd:heightfield:columns").Get() == 4
    assert list(prim.GetAttribute("newton:usd:heightfield:size").Get()) == [1, 1, 0.3, 0.1]
    assert prim.GetAttribute("mjc:condim").Get() == 3
    mesh = UsdGeom.Mesh(prim)
    points = np.array(mesh.GetPointsAttr().Get(), dtype=np.float64)
    triangles = np.array(mesh.GetFaceVertexIndicesAttr().Get()).reshape(-1, 3)
    assert len(points) == 12 and len(triangles) == 12
    ref = mujoco.MjModel.from_xml_string(HFIELD)
    data = mujoco.MjData(ref)
    mujoco.mj_forward(ref, data)
    offset = np.array([0.1, 0.0, 0.0])  # the geom's pos (the prim's translate)
    # The row at -Y is the XML's last row (MuJoCo flips the XML rows): point 0 is (-1, -1, 0.6 * 0.3).
    np.testing.assert_allclose(points[0], [-1, -1, 0.18], atol=1e-6)
    rng = np.random.default_rng(0)
    w = rng.dirichlet(np.ones(3), size=len(triangles))
    inside = np.einsum("tk,tkj->tj", w, points[triangles])  # a random point inside every triangle
    samples = np.concatenate([points * [1 - 1e-7, 1 - 1e-7, 1], inside])  # the vertices, just inside the edges
    geomid = np.zeros(1, np.int32)
    for x, y, z in samples:
        top = np.array([x, y, 2.0]) + offset
        dist = mujoco.mj_ray(ref, data, top, np.array([0.0, 0.0, -1.0]), None, 1, -1, geomid)
        assert geomid[0] == 0
        assert 2.0 - dist == pytest.approx(z, abs=1e-6)


def test_visual_height_field_stays_a_visual_height_field(tmp_path):
    """An hfield geom that does not collide (contype = conaffinity = 0) comes back as a non-colliding hfield."""
    xml = HFIELD.replace(
        'pos="0.1 0 0"/>', 'pos="0.1 0 0"/><geom type="hfield" hfield="terrain" contype="0" conaffinity="0"/>'
    )
    solver, ref, data, ours = side_by_side(xml, "usd", tmp_path, ["ball", "box"], steps=200)
    m = solver.mj_model
    assert m.ngeom == ref.ngeom == 4
    hfields = np.flatnonzero(m.geom_type == mujoco.mjtGeom.mjGEOM_HFIELD)
    assert len(hfields) == 2 and sorted(m.geom_contype[hfields]) == [0, 1]
    np.testing.assert_allclose(ours, data.xpos[1:3], atol=1e-5)


@pytest.mark.parametrize("route", ["mjcf", "usd"])
def test_the_shipped_mjcf_sample_simulates_as_native(route, tmp_path):
    """``sample_stages/arm.xml`` (the docs' ``usdsim convert`` example): the model MuJoCo gets has the
    native counts, ranges, actuators and site groups, and from its keyframe with a control the arm moves
    as native MuJoCo moves it."""
    from newton_usd.mjcf import convert

    from conftest import SAMPLES

    xml = SAMPLES / "arm.xml"
    b = ModelBuilder()
    if route == "mjcf":
        b.add_mjcf(str(xml))
    else:
        b.add_usd(str(convert(str(xml), tmp_path / "arm.usda")))
    model = b.finalize("cpu")
    solver = SolverMuJoCo(model, backend="cpu")
    ref = mujoco.MjModel.from_xml_path(str(xml))
    m = solver.mj_model
    assert (m.nq, m.nv, m.nu, m.nsite, m.nkey) == (ref.nq, ref.nv, ref.nu, ref.nsite, ref.nkey)
    np.testing.assert_array_equal(m.site_group, ref.site_group)
    np.testing.assert_allclose(m.jnt_range, ref.jnt_range, atol=1e-6)
    np.testing.assert_allclose(m.actuator_gainprm[:, :3], ref.actuator_gainprm[:, :3], atol=1e-9)
    state, out, control = model.state(), model.state(), model.control()
    solver.reset_to_keyframe(state, "bent", control)
    control.mujoco.ctrl.assign(np.array([0.3, 0.5], dtype=np.float32))
    d = mujoco.MjData(ref)
    mujoco.mj_resetDataKeyframe(ref, d, 0)
    d.ctrl[:] = [0.3, 0.5]
    for _ in range(250):
        solver.step(state, out, control, None, m.opt.timestep)
        state, out = out, state
        mujoco.mj_step(ref, d)
    np.testing.assert_allclose(solver.mj_data.qpos, d.qpos, atol=1e-6)
    assert abs(d.qpos[0] - 0.5) > 0.05  # it moved from the keyframe


def test_converting_a_model_without_bodies_says_so(tmp_path):
    """An include fragment (a <body> outside <worldbody>, which MuJoCo ignores) converts to nothing to
    simulate: the conversion says so instead of leaving it to the first run."""
    from newton_usd.diagnostics import Diagnostics
    from newton_usd.mjcf import convert

    diag = Diagnostics()
    xml = (
        '<mujoco><body name="arm"><geom size="0.1"/></body>'
        '<worldbody><geom type="plane" size="1 1 1"/></worldbody></mujoco>'
    )
    convert(xml, tmp_path / "fragment.usda", diagnostics=diag)
    assert "the MJCF has no bodies: the USD has nothing to simulate" in diag.kinds
    diag = Diagnostics()
    convert(xml.replace("<worldbody>", '<worldbody><body name="b"><freejoint/><geom size="0.1"/></body>'),
            tmp_path / "model.usda", diagnostics=diag)  # fmt: skip
    assert not any("no bodies" in k for k in diag.kinds)
