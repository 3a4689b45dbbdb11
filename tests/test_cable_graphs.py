"""Cable junctions (issue 49): curves joined by hard point-to-point ``PhysicsAttachment`` prims welded into one rod
graph (Newton 1.8's ``_deformable_prepare_cable_topology``): a Y of three curves moves as Newton's own loop moves it on
the same stage; a compliant or non-coincident junction is said, not welded, the other curves still welded."""

from __future__ import annotations

import numpy as np
import pytest
from pxr import Gf, Sdf, UsdGeom, UsdShade
from test_cables import newton_run, our_run

from stages import scaled_stage

ARMS = {  # curve -> its points: three arms from the junction (0, 0, 1)
    "a": [(-0.3, 0.0, 1.0), (-0.2, 0.0, 1.0), (-0.1, 0.0, 1.0), (0.0, 0.0, 1.0)],
    "b": [(0.0, 0.0, 1.0), (0.1, 0.0, 1.05), (0.2, 0.0, 1.1)],
    "c": [(0.0, 0.0, 1.0), (0.0, 0.1, 1.0), (0.0, 0.2, 1.0), (0.0, 0.3, 1.0)],
}
JUNCTIONS = (("a", 3, "b", 0), ("a", 3, "c", 0))


def y_stage(path, **attachment):
    """Three cables meeting at (0, 0, 1), welded by two junctions; arm c rests bent up (its restShapePoints), so the
    graph springs as it falls. ``attachment``: attributes of the first junction (name -> (type, value))."""
    stage, _, _ = scaled_stage(path, 1.0, 30)
    material = UsdShade.Material.Define(stage, "/World/CableMaterial").GetPrim()
    material.AddAppliedSchema("PhysicsCurvesDeformableMaterialAPI")
    material.CreateAttribute("physics:youngsModulus", Sdf.ValueTypeNames.Float).Set(1.0e7)
    material.CreateAttribute("physics:poissonsRatio", Sdf.ValueTypeNames.Float).Set(0.4)
    material.CreateAttribute("physics:density", Sdf.ValueTypeNames.Float).Set(1200.0)
    for name, points in ARMS.items():
        curves = UsdGeom.BasisCurves.Define(stage, f"/World/Y/{name}")
        curves.CreateTypeAttr("linear")
        curves.CreateCurveVertexCountsAttr([len(points)])
        curves.CreatePointsAttr([Gf.Vec3f(*p) for p in points])
        prim = curves.GetPrim()
        for api in ("PhysicsDeformableBodyAPI", "PhysicsCurvesDeformableSimAPI", "MaterialBindingAPI"):
            prim.AddAppliedSchema(api)
        prim.CreateAttribute("physics:thicknesses", Sdf.ValueTypeNames.FloatArray).Set([0.02])
        prim.CreateAttribute("physics:thicknesses:elementType", Sdf.ValueTypeNames.Token).Set("constant")
        prim.CreateRelationship("material:binding:physics").SetTargets([material.GetPath()])
        if name == "c":
            rest = [Gf.Vec3f(0.0, 0.1 * i, 0.02 * i * i) for i in range(len(points))]
            prim.CreateAttribute("physics:restShapePoints", Sdf.ValueTypeNames.Point3fArray).Set(rest)
    for k, (c0, i0, c1, i1) in enumerate(JUNCTIONS):
        att = stage.DefinePrim(f"/World/Junction{k}", "PhysicsAttachment")
        att.CreateRelationship("physics:src0").SetTargets([Sdf.Path(f"/World/Y/{c0}")])
        att.CreateRelationship("physics:src1").SetTargets([Sdf.Path(f"/World/Y/{c1}")])
        att.CreateAttribute("physics:type0", Sdf.ValueTypeNames.Token).Set("point")
        att.CreateAttribute("physics:type1", Sdf.ValueTypeNames.Token).Set("point")
        att.CreateAttribute("physics:indices0", Sdf.ValueTypeNames.IntArray).Set([i0])
        att.CreateAttribute("physics:indices1", Sdf.ValueTypeNames.IntArray).Set([i1])
        for name, (kind, value) in (attachment if k == 0 else {}).items():
            att.CreateAttribute(name, kind).Set(value)
    stage.GetRootLayer().Save()
    return str(path)


def test_a_y_of_three_curves_moves_as_newtons_rod_graph(tmp_path):
    path = y_stage(tmp_path / "y.usda")
    sim = our_run(path)
    model = sim.model
    segments = sum(len(p) - 1 for p in ARMS.values())
    assert model.body_count == segments and len(model.cables) == 3
    assert sum(len(c.joints) for c in model.cables) == segments - 1  # (a tree: one free root, a joint per other)
    assert sorted(model.body_label)[0].startswith("/World/Y/a_edge_body_")  # (the graph: labelled from its first)
    ours, theirs = sim.physics.state.body_q.numpy(), newton_run(path)
    assert theirs.shape == ours.shape
    assert np.max(np.abs(ours[:, :3] - theirs[:, :3])) < 1e-4  # (7.8e-6 m; the frames 1.1e-5)
    assert np.max(np.abs(ours[:, 3:] - theirs[:, 3:])) < 1e-3
    ends = [c.points(ours) for c in model.cables]
    junction = [ends[0][-1], ends[1][0], ends[2][0]]  # (the welded points: together still)
    assert max(np.linalg.norm(p - junction[0]) for p in junction) < 1e-3
    start_c = np.array(ARMS["c"], dtype=np.float64)
    moved = ends[2] - ends[2][0] - (start_c - start_c[0])
    assert np.abs(moved[:, 2]).max() > 0.005  # (arm c springs toward its bent rest shape)
    t = sim.clock.time_code  # (each curve's points written onto it)
    for name, cable in zip(ARMS, model.cables, strict=True):
        written = np.array(UsdGeom.BasisCurves(sim.stage.GetPrimAtPath(f"/World/Y/{name}")).GetPointsAttr().Get(t))
        assert np.allclose(written, cable.points(ours), atol=1e-5)


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        ({"physics:stiffness": (Sdf.ValueTypeNames.Float, 100.0)}, "compliant junction"),
        ({"physics:indices1": (Sdf.ValueTypeNames.IntArray, [1])}, "points 3 and 1 are not coincident"),
    ],
)
def test_a_junction_not_welded_is_said(tmp_path, caplog, edit, said):
    path = y_stage(tmp_path / "unwelded.usda", **edit)
    sim = our_run(path, frames=1)
    assert "/World/Junction0" in caplog.text and said in caplog.text, caplog.text
    joints = {c.label: len(c.joints) for c in sim.model.cables}  # (a and c welded by the other junction: 6 segments)
    assert joints["/World/Y/b"] == 1 and joints["/World/Y/a"] + joints["/World/Y/c"] == 5
    ours, theirs = sim.physics.state.body_q.numpy(), newton_run(path, frames=1)  # (a and c: one ordered chain)
    assert np.max(np.abs(ours - theirs)) < 1e-4
