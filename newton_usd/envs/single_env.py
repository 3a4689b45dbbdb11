"""StageEnv: one environment of a stage as a ``gymnasium.Env`` (``gymnasium.make("newton_usd/Stage-v0", ...)``)."""

from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode

from ..errors import NewtonUsdError
from .vector_env import StageVectorEnv


class StageEnv(gymnasium.Env):
    """A single environment: a :class:`~newton_usd.envs.StageVectorEnv` of one world without autoreset (reset it
    when an episode ends, as any ``gymnasium.Env``). Takes the vector environment's keyword arguments, but
    ``num_envs`` and ``autoreset_mode``; ``gymnasium.make(..., max_episode_steps=N)`` truncates with Gymnasium's
    ``TimeLimit`` wrapper, ``max_episode_steps`` given to the class itself here.

    Observations are float32 arrays ``(size,)``, actions ``(actions,)``, rewards floats, flags bools.
    """

    metadata = {"render_modes": []}

    def __init__(self, stage=None, render_mode=None, **kwargs):
        for name in ("num_envs", "autoreset_mode"):
            if name in kwargs:
                raise NewtonUsdError(f"{name} is not an argument of a single environment (StageVectorEnv takes it)")
        if render_mode is not None:
            raise NewtonUsdError(f"render_mode {render_mode!r}: a StageEnv does not render (usdsim view shows a "
                                 "recording)")  # fmt: skip
        if kwargs.get("env_root") is not None:
            raise NewtonUsdError("a single environment is one world: give the stage without env_root")
        self.vector = StageVectorEnv(1, stage, autoreset_mode=AutoresetMode.DISABLED, **kwargs)
        self.action_space = self.vector.single_action_space
        self.observation_space = self.vector.single_observation_space
        self.render_mode = None

    @property
    def sim(self):
        """The :class:`~newton_usd.sim.Simulation` the environment steps."""
        return self.vector.sim

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start over (the authored state or keyframe, randomized as asked); ``seed`` makes the draws repeatable.
        Returns ``(observation, info)``."""
        super().reset(seed=seed)
        self.vector.np_random = self.np_random  # (one generator: the vector environment's draws follow this Env's)
        obs, info = self.vector.reset(options=options)
        return obs[0], info

    def step(self, action):
        """Apply ``action`` (``(actions,)``) for ``frames_per_step`` frames. Returns ``(observation, reward,
        terminated, truncated, info)``."""
        a = np.asarray(action, dtype=np.float32)
        obs, reward, terminated, truncated, info = self.vector.step(a.reshape(1, -1))
        return obs[0], float(reward[0]), bool(terminated[0]), bool(truncated[0]), {}

    def close(self):
        """Close the Simulation (its output layer leaves the stage)."""
        self.vector.close()
