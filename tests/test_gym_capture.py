"""The environment's step as graphs (newton_usd.envs): under a Newton solver, whose frames are a frame function, the
step's parts are captured once and replayed (Warp records and replays launches on its CPU device too), and a
captured run equals an eager one step for step, autoresets and randomized starts included."""

import numpy as np
import pytest
import warp as wp

import newton_usd.envs  # noqa: F401
from newton_usd.envs import StageVectorEnv

from conftest import SAMPLES

CARTPOLE = str(SAMPLES / "cartpole.usda")
N = 6


@wp.kernel
def _balance(obs: wp.array2d(dtype=wp.float32), out: wp.array(dtype=wp.float32)):
    e = wp.tid()
    out[e] = 1.0 - obs[e, 1] * obs[e, 1]


@wp.kernel
def _fell(obs: wp.array2d(dtype=wp.float32), out: wp.array(dtype=wp.bool)):
    e = wp.tid()
    out[e] = wp.abs(obs[e, 1]) > 0.1


def warp_reward(obs, actions, env):
    """Warp launches only: a callable a captured step can hold."""
    if isinstance(obs, np.ndarray):
        return 1.0 - obs[:, 1] ** 2
    out = wp.empty(obs.shape[0], dtype=wp.float32, device=obs.device)
    wp.launch(_balance, dim=obs.shape[0], inputs=[obs], outputs=[out], device=obs.device)
    return out


def warp_fell(obs, env):
    if isinstance(obs, np.ndarray):
        return np.abs(obs[:, 1]) > 0.1
    out = wp.empty(obs.shape[0], dtype=wp.bool, device=obs.device)
    wp.launch(_fell, dim=obs.shape[0], inputs=[obs], outputs=[out], device=obs.device)
    return out


def host(x):
    return x.numpy() if isinstance(x, wp.array) else np.asarray(x)


def run(capture, mode, steps=40, cpu_graphs=False, device="cpu", solver="featherstone"):
    env = StageVectorEnv(
        N, CARTPOLE, joints=["/CartPole/CartSlider"], solver=solver, device=device, reward=warp_reward,
        terminated=warp_fell, max_episode_steps=12, autoreset_mode=mode, capture=capture,
        randomize={"/CartPole/PoleHinge.state:angular:physics:position": (-4, 4)},
    )  # fmt: skip
    env.captures_on_cpu = cpu_graphs
    out = [host(env.reset(seed=3)[0])]
    pushes = np.random.default_rng(1).uniform(-20, 20, (steps, N, 1)).astype(np.float32)
    for a in pushes:
        obs, reward, terminated, truncated, info = env.step(a)
        obs, reward, terminated, truncated = (host(x) for x in (obs, reward, terminated, truncated))
        final = np.zeros_like(obs)
        if "final_obs" in info:  # (an object array on the CPU, a Warp array and its mask on CUDA)
            mask = host(info["_final_obs"])
            final[mask] = np.stack(list(host(info["final_obs"])[mask]))
        out.append(np.concatenate([obs, reward[:, None], terminated[:, None], truncated[:, None], final], axis=1))
    counts = [(c.captures, c.replays, c.eager_frames) for c in env.captures]
    env.close()
    return np.stack(out[1:]), out[0], counts


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_a_captured_step_equals_an_eager_one(mode, device):
    """On the CPU through Warp's CPU graphs; on CUDA (gpu) as CUDA graphs, the results Warp arrays."""
    eager, first, counts = run("off", mode, device=device)
    assert counts == [(0, 0, 0), (0, 0, 0)]
    assert eager[:, :, 5].any() and eager[:, :, 6].any()  # (episodes ended both ways: terminated, truncated)
    for capture in ("auto", "all"):
        captured, first_c, counts = run(capture, mode, cpu_graphs=True, device=device)
        np.testing.assert_array_equal(first_c, first)
        np.testing.assert_allclose(captured, eager, atol=2e-6 if device == "cpu" else 1e-4, err_msg=capture)
        parts = counts if capture == "auto" else counts[:1]
        for captures, replays, eager_frames in parts:  # warmed up once, captured once, replayed after
            assert (captures, eager_frames) == (1, 1) and replays == 39


def test_a_captured_xpbd_step_equals_an_eager_one():
    """XPBD steps bodies, its joint states computed from them when read: the captured step's resets, masked and run
    at every step, leave the environments that do not reset as stepped, as the eager step's (which runs them only
    when one resets)."""
    eager, first, _ = run("off", "NextStep", steps=14, solver="xpbd")
    captured, first_c, counts = run("auto", "NextStep", steps=14, cpu_graphs=True, solver="xpbd")
    assert counts[0][:2] == (1, 13)
    assert eager[:, :, 5].any() and eager[:, :, 6].any()  # (episodes ended both ways: terminated, truncated)
    np.testing.assert_array_equal(first_c, first)
    np.testing.assert_allclose(captured, eager, atol=2e-6)


@pytest.mark.gpu
def test_mujoco_warp_steps_captured_on_cuda():
    """MuJoCo-Warp's frames on CUDA: the whole step one graph (capture='all'), as eager steps."""
    eager, _, _ = run("off", "NextStep", device="cuda", solver="mujoco")
    captured, _, counts = run("all", "NextStep", device="cuda", solver="mujoco")
    assert counts[0][0] == 1 and counts[0][1] == 39
    np.testing.assert_allclose(captured, eager, atol=1e-4)


def test_the_solvers_own_frame_graph_gives_way_to_the_environments():
    env = StageVectorEnv(2, CARTPOLE, joints=["/CartPole/CartSlider"], solver="featherstone", device="cpu")
    env.captures_on_cpu = True
    env.reset(seed=0)
    for _ in range(3):
        env.step(np.zeros((2, 1), np.float32))
    assert env.sim.solver.frame_capture.eager_reason == "the environment captures its whole step"
    assert (env.captures[0].captures, env.captures[0].replays) == (1, 2)
    env.close()


def test_observed_bodies_after_a_reset_agree_between_mujoco_and_newton():
    """At a reset, the observed body poses and velocities come from the joint states just written: under MuJoCo from
    forward kinematics and the Jacobians here, under featherstone from the solver (Newton's eval_fk). The same seed
    draws the same starts on both."""
    obs = {}
    for solver in ("mujoco", "featherstone"):
        env = StageVectorEnv(
            3, CARTPOLE, joints=["/CartPole/CartSlider"], solver=solver, device="cpu",
            observations=["body_poses:/CartPole/Pole", "body_velocities:/CartPole/Pole"],
            randomize={"/CartPole/PoleHinge.state:angular:physics:position": (-20, 20),
                       "/CartPole/PoleHinge.state:angular:physics:velocity": (-60, 60),
                       "/CartPole/CartSlider.state:linear:physics:velocity": (-1, 1)},
        )  # fmt: skip
        obs[solver] = env.reset(seed=5)[0]
        env.close()
    assert np.abs(obs["mujoco"][:, 7:]).max() > 0.3  # (moving starts)
    np.testing.assert_allclose(obs["mujoco"], obs["featherstone"], atol=1e-5)


def test_xpbd_steps_the_environments():
    env = StageVectorEnv(4, CARTPOLE, joints=["/CartPole/CartSlider"], solver="xpbd", device="cpu",
                         terminated=lambda obs, env: np.abs(obs[:, 1]) > 0.2, max_episode_steps=20)  # fmt: skip
    first, _ = env.reset(seed=0)
    push = np.array([[10.0], [-10.0], [0.0], [0.0]], np.float32)
    for _ in range(5):
        obs, reward, terminated, truncated, _ = env.step(push)
    assert np.isfinite(obs).all()
    assert obs[0, 0] > 0.01 and obs[1, 0] < -0.01 and abs(obs[2, 0]) < 1e-3  # the pushed carts move, the others not
    assert obs[2, 1] > first[2, 1]  # the pole falls
    env.close()


def test_the_simulation_clock_counts_replayed_steps():
    """A replayed step runs the graph's kernels only: the Simulation's steps, frames and seconds are still counted on
    the host, as for an eager step (they stopped at the two steps run as Python: the warm-up and the capture)."""
    env = StageVectorEnv(2, CARTPOLE, joints=["/CartPole/CartSlider"], solver="featherstone", device="cpu",
                         frames_per_step=2)  # fmt: skip
    env.captures_on_cpu = True
    env.reset(seed=0)
    for _ in range(5):
        env.step(np.zeros((2, 1), np.float32))
    sim = env.sim
    assert (env.captures[0].eager_frames, env.captures[0].replays) == (1, 4)  # (the 2nd captured, then launched)
    assert (sim.frame, sim.steps) == (10, 10 * sim.substeps)
    assert sim.sim_seconds == pytest.approx(5 * env.dt)
    env.close()


def test_a_reset_inside_a_captured_step_reads_nothing_on_the_host(monkeypatch):
    """Under MuJoCo (its frames a frame function with the warp backend) the observed bodies of a reset environment are
    brought up to date here, inside the step's graph: on CUDA a host read there (the centers of mass, an index array
    from numpy) fails the capture, and every step then ran eagerly. On the CPU a read while capturing raises here as it
    would there; the steps are still captured, and read as eager ones."""
    real = wp.array.numpy

    def numpy(self):
        if wp.get_device("cpu").is_capturing:
            raise RuntimeError("a host read inside a graph capture")
        return real(self)

    def run(capture):
        env = StageVectorEnv(
            2, CARTPOLE, joints=["/CartPole/CartSlider"], solver="mujoco", backend="warp", device="cpu",
            observations=["body_velocities:/CartPole/Pole"], max_episode_steps=2, capture=capture,
            randomize={"/CartPole/PoleHinge.state:angular:physics:velocity": (-60, 60)},
        )  # fmt: skip
        env.captures_on_cpu = True
        out = [env.reset(seed=2)[0]]
        with monkeypatch.context() as m:
            m.setattr(wp.array, "numpy", numpy)
            out += [env.step(np.zeros((2, 1), np.float32))[0] for _ in range(5)]
        reason, captures = env.captures[0].eager_reason, env.captures[0].captures
        env.close()
        return np.stack(out), reason, captures

    eager, _, _ = run("off")
    captured, reason, captures = run("auto")
    assert (reason, captures) == (None, 1)
    np.testing.assert_allclose(captured, eager, atol=1e-5)


def test_a_callable_that_answers_on_the_host_is_not_frozen_into_the_graph():
    """With capture="all" the callables run once, inside the capture: a result made on the host (numpy) would be
    copied into the graph as it was then, and every replayed step would report that step's rewards. Such a step runs
    eagerly instead (said once), with the rewards of every step."""

    def host_reward(obs, actions, env):  # (reads the observations on the host: not a Warp launch)
        return host(obs)[:, 0] * 10.0

    rewards = {}
    for capture in ("off", "all"):
        env = StageVectorEnv(2, CARTPOLE, joints=["/CartPole/CartSlider"], solver="featherstone", device="cpu",
                             reward=host_reward, capture=capture)  # fmt: skip
        env.captures_on_cpu = True
        env.reset(seed=0)
        rewards[capture] = np.stack([env.step(np.full((2, 1), 20.0, np.float32))[1] for _ in range(4)])
        reason = env.captures[0].eager_reason
        env.close()
    assert "reward returned a ndarray inside a captured step" in reason, reason
    assert len(np.unique(rewards["off"][:, 0])) == 4  # (the cart moves: a new reward every step)
    np.testing.assert_allclose(rewards["all"], rewards["off"], rtol=1e-6)
