"""Closed cables and cables held at more than one point (issue 49), as Newton 1.8's importer builds them: a periodic
curve is a ring of segments (its last point joined to its first by a segment too), its last rod joint closing the loop
outside the articulation; it moves as Newton's own loop moves it, free or springing toward an elliptic rest shape."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pxr import Gf, Sdf, Usd, UsdGeom
from test_cables import cable_stage, newton_run, our_run

K = 8  # points of the ring (radius 0.2 m, wavy)


def ring_stage(path, *, rest=False, **edits):
    points = [Gf.Vec3f(0.2 * math.cos(2 * math.pi * i / K), 0.2 * math.sin(2 * math.pi * i / K),
                       0.05 * math.sin(4 * math.pi * i / K)) for i in range(K)]  # fmt: skip
    if rest:
        edits["physics:restShapePoints"] = [
            Gf.Vec3f(0.25 * math.cos(2 * math.pi * i / K), 0.15 * math.sin(2 * math.pi * i / K), 0.0) for i in range(K)
        ]
    path = cable_stage(path, pin=False, points=points, curveVertexCounts=[K], **edits)
    stage = Usd.Stage.Open(path)
    UsdGeom.BasisCurves(stage.GetPrimAtPath("/World/Cable/sim")).CreateWrapAttr(UsdGeom.Tokens.periodic)
    stage.GetRootLayer().Save()
    return path


@pytest.mark.parametrize("rest", [False, True])
def test_a_closed_cable_moves_as_newtons_ring(tmp_path, rest):
    path = ring_stage(tmp_path / "ring.usda", rest=rest)
    sim = our_run(path)
    cable = sim.model.cables[0]
    assert len(cable.bodies) == K and len(cable.joints) == K  # (K segments: K - 1 joints of the tree and the loop's)
    loop = cable.joints[-1]
    assert sim.model.joint_articulation.numpy()[loop] == -1  # (the loop's joint: outside the articulation)
    ours, theirs = sim.physics.state.body_q.numpy(), newton_run(path)
    assert theirs.shape == ours.shape
    assert np.max(np.abs(ours[:, :3] - theirs[:, :3])) < 1e-4  # (2.7e-6 m, with the rest shape 8.2e-6 m)
    assert np.max(np.abs(ours[:, 3:] - theirs[:, 3:])) < 1e-4
    q = cable.point_bodies[0]  # (point 0: the last segment's end and the first's start, held together by the loop)
    ends = ours[q[0], :3] + 0.0, ours[q[1], :3] + 0.0
    assert q[0] == cable.bodies[-1] and q[1] == cable.bodies[0] and np.linalg.norm(ends[0] - ends[1]) < 0.2
    written = np.array(UsdGeom.BasisCurves(sim.stage.GetPrimAtPath("/World/Cable/sim")).GetPointsAttr().Get(
        sim.clock.time_code))  # fmt: skip
    assert written.shape == (K, 3) and np.allclose(written, cable.points(ours) - [0.0, 0.0, 1.0], atol=1e-5)
    assert sim.model.cables[0].points(ours)[:, 2].max() < 1.0 - 0.02  # (it falls)


def hold_point(stage, name, index, anchor=None, target=None, **attrs):
    """A hard PhysicsAttachment holding the test cable's point ``index`` at ``anchor`` (``target``'s frame)."""
    pin = stage.DefinePrim(f"/World/{name}", "PhysicsAttachment")
    pin.CreateRelationship("physics:src0").SetTargets([Sdf.Path("/World/Cable/sim")])
    if target is not None:
        pin.CreateRelationship("physics:src1").SetTargets([Sdf.Path(target)])
    pin.CreateAttribute("physics:type0", Sdf.ValueTypeNames.Token).Set("point")
    pin.CreateAttribute("physics:type1", Sdf.ValueTypeNames.Token).Set("xform")
    pin.CreateAttribute("physics:indices0", Sdf.ValueTypeNames.IntArray).Set([index])
    if anchor is not None:
        pin.CreateAttribute("physics:coords1", Sdf.ValueTypeNames.Vector3fArray).Set([Gf.Vec3f(*anchor)])
    for name_, (kind, value) in attrs.items():
        pin.CreateAttribute(name_, kind).Set(value)


def test_a_closed_cable_held_at_a_point_hangs_from_it_as_under_newton(tmp_path):
    path = ring_stage(tmp_path / "held_ring.usda")
    stage = Usd.Stage.Open(path)
    hold_point(stage, "Hold", 2, anchor=(0.0, 0.2, 1.0))  # (where point 2 is authored: the top of the ring)
    stage.GetRootLayer().Save()
    sim = our_run(path)
    cable = sim.model.cables[0]
    held = sim.model.joint_label.index("/World/Hold_site0")
    assert sim.model.joint_articulation.numpy()[held] == -1  # (a loop through the ring's free root)
    ours, theirs = sim.physics.state.body_q.numpy(), newton_run(path)
    assert np.max(np.abs(ours - theirs)) < 1e-4
    assert np.linalg.norm(cable.points(ours)[2] - [0.0, 0.2, 1.0]) < 2e-3  # (point 2 stays, the ring hangs)


def test_a_cable_held_at_both_ends_and_its_middle_as_under_newton(tmp_path):
    """Three holds of an open cable: none is its root (Newton roots a cable touched by one attachment only); each a
    ball joint from the world, the middle one to its incoming segment's end."""
    path = cable_stage(tmp_path / "three.usda", pin=False, points=[Gf.Vec3f(0.1 * i, 0, 0) for i in range(6)])
    stage = Usd.Stage.Open(path)
    hold_point(stage, "End0", 0, anchor=(0.0, 0.0, 1.0))
    hold_point(stage, "End5", 5, anchor=(0.5, 0.0, 1.0))
    hold_point(stage, "Middle", 3, anchor=(0.3, 0.0, 1.0))
    hold_point(stage, "Soft", 1, anchor=(0.1, 0.0, 1.0), **{"physics:stiffness": (Sdf.ValueTypeNames.Float, 10.0)})
    stage.GetRootLayer().Save()
    sim = our_run(path)
    labels = sim.model.joint_label
    assert "/World/Cable/sim_free_joint" in labels and "/World/Soft_site0" not in labels
    ours, theirs = sim.physics.state.body_q.numpy(), newton_run(path)
    assert np.max(np.abs(ours - theirs)) < 1e-4
    points = sim.model.cables[0].points(ours)
    assert np.linalg.norm(points[3] - [0.3, 0.0, 1.0]) < 2e-3 and points[1, 2] < 1.0 - 0.002  # (sags between)


def test_a_cable_held_by_a_segment_site_as_under_newton(tmp_path):
    """A ``segment`` site (``coords0`` (u, s, t)): the cable held at a point of its segment 2, off its axis, as
    Newton places it; the only attachment, yet no root (Newton roots at end points only)."""
    path = cable_stage(tmp_path / "segment.usda", pin=False, points=[Gf.Vec3f(0.1 * i, 0, 0) for i in range(6)])
    stage = Usd.Stage.Open(path)
    hold_point(stage, "Site", 2, anchor=(0.25, 0.0, 1.0), **{
        "physics:coords0": (Sdf.ValueTypeNames.Vector3fArray, [Gf.Vec3f(0.5, 0.0, 0.005)])})  # fmt: skip
    stage.GetPrimAtPath("/World/Site").GetAttribute("physics:type0").Set("segment")
    stage.GetRootLayer().Save()
    sim = our_run(path)
    assert "/World/Cable/sim_free_joint" in sim.model.joint_label
    ours, theirs = sim.physics.state.body_q.numpy(), newton_run(path)
    assert np.max(np.abs(ours - theirs)) < 1e-4
    middle = sim.model.cables[0].points(ours)[2:4].mean(axis=0)  # (segment 2's middle hangs at the anchor)
    assert np.linalg.norm(middle - [0.25, 0.0, 1.0]) < 0.02 and ours[:, 2].min() < 1.0 - 0.02
