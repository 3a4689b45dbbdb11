"""Observations: which values of each world an environment observes, as one float32 row per environment.

Default: every coordinate of the world then every DOF velocity (``[q..., qd...]``, the State's ``joint_q`` and
``joint_qd`` of that world). Or a list of fields by prim pattern, each ``"field:/prim/pattern"`` (or a
``(field, pattern)`` pair), their columns side by side in the order given:

- ``dof_positions`` / ``dof_velocities``: the joint coordinates / DOF velocities of the matched joints or
  articulations (an :class:`~newton_usd.selection.ArticulationView`'s columns; a free root joint is not among them);
- ``root_poses`` (7: position, quaternion x, y, z, w) / ``root_velocities`` (6) of a floating articulation;
- ``body_poses`` (7 per body) / ``body_velocities`` (6 per body: linear velocity of the center of mass,
  angular velocity) of the matched rigid bodies (a :class:`~newton_usd.selection.RigidBodyView`'s rows);
- ``contact_forces`` (3 per body: the net contact force, N, world frame) on the matched rigid bodies (a
  :class:`~newton_usd.selection.RigidContactView`, read from the solver's ``update_contacts`` at every step: on the
  host, so a step observing them is not captured; MuJoCo reports the forces, Newton's featherstone and
  semi-implicit solvers give NaN).
"""

from __future__ import annotations

import numpy as np
import warp as wp

from ..errors import NewtonUsdError
from ..kinematics import eval_fk
from ..kinematics.jacobian import body_indices, jacobians
from ..selection import ArticulationView, RigidBodyView, RigidContactView
from ..selection.kernels import flat
from .actions import per_env_columns
from .kernels import Launches, gather_columns

# field -> (view class, element kind of its columns, State array, scalars per element, column names' suffixes)
FIELDS = {
    "dof_positions": (ArticulationView, "coord", "joint_q", 1, ("",)),
    "dof_velocities": (ArticulationView, "dof", "joint_qd", 1, ("",)),
    "root_poses": (ArticulationView, "free_coord", "joint_q", 1, ("",)),
    "root_velocities": (ArticulationView, "free_dof", "joint_qd", 1, ("",)),
    "body_poses": (RigidBodyView, "body", "body_q", 7, (":px", ":py", ":pz", ":qx", ":qy", ":qz", ":qw")),
    "body_velocities": (RigidBodyView, "body", "body_qd", 6, (":vx", ":vy", ":vz", ":wx", ":wy", ":wz")),
    "contact_forces": (RigidContactView, "body", None, 3, (":fx", ":fy", ":fz")),
}


def parse_field(item):
    """``"field:/pattern"`` or ``(field, pattern)`` -> ``(field, pattern)``, a clear error otherwise."""
    if isinstance(item, str):
        field, sep, pattern = item.partition(":")
        if not sep:
            field, pattern = None, item
    else:
        try:
            field, pattern = item
        except (TypeError, ValueError):
            field, pattern = None, item
    if field not in FIELDS or not isinstance(pattern, str):
        raise NewtonUsdError(f"observation {item!r}: give 'field:/prim/pattern' with a field of "
                             f"{', '.join(FIELDS)}")  # fmt: skip
    return field, pattern


class Observations:
    """The observation term: index tables of each field into the State's arrays, gathered by one kernel per field.

    Attributes:
        size: columns per environment. names: a name per column (the prim path, and which component).
        bodies: whether a field reads the body poses or velocities (which a reset must then bring up to date).
    """

    def __init__(self, sim, fields=None):
        model = sim.model
        n_env = model.num_worlds
        self.num_envs = n_env
        self.terms = []  # (State array name, table (num_envs, n) of flat scalar indices, column offset)
        self.names = []
        self.body_fields = set()
        self.contacts = []  # the RigidContactViews of contact force fields (read on the host: never captured)
        if fields is None:
            nq, nv = model.joint_coord_count // n_env, model.joint_dof_count // n_env
            q = np.arange(n_env * nq).reshape(n_env, nq)
            qd = np.arange(n_env * nv).reshape(n_env, nv)
            self._add(model, "joint_q", q, [f"q:{n}" for n in _coord_names(model, nq)])
            self._add(model, "joint_qd", qd, [f"qd:{n}" for n in _dof_names(model, nv)])
        else:
            if isinstance(fields, str):
                fields = [fields]
            if not fields:
                raise NewtonUsdError("observations: give at least one field (or None for [q..., qd...])")
            for item in fields:
                field, pattern = parse_field(item)
                view_class, kind, array, width, suffixes = FIELDS[field]
                view = view_class(sim, pattern)
                elements = per_env_columns(view, kind, n_env, f"observation {field}")
                if array is None:  # (contact forces: the view's rows, read at each step)
                    self.contacts.append(view)
                    rows = per_env_columns(_RowsOf(view), kind, n_env, f"observation {field}")
                    names = _element_names(model, kind, elements[0], model.body_label)
                    scalars = (rows[:, :, None] * width + np.arange(width)[None, None, :]).reshape(n_env, -1)
                    self._add(model, view, scalars, [f"{field}:{n}{s}" for n in names for s in suffixes])
                    continue
                if elements.shape[1] == 0:
                    what = kind.replace("_", " ")
                    raise NewtonUsdError(f"observation {field}:{pattern}: the matched prims have no {what}s (e.g. root "
                                         "poses of a fixed-base articulation)")  # fmt: skip
                scalars = (elements[:, :, None] * width + np.arange(width)[None, None, :]).reshape(n_env, -1)
                labels = {"body": model.body_label}.get(kind)
                names = _element_names(model, kind, elements[0], labels)
                self._add(model, array, scalars, [f"{field}:{n}{s}" for n in names for s in suffixes])
                if array.startswith("body"):
                    self.body_fields.add(array)
                    self._bodies = sorted(set(getattr(self, "_bodies", [])) | set(elements[0].tolist()))
        self.size = len(self.names)
        self._launch = Launches()
        self._all = wp.array(np.ones(n_env, dtype=bool), dtype=wp.bool, device=model.device)
        self._flats = {}  # id(State array) -> (it, its flat float view)

    def _add(self, model, array, scalars, names):
        table = wp.array(scalars.astype(np.int32), dtype=wp.int32, device=model.device)
        self.terms.append((array, table, len(self.names)))
        self.names += names

    def gather(self, state, out: wp.array, mask=None) -> None:
        """Each field's columns of ``state`` into ``out`` ``(num_envs, size)`` (with ``mask``: of those environments
        only)."""
        for array, table, offset in self.terms:
            if isinstance(array, RigidContactView):
                src = self._flat(array.get_net_contact_forces())
            else:
                src = self._flat(getattr(state, array))
            self._launch(gather_columns, table.shape, (src, table, offset, self._all if mask is None else mask), (out,),
                         out.device)  # fmt: skip

    def _flat(self, array):
        hit = self._flats.get(id(array))
        if hit is None or hit[0] is not array:
            if len(self._flats) > 64:
                self._flats.clear()
            hit = self._flats[id(array)] = (array, flat(array))
        return hit[1]

    def bodies_from_joints(self, model, state, mask) -> None:
        """After joint states were written (a reset): the observed body poses from the joint coordinates (forward
        kinematics, every world), and the observed bodies' velocities from the DOF velocities (their Jacobians at
        the center of mass) in the worlds of ``mask``; for solvers that do not do so themselves (MuJoCo)."""
        if "body_q" in self.body_fields or "body_qd" in self.body_fields:
            eval_fk(model, state, body_q=state.body_q)
        if "body_qd" not in self.body_fields:
            return
        per = model.body_count // model.num_worlds
        qd = state.joint_qd
        for local, index, com in self._jacobian_points(model):
            J = jacobians(model, state, index, offset=com)
            J = J.reshape((J.shape[0], 6, J.shape[3]))
            wp.launch(_body_velocity_from_jacobian, dim=J.shape[0], inputs=[J, qd, mask, local, per],
                      outputs=[state.body_qd], device=J.device)  # fmt: skip

    def _jacobian_points(self, model) -> list:
        """``[(world-0 body, its index array, its center of mass)]`` of the observed bodies, read from the model once
        (a reset inside a captured step reads nothing on the host: on CUDA a read there fails the capture)."""
        points = self.__dict__.get("_points")
        if points is None or points[0] is not model:
            per = model.body_count // model.num_worlds
            com = model.body_com.numpy()
            locals_ = sorted({b % per for b in self._bodies})
            points = self._points = (model, [(b, body_indices(model, [b]), tuple(float(c) for c in com[b]))
                                             for b in locals_])  # fmt: skip
        return points[1]


class _RowsOf:
    """A view's row numbers as its columns (where a field reads the view's own output, one row per body)."""

    def __init__(self, view):
        self.pattern, self.worlds = view.pattern, view.worlds

    def columns(self, kind):
        return np.arange(len(self.worlds), dtype=np.int64)[:, None]


@wp.kernel
def _body_velocity_from_jacobian(
    J: wp.array3d(dtype=wp.float32),
    joint_qd: wp.array(dtype=wp.float32),
    mask: wp.array(dtype=wp.bool),
    body: int,
    bodies_per_world: int,
    body_qd: wp.array(dtype=wp.spatial_vector),
):
    w = wp.tid()
    if not mask[w]:
        return
    dofs = J.shape[2]
    v = wp.spatial_vector()
    for r in range(6):
        s = float(0.0)
        for d in range(dofs):
            s += J[w, r, d] * joint_qd[w * dofs + d]
        v[r] = s
    body_qd[w * bodies_per_world + body] = v


def _element_names(model, kind, elements, labels):
    if labels is not None:
        return [labels[e] for e in elements]
    if kind in ("coord", "free_coord"):
        names = _coord_names(model, model.joint_coord_count)
    else:
        names = _dof_names(model, model.joint_dof_count)
    return [names[e] for e in elements]


def _coord_names(model, n):
    """A name per coordinate of world 0 (``joint`` or ``joint:k``) for the first ``n``."""
    return _names(model, model.joint_q_start.numpy(), n)


def _dof_names(model, n):
    return _names(model, model.joint_qd_start.numpy(), n)


def _names(model, starts, n):
    out = []
    for j, label in enumerate(model.joint_label):
        k = int(starts[j + 1] - starts[j])
        out += [label] if k == 1 else [f"{label}:{i}" for i in range(k)]
        if len(out) >= n:
            break
    return out[:n]
