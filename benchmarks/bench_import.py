"""Import time per body of Newton's ant_multi.usda (64 ants) and a 1,024-ant replica: newton_usd vs
Newton 1.8's ``ModelBuilder.add_usd``, measured in the same run (target: newton_usd at least 10x faster).

    python benchmarks/bench_import.py --newton-python /work/newton-venv/bin/python [--replica 1024]
        [--repeat 3] [--stage PATH] [--env-root /World/envs | --no-envs] [--json results.json]

Two newton_usd rows per stage: "full", the plain ``add_usd(path)`` (every ant parsed and built, one world),
and "env worlds", ``add_usd(path, env_root="/World/envs")`` (the stage's ``env_i`` prims checked to be
identical, ``env_0`` parsed and built once, then replicated into one world per environment; the builder
holds as many bodies, in as many worlds). Newton's row is its plain ``add_usd(path)``.

Newton runs in a venv of its own, made once (nothing is downloaded at run time):

    python3 -m venv /work/newton-venv
    /work/newton-venv/bin/pip install newton==1.8.0 "usd-core>=25.5,<26.9" newton-usd-schemas

``--newton-python`` (else the ``NEWTON_PYTHON`` environment variable) is that venv's python; without
one the Newton columns are skipped. The stage defaults to ``newton/tests/assets/ant_multi.usda`` of
that venv (it references ``ant.usda`` beside it); ``--stage`` gives another.

The replica is written to a temporary directory: ant_multi.usda's layer with its env prims copied
(each inherits ``/World/envs/env_0``, as the 64 do) up to N envs on a square grid with the same 16 m
spacing: one PhysicsScene, one articulation per ant, asset paths made absolute.

Each importer runs in a fresh process per stage (this script with ``--worker``, under our python or
Newton's). A run is a new builder plus ``add_usd(path)``: opening the stage, USD's parse and building
the model (no ``finalize``); the previous run's builder and stage are released first, so every run
reads the file. "cold" is the process's first run (lazy imports, schema registry, ...); "warm" is the
best of the ``--repeat`` runs after it. µs/body and the speedup use the warm times.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

from warnings_capture import capture_warnings  # a sibling file: benchmarks/ is sys.path[0]

HERE = os.path.abspath(__file__)
RESULT = "BENCH_IMPORT_RESULT "
TARGET = 10.0  # the target speedup over Newton's add_usd
FIND_STAGE = (
    "import importlib.util, os; s = importlib.util.find_spec('newton'); "
    "print(os.path.join(os.path.dirname(s.origin), 'tests', 'assets', 'ant_multi.usda'))"
)
HOW_TO_GET = (
    "ant_multi.usda ships with Newton (newton/tests/assets/): make a Newton venv "
    "(`python3 -m venv /work/newton-venv && /work/newton-venv/bin/pip install newton==1.8.0 "
    '"usd-core>=25.5,<26.9" newton-usd-schemas`) and pass --newton-python /work/newton-venv/bin/python '
    "(or set NEWTON_PYTHON), or pass --stage PATH"
)


# ---------------------------------------------------------------- workers (run in a fresh process)
def _timed_runs(make_builder, stage: str, repeat: int, env_root: str | None = None):
    import gc
    import time

    times = []
    builder = None
    options = {"env_root": env_root} if env_root else {}
    for _ in range(1 + repeat):
        builder = None
        gc.collect()  # the previous run's stage goes: every run opens and parses the file
        builder = make_builder()
        t0 = time.perf_counter()
        builder.add_usd(stage, **options)
        times.append(time.perf_counter() - t0)
    return times, builder


def worker_ours(stage: str, repeat: int, env_root: str | None = None) -> dict:
    caught = capture_warnings(["newton_usd"])
    from collections import Counter

    from pxr import Usd

    import newton_usd
    from newton_usd.core.builder import ModelBuilder

    times, b = _timed_runs(ModelBuilder, stage, repeat, env_root)
    return {
        "impl": "newton_usd" + (" env worlds" if env_root else ""),
        "worlds": b.num_worlds,
        "version": getattr(newton_usd, "__version__", "dev"),
        "usd": "{}.{}".format(*Usd.GetVersion()[1:]),
        "times": times,
        "counts": {
            "bodies": b.body_count,
            "joints": b.joint_count,
            "dofs": len(b.joint_armature),
            "articulations": len(b.articulation_label),
            "collision shapes": sum(map(bool, b.shape_collision_enabled)),
            "all shapes": b.shape_count,
            "joint types": dict(sorted(Counter(t.name for t in b.joint_type).items())),
            "total mass (kg)": round(float(sum(b.body_mass)), 4),
        },
        "warnings": caught,
    }


def worker_newton(stage: str, repeat: int) -> dict:
    caught = capture_warnings(["newton"])
    from collections import Counter

    import warp as wp

    wp.config.quiet = True
    import newton
    from pxr import Usd

    times, b = _timed_runs(newton.ModelBuilder, stage, repeat)
    collide = int(newton.ShapeFlags.COLLIDE_SHAPES)
    return {
        "impl": "newton",
        "version": newton.__version__,
        "usd": "{}.{}".format(*Usd.GetVersion()[1:]),
        "times": times,
        "counts": {
            "bodies": b.body_count,
            "joints": b.joint_count,
            "dofs": b.joint_dof_count,
            "articulations": b.articulation_count,
            "collision shapes": sum(1 for f in b.shape_flags if f & collide),
            "all shapes": b.shape_count,
            "joint types": dict(sorted(Counter(newton.JointType(t).name for t in b.joint_type).items())),
            "total mass (kg)": round(float(sum(b.body_mass)), 4),
        },
        "warnings": caught,
    }


# ---------------------------------------------------------------- the replica
def write_replica(src: str, n: int, out_dir: str) -> str:
    """ant_multi.usda with its envs copied to ``n`` (each inheriting env_0) on a square grid."""
    from pxr import Gf, Sdf, UsdUtils

    src_layer = Sdf.Layer.FindOrOpen(src)
    template = Sdf.Path("/World/envs/env_1")
    if not src_layer.GetPrimAtPath(template):
        sys.exit(f"{src}: no {template} to replicate (the replica needs ant_multi.usda's structure)")
    spacing = 16.0  # ant_multi.usda's 8 x 8 grid
    out = os.path.join(out_dir, f"replica_{n}.usda")
    layer = Sdf.Layer.CreateNew(out)
    layer.TransferContent(src_layer)
    # The replica lives elsewhere: its references (@./ant.usda@) point back to the source's files.
    UsdUtils.ModifyAssetPaths(layer, lambda p: src_layer.ComputeAbsolutePath(p) if p else p)
    side = math.ceil(math.sqrt(n))
    with Sdf.ChangeBlock():
        for i in range(n):
            env = Sdf.Path(f"/World/envs/env_{i}")
            if not layer.GetPrimAtPath(env) and not Sdf.CopySpec(layer, template, layer, env):
                sys.exit(f"could not copy {template} to {env}")
            translate = layer.GetAttributeAtPath(env.AppendProperty("xformOp:translate"))
            row, col = i // side - (side - 1) / 2, i % side - (side - 1) / 2
            translate.default = Gf.Vec3d(-spacing * row, spacing * col, 0)
            index = layer.GetAttributeAtPath(
                env.AppendPath("Robot/torso").AppendProperty("physics:newton:articulation_index")
            )
            if index:
                index.default = i
    envs = layer.GetPrimAtPath("/World/envs")
    for i in range(n, len(envs.nameChildren)):  # fewer envs than the source: drop the rest
        del envs.nameChildren[f"env_{i}"]
    layer.Save()
    return out


# ---------------------------------------------------------------- driver
def run_worker(python: str, which: str, stage: str, repeat: int, env_root: str | None = None) -> dict:
    env = dict(os.environ)
    if which == "newton":
        env.pop("PYTHONPATH", None)
        env.pop("PXR_PLUGINPATH_NAME", None)  # our schema plugins are not Newton's business
    extra = ["--env-root", env_root] if env_root else []
    proc = subprocess.run(
        [python, HERE, "--worker", which, "--stage", stage, "--repeat", str(repeat), *extra],
        capture_output=True,
        text=True,
        env=env,
        cwd=tempfile.gettempdir(),
    )
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT):
            return json.loads(line[len(RESULT) :])
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
    return {"impl": which, "error": f"exit status {proc.returncode}\n{tail}"}


def newton_python_of(arg: str | None) -> str | None:
    python = arg or os.environ.get("NEWTON_PYTHON")
    if python and not os.path.exists(python):
        sys.exit(f"--newton-python / NEWTON_PYTHON: no such file {python}")
    return python


def default_stage(newton_python: str | None) -> str:
    if newton_python is None:
        sys.exit(f"no --stage and no Newton venv to find ant_multi.usda in. {HOW_TO_GET}")
    out = subprocess.run([newton_python, "-c", FIND_STAGE], capture_output=True, text=True)
    path = out.stdout.strip()
    if out.returncode != 0 or not os.path.exists(path):
        why = out.stderr.strip()[-200:]
        sys.exit(f"{newton_python} has no newton/tests/assets/ant_multi.usda ({why}). {HOW_TO_GET}")
    return path


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--newton-python", help="python of a venv with newton==1.8.0 (default: $NEWTON_PYTHON)")
    p.add_argument("--stage", help="default: newton/tests/assets/ant_multi.usda of the Newton venv")
    p.add_argument("--replica", type=int, default=1024, help="ants in the replica stage (0: none)")
    p.add_argument("--replica-dir", help="write the replica here and keep it (default: a temporary directory)")
    p.add_argument("--repeat", type=int, default=3, help="warm runs after the cold one")
    p.add_argument("--json", metavar="PATH", help="also write the results here")
    envs = p.add_mutually_exclusive_group()
    envs.add_argument("--env-root", default="/World/envs", help="the env worlds row's env_root (default: /World/envs)")
    envs.add_argument("--no-envs", action="store_true", help="no env worlds row")
    p.add_argument("--worker", choices=("ours", "ours-envs", "newton"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        if args.worker == "newton":
            result = worker_newton(args.stage, args.repeat)
        else:
            result = worker_ours(args.stage, args.repeat, args.env_root if args.worker == "ours-envs" else None)
        print(RESULT + json.dumps(result), flush=True)
        return

    newton_python = newton_python_of(args.newton_python)
    stage = os.path.abspath(args.stage) if args.stage else default_stage(newton_python)
    if not os.path.exists(stage):
        sys.exit(f"no such stage {stage}. {HOW_TO_GET}")
    with tempfile.TemporaryDirectory(prefix="bench_import_") as tmp:
        results = bench(stage, newton_python, args, args.replica_dir or tmp)
    report(results, args.repeat)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


def bench(stage: str, newton_python: str | None, args, replica_dir: str) -> list:
    stages = [(os.path.basename(stage), stage)]
    if args.replica:
        os.makedirs(replica_dir, exist_ok=True)
        stages.append((f"replica_{args.replica}.usda", write_replica(stage, args.replica, replica_dir)))
    if newton_python is None:
        print("note: no Newton venv (--newton-python or NEWTON_PYTHON): the Newton columns are skipped")

    results = []
    for name, path in stages:
        ours = run_worker(sys.executable, "ours", path, args.repeat)
        envs = None if args.no_envs else run_worker(sys.executable, "ours-envs", path, args.repeat, args.env_root)
        theirs = run_worker(newton_python, "newton", path, args.repeat) if newton_python else None
        results.append({"stage": name, "path": path, "ours": ours, "ours_envs": envs, "newton": theirs})
        for r in (ours, envs, theirs):
            if r and "error" in r:
                print(f"{name}: {r['impl']} failed: {r['error']}")
    return results


def _ok(r) -> bool:
    return r is not None and "error" not in r


def _warm(r) -> float:
    return min(r["times"][1:] or r["times"])


def _cols(r, bodies: int, width: int) -> str:
    """cold, warm and µs per body (warm) of one importer, or dashes."""
    if not _ok(r):
        return f"{'-':>{width}} {'-':>{width}} {'-':>{width + 2}}"
    cold, warm = r["times"][0], _warm(r)
    return f"{cold:>{width - 1}.3f}s {warm:>{width - 1}.3f}s {warm / max(bodies, 1) * 1e6:>{width + 2}.0f}"


def report(results, repeat):
    ours0 = results[0]["ours"]
    newton = next((res["newton"] for res in results if _ok(res["newton"])), None)
    versions = f"newton_usd {ours0.get('version', '?')} (usd-core {ours0.get('usd', '?')})"
    if newton:
        versions += f" vs Newton {newton['version']} (usd-core {newton['usd']})"
    print(f"\nImport time, add_usd(path) on a new builder: {versions}; warm = best of {repeat} after the cold run")
    print(
        f"{'stage':<22} {'ours':<10} {'ants':>5} {'bodies':>6} {'worlds':>6} {'ours cold':>10} {'ours warm':>10}"
        f" {'ours µs/body':>12} {'newton cold':>12} {'newton warm':>12} {'newton µs/body':>14} {'speedup':>8}"
    )
    verdicts = []
    for res in results:
        theirs = res["newton"]
        for kind, ours in (("full", res["ours"]), ("env worlds", res.get("ours_envs"))):
            if ours is None:
                continue
            if _ok(ours) and _ok(theirs):
                met = "met" if _warm(theirs) >= TARGET * _warm(ours) else "NOT met"
                verdicts.append(f"{res['stage']} {kind} {met}")
            counts = (ours if _ok(ours) else theirs or {}).get("counts", {})
            bodies, ants = counts.get("bodies", 0), counts.get("articulations", 0)
            worlds = ours.get("worlds", "-") if _ok(ours) else "-"
            speed = f"{_warm(theirs) / _warm(ours):.1f}x" if _ok(ours) and _ok(theirs) else "-"
            row = f"{_cols(ours, bodies, 10)} {_cols(theirs, bodies, 12)}"
            print(f"{res['stage']:<22} {kind:<10} {ants:>5} {bodies:>6} {worlds!s:>6} {row} {speed:>8}")
    if verdicts:
        print(f"target, newton_usd at least {TARGET:g}x faster (warm): {'; '.join(verdicts)}")

    print("\nWhat each import built (the last run; Newton's 'all shapes' also counts the visual-only prims):")
    for res in results:
        theirs = res["newton"]
        for kind, ours in (("full", res["ours"]), ("env worlds", res.get("ours_envs"))):
            if not _ok(ours):
                continue
            for key, mine in ours["counts"].items():
                other = theirs["counts"].get(key) if _ok(theirs) else "-"
                mark = "" if mine == other or not _ok(theirs) else "   <- differs"
                print(f"  {res['stage']:<22} {kind:<10} {key:<17} ours {mine!s:<30} newton {other!s}{mark}")
    for res in results:
        for r in (res["ours"], res.get("ours_envs"), res["newton"]):
            if r and r.get("warnings"):
                print(f"\n{res['stage']}: {r['impl']} warned ({len(r['warnings'])} in all):")
                for w in sorted(set(r["warnings"]))[:10]:
                    print(f"  {w[:300]}")


if __name__ == "__main__":
    main()
