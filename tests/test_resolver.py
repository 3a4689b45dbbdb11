import math

import mujoco
import numpy as np
import pytest
from pxr import Gf, Sdf, UsdGeom, UsdPhysics

from newton_usd import ModelBuilder, Simulation, UsdInputError
from newton_usd.solvers import SolverMuJoCo

from stages import add_box, falling_cube, new_stage, pendulum

T = Sdf.ValueTypeNames


def author(prim, name, type_name, value):
    prim.CreateAttribute(name, type_name, custom=False).Set(value)


def load(stage, **kw):
    b = ModelBuilder()
    imported = b.add_usd(stage, **kw)
    return b.finalize("cpu"), imported


def hinge(stage):
    return stage.GetPrimAtPath("/Hinge")


def test_authored_value_of_the_highest_dialect_wins_and_order_is_configurable():
    stage = pendulum()
    author(hinge(stage), "newton:armature", T.Float, 0.1)
    author(hinge(stage), "mjc:armature", T.Double, 0.2)
    author(hinge(stage), "physxJoint:armature", T.Float, 0.3)
    model, imp = load(stage)
    assert model.joint_armature.numpy()[0] == pytest.approx(0.1)
    r = imp.resolver.provenance[("/Hinge", "armature")]
    assert (r.kind, r.attribute, r.prim) == ("authored", "newton:armature", "/Hinge")
    model, imp = load(stage, order=("mjc", "newton", "physx", "physics"))
    assert model.joint_armature.numpy()[0] == pytest.approx(0.2)
    model, imp = load(stage, order=("physx", "physics"))
    assert model.joint_armature.numpy()[0] == pytest.approx(0.3)
    hinge(stage).RemoveProperty("newton:armature")
    model, imp = load(stage)
    assert model.joint_armature.numpy()[0] == pytest.approx(0.2)
    assert imp.resolver.provenance[("/Hinge", "armature")].source == "mjc:armature"


def test_newton_angular_damping_is_per_degree_and_mjc_is_per_radian():
    stage = pendulum()
    author(hinge(stage), "newton:damping", T.Float, 1.0)
    model, _ = load(stage)
    solver = SolverMuJoCo(model, backend="cpu")
    assert solver.mj_model.dof_damping[0] == pytest.approx(180.0 / math.pi, rel=1e-6)
    hinge(stage).RemoveProperty("newton:damping")
    author(hinge(stage), "mjc:damping", T.Double, 2.5)
    author(hinge(stage), "mjc:frictionloss", T.Double, 0.3)
    author(hinge(stage), "mjc:solreflimit", T.DoubleArray, [0.05, 0.8])
    model, _ = load(stage)
    solver = SolverMuJoCo(model, backend="cpu")
    assert solver.mj_model.dof_damping[0] == pytest.approx(2.5)
    assert solver.mj_model.dof_frictionloss[0] == pytest.approx(0.3)
    np.testing.assert_allclose(solver.mj_model.jnt_solref[0], [0.05, 0.8])


def test_centimeter_stage_converts_newton_lengths_and_armature():
    stage = falling_cube(meters_per_unit=0.01, height=100.0)
    cube = stage.GetPrimAtPath("/Cube")
    author(cube, "newton:contactMargin", T.Float, 2.0)  # 2 cm
    model, imp = load(stage)
    i = model.shape_label.index("/Cube")
    assert model.shape_margin.numpy()[i] == pytest.approx(0.02)
    assert imp.resolver.provenance[("/Cube", "margin")].attribute == "newton:contactMargin"


def test_unset_sentinels_fall_through_to_the_next_dialect():
    stage = falling_cube()
    cube = stage.GetPrimAtPath("/Cube")
    author(cube, "newton:contactGap", T.Float, float("-inf"))  # newton's "not set"
    author(cube, "mjc:gap", T.Double, 0.01)
    model, imp = load(stage)
    assert model.shape_gap.numpy()[model.shape_label.index("/Cube")] == pytest.approx(0.01)


def test_mjc_collision_values_reach_mujoco_geoms():
    stage = falling_cube()
    cube = stage.GetPrimAtPath("/Cube")
    author(cube, "mjc:condim", T.Int, 4)
    author(cube, "mjc:priority", T.Int, 2)
    author(cube, "mjc:solref", T.DoubleArray, [0.01, 0.5])
    author(cube, "mjc:solimp", T.DoubleArray, [0.8, 0.9, 0.002, 0.4, 3])
    model, _ = load(stage)
    solver = SolverMuJoCo(model, backend="cpu")
    g = solver.spec_map.shape_mj[model.shape_label.index("/Cube")]
    m = solver.mj_model
    assert (m.geom_condim[g], m.geom_priority[g]) == (4, 2)
    np.testing.assert_allclose(m.geom_solref[g], [0.01, 0.5])
    np.testing.assert_allclose(m.geom_solimp[g], [0.8, 0.9, 0.002, 0.4, 3])
    ground = solver.spec_map.shape_mj[model.shape_label.index("/Ground")]
    assert m.geom_condim[ground] == 3  # unauthored: MuJoCo's default


def test_scene_options_and_flags_reach_mujoco_and_constructor_overrides():
    stage = falling_cube()
    scene = stage.GetPrimAtPath("/PhysicsScene")
    author(scene, "mjc:option:integrator", T.Token, "rk4")
    author(scene, "mjc:option:iterations", T.Int, 17)
    author(scene, "mjc:option:cone", T.Token, "elliptic")
    author(scene, "mjc:flag:contact", T.Bool, False)
    model, _ = load(stage)
    m = SolverMuJoCo(model, backend="cpu").mj_model
    assert m.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4
    assert m.opt.iterations == 17 and m.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC
    assert m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CONTACT
    m = SolverMuJoCo(model, backend="cpu", integrator="implicitfast", iterations=5).mj_model
    assert m.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST and m.opt.iterations == 5


def test_stage_timestep_is_used_exactly():
    stage = falling_cube()
    scene = stage.GetPrimAtPath("/PhysicsScene")
    author(scene, "mjc:option:timestep", T.Double, 0.0025)
    sim = Simulation.open(stage)
    assert sim.dt == 0.0025 and sim.substeps == round((1 / 60) / 0.0025)
    sim.run(3)
    assert sim.steps == 3 * sim.substeps
    assert sim.time_code == pytest.approx(sim.steps * 0.0025 * 60)
    author(scene, "newton:timeStepsPerSecond", T.Int, 240)  # newton outranks mjc
    sim = Simulation.open(stage)
    assert sim.dt == pytest.approx(1 / 240) and sim.substeps == 4


@pytest.mark.parametrize(
    "name,type_name,value,expected",
    [
        ("mjc:solreflimit", T.DoubleArray, [0.02, 1, 3], "expected 2 numbers, got 3"),
        ("mjc:armature", T.Double, -1.0, "must be >= 0"),
        ("mjc:solimplimit", T.DoubleArray, [0.9, 0.95, -0.001, 0.5, 2], "solimp width must be positive"),
    ],
)
def test_bad_values_name_prim_attribute_and_what_is_valid(name, type_name, value, expected):
    stage = pendulum()
    author(hinge(stage), name, type_name, value)
    with pytest.raises(UsdInputError) as e:
        load(stage)
    assert f"/Hinge.{name}" in str(e.value) and expected in str(e.value)


def test_token_outside_the_allowed_set_lists_the_allowed_values():
    stage = falling_cube()
    author(stage.GetPrimAtPath("/PhysicsScene"), "mjc:option:integrator", T.Token, "verlet")
    with pytest.raises(
        UsdInputError, match=r"/PhysicsScene.mjc:option:integrator: 'verlet' is not one of .*euler, rk4"
    ):
        load(stage)


def test_material_torsional_and_rolling_friction():
    stage = falling_cube()
    mat = UsdPhysics.MaterialAPI.Apply(stage.DefinePrim("/Materials/Rubber", "Material").GetPrim())
    mat.CreateDynamicFrictionAttr(0.9)
    author(mat.GetPrim(), "newton:torsionalFriction", T.Float, 0.02)
    author(mat.GetPrim(), "mjc:rollingfriction", T.Double, 0.003)
    from pxr import UsdShade

    UsdShade.MaterialBindingAPI.Apply(stage.GetPrimAtPath("/Cube")).Bind(
        UsdShade.Material(mat.GetPrim()), UsdShade.Tokens.weakerThanDescendants, "physics"
    )
    add_box(stage, "/Other", 0.2, (1, 0, 1), mass=1.0)
    model, _ = load(stage)
    i = model.shape_label.index("/Cube")
    assert model.shape_material_mu.numpy()[i] == pytest.approx(0.9)
    assert model.shape_material_mu_torsional.numpy()[i] == pytest.approx(0.02)
    assert model.shape_material_mu_rolling.numpy()[i] == pytest.approx(0.003)
    m = SolverMuJoCo(model, backend="cpu").mj_model
    np.testing.assert_allclose(m.geom_friction[SolverMuJoCo(model).spec_map.shape_mj[i]], [0.9, 0.02, 0.003], rtol=1e-6)
    other = model.shape_label.index("/Other")
    assert model.shape_material_mu_torsional.numpy()[other] == pytest.approx(0.005)  # default


def test_unused_gf_value_types_convert():
    stage = falling_cube()
    author(stage.GetPrimAtPath("/PhysicsScene"), "mjc:option:wind", T.Double3, Gf.Vec3d(1, 2, 3))
    model, _ = load(stage)
    assert model.mujoco.option["wind"] == (1.0, 2.0, 3.0)
    np.testing.assert_allclose(SolverMuJoCo(model).mj_model.opt.wind, [1, 2, 3])


def test_applied_mjc_scene_schema_gives_mujoco_defaults_not_newton_opinion():
    stage = falling_cube()
    model, imp = load(stage)
    assert SolverMuJoCo(model).mj_model.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    stage.GetPrimAtPath("/PhysicsScene").ApplyAPI("MjcSceneAPI")
    model, imp = load(stage)
    assert SolverMuJoCo(model).mj_model.opt.integrator == mujoco.mjtIntegrator.mjINT_EULER
    r = imp.resolver.provenance[("/PhysicsScene", "option.integrator")]
    assert (r.kind, r.schema, r.attribute) == ("fallback", "MjcSceneAPI", "mjc:option:integrator")
    assert r.source == "fallback of MjcSceneAPI (mjc:option:integrator)"
    # MjcSceneAPI has NewtonSceneAPI built in, whose fallback rate (1000 steps/s) outranks
    # mjc:option:timestep's fallback in the default order; mujoco-usd-converter relies on it (it authors
    # newton:timeStepsPerSecond unless the MJCF step was 0.001 s).
    assert imp.scene["timestep"].value == pytest.approx(0.001)
    assert imp.scene["timestep"].attribute == "newton:timeStepsPerSecond"
    sim = Simulation.open(stage, order=("mjc", "newton", "physx", "physics"))
    assert sim.dt == pytest.approx(0.002)  # MuJoCo's own default when mjc comes first


def test_newton_scene_fallback_rate_and_authored_values_outrank_fallbacks():
    stage = pendulum()
    stage.GetPrimAtPath("/PhysicsScene").ApplyAPI("NewtonSceneAPI")
    prim = hinge(stage)
    prim.ApplyAPI("NewtonJointAPI")
    prim.ApplyAPI("MjcJointAPI")
    author(prim, "mjc:armature", T.Double, 0.25)
    model, imp = load(stage)
    assert imp.scene["timestep"].value == pytest.approx(0.001)  # NewtonSceneAPI: 1000 steps per second
    assert imp.scene["timestep"].schema == "NewtonSceneAPI"
    # An authored mjc value outranks the newton schema's fallback.
    assert model.joint_armature.numpy()[0] == pytest.approx(0.25)
    assert imp.resolver.provenance[("/Hinge", "armature")].kind == "authored"
    damping = imp.resolver.provenance[("/Hinge", "damping")]
    assert (damping.kind, damping.schema) == ("fallback", "NewtonJointAPI")


def test_mjc_actuator_on_a_joint_matches_native_mujoco():
    stage = pendulum(angle_deg=0.0, length=0.5, inertia=0.004)
    act = stage.DefinePrim("/Motor", "MjcActuator")
    act.CreateRelationship("mjc:target").SetTargets([Sdf.Path("/Hinge")])
    author(act, "mjc:gear", T.DoubleArray, [3, 0, 0, 0, 0, 0])
    author(act, "mjc:ctrlLimited", T.Token, "true")
    author(act, "mjc:ctrlRange:min", T.Double, -1.0)
    author(act, "mjc:ctrlRange:max", T.Double, 1.0)
    model, imp = load(stage)
    assert len(model.mujoco.actuator) == 1
    assert model.mujoco.actuator[0]["values"]["gainType"] == "fixed"  # MjcActuator's fallback
    solver = SolverMuJoCo(model, backend="cpu")
    s0, s1, control = model.state(), model.state(), model.control()
    control.mujoco.ctrl.assign(np.array([2.0], dtype=np.float32))  # clamped to 1 by ctrlrange
    dt = 1.0 / 480.0
    ours = []
    for _ in range(240):
        solver.step(s0, s1, control, None, dt)
        s0, s1 = s1, s0
        ours.append(float(s0.joint_q.numpy()[0]))
    xml = f"""<mujoco><option timestep="{dt!r}" integrator="implicitfast"/><worldbody>
      <body pos="0 0 2"><joint name="h" type="hinge" axis="0 1 0"/>
        <inertial pos="0 0 -0.5" mass="1" diaginertia="0.004 0.004 0.004"/></body></worldbody>
      <actuator><motor joint="h" gear="3" ctrllimited="true" ctrlrange="-1 1"/></actuator></mujoco>"""
    ref = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(ref)
    data.ctrl[0] = 2.0
    expected = []
    for _ in range(240):
        mujoco.mj_step(ref, data)
        expected.append(data.qpos[0])
    np.testing.assert_allclose(ours, expected, atol=1e-5)
    assert abs(ours[-1]) > 0.1  # the motor lifted the pendulum


def test_actuator_with_unsupported_target_is_reported(caplog):
    stage = pendulum()
    act = stage.DefinePrim("/SiteMotor", "MjcActuator")
    act.CreateRelationship("mjc:target").SetTargets([Sdf.Path("/Pendulum/Ball")])
    model, _ = load(stage)
    with caplog.at_level("WARNING", logger="newton_usd"):
        solver = SolverMuJoCo(model, backend="cpu")
    assert solver.mj_model.nu == 0
    assert any(
        "MjcActuator with a spatial-tendon, fixed-joint or unknown target" in r.getMessage() for r in caplog.records
    )


def test_joints_sharing_schemas_resolve_only_their_own_authored_values():
    """Joints with the same applied schemas share what they leave unauthored (fallbacks, defaults): one
    joint's authored value never reaches another, on angular and linear joints alike."""
    stage = new_stage()
    authored = {"/J0": {"mjc:armature": 0.25}, "/J1": {"mjc:damping": 0.5}, "/J2": {}, "/J3": {"mjc:armature": 0.75}}
    for i, (path, values) in enumerate(authored.items()):
        body = UsdGeom.Xform.Define(stage, f"/Body{i}")
        body.AddTranslateOp().Set(Gf.Vec3d(i, 0, 1))
        UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
        mass = UsdPhysics.MassAPI.Apply(body.GetPrim())
        mass.CreateMassAttr(1.0)
        mass.CreateDiagonalInertiaAttr(Gf.Vec3f(0.01, 0.01, 0.01))
        kind = UsdPhysics.PrismaticJoint if path == "/J3" else UsdPhysics.RevoluteJoint
        joint = kind.Define(stage, path)
        joint.CreateBody1Rel().SetTargets([body.GetPath()])
        joint.CreateLocalPos0Attr(Gf.Vec3f(i, 0, 1))
        joint.GetPrim().ApplyAPI("MjcJointAPI")
        for name, value in values.items():
            author(joint.GetPrim(), name, T.Double, value)
    b = ModelBuilder()
    imp = b.add_usd(stage)
    prov = imp.resolver.provenance
    for path, values in authored.items():
        j = imp.joint_index[path]
        dof = sum(len(qd) for qd in b.joint_qd[:j])
        for name, attribute in (("armature", "mjc:armature"), ("damping", "mjc:damping")):
            r = prov[(path, name)]
            if attribute in values:
                assert (r.kind, r.attribute, r.prim, r.value) == ("authored", attribute, path, values[attribute])
            else:
                assert (r.kind, r.schema) == ("fallback", "MjcJointAPI")
        assert b.joint_armature[dof] == values.get("mjc:armature", prov[(path, "armature")].value)
