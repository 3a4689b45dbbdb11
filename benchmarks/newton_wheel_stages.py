"""Every USD stage the ``newton`` wheel ships, under each engine, as a user meets it: ``usdsim`` and ``Simulation``.

For each stage of ``newton/examples/assets`` and ``newton/tests/assets`` (``*.usd``, ``*.usda``, ``*.usdc``) and
each engine (``--engines``, default mujoco, xpbd, featherstone), two runs of ``--frames`` frames on Warp's CPU:

- **usdsim**: ``usdsim STAGE --solver ENGINE -n FRAMES``, all of them through ``usdsim batch``'s own runner
  (:func:`newton_usd.batch.run_sweep`: a process per run, ``--timeout`` each); the farthest any rigid body moved from
  its start is read from the output stage it wrote (every frame, world positions, in m).
- **Python**: ``Simulation.open(STAGE, solver=ENGINE, device="cpu").run(FRAMES)`` in a process of its own (forked
  from a preloaded server, killed at ``--timeout``), the farthest displacement read from the State every frame; a
  ``NewtonUsdError`` at open is "refused", a ``SimulationError`` "blows up".

A stage that blows up at a step shorter than the solver estimates stable (its error names ``--substeps``) runs once
more through usdsim with ``--substeps auto`` (the named step), and the cell says what that gave.

Each (stage, engine, path) result is a JSON file under ``--out``; a result already there is kept (``--rerun GLOB``
runs the stages matching GLOB again). The table (a row per stage, a cell per engine: what usdsim did, and where
the Python run differs, what it did) is printed, and with ``--docs FILE`` written into FILE between the lines
``<!-- wheel table -->`` and ``<!-- end wheel table -->`` (docs/stages_compat.md).

    python benchmarks/newton_wheel_stages.py --out /tmp/wheel --docs docs/stages_compat.md    # about 1 h, 2 cores
    python benchmarks/newton_wheel_stages.py --out /tmp/wheel --rerun '*kamino/basics/cartpole*' --engines xpbd
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import multiprocessing
import os
import sys
import time
from pathlib import Path

TIMEOUT = 180.0
FRAMES = 60
TABLE_START, TABLE_END = "<!-- wheel table -->", "<!-- end wheel table -->"


def wheel_stages() -> tuple[Path, list[Path]]:
    """(the newton package's folder, its USD stages: examples and test assets, sorted)."""
    import newton  # noqa: PLC0415

    root = Path(newton.__file__).parent
    stages = [
        p
        for folder in ("examples/assets", "tests/assets")
        for p in (root / folder).rglob("*")
        if p.suffix in (".usd", ".usda", ".usdc")
    ]
    return root, sorted(stages)


def farthest_in_output(output: str) -> float | None:
    """m: the farthest any rigid body of ``output`` (a usdsim output stage) is, at any written frame, from where it
    is at the first; None where it has no moving rigid body."""
    import numpy as np  # noqa: PLC0415
    from pxr import Usd, UsdGeom, UsdPhysics  # noqa: PLC0415

    stage = Usd.Stage.Open(output)
    bodies = [p for p in stage.Traverse() if p.HasAPI(UsdPhysics.RigidBodyAPI) and p.IsA(UsdGeom.Xformable)]
    if not bodies:
        return None
    start, end = stage.GetStartTimeCode(), stage.GetEndTimeCode()
    positions = []
    for t in range(int(math.floor(start)), int(math.ceil(end)) + 1):
        cache = UsdGeom.XformCache(t)
        positions.append([list(cache.GetLocalToWorldTransform(p).ExtractTranslation()) for p in bodies])
    pos = np.asarray(positions, dtype=np.float64) * UsdGeom.GetStageMetersPerUnit(stage)
    return float(np.max(np.linalg.norm(pos - pos[:1], axis=2)))


def usdsim_runs(stages, engine: str, out: Path, frames: int, timeout: float, jobs: int, **options) -> list[dict]:
    """``usdsim`` on each stage under ``engine`` (``usdsim batch``'s runner; ``options``: more run options, e.g.
    ``substeps="auto"``); a result per stage."""
    from newton_usd.batch import run_sweep  # noqa: PLC0415

    spec = {"stages": [str(s) for s in stages], "frames": frames, "solver": engine, "device": "cpu", **options}
    tag = "-".join([engine, *(f"{k}-{v}" for k, v in options.items())])
    result = run_sweep(spec, str(out / f"batch-{tag}"), jobs=jobs, timeout=timeout)
    results = []
    for row in result.rows:
        output = row.get("output")
        moved = None
        if row["exit_code"] == 0 and output and os.path.exists(output):
            moved = farthest_in_output(output)
        results.append({"stage": row["stage"], "exit_code": int(row["exit_code"]), "error": row["error"] or None,
                        "moved": moved, "seconds": row.get("wall_seconds")})  # fmt: skip
    return results


def _python_run(stage: str, engine: str, frames: int, result_path: str) -> None:  # (in the forked process)
    import numpy as np  # noqa: PLC0415

    from newton_usd.cli.common import forward_only_kernels  # noqa: PLC0415

    forward_only_kernels()  # (as usdsim: no adjoints compiled)
    from newton_usd.errors import NewtonUsdError, SimulationError  # noqa: PLC0415
    from newton_usd.sim import Simulation  # noqa: PLC0415

    out = {"stage": stage, "exit_code": 0, "error": None, "moved": None}
    t0 = time.perf_counter()
    try:
        sim = Simulation.open(stage, solver=engine, device="cpu")
    except NewtonUsdError as e:
        out.update(exit_code=2, error=str(e).splitlines()[0])
    else:
        start = sim.state.body_q.numpy()[:, :3].astype(np.float64)
        farthest = [0.0]

        def progress(_n):
            moved = np.linalg.norm(sim.state.body_q.numpy()[:, :3] - start, axis=1)
            farthest[0] = max(farthest[0], float(np.max(moved, initial=0.0)))

        try:
            sim.run(frames, progress=progress)
            out["moved"] = farthest[0] if len(start) else None
        except SimulationError as e:
            out.update(exit_code=3, error=str(e).splitlines()[0])
    out["seconds"] = time.perf_counter() - t0
    Path(result_path).write_text(json.dumps(out))
    os._exit(0)


def python_run(stage: Path, engine: str, out: Path, frames: int, timeout: float) -> dict:
    """``Simulation`` from Python on ``stage`` under ``engine``, in a forked process killed at ``timeout``."""
    from newton_usd.batch.worker import PRELOAD  # noqa: PLC0415

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    path = out / f"python-{engine}-{abs(hash(str(stage)))}.tmp.json"
    path.unlink(missing_ok=True)
    process = context.Process(target=_python_run, args=(str(stage), engine, frames, str(path)))
    process.start()  # (the server imports this script as its __main__: its target is here)
    process.join(timeout)
    if process.exitcode is None:
        process.kill()
        process.join()
        return {"stage": str(stage), "exit_code": 124, "error": f"did not finish in {timeout:g} s", "moved": None}
    if not path.exists():
        return {"stage": str(stage), "exit_code": 1, "error": f"crashed (exit {process.exitcode})", "moved": None}
    result = json.loads(path.read_text())
    path.unlink()
    return result


def cell(result: dict | None) -> str:
    """What a user gets, in a few words."""
    if result is None:
        return "not run"
    code, error = result["exit_code"], (result["error"] or "").replace("|", "/")
    error = error.replace(f"{result['stage']}: ", "").replace(result["stage"], "the stage")  # (said by the row)
    if code == 0:
        moved = result["moved"]
        return "runs" if moved is None else f"runs ({moved:.2f} m)"
    if code == 2:
        return f"refused: {error}"
    if code == 3:
        return f"blows up (exit 3): {error}"
    if code == 124:
        return f"did not finish in the time limit ({error})"
    return f"**fails (exit {code})**: {error}"


def same(a: dict | None, b: dict | None) -> bool:
    """Whether the usdsim run and the Python run ended alike (exit status; distance within 1 cm)."""
    if a is None or b is None or a["exit_code"] != b["exit_code"]:
        return False
    if a["exit_code"] == 0 and (a["moved"] is None) != (b["moved"] is None):
        return False
    return a["moved"] is None or b["moved"] is None or abs(a["moved"] - b["moved"]) < 0.01


def table(root: Path, stages: list[Path], engines: list[str], results: dict) -> str:
    lines = ["| stage | " + " | ".join(engines) + " |", "| --- |" + " --- |" * len(engines)]
    for stage in stages:
        if not any((str(stage), engine, path) in results for engine in engines for path in ("usdsim", "python")):
            continue
        cells = []
        for engine in engines:
            a, b = results.get((str(stage), engine, "usdsim")), results.get((str(stage), engine, "python"))
            text = cell(a)
            auto = results.get((str(stage), engine, "usdsim --substeps auto"))
            if auto is not None:
                text += f"; with `--substeps auto`: {cell(auto)}"
            if not same(a, b):
                text += f"; from Python: {cell(b)}"
            cells.append(text)
        lines.append(f"| `{stage.relative_to(root)}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder of the results (kept between runs)")
    parser.add_argument("--engines", default="mujoco,xpbd,featherstone")
    parser.add_argument("--frames", type=int, default=FRAMES)
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="s per run")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="usdsim runs at once")
    parser.add_argument("--only", default="*", help="stages matching this glob (of the path)")
    parser.add_argument("--rerun", default=None, help="run the stages matching this glob again")
    parser.add_argument("--docs", type=Path, default=None, help="write the table into this Markdown file")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    root, stages = wheel_stages()
    chosen = [s for s in stages if fnmatch.fnmatch(str(s), args.only)]
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    store = args.out / "results.json"
    saved = json.loads(store.read_text()) if store.exists() else []
    results = {(r["stage"], r["engine"], r["path"]): r for r in saved}

    def todo(engine, path):
        return [
            s for s in chosen
            if (str(s), engine, path) not in results or (args.rerun and fnmatch.fnmatch(str(s), args.rerun))
        ]  # fmt: skip

    def save():
        store.write_text(json.dumps(list(results.values()), indent=1))

    for engine in engines:
        pending = todo(engine, "usdsim")
        if pending:
            t0 = time.perf_counter()
            for r in usdsim_runs(pending, engine, args.out, args.frames, args.timeout, args.jobs):
                results[(r["stage"], engine, "usdsim")] = {**r, "engine": engine, "path": "usdsim"}
            save()
            print(f"usdsim {engine}: {len(pending)} stages in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        named = [
            s for s in todo(engine, "usdsim --substeps auto")
            if "--substeps" in (results.get((str(s), engine, "usdsim"), {}).get("error") or "")
        ]  # fmt: skip
        if named:  # (a step named stable: taken)
            for r in usdsim_runs(named, engine, args.out, args.frames, args.timeout, args.jobs, substeps="auto"):
                key = "usdsim --substeps auto"
                results[(r["stage"], engine, key)] = {**r, "engine": engine, "path": key}
            save()
        for stage in todo(engine, "python"):
            r = python_run(stage, engine, args.out, args.frames, args.timeout)
            results[(str(stage), engine, "python")] = {**r, "engine": engine, "path": "python"}
            save()
            print(f"python {engine} {stage.relative_to(root)}: {cell(r)[:100]}", file=sys.stderr)
    text = table(root, stages, engines, results)
    print(text)
    if args.docs is not None:
        doc = args.docs.read_text()
        a, b = doc.index(TABLE_START), doc.index(TABLE_END)
        args.docs.write_text(doc[: a + len(TABLE_START)] + "\n\n" + text + "\n\n" + doc[b:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
