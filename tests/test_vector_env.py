"""Gymnasium vector environments over a stage's worlds (newton_usd.envs): make_vec as the issue shows it, batched
spaces, Gymnasium's autoreset modes, repeatable seeding, resets to the authored state, a keyframe or randomized
starts and model values (in place), observation fields by pattern, actions by prim pattern and their errors."""

import logging

import gymnasium
import numpy as np
import pytest
import warp as wp
from gymnasium.vector import AutoresetMode
from pxr import Sdf, Usd, Vt

import newton_usd.envs  # noqa: F401  (registers newton_usd/Stage-v0)
from newton_usd.envs import StageVectorEnv
from newton_usd.errors import NewtonUsdError

from conftest import SAMPLES
from stages import robot_environments

CARTPOLE = str(SAMPLES / "cartpole.usda")
SLIDER, HINGE = "/CartPole/CartSlider", "/CartPole/PoleHinge"


def balance_reward(obs, action, env):
    return 1.0 - obs[:, 1] ** 2


def fell(obs, env):
    return np.abs(obs[:, 1]) > 0.2


def ends_at_step(n):
    """Terminates every environment at its episode's ``n``-th step (the episode counter the env keeps)."""
    return lambda obs, env: env.episode_steps + 1 >= n


def cartpole(num_envs=4, **kw):
    kw.setdefault("joints", [SLIDER])
    return StageVectorEnv(num_envs, CARTPOLE, device="cpu", **kw)


def test_make_vec_as_the_issue_shows_it():
    env = gymnasium.make_vec("newton_usd/Stage-v0", num_envs=64, stage=CARTPOLE, joints=["/CartPole/CartSlider"],
                             actions="effort", reward=balance_reward, terminated=fell, max_episode_steps=500,
                             device="cpu")  # fmt: skip
    assert isinstance(env, gymnasium.vector.VectorEnv) and env.num_envs == 64
    assert env.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    assert env.single_action_space.shape == (1,) and env.action_space.shape == (64, 1)
    assert env.single_observation_space.shape == (4,) and env.observation_space.shape == (64, 4)
    # no force limit authored on the slider: unbounded actions
    assert np.isinf(env.single_action_space.high).all() and np.isinf(env.single_action_space.low).all()
    u = env.unwrapped
    assert u.observation_names == [f"q:{SLIDER}", f"q:{HINGE}", f"qd:{SLIDER}", f"qd:{HINGE}"]
    assert u.action_names == [SLIDER]
    assert u.sim.write is False and u.sim.record is False  # nothing goes onto the stage while training
    obs, info = env.reset(seed=0)
    assert obs.shape == (64, 4) and obs.dtype == np.float32 and info == {}
    np.testing.assert_allclose(obs[:, 1], np.radians(5.0), atol=1e-5)  # the authored start: 5 degrees off upright
    obs, reward, terminated, truncated, info = env.step(np.zeros((64, 1), np.float32))
    assert obs.shape == (64, 4) and reward.shape == (64,)
    assert terminated.dtype == np.bool_ and truncated.dtype == np.bool_
    np.testing.assert_allclose(reward, 1.0 - obs[:, 1] ** 2, rtol=1e-6)
    assert obs[0, 1] > np.radians(5.0)  # the pole falls
    # a force on the cart: pushed one way, the cart moves that way, the others not
    push = np.zeros((64, 1), np.float32)
    push[:32] = 20.0
    for _ in range(5):
        obs, *_ = env.step(push)
    assert (obs[:32, 0] > 0.01).all() and (np.abs(obs[32:, 0]) < 1e-3).all()
    env.close()


def test_next_step_autoreset_reports_the_reset_observation_with_zero_reward():
    env = cartpole(3, reward=lambda obs, a, env: np.full(3, 2.0), terminated=ends_at_step(2))
    first, _ = env.reset(seed=1)
    zero = np.zeros((3, 1), np.float32)
    for step in (1, 2):
        obs, reward, terminated, truncated, _ = env.step(zero)
        assert (reward == 2.0).all() and terminated.all() == (step == 2) and not truncated.any()
    final = obs.copy()
    assert not np.allclose(final, first)
    obs, reward, terminated, truncated, _ = env.step(zero)  # the autoreset step: the new episode's first obs
    np.testing.assert_allclose(obs, first, atol=1e-6)
    assert (reward == 0).all() and not terminated.any() and not truncated.any()
    assert (env.episode_steps == 0).all()
    obs, reward, terminated, *_ = env.step(zero)  # and the episode goes on from there
    assert (reward == 2.0).all() and not terminated.any() and (env.episode_steps == 1).all()
    env.close()


def test_an_eager_step_that_gives_warp_arrays_autoresets_as_on_the_cpu():
    """On CUDA the results are Warp arrays, and an eager step (capture="off") reads which environments finished from
    the device: the same observations and flags as the CPU's numpy path (the CUDA path run on the CPU here)."""
    runs = []
    for warp_out in (False, True):
        env = cartpole(2, solver="featherstone", capture="off", max_episode_steps=2)
        env._host = not warp_out  # (what a CUDA device sets: Warp arrays in and out)
        host = (lambda x: x.numpy()) if warp_out else np.asarray
        steps = [host(env.reset(seed=0)[0])]
        for _ in range(4):
            obs, _, _, truncated, _ = env.step(np.zeros((2, 1), np.float32))
            steps.append(np.concatenate([host(obs), host(truncated)[:, None]], axis=1))
        env.close()
        runs.append(steps)
    assert runs[0][2][:, -1].all() and not runs[0][3][:, -1].any()  # (truncated at step 2, reset at step 3)
    for eager, warp_out in zip(runs[0], runs[1], strict=True):
        np.testing.assert_allclose(warp_out, eager, atol=1e-6)


def test_same_step_autoreset_returns_the_final_observation_in_info():
    env = cartpole(2, terminated=ends_at_step(2), autoreset_mode="SameStep", max_episode_steps=10)
    assert env.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    first, _ = env.reset(seed=0)
    zero = np.zeros((2, 1), np.float32)
    obs, _, terminated, _, info = env.step(zero)
    assert not terminated.any() and info == {}
    before = obs.copy()
    obs, _, terminated, _, info = env.step(zero)
    assert terminated.all()
    np.testing.assert_allclose(obs, first, atol=1e-6)  # already the next episode's first observation
    assert info["_final_obs"].all() and info["final_obs"].dtype == object
    final = np.stack(info["final_obs"])
    assert (np.abs(final[:, 1]) > np.abs(before[:, 1])).all()  # the pole went on falling
    env.close()


def test_truncation_at_max_episode_steps_and_a_manual_reset_when_autoreset_is_disabled():
    env = cartpole(2, max_episode_steps=3, autoreset_mode=AutoresetMode.DISABLED)
    env.reset(seed=0)
    zero = np.zeros((2, 1), np.float32)
    flags = [env.step(zero)[3].tolist() for _ in range(3)]
    assert flags == [[False, False], [False, False], [True, True]]
    moved = env.step(zero)[0]  # (no autoreset: the episode goes on until reset)
    obs, _ = env.reset(options={"reset_mask": np.array([True, False])})
    np.testing.assert_allclose(obs[0, 1], np.radians(5.0), atol=1e-5)
    np.testing.assert_allclose(obs[1], moved[1])
    assert env.episode_steps.tolist() == [0, 4]
    env.close()


def test_a_reset_leaves_the_other_environments_bodies_as_stepped():
    """XPBD steps bodies: a reset of environment 0 puts its bodies where its new joint states say, and the others'
    stay as stepped, bit for bit (forward kinematics of their joint states, computed from the bodies, would move
    them: XPBD's bodies do not satisfy the joints exactly; a captured step, which runs its masked resets every step,
    drifted from an eager one so, 1e-4 in a joint velocity within 12 steps)."""
    env = cartpole(3, solver="xpbd", autoreset_mode=AutoresetMode.DISABLED)
    env.reset(seed=0)
    for _ in range(4):
        env.step(np.array([[20.0], [-20.0], [5.0]], np.float32))
    state = env.sim.device_state
    before = state.body_q.numpy().reshape(3, -1, 7).copy(), state.body_qd.numpy().reshape(3, -1, 6).copy()
    obs, _ = env.reset(options={"reset_mask": np.array([True, False, False])})
    after = state.body_q.numpy().reshape(3, -1, 7), state.body_qd.numpy().reshape(3, -1, 6)
    for b, a in zip(before, after, strict=True):
        np.testing.assert_array_equal(a[1:], b[1:])
        assert np.abs(a[0] - b[0]).max() > 1e-3
    np.testing.assert_allclose(obs[0], [0.0, np.radians(5.0), 0.0, 0.0], atol=1e-5)
    env.close()


def test_randomized_starts_are_repeatable_by_seed():
    kw = {"randomize": {f"{HINGE}.state:angular:physics:position": (-10, 10),
                        f"{SLIDER}.state:linear:physics:velocity": {"add": (-0.5, 0.5)}},
          "terminated": fell, "max_episode_steps": 50}  # fmt: skip
    env = cartpole(8, **kw)
    a, _ = env.reset(seed=7)
    assert (np.abs(a[:, 1]) <= np.radians(10) + 1e-6).all() and np.std(a[:, 1]) > 0.01
    assert (np.abs(a[:, 2]) <= 0.5).all() and np.std(a[:, 2]) > 0.01
    actions = np.random.default_rng(0).uniform(-5, 5, (40, 8, 1)).astype(np.float32)
    run_a = [env.step(x) for x in actions]
    b, _ = env.reset(seed=7)
    run_b = [env.step(x) for x in actions]
    np.testing.assert_array_equal(a, b)
    for (oa, ra, ta, _, _), (ob, rb, tb, _, _) in zip(run_a, run_b, strict=True):
        np.testing.assert_array_equal(oa, ob)
        np.testing.assert_array_equal(ra, rb)
        np.testing.assert_array_equal(ta, tb)
    assert any(step[2].any() for step in run_a)  # (autoresets drew new starts on the way)
    c, _ = env.reset(seed=8)
    assert not np.allclose(a, c)
    env.close()


def test_gymnasium_make_gives_an_env_that_passes_check_env():
    from gymnasium.utils.env_checker import check_env

    env = gymnasium.make("newton_usd/Stage-v0", stage=CARTPOLE, joints=[SLIDER], action_bounds=(-10, 10),
                         reward=balance_reward, terminated=fell, max_episode_steps=200, device="cpu",
                         randomize={f"{HINGE}.state:angular:physics:position": (-3, 3)})  # fmt: skip
    check_env(env.unwrapped)
    obs, _ = env.reset(seed=3)
    assert obs.shape == (4,) and env.action_space.shape == (1,) and env.action_space.high[0] == 10
    obs, reward, terminated, truncated, info = env.step(np.array([100.0], np.float32))  # (clipped to 10 N)
    assert isinstance(reward, float) and isinstance(terminated, bool)
    env.close()


def test_the_stages_own_environments_with_position_targets_and_observed_bodies():
    env = StageVectorEnv(
        None, robot_environments(n=3), env_root="/World/envs", actions="position", device="cpu",
        observations=["dof_positions:/World/envs/env_*/Robot", "body_poses:/World/envs/env_*/Robot/link2",
                      "root_poses:/World/envs/env_*/Robot"],
    )  # fmt: skip
    assert env.num_envs == 3
    assert env.action_names == [f"/World/envs/env_0/Robot/{j}" for j in ("shoulder", "elbow")]
    np.testing.assert_allclose(env.single_action_space.high, np.radians(90), rtol=1e-6)  # the joint limits
    assert env.observation_names[:2] == ["dof_positions:/World/envs/env_0/Robot/shoulder",
                                         "dof_positions:/World/envs/env_0/Robot/elbow"]  # fmt: skip
    assert env.observation_names[2:9] == [f"body_poses:/World/envs/env_0/Robot/link2:{c}"
                                          for c in ("px", "py", "pz", "qx", "qy", "qz", "qw")]  # fmt: skip
    obs, _ = env.reset(seed=0)
    np.testing.assert_allclose(obs[:, 2], [0.0, 2.0, 4.0], atol=1e-5)  # each environment at its own place
    targets = np.array([[0.3, -0.2], [0.0, 0.0], [-0.3, 0.2]], np.float32)
    for _ in range(120):
        obs, *_ = env.step(targets)
    np.testing.assert_allclose(obs[:, :2], targets, atol=0.05)  # the drives hold the targets
    body_q = env.sim.state.body_q.numpy()
    link2 = [env.sim.model.body_label.index(f"/World/envs/env_{e}/Robot/link2") for e in range(3)]
    np.testing.assert_allclose(obs[:, 2:9], body_q[link2], atol=1e-6)
    env.close()
    with pytest.raises(NewtonUsdError, match="num_envs=5, but the stage has 3 environments"):
        StageVectorEnv(5, robot_environments(n=3), env_root="/World/envs", device="cpu")


def test_mass_randomized_in_place_changes_the_dynamics_per_environment():
    env = cartpole(4, randomize={"/CartPole/Cart.physics:mass": {"scale": (0.5, 3.0)}})
    model = env.sim.model
    env.reset(seed=0)
    assert env.sim.model is model and env.sim.rebuilds == 0  # in place: never a re-import
    cart = [i for i, label in enumerate(model.body_label) if label == "/CartPole/Cart"]
    masses = model.body_mass.numpy()[cart]
    assert len(set(np.round(masses, 5))) == 4 and ((masses >= 0.5) & (masses <= 3.0)).all()
    np.testing.assert_allclose(model.body_inv_mass.numpy()[cart], 1 / masses, rtol=1e-6)
    for _ in range(3):
        obs, *_ = env.step(np.full((4, 1), 5.0, np.float32))
    # the same push: a lighter cart moves faster (cart and pole: about F t / (m_cart + 0.1))
    assert np.argsort(obs[:, 2]).tolist() == np.argsort(-masses).tolist()
    env.close()


def test_a_keyframe_start(tmp_path):
    stage = Usd.Stage.Open(CARTPOLE)
    layer = Sdf.Layer.CreateAnonymous()
    stage.GetSessionLayer().subLayerPaths.append(layer.identifier)
    stage.SetEditTarget(layer)
    key = stage.DefinePrim("/CartPole/Keyframes/held", "MjcKeyframe")
    key.CreateAttribute("mjc:qpos", Sdf.ValueTypeNames.DoubleArray).Set(Vt.DoubleArray([0.25, 0.0]))
    env = StageVectorEnv(2, stage, joints=[SLIDER], keyframe="held", device="cpu")
    obs, _ = env.reset(seed=0)
    np.testing.assert_allclose(obs[:, :2], [[0.25, 0.0]] * 2, atol=1e-6)
    env.close()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"joints": ["/CartPole/Nothing"]}, "no prim matches '/CartPole/Nothing'"),
        ({"joints": [SLIDER], "actions": "position"}, "CartSlider: position targets need a drive with a stiffness"),
        ({"joints": None}, "no DOF has a drive; name the DOFs to act on with joints="),
        ({"actions": "torque"}, "unknown actions 'torque'; valid: effort, position, velocity"),
        ({"observations": ["joint_angles:/CartPole"]}, "give 'field:/prim/pattern' with a field of dof_positions"),
        ({"randomize": {"/CartPole/Cart.physics:density": (1, 2)}}, "'physics:density' cannot be randomized"),
        ({"randomize": {"/CartPole/Nope.physics:mass": (1, 2)}}, "'/CartPole/Nope' matches no body"),
        ({"randomize": {f"{SLIDER}.state:angular:physics:position": (1, 2)}}, "CartSlider is not a revolute joint"),
        ({"randomize": {"/CartPole/Cart.physics:mass": (2, 1)}}, r"need finite low <= high, got \(2.0, 1.0\)"),
        ({"action_bounds": (1, -1)}, "low must not exceed high"),
    ],
)
def test_bad_arguments_say_what_is_wrong(kwargs, message):
    with pytest.raises(NewtonUsdError, match=message):
        cartpole(2, **kwargs)


def test_bad_actions_say_what_is_wrong():
    env = cartpole(2)
    with pytest.raises(NewtonUsdError, match="call reset"):
        env.step(np.zeros((2, 1)))
    env.reset(seed=0)
    with pytest.raises(NewtonUsdError, match=r"actions of shape \(3, 1\): expected \(2, 1\).*CartSlider"):
        env.step(np.zeros((3, 1)))
    with pytest.raises(NewtonUsdError, match=r"actions are NaN or infinite in environment\(s\) \[1\]"):
        env.step(np.array([[0.0], [np.nan]]))
    with pytest.raises(NewtonUsdError, match=r"reward returned shape \(3,\)"):
        env.reward_fn = lambda obs, a, env: np.zeros(3)
        env.step(np.zeros((2, 1)))
    env.close()


def test_nan_device_actions_are_written_as_zero_counted_and_said_at_close(caplog):
    """Actions given as a device array (what a CUDA policy hands over) are not read back: a NaN or infinite value is
    written as 0, as a zero action steps, counted in nan_actions, and close() says so, naming the DOFs."""
    runs = []
    for actions in (np.array([[np.nan], [np.inf]], np.float32), np.zeros((2, 1), np.float32)):
        env = cartpole(2)
        env.reset(seed=0)
        obs = env.step(wp.array(actions, dtype=wp.float32, device="cpu"))[0]
        runs.append((np.array(obs), env.nan_actions))
        with caplog.at_level(logging.WARNING, logger="newton_usd"):
            env.close()
    (bad_obs, bad_count), (zero_obs, zero_count) = runs
    assert (bad_count, zero_count) == (2, 0)
    np.testing.assert_array_equal(bad_obs, zero_obs)
    said = [r.getMessage() for r in caplog.records if "NaN or infinite" in r.getMessage()]
    assert len(said) == 1 and "2 action value(s)" in said[0] and "CartSlider" in said[0], said


def test_without_gymnasium_the_error_names_the_extra(tmp_path):
    import subprocess
    import sys

    code = ("import sys; sys.modules['gymnasium'] = None\n"
            "try:\n    import newton_usd.envs\nexcept Exception as e:\n    print(type(e).__name__, e)\n")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout
    assert "NewtonUsdError" in out and "newton_usd[envs]" in out


def test_contact_forces_observed_on_a_resting_robot():
    """The robots' free bases rest on the ground: the observed net contact force on each holds the whole robot's
    weight (a 2 kg base and two 0.5 kg links; MuJoCo reports the forces)."""
    env = StageVectorEnv(None, robot_environments(n=2), env_root="/World/envs", actions="position", device="cpu",
                         observations=["contact_forces:/World/envs/env_*/Robot/base"])  # fmt: skip
    assert env.observation_names == [f"contact_forces:/World/envs/env_0/Robot/base:f{c}" for c in "xyz"]
    env.reset(seed=0)
    for _ in range(40):
        obs, *_ = env.step(np.zeros((2, 2), np.float32))
    np.testing.assert_allclose(obs[:, 2], 9.81 * 3.0, rtol=0.02)
    np.testing.assert_allclose(obs[:, :2], 0.0, atol=0.05)
    env.close()
