"""Small stages authored in code for the tests (plain UsdPhysics)."""

from __future__ import annotations

from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics


def new_stage(path=None, up="Z", meters_per_unit=1.0, fps=60):
    stage = Usd.Stage.CreateNew(str(path)) if path else Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, up)
    UsdGeom.SetStageMetersPerUnit(stage, meters_per_unit)
    stage.SetTimeCodesPerSecond(fps)
    UsdPhysics.Scene.Define(stage, "/PhysicsScene")
    return stage


def add_ground(stage, path="/Ground", axis="Z"):
    plane = UsdGeom.Plane.Define(stage, path)
    plane.CreateAxisAttr(axis)
    UsdPhysics.CollisionAPI.Apply(plane.GetPrim())
    return plane


def add_box(stage, path, size=0.2, pos=(0, 0, 1), mass=None, rotate_xyz=None):
    cube = UsdGeom.Cube.Define(stage, path)
    cube.CreateSizeAttr(size)
    cube.AddTranslateOp().Set(Gf.Vec3d(*pos))
    if rotate_xyz is not None:
        cube.AddRotateXYZOp().Set(Gf.Vec3f(*rotate_xyz))
    prim = cube.GetPrim()
    UsdPhysics.RigidBodyAPI.Apply(prim)
    UsdPhysics.CollisionAPI.Apply(prim)
    if mass is not None:
        UsdPhysics.MassAPI.Apply(prim).CreateMassAttr(mass)
    return cube


def falling_cube(path=None, height=1.0, **kw):
    stage = new_stage(path, **kw)
    add_ground(stage)
    add_box(stage, "/Cube", 0.2, (0, 0, height), mass=1.0)
    return stage


def pendulum(path=None, mass=1.0, length=0.5, inertia=0.004, angle_deg=5.0, pivot=(0, 0, 2.0)):
    """A bob hinged to the world about Y at ``pivot``, its COM ``length`` below, started at ``angle_deg``."""
    stage = new_stage(path)
    body = UsdGeom.Xform.Define(stage, "/Pendulum")
    body.AddTranslateOp().Set(Gf.Vec3d(*pivot))
    body.AddRotateXYZOp().Set(Gf.Vec3f(0, angle_deg, 0))
    prim = body.GetPrim()
    UsdPhysics.RigidBodyAPI.Apply(prim)
    mass_api = UsdPhysics.MassAPI.Apply(prim)
    mass_api.CreateMassAttr(mass)
    mass_api.CreateCenterOfMassAttr(Gf.Vec3f(0, 0, -length))
    mass_api.CreateDiagonalInertiaAttr(Gf.Vec3f(inertia, inertia, inertia))
    ball = UsdGeom.Sphere.Define(stage, "/Pendulum/Ball")
    ball.CreateRadiusAttr(0.05)
    ball.AddTranslateOp().Set(Gf.Vec3d(0, 0, -length))
    joint = UsdPhysics.RevoluteJoint.Define(stage, "/Hinge")
    joint.CreateBody1Rel().SetTargets([Sdf.Path("/Pendulum")])
    joint.CreateAxisAttr("Y")
    joint.CreateLocalPos0Attr(Gf.Vec3f(*pivot))
    joint.CreateLocalPos1Attr(Gf.Vec3f(0, 0, 0))
    return stage
