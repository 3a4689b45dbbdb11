"""Colliders switched on and off in place under MuJoCo-Warp: its collision pair lists, filtered anew.

MuJoCo-Warp's broad phase does not read the geoms' contact bits (``contype``/``conaffinity``) as it steps: its
``put_model`` filters every geom pair by them once (with the parent, weld and ``<exclude>`` rules), into a table of
the pairs (``nxn_pairid``: -2 for a pair that never collides, its sweep-and-prune reads it) and the list of those that
may (``nxn_geom_pair_filtered``/``nxn_pairid_filtered``, which its all-pairs broad phase walks). A collider switched
off or on has only its bits changed, so the pairs are filtered again by the bits alone, from the lists ``put_model``
made: a pair it kept stays kept while both geoms' bits still meet, the others leave the list (the list is a prefix of
its array: a captured step, which bakes its length in, is captured anew). A geom given a bit it did not have when the
model was put could meet pairs ``put_model`` dropped: that needs the model put anew.
"""

from __future__ import annotations

import numpy as np


class WarpPairs:
    """The pair lists of ``mjw_model`` (a MuJoCo-Warp model just put) and the contact bits they were made with
    (``contype``, ``conaffinity``: the MjModel's then)."""

    def __init__(self, mjw_model, contype, conaffinity):
        self.model = mjw_model
        self.contype, self.conaffinity = np.array(contype, dtype=np.int64), np.array(conaffinity, dtype=np.int64)
        self.pairs_array = mjw_model.nxn_geom_pair_filtered  # (the buffers: their first rows hold the lists)
        self.ids_array = mjw_model.nxn_pairid_filtered
        self.pairs = self.pairs_array.numpy().reshape(-1, 2).astype(np.int64)
        self.ids = self.ids_array.numpy().reshape(-1, 2).copy()  # (copies: on the CPU numpy() is a view)
        self.table = mjw_model.nxn_pairid.numpy().reshape(-1, 2).copy()  # (as put: every pair of geoms)
        self._table_geoms = None

    @classmethod
    def of(cls, mjw_model, mj_model):
        """The pair lists of a MuJoCo-Warp model just put from ``mj_model``; None where it has none to switch."""
        if any(getattr(mjw_model, n, None) is None for n in ("nxn_geom_pair_filtered", "nxn_pairid_filtered",
                                                              "nxn_pairid")):  # fmt: skip
            return None
        return cls(mjw_model, mj_model.geom_contype, mj_model.geom_conaffinity)

    def switch(self, contype, conaffinity, all_pairs: bool) -> str | None:
        """Filter the lists by the geoms' bits now (``contype``, ``conaffinity``); ``all_pairs``: the broad phase
        walks the list (else its sweep reads the table). Returns None where it cannot (a bit a geom did not have
        when the model was put), "same" where the list's length is unchanged, else "resized"."""
        ct, ca = np.asarray(contype, dtype=np.int64), np.asarray(conaffinity, dtype=np.int64)
        if np.any((ct & ~self.contype) | (ca & ~self.conaffinity)):
            return None
        m = self.model
        g1, g2 = self.pairs[:, 0], self.pairs[:, 1]
        ids = self.ids.copy()
        ids[(ids[:, 0] == -1) & ((ct[g1] & ca[g2]) | (ct[g2] & ca[g1]) == 0), 0] = -2  # (a <pair> keeps its own)
        keep = (ids[:, 0] > -2) | (ids[:, 1] >= 0)  # (a collision sensor's pair stays, its contacts off)
        n = int(keep.sum())
        old = m.nxn_geom_pair_filtered.shape[0]
        pairs, listed = np.zeros_like(self.pairs), np.zeros_like(ids)
        pairs[:n], listed[:n] = self.pairs[keep], ids[keep]
        self.pairs_array.assign(pairs.astype(np.int32))
        self.ids_array.assign(listed.astype(np.int32))
        m.nxn_geom_pair_filtered, m.nxn_pairid_filtered = self.pairs_array[:n], self.ids_array[:n]
        if not all_pairs:
            geoms = self._geoms_of_table(len(ct))
            table = self.table.copy()
            t1, t2 = geoms
            table[(table[:, 0] == -1) & ((ct[t1] & ca[t2]) | (ct[t2] & ca[t1]) == 0), 0] = -2
            m.nxn_pairid.assign(table.astype(np.int32))
        return "same" if n == old else "resized"

    def _geoms_of_table(self, ngeom: int):
        """The two geoms of each row of the table (MuJoCo-Warp's upper-triangle order)."""
        if self._table_geoms is None:
            self._table_geoms = np.triu_indices(ngeom, k=1)
        return self._table_geoms
