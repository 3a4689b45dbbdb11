"""Live edits: what the user changed on the stage while it is simulated, and how the model differs.

:class:`StageWatcher` listens to the stage's ``Usd.Notice.ObjectsChanged`` (Tf notices) and keeps
the paths edited since the last frame; the simulation's own writes (the output layer) are muted.
:func:`model_differences` compares the running model with one imported afresh from the edited stage:
structure (bodies, joints, shapes by label and kind) and the value arrays that differ.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import numpy as np
import warp as wp
from pxr import Sdf, Tf, Usd

# Edits to these properties cannot change the simulation (looks, UI, shading inputs).
_IGNORED_PREFIXES = ("primvars:", "inputs:", "outputs:", "ui:", "info:", "material:binding:preview")
_IGNORED_NAMES = {"visibility", "purpose", "doubleSided", "extent", "proxyPrim", "kind"}

_INITIAL_STATE = {"body_q", "body_qd", "joint_q", "joint_qd"}
"""Model arrays holding the initial state: a re-import reads the current poses there, not an edit."""
_STRUCTURE = (
    "body_label", "joint_label", "shape_label", "equality_label", "site_label", "articulation_label",
    "joint_type", "joint_parent", "joint_child", "shape_body", "shape_type", "joint_qd_start", "joint_q_start",
    "body_collision_filter_pairs", "body_shape_collision_filter_pairs",
)  # fmt: skip


@dataclass
class Edits:
    """The paths edited since the last :meth:`StageWatcher.take`.

    Attributes:
        changed: property (or prim) paths whose values or metadata changed.
        resynced: prim paths added, removed or recomposed (a structural change).
    """

    changed: set = field(default_factory=set)
    resynced: set = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.changed or self.resynced)


def relevant(path: Sdf.Path) -> bool:
    """Whether an edit of ``path`` may change the simulation (a look or UI property cannot)."""
    if not path.IsPropertyPath():
        return True
    name = path.name
    return name not in _IGNORED_NAMES and not name.startswith(_IGNORED_PREFIXES)


class StageWatcher:
    """The edits made to ``stage`` since the last :meth:`take`; writes inside :meth:`muted` are not edits."""

    def __init__(self, stage: Usd.Stage):
        self._edits = Edits()
        self._muted = 0
        self._listener = Tf.Notice.Register(Usd.Notice.ObjectsChanged, self._on_changed, stage)

    def _on_changed(self, notice, _stage) -> None:
        if self._muted:
            return
        self._edits.resynced.update(p for p in notice.GetResyncedPaths() if relevant(p))
        self._edits.changed.update(p for p in notice.GetChangedInfoOnlyPaths() if relevant(p))

    @contextlib.contextmanager
    def muted(self):
        """Changes made inside this block (the simulation's own writes) are not collected."""
        self._muted += 1
        try:
            yield
        finally:
            self._muted -= 1

    @property
    def pending(self) -> bool:
        return bool(self._edits)

    def take(self) -> Edits:
        edits, self._edits = self._edits, Edits()
        return edits

    def close(self) -> None:
        if self._listener is not None:
            self._listener.Revoke()
            self._listener = None


def _values(model) -> dict:
    out = {}
    for name, value in vars(model).items():
        if isinstance(value, wp.array):
            out[name] = value.numpy()
        elif isinstance(value, np.ndarray | list | tuple | dict) or name == "gravity":
            out[name] = value
    for name, value in vars(model.mujoco).items():
        out["mujoco." + name] = value
    return out


def _equal(a, b) -> bool:
    """Value equality of model attributes: arrays (to float32 round-off; NaN equal to NaN), containers,
    and objects such as meshes by their fields."""
    if a is b:
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if a is None or b is None or isinstance(a, str) or isinstance(b, str):
        return a == b
    a_arr, b_arr = np.asarray(a), np.asarray(b)
    if a_arr.dtype == object or b_arr.dtype == object:
        if type(a) is type(b) and hasattr(a, "__dict__"):
            return _equal(vars(a), vars(b))
        return a == b
    if a_arr.shape != b_arr.shape:
        return False
    if a_arr.dtype.kind in "fc" or b_arr.dtype.kind in "fc":
        # Values a re-import derives from the current poses (shape frames) differ by float round-off.
        return bool(np.allclose(a_arr, b_arr, rtol=1e-5, atol=1e-6, equal_nan=True))
    return bool(np.array_equal(a_arr, b_arr))


def model_differences(old, new) -> tuple[bool, set]:
    """``(same_structure, names)``: whether ``new`` has the same bodies, joints and shapes as ``old``,
    and the names of its value arrays that differ (``"mujoco.<name>"`` for MuJoCo-only values;
    initial-state arrays left out)."""
    a, b = _values(old), _values(new)
    same = all(_equal(a.get(k), b.get(k)) for k in _STRUCTURE) and a.keys() == b.keys()
    if not same:
        return False, set()
    names = {k for k in a if k not in _INITIAL_STATE and k not in _STRUCTURE and not _equal(a[k], b[k])}
    return True, names
