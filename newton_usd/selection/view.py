"""The common machinery of the views: rows by prim pattern, index tables, gathers and index-masked scatters."""

from __future__ import annotations

import numpy as np
import warp as wp

from ..core.model import _COUNTS, _WORLD_ARRAYS
from ..errors import NewtonUsdError
from ..sync.state_rows import KINDS as STATE_ROW_KINDS
from .kernels import flat, gather_rows, numpy_dtype, scalar_type, scatter_rows, worlds_of_rows
from .pattern import match_prims, relative_name, under
from .source import ViewSource

# The element kind that indexes each State and Control array (the Model's come from core.model); the simulated prims'
# rows (a body's pose and velocity, a deformable's points) as sync.state_rows describes them.
_STATE_KINDS = {array: kind for kind, (pos, vel, *_) in STATE_ROW_KINDS.items() for array in (pos, vel)}
_STATE_KINDS.update({"body_f": "body", "joint_q": "coord", "joint_qd": "dof"})
_CONTROL_KINDS = {"joint_target_pos": "dof", "joint_target_vel": "dof", "joint_f": "dof"}
_MODEL_KINDS = {name: kind for kind, names in _WORLD_ARRAYS.items() for name in names}
_MODEL_KINDS.update({"shape_body": "shape", "joint_parent": "joint", "joint_child": "joint"})


def element_kind(name: str, array, model) -> str:
    """The kind of element (``"body"``, ``"joint"``, ``"dof"``, ``"coord"``, ``"shape"``, ...) indexing the
    array ``name``: known for the core arrays, else told by its length (a user's array), its name's prefix
    deciding between kinds of the same count."""
    for table in (_STATE_KINDS, _CONTROL_KINDS, _MODEL_KINDS):
        if name in table:
            return table[name]
    n = array.shape[0]
    kinds = [kind for kind, count in _COUNTS.items() if getattr(model, count, None) == n]
    if len(kinds) > 1:
        by_prefix = [
            k for k in kinds if name.startswith(k + "_") or (k in ("dof", "coord") and name.startswith("joint_"))
        ]
        kinds = by_prefix or kinds
    if len(kinds) != 1:
        raise NewtonUsdError(
            f"{name}: cannot tell which elements its {n} entries belong to "
            f"({' or '.join(kinds) if kinds else 'no element kind has that count'}); pass kind="
        )
    return kinds[0]


class Rows:
    """The rows of a view: one per (world, matched prim), worlds first, and each row's elements by kind."""

    def __init__(self, model, pattern: str, select):
        """``select(model, bodies, joints, path) -> {kind: element indices}`` gives one row's elements in model
        order (``bodies``, ``joints``: the world's); every row must hold the same elements by their names
        relative to the matched prim."""
        self.pattern = pattern
        labels = list(model.body_label) + list(model.joint_label)
        paths = match_prims(pattern, labels)
        if not paths:
            raise NewtonUsdError(f"no prim matches {pattern!r} among the model's bodies and joints")
        world_of_body = model.body_world.numpy()
        world_of_joint = model.joint_world.numpy()
        rows, elements = [], []
        for w in range(model.num_worlds):
            bodies = np.nonzero(world_of_body == w)[0]
            joints = np.nonzero(world_of_joint == w)[0]
            for path in paths:
                if not any(under(model.body_label[b], path) for b in bodies) and not any(
                    under(model.joint_label[j], path) for j in joints
                ):
                    continue
                rows.append((w, path))
                elements.append(select(model, bodies, joints, path))
        self.rows = rows
        self.count = len(rows)
        self.world = np.array([w for w, _ in rows], dtype=np.int32)
        self.paths = [p for _, p in rows]
        self.columns = {}
        for kind in elements[0]:
            shapes = {len(e[kind]) for e in elements}
            if len(shapes) != 1:
                raise NewtonUsdError(
                    f"{pattern!r}: the matched prims hold different numbers of {kind}s ({sorted(shapes)}); a view "
                    "needs the same structure in every row"
                )
            self.columns[kind] = np.array([e[kind] for e in elements], dtype=np.int64).reshape(self.count, -1)
        self._check_same_names(model)

    def _check_same_names(self, model):
        for kind, labels in (("body", model.body_label), ("joint", model.joint_label)):
            cols = self.columns.get(kind)
            if cols is None or not cols.size:
                continue
            names = [[relative_name(labels[e], p) for e in row] for row, p in zip(cols, self.paths, strict=True)]
            for row_names, path in zip(names[1:], self.paths[1:], strict=True):
                if row_names != names[0]:
                    raise NewtonUsdError(
                        f"{self.pattern!r}: {path} holds {kind}s {row_names}, {self.paths[0]} holds {names[0]}; a view "
                        "needs the same structure in every row"
                    )


class View:
    """Base of :class:`ArticulationView` and :class:`RigidBodyView`: rows of matched prims, columns of their
    elements, read and written as 2-D Warp arrays ``(count, columns)`` on the model's device.

    Writes take ``values`` as a Warp array, a numpy array or anything with DLPack (torch, JAX), and an optional
    ``indices`` (rows to write; default all). ``values`` has either ``count`` rows (row ``indices[i]`` takes
    row ``indices[i]`` of it, as the tensor API's full buffers) or ``len(indices)`` rows (row ``indices[i]``
    takes row ``i``).
    """

    def __init__(self, target, pattern: str, *, state=None, control=None, solver=None):
        self._source = ViewSource(target, state, control, solver)
        self.pattern = pattern
        self._model = None
        self._sync()

    # ------------------------------------------------------------------ rows
    def _select(self, model, bodies, joints, path) -> dict:
        raise NotImplementedError

    def _sync(self):
        """Index tables for the current model (a Simulation's rebuild makes a new one)."""
        model = self._source.model
        if model is self._model:
            return model
        self._model = model
        # (the joint tables every row selection reads)
        self._joint_type = model.joint_type.numpy()
        self._joint_parent = model.joint_parent.numpy()
        self._joint_child = model.joint_child.numpy()
        self._q_start = model.joint_q_start.numpy()
        self._qd_start = model.joint_qd_start.numpy()
        self._rows = Rows(model, self.pattern, self._select)
        self._tables = {}
        self._flats = {}
        self._all_rows = wp.array(np.arange(self._rows.count, dtype=np.int32), device=model.device)
        self._built(model)
        return model

    def _built(self, model) -> None:
        """Subclass hook: names and tables once the rows are known."""

    @property
    def count(self) -> int:
        """Number of rows: one per matched prim and world."""
        self._sync()
        return self._rows.count

    @property
    def prim_paths(self) -> list:
        """The matched prim of each row (the same path in every world for a replicated model)."""
        self._sync()
        return list(self._rows.paths)

    @property
    def worlds(self) -> np.ndarray:
        """The world of each row."""
        self._sync()
        return self._rows.world.copy()

    @property
    def device(self):
        return self._sync().device

    def columns(self, kind: str) -> np.ndarray:
        """The element indices ``(count, n)`` of each row's elements of ``kind``."""
        self._sync()
        cols = self._rows.columns.get(kind)
        if cols is None:
            raise NewtonUsdError(f"a {type(self).__name__} has no {kind} columns")
        return cols

    # ------------------------------------------------------------------ tables
    def _table(self, kind: str, width: int, elements=None) -> wp.array:
        """Scalar indices ``(count, n * width)`` of each row's elements (``elements``: ``(count, n)``, default
        the row's elements of ``kind``)."""
        key = (kind, width) if elements is None else (kind, width, elements.tobytes())
        hit = self._tables.get(key)
        if hit is None:
            cols = self.columns(kind) if elements is None else elements
            scalar = (cols[:, :, None] * width + np.arange(width)[None, None, :]).reshape(cols.shape[0], -1)
            hit = wp.array(scalar.astype(np.int32), dtype=wp.int32, device=self._model.device)
            self._tables[key] = hit
        return hit

    def _flat(self, array):
        hit = self._flats.get(id(array))
        if hit is None or hit[0] is not array:
            if len(self._flats) > 64:
                self._flats.clear()
            hit = (array, flat(array))
            self._flats[id(array)] = hit
        return hit[1]

    def _gather(self, array, kind: str, elements=None) -> wp.array:
        """Rows of ``array`` (indexed by elements of ``kind``): ``(count, n)`` for scalars, ``(count, n, k)`` for
        vectors and transforms, ``(count, n, 3, 3)`` for matrices."""
        model = self._sync()
        if array.device != model.device:
            raise NewtonUsdError(f"an array on {array.device} in a view of a model on {model.device}")
        inner = tuple(getattr(array.dtype, "_shape_", ()))
        width = int(np.prod(inner)) if inner else 1
        table = self._table(kind, width, elements)
        out = wp.empty(table.shape, dtype=scalar_type(array.dtype), device=model.device)
        if table.size:
            wp.launch(
                gather_rows, dim=table.shape, inputs=[self._flat(array), table], outputs=[out], device=model.device
            )
        n = table.shape[1] // width
        return out.reshape((table.shape[0], n, *inner)) if inner else out

    def _scatter(self, array, kind: str, values, indices=None, elements=None) -> None:
        """Write ``values`` into the rows ``indices`` of ``array`` (see the class docstring)."""
        model = self._sync()
        inner = tuple(getattr(array.dtype, "_shape_", ()))
        width = int(np.prod(inner)) if inner else 1
        table = self._table(kind, width, elements)
        scalar = scalar_type(array.dtype)
        vals = as_rows(values, table.shape[1], scalar, model.device)
        rows, value_rows = self._row_indices(indices, vals.shape[0])
        if rows.size and table.shape[1]:
            wp.launch(
                scatter_rows, dim=(rows.shape[0], table.shape[1]), inputs=[vals, value_rows, rows, table],
                outputs=[self._flat(array)], device=model.device,
            )  # fmt: skip
        self._joint_states_written(array, rows)

    def _joint_states_written(self, array, rows) -> None:
        """After a write into the State of ``rows``: the solver makes the body states of their worlds follow where
        it steps joint coordinates or velocities (Newton's XPBD, semi-implicit, Kamino: ``joint_states_written``;
        the other worlds' bodies stay as stepped), and a Simulation measures how far bodies are flung from the
        state written."""
        state, solver = self._source.state, self._source.solver
        arrays = getattr(state, "__dict__", {})
        written = any(array is arrays.get(name) for name in ("joint_q", "joint_qd"))
        if solver is not None and written and getattr(solver, "follows_joint_writes", True):  # (else no flags made)
            solver.joint_states_written(state, self._worlds_of(rows))
        if any(array is arrays.get(name) for name in ("joint_q", "joint_qd", "body_q", "body_qd")):
            self._source.state_moved()

    def _worlds_of(self, rows) -> wp.array:
        """The worlds of ``rows`` (int32 row numbers on the device), one bool per world of the model."""
        model = self._model
        cache = self.__dict__.setdefault("_world_flags", {})
        if cache.get("rows") is not self._rows:  # (made again with the rows, after a rebuild of the model)
            cache["rows"] = self._rows
            cache["row_world"] = wp.array(self._rows.world, dtype=wp.int32, device=model.device)
            cache["worlds"] = wp.zeros(model.num_worlds, dtype=wp.bool, device=model.device)
        worlds = cache["worlds"]
        worlds.zero_()
        if rows.shape[0]:
            wp.launch(worlds_of_rows, dim=rows.shape[0], inputs=[rows, cache["row_world"]], outputs=[worlds],
                      device=model.device)  # fmt: skip
        return worlds

    def _row_indices(self, indices, n_values):
        """``(rows, value rows)`` as Warp int32 arrays on the device."""
        count = self._rows.count
        device = self._model.device
        if indices is None:
            if n_values != count:
                raise NewtonUsdError(f"{n_values} rows of values for a view of {count} rows")
            return self._all_rows, self._all_rows
        if not isinstance(indices, wp.array | np.ndarray) and hasattr(indices, "__dlpack__"):
            indices = wp.from_dlpack(indices)  # (a torch or JAX array on a GPU: numpy cannot read it)
        if isinstance(indices, wp.array):
            rows = indices if indices.dtype == wp.int32 else wp.array(indices.numpy().astype(np.int32), device=device)
            if rows.device.is_cpu:  # (read in place; on a GPU reading them would wait for it: rows out of range
                _check_rows(rows.numpy(), count)  # are skipped by the write's kernel there)
            rows = rows if rows.device == device else rows.to(device)
            n = rows.shape[0]
        else:
            rows_np = np.asarray(indices, dtype=np.int64).reshape(-1)
            _check_rows(rows_np, count)
            rows = wp.array(rows_np.astype(np.int32), dtype=wp.int32, device=device)
            n = rows_np.size
        if n_values == count:
            return rows, rows
        if n_values == n:
            return rows, self._all_rows[:n] if n <= count else wp.array(np.arange(n, dtype=np.int32), device=device)
        raise NewtonUsdError(f"{n_values} rows of values for {n} indices (give {count} or {n} rows)")

    # ------------------------------------------------------------------ colliders
    def _shapes(self) -> np.ndarray:
        """Each row's colliders ``(count, n)``: the shapes on its bodies, in model order."""
        model = self._sync()
        hit = self._tables.get("shape_columns")
        if hit is None:
            shape_body = model.shape_body.numpy()
            rows = [np.nonzero(np.isin(shape_body, bodies))[0] for bodies in self._rows.columns["body"]]
            if len({len(r) for r in rows}) != 1:
                raise NewtonUsdError(f"{self.pattern!r}: the rows hold different numbers of colliders")
            hit = np.array(rows, dtype=np.int64).reshape(self.count, -1)
            self._tables["shape_columns"] = hit
        return hit

    @property
    def shape_names(self) -> list:
        """Names of the collider columns (prim paths relative to the matched prim)."""
        model = self._sync()
        return [relative_name(model.shape_label[s], self._rows.paths[0]) for s in self._shapes()[0]]

    def get_friction_coefficients(self):
        """Sliding friction of the rows' colliders ``(count, colliders)`` (see :attr:`shape_names`)."""
        return self._gather(self._source.model.shape_material_mu, "shape", self._shapes())

    def set_friction_coefficients(self, values, indices=None):
        self._set_model(("shape_material_mu",), (values,), "shape", indices, self._shapes())

    # ------------------------------------------------------------------ any array
    def _lookup(self, name: str, where: str | None):
        """``(array, holder kind, holder)`` for the array ``name`` of the State, Control or Model."""
        places = (where,) if where else ("state", "control", "model")
        for place in places:
            try:
                holder = getattr(self._source, place)
            except NewtonUsdError:
                if where:
                    raise
                continue
            array = getattr(holder, name, None)
            if isinstance(array, wp.array):
                return array, place
        raise NewtonUsdError(f"no per-element array {name!r} on the {' / '.join(places)}")

    def get_attribute(self, name: str, where: str | None = None, kind: str | None = None) -> wp.array:
        """Any per-element array (core or user-added) of the State, Control or Model (searched in that order;
        ``where`` picks one), by this view's columns of its element kind (``kind`` for a user's array whose
        kind its length does not tell)."""
        array, _ = self._lookup(name, where)
        model = self._sync()
        return self._gather(array, kind or element_kind(name, array, model))

    def set_attribute(self, name: str, values, indices=None, where: str | None = None, kind: str | None = None):
        """Write any per-element array (see :meth:`get_attribute`); a Model array's new values go to the solver
        (``update_parameters``)."""
        array, place = self._lookup(name, where)
        model = self._sync()
        self._scatter(array, kind or element_kind(name, array, model), values, indices)
        if place == "model":
            self._source.push_parameters({name})

    def _set_model(self, names, values, kind, indices, elements=None):
        model = self._sync()
        for name, v in zip(names, values, strict=True):
            self._scatter(getattr(model, name), kind, v, indices, elements)
        self._source.push_parameters(set(names))


def _check_rows(rows: np.ndarray, count: int) -> None:
    """Row indices within ``[0, count)`` (else :class:`NewtonUsdError`)."""
    if rows.size and (rows.min() < 0 or rows.max() >= count):
        raise NewtonUsdError(f"row indices must be in [0, {count}), got {rows.min()}..{rows.max()}")


def as_rows(values, width: int, scalar, device) -> wp.array:
    """``values`` (Warp, numpy, DLPack) as a Warp ``(rows, width)`` array of ``scalar`` on ``device``."""
    if isinstance(values, wp.array):
        arr = values
        if scalar_type(arr.dtype) != scalar:
            arr = wp.array(arr.numpy().astype(numpy_dtype(scalar)), device=device)
        else:
            arr = flat(arr if arr.is_contiguous else wp.clone(arr))
            if arr.device != device:
                arr = arr.to(device)
    elif hasattr(values, "__dlpack__") and not isinstance(values, np.ndarray):
        arr = wp.from_dlpack(values)
        if arr.dtype != scalar:
            arr = wp.array(arr.numpy().astype(numpy_dtype(scalar)), device=device)
        elif arr.device != device:
            arr = arr.to(device)
    else:
        arr = wp.array(np.asarray(values, dtype=numpy_dtype(scalar)), device=device)
    if arr.size % max(width, 1):
        raise NewtonUsdError(f"values of shape {tuple(arr.shape)} do not make rows of {width}")
    if not arr.is_contiguous:
        arr = wp.clone(arr)
    return arr.reshape((arr.size // max(width, 1), width))
