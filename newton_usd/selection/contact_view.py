"""RigidContactView: contact forces on matched bodies, in total and per filter prim (the tensor API's shape)."""

from __future__ import annotations

import numpy as np
import warp as wp

from ..errors import NewtonUsdError
from .pattern import match_prims
from .rigid_body_view import RigidBodyView


@wp.func
def add_force(
    row: int,
    other: int,
    f: wp.vec3,
    shape_filter: wp.array(dtype=wp.int32),
    net: wp.array2d(dtype=wp.float32),
    matrix: wp.array3d(dtype=wp.float32),
):
    """Add the force ``f`` on the sensor body of ``row`` (-1: none) from the shape ``other``."""
    if row < 0:
        return
    column = int(-1)
    if other >= 0:
        column = shape_filter[other]
    for k in range(3):
        wp.atomic_add(net, row, k, f[k])
        if column >= 0:
            wp.atomic_add(matrix, row, column, k, f[k])


@wp.kernel
def accumulate_contact_forces(
    # Contacts:
    count: int,
    shape0: wp.array(dtype=wp.int32),
    shape1: wp.array(dtype=wp.int32),
    force: wp.array(dtype=wp.vec3),
    # Tables:
    shape_row: wp.array(dtype=wp.int32),
    shape_filter: wp.array(dtype=wp.int32),
    # Out:
    net: wp.array2d(dtype=wp.float32),
    matrix: wp.array3d(dtype=wp.float32),
):
    i = wp.tid()
    if i >= count:
        return
    s0 = shape0[i]
    s1 = shape1[i]
    f = force[i]  # on shape1, by shape0
    if s1 >= 0:
        add_force(shape_row[s1], s0, f, shape_filter, net, matrix)
    if s0 >= 0:
        add_force(shape_row[s0], s1, -f, shape_filter, net, matrix)


def _want_forces(solver) -> None:
    """A solver that computes its contact forces only once asked (vbd: ``want_contact_forces``) asked to."""
    want = getattr(solver, "want_contact_forces", None)
    if want is not None:
        want()


class RigidContactView(RigidBodyView):
    """Contact forces on the bodies matched by ``pattern`` (a row per body and world), from the solver's
    ``update_contacts`` at each read.

    Args:
        target: a Simulation, or a Model with ``state`` and ``solver``.
        pattern: the sensor bodies' prim pattern (``"/World/envs/env_*/Robot/foot"``).
        filter_patterns: prim patterns of what the force matrix's columns count contacts with: bodies or
            static colliders (``"/World/ground"``), one column per pattern; a row's column sums the contacts
            with the matching prims of its world and the shared ones.
        capacity: contacts kept per read, all worlds together (default 64 per world, at least 1,024).
    """

    def __init__(self, target, pattern, filter_patterns=None, *, capacity=None, **pieces):
        self.filter_patterns = list(filter_patterns or [])
        self._capacity = capacity
        super().__init__(target, pattern, **pieces)

    def _built(self, model):
        super()._built(model)
        shape_body = model.shape_body.numpy()
        row_of_body = np.full(model.body_count, -1, dtype=np.int32)
        row_of_body[self._rows.columns["body"][:, 0]] = np.arange(self._rows.count, dtype=np.int32)
        shape_row = np.where(shape_body >= 0, row_of_body[np.maximum(shape_body, 0)], -1).astype(np.int32)
        shape_filter = np.full(model.shape_count, -1, dtype=np.int32)
        labels = list(model.body_label) + list(model.shape_label)
        for k, pattern in enumerate(self.filter_patterns):
            paths = set(match_prims(pattern, labels))
            hit = [
                s for s in range(model.shape_count)
                if (shape_body[s] >= 0 and _under_any(model.body_label[shape_body[s]], paths))
                or _under_any(model.shape_label[s], paths)
            ]  # fmt: skip
            if not hit:
                raise NewtonUsdError(f"filter pattern {pattern!r} matches no collider")
            shape_filter[hit] = k
        self._shape_row = wp.array(shape_row, dtype=wp.int32, device=model.device)
        self._shape_filter = wp.array(shape_filter, dtype=wp.int32, device=model.device)
        capacity = self._capacity or max(1024, 64 * model.num_worlds)
        self.contacts = model.contacts(capacity)
        _want_forces(getattr(self._source, "solver", None))

    def update(self):
        """Read the solver's contacts (done by the getters): a sync point (they are read on the host)."""
        self._sync()
        self._source.synchronize()
        solver = self._source.solver
        if solver is None:
            raise NewtonUsdError("a contact view needs a solver")
        solver.update_contacts(self.contacts)
        _want_forces(solver)
        return self.contacts

    def _forces(self):
        c = self.update()
        device = self._model.device
        net = wp.zeros((self.count, 3), dtype=wp.float32, device=device)
        matrix = wp.zeros((self.count, max(len(self.filter_patterns), 1), 3), dtype=wp.float32, device=device)
        if c.rigid_contact_count:
            wp.launch(
                accumulate_contact_forces, dim=c.rigid_contact_count,
                inputs=[c.rigid_contact_count, c.rigid_contact_shape0, c.rigid_contact_shape1, c.rigid_contact_force,
                        self._shape_row, self._shape_filter],
                outputs=[net, matrix], device=device,
            )  # fmt: skip
        return net, matrix

    def get_net_contact_forces(self):
        """The total contact force on each body ``(count, 3)`` (N, world frame)."""
        net, _ = self._forces()
        return net

    def get_contact_force_matrix(self):
        """The contact force on each body from each filter prim ``(count, filters, 3)`` (N, world frame)."""
        if not self.filter_patterns:
            raise NewtonUsdError("get_contact_force_matrix needs filter_patterns")
        _, matrix = self._forces()
        return matrix


def _under_any(label, paths) -> bool:
    return any(label == p or label.startswith(p + "/") for p in paths)
