"""A frame of a Newton solver as one function (newton_usd.solvers.frame): on Warp's CPU device it runs
eagerly and equals its single steps; on CUDA (``gpu``-marked cases) it is one captured graph, replayed, giving the
states the eager steps give (to float round-off), and captured again when what it baked in changes. Warp records and
replays launches on its CPU device too (``FrameCapture.cpu_graphs``): the captured path is tested without a GPU."""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp
from pxr import Gf, UsdGeom, UsdPhysics

from newton_usd import Simulation
from newton_usd.solvers.frame import FrameCapture

from stages import add_box, add_ground, pendulum

KAMINO = pytest.param("kamino", marks=[pytest.mark.slow, pytest.mark.soak])  # (its kernels: minutes to compile on CPU)
FPS = 600.0  # (short steps: semi_implicit's penalty hinge holds at them for the few frames these tests run)
TOLERANCE = {"cpu": 1e-5, "cuda": 1e-4}
"""Largest difference of two runs of the same steps: float round-off; on CUDA the solvers' atomic sums also add
in another order each run."""


def _tolerance(solver, device) -> float:
    """Kamino's PADMM iterates until a tolerance: on CUDA an atomic sum in another order can stop it an iteration
    apart."""
    return 1e-3 if solver == "kamino" and device != "cpu" else TOLERANCE[device]


def _scene():
    """A hinged pendulum, and a box dropped onto the ground whose center of mass is off its origin (Newton's free
    joint velocities differ from ours there: the exchange converts them), touching it within the first frames."""
    stage = pendulum(angle_deg=30.0)
    add_ground(stage)
    box = add_box(stage, "/Box", 0.2, (1.0, 0.0, 0.1005), mass=1.0, rotate_xyz=(0.0, 0.0, 20.0))
    UsdPhysics.MassAPI(box.GetPrim()).CreateCenterOfMassAttr(Gf.Vec3f(0.03, 0.0, 0.0))
    UsdGeom.Xformable(box).GetOrderedXformOps()[0].Set(Gf.Vec3d(1.0, 0.0, 0.1005))
    return stage


def _open(solver, device, substeps, worlds=1):
    return Simulation.open(
        _scene(), solver=solver, device=device, fps=FPS, substeps=substeps, worlds=worlds, live=False, record=False
    )


def _stepped(sim, frames):
    """``frames`` frames of ``sim`` stepped one physics step at a time (solver.step, the states swapped)."""
    a, b = sim.state, sim.physics.next
    for _ in range(frames * sim.substeps):
        sim.solver.step(a, b, sim.control, None, sim.dt)
        a, b = b, a
    return a


@pytest.mark.parametrize("substeps", [3, 4])
@pytest.mark.parametrize("solver", ["xpbd", "featherstone", "semi_implicit", KAMINO])
def test_a_frame_equals_its_single_steps(solver, substeps, device):
    """Frames of an odd and an even number of substeps leave the states that as many single steps leave: no
    step lost or repeated by the state ping-pong, the joint states converted alike. On CUDA the later frames
    replay one captured graph."""
    frames = 4
    framed = _open(solver, device, substeps)
    framed.run(frames)
    stepped = _open(solver, device, substeps)
    reference = _stepped(stepped, frames)
    assert framed.steps == frames * substeps
    for name in ("body_q", "body_qd", "joint_q", "joint_qd"):
        ours, theirs = getattr(framed.state, name).numpy(), getattr(reference, name).numpy()
        assert np.isfinite(ours).all(), name
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=_tolerance(solver, device), err_msg=name)
    # (the box moved: it fell onto the ground; the pendulum swung)
    start = stepped.model.body_q.numpy()
    assert np.abs(framed.state.body_q.numpy() - start).max() > 1e-4
    capture = framed.solver.frame_capture
    if device == "cpu":
        assert capture.captures == 0 and capture.eager_frames == frames
    elif capture.eager_reason is None:  # (Kamino without conditional graph nodes: eager, said once)
        assert capture.captures == 1 and capture.replays == frames - 1, vars(capture)
    framed.close()
    stepped.close()


@pytest.mark.parametrize(
    ("solver", "options", "reason"),
    [
        ("semi_implicit", {"requires_grad": True}, "requires_grad"),
        ("featherstone", {"update_mass_matrix_interval": 4}, "update_mass_matrix_interval 4"),
    ],
)
def test_what_a_graph_cannot_replay_stays_eager(solver, options, reason):
    """A differentiable run (a wp.Tape records eager launches; XPBD re-binds arrays under gradients) and
    Featherstone's mass matrix updated every n-th step (counted on the host) never capture, and say why."""
    sim = Simulation.open(pendulum(), solver=solver, solver_options=options, device="cpu", live=False, record=False)
    assert reason in sim.solver.frame_capture.eager_reason
    sim.close()


def test_frame_capture_drops_its_key_when_what_it_baked_in_changes():
    """The invalidation logic, device-independent: a frame of another key, or invalidate(), drops the warm-up
    (and a graph); the same key keeps it."""
    capture = FrameCapture("cpu", "test")
    ran = []
    capture.run(("a", 1), lambda: ran.append(1))
    capture.run(("a", 1), lambda: ran.append(2))
    assert ran == [1, 2] and capture.invalidations == 0 and capture.eager_frames == 2
    capture.run(("a", 2), lambda: ran.append(3))
    assert capture.invalidations == 1 and "changed" in capture.last_invalidation
    capture.invalidate("update_parameters(gravity)")
    assert capture.invalidations == 2 and capture.last_invalidation == "update_parameters(gravity)"
    capture.invalidate("again")  # (nothing held: nothing dropped)
    assert capture.invalidations == 2
    assert ran == [1, 2, 3] and capture.captures == 0


def test_recaptured_after_a_new_step_and_a_reset_not_after_an_edit(device):
    """What a graph bakes in changing drops it: a new time step, new states (reset); an edit of the model's values
    (gravity, update_parameters: the same arrays, new values) does not: the graph replays it. The frames after
    follow the change (never a stale graph)."""
    sim = Simulation.open(_scene(), solver="xpbd", device=device, fps=FPS, substeps=2, record=False)
    capture = sim.solver.frame_capture
    capture.cpu_graphs = True  # (on Warp's CPU device too: Warp records and replays the launches there)
    sim.run(3)
    assert capture.invalidations == 0
    scene = UsdPhysics.Scene(sim.stage.GetPrimAtPath("/PhysicsScene"))
    scene.CreateGravityDirectionAttr(Gf.Vec3f(0.0, 0.0, 1.0))  # (gravity upwards: the box lifts off)
    sim.run(30)
    assert capture.invalidations == 0 and capture.captures == 1  # (replayed with the new gravity)
    box = sim.model.body_label.index("/Box")
    assert sim.state.body_qd.numpy()[box][2] > 0.1
    sim.dt *= 0.5
    sim.run(2)
    assert capture.invalidations == 1 and "time step" in capture.last_invalidation
    sim.reset()
    sim.run(2)
    assert capture.invalidations == 2 and capture.last_invalidation == "reset"
    assert capture.captures == 3, vars(capture)
    sim.close()


@pytest.mark.parametrize("solver", ["xpbd", "featherstone", "semi_implicit", KAMINO])
def test_captured_frames_equal_eager_frames(solver, device):
    """Frames replayed from one captured graph leave the states that the same frames run eagerly leave (on CUDA at
    64 worlds; on Warp's CPU device, which records and replays launches too, at 2). A solver whose capture is
    impossible says why and is eager on both sides."""
    worlds = 2 if device == "cpu" else 64
    captured = _open(solver, device, 5, worlds=worlds)
    captured.solver.frame_capture.cpu_graphs = True
    eager = _open(solver, device, 5, worlds=worlds)
    eager.solver.frame_capture.never_capture("the test's eager side")
    captured.run(12)
    eager.run(12)
    capture = captured.solver.frame_capture
    if capture.eager_reason is None:
        assert capture.captures == 1 and capture.replays == 11, vars(capture)
    assert eager.solver.frame_capture.captures == 0
    for name in ("body_q", "body_qd", "joint_q", "joint_qd"):
        ours, theirs = getattr(captured.state, name).numpy(), getattr(eager.state, name).numpy()
        assert np.isfinite(ours).all(), name
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=_tolerance(solver, device), err_msg=name)
    wp.synchronize()
    captured.close()
    eager.close()


def _recording(sim) -> dict:
    """{prim: [(time code, world translation)]} of the bodies the run wrote."""
    out = {}
    for path in ("/Box", "/Pendulum"):
        xf = UsdGeom.Xformable(sim.stage.GetPrimAtPath(path))
        out[path] = [(t, tuple(xf.ComputeLocalToWorldTransform(t).ExtractTranslation())) for t in xf.GetTimeSamples()]
    return out


@pytest.mark.parametrize("solver", ["xpbd", "featherstone"])
def test_run_writes_what_frame_after_frame_writes(solver, device):
    """run() queues frame k+1 before it writes frame k (the write-back behind the device: on CUDA the stage write
    overlaps the GPU's steps), its frames replayed from a graph: the stage gets the time samples that step_frame,
    frame after frame and eagerly, gives."""
    recordings = []
    for pipelined in (False, True):
        sim = _open(solver, device, 3)
        sim.record = True
        sim.record_every = 2  # (frames 2, 4, 6 and the last, 7, besides the start)
        if pipelined:
            sim.solver.frame_capture.cpu_graphs = True  # (and replayed from a graph)
            sim.run(7)
            assert sim.pipeline.readback is not None and sim.solver.frame_capture.replays == 6
        else:
            for i in range(7):
                sim.step_frame(last=i == 6)
        sim.flush()
        recordings.append(_recording(sim))
        sim.close()
    plain, pipelined = recordings
    assert [t for t, _ in plain["/Box"]] == [0.0, 2.0, 4.0, 6.0, 7.0]
    for path in plain:
        assert [t for t, _ in pipelined[path]] == [t for t, _ in plain[path]], path
        ours, theirs = [p for _, p in pipelined[path]], [p for _, p in plain[path]]
        np.testing.assert_allclose(ours, theirs, atol=1e-6 if device == "cpu" else TOLERANCE[device])


@pytest.mark.parametrize("solver", ["xpbd", "semi_implicit"])
def test_replayed_frames_leave_joint_states_to_be_computed_from_the_bodies(solver, device):
    """XPBD and semi_implicit step the bodies only: a frame leaves the joint states to be computed from them when
    read. A replayed graph runs no Python, so the replay marks them so too: the joint angle read after each replayed
    frame is that frame's (it stayed the angle read last, frozen, under xpbd on CUDA: `--write-joint-states` wrote one
    angle over and over, and two gpu-marked tests failed)."""
    angles = []
    for graphs in (False, True):
        sim = _open(solver, device, 3)
        sim.solver.frame_capture.cpu_graphs = graphs
        if not graphs and device != "cpu":
            sim.solver.frame_capture.never_capture("the test's eager side")
        hinge = sim.model.joint_label.index("/Hinge")
        start = sim.model.joint_q_start.numpy()[hinge]
        angles.append([])
        for _ in range(5):
            sim.step_frame()
            angles[-1].append(float(sim.state.joint_q.numpy()[start]))
        assert sim.solver.frame_capture.replays == (4 if graphs else 0), vars(sim.solver.frame_capture)
        sim.close()
    eager, replayed = angles
    assert len(set(np.round(eager, 6))) == 5  # (it swings)
    np.testing.assert_allclose(replayed, eager, atol=_tolerance(solver, device))
