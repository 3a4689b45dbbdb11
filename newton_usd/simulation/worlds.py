"""Worlds on the stage: which body of which world is written onto which prim, and the copies of the environment
that show the worlds other than the first (:class:`EnvironmentCopies`, a Simulation's part)."""

from __future__ import annotations

import numpy as np
from pxr import Sdf

from ..sync import StageSync
from ..sync.instancer_sync import instance_of
from ..sync.state_rows import body_rows
from ..sync.world_copies import WorldCopies, default_spacing, environment_roots, grid_offsets


def stage_sync(stage, layer, model, copies, frame, xform_ops, old=None) -> tuple:
    """(the StageSync of ``model``'s bodies, their :class:`~newton_usd.sync.state_rows.StateRows`): each body row
    written onto its prim (:func:`written_labels`), the kinematic ones held (the stage moves them:
    :meth:`~newton_usd.sync.StageSync.hold`); ``old``: the sync it goes on from (its prepared specs, what it wrote)."""
    held = model.body_kinematic.numpy().astype(bool)
    labels = written_labels(model, copies)
    sync = StageSync(stage, layer, labels, frame, xform_ops, held=held)
    if old is not None:
        sync.carry_over(old)
    return sync, body_rows(model, labels)


def written_labels(model, copies=None) -> list:
    """Body labels for the StageSync, for the bodies of every world: None for a label met before (a replicated
    world's copy of a prim: only its first world is written, unless ``copies`` (:class:`WorldCopies`) has a copy of
    it for that world; worlds of environments have labels of their own, so each is written). A cable's segment bodies
    are written onto no prim: its curve's points are (:class:`~newton_usd.sync.curves_sync.CurvesSync`)."""
    world = model.body_world.numpy()
    segments = {b for c in model.cables for b in c.bodies}  # (written as their curves' points)
    seen = set()
    out = []
    for b, label in enumerate(model.body_label):
        if b in segments:
            out.append(None)
        elif label in seen:
            out.append(copies.label(label, int(world[b])) if copies is not None else None)
        else:
            out.append(label)
        seen.add(label)
    return out


def written_points(model, copies=None) -> dict:
    """The particle prims written, for :class:`~newton_usd.sync.points_sync.PointsSync`: prim path -> its run of the
    particle rows, as a body's pose is written (:func:`written_labels`): each prim's first world's run (a replicated
    world's copy of a prim: only world 0's, unless ``copies`` has a copy of it for that world, written in its
    source prim's space: the copy's place moves it); an environment's own prims each."""
    out = {}
    for label, first, end, world in model.particle_runs:
        if label not in out:
            out[label] = (first, end)
        elif copies is not None:
            shown = copies.label(label, world)
            if shown is not None:
                out[shown] = (first, end, label)
    return out


def _environment_paths(model) -> list:
    """The prims of world 0's bodies, static colliders and particle prims (an instance body: its PointInstancer)."""
    labels = [lab for lab, w in zip(model.body_label, model.body_world.numpy(), strict=True) if w == 0]
    labels += [lab for lab, _, _, w in model.particle_runs if w == 0]
    static = (model.shape_body.numpy() < 0) & (model.shape_world.numpy() == 0)
    labels += [lab for lab, s in zip(model.shape_label, static, strict=True) if s]
    out = []
    for label in labels:
        of = instance_of(label)
        path = of[0] if of else label
        if Sdf.Path.IsValidPathString(path) and Sdf.Path(path).IsAbsolutePath():
            out.append(path)
    return out


class EnvironmentCopies:
    """A Simulation's part that shows the worlds other than the first: copies of the environment, one per world, in a
    layer under the output layer (``write_worlds="all"``; see :class:`WorldCopies`), each world's bodies written onto
    its copy, shown :attr:`display_offset` away from where they are simulated.

    With several PhysicsScenes the first scene's part makes the copies for every scene (:meth:`make`): one copy per
    world holds every scene's bodies of that world.

    Args:
        stage, output_layer: the stage and the run's output layer (the copies' layer goes under it).
        mute: a context manager's factory: the run's own writes, not edits of the user's.
    """

    def __init__(self, stage, output_layer, mute):
        self._stage, self._output_layer, self._mute = stage, output_layer, mute
        self.copies = None  # the WorldCopies (None: world 0 only is shown)
        self.layer = None  # the layer they are in
        self.display_offset = None  # per body: where its world's copy is, from the environment (SI)
        self.spacing = None  # stage units between the copies

    def make(self, scenes, worlds: int, frame, spacing=None) -> bool:
        """Copies of the environment for worlds 1 .. ``worlds``-1 of every scene's model (``scenes``: [(its
        EnvironmentCopies, its model)], this part's first), ``spacing`` stage units apart on a grid (None: kept apart
        by their size); whether there was an environment to copy."""
        roots = environment_roots(self._stage, [p for _, model in scenes for p in _environment_paths(model)])
        if not roots:
            return False
        if self.layer is None:
            self.layer = Sdf.Layer.CreateAnonymous("newton_usd_world_copies.usda")
            self.layer.timeCodesPerSecond = self._stage.GetTimeCodesPerSecond()
            subs = self._stage.GetSessionLayer().subLayerPaths
            subs.insert(list(subs).index(self._output_layer.identifier) + 1, self.layer.identifier)
        if spacing is None:
            spacing = default_spacing(self._stage, roots)
        self.spacing = float(spacing)
        offsets = grid_offsets(worlds, self.spacing, frame.up_axis)
        with self._mute():
            self.copies = WorldCopies(self._stage, self.layer, roots, offsets)
        # World k's bodies are shown offsets[k] away: added to their simulated positions when written.
        per_world = np.stack([frame.world_vector_to_sim(o) for o in offsets])
        for part, model in scenes:
            part.copies, part.spacing = self.copies, self.spacing
            part.display_offset = per_world[model.body_world.numpy()].astype(np.float32)
        return True

    def remove(self) -> None:
        """The copies removed (the environment changed: :meth:`make` copies it again)."""
        with self._mute():
            self.copies.remove()

    def shown(self, body_q):
        """``body_q`` where it is shown: each world's bodies on its copy (a copy of the array), or as it is."""
        if self.display_offset is None:
            return body_q
        shown = np.array(body_q, dtype=np.float32)
        shown[:, :3] += self.display_offset[: len(shown)]
        return shown

    def detach(self) -> None:
        """The copies' layer leaves the stage (the run closes)."""
        subs = self._stage.GetSessionLayer().subLayerPaths
        if self.layer is not None and self.layer.identifier in subs:
            subs.remove(self.layer.identifier)
