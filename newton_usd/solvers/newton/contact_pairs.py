"""Colliders switched on and off in place under Newton's solvers: the collision pipeline's explicit shape pairs.

Newton's collision pipeline (its default, explicit broad phase) tests a list of shape pairs every step, made once when
the pipeline is made from the shapes that collide then (``model.shape_contact_pairs``). A collider switched off has
its pairs rewritten in place as ``(s, s)``: one shape twice, a pair the broad phase always drops (two shapes of one
body, or two static shapes); switched on again, they are written back. The list keeps its length and its array, so a
captured frame replays the new pairs. A collider that did not collide when the pipeline was made has no pairs in it:
switching it on needs a new pipeline (a new solver of the edited model).
"""

from __future__ import annotations

import numpy as np


class SwitchedPairs:
    """The explicit pair list of ``pipeline`` (a ``newton.CollisionPipeline``), its colliders switched in place.

    Args:
        pipeline: the collision pipeline; its ``shape_pairs_filtered`` is rewritten in place.
        shape_map: our shape index -> Newton's.
        collides: per shape of ours, whether it collided when the pipeline was made.
    """

    def __init__(self, pipeline, shape_map, collides):
        self.array = pipeline.shape_pairs_filtered
        self.pairs = self.array.numpy().reshape(-1, 2).copy()  # (as made: every pair of the colliders then)
        self.shape_map = np.asarray(shape_map, dtype=np.int64)
        count = int(max(self.shape_map.max(initial=-1), self.pairs.max(initial=-1))) + 1
        self.built = np.zeros(count, dtype=bool)
        self.built[self.shape_map[np.asarray(collides, dtype=bool)]] = True
        self.off = np.zeros(count, dtype=bool)

    @classmethod
    def of(cls, pipeline, shape_map, collides):
        """The switched pairs of ``pipeline``, or None where it has no explicit pair list (another broad phase)."""
        pairs = getattr(pipeline, "shape_pairs_filtered", None)
        if pairs is None or getattr(pipeline, "broad_phase_mode", "explicit") != "explicit":
            return None
        return cls(pipeline, shape_map, collides)

    def switch(self, collides) -> bool:
        """Colliders on or off as ``collides`` says (per shape of ours); False, and nothing written, where one that
        had no pairs when the pipeline was made is switched on."""
        on = np.zeros(len(self.off), dtype=bool)
        on[self.shape_map] = np.asarray(collides, dtype=bool)
        if np.any(on & ~self.built):
            return False
        off = self.built & ~on
        changed = off != self.off
        if not changed.any():
            return True
        pairs = self.pairs
        rows = np.nonzero(changed[pairs[:, 0]] | changed[pairs[:, 1]])[0]
        new = pairs[rows].copy()
        dead = off[new[:, 0]] | off[new[:, 1]]
        new[dead, 1] = new[dead, 0]
        if self.array.device.is_cpu:  # (a view of the array's memory)
            self.array.numpy().reshape(-1, 2)[rows] = new
        else:
            current = self.array.numpy()
            current.reshape(-1, 2)[rows] = new
            self.array.assign(current)
        self.off = off
        return True
