"""The Warp kernels of an environment step: actions into the Control, observations out of the State, the episode
bookkeeping and the resets of finished worlds. Launches only (no host read), so that a step can be one graph.

Per-environment tables are ``(num_envs, n)`` int32 arrays of flat scalar indices into the model's arrays (a
``wp.transform`` array read as 7 floats per element): one gather and one scatter serve every field.
"""

from __future__ import annotations

from typing import Any

import warp as wp


@wp.kernel
def write_actions(
    # In:
    actions: wp.array2d(dtype=wp.float32),
    low: wp.array(dtype=wp.float32),
    high: wp.array(dtype=wp.float32),
    index: wp.array2d(dtype=wp.int32),
    # Out:
    target: wp.array(dtype=wp.float32),
    bad: wp.array(dtype=wp.int32),
):
    """``target[index[e, a]] = clamp(actions[e, a], low[a], high[a])``; a NaN or infinite action is counted in
    ``bad[0]`` and written as 0 (it never reaches the solver)."""
    e, a = wp.tid()
    v = actions[e, a]
    if not wp.isfinite(v):
        wp.atomic_add(bad, 0, 1)
        v = 0.0
    target[index[e, a]] = wp.clamp(v, low[a], high[a])


@wp.kernel
def gather_columns(
    # In:
    src: wp.array(dtype=wp.float32),
    index: wp.array2d(dtype=wp.int32),
    offset: int,
    mask: wp.array(dtype=wp.bool),
    # Out:
    out: wp.array2d(dtype=wp.float32),
):
    """``out[e, offset + c] = src[index[e, c]]`` for the environments in ``mask``: one observation field into its
    columns."""
    e, c = wp.tid()
    if mask[e]:
        out[e, offset + c] = src[index[e, c]]


@wp.kernel
def episode_bookkeeping(
    # In:
    max_steps: int,
    next_step: int,
    # In/out:
    skip: wp.array(dtype=wp.bool),
    reward: wp.array(dtype=wp.float32),
    terminated: wp.array(dtype=wp.bool),
    elapsed: wp.array(dtype=wp.int32),
    # Out:
    truncated: wp.array(dtype=wp.bool),
    done: wp.array(dtype=wp.bool),
):
    """After a step's frames and the callables: an environment in ``skip`` (reset at this step, Gymnasium's next-step
    autoreset) reports reward 0, not terminated, not truncated, and starts its episode count; the others count a
    step and are truncated at ``max_steps`` (0: never). ``done`` = terminated or truncated; with ``next_step``,
    ``skip`` becomes ``done`` (the environments to reset at the next step)."""
    e = wp.tid()
    if skip[e]:
        reward[e] = 0.0
        terminated[e] = False
        truncated[e] = False
        elapsed[e] = 0
        done[e] = False
        skip[e] = False
        return
    n = elapsed[e] + 1
    elapsed[e] = n
    trunc = max_steps > 0 and n >= max_steps
    truncated[e] = trunc
    d = terminated[e] or trunc
    done[e] = d
    if next_step != 0:
        skip[e] = d


@wp.kernel
def reset_worlds(
    # In:
    mask: wp.array(dtype=wp.bool),
    draw: int,
    base: wp.array2d(dtype=wp.float32),
    columns: wp.array(dtype=wp.int32),
    op: wp.array(dtype=wp.int32),
    low: wp.array(dtype=wp.float32),
    high: wp.array(dtype=wp.float32),
    seed: wp.array(dtype=wp.int32),
    # In/out:
    draws: wp.array(dtype=wp.int32),
    start: wp.array2d(dtype=wp.float32),
    # Out:
    joint_q: wp.array(dtype=wp.float32),
    joint_qd: wp.array(dtype=wp.float32),
):
    """Each environment in ``mask`` takes its start row ``[q..., qd...]`` (``joint_q`` and ``joint_qd`` hold every
    world's, world after world); with ``draw``, a new start first: ``base``'s row with each randomized column drawn
    uniformly from ``[low, high)`` (``op`` 0: the value; 1: added to the base; 2: times the base). The draws of an
    environment depend on the seed, the environment and how many starts it drew before only (``draws``)."""
    e = wp.tid()
    if not mask[e]:
        return
    n = base.shape[1]
    if draw != 0:
        for i in range(n):
            start[e, i] = base[e, i]
        k = draws[e]
        draws[e] = k + 1
        rng = wp.rand_init(seed[0], (k * base.shape[0] + e) * 64)
        for r in range(columns.shape[0]):
            u = low[r] + (high[r] - low[r]) * wp.randf(rng)
            c = columns[r]
            if op[r] == 1:
                u = base[e, c] + u
            elif op[r] == 2:
                u = base[e, c] * u
            start[e, c] = u
    nq = joint_q.shape[0] // base.shape[0]
    for i in range(nq):
        joint_q[e * nq + i] = start[e, i]
    nv = n - nq
    for i in range(nv):
        joint_qd[e * nv + i] = start[e, nq + i]


@wp.kernel
def start_episodes(
    # In:
    mask: wp.array(dtype=wp.bool),
    # Out:
    elapsed: wp.array(dtype=wp.int32),
    skip: wp.array(dtype=wp.bool),
    done: wp.array(dtype=wp.bool),
):
    """The environments in ``mask`` were reset by hand: a new episode, nothing pending."""
    e = wp.tid()
    if mask[e]:
        elapsed[e] = 0
        skip[e] = False
        done[e] = False


@wp.kernel
def flags_from(values: wp.array(dtype=Any), out: wp.array(dtype=wp.bool)):
    """A callable's terminations (bool, int or float: non-zero) as flags."""
    e = wp.tid()
    out[e] = values[e] != values.dtype(0)


class Launches:
    """Recorded launches (``wp.launch(..., record_cmd=True)``), one per kernel, size and arguments, replayed at every
    step: packing a launch's arguments costs more than a small environment's kernels themselves on the CPU. An entry
    keeps its arrays alive (so that their ids name them); the cache is emptied when it grows past 256."""

    def __init__(self):
        self._cache = {}

    def __call__(self, kernel, dim, inputs, outputs, device) -> None:
        args = (*inputs, *outputs)
        key = (kernel.key, dim if isinstance(dim, int) else tuple(dim), *(id(a) if isinstance(a, wp.array) else a
                                                                          for a in args))  # fmt: skip
        hit = self._cache.get(key)
        if hit is None:
            if len(self._cache) > 256:
                self._cache.clear()
            cmd = wp.launch(kernel, dim=dim, inputs=list(inputs), outputs=list(outputs), device=device, record_cmd=True)
            hit = self._cache[key] = (cmd, args)
        hit[0].launch()
