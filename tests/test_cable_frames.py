"""A cable's authored material frames (issue 49): ``normals`` (per point, vertex interpolation) turn each segment's
frame about its tangent, ``physics:restNormals`` (else the normals along a ``physics:restShapePoints``) its rest frame,
as Newton 1.8's importer reads them (its ``_cable_frames_from_normals``): the segments start as Newton's do and move
as Newton's own loop moves them, pinned or free, alone or welded into a graph."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pxr import Gf, Sdf, Usd, UsdGeom
from test_cable_graphs import y_stage
from test_cables import N, cable_stage, newton_run, our_run


def director_stage(path, *, pin, rest, curve="/World/Cable/sim", **edits):
    """The test cable bent, its normals turning 0.3 rad a point about its length; ``rest``: "restNormals" (all +Z at
    rest: it twists back), "restShapePoints" (straight at rest: the normals read along it) or "none"."""
    if curve == "/World/Cable/sim":
        points = [Gf.Vec3f(0.1 * i, 0.03 * i * i, 0.02 * i) for i in range(N)]
        path = cable_stage(path, pin=pin, points=points, **edits)
    stage = Usd.Stage.Open(str(path))
    curves = UsdGeom.BasisCurves(stage.GetPrimAtPath(curve))
    n = len(curves.GetPointsAttr().Get())
    curves.CreateNormalsAttr([Gf.Vec3f(0.0, math.cos(0.3 * i), math.sin(0.3 * i)) for i in range(n)])
    curves.SetNormalsInterpolation(UsdGeom.Tokens.vertex)
    prim = curves.GetPrim()
    if rest == "restNormals":
        prim.CreateAttribute("physics:restNormals", Sdf.ValueTypeNames.Normal3fArray).Set([Gf.Vec3f(0, 0, 1)] * n)
    elif rest == "restShapePoints":
        straight = [Gf.Vec3f(0.1 * i, 0.0, 0.0) for i in range(n)]
        prim.CreateAttribute("physics:restShapePoints", Sdf.ValueTypeNames.Point3fArray).Set(straight)
    stage.GetRootLayer().Save()
    return str(path)


@pytest.mark.parametrize("pin", [False, True])
@pytest.mark.parametrize("rest", ["none", "restNormals", "restShapePoints"])
def test_authored_frames_move_as_under_newton(tmp_path, pin, rest):
    path = director_stage(tmp_path / "frames.usda", pin=pin, rest=rest)
    start = our_run(path, frames=0).physics.state.body_q.numpy()
    np.testing.assert_allclose(start, newton_run(path, frames=0), atol=1e-6)  # (the authored rolls: 2e-7)
    ours, theirs = our_run(path).physics.state.body_q.numpy(), newton_run(path)
    assert np.max(np.abs(ours[:, :3] - theirs[:, :3])) < 2e-4  # (1e-6 to 9.5e-5 m)
    assert np.max(np.abs(ours[:, 3:] - theirs[:, 3:])) < 2e-3


def test_a_welded_curves_frames_are_newtons(tmp_path):
    path = director_stage(y_stage(tmp_path / "y.usda"), pin=False, rest="restNormals", curve="/World/Y/b")
    start = our_run(path, frames=0).physics.state.body_q.numpy()
    np.testing.assert_allclose(start, newton_run(path, frames=0), atol=1e-6)
    ours, theirs = our_run(path).physics.state.body_q.numpy(), newton_run(path)
    assert np.max(np.abs(ours - theirs)) < 2e-4


def test_normals_not_per_point_are_said_and_not_read(tmp_path, caplog):
    path = director_stage(tmp_path / "bad.usda", pin=True, rest="none")
    stage = Usd.Stage.Open(path)
    UsdGeom.BasisCurves(stage.GetPrimAtPath("/World/Cable/sim")).GetNormalsAttr().Set([Gf.Vec3f(0, 0, 1)] * 2)
    stage.GetRootLayer().Save()
    start = our_run(path, frames=0).physics.state.body_q.numpy()
    assert "normals: 2 values for 6 points are not read" in caplog.text
    np.testing.assert_allclose(start, newton_run(path, frames=0), atol=1e-6)  # (Newton ignores them too)
