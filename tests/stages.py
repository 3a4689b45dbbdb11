"""Small stages authored in code for the tests (plain UsdPhysics)."""

from __future__ import annotations

import math

from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics


def new_stage(path=None, up="Z", meters_per_unit=1.0, fps=60):
    stage = Usd.Stage.CreateNew(str(path)) if path else Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, up)
    UsdGeom.SetStageMetersPerUnit(stage, meters_per_unit)
    stage.SetTimeCodesPerSecond(fps)
    UsdPhysics.Scene.Define(stage, "/PhysicsScene")
    return stage


def scaled_stage(path, meters_per_unit: float, fps: float):
    """A Z-up stage in stage units of ``meters_per_unit`` (1 kg per unit of mass) with a PhysicsScene at
    ``/World/Scene`` whose gravity is 9.81 m/s^2 in those units: ``(stage, scene, u)``, ``u`` a meter in stage units
    (the same scene in SI at any unit)."""
    u = 1.0 / meters_per_unit
    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, "Z")
    UsdGeom.SetStageMetersPerUnit(stage, meters_per_unit)
    UsdPhysics.SetStageKilogramsPerUnit(stage, 1.0)
    stage.SetTimeCodesPerSecond(fps)
    scene = UsdPhysics.Scene.Define(stage, "/World/Scene")
    scene.CreateGravityMagnitudeAttr(9.81 * u)
    scene.CreateGravityDirectionAttr(Gf.Vec3f(0, 0, -1))
    return stage, scene, u


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


def add_hinge(stage, path, body0, body1, local0, local1, axis="Y", limits=None):
    """A revolute joint from ``body0`` to ``body1`` at their local points ``local0`` / ``local1`` (limits in
    degrees: ``(lower, upper)``)."""
    hinge = UsdPhysics.RevoluteJoint.Define(stage, path)
    if body0 is not None:  # (None: to the world)
        hinge.CreateBody0Rel().SetTargets([body0])
    hinge.CreateBody1Rel().SetTargets([body1])
    hinge.CreateAxisAttr(axis)
    hinge.CreateLocalPos0Attr(Gf.Vec3f(*local0))
    hinge.CreateLocalPos1Attr(Gf.Vec3f(*local1))
    if limits is not None:
        hinge.CreateLowerLimitAttr(float(limits[0]))
        hinge.CreateUpperLimitAttr(float(limits[1]))
    return hinge


def add_tetrahedron(stage, path, edge=1.0, pos=(0, 0, 1), points=None):
    """A rigid body whose collider is a mesh tetrahedron (convex hull) of ``edge``, or of ``points``."""
    mesh = UsdGeom.Mesh.Define(stage, path)
    corners = [(0, 0, 0), (edge, 0, 0), (0, edge, 0), (0, 0, edge)]
    mesh.CreatePointsAttr([Gf.Vec3f(*p) for p in (points or corners)])
    mesh.CreateFaceVertexCountsAttr([3, 3, 3, 3])
    mesh.CreateFaceVertexIndicesAttr([0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3])
    mesh.AddTranslateOp().Set(Gf.Vec3d(*pos))
    UsdPhysics.RigidBodyAPI.Apply(mesh.GetPrim())
    UsdPhysics.CollisionAPI.Apply(mesh.GetPrim())
    UsdPhysics.MeshCollisionAPI.Apply(mesh.GetPrim()).CreateApproximationAttr("convexHull")
    return mesh


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


ENV_PIVOT = (0.5, 0.0, 1.0)
"""The pendulum's hinge in each environment of :func:`environments` (environment frame, m)."""
ENV_ARM = 0.3
ENV_ANGLE = 30.0


def env_placement(i, spacing=3.0, rotated=None):
    """Environment ``i`` of :func:`environments`: (position (m, Z up), angle about the up axis in degrees)."""
    rotated = {2: 90.0} if rotated is None else rotated
    return (spacing * i, 0.5 * spacing * (i % 2), 0.0), rotated.get(i, 0.0)


def environments(path=None, n=4, style="inherit", up="Z", meters_per_unit=1.0, rotated=None, spacing=3.0):
    """``n`` environments ``/World/envs/env_i`` (placed by :func:`env_placement`, env_2 turned 90 degrees
    about the up axis) on a shared ground ``/World/ground``. Each holds a box ``box`` (0.2 m, 1 kg) 0.5 m up,
    free to fall, and a pendulum ``arm`` hinged to the world about X at :data:`ENV_PIVOT` by the joint
    ``hinge``, started 30 degrees off, its 1 kg bob 0.3 m below the hinge.

    ``style``: "inherit": env_i inherits env_0 and authors only its place (the hinge's world-side frame is
    env_0's, as inherited); "reference": every env references the class ``/Templates/env`` and authors
    its place, env_i also its hinge's world-side frame (moved to its place); "flat": every env authored
    in full (the hinge at its own place), with no composition arcs.
    """
    stage = new_stage(path, up=up, meters_per_unit=meters_per_unit)
    s = 1.0 / meters_per_unit

    def v(p):  # a Z-up vector in meters -> stage units and axes
        x, y, z = p
        return Gf.Vec3d(x * s, z * s, -y * s) if up == "Y" else Gf.Vec3d(x * s, y * s, z * s)

    def up_quat(deg):  # a rotation about the up axis, as a stage quaternion
        axis = Gf.Vec3d(0, 1, 0) if up == "Y" else Gf.Vec3d(0, 0, 1)
        return Gf.Rotation(axis, deg).GetQuat()

    ground = UsdGeom.Plane.Define(stage, "/World/ground")
    ground.CreateAxisAttr(up)
    UsdPhysics.CollisionAPI.Apply(ground.GetPrim())
    UsdGeom.Scope.Define(stage, "/World/envs")

    def place(prim_path, i):
        env = UsdGeom.Xform(stage.GetPrimAtPath(prim_path))
        env.ClearXformOpOrder()  # (an inherited one)
        pos, deg = env_placement(i, spacing, rotated)
        env.AddTranslateOp().Set(v(pos))
        if deg:
            (env.AddRotateYOp() if up == "Y" else env.AddRotateZOp()).Set(deg)

    def content(root, i):
        box = UsdGeom.Cube.Define(stage, f"{root}/box")
        box.CreateSizeAttr(0.2 * s)
        box.AddTranslateOp().Set(v((0, 0, 0.5)))
        UsdPhysics.RigidBodyAPI.Apply(box.GetPrim())
        UsdPhysics.CollisionAPI.Apply(box.GetPrim())
        UsdPhysics.MassAPI.Apply(box.GetPrim()).CreateMassAttr(1.0)
        arm = UsdGeom.Xform.Define(stage, f"{root}/arm")
        arm.AddTranslateOp().Set(v(ENV_PIVOT))
        arm.AddRotateXOp().Set(ENV_ANGLE)
        UsdPhysics.RigidBodyAPI.Apply(arm.GetPrim())
        mass = UsdPhysics.MassAPI.Apply(arm.GetPrim())
        mass.CreateMassAttr(1.0)
        mass.CreateCenterOfMassAttr(Gf.Vec3f(v((0, 0, -ENV_ARM))))
        mass.CreateDiagonalInertiaAttr(Gf.Vec3f(0.01 * s * s, 0.01 * s * s, 0.01 * s * s))
        hinge = UsdPhysics.RevoluteJoint.Define(stage, f"{root}/hinge")
        hinge.CreateBody1Rel().SetTargets([Sdf.Path(f"{root}/arm")])
        hinge.CreateAxisAttr("X")
        hinge.CreateLocalPos1Attr(Gf.Vec3f(0, 0, 0))
        hinge.CreateLocalRot1Attr(Gf.Quatf(1, 0, 0, 0))
        world_side(hinge, i)

    def world_side(hinge, i):  # the hinge's frame on the world side is a world frame
        pos, deg = env_placement(i, spacing, rotated)
        turn = Gf.Rotation(Gf.Vec3d(0, 0, 1), deg)
        pivot = Gf.Vec3d(*pos) + turn.TransformDir(Gf.Vec3d(*ENV_PIVOT))
        hinge.CreateLocalPos0Attr(Gf.Vec3f(v(pivot)))
        hinge.CreateLocalRot0Attr(Gf.Quatf(up_quat(deg)))

    for i in range(n):
        root = f"/World/envs/env_{i}"
        if style == "flat":
            UsdGeom.Xform.Define(stage, root)
            place(root, i)
            content(root, i)
        elif style == "inherit":
            UsdGeom.Xform.Define(stage, root)
            if i == 0:
                content(root, 0)
            else:
                stage.GetPrimAtPath(root).GetInherits().AddInherit(Sdf.Path("/World/envs/env_0"))
            place(root, i)
        elif style == "reference":
            if i == 0:
                template = stage.CreateClassPrim("/Templates")
                UsdGeom.Xform.Define(stage, "/Templates/env")
                content("/Templates/env", 0)
                assert template
            prim = UsdGeom.Xform.Define(stage, root).GetPrim()
            prim.GetReferences().AddInternalReference(Sdf.Path("/Templates/env"))
            place(root, i)
            if i:
                world_side(UsdPhysics.RevoluteJoint(stage.GetPrimAtPath(f"{root}/hinge")), i)
        else:
            raise ValueError(style)
    return stage


def robot_environments(path=None, n=4, spacing=2.0):
    """``n`` environments ``/World/envs/env_i`` (``spacing`` m apart along X) on a shared ground, each holding a
    robot ``Robot``: a free 0.2 m box ``base`` (2 kg) 0.3 m up, and two links hinged on top of each other,
    ``link1`` about Y by ``Robot/shoulder`` and ``link2`` about X by ``Robot/elbow`` (limits +-90 degrees, drives
    of stiffness 50 and damping 5 per degree as UsdPhysics authors them), 0.3 m apart, 0.5 kg each; the base is
    the articulation root."""
    stage = new_stage(path)
    add_ground(stage, "/World/ground")
    UsdGeom.Scope.Define(stage, "/World/envs")
    for i in range(n):
        root = f"/World/envs/env_{i}"
        UsdGeom.Xform.Define(stage, root).AddTranslateOp().Set(Gf.Vec3d(spacing * i, 0, 0))
        robot = f"{root}/Robot"
        UsdGeom.Xform.Define(stage, robot)
        add_box(stage, f"{robot}/base", 0.2, (0, 0, 0.3), mass=2.0)
        UsdPhysics.ArticulationRootAPI.Apply(stage.GetPrimAtPath(f"{robot}/base"))
        for k, (name, axis, joint) in enumerate((("link1", "Y", "shoulder"), ("link2", "X", "elbow"))):
            link = UsdGeom.Xform.Define(stage, f"{robot}/{name}")
            link.AddTranslateOp().Set(Gf.Vec3d(0, 0, 0.6 + 0.3 * k))
            prim = link.GetPrim()
            UsdPhysics.RigidBodyAPI.Apply(prim)
            mass = UsdPhysics.MassAPI.Apply(prim)
            mass.CreateMassAttr(0.5)
            mass.CreateCenterOfMassAttr(Gf.Vec3f(0, 0, 0.15))
            mass.CreateDiagonalInertiaAttr(Gf.Vec3f(0.004, 0.004, 0.001))
            hinge = UsdPhysics.RevoluteJoint.Define(stage, f"{robot}/{joint}")
            parent = f"{robot}/base" if k == 0 else f"{robot}/link1"
            hinge.CreateBody0Rel().SetTargets([Sdf.Path(parent)])
            hinge.CreateBody1Rel().SetTargets([Sdf.Path(f"{robot}/{name}")])
            hinge.CreateAxisAttr(axis)
            hinge.CreateLocalPos0Attr(Gf.Vec3f(0, 0, 0.3))
            hinge.CreateLocalPos1Attr(Gf.Vec3f(0, 0, 0))
            hinge.CreateLowerLimitAttr(-90.0)
            hinge.CreateUpperLimitAttr(90.0)
            drive = UsdPhysics.DriveAPI.Apply(hinge.GetPrim(), "angular")
            drive.CreateStiffnessAttr(50.0)
            drive.CreateDampingAttr(5.0)
    return stage


def pile(path=None, n=100, shape="sphere", size=0.1, spacing=0.3, fps=60):
    """``n`` free bodies (spheres of radius ``size`` or cubes of edge ``2 * size``) over a ground plane,
    on a square grid ``spacing`` apart, layer over layer (a pile once they fall). Authored with Sdf
    in one change block: a 10,000-body stage takes a second, not a minute."""
    stage = new_stage(path, fps=fps)
    add_ground(stage)
    side = max(1, math.ceil(math.sqrt(min(n, 400))))  # at most 20 x 20 per layer
    layer = stage.GetRootLayer()
    with Sdf.ChangeBlock():
        Sdf.CreatePrimInLayer(layer, "/Bodies").specifier = Sdf.SpecifierDef
        for i in range(n):
            k, j = divmod(i, side * side)
            y, x = divmod(j, side)
            spec = Sdf.CreatePrimInLayer(layer, f"/Bodies/B{i}")
            spec.specifier = Sdf.SpecifierDef
            spec.typeName = "Sphere" if shape == "sphere" else "Cube"
            spec.SetInfo("apiSchemas", Sdf.TokenListOp.CreateExplicit(["PhysicsRigidBodyAPI", "PhysicsCollisionAPI"]))
            extent = "radius" if shape == "sphere" else "size"
            Sdf.AttributeSpec(spec, extent, Sdf.ValueTypeNames.Double).default = size if shape == "sphere" else 2 * size
            pos = Gf.Vec3d((x - side / 2) * spacing, (y - side / 2) * spacing, 0.5 + k * spacing)
            Sdf.AttributeSpec(spec, "xformOp:translate", Sdf.ValueTypeNames.Double3).default = pos
            Sdf.AttributeSpec(spec, "xformOpOrder", Sdf.ValueTypeNames.TokenArray, Sdf.VariabilityUniform).default = [
                "xformOp:translate"
            ]
    return stage
