"""SimulationView: key/value access to any array of the Model, State, Control or solver, and the view factories."""

from __future__ import annotations

import numpy as np
import warp as wp

from ..errors import NewtonUsdError
from .articulation_view import ArticulationView
from .contact_view import RigidContactView
from .kernels import scalar_type, width
from .particle_view import ParticleView
from .rigid_body_view import RigidBodyView
from .source import ViewSource
from .view import as_rows


class SimulationView:
    """The seed design's key/value accessors: arrays by attribute name, including those a user attached to
    the Model, State or solver (``model.shape_lubrication = wp.array(...)``), and the views by prim pattern.

    Args:
        target: a Simulation, or a Model with ``state``, ``control`` and ``solver``.
    """

    def __init__(self, target, *, state=None, control=None, solver=None):
        self._target = target
        self._pieces = {"state": state, "control": control, "solver": solver}
        self._source = ViewSource(target, state, control, solver)

    def create_articulation_view(self, pattern: str) -> ArticulationView:
        return ArticulationView(self._target, pattern, **self._pieces)

    def create_rigid_body_view(self, pattern: str) -> RigidBodyView:
        return RigidBodyView(self._target, pattern, **self._pieces)

    def create_particle_view(self, pattern: str) -> ParticleView:
        return ParticleView(self._target, pattern, **self._pieces)

    def create_rigid_contact_view(self, pattern: str, filter_patterns=None, **kwargs):
        return RigidContactView(self._target, pattern, filter_patterns, **self._pieces, **kwargs)

    # ------------------------------------------------------------------ model
    def get_model_attr(self, key: str):
        """The Model's attribute ``key`` (the array itself: edits in place are the model's)."""
        return _attr(self._source.model, key, "Model")

    def set_model_attr(self, key: str, value) -> None:
        """Set the Model's ``key``: copied into the existing array when shapes agree, else attached as given;
        then handed to the solver (``update_parameters``)."""
        model = self._source.model
        _assign(model, key, value)
        self._source.push_parameters({key})

    # ------------------------------------------------------------------ state
    def get_state_attr(self, key: str, indices=None):
        """The State's ``key``; with ``indices``, a ``wp.indexedarray`` of those elements (no copy)."""
        array = _attr(self._source.state, key, "State")
        return array if indices is None else wp.indexedarray(array, [_index_array(indices, array.device)])

    def set_state_attr(self, key: str, indices, value) -> None:
        """Write the State's ``key`` (at ``indices``, elements in its first dimension; None: all of it)."""
        _write(self._source.state, key, indices, value)

    def get_control_attr(self, key: str, indices=None):
        array = _attr(self._source.control, key, "Control")
        return array if indices is None else wp.indexedarray(array, [_index_array(indices, array.device)])

    def set_control_attr(self, key: str, indices, value) -> None:
        _write(self._source.control, key, indices, value)

    # ------------------------------------------------------------------ solver
    def get_solver_attr(self, key: str):
        return _attr(self._source.solver, key, "solver")

    def set_solver_attr(self, key: str, value) -> None:
        setattr(self._source.solver, key, value)


def _attr(holder, key, what):
    try:
        return getattr(holder, key)
    except AttributeError:
        raise NewtonUsdError(f"the {what} has no attribute {key!r}") from None


def _index_array(indices, device):
    if not isinstance(indices, wp.array | np.ndarray) and hasattr(indices, "__dlpack__"):
        indices = wp.from_dlpack(indices)  # (a torch or JAX array on a GPU: numpy cannot read it)
    if isinstance(indices, wp.array):
        if indices.dtype != wp.int32:  # (torch's indices are int64)
            indices = wp.array(indices.numpy().astype(np.int32), dtype=wp.int32, device=device)
        return indices if indices.device == device else indices.to(device)
    return wp.array(np.asarray(indices, dtype=np.int32).reshape(-1), dtype=wp.int32, device=device)


def _assign(holder, key, value):
    old = getattr(holder, key, None)
    if (
        isinstance(old, wp.array)
        and not isinstance(value, wp.array)
        or (isinstance(old, wp.array) and isinstance(value, wp.array) and value.size == old.size)
    ):
        scalar = scalar_type(old.dtype)
        rows = as_rows(value, width(old.dtype), scalar, old.device)
        if rows.shape[0] != old.shape[0]:
            raise NewtonUsdError(f"{key}: {rows.shape[0]} values for {old.shape[0]} elements")
        wp.copy(wp.array(ptr=old.ptr, dtype=scalar, shape=rows.shape, device=old.device, copy=False), rows)
    else:
        setattr(holder, key, value)


@wp.kernel
def _scatter_elements(
    values: wp.array2d(dtype=wp.float32), index: wp.array(dtype=wp.int32), dst: wp.array2d(dtype=wp.float32)
):
    i, k = wp.tid()
    dst[index[i], k] = values[i, k]


def _write(holder, key, indices, value):
    array = getattr(holder, key, None)
    if not isinstance(array, wp.array):
        raise NewtonUsdError(f"no array {key!r} to write")
    if indices is None:
        _assign(holder, key, value)
        return
    n = width(array.dtype)
    scalar = scalar_type(array.dtype)
    if scalar != wp.float32:
        raise NewtonUsdError(f"{key}: indexed writes take float32 arrays (this one holds {scalar.__name__})")
    index = _index_array(indices, array.device)
    rows = as_rows(value, n, scalar, array.device)
    if rows.shape[0] != index.shape[0]:
        raise NewtonUsdError(f"{key}: {rows.shape[0]} values for {index.shape[0]} indices")
    dst = wp.array(ptr=array.ptr, dtype=scalar, shape=(array.shape[0], n), device=array.device, copy=False)
    wp.launch(_scatter_elements, dim=rows.shape, inputs=[rows, index], outputs=[dst], device=array.device)
