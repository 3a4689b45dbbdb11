"""The cpu backend's engines: C MuJoCo on one ``MjData`` (one world) or a ``mujoco.batch.Batch`` (worlds).

Both expose the same ``(num_worlds, ...)`` numpy views over the engine's memory: the state they step
(``qpos``, ``qvel``, ``act``, ``ctrl``, ``qfrc_applied``, ``mocap_pos``, ``mocap_quat``; a write is the state
of the next step) and the derived fields the solver reads (``body``: ``xpos``, ``xquat``, ``xipos``,
``cvel``, ``subtree_com``; ``xmat``, ``qLD``, ``qLDiagInv``, ``cdof``, the warning counters and ``warnings_raw``, a
contiguous view of all the warnings' memory). Every step ends with
MuJoCo's position and velocity stages at the new state, so the derived fields are those of the new
state, and the next step starts from them: a step costs one ``mj_step``.

``snapshot_parts`` are the ``(num_worlds, n)`` views a copy of the state is made of (:mod:`~.mujoco.exchange`), and
``columns`` where qpos, qvel, mocap_pos and mocap_quat lie in them: ``(part, columns)``.
"""

from __future__ import annotations

import os

import mujoco
import numpy as np

from ...errors import SimulationError

BODY_FIELDS = ("xpos", "xquat", "xipos", "cvel", "subtree_com")
_VEL = int(mujoco.mjtStage.mjSTAGE_VEL)


class DataEngine:
    """One world on one ``MjData``, stepped as ``mj_step2`` then ``mj_step1``: the same computations as
    ``mj_step`` (bit for bit), but the position and velocity stages are computed at the new state, at the
    end of the step rather than at the start of the next. RK4 needs ``mj_step`` (``mj_step2`` integrates with
    Euler), so the solver gives such a model a batch."""

    batch = None

    def __init__(self, mj_model):
        self.model = mj_model
        self.data = d = mujoco.MjData(mj_model)
        self.qpos, self.qvel, self.act = d.qpos[None], d.qvel[None], d.act[None]
        self.ctrl, self.qfrc_applied = d.ctrl[None], d.qfrc_applied[None]
        self.xfrc_applied = d.xfrc_applied[None]
        self.mocap_pos, self.mocap_quat = d.mocap_pos[None], d.mocap_quat[None]
        self.eq_active = d.eq_active[None]
        self.body = tuple(getattr(d, n)[None] for n in BODY_FIELDS)
        self.xmat, self.qLD, self.qLDiagInv = d.xmat[None], d.qLD[None], d.qLDiagInv[None]
        self.cdof = d.cdof[None]
        self.warning_counts, self.warning_info = d.warning.number[None], d.warning.lastinfo[None]
        # The whole mjWarningStat array ({int lastinfo; int number} per warning) as one contiguous view: its
        # bytes change when a counter does, and compare faster than the strided counters.
        nwarn = len(self.warning_info[0])
        lastinfo = self.warning_info[0]
        self.warnings_raw = np.lib.stride_tricks.as_strided(lastinfo, (2 * nwarn,), (lastinfo.itemsize,))
        if self.warnings_raw[1::2].ctypes.data != self.warning_counts.ctypes.data or lastinfo.strides[0] != 8:
            raise RuntimeError("MjData.warning is not the mjWarningStat array expected")
        nq, nv, nmocap = mj_model.nq, mj_model.nv, mj_model.nmocap
        self.snapshot_parts = (self.qpos, self.qvel)
        self.columns = {"qpos": (0, slice(0, nq)), "qvel": (1, slice(0, nv))}
        if nmocap:
            self.snapshot_parts += (self.mocap_pos.reshape(1, -1), self.mocap_quat.reshape(1, -1))
            self.columns |= {"mocap_pos": (2, slice(0, 3 * nmocap)), "mocap_quat": (3, slice(0, 4 * nmocap))}
        self.stale = True  # the state was written since the position and velocity stages were computed

    def set_models(self, models, stages: bool = True) -> None:
        """Step with ``models`` (one MjModel, or a list of one); ``stages``: whether the edit can change the
        position and velocity stages (then the next step recomputes them first)."""
        self.model = models if isinstance(models, mujoco.MjModel) else models[0]
        self.stale |= stages

    def forward(self) -> None:
        """The position and velocity stages at the current state."""
        mujoco.mj_step1(self.model, self.data)
        self.stale = False

    def constraints_changed(self) -> None:
        """Which constraints are active changed (``eq_active``): the next step makes them anew first."""
        self.stale = True

    def step(self) -> None:
        m, d = self.model, self.data
        try:
            if self.stale:
                mujoco.mj_step1(m, d)
            mujoco.mj_step2(m, d)
            mujoco.mj_step1(m, d)
        except mujoco.FatalError as e:
            raise SimulationError(f"MuJoCo failed: {e}") from None
        self.stale = False

    def get_data(self, world: int, out) -> None:
        """Copy the world's whole MjData into ``out``."""
        mujoco.mj_copyData(out, self.model, self.data)


class BatchEngine:
    """Every world a simulation of a persistent ``mujoco.batch.Batch`` (one MjData each, stepped on a C
    thread pool), its state rows bound as ``(num_worlds, ...)`` arrays. The batch continues each step from
    the stages it computed at the end of the last (``stage=mjSTAGE_VEL``)."""

    def __init__(self, mj_model, num_worlds: int):
        from mujoco import batch  # noqa: PLC0415

        self._error = batch.SimulationError
        threads = min(num_worlds, os.cpu_count() or 1)
        self.batch = b = batch.Batch(mj_model, nsim=num_worlds, nthread=threads, persistent=True)
        self.qpos, self.qvel, self.act = b.bind("qpos"), b.bind("qvel"), b.bind("act")
        self.ctrl, self.qfrc_applied = b.bind("ctrl"), b.bind("qfrc_applied")
        self.xfrc_applied = b.bind("xfrc_applied")
        self.mocap_pos, self.mocap_quat = b.bind("mocap_pos"), b.bind("mocap_quat")
        self.eq_active = b.bind("eq_active")
        self.body = tuple(b.bind(n) for n in BODY_FIELDS)
        self.xmat, self.qLD, self.qLDiagInv = b.bind("xmat"), b.bind("qLD"), b.bind("qLDiagInv")
        self.cdof = b.bind("cdof")
        self.warning_counts, self.warning_info = b.warning[:, :, 1], b.warning[:, :, 0]  # (views)
        self.warnings_raw = b.warning  # (contiguous: its bytes change when a counter does)
        # The rows are mjSTATE_INTEGRATION states: components side by side in the order of their bits.
        S = mujoco.mjtState
        self.snapshot_parts = (b.state,)
        self.columns = {}
        for name, component in (
            ("qpos", S.mjSTATE_QPOS),
            ("qvel", S.mjSTATE_QVEL),
            ("mocap_pos", S.mjSTATE_MOCAP_POS),
            ("mocap_quat", S.mjSTATE_MOCAP_QUAT),
        ):
            start = mujoco.mj_stateSize(mj_model, int(S.mjSTATE_INTEGRATION) & (int(component) - 1))
            self.columns[name] = (0, slice(start, start + mujoco.mj_stateSize(mj_model, int(component))))
        if b.state.shape[1] != mujoco.mj_stateSize(mj_model, int(S.mjSTATE_INTEGRATION)) or (
            b.state[:, self.columns["qvel"][1]].ctypes.data != self.qvel.ctypes.data
        ):
            raise RuntimeError("mujoco.batch.Batch.state rows are not the mjSTATE_INTEGRATION states expected")
        self.stale = False  # (the batch keeps track of its own stages: only forward() reads it)

    def set_models(self, models, stages: bool = True) -> None:
        self.batch.set_models(models)

    def forward(self) -> None:
        self.batch.forward(stage=_VEL)
        self.stale = False

    def constraints_changed(self) -> None:
        """Which constraints are active changed (``eq_active``): the stages again, at once."""
        self.forward()

    def step(self) -> None:
        try:
            self.batch.step(stage=_VEL)
        except self._error as e:
            raise SimulationError(f"MuJoCo failed: {e}") from None
        self.stale = False

    def get_data(self, world: int, out) -> None:
        self.batch.get_data(world, out)
