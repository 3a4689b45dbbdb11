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
