"""The warp backend's stepping (step2 then step1) and its exchange with the model's arrays on the device."""

import mujoco
import numpy as np
import pytest
import warp as wp

from newton_usd import ModelBuilder
from newton_usd.solvers import SolverMuJoCo

# A free box dropped on the ground and a hinge chain (two axes) swinging from the world.
BOX_AND_CHAIN = """<mujoco><option timestep="0.002"/><worldbody><geom type="plane" size="5 5 .1"/>
<body name="box" pos="0 0 .3" euler="10 20 30"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
<body name="l1" pos="1 0 1"><joint name="h1" type="hinge" axis="0 1 0"/>
<geom type="capsule" fromto="0 0 0 .4 0 0" size=".04"/>
<body name="l2" pos=".4 0 0"><joint name="h2" type="hinge" axis="0 1 0"/>
<geom type="capsule" fromto="0 0 0 .4 0 0" size=".04"/>
<body name="l3" pos=".4 0 0"><joint name="h3" type="hinge" axis="0 0 1"/>
<geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/></body></body></body>
</worldbody></mujoco>"""


def build(xml, worlds=2, **options):
    b = ModelBuilder()
    b.add_mjcf(xml)
    b.replicate(worlds)
    model = b.finalize("cpu")
    return model, SolverMuJoCo(model, backend="warp", **options)


# Euler and implicitfast in the main suite; implicit and RK4 (its four stages: the longest) are soak.
@pytest.mark.parametrize(
    "integrator", ["euler", "implicitfast"] + [pytest.param(i, marks=pytest.mark.soak) for i in ("implicit", "rk4")]
)
def test_warp_steps_as_mujoco_warp_step_then_kinematics(integrator):
    import mujoco_warp as mjw

    model, solver = build(BOX_AND_CHAIN, integrator=integrator)
    assert solver._two_phase == (integrator != "rk4")  # RK4: step2 would integrate with Euler
    m = solver.mj_model
    data = mujoco.MjData(m)
    data.qpos[:] = solver._data.qpos
    with wp.ScopedDevice("cpu"):
        ref_m = mjw.put_model(m)
        ref_d = mjw.put_data(m, data, nworld=2, nconmax=solver.mjw_data.naconmax // 2, njmax=solver.mjw_data.njmax)
    s0, s1, control = model.state(), model.state(), model.control()
    for _ in range(100):  # (0.2 s: the box reaches the ground at 0.18 s)
        solver.step(s0, s1, control, None, 0.002)
        s0, s1 = s1, s0
        with wp.ScopedDevice("cpu"):
            mjw.step(ref_m, ref_d)
    with wp.ScopedDevice("cpu"):
        for stage in (mjw.kinematics, mjw.com_pos, mjw.com_vel):
            stage(ref_m, ref_d)
    qpos = ref_d.qpos.numpy()
    assert qpos[:, 2].max() < 0.2  # the box fell onto the ground (from 0.3 m)
    assert (ref_d.nacon.numpy() > 0).all()  # (and touches it)
    assert np.abs(qpos[:, 7:] - qpos[:1, 7:]).max() < 1e-6 and np.abs(qpos[0, 7:9]).min() > 0.05  # swung
    np.testing.assert_allclose(solver.mjw_data.qpos.numpy(), qpos, atol=1e-5)
    np.testing.assert_allclose(solver.mjw_data.qvel.numpy(), ref_d.qvel.numpy(), atol=1e-4)
    body_q = s0.body_q.numpy().reshape(2, -1, 7)
    xpos, xquat = ref_d.xpos.numpy()[:, solver.spec_map.body_mj], ref_d.xquat.numpy()[:, solver.spec_map.body_mj]
    np.testing.assert_allclose(body_q[..., :3], xpos, atol=1e-5)
    np.testing.assert_allclose(body_q[..., 3:], xquat[..., [1, 2, 3, 0]], atol=1e-5)


# A tumbling free body, a ball joint with a driven hinge below it (position drive), a motor (MjcActuator) and a
# mocap (kinematic) body that the test moves.
MIXED = """<mujoco><option timestep="0.002"/><worldbody><geom type="plane" size="5 5 .1"/>
<body name="tumbler" pos="0 0 2" euler="5 10 15"><freejoint/><geom type="box" size=".1 .2 .3"/></body>
<body name="upper" pos="1 0 1.5" euler="0 30 0"><joint name="ball" type="ball" damping=".01"/>
<geom type="capsule" fromto="0 0 0 .3 0 -.3" size=".04"/>
<body name="lower" pos=".3 0 -.3"><joint name="elbow" type="hinge" axis="0 1 0" ref="0.3"/>
<geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/></body></body>
<body name="slider" pos="-1 0 1"><joint name="slide" type="slide" axis="1 0 0"/>
<geom type="box" size=".05 .05 .05"/></body>
<body name="paddle" mocap="true" pos="0 1 .5"><geom type="box" size=".3 .3 .02"/></body>
</worldbody><actuator><motor joint="slide" gear="2"/></actuator></mujoco>"""


def mixed_model(worlds=2):
    from newton_usd.core.types import DriveMode

    b = ModelBuilder()
    b.add_mjcf(MIXED)
    elbow = b.joint_label.index(next(label for label in b.joint_label if label.endswith("elbow")))
    dof = sum(len(qd) for qd in b.joint_qd[:elbow])
    b.joint_target_mode[dof] = int(DriveMode.POSITION)
    b.joint_target_ke[dof], b.joint_target_kd[dof] = 20.0, 1.0
    b.replicate(worlds)
    model = b.finalize("cpu")
    return model, dof


def run_exchange(make_model, device_path, steps=60, edit=None):
    """Step a warp solver ping-pong; ``device_path=False`` forces the numpy exchange. Returns every step's arrays."""
    model = make_model()
    solver = SolverMuJoCo(model, backend="warp")
    if not device_path:
        solver._dev = None  # (the numpy exchange through the host)
    s0, s1, control = model.state(), model.state(), model.control()
    out = []
    for i in range(steps):
        if edit is not None:
            edit(i, model, s0, control)
        solver.step(s0, s1, control, None, 0.002)
        s0, s1 = s1, s0
        out.append({n: getattr(s0, n).numpy().copy() for n in ("joint_q", "joint_qd", "body_q", "body_qd")})
    return solver, out


def assert_same_runs(a, b, atol=2e-5):
    assert len(a) == len(b)
    for step, (x, y) in enumerate(zip(a, b, strict=True)):
        for name in x:
            np.testing.assert_allclose(x[name], y[name], atol=atol, err_msg=f"{name} at step {step}")


# Contacts (boxes_on_ground) and a hinge chain (pendulum) in the main suite; the arm and the cartpole are soak.
@pytest.mark.parametrize(
    "source",
    ["boxes_on_ground.usda", "pendulum.usda"]
    + [pytest.param(n, marks=pytest.mark.soak) for n in ("arm.xml", "cartpole.usda")],
)
def test_device_exchange_gives_what_the_numpy_exchange_gives_on_the_samples(samples, source):
    def make():
        b = ModelBuilder()
        path = str(samples / source)
        b.add_mjcf(path) if source.endswith(".xml") else b.add_usd(path)
        b.replicate(2)
        return b.finalize("cpu")

    solver, on_device = run_exchange(make, True)
    assert solver._dev_last is not None  # (the kernels ran)
    _, on_host = run_exchange(make, False)
    assert_same_runs(on_device, on_host)
    assert np.abs(on_device[-1]["body_qd"] - on_device[0]["body_qd"]).max() > 0.01  # something moves


def test_device_exchange_with_ball_free_drives_forces_motor_mocap_and_edits():
    def edit(i, model, state, control):
        per_world = model.joint_dof_count // 2
        if i == 0:  # a tumbling body (free angular velocity in world), a spinning ball joint
            qd = state.joint_qd.numpy()
            qd[[3, 4, 5, per_world + 3]] = (3.0, -2.0, 1.0, 4.0)
            qd[6:9] = (0.5, 1.0, -1.5)
            state.joint_qd.assign(qd)
        if i == 10:  # world 1's hinge target and joint force, every world's motor
            target = control.joint_target_pos.numpy()
            target[per_world + dof] = 0.8
            control.joint_target_pos.assign(target)
            f = control.joint_f.numpy()
            f[per_world + 9] = 5.0  # (the hinge below the ball in world 1: its DOFs are 0-5 free, 6-8 ball)
            control.joint_f.assign(f)
            control.mujoco.ctrl.assign(np.array([1.5, -0.5], dtype=np.float32))
        if i == 20:  # world 0's ball rotated by hand: only that world's coordinates change
            q = state.joint_q.numpy()
            q[7:11] = (0.0, np.sin(0.2), 0.0, np.cos(0.2))
            state.joint_q.assign(q)
        if i == 30:  # the paddle (mocap) raised in world 1
            body_q = state.body_q.numpy()
            body_q[model.body_count // 2 + 4, 2] += 0.2
            state.body_q.assign(body_q)

    model, dof = mixed_model()
    assert model.joint_q.numpy().shape[0] // 2 == 7 + 4 + 1 + 1 and dof == 9

    solver, on_device = run_exchange(lambda: mixed_model()[0], True, edit=edit)
    assert solver._dev_last is not None and len(solver._mocap_body) == 1 and len(solver.map.ball_q) == 1
    _, on_host = run_exchange(lambda: mixed_model()[0], False, edit=edit)
    assert_same_runs(on_device, on_host)
    last = on_device[-1]
    w0, w1 = last["joint_q"].reshape(2, -1)
    assert abs(w1[11] - w0[11]) > 1e-2 and abs(w1[12] - w0[12]) > 1e-3  # the targets, joint_f, motor
    assert np.abs(w0[11] - on_device[9]["joint_q"].reshape(2, -1)[0, 11]) > 1e-3  # (the elbow moves)
    paddle = last["body_q"].reshape(2, -1, 7)[:, 4]
    assert paddle[1, 2] == pytest.approx(paddle[0, 2] + 0.2, abs=1e-6)
    mocap = solver.mjw_data.mocap_pos.numpy()[:, 0]
    np.testing.assert_allclose(mocap[:, 2], paddle[:, 2], atol=1e-6)


_CAPTURE_IF = wp.capture_if


def _no_conditional_step1(*args, on_true=None, **kwargs):
    """``wp.capture_if`` as CUDA answers a conditional body in which MuJoCo-Warp's step1 allocates (seen on an
    H200 with the cartpole sample): the capture fails."""
    if getattr(on_true, "__name__", "") == "step1" and wp.get_device().is_capturing:
        raise RuntimeError("Conditional body graph contains an unsupported operation (memory allocation)")
    return _CAPTURE_IF(*args, on_true=on_true, **kwargs)


def edit_state_and_controls(state, control, tilt: bool, actuate: bool):
    """The mixed model's edits between steps: its free body tilted (``tilt``), its MjcActuators driven (``actuate``)."""
    if tilt:
        q = state.joint_q.numpy()
        q[7:11] = (0.0, np.sin(0.2), 0.0, np.cos(0.2))
        state.joint_q.assign(q)
    if actuate:
        control.mujoco.ctrl.assign(np.array([1.5, -0.5], dtype=np.float32))


@pytest.mark.parametrize("conditional", [True, False], ids=["conditional step1", "no conditional node"])
def test_captured_steps_replay_what_eager_steps_do(conditional, monkeypatch):
    # The CUDA graph path, run on Warp's CPU device (Warp captures there too): the second step with the same
    # arrays is captured, later ones replayed; edits between steps still reach MuJoCo (the captured conditional
    # step1, or, where the conditional node cannot be captured, one phase: MuJoCo-Warp's step and the kinematics
    # of the new state); a gain that comes to differ between the worlds gets a per-world array of its own in
    # MuJoCo-Warp's model (a new array): the graphs are dropped and captured again (values changed in arrays kept
    # replay, see tests/test_live_edits.py).
    from newton_usd.core.types import DriveMode

    def edit(i, model, state, control):
        edit_state_and_controls(state, control, tilt=i == 12, actuate=i == 16)

    def run(graphs):
        model, dof = mixed_model()
        solver = SolverMuJoCo(model, backend="warp")
        solver._use_graphs = graphs
        s0, s1, control = model.state(), model.state(), model.control()
        out, captured = [], 0
        for i in range(30):
            edit(i, model, s0, control)
            if i == 20:
                ke = model.joint_target_ke.numpy()
                ke[dof] = 60.0
                model.joint_target_ke.assign(ke)
                assert model.joint_target_mode.numpy()[dof] == int(DriveMode.POSITION)
                captured = sum(g[0] is not None for g in solver._graphs.values())
                assert solver.update_parameters(model, {"joint_target_ke"}) == set()
                assert not solver._graphs
            solver.step(s0, s1, control, None, 0.002)
            s0, s1 = s1, s0
            out.append({n: getattr(s0, n).numpy().copy() for n in ("joint_q", "joint_qd", "body_q", "body_qd")})
        return out, captured, solver

    if not conditional:
        monkeypatch.setattr(wp, "capture_if", _no_conditional_step1)
    replayed, captured, solver = run(True)
    monkeypatch.undo()
    assert solver._conditional_step1 == conditional and solver._use_graphs
    assert captured == 2  # (one per direction of the ping-pong)
    assert sum(g[0] is not None for g in solver._graphs.values()) == 2  # captured again after the change
    eager, _, _ = run(False)
    assert_same_runs(replayed, eager, atol=0.0)
    assert np.abs(eager[-1]["joint_q"] - eager[19]["joint_q"]).max() > 1e-3


@pytest.mark.parametrize("substeps", [3, 4])
@pytest.mark.parametrize("conditional", [True, False], ids=["conditional step1", "no conditional node"])
def test_a_frame_of_k_steps_is_k_steps_captured_once_and_replayed(substeps, conditional, monkeypatch):
    # simulate_frame pushes once, steps k times and pulls once (the kinematics once, at the end, where the steps are
    # one phase); with Warp's CPU graphs it is captured at its second frame and replayed after. Edits of the state
    # and controls between frames reach MuJoCo; update_parameters of a gain of world 0 only (a new per-world array in
    # MuJoCo-Warp's model) drops the graph and the next frames capture again.
    from newton_usd.core.types import DriveMode

    def edit(frame, model, state, control):
        edit_state_and_controls(state, control, tilt=frame == 3, actuate=frame == 4)

    def change_gains(model, solver):
        ke = model.joint_target_ke.numpy()
        ke[dof] = 60.0
        model.joint_target_ke.assign(ke)
        assert model.joint_target_mode.numpy()[dof] == int(DriveMode.POSITION)
        assert solver.update_parameters(model, {"joint_target_ke"}) == set()

    frames = 9
    model, dof = mixed_model()
    solver = SolverMuJoCo(model, backend="warp")
    assert solver.simulates_frames
    solver.frame_capture.cpu_graphs = True
    s0, s1, control = model.state(), model.state(), model.control()
    if not conditional:
        monkeypatch.setattr(wp, "capture_if", _no_conditional_step1)
    framed = []
    for frame in range(frames):
        edit(frame, model, s0, control)
        if frame == 6:
            captured = solver.frame_capture.captures
            change_gains(model, solver)
            assert not solver.frame_capture.captured
        solver.simulate_frame(s0, s1, control, 0.002, substeps)
        framed.append({n: getattr(s0, n).numpy().copy() for n in ("joint_q", "joint_qd", "body_q", "body_qd")})
    monkeypatch.undo()
    assert solver._conditional_step1 == conditional
    assert captured == 1 and solver.frame_capture.captures == 2 and solver.frame_capture.replays >= 5
    assert solver.frame_capture.invalidations >= 1

    model, dof = mixed_model()
    solver = SolverMuJoCo(model, backend="warp")
    solver._conditional_step1 = conditional
    s0, s1, control = model.state(), model.state(), model.control()
    stepped = []
    for frame in range(frames):
        edit(frame, model, s0, control)
        if frame == 6:
            change_gains(model, solver)
        for _ in range(substeps):
            solver.step(s0, s1, control, None, 0.002)
            s0, s1 = s1, s0
        stepped.append({n: getattr(s0, n).numpy().copy() for n in ("joint_q", "joint_qd", "body_q", "body_qd")})
    assert_same_runs(framed, stepped, atol=1e-6)
    assert np.abs(stepped[-1]["joint_q"] - stepped[5]["joint_q"]).max() > 1e-3


def test_simulation_runs_the_warp_backend_frame_by_frame_function(samples, device, monkeypatch):
    # Simulation.run takes the warp backend's frame function (one graph a frame on CUDA): the poses it writes are
    # those of the same run stepped a step at a time.
    from newton_usd.sim import Simulation

    def run(frames_as_function):
        if not frames_as_function:
            monkeypatch.setattr(SolverMuJoCo, "simulates_frames", False)
        sim = Simulation.open(str(samples / "boxes_on_ground.usda"), backend="warp", device=device, live=False)
        start = sim.state.body_q.numpy().copy()
        sim.run(12)
        monkeypatch.undo()
        q = sim.state.body_q.numpy().copy()
        capture = sim.solver.frame_capture
        counts = (capture.eager_frames, capture.captures, capture.replays)
        sim.close()
        return q, counts, start

    (framed, counts, start), (stepped, none, _) = run(True), run(False)
    assert none == (0, 0, 0)
    if device == "cpu":
        assert counts == (12, 0, 0)  # (eager on the CPU)
    else:
        assert counts[1] == 1 and counts[2] >= 9, counts  # (captured at a frame once warmed up, replayed after)
    np.testing.assert_allclose(framed, stepped, atol=1e-6 if device == "cpu" else 1e-5)
    assert (framed[:, 2] < start[:, 2] - 0.1).all()  # (the boxes fell)
