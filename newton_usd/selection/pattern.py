"""Prim-path patterns: which prims of a model a view selects, one row per match and world."""

from __future__ import annotations

import re
from fnmatch import fnmatchcase

from ..errors import NewtonUsdError


def _natural_key(path: str):
    """Sort key that orders ``env_2`` before ``env_10``."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path)]


def match_prims(pattern: str, labels) -> list:
    """The prim paths matching ``pattern`` among ``labels`` and their ancestors, in natural order.

    The pattern is matched segment by segment (``fnmatch`` wildcards ``*``, ``?``, ``[...]`` inside a
    segment; a ``*`` never crosses a ``/``), so ``/World/envs/env_*/Robot`` selects each environment's
    ``Robot`` prim and nothing deeper.
    """
    if not pattern.startswith("/"):
        raise NewtonUsdError(f"prim pattern {pattern!r}: must be an absolute prim path pattern (starting with '/')")
    parts = pattern.rstrip("/").split("/")
    depth = len(parts)
    found = set()
    for label in labels:
        segments = label.split("/")
        if len(segments) < depth:
            continue
        prefix = "/".join(segments[:depth])
        if prefix in found:
            continue
        if all(fnmatchcase(s, p) for s, p in zip(segments[:depth], parts, strict=True)):
            found.add(prefix)
    return sorted(found, key=_natural_key)


def under(label: str, path: str) -> bool:
    """Whether ``label`` is the prim ``path`` or one of its descendants."""
    return label == path or label.startswith(path + "/")


def relative_name(label: str, path: str) -> str:
    """``label``'s name relative to the matched prim ``path`` (the prim itself: its own name)."""
    if label == path:
        return path.rsplit("/", 1)[-1]
    return label[len(path) + 1 :]
