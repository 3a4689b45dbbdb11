"""Live material bindings: a physics material bound during a run, as Kit's material UI binds it (MaterialBindingAPI
applied to the prim, then its ``material:binding:physics`` set), is applied in place, with no import of the stage: the
colliders bound (the prim's, and those below it) take the material's friction and restitution, and their bodies the
mass its density gives, as a fresh import of the edited stage gives them."""

import logging
import math

import numpy as np
import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade

from newton_usd.core.builder import ModelBuilder
from newton_usd.sim import Simulation
from newton_usd.usd import add_usd

from stages import add_box, add_ground, new_stage

ENGINES = [
    pytest.param(("mujoco", "cpu"), id="mujoco"),
    pytest.param(("mujoco", "warp"), id="mujoco-warp"),
    pytest.param(("xpbd", None), id="xpbd"),
    pytest.param(("featherstone", None), id="featherstone"),
    pytest.param(("semi_implicit", None), id="semi_implicit"),
    pytest.param(("kamino", None), id="kamino", marks=pytest.mark.soak),
]
MATERIAL_VALUES = (
    "shape_material_mu", "shape_material_restitution", "shape_material_mu_torsional", "shape_material_mu_rolling"
)  # fmt: skip
MASS_VALUES = ("body_mass", "body_inv_mass", "body_com", "body_inertia")


@pytest.fixture
def imports(caplog):
    """The messages of the frames that imported the stage again to apply edits (none: every edit was in place)."""
    caplog.set_level(logging.INFO, logger="newton_usd")
    return lambda: [r.getMessage() for r in caplog.records if "importing the stage again" in r.getMessage()]


def physics_material(stage, path, mu, restitution=None, density=None):
    material = UsdShade.Material.Define(stage, path)
    api = UsdPhysics.MaterialAPI.Apply(material.GetPrim())
    api.CreateDynamicFrictionAttr(mu)
    api.CreateStaticFrictionAttr(mu)
    if restitution is not None:
        api.CreateRestitutionAttr(restitution)
    if density is not None:
        api.CreateDensityAttr(density)
    return material


def kit_bind(prim, material, purpose="physics"):
    """As Kit's material UI binds: the API applied, then the binding."""
    UsdShade.MaterialBindingAPI.Apply(prim).Bind(material, materialPurpose=purpose)


def slope_stage(tilt_deg=35.0):
    """A flat box on icy ground under gravity tilted ``tilt_deg`` along +x: it slides (its collider bound to no
    material: MuJoCo's friction, the larger of the two, 0.5; Newton's, their mean, 0.275; both below tan 35 deg);
    /Looks/Rubber (friction 2) would hold it."""
    stage = new_stage()
    tilt = math.radians(tilt_deg)
    scene = UsdPhysics.Scene(stage.GetPrimAtPath("/PhysicsScene"))
    scene.CreateGravityDirectionAttr(Gf.Vec3f(math.sin(tilt), 0.0, -math.cos(tilt)))
    scene.CreateGravityMagnitudeAttr(9.81)
    ground = add_ground(stage)
    kit_bind(ground.GetPrim(), physics_material(stage, "/Looks/Ice", 0.05))
    physics_material(stage, "/Looks/Rubber", 2.0)
    box = add_box(stage, "/Box", 0.2, (0, 0, 0.05), mass=1.0)
    box.AddScaleOp().Set(Gf.Vec3f(2.0, 2.0, 0.5))  # (flat: held at once, it does not tip over)
    return stage


def fresh_import(stage):
    builder = ModelBuilder()
    add_usd(builder, stage)
    return builder.finalize("cpu")


def assert_as_imported(sim, names=MATERIAL_VALUES + MASS_VALUES):
    """The running model's ``names`` are a fresh import's of the edited stage."""
    fresh = fresh_import(sim.stage)
    assert list(fresh.shape_label) == list(sim.model.shape_label)
    for name in names:
        np.testing.assert_allclose(getattr(sim.model, name).numpy(), getattr(fresh, name).numpy(), rtol=1e-5,
                                   atol=1e-7, err_msg=name)  # fmt: skip


def shape_value(sim, name, label):
    return float(getattr(sim.model, name).numpy()[sim.model.shape_label.index(label)])


def body_vx(sim, label):
    return float(sim.state.body_qd.numpy()[sim.model.body_label.index(label), 0])


@pytest.mark.parametrize(
    "engine",
    [  # (MuJoCo-Warp's run on Warp's CPU device: soak; its other tests are main)
        pytest.param(p.values[0], id=p.id, marks=pytest.mark.soak) if p.id == "mujoco-warp" else p for p in ENGINES
    ],
)
def test_kit_binding_of_a_material_stops_a_sliding_box_in_place(engine, imports):
    """A box slides down an icy slope; Kit binds it a rubber material (MaterialBindingAPI applied in one frame, the
    binding made in the next): it stops, with no import; unbound again (and the API removed), it slides again."""
    solver, backend = engine
    stage = slope_stage()
    sim = Simulation.open(stage, solver=solver, backend=backend, device="cpu", record=False)
    sim.check_flung = False
    sim.run(10)
    assert body_vx(sim, "/Box") > 0.2  # sliding
    box = stage.GetPrimAtPath("/Box")
    api = UsdShade.MaterialBindingAPI.Apply(box)
    sim.step_frame()
    assert sim.edits_applied == 0 and shape_value(sim, "shape_material_mu", "/Box") == pytest.approx(0.5)
    api.Bind(UsdShade.Material(stage.GetPrimAtPath("/Looks/Rubber")), materialPurpose="physics")
    sim.step_frame()
    assert sim.edits_applied == 1 and sim.rebuilds == 0
    assert shape_value(sim, "shape_material_mu", "/Box") == pytest.approx(2.0)
    assert_as_imported(sim)
    if solver == "mujoco" and backend == "cpu":  # (what the engine sees)
        geom = sim.solver.spec_map.shape_mj[sim.model.shape_label.index("/Box")]
        assert sim.solver.mj_model.geom_friction[geom, 0] == pytest.approx(2.0)
    sim.run(30)
    assert abs(body_vx(sim, "/Box")) < 0.05  # held by its rubber
    api.UnbindDirectBinding("physics")
    box.RemoveAPI(UsdShade.MaterialBindingAPI)
    sim.step_frame()
    assert shape_value(sim, "shape_material_mu", "/Box") == pytest.approx(0.5)
    sim.run(20)
    assert body_vx(sim, "/Box") > 0.1  # sliding again
    assert sim.rebuilds == 0 and not imports()


def test_a_material_defined_during_play_and_bound_in_the_same_frame(imports):
    """A material defined during the run (PhysicsMaterialAPI: friction, restitution, density; Newton's torsional and
    rolling friction) and bound at once (Kit: the API applied, then the binding) to a box of no authored mass: in
    place, the box takes its values and the mass its density gives (0.2 m cube of 500 kg/m^3: 4 kg), as a fresh
    import does; a Shader defined under it simulates nothing."""
    stage = slope_stage()
    add_box(stage, "/Light", 0.2, (1.0, 0, 0.1))  # (density: the default 1000 kg/m^3, 8 kg)
    sim = Simulation.open(stage, device="cpu", record=False)
    sim.check_flung = False
    sim.run(3)
    light = sim.model.body_label.index("/Light")
    assert sim.model.body_mass.numpy()[light] == pytest.approx(8.0)
    new = physics_material(stage, "/Looks/Felt", 0.9, restitution=0.1, density=500.0)
    new.GetPrim().CreateAttribute("newton:torsionalFriction", Sdf.ValueTypeNames.Float).Set(0.02)
    new.GetPrim().CreateAttribute("newton:rollingFriction", Sdf.ValueTypeNames.Float).Set(0.003)
    UsdShade.Shader.Define(stage, "/Looks/Felt/Surface").CreateIdAttr("UsdPreviewSurface")
    kit_bind(stage.GetPrimAtPath("/Light"), new)
    sim.step_frame()
    assert sim.edits_applied == 1 and sim.rebuilds == 0 and not imports()
    assert sim.model.body_mass.numpy()[light] == pytest.approx(4.0, rel=1e-5)
    for name, value in zip(MATERIAL_VALUES, (0.9, 0.1, 0.02, 0.003), strict=True):
        assert shape_value(sim, name, "/Light") == pytest.approx(value, rel=1e-6), name
    assert_as_imported(sim)
    mb = sim.solver.spec_map.body_mj[light]
    assert sim.solver.mj_model.body_mass[mb] == pytest.approx(4.0, rel=1e-5)
    # Its values edited after: the material's colliders take them (the binding read anew)
    UsdPhysics.MaterialAPI(new.GetPrim()).GetDensityAttr().Set(250.0)
    sim.step_frame()
    assert sim.model.body_mass.numpy()[light] == pytest.approx(2.0, rel=1e-5) and not imports()


def test_a_binding_on_an_ancestor_reaches_the_colliders_below(imports):
    """Bindings are inherited, as USD's UsdPhysics parser reads them: by a collider with MaterialBindingAPI applied.
    A material bound to an Xform above three boxes (A has the API; B has it and a material of its own, which wins;
    C has none: no material) and to a body whose collider is a child prim (with the API) reaches A and the child, in
    place, as a fresh import binds them; made stronger than descendants' bindings, it reaches B too."""
    stage = slope_stage()
    for name, x in (("A", 1.0), ("B", 1.5), ("C", 2.0)):
        add_box(stage, f"/Crates/{name}", 0.2, (x, 0, 0.1))
    UsdShade.MaterialBindingAPI.Apply(stage.GetPrimAtPath("/Crates/A"))
    kit_bind(stage.GetPrimAtPath("/Crates/B"), UsdShade.Material(stage.GetPrimAtPath("/Looks/Ice")))
    cart = UsdGeom.Xform.Define(stage, "/Cart")
    cart.AddTranslateOp().Set(Gf.Vec3d(-1.0, 0, 0.1))
    UsdPhysics.RigidBodyAPI.Apply(cart.GetPrim())
    wheel = UsdGeom.Sphere.Define(stage, "/Cart/Wheel")
    wheel.CreateRadiusAttr(0.1)
    UsdPhysics.CollisionAPI.Apply(wheel.GetPrim())
    UsdShade.MaterialBindingAPI.Apply(wheel.GetPrim())
    sim = Simulation.open(stage, device="cpu", record=False)
    sim.check_flung = False
    sim.run(3)
    felt = physics_material(stage, "/Looks/Felt", 0.9, density=250.0)
    kit_bind(stage.GetPrimAtPath("/Crates"), felt)
    kit_bind(cart.GetPrim(), felt)
    sim.step_frame()
    assert sim.edits_applied == 1 and sim.rebuilds == 0 and not imports()
    mu = {label: shape_value(sim, "shape_material_mu", label) for label in ("/Crates/A", "/Crates/B", "/Crates/C")}
    assert mu == pytest.approx({"/Crates/A": 0.9, "/Crates/B": 0.05, "/Crates/C": 0.5})
    assert shape_value(sim, "shape_material_mu", "/Cart/Wheel") == pytest.approx(0.9)
    assert sim.model.body_mass.numpy()[sim.model.body_label.index("/Crates/A")] == pytest.approx(2.0, rel=1e-5)
    assert_as_imported(sim)
    rel = UsdShade.MaterialBindingAPI(stage.GetPrimAtPath("/Crates")).GetDirectBindingRel("physics")
    UsdShade.MaterialBindingAPI.SetMaterialBindingStrength(rel, UsdShade.Tokens.strongerThanDescendants)
    sim.step_frame()
    assert shape_value(sim, "shape_material_mu", "/Crates/B") == pytest.approx(0.9)
    assert_as_imported(sim)
    # MaterialBindingAPI applied to C: it takes the material bound above it (in place)
    UsdShade.MaterialBindingAPI.Apply(stage.GetPrimAtPath("/Crates/C"))
    sim.step_frame()
    assert shape_value(sim, "shape_material_mu", "/Crates/C") == pytest.approx(0.9)
    assert_as_imported(sim)
    assert sim.rebuilds == 0 and not imports()


def test_a_binding_to_a_material_defined_later_takes_it_then(imports):
    """A box bound to a material path where nothing is yet keeps the default friction; the material defined there a
    frame later is its material from then on (in place), as an import reads it."""
    stage = slope_stage()
    sim = Simulation.open(stage, device="cpu", record=False)
    sim.check_flung = False
    sim.run(3)
    box = stage.GetPrimAtPath("/Box")
    UsdShade.MaterialBindingAPI.Apply(box)
    box.CreateRelationship("material:binding:physics").SetTargets([Sdf.Path("/Looks/Later")])
    sim.step_frame()
    assert shape_value(sim, "shape_material_mu", "/Box") == pytest.approx(0.5)
    physics_material(stage, "/Looks/Later", 1.5, restitution=0.2)
    sim.step_frame()
    assert shape_value(sim, "shape_material_mu", "/Box") == pytest.approx(1.5)
    assert shape_value(sim, "shape_material_restitution", "/Box") == pytest.approx(0.2)
    assert_as_imported(sim)
    assert sim.rebuilds == 0 and not imports()


def test_a_collection_binding_and_its_members(imports):
    """A material bound through a collection (on an ancestor of the colliders, its members listed on a Scope) reaches
    its members (colliders with MaterialBindingAPI); a member excluded later goes back to no material; in place, as
    an import binds them."""
    stage = slope_stage()
    for name, x in (("A", 1.0), ("B", 1.5)):
        UsdShade.MaterialBindingAPI.Apply(add_box(stage, f"/Crates/{name}", 0.2, (x, 0, 0.1)).GetPrim())
    UsdGeom.Scope.Define(stage, "/Sets")
    sim = Simulation.open(stage, device="cpu", record=False)
    sim.check_flung = False
    sim.run(3)
    members = Usd.CollectionAPI.Apply(stage.GetPrimAtPath("/Sets"), "slippery")
    members.CreateIncludesRel().SetTargets([Sdf.Path("/Crates")])
    felt = physics_material(stage, "/Looks/Felt", 0.9)
    UsdShade.MaterialBindingAPI.Apply(stage.GetPrimAtPath("/Crates")).Bind(members, felt, "felt",
                                                                           materialPurpose="physics")  # fmt: skip
    sim.step_frame()
    assert shape_value(sim, "shape_material_mu", "/Crates/A") == pytest.approx(0.9)
    assert shape_value(sim, "shape_material_mu", "/Crates/B") == pytest.approx(0.9)
    members.CreateExcludesRel().SetTargets([Sdf.Path("/Crates/B")])
    sim.step_frame()
    assert shape_value(sim, "shape_material_mu", "/Crates/A") == pytest.approx(0.9)
    assert shape_value(sim, "shape_material_mu", "/Crates/B") == pytest.approx(0.5)
    assert_as_imported(sim)
    assert sim.rebuilds == 0 and not imports()


def test_a_schema_the_import_reads_applied_with_the_binding_goes_through_the_import(imports):
    """MaterialBindingAPI applied together with a schema that changes what is simulated (CollisionAPI on a visual
    cube of a body): the stage is imported again, and the cube collides."""
    stage = slope_stage()
    add_box(stage, "/Crate", 0.2, (1.0, 0, 0.1), mass=1.0)
    UsdGeom.Cube.Define(stage, "/Crate/Handle").CreateSizeAttr(0.05)
    sim = Simulation.open(stage, device="cpu", record=False)
    sim.check_flung = False
    sim.run(3)
    handle = stage.GetPrimAtPath("/Crate/Handle")
    kit_bind(handle, UsdShade.Material(stage.GetPrimAtPath("/Looks/Rubber")))
    UsdPhysics.CollisionAPI.Apply(handle)
    sim.step_frame()
    assert imports() and "/Crate/Handle" in sim.model.shape_label
    assert shape_value(sim, "shape_material_mu", "/Crate/Handle") == pytest.approx(2.0)
