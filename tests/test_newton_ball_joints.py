"""A ball joint's velocity and torque under Newton's solvers, in our convention (core/types.py: the angular velocity
``joint_qd`` and the torque ``joint_f`` in the child joint frame, as MuJoCo's), where Newton's are in the parent
joint frame: the bridge's exchange converts them (solvers/newton/exchange.py). The joint is turned 1 rad at the
start, so the two frames differ; a cone-limited one (bridged as a Newton D6 of Euler angles) is checked too."""

from __future__ import annotations

import math

import numpy as np
import pytest

from newton_usd.core import ModelBuilder
from newton_usd.solvers import SOLVERS

# Kamino on Warp's CPU device: over a minute a case, so soak (run by .ci/run's second step)
KAMINO = pytest.param("kamino", marks=[pytest.mark.slow, pytest.mark.soak])

S = math.sin(math.pi / 4)
TURN = (0.0, math.sin(0.5), 0.0, math.cos(0.5))  # the joint's rotation: 1 rad about the joint frame's Y
INERTIA = np.diag([0.02, 0.03, 0.04])
COM = (0.0, 0.0, -0.3)


def _pendulum(device, cone: bool = False):
    """A body on a ball joint whose joint frames are turned 90 deg about X (the joint's Z is the world's -Y), no
    gravity, no contact; the joint turned by TURN."""
    b = ModelBuilder(gravity=(0.0, 0.0, 0.0))
    body = b.add_body(((0.0, 0.0, 1.0), (0.0, 0.0, 0.0, 1.0)), mass=1.0, com=COM, inertia=INERTIA, label="/B")
    b.add_shape_sphere(body, radius=0.05, collision_enabled=False, label="/B/S")
    frame = (S, 0.0, 0.0, S)
    j = b.add_joint_ball(-1, body, ((0.0, 0.0, 1.0), frame), ((0.0, 0.0, 0.0), frame), label="/J")
    if cone:  # a UsdPhysics cone about the joint's X: wide enough not to act here
        b.set_mujoco("joint", "joint_cone_limit", j, 1.4)
        b.set_mujoco("joint", "joint_cone_axis", j, 0)
    return b.finalize(device)


def _run(name, model, joint_qd=(0.0, 0.0, 0.0), joint_f=(0.0, 0.0, 0.0), steps=5):
    """(joint_qd, body angular velocity in world) after ``steps`` steps of 1 ms from TURN."""
    state, out = model.state(), model.state()
    q = state.joint_q.numpy()
    q[:4] = TURN
    state.joint_q.assign(q)
    qd = state.joint_qd.numpy()
    qd[:3] = joint_qd
    state.joint_qd.assign(qd)
    solver = SOLVERS[name](model)
    solver.joint_states_written(state)
    control = model.control()
    f = control.joint_f.numpy()
    f[:3] = joint_f
    control.joint_f.assign(f)
    for _ in range(steps):
        solver.step(state, out, control, None, 1.0e-3)
        state, out = out, state
    return state.joint_qd.numpy()[:3], state.body_qd.numpy()[0, 3:]


@pytest.mark.parametrize("cone", [False, True], ids=["ball", "cone"])
@pytest.mark.parametrize("solver", ["featherstone", "xpbd", "semi_implicit", KAMINO])
def test_a_turned_ball_joint_spins_about_its_child_frame_axis_as_in_mujoco(solver, cone, device):
    """joint_qd (0, 0, 2): a spin about the child joint frame's Z, which the 1 rad turn about Y tilts to
    (sin 1, 0, cos 1) in the parent joint frame, (sin 1, -cos 1, 0) * 2 in the world. Read back unchanged."""
    expected = 2.0 * np.array([math.sin(1.0), -math.cos(1.0), 0.0])
    reference_qd, reference_w = _run("mujoco", _pendulum("cpu"), joint_qd=(0.0, 0.0, 2.0))
    np.testing.assert_allclose(reference_w, expected, atol=2e-3)
    qd, w = _run(solver, _pendulum(device, cone), joint_qd=(0.0, 0.0, 2.0))
    np.testing.assert_allclose(w, reference_w, atol=2e-3)
    np.testing.assert_allclose(qd, reference_qd, atol=2e-3)


@pytest.mark.parametrize("cone", [False, True], ids=["ball", "cone"])
@pytest.mark.parametrize("solver", ["featherstone", "xpbd", "semi_implicit", KAMINO])
def test_a_ball_joint_torque_acts_about_its_child_frame_axis(solver, cone, device):
    """joint_f (0, 0, 1) N m about the child joint frame's Z, (sin 1, -cos 1, 0) in the world: from rest the body
    turns at I^-1 tau (I about the pivot, in the world) for 0.1 s (MuJoCo's solver applies no joint_f to ball
    joints, so the reference is computed here). Newton's XPBD (which reads a ball joint's torque in the world
    frame, the others in the parent joint frame) turns the body about the same axis, 1.47 times as fast: its own
    dynamics, not the exchange's (a revolute joint's torque, with no frame to convert, does the same there: see
    docs/solvers.md)."""
    steps, dt = 100, 1.0e-3
    turn = np.array([[math.cos(1.0), -math.sin(1.0), 0.0], [math.sin(1.0), math.cos(1.0), 0.0], [0.0, 0.0, 1.0]])
    r = np.array(COM)
    about_pivot = INERTIA + (r @ r) * np.eye(3) - np.outer(r, r)  # (mass 1)
    torque = np.array([math.sin(1.0), -math.cos(1.0), 0.0])
    expected = steps * dt * np.linalg.solve(turn @ about_pivot @ turn.T, torque)  # (the body: 1 rad about world Z)
    _, w = _run(solver, _pendulum(device, cone), joint_f=(0.0, 0.0, 1.0), steps=steps)
    if solver == "xpbd":
        cosine = float(w @ expected) / (np.linalg.norm(w) * np.linalg.norm(expected))
        assert cosine > 0.999, (w, expected)
    else:
        np.testing.assert_allclose(w, expected, rtol=0.01, atol=2e-3)
