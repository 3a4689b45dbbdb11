"""Stage sync costs (issue "Stage sync and usdsim, production grade"), against baselines measured in the
same run.

    python benchmarks/bench_stage_sync.py [--bodies 5000] [--frames 20] [--record-frames 10000]

Tables:
1. Writing N body poses per frame onto their prims: ``StageSync.write`` (time samples, as a recording,
   and default values, as a live in-process view; ops "trs" and "matrix") vs cached ``UsdAttribute.Set``
   of the same poses (translate double3 + orient quatd per body, the Gf values made from ``body_q``
   rows, attributes looked up once). Targets: at most 2 µs per body and frame, and at least 4x faster
   than the baseline.
2. A recording of 100 bodies for 10,000 frames (in a fresh process): peak RSS (``ru_maxrss``) before
   and after, the growth per frame at a quarter, half and all of the frames (it must stay flat: the
   layer's time samples, nothing else), and the cost of saving the output.
3. A 100-body stage (boxes falling on a ground) simulated by ``Simulation`` with its default settings:
   the share of the frame time spent in the sync (target: under 20 %).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
from bench_walking_skeleton import boxes_stage  # a sibling file: benchmarks/ is sys.path[0]
from pxr import Gf, Sdf, Usd, UsdGeom

from newton_usd import Simulation
from newton_usd.sync import StageSync
from newton_usd.usd import StageFrame

HERE = os.path.abspath(__file__)
RESULT = "BENCH_SYNC_RESULT "


def body_stage(n: int, fps: float = 60.0) -> Usd.Stage:
    """``n`` boxes on a grid above a ground (bench_walking_skeleton's), 1 m per unit, Z up, ``fps``."""
    stage = boxes_stage(n)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    stage.SetTimeCodesPerSecond(fps)
    return stage


def output_layer(stage: Usd.Stage) -> Sdf.Layer:
    layer = Sdf.Layer.CreateAnonymous("sim_output")
    layer.timeCodesPerSecond = stage.GetTimeCodesPerSecond()
    stage.GetSessionLayer().subLayerPaths.append(layer.identifier)
    return layer


def random_poses(n: int, frames: int, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    poses = []
    for _ in range(frames):
        q = np.concatenate([rng.uniform(-5, 5, (n, 3)), rng.normal(size=(n, 4))], axis=1)
        q[:, 3:] /= np.linalg.norm(q[:, 3:], axis=1, keepdims=True)
        poses.append(q)
    return poses


def best_of(fn, repeat: int) -> float:
    times = []
    for r in range(repeat):
        t0 = time.perf_counter()
        fn(r)
        times.append(time.perf_counter() - t0)
    return min(times)


# ---------------------------------------------------------------- 1. writing N poses
def write_rows(n: int, frames: int, repeat: int) -> list:
    paths = [f"/Boxes/Box_{i}" for i in range(n)]
    poses = random_poses(n, frames)

    def baseline(recording: bool):
        stage = body_stage(n)
        attrs = []
        for path in paths:
            xf = UsdGeom.Xformable(stage.GetPrimAtPath(path))
            t_op = xf.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble, "physics")
            r_op = xf.AddOrientOp(UsdGeom.XformOp.PrecisionDouble, "physics")
            attrs.append((t_op.GetAttr(), r_op.GetAttr()))

        def run(r):
            for f, body_q in enumerate(poses):
                time_code = Usd.TimeCode(r * frames + f) if recording else Usd.TimeCode.Default()
                for (t_attr, r_attr), (x, y, z, qx, qy, qz, qw) in zip(attrs, body_q.tolist(), strict=True):
                    t_attr.Set(Gf.Vec3d(x, y, z), time_code)
                    r_attr.Set(Gf.Quatd(qw, qx, qy, qz), time_code)

        return best_of(run, repeat)

    def ours(recording: bool, xform_ops: str):
        stage = body_stage(n)
        sync = StageSync(stage, output_layer(stage), paths, StageFrame.of(stage), xform_ops=xform_ops)
        sync.write(poses[0], 0.0 if recording else None)  # prepares the specs (once per run, not per frame)

        def run(r):
            for f, body_q in enumerate(poses):
                sync.write(body_q, float(1 + r * frames + f) if recording else None)

        return best_of(run, repeat)

    rows = []
    for recording in (True, False):
        base = baseline(recording)
        for xform_ops in ("trs", "matrix"):
            rows.append((recording, xform_ops, ours(recording, xform_ops), base))
    return rows


def print_write_rows(rows, n: int, frames: int) -> None:
    per = n * frames
    print(f"\n1. Writing {n} body poses per frame ({frames} frames, best of the repeats), µs per body and frame")
    print(f"{'mode':<28} {'StageSync':>10} {'UsdAttribute.Set':>17} {'speedup':>8}  targets <= 2 µs, >= 4x")
    for recording, xform_ops, ours, base in rows:
        mode = f"{'time samples' if recording else 'default values'}, {xform_ops}"
        us, base_us = ours / per * 1e6, base / per * 1e6
        verdict = f"{'met' if us <= 2.0 else 'NOT met'}, {'met' if base_us >= 4.0 * us else 'NOT met'}"
        print(f"{mode:<28} {us:>10.2f} {base_us:>17.2f} {base_us / us:>7.1f}x  {verdict}")


# ---------------------------------------------------------------- 2. a long recording (fresh process)
def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # kB on Linux


def rss_mib() -> float:
    """The current resident set size (Linux: /proc/self/statm; else the peak)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return peak_rss_mib()


def worker_recording(n: int, frames: int) -> dict:
    stage = body_stage(n)
    layer = output_layer(stage)
    paths = [f"/Boxes/Box_{i}" for i in range(n)]
    sync = StageSync(stage, layer, paths, StageFrame.of(stage))
    rng = np.random.default_rng(1)
    body_q = np.concatenate([rng.uniform(-5, 5, (n, 3)), np.tile([0.0, 0.0, 0.0, 1.0], (n, 1))], axis=1)
    marks = {frames // 4: None, frames // 2: None, frames: None}
    start = rss_mib()
    t0 = time.perf_counter()
    for f in range(frames + 1):
        body_q[:, 2] -= 0.001  # moving bodies: every sample differs
        sync.write(body_q, float(f))
        if f in marks:
            marks[f] = rss_mib()
    seconds = time.perf_counter() - t0
    recorded_peak = peak_rss_mib()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        out = os.path.join(tmp, "recording.usdc")
        layer.Export(out)
        save_seconds = time.perf_counter() - t0
        file_mib = os.path.getsize(out) / 2**20
    samples = layer.GetNumTimeSamplesForPath(Sdf.Path(paths[0]).AppendProperty("xformOp:translate:physics"))
    return {
        "bodies": n,
        "frames": frames,
        "samples_per_attribute": samples,
        "rss_start_mib": start,
        "rss_at": {str(k): v for k, v in marks.items()},
        "peak_rss_recording_mib": recorded_peak,
        "peak_rss_mib": peak_rss_mib(),
        "write_seconds": seconds,
        "save_seconds": save_seconds,
        "usdc_mib": file_mib,
    }


def print_recording(r: dict) -> None:
    n, frames = r["bodies"], r["frames"]
    values = 2 * n * frames
    grown = r["rss_at"][str(frames)] - r["rss_start_mib"]
    print(f"\n2. Recording {n} bodies for {frames} frames (a fresh process; trs ops, {values:,} time samples)")
    print(
        f"   RSS {r['rss_start_mib']:.0f} MiB before the recording; peak {r['peak_rss_recording_mib']:.0f} MiB "
        f"recording, {r['peak_rss_mib']:.0f} MiB saving it"
    )
    prev_f, prev_rss = 0, r["rss_start_mib"]
    for f, rss in sorted(((int(k), v) for k, v in r["rss_at"].items())):
        per_frame = (rss - prev_rss) * 2**20 / max(f - prev_f, 1)
        print(f"   frame {f:>6}: RSS {rss:7.0f} MiB, {per_frame / (2 * n):6.0f} bytes per sample since the last mark")
        prev_f, prev_rss = f, rss
    print(
        f"   {grown * 2**20 / values:.0f} bytes per time sample in all (the samples live in the output layer "
        f"until it is saved); writing {r['write_seconds']:.1f} s "
        f"({r['write_seconds'] / (n * frames) * 1e6:.2f} µs per body and frame); saving as .usdc "
        f"{r['save_seconds']:.1f} s, {r['usdc_mib']:.0f} MiB"
    )


# ---------------------------------------------------------------- 3. share of the frame time
def frame_share(n: int, frames: int) -> dict:
    sim = Simulation.open(body_stage(n))
    sim.run(frames)
    total = sim.wall_seconds + sim.sync_seconds
    return {
        "bodies": n,
        "frames": frames,
        "substeps": sim.substeps,
        "solver": sim.wall_seconds,
        "sync": sim.sync_seconds,
        "share": sim.sync_seconds / total,
    }


def print_share(r: dict) -> None:
    print(f"\n3. A {r['bodies']}-body stage under Simulation ({r['frames']} frames, {r['substeps']} substeps)")
    print(
        f"   solver {r['solver'] * 1e3 / r['frames']:.2f} ms/frame, sync {r['sync'] * 1e3 / r['frames']:.2f} ms/frame:"
        f" sync is {r['share'] * 100:.1f} % of the frame time (target under 20 %: "
        f"{'met' if r['share'] < 0.2 else 'NOT met'})"
    )


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bodies", type=int, default=5000, help="bodies in table 1")
    p.add_argument("--frames", type=int, default=20, help="frames per repeat in table 1")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--record-bodies", type=int, default=100)
    p.add_argument("--record-frames", type=int, default=10000)
    p.add_argument("--share-bodies", type=int, default=100)
    p.add_argument("--share-frames", type=int, default=120)
    p.add_argument("--worker", nargs=2, type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        print(RESULT + json.dumps(worker_recording(*args.worker)), flush=True)
        return

    print_write_rows(write_rows(args.bodies, args.frames, args.repeat), args.bodies, args.frames)
    proc = subprocess.run(
        [sys.executable, HERE, "--worker", str(args.record_bodies), str(args.record_frames)],
        capture_output=True,
        text=True,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith(RESULT)]
    if lines:
        print_recording(json.loads(lines[-1][len(RESULT) :]))
    else:
        print(f"\n2. the recording worker failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    print_share(frame_share(args.share_bodies, args.share_frames))


if __name__ == "__main__":
    main()
