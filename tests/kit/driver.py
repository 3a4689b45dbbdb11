"""Runs inside the Kit venv's Python (3.12): the real Kit kernel, headless, with newton_usd.kit.

Usage: ``python driver.py STAGE OUT.json WORKDIR``. Every observation goes into OUT.json; the pytest
side (tests/test_kit.py) asserts on it, so that a failure there shows what Kit did.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import fake_timeline  # noqa: E402
from observed import Observed  # noqa: E402

from newton_usd.kit_kernel import start_kit  # noqa: E402

stage_path, out_path, workdir = sys.argv[1:4]
obs = Observed(out_path)
BODY = "/World/Box"  # falls from z = 1 m onto the ground


def world_z(stage, path=BODY, time=0.0):
    from pxr import UsdGeom

    return UsdGeom.Xformable(stage.GetPrimAtPath(path)).ComputeLocalToWorldTransform(time).ExtractTranslation()[2]


def our_observers():
    import carb.eventdispatcher

    names = [
        "update", "omni.kit.app:pre_shutdown", "omni.kit.app:post_quit",
        fake_timeline.GLOBAL_EVENT_PLAY, fake_timeline.GLOBAL_EVENT_PAUSE, fake_timeline.GLOBAL_EVENT_STOP,
        "newton_usd.kit:stage_opened", "newton_usd.kit:stage_closing",
    ]  # fmt: skip
    found = carb.eventdispatcher.get_eventdispatcher().get_observers(names)
    return sorted(o.name for o in found if o.name.startswith("newton_usd.kit"))


LIVE_STAGE = """#usda 1.0
(
    metersPerUnit = 1
    kilogramsPerUnit = 1
    upAxis = "Z"
    timeCodesPerSecond = 60
)
def Xform "World"
{
    def PhysicsScene "PhysicsScene"
    {
    }
    def Plane "Ground" (prepend apiSchemas = ["PhysicsCollisionAPI"])
    {
        uniform token axis = "Z"
    }
    def Cube "Box" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI", "PhysicsMassAPI"])
    {
        double size = 0.2
        float physics:mass = 1
        double3 xformOp:translate = (0, 0, 0.1)
        uniform token[] xformOpOrder = ["xformOp:translate"]
    }
    def Xform "Bob" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"])
    {
        float physics:mass = 1
        point3f physics:centerOfMass = (0, 0, -0.5)
        float3 physics:diagonalInertia = (0.004, 0.004, 0.004)
        double3 xformOp:translate = (2, 0, 1.5)
        uniform token[] xformOpOrder = ["xformOp:translate"]
    }
    def PhysicsRevoluteJoint "Hinge" (prepend apiSchemas = ["PhysicsDriveAPI:angular"])
    {
        rel physics:body1 = </World/Bob>
        uniform token physics:axis = "Y"
        point3f physics:localPos0 = (2, 0, 1.5)
        point3f physics:localPos1 = (0, 0, 0)
        float drive:angular:physics:stiffness = 1.745
        float drive:angular:physics:damping = 0.1745
        float drive:angular:physics:targetPosition = 60
    }
}
"""
LIVE_PROPERTIES = (
    "/World/Box.xformOp:translate",
    "/World/Box.physics:mass",
    "/World/Box.physics:kinematicEnabled",
    "/World/Hinge.drive:angular:physics:stiffness",
    "/World/Hinge.drive:angular:physics:targetPosition",
)


def live_edits(ext, timeline, app, workdir):
    """During play a script moves a body, changes a mass and a drive gain and drags a drive target: each takes
    effect at the next update, in place; then it makes the body kinematic, drags it up and makes it dynamic again;
    Stop puts the authored values back."""
    import math

    from pxr import Gf, UsdPhysics

    path = os.path.join(workdir, "live_edits.usda")
    with open(path, "w") as f:
        f.write(LIVE_STAGE)
    stage = ext.stages.open(path)

    def authored():
        layer = stage.GetRootLayer()
        specs = {p: layer.GetAttributeAtPath(p) for p in LIVE_PROPERTIES}
        return {p: repr(spec.default) if spec else None for p, spec in specs.items()}

    before = authored()
    timeline.play()
    for _ in range(20):
        app.update()
    pb = ext.playback
    sim, solver = pb.sim, pb.sim.solver
    model = sim.model
    box = model.body_label.index("/World/Box")
    dof = int(model.joint_qd_start.numpy()[model.joint_label.index("/World/Hinge")])
    out = {"edits_before": sim.edits_applied}
    box_prim, hinge = stage.GetPrimAtPath("/World/Box"), stage.GetPrimAtPath("/World/Hinge")
    box_prim.GetAttribute("xformOp:translate").Set(Gf.Vec3d(0.0, 0.5, 2.0))  # a gizmo drag
    app.update()
    out["moved_to"] = list(world_z_xyz(stage, "/World/Box"))
    box_prim.GetAttribute("physics:mass").Set(5.0)
    app.update()
    out["mass"] = float(sim.model.body_mass.numpy()[box])
    hinge.GetAttribute("drive:angular:physics:stiffness").Set(3.49)
    app.update()
    out["stiffness_per_degree"] = float(sim.model.joint_target_ke.numpy()[dof]) * math.pi / 180.0
    targets = []
    for target in (50.0, 40.0, 30.0, 20.0, 10.0):  # a slider dragged, one value per update
        hinge.GetAttribute("drive:angular:physics:targetPosition").Set(target)
        app.update()
        targets.append(math.degrees(float(sim.control.joint_target_pos.numpy()[dof])))
    out["targets"] = targets
    for _ in range(60):
        app.update()
    q = sim.state.joint_q.numpy()[int(model.joint_q_start.numpy()[model.joint_label.index("/World/Hinge")])]
    out["angle"] = math.degrees(float(q))
    out["box_z_after"] = world_z(stage, "/World/Box")
    out.update(same_solver=pb.sim.solver is solver, rebuilds=pb.sim.rebuilds, edits=pb.sim.edits_applied)
    body = UsdPhysics.RigidBodyAPI(box_prim)  # made kinematic while it rests, dragged up, made dynamic again
    body.CreateKinematicEnabledAttr(True)
    app.update()
    box_prim.GetAttribute("xformOp:translate").Set(Gf.Vec3d(0.0, 0.0, 1.0))
    for _ in range(5):
        app.update()
    out["kinematic_z"] = world_z(stage, "/World/Box")
    body.GetKinematicEnabledAttr().Set(False)
    for _ in range(10):
        app.update()
    out.update(released_z=world_z(stage, "/World/Box"), switch_rebuilds=pb.sim.rebuilds)
    timeline.stop()
    app.update()
    out["authored_before"], out["authored_after_stop"] = before, authored()
    out["box_z_stopped"] = world_z(stage, "/World/Box")
    obs["live_edits"] = out


def world_z_xyz(stage, path):
    from pxr import UsdGeom

    return UsdGeom.Xformable(stage.GetPrimAtPath(path)).ComputeLocalToWorldTransform(0.0).ExtractTranslation()


def main():
    timeline_module = fake_timeline.install()
    timeline = timeline_module.get_timeline_interface()
    app = start_kit(
        ["--/exts/newton_usd.kit/substeps=4", "--/exts/newton_usd.kit/stepping=fixed"],
        portable_root=os.path.join(workdir, "kit"),
    )
    import carb.settings
    import omni.kit.app

    from newton_usd.kit.extension import get_extension

    manager = omni.kit.app.get_app().get_extension_manager()
    settings = carb.settings.get_settings()
    obs["enabled"] = manager.is_extension_enabled("newton_usd.kit")
    obs["settings"] = {k: settings.get(f"/exts/newton_usd.kit/{k}") for k in ("solver", "substeps", "write_back")}
    ext = get_extension()
    obs["mode"] = ext.mode
    obs["observers_enabled"] = our_observers()

    # Open the stage through the extension's stage provider (the kernel has no omni.usd).
    stage = ext.stages.open(stage_path)
    obs["authored_z"] = world_z(stage)
    obs["authored_op_order"] = [str(t) for t in stage.GetPrimAtPath(BODY).GetAttribute("xformOpOrder").Get()]
    timeline.play()
    z = []
    for _ in range(60):
        app.update()
        z.append(world_z(stage))
    pb = ext.playback
    obs["played"] = {"frames": pb.sim.frame, "substeps": pb.sim.substeps, "z": z}
    obs["root_layer_dirty"] = stage.GetRootLayer().dirty
    obs["session_sublayers_playing"] = list(stage.GetSessionLayer().subLayerPaths)

    timeline.pause()
    for _ in range(5):
        app.update()
    obs["paused"] = {"frames": pb.sim.frame, "z": world_z(stage)}
    timeline.play()
    for _ in range(3):
        app.update()
    obs["resumed_frames"] = pb.sim.frame

    # A live edit while playing: gravity turned upward applies at the next update, without a rebuild.
    from pxr import Gf, UsdPhysics

    scene = UsdPhysics.Scene(stage.GetPrimAtPath("/World/PhysicsScene"))
    solver = pb.sim.solver
    z0 = world_z(stage)
    scene.CreateGravityDirectionAttr(Gf.Vec3f(0, 0, 1))
    for _ in range(10):
        app.update()
    obs["live_edit"] = {
        "dz": world_z(stage) - z0,
        "same_solver": pb.sim.solver is solver,
        "edits": pb.sim.edits_applied,
    }
    scene.GetGravityDirectionAttr().Clear()
    app.update()

    timeline.stop()
    app.update()
    obs["stopped"] = {
        "z": world_z(stage),
        "op_order": [str(t) for t in stage.GetPrimAtPath(BODY).GetAttribute("xformOpOrder").Get()],
        "sim": pb.sim is not None,
        "session_sublayers": list(stage.GetSessionLayer().subLayerPaths),
        "root_layer_body_properties": sorted(stage.GetRootLayer().GetPrimAtPath(BODY).properties.keys()),
    }

    live_edits(ext, timeline, app, workdir)
    ext.stages.open(stage_path)

    # A failure inside a step: a NaN state. The run stops, the error is logged, the app goes on.
    timeline.play()
    app.update()
    import warp as wp

    pb.sim.state.joint_qd.assign(wp.full(pb.sim.state.joint_qd.shape, float("nan"), dtype=wp.float32))
    app.update()
    app.update()
    obs["failure"] = {"error": pb.last_error, "state": pb.state, "sim": pb.sim is not None, "z": world_z(stage)}
    timeline.stop()

    # Bad input: a stage with no physics, and one whose scene names another solver: left alone.
    for name, text in (
        ("nophysics.usda", '#usda 1.0\ndef Xform "World"\n{\n    def Cube "Box"\n    {\n    }\n}\n'),
        (
            "physx_only.usda",
            '#usda 1.0\n(\n    metersPerUnit = 1\n    upAxis = "Z"\n)\ndef PhysicsScene "Scene" (\n'
            '    prepend apiSchemas = ["NewtonUsdSceneAPI"]\n)\n{\n    uniform token newton:usd:solver = "physx"\n}\n'
            'def Cube "Box" (\n    prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI"]\n)\n{\n}\n',
        ),
    ):
        path = os.path.join(workdir, name)
        with open(path, "w") as f:
            f.write(text)
        ext.stages.open(path)
        timeline.play()
        for _ in range(3):
            app.update()
        obs[name] = {"left_alone": pb.left_alone, "sim": pb.sim is not None, "state": pb.state}
        timeline.stop()

    # Disable: no subscription left; enable again (a fresh instance) with new settings, and record.
    ext = pb = None  # Kit warns when an extension object outlives its disable
    manager.set_extension_enabled_immediate("newton_usd.kit", False)
    obs["observers_disabled"] = our_observers()
    obs["instance_after_disable"] = get_extension() is not None
    record = os.path.join(workdir, "recorded.usda")
    settings.set("/exts/newton_usd.kit/write_back", "record")
    settings.set("/exts/newton_usd.kit/record_path", record)
    manager.set_extension_enabled_immediate("newton_usd.kit", True)
    ext = get_extension()
    obs["observers_reenabled"] = our_observers()
    stage = ext.stages.open(stage_path)
    timeline.play()
    for _ in range(10):
        app.update()
    sim = ext.playback.sim
    obs["reenabled"] = {
        "frames": sim.frame, "z": world_z(stage, time=sim.time_code), "write_back": ext.playback.settings.write_back,
    }  # fmt: skip
    obs["record_path"] = record
    obs["recorded_before_quit"] = os.path.exists(record)
    # The user quits: Kit's fast shutdown skips on_shutdown; the recording is saved on the quit events.
    omni.kit.app.get_app().post_quit()
    app.update()
    obs["recorded_after_quit"] = os.path.exists(record)
    obs["frames_at_quit"] = sim.frame  # the quitting update still stepped a frame
    ext = sim = stage = None
    obs.save()
    app.shutdown()  # the kernel ends the process here


obs.run(main)
