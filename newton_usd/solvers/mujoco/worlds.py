"""Worlds: one MjModel for every world until their values differ (domain randomization, environments at their
own places), then an MjModel per world; the places of world-attached elements in each world."""

from __future__ import annotations

import copy

import numpy as np

from ...core.quat import quat_conjugate, quat_multiply, quat_rotate, wxyz_to_xyzw, xyzw_to_wxyz
from ...core.types import JointType
from ...errors import NewtonUsdError


class WorldModels:
    """:class:`~newton_usd.solvers.mujoco.SolverMuJoCo`'s MjModel per world (:attr:`mj_models`)."""

    def _worlds_differ(self, model, names) -> bool:
        """Whether any value named in ``names`` differs between the worlds of ``model``."""
        if self.num_worlds == 1:
            return False
        for name in names:
            if name == "gravity":
                continue
            values = self._per_world(getattr(model, name), np.float64).reshape(self.num_worlds, -1)
            if not np.array_equal(values, np.broadcast_to(values[:1], values.shape)):
                return True
        return False

    def _split_models(self, model):
        """Give every world an MjModel of its own, holding that world's values (domain randomization)."""
        if self.mj_models[-1] is not self.mj_model:
            return
        self.mj_models = [self.mj_model] + [copy.copy(self.mj_model) for _ in range(self.num_worlds - 1)]
        names = self._IN_PLACE - {"gravity"}
        if self._worlds_differ(model, names):
            for w in range(1, self.num_worlds):
                self._write_parameters(w, model.world_view(w), names)
        for (pos_field, quat_field), (ids, pos, quat) in self._placements.items():
            for w in range(1, self.num_worlds):
                m = self.mj_models[w]
                getattr(m, pos_field)[ids] = pos[w]
                getattr(m, quat_field)[ids] = quat[w]


_PLACEMENT_TOLERANCE = 1e-9


def world_placements(model, mj_model, smap) -> dict:
    """The MuJoCo elements attached to the world body whose place differs between the worlds of ``model``
    (environments at their own places, see ``ModelBuilder.replicate``'s placements): the root bodies
    of non-free joints to the world (fixed bases: the world side of the joint) and jointless bodies, the
    static geoms and the sites on the world. Returns ``{(pos field, quat field): (MuJoCo ids, positions
    (worlds, n, 3), quaternions wxyz (worlds, n, 4))}`` for those that differ: world w's value is world 0's
    compiled one moved by the rigid motion from the element's place in world 0 to its place in world w
    (so what the compiler derived, e.g. a mesh geom's offset to its centroid, moves with it)."""
    W = model.num_worlds
    if W == 1:
        return {}
    per = {kind: getattr(model, f"{kind}_count") // W for kind in ("body", "shape", "joint")}
    per["site"] = getattr(model, "site_count", 0) // W
    parent, child = model.joint_parent.numpy()[: per["joint"]], model.joint_child.numpy()[: per["joint"]]
    jtype = model.joint_type.numpy()[: per["joint"]]
    first_joint = {}
    for j in range(per["joint"]):
        first_joint.setdefault(int(child[j]), j)
    roots, root_rows, root_source = [], [], []
    for b in range(per["body"]):
        j = first_joint.get(b)
        if j is None:
            roots.append(b)
            root_rows.append(b)
            root_source.append("body_q")
        elif parent[j] < 0 and jtype[j] != JointType.FREE:
            roots.append(b)
            root_rows.append(j)
            root_source.append("joint_X_p")
    groups = []
    if roots:
        places = np.zeros((W, len(roots), 7))
        for source in ("body_q", "joint_X_p"):
            sel = [k for k, src in enumerate(root_source) if src == source]
            if sel:
                rows = np.array(root_rows)[sel]
                places[:, sel] = model_rows(model, source, per["body" if source == "body_q" else "joint"], rows)
        groups.append((("body_pos", "body_quat"), smap.body_mj[roots], places))
    static = [s for s in np.nonzero(model.shape_body.numpy()[: per["shape"]] < 0)[0] if smap.shape_mj[s] >= 0]
    if static:
        places = model_rows(model, "shape_transform", per["shape"], np.array(static))
        groups.append((("geom_pos", "geom_quat"), smap.shape_mj[static], places))
    if per["site"]:
        world_sites = np.nonzero(model.site_body.numpy()[: per["site"]] < 0)[0]
        if len(world_sites):
            places = model_rows(model, "site_transform", per["site"], world_sites)
            groups.append((("site_pos", "site_quat"), smap.site_mj[world_sites], places))
    _check_world_constraints(model)
    out = {}
    for fields, ids, places in groups:
        # The rigid motion from world 0's place to world w's: D = P_w * inverse(P_0).
        q0_inv = quat_conjugate(places[0, :, 3:])
        dq = quat_multiply(places[:, :, 3:], np.broadcast_to(q0_inv, places[:, :, 3:].shape))
        dp = places[:, :, :3] - quat_rotate(dq, np.broadcast_to(places[0, :, :3], places[:, :, :3].shape))
        moved = (np.abs(dp).max(axis=(0, 2)) > _PLACEMENT_TOLERANCE) | (
            np.abs(np.abs(dq[..., 3]) - 1.0).max(axis=0) > _PLACEMENT_TOLERANCE
        )
        if not moved.any():
            continue
        ids = np.asarray(ids)[moved]
        dq, dp = dq[:, moved], dp[:, moved]
        pos0 = np.asarray(getattr(mj_model, fields[0]))[ids]
        quat0 = wxyz_to_xyzw(np.asarray(getattr(mj_model, fields[1]))[ids])
        pos = dp + quat_rotate(dq, np.broadcast_to(pos0, dp.shape))
        quat = quat_multiply(dq, np.broadcast_to(quat0, dq.shape))
        out[fields] = (ids, pos, xyzw_to_wxyz(quat))
    return out


def model_rows(model, name, per_world, rows) -> np.ndarray:
    """Rows ``rows`` (world 0 indices) of a model array in every world: ``(worlds, len(rows), ...)``."""
    values = getattr(model, name).numpy().astype(np.float64)
    return values.reshape((model.num_worlds, per_world) + values.shape[1:])[:, rows]


def _check_world_constraints(model) -> None:
    """Equality and distance constraints to the world must sit at the same place in every world (their
    anchors are compiled once, into world 0's model)."""
    W = model.num_worlds
    checks = []
    ne = model.equality_count // W
    if ne:
        to_world = np.nonzero((model.equality_body1.numpy()[:ne] < 0) | (model.equality_body2.numpy()[:ne] < 0))[0]
        to_world = to_world[model.equality_type.numpy()[to_world] != 2]  # (joint equalities have no anchors)
        for name in ("equality_anchor", "equality_anchor2", "equality_relpose"):
            values = getattr(model, name)
            values = values.numpy() if hasattr(values, "numpy") else np.asarray(values)
            checks.append((values.reshape((W, ne) + values.shape[1:])[:, to_world], model.equality_label, to_world))
    nd = getattr(model, "distance_count", 0) // W
    if nd:
        to_world = np.nonzero((model.distance_body0.numpy()[:nd] < 0) | (model.distance_body1.numpy()[:nd] < 0))[0]
        for name in ("distance_anchor0", "distance_anchor1"):
            values = getattr(model, name).numpy()
            checks.append((values.reshape((W, nd) + values.shape[1:])[:, to_world], model.distance_label, to_world))
    for values, labels, rows in checks:
        if not len(rows):
            continue
        same = np.isclose(values, values[:1], atol=_PLACEMENT_TOLERANCE, equal_nan=True)
        differ = ~same.reshape(W, len(rows), -1).all(axis=(0, 2))
        if differ.any():
            raise NewtonUsdError(
                f"{labels[int(rows[np.argmax(differ)])]}: a constraint to the world at a different place in each "
                "world is not supported by SolverMuJoCo yet (its anchor is compiled once, for world 0)"
            )
