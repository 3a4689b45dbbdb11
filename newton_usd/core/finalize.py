"""Finalize: a builder's Python lists turned into a :class:`Model` of Warp arrays, once."""

from __future__ import annotations

import numpy as np
import warp as wp

from .deformables import tetrahedron_indices, triangle_indices
from .model import Model
from .particles import particle_runs
from .quat import (
    cross,
    quat_rotate,
)


def finalize_model(builder, device=None) -> Model:
    """The work of :meth:`ModelBuilder.finalize` on ``builder``."""
    m = Model(device)
    dev = m.device
    m.source = builder.source
    m.num_worlds = n_worlds = builder.num_worlds

    def world_of(count):  # elements are replicated world after world
        return np.repeat(np.arange(n_worlds), count // n_worlds)

    m.gravity = wp.vec3(*builder.gravity)
    for k, v in builder.mujoco.items():
        setattr(m.mujoco, k, v)
    dof_count = sum(len(qd) for qd in builder.joint_qd)
    counts = {
        "body": builder.body_count,
        "shape": builder.shape_count,
        "joint": builder.joint_count,
        "dof": dof_count,
        "equality": len(builder.equality_type),
        "site": len(builder.site_body),
    }
    for k, v in _mujoco_arrays(builder, counts).items():
        setattr(m.mujoco, k, v)
    m.mujoco_element_kind = {name: kind for kind, name in builder.mujoco_elements}

    def arr(values, dtype, shape_tail=()):
        a = np.asarray(values, dtype=np.float64 if dtype not in (wp.int32, wp.bool) else None)
        if a.size == 0:
            a = np.zeros((0,) + shape_tail)
        if dtype == wp.int32:
            a = a.astype(np.int32)
        elif dtype == wp.bool:
            a = a.astype(np.bool_)
        else:
            a = a.astype(np.float32)
        return wp.array(a, dtype=dtype, device=dev)

    def xforms(pairs):
        if not pairs:
            return arr([], wp.transform, (7,))
        p, q = zip(*pairs, strict=True)
        return arr(np.concatenate([np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)], 1),
                   wp.transform, (7,))  # fmt: skip

    m.body_count = builder.body_count
    m.body_q = xforms(builder.body_q)
    # body_qd holds the COM velocity: shift the authored origin velocity to the COM (all bodies at once).
    qd = np.asarray(builder.body_qd, dtype=np.float64).reshape(-1, 6).copy()
    if len(qd):
        rot = np.asarray([q for _, q in builder.body_q], dtype=np.float64)
        com_w = quat_rotate(rot, np.asarray(builder.body_com, dtype=np.float64))
        qd[:, :3] += cross(qd[:, 3:], com_w)
    m.body_qd = arr(qd, wp.spatial_vector, (6,))
    m.body_com = arr(builder.body_com, wp.vec3, (3,))
    mass = np.asarray(builder.body_mass, dtype=np.float64)
    m.body_mass = arr(mass, wp.float32)
    m.body_inv_mass = arr(np.where(mass > 0, 1.0 / np.maximum(mass, 1e-30), 0.0), wp.float32)
    inertia = np.asarray(builder.body_inertia).reshape(-1, 3, 3)
    m.body_inertia = arr(inertia, wp.mat33, (3, 3))
    invertible = np.linalg.det(inertia) > 0 if len(inertia) else np.zeros(0, dtype=bool)
    inv = np.zeros_like(inertia, dtype=np.float64)
    inv[invertible] = np.linalg.inv(inertia[invertible])  # (batched)
    m.body_inv_inertia = arr(inv, wp.mat33, (3, 3))
    m.body_world = arr(world_of(builder.body_count), wp.int32)
    m.body_kinematic = arr(builder.body_kinematic, wp.bool)
    m.body_max_velocity = arr(np.asarray(builder.body_max_velocity, dtype=np.float64).reshape(-1, 2), wp.vec2, (2,))
    m.body_label = list(builder.body_label)

    m.shape_count = builder.shape_count
    m.shape_body = arr(builder.shape_body, wp.int32)
    m.shape_type = arr([int(t) for t in builder.shape_type], wp.int32)
    m.shape_transform = xforms(builder.shape_transform)
    m.shape_scale = arr(builder.shape_scale, wp.vec3, (3,))
    m.shape_source = list(builder.shape_source)
    m.shape_collision_enabled = arr(builder.shape_collision_enabled, wp.bool)
    m.shape_material_mu = arr(builder.shape_material_mu, wp.float32)
    m.shape_material_restitution = arr(builder.shape_material_restitution, wp.float32)
    m.shape_material_mu_torsional = arr(builder.shape_material_mu_torsional, wp.float32)
    m.shape_material_mu_rolling = arr(builder.shape_material_mu_rolling, wp.float32)
    m.shape_margin = arr(builder.shape_margin, wp.float32)
    m.shape_gap = arr(builder.shape_gap, wp.float32)
    m.shape_sdf = list(builder.shape_sdf)
    m.shape_world = arr(world_of(builder.shape_count), wp.int32)
    m.shape_label = list(builder.shape_label)

    m.joint_count = builder.joint_count
    counts = np.array(
        [(len(q), len(qd)) for q, qd in zip(builder.joint_q, builder.joint_qd, strict=True)], dtype=np.int64
    )
    counts = counts.reshape(-1, 2)
    q_start = np.concatenate([[0], np.cumsum(counts[:, 0])])
    qd_start = np.concatenate([[0], np.cumsum(counts[:, 1])])
    m.joint_coord_count = int(q_start[-1])
    m.joint_dof_count = int(qd_start[-1])
    m.joint_type = arr([int(t) for t in builder.joint_type], wp.int32)
    m.joint_parent = arr(builder.joint_parent, wp.int32)
    m.joint_child = arr(builder.joint_child, wp.int32)
    m.joint_X_p = xforms(builder.joint_X_p)
    m.joint_X_c = xforms(builder.joint_X_c)
    m.joint_dof_dim = arr(np.asarray(builder.joint_dof_dim, dtype=np.int64).reshape(-1, 2), wp.int32, (2,))
    m.joint_q_start = arr(q_start, wp.int32)
    m.joint_qd_start = arr(qd_start, wp.int32)
    m.joint_q = arr(np.concatenate(builder.joint_q) if builder.joint_q else [], wp.float32)
    m.joint_qd = arr(np.concatenate(builder.joint_qd) if builder.joint_qd else [], wp.float32)
    m.joint_axis = arr(builder.joint_axis, wp.vec3, (3,))
    m.joint_limited = arr(builder.joint_limited, wp.bool)
    m.joint_limit_lower = arr(np.maximum(builder.joint_limit_lower, -1e10), wp.float32)
    m.joint_limit_upper = arr(np.minimum(builder.joint_limit_upper, 1e10), wp.float32)
    m.joint_target_ke = arr(builder.joint_target_ke, wp.float32)
    m.joint_target_kd = arr(builder.joint_target_kd, wp.float32)
    m.joint_target_mode = arr(builder.joint_target_mode, wp.int32)
    m.joint_target_pos = arr(builder.joint_target_pos, wp.float32)
    m.joint_target_vel = arr(builder.joint_target_vel, wp.float32)
    m.joint_effort_limit = arr(np.minimum(builder.joint_effort_limit, 1e10), wp.float32)
    m.joint_drive_acceleration = arr(builder.joint_drive_acceleration, wp.bool)
    m.joint_limit_ke = arr(builder.joint_limit_ke, wp.float32)
    m.joint_limit_kd = arr(builder.joint_limit_kd, wp.float32)
    m.joint_armature = arr(builder.joint_armature, wp.float32)
    m.joint_friction = arr(builder.joint_friction, wp.float32)
    m.joint_articulation = arr(builder.joint_articulation, wp.int32)
    m.joint_world = arr(world_of(builder.joint_count), wp.int32)
    m.joint_label = list(builder.joint_label)

    m.equality_count = len(builder.equality_type)
    m.equality_type = arr(builder.equality_type, wp.int32)
    m.equality_body1 = arr(builder.equality_body1, wp.int32)
    m.equality_body2 = arr(builder.equality_body2, wp.int32)
    m.equality_anchor = arr(builder.equality_anchor, wp.vec3, (3,))
    m.equality_active = arr(builder.equality_active, wp.bool)
    # NaN rows: the initial relative pose (computed by the solver)
    relpose = [np.concatenate(r) if r is not None else np.full(7, np.nan) for r in builder.equality_relpose]
    m.equality_relpose = np.asarray(relpose, dtype=np.float64).reshape(-1, 7)
    m.equality_label = list(builder.equality_label)
    anchor2 = [a if a is not None else np.full(3, np.nan) for a in builder.equality_anchor2]
    m.equality_anchor2 = np.asarray(anchor2, dtype=np.float64).reshape(-1, 3)  # NaN: computed by the solver
    m.equality_joint1 = arr(builder.equality_joint1, wp.int32)
    m.equality_joint2 = arr(builder.equality_joint2, wp.int32)
    m.equality_polycoef = np.asarray(builder.equality_polycoef, dtype=np.float64).reshape(-1, 5)
    _finalize_keyframes(builder, m, q_start, qd_start)

    m.distance_count = len(builder.distance_label)
    m.distance_body0 = arr(builder.distance_body0, wp.int32)
    m.distance_body1 = arr(builder.distance_body1, wp.int32)
    m.distance_anchor0 = arr(builder.distance_anchor0, wp.vec3, (3,))
    m.distance_anchor1 = arr(builder.distance_anchor1, wp.vec3, (3,))
    m.distance_min = arr(builder.distance_min, wp.float32)
    m.distance_max = arr(builder.distance_max, wp.float32)
    m.distance_label = list(builder.distance_label)

    m.body_collision_filter_pairs = list(builder.body_collision_filter_pairs)
    m.body_shape_collision_filter_pairs = list(builder.body_shape_collision_filter_pairs)
    m.element_names = dict(builder.element_names)
    m.site_count = len(builder.site_label)
    m.site_body = arr(builder.site_body, wp.int32)
    m.site_transform = xforms(builder.site_transform)
    m.site_type = arr([int(t) for t in builder.site_type], wp.int32)
    m.site_size = arr(builder.site_size, wp.vec3, (3,))
    m.site_label = list(builder.site_label)
    m.articulation_count = len(builder.articulation_label)
    m.articulation_label = list(builder.articulation_label)
    m.actuator_count = len(builder.actuator_label)
    m.actuator_joint = arr(builder.actuator_joint, wp.int32)
    m.actuator_spec = list(builder.actuator_spec)
    m.actuator_label = list(builder.actuator_label)
    _finalize_particles(builder, m, arr)
    return m


def _finalize_particles(builder, m, arr) -> None:
    """``particle_q``, ``particle_qd`` (initial), ``particle_mass``, ``particle_radius``, ``particle_label`` (per
    particle: its prim path), ``particle_world``, ``particle_groups`` (prim path -> its run), ``particle_runs`` (every
    world's run of every prim: :func:`~newton_usd.core.particles.particle_runs`) and ``particle_attributes`` (numpy
    float64 per name, NaN: the solver's default), ``mpm_config`` (the MPM scene's solver settings), ``cloth`` (the cloth
    prims' :class:`~newton_usd.core.deformables.Cloth` records), ``tri_indices`` (their triangles' particles),
    ``volumes`` and ``tet_indices`` (the soft volumes' records and tetrahedra),
    ``vbd_config`` (the VBD scene's settings)."""
    m.particle_count = builder.particle_count
    m.particle_q = arr(builder.particle_q, wp.vec3, (3,))
    m.particle_qd = arr(builder.particle_qd, wp.vec3, (3,))
    m.particle_mass = arr(builder.particle_mass, wp.float32)
    m.particle_radius = arr(builder.particle_radius, wp.float32)
    m.particle_groups = dict(builder.particle_groups)
    m.particle_runs = particle_runs(builder.particle_groups, builder.particle_count, builder.num_worlds)
    label = [None] * builder.particle_count
    for path, first, end, _ in m.particle_runs:
        label[first:end] = [path] * (end - first)
    m.particle_label = label
    per_world = builder.particle_count // builder.num_worlds
    m.particle_world = arr(np.repeat(np.arange(builder.num_worlds), per_world), wp.int32)
    m.particle_attributes = {k: np.asarray(v, dtype=np.float64) for k, v in builder.particle_attributes.items()}
    m.mpm_config = dict(builder.mpm_config)
    m.cloth, m.vbd_config = list(builder.cloth), dict(builder.vbd_config)  # (cloth: its triangles, host side)
    m.tri_indices = arr(triangle_indices(builder.cloth), wp.int32, (3,))
    m.tri_count = len(m.tri_indices)
    m.volumes = list(builder.volumes)
    m.tet_indices = arr(tetrahedron_indices(builder.volumes), wp.int32, (4,))
    m.tet_count = len(m.tet_indices)
    m.cables = list(builder.cables)  # (core/cables' Cable records: segment bodies, rod joints, rest rotations)


def _mujoco_arrays(builder, counts: dict) -> dict:
    out = {}
    for (kind, name), values in builder.mujoco_elements.items():
        width = max((np.size(v) for v in values.values()), default=1)
        arr = np.full((counts[kind], width) if width > 1 else counts[kind], np.nan)
        for i, v in values.items():
            arr[i] = v
        out[name] = arr
    return out


def _finalize_keyframes(builder, m, q_start, qd_start):
    """``keyframe_label``, ``keyframe_time`` and full ``keyframe_joint_q``/``keyframe_joint_qd`` rows
    (float64 numpy, every world alike; joints a keyframe does not name keep their initial values)."""
    m.keyframe_label = list(builder.keyframes)
    m.keyframe_time = np.array([k.time for k in builder.keyframes.values()], dtype=np.float64)
    q0 = np.concatenate(builder.joint_q) if builder.joint_q else np.zeros(0)
    qd0 = np.concatenate(builder.joint_qd) if builder.joint_qd else np.zeros(0)
    nj = builder.joint_count // builder.num_worlds
    rows_q, rows_qd = [], []
    for key in builder.keyframes.values():
        q, qd = q0.copy(), qd0.copy()
        for w in range(builder.num_worlds):
            for j, v in key.joint_q.items():
                q[q_start[j + w * nj] : q_start[j + w * nj + 1]] = v
            for j, v in key.joint_qd.items():
                qd[qd_start[j + w * nj] : qd_start[j + w * nj + 1]] = v
        for j, v in (key.world_joint_q or {}).items():
            q[q_start[j] : q_start[j + 1]] = v
        for j, v in (key.world_joint_qd or {}).items():
            qd[qd_start[j] : qd_start[j + 1]] = v
        rows_q.append(q)
        rows_qd.append(qd)
    m.keyframe_joint_q = np.asarray(rows_q, dtype=np.float64).reshape(len(rows_q), len(q0))
    m.keyframe_joint_qd = np.asarray(rows_qd, dtype=np.float64).reshape(len(rows_qd), len(qd0))
