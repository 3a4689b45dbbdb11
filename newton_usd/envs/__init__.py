"""Gymnasium environments over the worlds of a Simulation: any UsdPhysics stage as a vector environment.

``import newton_usd.envs`` registers ``newton_usd/Stage-v0``::

    import gymnasium
    import newton_usd.envs  # noqa: F401  (registers newton_usd/Stage-v0)

    env = gymnasium.make_vec("newton_usd/Stage-v0", num_envs=64, stage="sample_stages/cartpole.usda",
                             joints=["/CartPole/CartSlider"], actions="effort", reward=reward_fn,
                             terminated=terminated_fn, max_episode_steps=500)

``gymnasium.make("newton_usd/Stage-v0", stage=...)`` gives one environment (:class:`StageEnv`). Needs the
``envs`` extra (``pip install newton_usd[envs]``: Gymnasium). See docs/robot_learning.md.
"""

from __future__ import annotations

try:
    import gymnasium
except ImportError as e:  # (an extra, not a dependency of the core)
    from ..errors import NewtonUsdError

    raise NewtonUsdError(
        "newton_usd.envs needs Gymnasium: install the envs extra (pip install 'newton_usd[envs]', or "
        "pip install 'gymnasium>=1.0,<2')"
    ) from e

from .single_env import StageEnv
from .vector_env import StageVectorEnv

ENV_ID = "newton_usd/Stage-v0"

if ENV_ID not in gymnasium.registry:
    gymnasium.register(
        id=ENV_ID,
        entry_point="newton_usd.envs.single_env:StageEnv",
        vector_entry_point="newton_usd.envs.vector_env:StageVectorEnv",
    )

__all__ = ["ENV_ID", "StageEnv", "StageVectorEnv"]
