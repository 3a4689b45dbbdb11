"""The sweep's table: one row per run, in ``DIR/runs.csv`` (always) and ``DIR/runs.parquet`` (with pyarrow).

Columns: ``index`` (the run's place in the sweep), ``stage``, ``run`` (its directory under
``DIR/runs/``), one column per varied attribute named ``PRIM.ATTR`` (the value as parsed by the
attribute's type; vectors as tuples), ``status`` (ok, failed, timeout, crashed), ``exit_code``,
``error``, ``frames``, ``steps``, ``sim_seconds``, ``steps_per_second``, ``wall_seconds``, ``resumed``
(the row comes from an earlier sweep, ``--resume``), ``output``, then the recorded values
(``PRIM@end.x`` .. ``PRIM@end.qw``, ``PRIM.ATTR@end``).
"""

from __future__ import annotations

import csv
import os

RESULT_COLUMNS = ("status", "exit_code", "error", "frames", "steps", "sim_seconds", "steps_per_second",
                  "wall_seconds", "resumed", "output")  # fmt: skip


def make_row(job, result: dict, resumed: bool = False) -> dict:
    """The table row of ``job`` from its result."""
    row = {"index": job.index, "stage": job.stage, "run": job.name, **job.values}
    for key in RESULT_COLUMNS:
        row[key] = result.get(key)
    row["status"] = result.get("status") or ("ok" if result.get("exit_code") == 0 else "failed")
    row["resumed"] = resumed
    row.update(result.get("recorded") or {})
    return row


def columns(rows) -> list:
    """Every column of ``rows``, in the order first seen."""
    return list(dict.fromkeys(key for row in rows for key in row))


def write_table(directory: str, rows: list) -> tuple:
    """Write ``runs.csv`` (and ``runs.parquet`` when pyarrow is installed); returns their paths (or None)."""
    os.makedirs(directory, exist_ok=True)
    names = columns(rows)
    csv_path = os.path.join(directory, "runs.csv")
    tmp = csv_path + ".tmp"
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=names)
        writer.writeheader()
        writer.writerows({k: _cell(v) for k, v in row.items()} for row in rows)
    os.replace(tmp, csv_path)
    try:
        import pyarrow as pa  # noqa: PLC0415
        import pyarrow.parquet as pq  # noqa: PLC0415
    except ImportError:
        return csv_path, None
    parquet_path = os.path.join(directory, "runs.parquet")
    arrays = {}
    for name in names:
        values = [row.get(name) for row in rows]
        try:
            arrays[name] = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed types (a value that did not parse): as text
            arrays[name] = pa.array([None if v is None else str(_cell(v)) for v in values])
    pq.write_table(pa.table(arrays), parquet_path)
    return csv_path, parquet_path


def read_csv(path: str) -> list:
    """The rows of a ``runs.csv`` as dicts of strings (empty cells: None)."""
    with open(path, newline="") as f:
        return [{k: (v if v != "" else None) for k, v in row.items()} for row in csv.DictReader(f)]


def _cell(value):
    """A CSV cell: vectors as their numbers separated by spaces (as ``--set`` takes them)."""
    if isinstance(value, tuple | list):
        return " ".join(str(v) for v in value)
    return value
