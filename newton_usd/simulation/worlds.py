"""Worlds on the stage: which body of which world is written onto which prim, and the copies of the environment
that show the worlds other than the first."""

from __future__ import annotations

import numpy as np
from pxr import Sdf

from ..sync import StageSync
from ..sync.instancer_sync import instance_of
from ..sync.world_copies import WorldCopies, default_spacing, environment_roots, grid_offsets


def stage_sync(stage, layer, model, copies, frame, xform_ops, old=None) -> StageSync:
    """The StageSync of ``model``'s bodies (:func:`written_labels`), the kinematic ones held (the stage moves them:
    :meth:`~newton_usd.sync.StageSync.hold`); ``old``: the sync it goes on from (its prepared specs, what it wrote)."""
    held = model.body_kinematic.numpy().astype(bool)
    sync = StageSync(stage, layer, written_labels(model, copies), frame, xform_ops, held=held)
    if old is not None:
        sync.carry_over(old)
    return sync


def written_labels(model, copies=None) -> list:
    """Body labels for the StageSync, for the bodies of every world: None for a label met before (a replicated
    world's copy of a prim: only its first world is written, unless ``copies`` (:class:`WorldCopies`) has a copy of
    it for that world; worlds of environments have labels of their own, so each is written)."""
    world = model.body_world.numpy()
    seen = set()
    out = []
    for b, label in enumerate(model.body_label):
        if label in seen:
            out.append(copies.label(label, int(world[b])) if copies is not None else None)
        else:
            out.append(label)
        seen.add(label)
    return out


def _environment_paths(model) -> list:
    """The prims of world 0's bodies and static colliders (an instance body: its PointInstancer)."""
    labels = [lab for lab, w in zip(model.body_label, model.body_world.numpy(), strict=True) if w == 0]
    static = (model.shape_body.numpy() < 0) & (model.shape_world.numpy() == 0)
    labels += [lab for lab, s in zip(model.shape_label, static, strict=True) if s]
    out = []
    for label in labels:
        of = instance_of(label)
        path = of[0] if of else label
        if Sdf.Path.IsValidPathString(path) and Sdf.Path(path).IsAbsolutePath():
            out.append(path)
    return out


class WorldCopying:
    """:class:`~newton_usd.sim.Simulation`'s copies of the environment, one per world (``write_worlds="all"``)."""

    def _copy_environment(self, spacing=None) -> None:
        """Copies of the environment for worlds 1 .. n-1 (see :class:`WorldCopies`), in a layer under
        the output layer, ``spacing`` stage units apart on a grid (None: kept apart by their size).

        The first scene's Simulation copies it for every scene (:attr:`scenes`): one copy per world holds
        every scene's bodies of that world, and each scene writes its own onto it (see :meth:`_resync`)."""
        sims = (self, *self.scenes)
        roots = environment_roots(self.stage, [p for s in sims for p in _environment_paths(s.model)])
        if not roots:
            return
        if self._copies_layer is None:
            self._copies_layer = Sdf.Layer.CreateAnonymous("newton_usd_world_copies.usda")
            self._copies_layer.timeCodesPerSecond = self.stage.GetTimeCodesPerSecond()
            subs = self.stage.GetSessionLayer().subLayerPaths
            subs.insert(list(subs).index(self.output_layer.identifier) + 1, self._copies_layer.identifier)
        if spacing is None:
            spacing = default_spacing(self.stage, roots)
        self.world_spacing = float(spacing)
        offsets = grid_offsets(self.worlds, self.world_spacing, self.imported.frame.up_axis)
        with self._own_writes():
            self.copies = WorldCopies(self.stage, self._copies_layer, roots, offsets)
        # World k's bodies are shown offsets[k] away: added to their simulated positions when written.
        frame = self.imported.frame
        per_world = np.stack([frame.world_vector_to_sim(o) for o in offsets])
        for s in sims:
            s.copies = self.copies
            s._display_offset = per_world[s.model.body_world.numpy()].astype(np.float32)

    def _resync(self) -> None:
        """A new sync of this scene's bodies, onto the prims and the copies of the environment as they are
        now (:attr:`copies`, made by the first scene's Simulation), going on from the old one."""
        with self._own_writes():  # (the old sync's batch flushed: the run's own writes, not the user's edits)
            self.sync = stage_sync(self.stage, self.output_layer, self.model, self.copies, self.imported.frame,
                                   self.sync.xform_ops, old=self.sync)  # fmt: skip
