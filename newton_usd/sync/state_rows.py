"""A simulated prim's rows of the State: which rows of which State array are written onto which prim.

Every job that handles simulated prims (the write-back and recording, the blow-up check, the pipelined readback,
live edits) does it through :class:`StateRows`, not through ``body_q`` by name: a rigid body's rows are its pose
(``body_q``, seven numbers) and velocity (``body_qd``); a deformable's are its points (``particle_q``) and their
velocities (``particle_qd``), one :class:`StateRows` of kind "particle" beside the bodies'.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

KINDS = {
    "body": ("body_q", "body_qd", "body", "body pose"),
    "particle": ("particle_q", "particle_qd", "point", "point position"),
}
"""kind -> (the State array of its positions, of its velocities, what one row is called in a message, what its
position is called)."""


@dataclass(frozen=True)
class StateRows:
    """Rows of one State array that prims are written from.

    Attributes:
        kind: "body" (a pose per row) or "particle" (a point per row).
        labels: per row, the prim path it belongs to (a row of a replicated world written nowhere: None).
        names: per row, its name in a message (the model's label of the row: a body's prim path).
    """

    kind: str
    labels: tuple
    names: tuple

    @property
    def array(self) -> str:
        """The State array of the rows' positions (``body_q``, ``particle_q``)."""
        return KINDS[self.kind][0]

    @property
    def velocity_array(self) -> str:
        return KINDS[self.kind][1]

    @property
    def element(self) -> str:
        """What one row is, in a message ("body", "point")."""
        return KINDS[self.kind][2]

    @property
    def placement(self) -> str:
        """What a row's position is called in a message ("body pose", "point position")."""
        return KINDS[self.kind][3]

    @property
    def count(self) -> int:
        """Rows written onto prims: up to the last one that has a prim."""
        return len(self.labels)

    def positions(self, state) -> np.ndarray:
        """The rows' positions in ``state``, on the host (on CUDA: a copy, waited for)."""
        return getattr(state, self.array).numpy()

    def velocities(self, state) -> np.ndarray:
        return getattr(state, self.velocity_array).numpy()

    def name(self, row: int) -> str:
        """The row's name in a message (the body's label)."""
        return self.names[row]


def body_rows(model, labels) -> StateRows:
    """The rigid bodies' rows of ``model``'s State, written onto ``labels`` (per body: its prim, or None)."""
    return StateRows("body", tuple(labels), tuple(model.body_label))


def particle_rows(model) -> StateRows:
    """The particles' rows of ``model``'s State, each named by its prim (``model.particle_label``)."""
    labels = tuple(model.particle_label)
    return StateRows("particle", labels, labels)
