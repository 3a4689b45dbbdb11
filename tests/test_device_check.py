"""The blow-up checks of frame functions run on the device (newton_usd.simulation.device_check): frames are queued
without a wait for the device, the flag is read every ``check_every`` frames and at the sync points, and the error is
the one a run checked on the host frame after frame gives (message, body, frame). Warp's CPU device with its graphs
(``cpu_graphs``) runs the captured path here."""

from __future__ import annotations

import re

import numpy as np
import pytest
from pxr import Gf, UsdPhysics

from newton_usd import Simulation
from newton_usd.errors import SimulationError
from newton_usd.selection import RigidBodyView
from newton_usd.simulation import runaway

from stages import add_box, new_stage


def _falling(stage):
    """A box in free fall from rest (no ground), 9.9 m out along X."""
    add_box(stage, "/Box", 0.2, (9.9, 0, 0))


def _overlapping(stage):
    """Two boxes authored one inside the other: XPBD throws them apart, every number finite."""
    add_box(stage, "/A", 1.0, (0, 0, 0))
    add_box(stage, "/B", 1.0, (0.05, 0, 0))


SCENES = {  # name: (stage builder, Simulation.open's keywords, what the error says)
    # (g t > 3 m/s after 0.31 s: frame 19 at 60 fps)
    "speed": (_falling, {"max_speed": 3.0}, "m/s, beyond max_speed 3 m/s"),
    "distance": (_falling, {"max_distance": 10.0}, "m from the origin, beyond max_distance 10 m"),
    "flung": (_overlapping, {"fps": 24.0}, "body was flung"),
}


def _open(scene, graphs=True, device="cpu"):
    build, options, _ = SCENES[scene]
    stage = new_stage(fps=60)
    build(stage)
    sim = Simulation.open(stage, solver="xpbd", device=device, live=False, record=False, **options)
    sim.solver.frame_capture.cpu_graphs = graphs
    return sim


def _host_checked(scene, device, monkeypatch) -> SimulationError:
    """The error of a run of single steps, checked on the host after every frame (the reference; on CUDA the host's
    flung check is made every frame too, not every CUDA_EVERY-th)."""
    monkeypatch.setattr(runaway, "CUDA_EVERY", 1)
    sim = _open(scene, device=device)
    sim.solver.simulates_frames = False
    with pytest.raises(SimulationError) as raised:
        sim.run(60)
    sim.close()
    return raised.value


def _said(error, device) -> tuple:
    """(message, frame, body) of a SimulationError; on CUDA the numbers of the message left out (the solvers' atomic
    sums add in another order each run: the same blow-up, a few units of the last digit apart)."""
    text = str(error) if device == "cpu" else re.sub(r"[0-9][0-9.e+-]*", "#", error.reason)
    return text, error.frame, error.label


@pytest.mark.parametrize("scene", SCENES)
def test_the_device_names_the_blow_up_the_host_check_names(scene, device, monkeypatch):
    """A blow-up found on the device, read frames later, is raised with the message, body and frame a run checked
    on the host frame after frame gives: through step_frame (nothing written: the flag read every check_every
    frames) and through run (the frames written behind the device)."""
    reference = _host_checked(scene, device, monkeypatch)
    assert SCENES[scene][2] in str(reference), str(reference)
    assert 1 < reference.frame < 40, reference.frame  # (not the first frame, which is waited for)
    sim = _open(scene, device=device)
    sim.write = False
    with pytest.raises(SimulationError) as raised:
        for _ in range(60):
            sim.step_frame()
    assert _said(raised.value, device) == _said(reference, device)
    assert sim.frame > reference.frame  # (found after the frame it started in)
    assert sim.solver.frame_capture.replays > 1
    sim.close()
    sim = _open(scene, device=device)
    sim.record = True
    with pytest.raises(SimulationError) as raised:
        sim.run(60)
    assert _said(raised.value, device) == _said(reference, device)
    sim.close()


def test_frames_are_queued_without_a_wait_and_checked_at_the_sync_points(monkeypatch, device):
    """step_frame with nothing written reads the device's flag every check_every frames only (the first frame
    waited for); views read the state on the device without a wait; reading ``sim.state`` is a sync point, where a
    blow-up queued since is raised once."""
    sim = _open("speed", device=device)
    sim.write = False
    sim.check_every = 1000  # (no poll in these frames: only the sync points check)
    reads = []
    sim.step_frame()  # (the first frame: waited for, its kernels loaded)
    check = sim.blow_up_check.device_check
    monkeypatch.setattr(check, "read", lambda read=check.read: reads.append(1) or read())
    view = RigidBodyView(sim, "/Box")
    for _ in range(39):  # (beyond max_speed from frame 19)
        sim.step_frame()
        view.get_velocities()
    assert reads == []
    with pytest.raises(SimulationError, match="beyond max_speed 3 m/s") as raised:
        sim.state.body_q.numpy()
    assert raised.value.frame == 19 and reads == [1]
    assert np.isfinite(sim.state.body_q.numpy()).all()  # (raised once: the state is read after)
    sim.check_every = 5
    sim.max_speed = 1e4
    sim.step_frame()  # (frame 41: no poll)
    polls = []
    monkeypatch.setattr(check, "poll", lambda poll=check.poll: polls.append(sim.frame) or poll())
    for _ in range(9):
        sim.step_frame()
    assert polls == [45, 50] and reads == [1]
    sim.close()


def test_reset_drops_the_frames_queued_unchecked():
    sim = _open("speed")
    sim.write = False
    sim.check_every = 1000
    for _ in range(30):
        sim.step_frame()
    sim.reset()
    sim.run(5)  # (no error: the blow-up of the frames before the reset is not raised)
    assert sim.frame == 5
    sim.close()


def test_the_flung_check_starts_again_on_the_device_after_a_view_write():
    """A body thrown by a view mid-run is measured from there (the device's start and bound set anew): at 60 m/s it
    goes farther than the first start allows, and is not called flung."""
    stage = new_stage(fps=24)
    add_box(stage, "/Thrown", 0.2, (0, 0, 1))
    sim = Simulation.open(stage, solver="xpbd", device="cpu", live=False, record=False)
    sim.solver.frame_capture.cpu_graphs = True
    sim.run(5)
    RigidBodyView(sim, "/Thrown").set_velocities(np.array([[60.0, 0, 0, 0, 0, 0]], dtype=np.float32))
    sim.run(40)
    assert sim.state.body_q.numpy()[0, 0] > 90
    assert sim.solver.frame_capture.replays > 30
    sim.close()


def test_a_body_thrown_at_the_start_is_bounded_by_its_authored_velocity():
    """The device's bound counts the start's velocities as the host's does: a box thrown at 50 m/s with no ground
    falls and flies 120 m in 2.5 s and is not called flung."""
    stage = new_stage(fps=24)
    add_box(stage, "/Thrown", 0.2, (0, 0, 1))
    UsdPhysics.RigidBodyAPI(stage.GetPrimAtPath("/Thrown")).CreateVelocityAttr(Gf.Vec3f(50, 0, 0))
    sim = Simulation.open(stage, solver="xpbd", device="cpu", live=False, record=False)
    sim.solver.frame_capture.cpu_graphs = True
    sim.run(60)
    assert sim.state.body_q.numpy()[0, 0] > 120
    sim.close()


def test_the_flung_check_turned_on_again_measures_from_its_start():
    """Off for two frames, then on again: the device counts the seconds from the check's start, as the host does (the
    same error, frame and body as a run checked on the host)."""
    errors = []
    for frames_on_device in (False, True):
        sim = _open("flung")
        sim.write = False
        if not frames_on_device:
            sim.solver.simulates_frames = False
        sim.step_frame()
        sim.check_flung = False
        sim.step_frame()
        sim.check_flung = True
        with pytest.raises(SimulationError) as raised:
            sim.run(40)
        errors.append((str(raised.value), raised.value.frame, raised.value.label))
        sim.close()
    assert errors[0] == errors[1] and "flung" in errors[0][0], errors
