"""Collects what was ignored or approximated, and reports it once per kind.

Importers and solvers call :meth:`Diagnostics.add` for each prim a kind of approximation touched;
:meth:`Diagnostics.emit` logs one warning per kind through ``logging.getLogger("newton_usd")`` with
the prim paths it touched.
"""

from __future__ import annotations

import logging

logger = logging.getLogger("newton_usd")


class Diagnostics:
    """An ordered map from a message (a kind of approximation) to the prim paths it touched."""

    def __init__(self):
        self.kinds: dict[str, list[str]] = {}
        self._seen: set[tuple[str, str]] = set()  # (kind, path): a kind touching many prims stays linear

    def add(self, kind: str, path) -> None:
        key = (kind, str(path))
        if key not in self._seen:
            self._seen.add(key)
            self.kinds.setdefault(kind, []).append(key[1])

    def emit(self, source: str | None = None, max_paths: int = 5) -> None:
        for kind, paths in self.kinds.items():
            shown = ", ".join(paths[:max_paths]) + (
                f" and {len(paths) - max_paths} more" if len(paths) > max_paths else ""
            )
            prefix = f"{source}: " if source else ""
            logger.warning("%s%s (%d prim%s: %s)", prefix, kind, len(paths), "" if len(paths) == 1 else "s", shown)

    def __bool__(self):
        return bool(self.kinds)
