"""The Kit extension's behaviour without Kit: Playback (play/pause/stop/update) and the omni.physics slots."""

import logging
import os
import shutil
import types

import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdUtils

from newton_usd.errors import SimulationError
from newton_usd.kit.playback import Playback, PlaybackSettings
from newton_usd.kit.umbrella import SIMULATION_NAME, UmbrellaRegistration
from newton_usd.kit_kernel import PROJECT_ROOT

BOXES = os.path.join(PROJECT_ROOT, "sample_stages", "boxes_on_ground.usda")
BOX = "/World/Box"


def z_of(stage, path=BOX, time=None):
    time = Usd.TimeCode.Default() if time is None else time
    return UsdGeom.Xformable(stage.GetPrimAtPath(path)).ComputeLocalToWorldTransform(time).ExtractTranslation()[2]


def playing(stage=None, **settings):
    pb = Playback(PlaybackSettings(**settings))
    pb.attach(stage or Usd.Stage.Open(BOXES))
    pb.play()
    return pb


def test_settings_from_carb_mapping(caplog):
    s = PlaybackSettings.from_mapping({"substeps": "4", "joint_states": 1, "stepping": "sometimes", "other": 3})
    assert s.substeps == 4 and s.joint_states is True
    assert s.stepping == "fixed" and "stepping" in caplog.text  # a bad value falls back, with a warning
    assert PlaybackSettings.from_mapping(None) == PlaybackSettings()


def test_fixed_stepping_one_frame_per_update_and_pause():
    pb = playing(substeps=2)
    assert pb.sim is None  # built lazily, on the first update
    for _ in range(12):
        assert pb.update(1e-4) == 1
    assert pb.sim.frame == 12 and pb.sim.substeps == 2
    z = z_of(pb.stage)
    assert z < 0.99
    pb.pause()
    assert pb.update(1 / 60) == 0 and z_of(pb.stage) == z
    pb.play()
    assert pb.update(1 / 60) == 1 and pb.sim.frame == 13


def test_realtime_stepping_accumulates_and_caps(caplog):
    pb = playing(stepping="realtime", max_frames_per_update=3)
    assert pb.update(0.0) == 0  # builds; no time passed
    fps = pb.sim.fps
    assert pb.update(0.6 / fps) == 0
    assert pb.update(0.6 / fps) == 1  # 1.2 frames due: one, 0.2 carried
    assert pb.update(1.0) == 3  # a second behind: capped, the rest dropped, said once
    assert pb.update(1.0) == 3
    assert caplog.text.count("slower than real time") == 1
    assert pb.update(0.85 / fps) == 0  # nothing carried over from the dropped backlog


def test_stop_restores_the_authored_poses_and_play_rebuilds_from_edits():
    stage = Usd.Stage.Open(Sdf.Layer.OpenAsAnonymous(BOXES))  # edited below: not the shared sample layer
    pb = playing(stage)
    for _ in range(10):
        pb.update(0.0)
    assert z_of(stage) < 0.99
    pb.stop()
    assert pb.sim is None and pb.state == "stopped"
    assert z_of(stage) == pytest.approx(1.0)
    assert list(stage.GetSessionLayer().subLayerPaths) == [] and not stage.GetRootLayer().dirty
    # An edit while stopped is what the next Play starts from.
    stage.GetPrimAtPath(BOX).GetAttribute("xformOp:translate").Set(Gf.Vec3d(0, 0, 3))
    pb.play()
    pb.update(0.0)
    assert pb.sim.frame == 1 and 2.9 < z_of(stage) < 3.0


def test_attaching_another_stage_stops_the_first():
    first = Usd.Stage.Open(BOXES)
    pb = playing(first)
    pb.update(0.0)
    second = Usd.Stage.CreateInMemory()
    pb.attach(second)
    assert pb.stage is second and pb.sim is None and pb.state == "stopped"
    assert z_of(first) == pytest.approx(1.0)
    pb.detach()
    assert pb.stage is None
    pb.play()  # no stage: nothing happens
    assert pb.state == "stopped" and pb.update(0.1) == 0


def test_stage_without_physics_is_left_alone_once(caplog):
    pb = playing(Usd.Stage.CreateInMemory())
    for _ in range(3):
        assert pb.update(0.1) == 0
    assert pb.sim is None and pb.state == "stopped" and "no physics to simulate" in pb.left_alone
    pb.play()
    pb.update(0.1)
    assert caplog.text.count("leaving ") == 1


def test_scene_naming_another_solver_is_left_alone(caplog):
    stage = Usd.Stage.Open(Sdf.Layer.OpenAsAnonymous(BOXES))
    scene = stage.GetPrimAtPath("/World/PhysicsScene")
    scene.CreateAttribute("newton:usd:solver", Sdf.ValueTypeNames.Token).Set("physx")
    pb = playing(stage)
    assert pb.update(0.1) == 0 and pb.sim is None
    assert "/World/PhysicsScene" in pb.left_alone and "'physx'" in pb.left_alone
    assert caplog.text.count("leaving ") == 1


@pytest.mark.parametrize(
    "error, expected",
    [
        (SimulationError("it blew up", label="/World/Box"), "(/World/Box): it blew up"),
        (RuntimeError("a bug"), "RuntimeError: a bug"),
    ],
)
def test_failure_in_a_step_stops_and_logs_without_raising(caplog, error, expected):
    pb = playing()
    pb.update(0.0)
    stage = pb.stage

    def broken(*_args):
        raise error

    pb.sim.solver.step = broken
    with caplog.at_level(logging.ERROR, logger="newton_usd.kit"):
        assert pb.update(0.0) == 0
    assert pb.state == "stopped" and pb.sim is None
    assert expected in pb.last_error and expected in caplog.text
    assert z_of(stage) == pytest.approx(1.0)  # authored poses back
    pb.play()  # the next Play starts a fresh run
    assert pb.update(0.0) == 1 and pb.last_error is None


def test_record_saves_on_stop_and_flush(tmp_path):
    src = tmp_path / "boxes.usda"
    shutil.copy(BOXES, src)
    pb = playing(Usd.Stage.Open(str(src)), write_back="record")
    for _ in range(5):
        pb.update(0.0)
    pb.flush()  # app quitting: saved, the run goes on
    out = tmp_path / "boxes.sim.usda"  # default: next to the stage
    assert out.exists()
    pb.update(0.0)
    pb.stop()
    rec = Usd.Stage.Open(str(out))
    samples = rec.GetPrimAtPath(BOX).GetAttribute("xformOp:translate:physics").GetTimeSamples()
    assert len(samples) == 7  # frame 0 and six frames
    assert z_of(rec, time=samples[-1]) < 0.99
    assert z_of(pb.stage) == pytest.approx(1.0)  # Stop: the authored pose again


def test_live_write_back_saves_nothing(tmp_path):
    src = tmp_path / "boxes.usda"
    shutil.copy(BOXES, src)
    pb = playing(Usd.Stage.Open(str(src)))
    pb.update(0.0)
    pb.stop()
    assert sorted(os.listdir(tmp_path)) == ["boxes.usda"]


# --------------------------------------------------------------------------- omni.physics umbrella
class FakePhysicsCore:
    """The part of omni.physics.core the registration uses (signatures from its _physics.pyi)."""

    k_invalid_simulation_id = -1

    def __init__(self, others=()):
        self.registered = {}  # id -> [simulation, name, active]
        for name in others:
            self.register_simulation(None, name)

    class Simulation:
        def __init__(self):
            self.simulation_fns = types.SimpleNamespace()
            self.stage_update_fns = types.SimpleNamespace()

    def get_physics_interface(self):
        return self

    def register_simulation(self, simulation, name):
        sid = len(self.registered) + 7
        self.registered[sid] = [simulation, name, True]  # registered simulations start active
        return sid

    def unregister_simulation(self, sid):
        del self.registered[sid]

    def get_simulation_ids(self):
        return list(self.registered)

    def get_simulation_name(self, sid):
        return self.registered[sid][1]

    def is_simulation_active(self, sid):
        return self.registered[sid][2]

    def deactivate_simulation(self, sid):
        self.registered[sid][2] = False


def test_omni_physics_registration_drives_playback():
    core = FakePhysicsCore()
    pb = Playback(PlaybackSettings())
    stage = Usd.Stage.Open(BOXES)
    stage_id = UsdUtils.StageCache.Get().Insert(stage).ToLongInt()
    reg = UmbrellaRegistration(core, pb, lambda: None)
    sim, name, active = core.registered[reg.id]
    assert name == SIMULATION_NAME and active and reg.active
    fns = sim.stage_update_fns
    fns.on_attach(stage_id)  # the stage cache id omni.usd passes
    assert pb.stage is stage and sim.simulation_fns.get_attached_stage() == stage_id
    fns.on_resume(0.0)
    fns.on_update(0.0, 1 / 60, True)
    fns.on_update(0.0, 1 / 60, False)  # physics disabled this update
    assert pb.sim.frame == 1 and sim.simulation_fns.get_simulation_step_count() == pb.sim.steps
    fns.on_pause()
    fns.on_update(0.0, 1 / 60, True)
    assert pb.sim.frame == 1
    sim.simulation_fns.simulate(0.5 / 60, 0.0)  # explicit steps, by elapsed time, paused or not
    assert pb.sim.frame == 1
    sim.simulation_fns.simulate(0.5 / 60, 0.0)
    assert pb.sim.frame == 2 and pb.state == "paused"
    fns.on_reset()  # timeline Stop
    assert pb.sim is None and z_of(stage) == pytest.approx(1.0)
    fns.on_detach()
    assert pb.stage is None
    reg.unregister()
    assert core.registered == {}
    UsdUtils.StageCache.Get().Erase(stage)


def test_omni_physics_slots_never_raise(caplog):
    core = FakePhysicsCore()
    pb = Playback(PlaybackSettings())
    reg = UmbrellaRegistration(core, pb, lambda: None)
    sim = core.registered[reg.id][0]
    pb.update = None  # a bug inside newton_usd
    sim.stage_update_fns.on_attach(123456)  # an id naming no stage: falls back to the current stage (none)
    assert sim.stage_update_fns.on_update(0.0, 0.1, True) is None
    assert "on_update failed" in caplog.text
    # Slots returning a value return one of their type, or the native caller fails converting None.
    pb.sim = object()  # no .steps: the slot fails inside
    assert sim.simulation_fns.get_simulation_step_count() == 0
    assert "get_simulation_step_count failed" in caplog.text
    pb.stage = "not a stage"
    assert sim.simulation_fns.get_attached_stage() == 0


def test_omni_physics_with_another_active_engine(caplog):
    core = FakePhysicsCore(others=["PhysX"])
    reg = UmbrellaRegistration(core, Playback(), lambda: None)  # "auto": stays out of PhysX's way
    assert not reg.active and core.is_simulation_active(7)
    assert "another physics engine is active ('PhysX')" in caplog.text
    reg.unregister()
    reg = UmbrellaRegistration(core, Playback(), lambda: None, activation="exclusive")
    assert reg.active and not core.is_simulation_active(7)


def test_edits_while_playing_are_taken_in_place_and_put_back_on_stop():
    """A body dragged and a mass changed while playing reach the run at the next update, without an import; Stop puts
    the authored values back in the layer they were edited in (a property the user added is removed again), and the
    next Play starts from them; with restore_edits off they stay."""
    stage = Usd.Stage.Open(Sdf.Layer.OpenAsAnonymous(BOXES))
    pb = playing(stage)
    for _ in range(5):
        pb.update(1 / 60)
    box = stage.GetPrimAtPath(BOX)
    box.GetAttribute("xformOp:translate").Set(Gf.Vec3d(0.0, 0.0, 3.0))
    box.GetAttribute("physics:mass").Set(4.0)
    box.CreateAttribute("physics:density", Sdf.ValueTypeNames.Float).Set(10.0)  # (added while playing)
    pb.update(1 / 60)
    b = pb.sim.model.body_label.index(BOX)
    assert z_of(stage) == pytest.approx(3.0, abs=0.02) and pb.sim.rebuilds == 0
    assert pb.sim.model.body_mass.numpy()[b] == pytest.approx(4.0)
    pb.stop()
    assert z_of(stage) == pytest.approx(1.0)
    assert box.GetAttribute("xformOp:translate").Get() == Gf.Vec3d(0.0, 0.0, 1.0)
    assert box.GetAttribute("physics:mass").Get() == pytest.approx(1.0)
    assert not box.GetAttribute("physics:density").HasAuthoredValue()
    pb = playing(stage, restore_edits=False)
    pb.update(1 / 60)
    box.GetAttribute("physics:mass").Set(2.0)
    pb.update(1 / 60)
    pb.stop()
    assert box.GetAttribute("physics:mass").Get() == pytest.approx(2.0)
