"""ParticleView: the points of matched particle prims (cloth, soft volumes, grains), one row per matched prim."""

from __future__ import annotations

import numpy as np
import warp as wp

from ..core.quat import quat_conjugate, quat_rotate
from ..errors import NewtonUsdError
from .pattern import match_prims, under
from .view import View


class ParticleRows:
    """The rows of a particle view: one per matched prim and world (worlds first, as the other views), its particles
    (every particle prim at or below the matched prim, in model order) as its columns."""

    def __init__(self, model, pattern: str):
        runs = model.particle_runs
        labels = list(dict.fromkeys(label for label, *_ in runs))
        paths = match_prims(pattern, labels)
        if not paths:
            raise NewtonUsdError(
                f"no prim matches {pattern!r} among the model's particle prims (cloth, soft volumes, grains"
                f"{': ' + ', '.join(labels) if labels else ': the model has none'})"
            )
        rows, elements, prims = [], [], []
        for w in range(model.num_worlds):
            for path in paths:
                mine = sorted(
                    (first, end, label) for label, first, end, world in runs if world == w and under(label, path)
                )
                if mine:
                    rows.append((w, path))
                    elements.append([p for first, end, _ in mine for p in range(first, end)])
                    prims.append([label for *_, label in mine])
        counts = {len(e) for e in elements}
        if len(counts) != 1:
            sizes = ", ".join(f"{p}: {len(e)}" for (_, p), e in zip(rows, elements, strict=True))
            raise NewtonUsdError(
                f"{pattern!r}: the matched prims hold different numbers of points ({sizes}); a view needs the same "
                "structure in every row (make a view per prim)"
            )
        self.pattern = pattern
        self.rows = rows
        self.paths = [p for _, p in rows]
        self.prims = prims
        self.count = len(rows)
        self.world = np.array([w for w, _ in rows], dtype=np.int32)
        self.columns = {"particle": np.array(elements, dtype=np.int64).reshape(self.count, -1)}


class ParticleView(View):
    """Particle prims selected by prim pattern (``"/World/Cloth*"``): a row per matched prim and world (worlds first,
    then paths), its points as columns (every cloth, soft volume or grain prim at or below the matched prim, in model
    order; the same number in every row). Positions and velocities ``(count, points, 3)``, world frame, SI (m, m/s,
    Z up), as the State holds them and as the other views give poses; a write goes into the State and the next step
    goes on from it. :meth:`points_to_stage` turns positions into the stage's units and up axis. See
    :class:`ArticulationView` for the arguments and the ``indices`` of writes.
    """

    def _sync(self):
        model = self._source.model
        if model is self._model:
            return model
        self._model = model
        self._rows = ParticleRows(model, self.pattern)
        self._tables = {}
        self._flats = {}
        self._all_rows = wp.array(np.arange(self._rows.count, dtype=np.int32), device=model.device)
        return model

    @property
    def point_count(self) -> int:
        """Points in each row."""
        return int(self.columns("particle").shape[1])

    @property
    def particle_paths(self) -> list:
        """The particle prims of each row (the prims whose points its columns are, in order)."""
        self._sync()
        return [list(p) for p in self._rows.prims]

    # ------------------------------------------------------------------ state
    def get_positions(self) -> wp.array:
        """The rows' points ``(count, points, 3)`` (m, world frame, Z up)."""
        return self._gather(self._source.state.particle_q, "particle")

    def set_positions(self, values, indices=None) -> None:
        """Move the rows' points (``(count or len(indices), points, 3)``, m, world frame); the next step starts
        there (a soft body's rest shape stays the authored one)."""
        self._scatter(self._source.state.particle_q, "particle", values, indices)

    def get_velocities(self) -> wp.array:
        """The rows' point velocities ``(count, points, 3)`` (m/s, world frame)."""
        return self._gather(self._source.state.particle_qd, "particle")

    def set_velocities(self, values, indices=None) -> None:
        self._scatter(self._source.state.particle_qd, "particle", values, indices)

    # ------------------------------------------------------------------ model values
    def get_masses(self) -> wp.array:
        """Each point's mass ``(count, points)`` (kg)."""
        return self._gather(self._source.model.particle_mass, "particle")

    def get_radii(self) -> wp.array:
        """Each point's contact radius ``(count, points)`` (m)."""
        return self._gather(self._source.model.particle_radius, "particle")

    def get_attribute(self, name: str, where: str | None = None, kind: str | None = None) -> wp.array:
        """Any per-particle array of the State or Model (``particle_q``, a user's ``particle_temperature``)."""
        return super().get_attribute(name, where, kind or "particle")

    def set_attribute(self, name: str, values, indices=None, where: str | None = None, kind: str | None = None):
        super().set_attribute(name, values, indices, where, kind or "particle")

    # ------------------------------------------------------------------ units
    def points_to_stage(self, positions, stage_frame=None) -> np.ndarray:
        """``positions`` (numpy or Warp, ``(..., 3)``, m, Z up: what :meth:`get_positions` gives) in the stage's units
        and up axis, world space (not the prims' own, which the write-back uses). ``stage_frame``: the
        :class:`~newton_usd.usd.StageFrame` (default: a Simulation's, ``sim.imported.frame``)."""
        if stage_frame is None:
            if self._source.sim is None:
                raise NewtonUsdError("points_to_stage: a view of a Model needs the stage_frame")
            stage_frame = self._source.sim.imported.frame
        p = positions.numpy() if isinstance(positions, wp.array) else np.asarray(positions)
        flat = p.reshape(-1, 3).astype(np.float64)
        out = quat_rotate(quat_conjugate(stage_frame.rotation), flat) / stage_frame.meters_per_unit
        return out.reshape(p.shape)

    # ------------------------------------------------------------------ what a particle row has not
    def _joint_states_written(self, array, rows) -> None:
        """A write of points: a Simulation measures its checks from the state written."""
        self._source.state_moved()

    def _shapes(self):
        raise NewtonUsdError(f"{self.pattern!r}: a ParticleView has no colliders (its rows are points)")
