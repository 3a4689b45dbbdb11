"""Quaternion order conversions, the only place they happen.

Inside newton_usd quaternions are Warp's (x, y, z, w). ``Gf.Quat*`` is (real, imaginary) and MuJoCo
is (w, x, y, z); convert at those boundaries only, with these functions. The numpy helpers work on
single quaternions of shape (4,) and on batches of shape (..., 4).
"""

from __future__ import annotations

import numpy as np


def wxyz_to_xyzw(q):
    """MuJoCo order (w, x, y, z) to Warp order (x, y, z, w)."""
    q = np.asarray(q)
    return np.concatenate([q[..., 1:4], q[..., 0:1]], axis=-1)


def xyzw_to_wxyz(q):
    """Warp order (x, y, z, w) to MuJoCo order (w, x, y, z)."""
    q = np.asarray(q)
    return np.concatenate([q[..., 3:4], q[..., 0:3]], axis=-1)


def gf_to_xyzw(q) -> np.ndarray:
    """A ``Gf.Quatf``/``Gf.Quatd``/``Gf.Quath`` to a Warp-order numpy quaternion (float64)."""
    out = np.empty(4)
    out[:3] = q.GetImaginary()  # (the buffer of a Gf vector: no per-component calls)
    out[3] = q.GetReal()
    return out


def xyzw_to_gf(q, gf_type):
    """A Warp-order quaternion to ``gf_type`` (``Gf.Quatf`` or ``Gf.Quatd``)."""
    return gf_type(float(q[3]), float(q[0]), float(q[1]), float(q[2]))


def multiply4(a, b) -> tuple:
    """:func:`quat_multiply` of one pair given as plain floats (sequences of 4), as a tuple: the arithmetic
    of every single-quaternion product, so that results are the same bit for bit."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
        aw * bw - ax * bx - ay * by - az * bz,
    )


def rotate3(q, v) -> tuple:
    """:func:`quat_rotate` of one vector given as plain floats (``q`` 4, ``v`` 3), as a tuple (same arithmetic)."""
    x, y, z, w = q
    vx, vy, vz = v
    tx, ty, tz = 2.0 * (y * vz - z * vy), 2.0 * (z * vx - x * vz), 2.0 * (x * vy - y * vx)
    return vx + w * tx + y * tz - z * ty, vy + w * ty + z * tx - x * tz, vz + w * tz + x * ty - y * tx


def quat_multiply(a, b) -> np.ndarray:
    """Hamilton product a * b of Warp-order quaternions (batched)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim == 1 and b.ndim == 1:  # one pair: plain floats are much faster than stacking arrays
        return np.array(multiply4(a.tolist(), b.tolist()))
    ax, ay, az, aw = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bx, by, bz, bw = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = aw * bx + ax * bw + ay * bz - az * by
    out[..., 1] = aw * by - ax * bz + ay * bw + az * bx
    out[..., 2] = aw * bz + ax * by - ay * bx + az * bw
    out[..., 3] = aw * bw - ax * bx - ay * by - az * bz
    return out


def quat_conjugate(q) -> np.ndarray:
    """Conjugate (the inverse of a unit quaternion), Warp order, batched."""
    q = np.array(q, dtype=np.float64)
    q[..., :3] *= -1.0
    return q


_YZX, _ZXY = np.array([1, 2, 0]), np.array([2, 0, 1])


def cross(a, b) -> np.ndarray:
    """Cross product over the last axis (batched); much cheaper than ``np.cross`` on small arrays."""
    take = np.take
    return take(a, _YZX, -1) * take(b, _ZXY, -1) - take(a, _ZXY, -1) * take(b, _YZX, -1)


def quat_rotate(q, v) -> np.ndarray:
    """Rotate vector(s) v by unit Warp-order quaternion(s) q."""
    q = np.asarray(q, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    if q.ndim == 1 and v.ndim == 1:  # one vector: plain floats
        return np.array(rotate3(q.tolist(), v.tolist()))
    u = q[..., :3]
    w = q[..., 3:4]
    t = 2.0 * cross(u, v)
    return v + w * t + cross(u, t)


def quat_to_matrix(q) -> np.ndarray:
    """Rotation matrix (3x3, column vectors rotated: R @ v) of unit Warp-order quaternion(s)."""
    q = np.asarray(q, dtype=np.float64)
    if q.ndim == 1:  # one quaternion: plain floats
        x, y, z, w = q.tolist()
        return np.array(
            [
                [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
            ]
        )
    x, y, z, w = np.moveaxis(q, -1, 0)
    m = np.stack(
        [
            1 - 2 * (y * y + z * z),
            2 * (x * y - z * w),
            2 * (x * z + y * w),
            2 * (x * y + z * w),
            1 - 2 * (x * x + z * z),
            2 * (y * z - x * w),
            2 * (x * z - y * w),
            2 * (y * z + x * w),
            1 - 2 * (x * x + y * y),
        ],
        axis=-1,
    )
    return m.reshape(q.shape[:-1] + (3, 3))


def matrix_to_quat(m) -> np.ndarray:
    """Unit Warp-order quaternion(s) of 3x3 rotation matrices (batched, w >= 0)."""
    m = np.asarray(m, dtype=np.float64)
    shape = m.shape[:-2]
    m = m.reshape(-1, 3, 3)
    m00, m11, m22 = m[:, 0, 0], m[:, 1, 1], m[:, 2, 2]
    # Shepperd's method: for each matrix, use the largest of the four candidate pivots.
    pivots = np.stack([m00 + m11 + m22, m00 - m11 - m22, m11 - m00 - m22, m22 - m00 - m11], axis=1)
    k = np.argmax(pivots, axis=1)
    s = np.sqrt(np.maximum(pivots[np.arange(len(m)), k] + 1.0, 1e-300)) * 2.0
    q = np.empty((len(m), 4))
    cases = [
        lambda i: [m[i, 2, 1] - m[i, 1, 2], m[i, 0, 2] - m[i, 2, 0], m[i, 1, 0] - m[i, 0, 1], None],
        lambda i: [None, m[i, 0, 1] + m[i, 1, 0], m[i, 0, 2] + m[i, 2, 0], m[i, 2, 1] - m[i, 1, 2]],
        lambda i: [m[i, 0, 1] + m[i, 1, 0], None, m[i, 1, 2] + m[i, 2, 1], m[i, 0, 2] - m[i, 2, 0]],
        lambda i: [m[i, 0, 2] + m[i, 2, 0], m[i, 1, 2] + m[i, 2, 1], None, m[i, 1, 0] - m[i, 0, 1]],
    ]
    pivot_slot = [3, 0, 1, 2]  # the component the pivot determines, in (x, y, z, w) order
    for case in range(4):
        i = np.nonzero(k == case)[0]
        if not len(i):
            continue
        comps = cases[case](i)
        for c in range(4):
            q[i, c] = 0.25 * s[i] if c == pivot_slot[case] else comps[c] / s[i]
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    q *= np.where(q[:, 3:4] < 0.0, -1.0, 1.0)
    return q.reshape(shape + (4,))


def quat_from_axis_angle(axis, angle: float) -> np.ndarray:
    """Warp-order quaternion rotating by ``angle`` radians about unit ``axis``."""
    axis = np.asarray(axis, dtype=np.float64)
    s = np.sin(0.5 * angle)
    return np.array([axis[0] * s, axis[1] * s, axis[2] * s, np.cos(0.5 * angle)])


def transform_multiply(a, b):
    """Compose rigid transforms given as (position, Warp quat) pairs: the pose of b's frame in a's parent."""
    return a[0] + quat_rotate(a[1], b[0]), quat_multiply(a[1], b[1])


def transform_inverse(a):
    """Inverse of a rigid transform given as a (position, Warp quat) pair."""
    qi = quat_conjugate(a[1])
    return -quat_rotate(qi, a[0]), qi
