"""Proof that it learns: the cart-pole sample stage as 64 Gymnasium environments, trained to balance by random search
(each environment runs a perturbed linear policy, antithetic pairs; the policy moves along the better directions),
in numpy on the CPU: episodes become at least 3 times longer than the random policy's. Fixed seeds; the assertion
is on the improvement, never on the time taken."""

import numpy as np
import pytest

import newton_usd.envs  # noqa: F401
from newton_usd.envs import StageVectorEnv

from conftest import SAMPLES

CARTPOLE = str(SAMPLES / "cartpole.usda")
MAX_STEPS = 250
PAIRS = 32  # 64 environments: a +delta and a -delta policy per direction


def fell(obs, env):
    return (np.abs(obs[:, 1]) > 0.2) | (np.abs(obs[:, 0]) > 1.5)


def episode_lengths(env, policies, seed):
    """Each environment's first episode length under its own linear policy ``(num_envs, 4)``: force = policy . obs."""
    obs, _ = env.reset(seed=seed)
    lengths = np.zeros(env.num_envs, dtype=int)
    running = np.ones(env.num_envs, dtype=bool)
    for t in range(MAX_STEPS):
        force = np.einsum("ij,ij->i", policies, obs)[:, None].astype(np.float32)
        obs, _, terminated, truncated, _ = env.step(force)
        ended = running & (terminated | truncated)
        lengths[ended] = t + 1
        running &= ~ended
        if not running.any():
            break
    return lengths


def train(iterations=10, step_size=1.5, noise=1.0, seed=0, log=print):
    env = StageVectorEnv(
        2 * PAIRS, CARTPOLE, joints=["/CartPole/CartSlider"], action_bounds=(-30, 30), device="cpu",
        reward=lambda obs, action, env: np.ones(env.num_envs, np.float32), terminated=fell,
        max_episode_steps=MAX_STEPS,
        randomize={"/CartPole/PoleHinge.state:angular:physics:position": (-3, 3),
                   "/CartPole/CartSlider.state:linear:physics:position": (-0.1, 0.1)},
    )  # fmt: skip
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 0.5, 4)  # the random policy training starts from
    curve = []
    for it in range(iterations + 1):
        mean_length = episode_lengths(env, np.tile(theta, (env.num_envs, 1)), seed=1000 + it).mean()
        curve.append(mean_length)
        log(f"iteration {it:2d}: mean episode {mean_length:6.1f} steps, policy {np.round(theta, 2).tolist()}")
        if it == iterations:
            break
        deltas = rng.normal(0.0, 1.0, (PAIRS, 4))
        policies = theta + noise * np.concatenate([deltas, -deltas])
        lengths = episode_lengths(env, policies, seed=it).astype(float)
        plus, minus = lengths[:PAIRS], lengths[PAIRS:]
        spread = np.concatenate([plus, minus]).std() or 1.0
        theta = theta + step_size / (PAIRS * spread) * ((plus - minus) @ deltas)
    env.close()
    return curve


@pytest.mark.soak  # (a policy search of many episodes: half a minute and more on 2 cores; .ci/run's second step)
def test_random_search_learns_to_balance_the_cartpole():
    curve = train()
    assert curve[-1] >= 3 * curve[0], curve
    assert max(curve) >= 0.9 * MAX_STEPS, curve  # (some policy on the way held the pole for the whole episode)
