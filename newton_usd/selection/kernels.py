"""Warp kernels that gather view rows out of model/state arrays and scatter them back (no host round trip).

Arrays are addressed through flat scalar views (a ``wp.transform`` array as 7 floats per element), so one
gather and one scatter serve every attribute; the index tables hold scalar indices, one row per view row.
"""

from __future__ import annotations

from typing import Any

import warp as wp


@wp.kernel
def gather_rows(
    # In:
    src: wp.array(dtype=Any),
    index: wp.array2d(dtype=wp.int32),
    # Out:
    out: wp.array2d(dtype=Any),
):
    row, col = wp.tid()
    out[row, col] = src[index[row, col]]


@wp.kernel
def scatter_rows(
    # In:
    values: wp.array2d(dtype=Any),
    value_rows: wp.array(dtype=wp.int32),
    rows: wp.array(dtype=wp.int32),
    index: wp.array2d(dtype=wp.int32),
    # Out:
    dst: wp.array(dtype=Any),
):
    i, col = wp.tid()
    r = rows[i]
    if r < 0 or r >= index.shape[0]:  # (a row out of range on the device: skipped, not written out of bounds)
        return
    dst[index[r, col]] = values[value_rows[i], col]


@wp.kernel
def worlds_of_rows(
    # In:
    rows: wp.array(dtype=wp.int32),
    row_world: wp.array(dtype=wp.int32),
    # Out:
    worlds: wp.array(dtype=wp.bool),
):
    """``worlds[w]`` set where one of ``rows`` is in world ``w`` (``worlds`` zeroed first by the caller)."""
    r = rows[wp.tid()]
    if r >= 0 and r < row_world.shape[0]:
        worlds[row_world[r]] = True


def scalar_type(dtype):
    """The scalar type of a Warp dtype (``wp.transform`` -> ``wp.float32``)."""
    return getattr(dtype, "_wp_scalar_type_", dtype)


def width(dtype) -> int:
    """Scalars per element of a Warp dtype (``wp.transform``: 7, ``wp.mat33``: 9)."""
    return int(getattr(dtype, "_length_", 1))


def numpy_dtype(scalar):
    return wp.dtype_to_numpy(scalar)


def flat(array: wp.array) -> wp.array:
    """A 1-D scalar view sharing ``array``'s memory (``n`` transforms -> ``7 n`` floats). The view does
    not own the memory: keep ``array`` alive while it is used."""
    scalar = scalar_type(array.dtype)
    if scalar is array.dtype and array.ndim == 1:
        return array
    if not array.is_contiguous:
        raise ValueError("a view needs a contiguous array")
    size = array.size * width(array.dtype)
    return wp.array(ptr=array.ptr, dtype=scalar, shape=(size,), device=array.device, copy=False)


@wp.kernel
def reciprocal(
    # In/out: masses in, inverse masses out (0 for a zero mass).
    values: wp.array2d(dtype=wp.float32),
):
    i, j = wp.tid()
    m = values[i, j]
    values[i, j] = wp.where(m > 0.0, 1.0 / m, 0.0)
