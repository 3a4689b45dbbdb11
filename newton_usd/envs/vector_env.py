"""StageVectorEnv: a Gymnasium vector environment whose sub-environments are the worlds of one Simulation.

A step is the story below, every part of it Warp launches over every environment at once (no loop over
environments in Python):

1. the actions into the Control (clipped to the bounds) and ``frames_per_step`` frames of the solver;
2. next-step autoreset: the environments that finished at the last step take the start drawn for them then;
3. the observations gathered into one ``(num_envs, size)`` array;
4. ``reward(obs, actions, env)`` and ``terminated(obs, env)``, the user's callables on the batched arrays (numpy
   views on the CPU, Warp arrays on CUDA: ``wp.to_torch`` shares them with torch without a copy);
5. the episode bookkeeping (truncation at ``max_episode_steps``) and the resets of the environments that finished:
   a new start drawn, applied at once (same-step autoreset: the observation is the new episode's first, the final
   one in ``info["final_obs"]``) or at the next step.

On a device where the solver's frames are a frame function (Newton's solvers, MuJoCo-Warp: ``simulates_frames``),
parts 1-3 and 5 are each one graph (:class:`~newton_usd.solvers.frame.FrameCapture`: captured once, replayed at
every step on CUDA), and with ``capture="all"`` the callables too (they must launch Warp kernels only): a step is
then one graph launch and nothing is read back. C MuJoCo steps on the host: its steps run eagerly.
"""

from __future__ import annotations

import logging

import numpy as np
import warp as wp
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ..errors import NewtonUsdError
from ..sim import Simulation
from ..solvers.frame import FrameCapture
from .actions import Actions
from .kernels import Launches, episode_bookkeeping, flags_from, start_episodes
from .observations import Observations
from .resets import ModelValues, Starts, split_randomize

logger = logging.getLogger("newton_usd")

CAPTURE = ("auto", "all", "off")


class StageVectorEnv(VectorEnv):
    """``num_envs`` environments of a USD stage, stepped as the worlds of one :class:`~newton_usd.sim.Simulation`.

    Made by ``gymnasium.make_vec("newton_usd/Stage-v0", num_envs=N, stage=..., ...)`` (after ``import
    newton_usd.envs``), or directly with the same keyword arguments.

    Args:
        num_envs: how many environments: copies of the stage's physics (``Simulation.open(worlds=N)``), or with
            ``env_root`` the stage's own environments (None: as many as it has; else it must be that many).
        stage: a USD file path or a ``Usd.Stage``.
        joints: prim patterns of the joints (or articulations) whose DOFs the actions drive (default: every DOF
            with a drive); see :class:`~newton_usd.envs.actions.Actions`.
        actions: "effort", "position" or "velocity".
        action_bounds: ``(low, high)`` (numbers or one per DOF) over the authored bounds.
        observations: None (every coordinate then every DOF velocity, ``[q..., qd...]``) or a list of
            ``"field:/prim/pattern"`` (see :mod:`~newton_usd.envs.observations`).
        reward: ``reward(obs, actions, env) -> (num_envs,)`` (None: 0).
        terminated: ``terminated(obs, env) -> (num_envs,)`` booleans (None: never; episodes end by truncation).
        max_episode_steps: steps after which an episode is truncated (None: never).
        frames_per_step: frames of the stage's clock per environment step (each ``substeps`` physics steps).
        keyframe: start from this keyframe (index, label or name) instead of the authored state.
        randomize: ``{"/prim/pattern.attribute": range}`` drawn at every reset (see :mod:`~newton_usd.envs.resets`).
        autoreset_mode: Gymnasium's ``AutoresetMode`` (or its value): NEXT_STEP (default), SAME_STEP or DISABLED
            (reset finished environments with ``reset(options={"reset_mask": mask})``).
        env_root: the parent of the stage's environment prims (``"/World/envs"``): one environment each.
        solver, solver_options, backend, device, fps, substeps: as :meth:`Simulation.open`.
        write_stage: run each frame through :meth:`Simulation.step_frame`: the blow-up and flung checks, and world
            0's poses onto the stage (to watch a policy; slower). Default False: the solver's steps only, nothing
            written, nothing recorded.
        copy: return copies of the observations and flags (default, as Gymnasium's vector environments); False:
            the environment's own arrays, overwritten at the next step.
        capture: "auto" (the step's own parts as graphs where the solver's frames allow), "all" (the callables
            too: they get Warp arrays, on the CPU as well, and launch Warp kernels only), "off" (every step eagerly).
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(
        self,
        num_envs: int | None = None,
        stage=None,
        *,
        joints=None,
        actions: str = "effort",
        action_bounds=None,
        observations=None,
        reward=None,
        terminated=None,
        max_episode_steps: int | None = None,
        frames_per_step: int = 1,
        keyframe=None,
        randomize: dict | None = None,
        autoreset_mode=AutoresetMode.NEXT_STEP,
        env_root: str | None = None,
        solver: str | None = None,
        solver_options: dict | None = None,
        backend: str | None = None,
        device=None,
        fps: float | None = None,
        substeps=None,
        write_stage: bool = False,
        copy: bool = True,
        capture: str = "auto",
    ):
        if stage is None:
            raise NewtonUsdError("newton_usd/Stage-v0 needs stage= (a USD file path or a Usd.Stage)")
        try:
            self.autoreset_mode = AutoresetMode(autoreset_mode)
        except ValueError:
            raise NewtonUsdError(f"unknown autoreset_mode {autoreset_mode!r}; valid: "
                                 f"{', '.join(m.value for m in AutoresetMode)}") from None  # fmt: skip
        if capture not in CAPTURE:
            raise NewtonUsdError(f"unknown capture {capture!r}; valid: {', '.join(CAPTURE)}")
        if int(frames_per_step) < 1:
            raise NewtonUsdError(f"frames_per_step must be at least 1, got {frames_per_step}")
        if max_episode_steps is not None and int(max_episode_steps) < 1:
            raise NewtonUsdError(f"max_episode_steps must be at least 1 (or None: never), got {max_episode_steps}")
        if num_envs is not None and int(num_envs) < 1:
            raise NewtonUsdError(f"num_envs must be at least 1, got {num_envs}")
        for name, fn in (("reward", reward), ("terminated", terminated)):
            if fn is not None and not callable(fn):
                raise NewtonUsdError(f"{name} must be a callable, got {type(fn).__name__}")
        starts, values = split_randomize(randomize)  # (bad keys before the slow import)
        worlds = 1 if env_root is not None else int(num_envs or 1)
        self.sim = sim = Simulation.open(
            stage, worlds=worlds, env_root=env_root, solver=solver, solver_options=solver_options, backend=backend,
            device=device, fps=fps, substeps=substeps, record=False, live=False,
        )  # fmt: skip
        try:
            self._build(sim, num_envs, joints, actions, action_bounds, observations, keyframe, starts, values)
        except BaseException:
            sim.close()
            raise
        self.metadata = {**type(self).metadata, "autoreset_mode": self.autoreset_mode}
        sim.write = bool(write_stage)
        self.write_stage = bool(write_stage)
        self.reward_fn, self.terminated_fn = reward, terminated
        self.max_episode_steps = int(max_episode_steps or 0)
        self.frames_per_step = int(frames_per_step)
        self.copy = bool(copy)
        self.capture = capture
        self.render_mode = None
        self._np_random = None
        self._host_rng = None
        self._needs_reset = True
        self.dt = sim.dt * sim.substeps * self.frames_per_step
        """Seconds of simulated time per environment step."""

    # ------------------------------------------------------------------ construction
    def _build(self, sim, num_envs, joints, actions, action_bounds, observations, keyframe, starts, values):
        model = sim.model
        n = model.num_worlds
        if num_envs is not None and int(num_envs) != n:
            raise NewtonUsdError(f"num_envs={num_envs}, but the stage has {n} environments under {sim.env_root}")
        self.num_envs = n
        self.device = model.device
        self.actions = Actions(sim, joints, actions, action_bounds)
        self.observations = Observations(sim, observations)
        base_q, base_qd = model.joint_q.numpy(), model.joint_qd.numpy()
        if keyframe is not None:
            k = sim.solver.keyframe_index(keyframe)
            base_q, base_qd = model.keyframe_joint_q[k], model.keyframe_joint_qd[k]
        self.starts = Starts(sim, base_q, base_qd, starts)
        self.model_values = ModelValues(sim, values)
        self.single_action_space = spaces.Box(self.actions.low, self.actions.high, dtype=np.float32)
        self.action_space = batch_space(self.single_action_space, n)
        size = self.observations.size
        self.single_observation_space = spaces.Box(-np.inf, np.inf, shape=(size,), dtype=np.float32)
        self.observation_space = batch_space(self.single_observation_space, n)
        device = self.device
        self._scratch = model.state()  # (the frames' second State: the Simulation's own are not touched)
        self._action_buf = wp.zeros((n, self.actions.size), dtype=wp.float32, device=device)
        self._obs = wp.zeros((n, size), dtype=wp.float32, device=device)
        self._final_obs = wp.zeros((n, size), dtype=wp.float32, device=device)
        self._reward = wp.zeros(n, dtype=wp.float32, device=device)
        self._terminated = wp.zeros(n, dtype=wp.bool, device=device)
        self._truncated = wp.zeros(n, dtype=wp.bool, device=device)
        self._done = wp.zeros(n, dtype=wp.bool, device=device)
        self._skip = wp.zeros(n, dtype=wp.bool, device=device)  # (next-step autoreset: reset at this step)
        self._all = wp.array(np.ones(n, dtype=bool), dtype=wp.bool, device=device)
        self._elapsed = wp.zeros(n, dtype=wp.int32, device=device)
        self._captures = (
            FrameCapture(device, "the environment's step (actions, frames, observations)"),
            FrameCapture(device, "the environment's step (episodes, resets)"),
        )
        # The solver computes body states from written joint states itself (Newton's solvers), or the observed
        # bodies are brought up to date here (MuJoCo: the next step would).
        self._solver_moves_bodies = sim.solver.follows_joint_writes
        self._host = device.is_cpu  # (numpy views of the buffers: zero-copy)
        self._views = {}  # id(buffer) -> (it, its numpy view): the buffers live as long as the environment
        self._launch = Launches()

    # ------------------------------------------------------------------ names, views of the buffers
    @property
    def action_names(self) -> list:
        """The DOF of each action column (its joint's prim path; ``:k`` for a multi-DOF joint's k-th)."""
        return list(self.actions.names)

    @property
    def observation_names(self) -> list:
        """What each observation column is."""
        return list(self.observations.names)

    @property
    def nan_actions(self) -> int:
        """How many action values given as device arrays (Warp arrays, tensors) were NaN or infinite since the
        environment was made: each was written as 0 (never reaching the solver). Reading it waits for the device;
        :meth:`close` warns when it is not 0. Actions given as numpy with such values raise at :meth:`step`."""
        return int(self.actions.bad.numpy()[0])

    @property
    def episode_steps(self):
        """Steps of each environment's current episode (numpy on the CPU, a Warp array on CUDA)."""
        return self._out(self._elapsed)

    @property
    def np_random(self) -> np.random.Generator:
        """The generator every draw of the resets follows (made from ``reset(seed=...)``, else unseeded)."""
        if self._np_random is None:
            self._np_random, self._np_random_seed = seeding.np_random()
        return self._np_random

    @np_random.setter
    def np_random(self, value):
        self._np_random = value

    def _out(self, array):
        """A buffer as the callables and the results take it: a numpy view on the CPU, the Warp array on CUDA."""
        if not self._host:
            return array
        hit = self._views.get(id(array))
        if hit is None or hit[0] is not array:
            hit = self._views[id(array)] = (array, array.numpy())
        return hit[1]

    # ------------------------------------------------------------------ reset
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start every environment (or those of ``options["reset_mask"]``, a bool array) over: the authored state or
        keyframe, randomized as asked. ``seed`` makes the draws repeatable (every later reset and autoreset
        follows from it). Returns ``(observations, info)``."""
        if seed is not None:
            if not isinstance(seed, (int, np.integer)):
                raise NewtonUsdError(f"seed must be an int or None, got {seed!r}")
            self._np_random, self._np_random_seed = seeding.np_random(int(seed))
        rng = self.np_random
        self.starts.reseed(int(rng.integers(0, 2**31 - 1)))
        self._host_rng = np.random.default_rng(int(rng.integers(0, 2**63 - 1)))
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if options:
            raise NewtonUsdError(f"unknown reset options {sorted(options)}; valid: reset_mask")
        if mask is None:
            mask_wp, worlds = self._all, np.arange(self.num_envs)
        else:
            mask = np.asarray(mask)
            if mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
                raise NewtonUsdError(f"reset_mask must be a bool array of shape ({self.num_envs},), got {mask.dtype} "
                                     f"{mask.shape}")  # fmt: skip
            mask_wp, worlds = wp.array(mask, dtype=wp.bool, device=self.device), np.nonzero(mask)[0]
        self.model_values.apply(worlds, self._host_rng)
        if self.model_values.terms:
            self._invalidate("model values randomized")
        state = self.sim.device_state
        self.starts.reset(state, mask_wp)
        self._joint_states_written(state, mask_wp)
        wp.launch(start_episodes, dim=self.num_envs, inputs=[mask_wp], outputs=[self._elapsed, self._skip, self._done],
                  device=self.device)  # fmt: skip
        self.observations.gather(state, self._obs)
        self._needs_reset = False
        obs = self._out(self._obs)
        return (obs.copy() if self._host else wp.clone(obs) if self.copy else obs), {}

    def _joint_states_written(self, state, mask) -> None:
        """After starts were written into ``state``: the rest of the state follows (the solver's bodies, or the
        observed bodies here), and a Simulation stepping frames measures the flung check from there."""
        solver = self.sim.solver
        solver.joint_states_written(state, mask)  # (the other environments' bodies left as they were stepped)
        solver.reset_actuators(mask)  # (every caller is a reset: a PID's integral, a delay's history start over)
        if not self._solver_moves_bodies and self.observations.body_fields:
            self.observations.bodies_from_joints(self.sim.model, state, mask)
        if self.write_stage:
            self.sim.restart_flung_check()

    # ------------------------------------------------------------------ step
    def step(self, actions):
        """Apply ``actions`` (``(num_envs, actions)``: numpy, a Warp array, or anything with DLPack) for
        ``frames_per_step`` frames. Returns ``(observations, rewards, terminated, truncated, info)``."""
        if self._needs_reset:
            raise NewtonUsdError("call reset() before the first step()")
        self.actions.load(actions, self._action_buf)
        self._run_step()
        if self.model_values.terms and self.autoreset_mode != AutoresetMode.DISABLED:
            worlds = np.nonzero(self._done.numpy())[0]  # (read back on CUDA: the model's values are drawn on the host)
            if len(worlds):
                self.model_values.apply(worlds, self._host_rng)
                self._invalidate("model values randomized")
        return self._results()

    def _run_step(self) -> None:
        """Parts 1-5 of a step (see the module): eagerly, or as graphs (see :attr:`capture`)."""
        first, second = self._captures
        if not self._captured():
            self._act_and_observe()
            self._call()
            self._episodes_and_resets()
        elif self.capture == "all":
            first.run(self._key(), self._whole_step)
        else:
            key = self._key()
            first.run(key, self._act_and_observe)
            self._call()
            second.run(key, self._episodes_and_resets)
        if not self.write_stage:  # (the host's count, once per step: a replayed graph runs the kernels only)
            self.sim.clock.advance(self.sim.substeps * self.frames_per_step, self.frames_per_step)

    def _whole_step(self) -> None:
        self._act_and_observe()
        self._call()
        self._episodes_and_resets()

    def _act_and_observe(self) -> None:
        sim = self.sim
        self.actions.write(self._action_buf, sim.control)
        self._frames()
        if self.autoreset_mode == AutoresetMode.NEXT_STEP and self._any(self._skip):
            self.starts.reset(sim.device_state, self._skip, draw=False)
            self._joint_states_written(sim.device_state, self._skip)
        self.observations.gather(sim.device_state, self._obs)

    def _call(self) -> None:
        """The user's reward and termination callables, their results into the environment's arrays (Warp arrays in
        where the callables are captured: numpy would run once, at the capture)."""
        if self.capture == "all":
            obs, act = self._obs, self._action_buf
        else:
            obs, act = self._out(self._obs), self._out(self._action_buf)
        if self.reward_fn is None:
            self._reward.zero_()
        else:
            self._store(self._reward, self.reward_fn(obs, act, self), "reward")
        if self.terminated_fn is None:
            self._terminated.zero_()
        else:
            self._store(self._terminated, self.terminated_fn(obs, self), "terminated")

    def _episodes_and_resets(self) -> None:
        n, device = self.num_envs, self.device
        mode = self.autoreset_mode
        self._launch(
            episode_bookkeeping, n, (self.max_episode_steps, int(mode == AutoresetMode.NEXT_STEP)),
            (self._skip, self._reward, self._terminated, self._elapsed, self._truncated, self._done), device,
        )  # fmt: skip
        if mode == AutoresetMode.DISABLED:
            return
        state = self.sim.device_state
        if mode == AutoresetMode.SAME_STEP:
            wp.copy(self._final_obs, self._obs)
        if self._any(self._done):
            self.starts.reset(state, self._done)
            self._joint_states_written(state, self._done)
            if mode == AutoresetMode.SAME_STEP:
                self.observations.gather(state, self._obs, mask=self._done)

    def _any(self, mask) -> bool:
        """Whether any environment is in ``mask``: read on the host in an eager step (a copy on CUDA; skipping the
        launches when none is); always True where the step is captured (the kernels are masked)."""
        if self._captured():
            return True
        return bool((self._out(mask) if self._host else mask.numpy()).any())

    def _frames(self) -> None:
        """``frames_per_step`` frames: the solver's steps (or frame function), or the Simulation's frames with
        ``write_stage`` (which count themselves; the others are counted by :meth:`_run_step`)."""
        sim = self.sim
        if self.write_stage:
            for _ in range(self.frames_per_step):
                sim.step_frame()
            return
        solver, n = sim.solver, sim.substeps * self.frames_per_step
        if getattr(solver, "simulates_frames", False):
            solver.simulate_frame(sim.device_state, self._scratch, sim.control, sim.dt, n)
        else:
            a, b = sim.device_state, self._scratch
            for _ in range(n):
                solver.step(a, b, sim.control, None, sim.dt)
                a, b = b, a
            sim.state, self._scratch = a, b

    # ------------------------------------------------------------------ capture
    def _captured(self) -> bool:
        """Whether the step's parts run through the captures: a solver whose frames are a frame function, not the
        Simulation's frames, no contact forces observed, capture not off, and a CUDA device (or the CPU graphs the
        tests ask for)."""
        if self.capture == "off" or self.write_stage or not getattr(self.sim.solver, "simulates_frames", False):
            return False
        if self.observations.contacts:  # (the solver's contacts are read on the host)
            return False
        first = self._captures[0]
        if not (first.device.is_cuda or first.cpu_graphs) or first.eager_reason is not None:
            return False
        solver_capture = getattr(self.sim.solver, "frame_capture", None)
        if solver_capture is not None and solver_capture.eager_reason is None:
            solver_capture.never_capture("the environment captures its whole step")  # (no graph inside a graph)
        return True

    @property
    def captures(self) -> tuple:
        """The :class:`~newton_usd.solvers.frame.FrameCapture` of the step's parts (before and after the callables;
        with ``capture="all"`` the first holds the whole step): their counts say what was captured and replayed."""
        return self._captures

    @property
    def captures_on_cpu(self) -> bool:
        """Run the captured path on Warp's CPU device too (Warp records and replays the launches there): the tests'
        way to exercise it without a GPU."""
        return self._captures[0].cpu_graphs

    @captures_on_cpu.setter
    def captures_on_cpu(self, value: bool) -> None:
        for c in self._captures:
            c.cpu_graphs = bool(value)

    def _key(self) -> tuple:
        sim = self.sim
        arrays = [*vars(sim.device_state).values(), *vars(self._scratch).values(), *vars(sim.control).values()]
        return (tuple(id(a) for a in arrays if isinstance(a, wp.array)), id(sim.model), id(sim.solver), sim.dt,
                sim.substeps, self.frames_per_step, self.max_episode_steps, self.autoreset_mode)  # fmt: skip

    def _invalidate(self, reason: str) -> None:
        for c in self._captures:
            c.invalidate(reason)

    # ------------------------------------------------------------------ results
    def _results(self):
        obs, reward = self._out(self._obs), self._out(self._reward)
        terminated, truncated = self._out(self._terminated), self._out(self._truncated)
        info = {}
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            done = self._out(self._done)
            if self._host:
                if done.any():
                    final = np.full(self.num_envs, None, dtype=object)
                    final_obs = self._out(self._final_obs)
                    for e in np.nonzero(done)[0]:
                        final[e] = final_obs[e].copy()
                    info = {"final_obs": final, "_final_obs": done.copy(), "final_info": {},
                            "_final_info": done.copy()}  # fmt: skip
            else:
                info = {"final_obs": wp.clone(self._final_obs), "_final_obs": wp.clone(self._done)}
        if self._host:
            if self.copy:
                return obs.copy(), reward.copy(), terminated.copy(), truncated.copy(), info
            return obs, reward, terminated, truncated, info
        if self.copy:
            return wp.clone(obs), wp.clone(reward), wp.clone(terminated), wp.clone(truncated), info
        return obs, reward, terminated, truncated, info

    def close_extras(self, **kwargs) -> None:
        """Close the Simulation (its output layer leaves the stage); ``close()`` calls it once. Says how many device
        actions were NaN or infinite (:attr:`nan_actions`), if any."""
        bad = self.nan_actions
        if bad:
            logger.warning("%s: %d action value(s) given as device arrays were NaN or infinite and were written as 0 "
                           "(columns: %s)", self.sim.source_file, bad, ", ".join(self.actions.names))  # fmt: skip
        self.sim.close()

    def _store(self, target: wp.array, values, what: str) -> None:
        """A callable's result (numpy, a Warp array, anything with DLPack; ``(num_envs,)``) into ``target``."""
        n = self.num_envs
        if self.device.is_capturing and not (  # (capture="all": only a Warp launch's result is replayed anew)
            isinstance(values, wp.array)
            and values.device == target.device
            and (target.dtype == wp.bool or values.dtype == target.dtype)
        ):
            raise NewtonUsdError(
                f"{what} returned a {type(values).__name__} inside a captured step (capture='all'), not a Warp array "
                f"of {target.dtype.__name__} on {target.device} made by Warp launches: values made on the host (or "
                "outside Warp's graph) would be repeated at every replay; use capture='auto', or Warp launches only"
            )
        if isinstance(values, wp.array) or (hasattr(values, "__dlpack__") and not isinstance(values, np.ndarray)):
            arr = values if isinstance(values, wp.array) else wp.from_dlpack(values)
            if arr.shape != (n,):
                raise NewtonUsdError(f"{what} returned shape {tuple(arr.shape)}: expected ({n},), one per environment")
            if arr.device != target.device:  # (e.g. a CPU tensor for a CUDA environment: copied over)
                arr = arr.to(target.device)
            if target.dtype == wp.bool:
                wp.launch(flags_from, dim=n, inputs=[arr], outputs=[target], device=target.device)
            elif arr.dtype == target.dtype:
                wp.copy(target, arr)
            else:
                target.assign(arr.numpy().astype(np.float32))
            return
        a = np.asarray(values)
        if a.shape == () and n == 1:
            a = a.reshape(1)
        if a.shape != (n,):
            raise NewtonUsdError(f"{what} returned shape {a.shape}: expected ({n},), one per environment")
        if target.dtype == wp.bool:
            a = a.astype(bool)
        else:
            a = a.astype(np.float32)
            if not np.isfinite(a).all():
                raise NewtonUsdError(f"{what} returned NaN or infinity in environment(s) "
                                     f"{np.nonzero(~np.isfinite(a))[0][:8].tolist()}")  # fmt: skip
        if self._host:
            self._out(target)[...] = a
        else:
            target.assign(a)
