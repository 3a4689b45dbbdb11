"""The Kit extension in the real Kit kernel (``omniverse-kit`` 110.4 from PyPI, headless, Python 3.12).

The kernel runs in its own venv (``python -m newton_usd.kit_kernel setup .venv-kit``; the README's
test command makes it). ``tests/kit/driver.py`` drives it with a fake omni.timeline (the kernel
has none) and records what it saw; the tests here check that record.
"""

import json
import os
import subprocess
import sys

import pytest

from newton_usd.kit_kernel import PROJECT_ROOT, find_python312, omni_physics_folder

STAGE = os.path.join(PROJECT_ROOT, "sample_stages", "boxes_on_ground.usda")
KIT_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit")
DRIVER = os.path.join(KIT_TESTS, "driver.py")


def kit_python() -> str:
    exe = os.environ.get("NEWTON_USD_KIT_PYTHON") or os.path.join(PROJECT_ROOT, ".venv-kit", "bin", "python")
    if os.path.exists(exe):
        return exe
    if find_python312() is None:
        pytest.skip("no Python 3.12 on this machine: the omniverse-kit kernel needs Python 3.12")
    pytest.fail(
        f"no Kit venv at {exe}: make it with `{sys.executable} -m newton_usd.kit_kernel setup .venv-kit`"
        " (the README's test command does)"
    )


def run_in_kit(args, tmp, timeout=600):
    env = dict(os.environ, HOME=str(tmp), OMNI_KIT_ACCEPT_EULA="yes")
    return subprocess.run(
        [kit_python(), *args], cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout
    )  # fmt: skip


def observe(driver, tmp, *extra):
    out = tmp / "observed.json"
    proc = run_in_kit([driver, STAGE, str(out), str(tmp), *extra], tmp)
    log = proc.stdout + proc.stderr
    assert out.exists(), f"the Kit driver wrote nothing (exit {proc.returncode}):\n{log[-4000:]}"
    obs = json.loads(out.read_text())
    assert "exception" not in obs, obs["exception"] + "\n" + log[-4000:]
    obs["log"] = log
    return obs


@pytest.fixture(scope="module")
def kit_run(tmp_path_factory):
    return observe(DRIVER, tmp_path_factory.mktemp("kit"))


def test_extension_starts_with_its_settings(kit_run):
    assert kit_run["enabled"]
    assert kit_run["mode"] == "events"  # the kernel has no omni.physics: update + timeline + stage events
    # extension.toml's [settings], with the command line's --/exts/newton_usd.kit/substeps=4 on top
    assert kit_run["settings"] == {"solver": "auto", "substeps": 4, "write_back": "live"}


def test_play_moves_the_falling_body_each_update(kit_run):
    assert kit_run["authored_z"] == pytest.approx(1.0)
    played = kit_run["played"]
    assert played["frames"] == 60 and played["substeps"] == 4  # stepping "fixed": one frame per update
    z = played["z"]
    assert z[0] < 1.0 and z[10] < z[5] < z[0]  # falling
    assert z[-1] == pytest.approx(0.1, abs=0.005)  # resting on the ground (a 0.2 m cube)
    # The poses went into the output layer under the session layer; the user's layer is untouched.
    assert not kit_run["root_layer_dirty"]
    assert len(kit_run["session_sublayers_playing"]) == 1


def test_pause_holds_and_play_resumes(kit_run):
    assert kit_run["paused"]["frames"] == 60
    assert kit_run["resumed_frames"] == 63


def test_live_edit_applies_while_playing(kit_run):
    edit = kit_run["live_edit"]
    assert edit["dz"] > 0.05 and edit["same_solver"] and edit["edits"] == 1  # gravity flipped: the box rises


def test_edits_while_playing_take_effect_at_the_next_update_and_stop_puts_them_back(kit_run):
    """A script moves a body, changes a mass and a drive gain and drags a drive target during play: each takes
    effect at the next update, in place (the same solver, no rebuild); the body made kinematic and dragged up holds
    there, made dynamic it falls (no rebuild); Stop puts the authored values back."""
    live = kit_run["live_edits"]
    x, y, z = live["moved_to"]
    assert (x, y) == pytest.approx((0.0, 0.5), abs=1e-3) and z == pytest.approx(2.0, abs=0.02)  # there, then falls
    assert live["mass"] == pytest.approx(5.0)
    assert live["stiffness_per_degree"] == pytest.approx(3.49, rel=1e-5)
    assert live["targets"] == pytest.approx([50.0, 40.0, 30.0, 20.0, 10.0], abs=1e-4)  # one per update
    assert live["angle"] == pytest.approx(10.0, abs=3.0)  # the pendulum followed the dragged target
    assert live["box_z_after"] < 0.2  # fell back onto the ground
    assert live["same_solver"] and live["rebuilds"] == 0 and live["edits"] - live["edits_before"] == 8
    assert live["kinematic_z"] == pytest.approx(1.0, abs=1e-3)
    assert live["released_z"] < 0.9 and live["switch_rebuilds"] == 0
    assert live["authored_after_stop"] == live["authored_before"]
    assert live["box_z_stopped"] == pytest.approx(0.1)


def test_stop_returns_the_authored_pose(kit_run):
    stopped = kit_run["stopped"]
    assert stopped["z"] == pytest.approx(kit_run["authored_z"])
    assert stopped["op_order"] == kit_run["authored_op_order"]
    assert not stopped["sim"] and stopped["session_sublayers"] == []
    # the user's layer holds what they authored, nothing of the simulation's
    assert not any(name.endswith(":physics") for name in stopped["root_layer_body_properties"])
    assert "xformOp:translate" in stopped["root_layer_body_properties"]


def test_failure_in_a_step_stops_logs_the_prim_and_keeps_the_app(kit_run):
    failure = kit_run["failure"]
    assert failure["state"] == "stopped" and not failure["sim"]
    assert "/World/Box" in failure["error"] and "blew up" in failure["error"]
    assert failure["z"] == pytest.approx(1.0)  # authored pose back
    assert "[Error] [newton_usd.kit]" in kit_run["log"]
    # ... and the app went on: the later steps of the driver ran (below).
    assert kit_run["recorded_after_quit"]


def test_stages_without_physics_or_for_another_solver_are_left_alone(kit_run):
    no_physics = kit_run["nophysics.usda"]
    assert not no_physics["sim"] and "nophysics.usda" in no_physics["left_alone"]
    assert "PhysicsRigidBodyAPI" in no_physics["left_alone"]
    other = kit_run["physx_only.usda"]
    assert not other["sim"] and "'physx'" in other["left_alone"] and "newton:usd:solver" in other["left_alone"]
    # one log line each
    assert kit_run["log"].count("leaving ") == 2


def test_disable_leaves_no_subscription_and_enable_starts_afresh(kit_run):
    expected = {"update", "pre_shutdown", "post_quit", "timeline_play", "timeline_pause", "timeline_stop"}
    expected |= {"stage_opened", "stage_closing"}
    assert set(kit_run["observers_enabled"]) == {f"newton_usd.kit.{n}" for n in expected}
    assert kit_run["observers_disabled"] == []
    assert not kit_run["instance_after_disable"]
    assert kit_run["observers_reenabled"] == kit_run["observers_enabled"]
    assert "still alive" not in kit_run["log"]  # Kit's warning when a disabled extension object leaks
    assert kit_run["reenabled"]["frames"] == 10 and kit_run["reenabled"]["z"] < 0.95


def test_recording_is_saved_when_the_app_quits(kit_run):
    # write_back "record" (set through carb.settings before re-enabling): saved on Kit's quit events,
    # since Kit's fast shutdown never calls on_shutdown.
    assert kit_run["reenabled"]["write_back"] == "record"
    assert not kit_run["recorded_before_quit"] and kit_run["recorded_after_quit"]
    from pxr import Usd

    stage = Usd.Stage.Open(kit_run["record_path"])
    attr = stage.GetPrimAtPath("/World/Box").GetAttribute("xformOp:translate:physics")
    samples = attr.GetTimeSamples()
    assert len(samples) == kit_run["frames_at_quit"] + 1  # frame 0 and every frame played
    assert attr.Get(samples[10])[2] == pytest.approx(kit_run["reenabled"]["z"], abs=1e-6)


def test_kernel_run_command(tmp_path):
    proc = run_in_kit(["-m", "newton_usd.kit_kernel", "run", STAGE, "--updates", "30", "--set", "substeps=2"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "30 frames on" in proc.stdout and "2 substeps/frame" in proc.stdout
    assert "/World/Box: (" in proc.stdout


@pytest.fixture(scope="module")
def umbrella_run(tmp_path_factory):
    venv = os.path.dirname(os.path.dirname(kit_python()))
    folder = omni_physics_folder(venv)
    if folder is None:
        pytest.skip(f"omni.physics is not in {venv} (`python -m newton_usd.kit_kernel setup` fetches it)")
    return observe(os.path.join(KIT_TESTS, "driver_umbrella.py"), tmp_path_factory.mktemp("umbrella"), folder)


def test_registers_with_the_real_omni_physics_and_is_driven_by_it(umbrella_run):
    assert umbrella_run["mode"] == "omni.physics"
    assert umbrella_run["registry"] == [["newton_usd", True]]
    z = umbrella_run["played"]["z"]
    assert umbrella_run["played"]["frames"] == 60  # on_update(time, dt, True): one frame each
    assert z[20] < z[10] < z[0] < 1.0 and z[-1] == pytest.approx(0.1, abs=0.005)
    assert umbrella_run["paused"]["frames"] == 60  # on_update(..., False) and on_pause: no steps
    assert umbrella_run["simulated_frames"] == 61  # IPhysicsSimulation.simulate steps explicitly
    assert umbrella_run["reset"] == {"z": 1.0, "sim": False}  # on_reset (Stop): the authored pose
    assert umbrella_run["detached"]


def test_omni_physics_enabled_late_and_disable_unregisters(umbrella_run):
    assert not umbrella_run["physics_disabled"]["newton_usd_enabled"]  # Kit disables dependents with it
    assert umbrella_run["started_without_physics"] == "events"
    assert umbrella_run["physics_enabled_late"] == {"mode": "omni.physics", "registry": [["newton_usd", True]]}
    assert umbrella_run["registry_after_disable"] == []
    assert umbrella_run["registry_after_enable"] == [["newton_usd", True]]
