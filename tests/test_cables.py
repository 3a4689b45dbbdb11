"""Cables (``BasisCurves`` with ``PhysicsCurvesDeformableSimAPI``): a rod of capsule segments and rod joints under
Newton's VBD (the vbd engine), an end pinned by a ``PhysicsAttachment``, written back onto the curve's points, against
Newton 1.8's own loop on the same stage; the same cable in centimetres; bad input refused in one line."""

from __future__ import annotations

import shutil
from pathlib import Path

import newton
import numpy as np
import pytest
from newton_loops import newton_loop, vbd_model
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade

from newton_usd.cli import main
from newton_usd.core.builder import ModelBuilder
from newton_usd.errors import NewtonUsdError, UsdInputError
from newton_usd.sim import Simulation
from newton_usd.usd import add_usd
from newton_usd.view.scene import read_scene
from newton_usd.view.tubes import SIDES

from stages import scaled_stage

SAMPLE = Path(__file__).resolve().parent.parent / "sample_stages" / "deformables" / "cable_hanging.usda"
FPS, SUBSTEPS, FRAMES, ITERATIONS = 30, 4, 4, 10
N = 6  # points of the cable (5 segments, 0.5 m)


def cable_stage(path, meters_per_unit=1.0, *, pin=True, material_api="PhysicsCurvesDeformableMaterialAPI", **edits):
    """A 0.5 m cable of N points held level at 1 m, its point 0 pinned to the world (``pin``), authored in stage units
    of ``meters_per_unit`` (the same cable in SI at any unit). ``edits``: attributes of the curve (name -> value), of
    its body prim (``body_<name>``)."""
    stage, _, u = scaled_stage(path, meters_per_unit, FPS)
    body = UsdGeom.Xform.Define(stage, "/World/Cable")
    body.GetPrim().AddAppliedSchema("PhysicsDeformableBodyAPI")
    curves = UsdGeom.BasisCurves.Define(stage, "/World/Cable/sim")
    curves.CreateTypeAttr("linear")
    curves.CreateCurveVertexCountsAttr([N])
    curves.CreatePointsAttr([Gf.Vec3f(0.5 * i / (N - 1) * u, 0.0, 0.0) for i in range(N)])
    curves.AddTranslateOp().Set(Gf.Vec3d(0, 0, 1.0 * u))
    prim = curves.GetPrim()
    for api in ("PhysicsCurvesDeformableSimAPI", "MaterialBindingAPI"):
        prim.AddAppliedSchema(api)
    prim.CreateAttribute("physics:thicknesses", Sdf.ValueTypeNames.FloatArray).Set([0.02 * u])
    prim.CreateAttribute("physics:thicknesses:elementType", Sdf.ValueTypeNames.Token).Set("constant")
    material = UsdShade.Material.Define(stage, "/World/CableMaterial").GetPrim()
    material.AddAppliedSchema(material_api)
    material.AddAppliedSchema("NewtonCurvesDeformableMaterialAPI")
    material.CreateAttribute("physics:youngsModulus", Sdf.ValueTypeNames.Float).Set(1.0e7 / u)  # (Pa: kg/(m s^2))
    material.CreateAttribute("physics:poissonsRatio", Sdf.ValueTypeNames.Float).Set(0.4)
    material.CreateAttribute("physics:density", Sdf.ValueTypeNames.Float).Set(1200.0 / u**3)
    material.CreateAttribute("newton:curvesBendDamping", Sdf.ValueTypeNames.Float).Set(1.0e-4 * u**3)  # (N m^2 s)
    prim.CreateRelationship("material:binding:physics").SetTargets([material.GetPath()])
    if pin:
        att = stage.DefinePrim("/World/Pin", "PhysicsAttachment")
        att.CreateRelationship("physics:src0").SetTargets([prim.GetPath()])
        att.CreateAttribute("physics:type0", Sdf.ValueTypeNames.Token).Set("point")
        att.CreateAttribute("physics:type1", Sdf.ValueTypeNames.Token).Set("xform")
        att.CreateAttribute("physics:indices0", Sdf.ValueTypeNames.IntArray).Set([0])
        att.CreateAttribute("physics:coords1", Sdf.ValueTypeNames.Vector3fArray).Set([Gf.Vec3f(0, 0, 1.0 * u)])
    for name, value in edits.items():
        target = body.GetPrim() if name.startswith("body_") else prim
        name = name.removeprefix("body_")
        attr = target.GetAttribute(name)
        if not attr:
            kind = {"Counts": Sdf.ValueTypeNames.IntArray, "elementType": Sdf.ValueTypeNames.Token,
                    "Points": Sdf.ValueTypeNames.Point3fArray, "mass": Sdf.ValueTypeNames.Float,
                    "density": Sdf.ValueTypeNames.Float}  # fmt: skip
            attr = target.CreateAttribute(name, next((k for w, k in kind.items() if name.endswith(w)),
                                                     Sdf.ValueTypeNames.FloatArray))  # fmt: skip
        attr.Set(value)
    stage.GetRootLayer().Save()
    return str(path)


def newton_run(path, frames=FRAMES) -> np.ndarray:
    """Newton 1.8's own loop on the stage: add_usd, SolverVBD, CollisionPipeline, the same step and iterations; the
    segment bodies' poses at the end."""
    nb = newton.ModelBuilder()
    nb.add_usd(path)
    model, solver = vbd_model(nb, ITERATIONS)
    return newton_loop(model, solver, frames * SUBSTEPS, 1.0 / (FPS * SUBSTEPS)).body_q.numpy()


def our_run(path, frames=FRAMES, **kw) -> Simulation:
    sim = Simulation.open(path, fps=FPS, substeps=SUBSTEPS, solver_options={"iterations": ITERATIONS}, **kw)
    for _ in range(frames):
        sim.step_frame()
    return sim


def free_end(sim) -> np.ndarray:
    """The cable's last point (world, m) from the run's segment poses."""
    cable = sim.model.cables[0]
    return cable.points(sim.physics.state.body_q.numpy())[-1]


def test_pinned_cable_hangs_as_under_newton(tmp_path):
    path = cable_stage(tmp_path / "cable.usda")
    sim = our_run(path)
    assert type(sim.solver).__name__ == "SolverVBD"  # (the default engine of a stage with a cable)
    cable = sim.model.cables[0]
    assert len(cable.bodies) == N - 1 and len(cable.joints) == N - 2
    ours = sim.physics.state.body_q.numpy()
    theirs = newton_run(path)
    assert theirs.shape == ours.shape
    end, pinned = free_end(sim), cable.points(ours)[0]
    their_end = cable.points(theirs)[-1]
    assert end[2] < 1.0 - 0.05  # (it falls, swinging down from the pin)
    assert np.linalg.norm(pinned - [0.0, 0.0, 1.0]) < 1e-3  # (the pinned end stays)
    assert np.linalg.norm(end - their_end) < 1e-4, (end, their_end)
    assert np.max(np.abs(ours[:, :3] - theirs[:, :3])) < 1e-4
    # written back onto the curve, in its own space (translated up 1 m), and restored at reset
    curves = UsdGeom.BasisCurves(sim.stage.GetPrimAtPath("/World/Cable/sim"))
    written = np.array(curves.GetPointsAttr().Get(sim.clock.time_code))
    assert np.allclose(written[-1], end - [0.0, 0.0, 1.0], atol=1e-5)
    sim.reset()
    assert np.allclose(np.array(curves.GetPointsAttr().Get(sim.clock.time_code))[-1], [0.5, 0.0, 0.0], atol=1e-6)


def test_centimetre_cable_behaves_as_the_metre_one(tmp_path):
    metre = our_run(cable_stage(tmp_path / "m.usda"), frames=2)
    cm = our_run(cable_stage(tmp_path / "cm.usda", 0.01), frames=2)
    a, b = free_end(metre), free_end(cm)
    assert np.allclose(a, b, rtol=1e-4, atol=1e-6), (a, b)
    curves = UsdGeom.BasisCurves(cm.stage.GetPrimAtPath("/World/Cable/sim"))
    written = np.array(curves.GetPointsAttr().Get(cm.clock.time_code))
    assert np.allclose(written[-1] / 100.0, a - [0.0, 0.0, 1.0], atol=1e-5)


def test_a_mujoco_engine_refuses_cables(tmp_path):
    path = cable_stage(tmp_path / "cable.usda")
    with pytest.raises(NewtonUsdError, match=r"/World/Cable/sim: cables are simulated by the vbd solver alone"):
        Simulation.open(path, solver="mujoco")


@pytest.mark.parametrize(
    ("edits", "attribute"),
    [
        ({"widths": [-0.01]}, "widths"),
        ({"curveVertexCounts": [N + 1]}, "curveVertexCounts"),
        ({"physics:thicknesses": [-0.02]}, "physics:thicknesses"),
        ({"material_api": "PhysicsSurfaceDeformableMaterialAPI"}, "material:binding:physics"),
    ],
)
def test_bad_cable_input_is_one_line_naming_the_prim(tmp_path, edits, attribute):
    path = cable_stage(tmp_path / "bad.usda", **edits)
    with pytest.raises(UsdInputError) as err:
        Simulation.open(path)
    message = str(err.value)
    assert "\n" not in message and "/World/Cable/sim" in message and attribute in message, message


def test_bad_cable_input_exits_2_from_usdsim(tmp_path, capsys):
    path = cable_stage(tmp_path / "bad.usda", widths=[-0.01])
    assert main(["run", path, "-q", "-n", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "/World/Cable/sim" in err[0] and "widths" in err[0], err


def test_the_view_draws_a_cable_as_a_tube_of_its_width(tmp_path):
    sim = our_run(cable_stage(tmp_path / "cable.usda"), frames=2)
    out = tmp_path / "out.usda"
    sim.save(str(out))
    scene = read_scene(str(out))
    i = next(i for i, p in enumerate(scene.parts) if p.path == "/World/Cable/sim")
    frames = scene.deforming[i]
    assert frames.shape == (len(scene.times), N * SIDES + 2, 3)  # (a ring per point, a cap centre at each end)
    last = frames[-1]
    written = np.array(UsdGeom.BasisCurves(sim.stage.GetPrimAtPath("/World/Cable/sim")).GetPointsAttr().Get(
        sim.clock.time_code))  # fmt: skip
    ring = last[(N - 1) * SIDES : N * SIDES]  # (the free end's ring, in the prim's frame)
    assert np.allclose(ring.mean(axis=0), written[-1], atol=1e-5)
    assert np.allclose(np.linalg.norm(ring - written[-1], axis=1), 0.01, atol=1e-5)  # (half its 2 cm thickness)


def test_a_cable_pinned_to_a_body_swings_from_it_as_under_newton(tmp_path):
    path = cable_stage(tmp_path / "on_box.usda", pin=False)
    stage = Usd.Stage.Open(path)
    box = UsdGeom.Cube.Define(stage, "/World/Box")
    box.CreateSizeAttr(0.2)
    box.AddTranslateOp().Set(Gf.Vec3d(-0.1, 0, 0.9))  # (its +X top edge at the cable's first point, (0, 0, 1))
    UsdPhysics.RigidBodyAPI.Apply(box.GetPrim())
    UsdPhysics.CollisionAPI.Apply(box.GetPrim())
    UsdPhysics.MassAPI.Apply(box.GetPrim()).CreateMassAttr(1.0)
    att = stage.DefinePrim("/World/Pin", "PhysicsAttachment")
    att.CreateRelationship("physics:src0").SetTargets([Sdf.Path("/World/Cable/sim")])
    att.CreateRelationship("physics:src1").SetTargets([Sdf.Path("/World/Box")])
    att.CreateAttribute("physics:type0", Sdf.ValueTypeNames.Token).Set("point")
    att.CreateAttribute("physics:type1", Sdf.ValueTypeNames.Token).Set("xform")
    att.CreateAttribute("physics:indices0", Sdf.ValueTypeNames.IntArray).Set([0])
    att.CreateAttribute("physics:coords1", Sdf.ValueTypeNames.Vector3fArray).Set([Gf.Vec3f(0.1, 0, 0.1)])
    stage.GetRootLayer().Save()
    sim = our_run(path)
    ours, theirs = sim.physics.state.body_q.numpy(), newton_run(path)
    cable = sim.model.cables[0]
    root = sim.model.joint_label.index("/World/Pin_site0")
    assert int(sim.model.joint_parent.numpy()[root]) == sim.model.body_label.index("/World/Box")
    box_top = ours[0, :3] + [0.1, 0.0, 0.1]  # (the box falls without turning much: the pin is where it was)
    assert np.linalg.norm(cable.points(ours)[0] - box_top) < 2e-3
    assert ours[0, 2] < 0.9 - 0.05  # (the box falls, the cable with it)
    assert np.max(np.abs(ours[:, :3] - theirs[:, :3])) < 1e-4


@pytest.mark.parametrize(
    "edits",
    [
        {"physics:masses": [0.3], "physics:masses:elementType": "constant"},
        {"physics:masses": [0.4], "physics:masses:elementType": "curve"},
        {"physics:masses": [0.1, 0.2, 0.1, 0.2, 0.1], "physics:masses:elementType": "segment"},
        {"physics:masses": [0.05, 0.1, 0.2, 0.1, 0.1, 0.05], "physics:masses:elementType": "point"},
        {"physics:masses": [0.05, 0.1, 0.2, 0.1, 0.1, 0.05]},  # (no elementType: the earlier revision's lumping)
        {"body_physics:mass": 0.25},
        {"body_physics:density": 800.0, "physics:thicknesses": [0.02, 0.03, 0.02, 0.03, 0.02],
         "physics:thicknesses:elementType": "segment"},
    ],
)  # fmt: skip
def test_cable_masses_and_inertias_are_newtons(tmp_path, edits):
    path = cable_stage(tmp_path / "masses.usda", **edits)
    builder = ModelBuilder()
    add_usd(builder, path)
    nb = newton.ModelBuilder()
    nb.add_usd(path)
    assert np.allclose(builder.body_mass, nb.body_mass, rtol=1e-6), (builder.body_mass, nb.body_mass)
    ours = np.asarray(builder.body_inertia)
    theirs = np.asarray([np.asarray(i, dtype=np.float64) for i in nb.body_inertia]).reshape(-1, 3, 3)
    assert np.allclose(ours, theirs, rtol=1e-5, atol=1e-12)


def test_a_cable_with_a_rest_shape_moves_as_under_newton(tmp_path):
    rest = [Gf.Vec3f(0.1 * i, 0.0, -0.02 * i * i) for i in range(N)]  # (a bent rest shape, longer segments)
    path = cable_stage(tmp_path / "rest.usda", **{"physics:restShapePoints": rest})
    sim = our_run(path)
    ours, theirs = sim.physics.state.body_q.numpy(), newton_run(path)
    assert np.max(np.abs(ours[:, :3] - theirs[:, :3])) < 1e-4


def test_check_says_every_cable_attribute_is_used(tmp_path, capsys):
    assert main(["check", cable_stage(tmp_path / "cable.usda")]) == 0
    assert "every authored value is used" in capsys.readouterr().out


def test_the_sample_cable_swings_down_from_its_pin(tmp_path):
    source = tmp_path / "cable_hanging.usda"
    shutil.copy(SAMPLE, source)
    out = tmp_path / "out.usda"
    assert main(["run", str(source), "-q", "-n", "10", "-o", str(out)]) == 0
    result = Usd.Stage.Open(str(out))
    attr = result.GetPrimAtPath("/World/Cable/sim").GetAttribute("points")
    times = attr.GetTimeSamples()
    assert len(times) == 11
    first, last = (np.asarray(attr.Get(t), dtype=np.float64) for t in (times[0], times[-1]))
    assert np.all(np.isfinite(last)) and np.linalg.norm(last[0] - first[0]) < 1e-3  # (the pinned end stays)
    assert last[-1, 2] < first[-1, 2] - 0.3  # (the free end swings down)
    assert last[:, 2].min() > -1.2 - 0.01  # (above the ground: the cable's origin is 1.2 m up)


def test_a_cable_of_two_curves_is_two_chains_as_under_newton(tmp_path):
    points = [Gf.Vec3f(0.1 * i, 0.0, 0.0) for i in range(3)] + [Gf.Vec3f(0.1 * i, 0.2, 0.1 * i) for i in range(3)]
    edits = {"curveVertexCounts": [3, 3], "points": points, "physics:thicknesses": [0.02, 0.04],
             "physics:thicknesses:elementType": "curve"}  # fmt: skip
    path = cable_stage(tmp_path / "two.usda", pin=False, **edits)
    sim = our_run(path, frames=2)
    cable = sim.model.cables[0]
    assert len(cable.bodies) == 4 and len(cable.joints) == 2 and len(cable.point_bodies) == 6
    assert {sim.model.body_label[b] for b in cable.bodies[2:]} == {
        f"/World/Cable/sim_curve1_edge_body_{i}" for i in (0, 1)
    }
    ours, theirs = sim.physics.state.body_q.numpy(), newton_run(path, frames=2)
    assert np.max(np.abs(ours[:, :3] - theirs[:, :3])) < 1e-5
    length = np.array([0.1, 0.1, 0.1 * 2**0.5, 0.1 * 2**0.5])  # (the second curve rises at 45 degrees)
    radius = np.array([0.01, 0.01, 0.02, 0.02])  # (per curve: half its thickness)
    assert np.allclose(sim.model.body_mass.numpy(), 1200.0 * np.pi * radius**2 * length, rtol=1e-5)


def test_live_edits_of_a_cable_are_said_not_taken(tmp_path, caplog):
    sim = Simulation.open(cable_stage(tmp_path / "cable.usda"), fps=FPS, substeps=SUBSTEPS, live=True)
    sim.step_frame()
    sim.stage.GetPrimAtPath("/World/Cable/sim").GetAttribute("physics:thicknesses").Set([0.04])
    sim.stage.GetPrimAtPath("/World/CableMaterial").GetAttribute("physics:youngsModulus").Set(2.0e7)
    sim.step_frame()
    said = caplog.text
    for edited in ("/World/Cable/sim.physics:thicknesses", "/World/CableMaterial.physics:youngsModulus"):
        assert f"{edited}: live edits of deformable bodies (cloth, soft volumes, cables)" in said, said
