"""Stages for property-based fuzzing (hypothesis): a small stage using what the importer and the resolver read
(bodies, MassAPI, colliders of each kind, a mesh, a material, joints with limits and drives, an articulation,
the scene), then mutated: attributes given wrong types, NaN, infinities, negatives, huge values, empty arrays;
relationship targets deleted or pointed elsewhere; prims removed. :func:`outcome` runs one through ``usdsim``'s
code: the only outcomes allowed are a simulation, a clean error (a NewtonUsdError: usdsim's exit 2 or 3) and
warnings. Used by tests/test_fuzz_stages.py (a short deterministic run) and benchmarks/fuzz_stages.py (long)."""

from __future__ import annotations

from hypothesis import strategies as st
from pxr import Gf, Sdf, UsdGeom, UsdPhysics, UsdShade

from newton_usd import NewtonUsdError, Simulation

from stages import add_box, add_ground, add_hinge, add_tetrahedron, new_stage

PRIMS = ("/PhysicsScene", "/Ground", "/Robot", "/Robot/Base", "/Robot/Arm", "/Robot/Hinge", "/Robot/Slider",
         "/Robot/Tip", "/Ball", "/Tet", "/Material", "/Robot/Fixed")  # fmt: skip

ATTRIBUTES = (  # (prim, attribute) the importer and the resolver read
    ("/PhysicsScene", "physics:gravityMagnitude"), ("/PhysicsScene", "physics:gravityDirection"),
    ("/PhysicsScene", "newton:timeStepsPerSecond"), ("/PhysicsScene", "mjc:option:timestep"),
    ("/PhysicsScene", "mjc:option:iterations"), ("/PhysicsScene", "newton:maxSolverIterations"),
    ("/Robot/Base", "physics:mass"), ("/Robot/Base", "physics:density"), ("/Robot/Base", "physics:centerOfMass"),
    ("/Robot/Base", "physics:diagonalInertia"), ("/Robot/Base", "physics:principalAxes"),
    ("/Robot/Base", "physics:velocity"), ("/Robot/Base", "physics:angularVelocity"), ("/Robot/Base", "size"),
    ("/Robot/Base", "xformOp:translate"), ("/Robot/Base", "physics:rigidBodyEnabled"),
    ("/Robot/Arm", "size"), ("/Robot/Arm", "physics:mass"), ("/Robot/Arm", "physics:kinematicEnabled"),
    ("/Robot/Hinge", "physics:lowerLimit"), ("/Robot/Hinge", "physics:upperLimit"), ("/Robot/Hinge", "physics:axis"),
    ("/Robot/Hinge", "physics:localPos0"), ("/Robot/Hinge", "physics:localRot1"),
    ("/Robot/Hinge", "drive:angular:physics:stiffness"), ("/Robot/Hinge", "drive:angular:physics:damping"),
    ("/Robot/Hinge", "drive:angular:physics:targetPosition"), ("/Robot/Hinge", "drive:angular:physics:maxForce"),
    ("/Robot/Hinge", "physics:jointEnabled"), ("/Robot/Hinge", "physics:excludeFromArticulation"),
    ("/Robot/Hinge", "mjc:damping"), ("/Robot/Hinge", "mjc:armature"), ("/Robot/Hinge", "mjc:frictionloss"),
    ("/Robot/Slider", "physics:lowerLimit"), ("/Robot/Slider", "drive:linear:physics:stiffness"),
    ("/Robot/Slider", "physics:axis"),
    ("/Ball", "radius"), ("/Ball", "physics:mass"), ("/Ball", "xformOp:scale"), ("/Ball", "mjc:condim"),
    ("/Ball", "newton:contactMargin"), ("/Ball", "mjc:solref"), ("/Ball", "mjc:solimp"), ("/Ball", "mjc:priority"),
    ("/Tet", "points"), ("/Tet", "faceVertexCounts"), ("/Tet", "faceVertexIndices"),
    ("/Tet", "physics:approximation"), ("/Tet", "xformOp:translate"),
    ("/Material", "physics:dynamicFriction"), ("/Material", "physics:staticFriction"),
    ("/Material", "physics:restitution"), ("/Material", "physics:density"),
    ("/Ground", "axis"),
)  # fmt: skip

RELATIONSHIPS = (
    ("/Robot/Hinge", "physics:body0"), ("/Robot/Hinge", "physics:body1"), ("/Robot/Slider", "physics:body0"),
    ("/Robot/Slider", "physics:body1"), ("/Robot/Fixed", "physics:body0"), ("/Robot/Fixed", "physics:body1"),
    ("/Ball", "material:binding:physics"), ("/Robot/Base", "physics:simulationOwner"),
)  # fmt: skip

_NUMBERS = st.sampled_from([float("nan"), float("inf"), float("-inf"), -1.0, 0.0, -1e30, 1e30, 1e-30, 3.0, -0.5])
VALUES = st.one_of(
    _NUMBERS,
    st.sampled_from(["heavy", "", "X", "convexHull", "none"]),
    st.sampled_from([0, -1, 7, 2**31 - 1, True, False]),
    st.tuples(_NUMBERS, _NUMBERS, _NUMBERS).map(Gf.Vec3d),
    st.tuples(_NUMBERS, _NUMBERS, _NUMBERS, _NUMBERS).map(lambda q: Gf.Quatd(q[0], q[1], q[2], q[3])),
    st.lists(_NUMBERS, max_size=4),
    st.lists(st.integers(-2, 6), max_size=8),
    st.just([]),
)
MUTATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("set"), st.sampled_from(ATTRIBUTES), VALUES),
        st.tuples(
            st.just("target"), st.sampled_from(RELATIONSHIPS), st.sampled_from([None, "/Missing", *PRIMS])
        ),  # fmt: skip
        st.tuples(st.just("remove"), st.sampled_from(PRIMS), st.none()),
    ),
    min_size=1,
    max_size=4,
)


def base_stage():
    """The stage before mutation: every kind of thing the mutations touch, simulating fine as it is."""
    stage = new_stage()
    add_ground(stage)
    UsdPhysics.ArticulationRootAPI.Apply(UsdGeom.Xform.Define(stage, "/Robot").GetPrim())
    add_box(stage, "/Robot/Base", size=0.3, pos=(0, 0, 1), mass=2.0)
    add_box(stage, "/Robot/Arm", size=0.2, pos=(0.4, 0, 1))
    add_box(stage, "/Robot/Tip", size=0.1, pos=(0.7, 0, 1))
    hinge = add_hinge(stage, "/Robot/Hinge", "/Robot/Base", "/Robot/Arm", (0.2, 0, 0), (-0.2, 0, 0), limits=(-45, 45))
    drive = UsdPhysics.DriveAPI.Apply(hinge.GetPrim(), "angular")
    drive.CreateStiffnessAttr(10.0)
    drive.CreateDampingAttr(1.0)
    slider = UsdPhysics.PrismaticJoint.Define(stage, "/Robot/Slider")
    slider.CreateBody0Rel().SetTargets(["/Robot/Arm"])
    slider.CreateBody1Rel().SetTargets(["/Robot/Tip"])
    slider.CreateAxisAttr("X")
    slider.CreateLowerLimitAttr(-0.1)
    slider.CreateUpperLimitAttr(0.1)
    UsdPhysics.DriveAPI.Apply(slider.GetPrim(), "linear").CreateStiffnessAttr(5.0)
    fixed = UsdPhysics.FixedJoint.Define(stage, "/Robot/Fixed")
    fixed.CreateBody1Rel().SetTargets(["/Ball"])
    ball = UsdGeom.Sphere.Define(stage, "/Ball")
    ball.CreateRadiusAttr(0.1)
    ball.AddTranslateOp().Set(Gf.Vec3d(0, 1, 2))
    ball.AddScaleOp().Set(Gf.Vec3f(1, 1, 1))
    UsdPhysics.RigidBodyAPI.Apply(ball.GetPrim())
    UsdPhysics.CollisionAPI.Apply(ball.GetPrim())
    UsdPhysics.MassAPI.Apply(ball.GetPrim()).CreateMassAttr(0.5)
    material = UsdShade.Material.Define(stage, "/Material")
    api = UsdPhysics.MaterialAPI.Apply(material.GetPrim())
    api.CreateDynamicFrictionAttr(0.8)
    api.CreateRestitutionAttr(0.0)
    UsdShade.MaterialBindingAPI.Apply(ball.GetPrim()).Bind(material, materialPurpose="physics")
    add_tetrahedron(stage, "/Tet", edge=0.3, pos=(1, 1, 1))
    return stage


def _value_type(value):
    if isinstance(value, bool):
        return Sdf.ValueTypeNames.Bool
    if isinstance(value, int):
        return Sdf.ValueTypeNames.Int
    if isinstance(value, float):
        return Sdf.ValueTypeNames.Double
    if isinstance(value, str):
        return Sdf.ValueTypeNames.Token
    if isinstance(value, Gf.Vec3d):
        return Sdf.ValueTypeNames.Double3
    if isinstance(value, Gf.Quatd):
        return Sdf.ValueTypeNames.Quatd
    if value and all(isinstance(v, int) for v in value):
        return Sdf.ValueTypeNames.IntArray
    return Sdf.ValueTypeNames.DoubleArray


def mutate(stage, mutations) -> None:
    """Apply ``mutations`` (drawn from :data:`MUTATIONS`) on the stage's root layer, as a layer can author
    them whatever the schemas say: an attribute re-authored with the value's own type."""
    layer = stage.GetRootLayer()
    for kind, where, value in mutations:
        if kind == "remove":
            if layer.GetPrimAtPath(where) is not None:
                stage.RemovePrim(where)
            continue
        path, name = where
        spec = layer.GetPrimAtPath(path)
        if spec is None:
            continue
        if kind == "target":
            rel = stage.GetPrimAtPath(path).CreateRelationship(name)
            rel.SetTargets([] if value is None else [value])
            continue
        if name in spec.properties:
            del spec.properties[name]
        attr = Sdf.AttributeSpec(spec, name, _value_type(value))
        try:
            attr.default = value
        except Exception:  # noqa: BLE001  (a value its own type cannot hold, e.g. a huge int: left unset)
            pass


def outcome(stage, frames: int = 3) -> str:
    """Run ``stage`` as usdsim would (import, solver, ``frames`` frames): "simulated" or "error: ..." (a
    NewtonUsdError); any other exception propagates (a bug)."""
    try:
        sim = Simulation.open(stage, live=False)
        sim.write = False
        sim.run(frames)
        return "simulated"
    except NewtonUsdError as e:
        assert "Traceback" not in str(e), str(e)
        return f"error: {type(e).__name__}"
