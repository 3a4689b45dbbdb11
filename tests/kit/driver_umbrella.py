"""Runs inside the Kit venv: newton_usd.kit registered with the real omni.physics umbrella (Kit 110.4).

Usage: ``python driver_umbrella.py STAGE OUT.json WORKDIR OMNI_PHYSICS_EXT_FOLDER``. The bare kernel has
no stage-update node (omni.physics.stageupdate needs omni.usd), so the driver calls the umbrella's
stage-update interface the way that node does; every call reaches newton_usd through omni.physics.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from observed import Observed  # noqa: E402

from newton_usd.kit_kernel import EXT_NAME, start_kit  # noqa: E402

stage_path, out_path, workdir, physics_folder = sys.argv[1:5]
obs = Observed(out_path)
BODY = "/World/Box"


def main():
    app = start_kit(
        ["--ext-folder", physics_folder, "--enable", "omni.physics"], portable_root=os.path.join(workdir, "kit")
    )
    import omni.kit.app
    import omni.physics.core as core
    from pxr import Usd, UsdGeom, UsdUtils

    from newton_usd.kit.extension import get_extension

    manager = omni.kit.app.get_app().get_extension_manager()
    physics = core.get_physics_interface()

    def registry():
        return [(physics.get_simulation_name(i), physics.is_simulation_active(i)) for i in physics.get_simulation_ids()]

    obs["mode"] = get_extension().mode
    obs["registry"] = registry()

    stage = Usd.Stage.Open(stage_path)
    stage_id = UsdUtils.StageCache.Get().Insert(stage).ToLongInt()

    def z():
        xf = UsdGeom.Xformable(stage.GetPrimAtPath(BODY)).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
        return xf.ExtractTranslation()[2]

    node = core.get_physics_stage_update_interface()
    node.on_attach(stage_id)
    node.on_resume(0.0)
    traj = []
    for i in range(60):
        node.on_update(i / 60, 1 / 60, True)
        traj.append(z())
    pb = get_extension().playback
    obs["played"] = {"z": traj, "frames": pb.sim.frame}
    node.on_update(1.0, 1 / 60, False)
    node.on_pause()
    for _ in range(5):
        node.on_update(1.0, 1 / 60, True)
    obs["paused"] = {"z": z(), "frames": pb.sim.frame}
    sim_iface = core.get_physics_simulation_interface()
    sim_iface.simulate(1 / 60, 1.0)  # an explicit step, while paused
    obs["simulated_frames"] = pb.sim.frame
    node.on_reset()  # timeline Stop
    obs["reset"] = {"z": z(), "sim": pb.sim is not None}
    node.on_detach()
    obs["detached"] = pb.stage is None

    # Disabling omni.physics disables its dependents (Kit's rule, optional dependencies too).
    manager.set_extension_enabled_immediate("omni.physics", False)
    obs["physics_disabled"] = {"newton_usd_enabled": manager.is_extension_enabled(EXT_NAME)}
    # newton_usd.kit started without omni.physics: events mode; omni.physics enabled later: it registers.
    manager.set_extension_enabled_immediate(EXT_NAME, True)
    obs["started_without_physics"] = get_extension().mode
    manager.set_extension_enabled_immediate("omni.physics", True)
    physics = core.get_physics_interface()
    obs["physics_enabled_late"] = {"mode": get_extension().mode, "registry": registry()}
    obs["registry_before_disable"] = registry()
    pb = None
    manager.set_extension_enabled_immediate(EXT_NAME, False)
    obs["registry_after_disable"] = registry()
    manager.set_extension_enabled_immediate(EXT_NAME, True)
    obs["registry_after_enable"] = registry()
    obs.save()
    app.shutdown()


obs.run(main)
