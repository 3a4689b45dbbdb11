"""The sweep's progress bar on stderr: runs done, failures, rate and ETA (tqdm)."""

from __future__ import annotations

import sys


class Progress:
    """Counts finished runs; draws a bar when ``enabled`` and stderr is a terminal."""

    def __init__(self, total: int, enabled: bool = True, skipped: int = 0):
        self.failed = 0
        self.bar = None
        if enabled and total and sys.stderr.isatty():
            from tqdm import tqdm  # noqa: PLC0415

            note = f" ({skipped} resumed)" if skipped else ""
            self.bar = tqdm(total=total, unit="run", desc=f"usdsim batch{note}", file=sys.stderr, dynamic_ncols=True)

    def update(self, result: dict) -> None:
        """One run finished with ``result``."""
        if result.get("status") != "ok":
            self.failed += 1
        if self.bar is not None:
            if self.failed:
                self.bar.set_postfix(failed=self.failed, refresh=False)
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
