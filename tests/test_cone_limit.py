"""A cone-limited SphericalJoint holds its cone whatever the swinging body's inertia."""

import math

import numpy as np
import pytest
from pxr import Gf, Sdf, UsdGeom, UsdPhysics

from newton_usd import ModelBuilder
from newton_usd.core.quat import quat_rotate
from newton_usd.solvers import SolverMuJoCo

from stages import new_stage

CONE_DEG = 30.0
ARM = 0.5


def cone_stage(mass, collider):
    """A body hung from a spherical joint at (0, 0, 2) whose cone (30 deg) is about +X, its center of mass
    0.5 m out along +X: gravity swings it down, against the cone. ``collider``: a 5 cm ball there."""
    stage = new_stage()
    body = UsdGeom.Xform.Define(stage, "/Bob")
    body.AddTranslateOp().Set(Gf.Vec3d(0, 0, 2))
    prim = body.GetPrim()
    UsdPhysics.RigidBodyAPI.Apply(prim)
    mass_api = UsdPhysics.MassAPI.Apply(prim)
    mass_api.CreateMassAttr(mass)
    mass_api.CreateCenterOfMassAttr(Gf.Vec3f(ARM, 0, 0))
    if collider:
        ball = UsdGeom.Sphere.Define(stage, "/Bob/Ball")
        ball.CreateRadiusAttr(0.05)
        ball.AddTranslateOp().Set(Gf.Vec3d(ARM, 0, 0))
        UsdPhysics.CollisionAPI.Apply(ball.GetPrim())
    joint = UsdPhysics.SphericalJoint.Define(stage, "/Cone")
    joint.CreateBody1Rel().SetTargets([Sdf.Path("/Bob")])
    joint.CreateAxisAttr("X")
    joint.CreateConeAngle0LimitAttr(CONE_DEG)
    joint.CreateConeAngle1LimitAttr(CONE_DEG)
    joint.CreateLocalPos0Attr(Gf.Vec3f(0, 0, 2))
    return stage


@pytest.mark.parametrize("collider", [False, True], ids=["no collider", "collider"])
@pytest.mark.parametrize("mass", [1.0, 50.0], ids=["light", "heavy"])
def test_cone_limit_holds(mass, collider):
    builder = ModelBuilder()
    builder.add_usd(cone_stage(mass, collider))
    model = builder.finalize("cpu")
    solver = SolverMuJoCo(model, backend="cpu")
    s0, s1, control = model.state(), model.state(), model.control()
    dt, worst = 1.0 / 480.0, 0.0
    for _ in range(960):  # 2 s: the swing reaches the cone and settles on it
        solver.step(s0, s1, control, None, dt)
        s0, s1 = s1, s0
        arm = quat_rotate(s0.body_q.numpy()[0][3:].astype(np.float64), np.array([1.0, 0.0, 0.0]))
        worst = max(worst, math.degrees(math.acos(np.clip(arm[0], -1.0, 1.0))))
    assert worst > CONE_DEG - 3.0  # it swung onto the cone ...
    assert worst < CONE_DEG + 3.0  # ... and the cone held it
