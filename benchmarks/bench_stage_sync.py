"""Stage sync costs (issue "Stage sync and usdsim, production grade"), against baselines measured in the
same run.

    python benchmarks/bench_stage_sync.py [--bodies 5000] [--frames 32] [--record-frames 10000]
                                          [--clip-frames 1000] [--skip 1 3]

Tables (2 runs first: its workers' ru_maxrss would otherwise include this process's peak):
1. Writing N body poses per frame onto their prims: ``StageSync.write`` (time samples, as a recording,
   each frame at once (``Simulation``'s default) and in batches of 32 frames (``StageSync.batch_frames``,
   as ``usdsim`` writes, the flush timed), and default values, as a live in-process view; ops "trs" and
   "matrix") vs cached ``UsdAttribute.Set``
   of the same poses (translate double3 + orient quatd per body, the Gf values made from ``body_q``
   rows, attributes looked up once). Targets: at most 2 µs per body and frame, and at least 4x faster
   than the baseline.
2. A recording of 100 bodies for 10,000 frames, in one layer and streamed to value clips of
   ``--clip-frames`` frames (``ClipStream``, as ``usdsim`` does for long runs), each in a fresh process:
   RSS before, at a quarter, half and all of the frames and the growth per frame between them (in one
   layer: the time samples, about 113 bytes each; streamed: flat after the first chunk), peak RSS
   (``ru_maxrss``, and Linux's ``VmHWM``, the process's own), the time writing, moving chunks
   (amortised per frame) and saving.
3. A 100-body stage (boxes falling on a ground) simulated by ``Simulation`` with its default settings,
   frame by frame and in batches of 32 (usdsim): the share of the frame time spent in the sync (target:
   under 20 %).
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
from newton_usd.sync.clips import DEFAULT_CLIP_FRAMES, ClipStream
from newton_usd.usd import StageFrame

HERE = os.path.abspath(__file__)
BATCH = 32  # frames per batch of a recording, as usdsim writes them (newton_usd.cli.WRITE_BATCH)
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

    def ours(recording: bool, xform_ops: str, batch: int):
        stage = body_stage(n)
        sync = StageSync(stage, output_layer(stage), paths, StageFrame.of(stage), xform_ops=xform_ops)
        sync.write(poses[0], 0.0 if recording else None)  # prepares the specs (once per run, not per frame)
        sync.batch_frames = batch

        def run(r):
            for f, body_q in enumerate(poses):
                sync.write(body_q, float(1 + r * frames + f) if recording else None)
            sync.flush()  # (timed: every frame is on the stage at the end of a run)

        return best_of(run, repeat)

    rows = []
    for recording in (True, False):
        base = baseline(recording)
        for batch in (1, BATCH) if recording else (1,):
            for xform_ops in ("trs", "matrix"):
                rows.append((recording, xform_ops, batch, ours(recording, xform_ops, batch), base))
    return rows


def print_write_rows(rows, n: int, frames: int) -> None:
    per = n * frames
    print(f"\n1. Writing {n} body poses per frame ({frames} frames, best of the repeats), µs per body and frame")
    print(f"{'mode':<44} {'StageSync':>10} {'UsdAttribute.Set':>17} {'speedup':>8}  targets <= 2 µs, >= 4x")
    for recording, xform_ops, batch, ours, base in rows:
        mode = f"{'time samples' if recording else 'default values'}, {xform_ops}"
        mode += f", batches of {batch}" if batch > 1 else (", each frame" if recording else "")
        us, base_us = ours / per * 1e6, base / per * 1e6
        verdict = f"{'met' if us <= 2.0 else 'NOT met'}, {'met' if base_us >= 4.0 * us else 'NOT met'}"
        print(f"{mode:<44} {us:>10.2f} {base_us:>17.2f} {base_us / us:>7.1f}x  {verdict}")


# ---------------------------------------------------------------- 2. a long recording (fresh process)
def max_rss_mib() -> float:
    """``ru_maxrss``: the peak RSS. On Linux a process started by another keeps its parent's peak across
    exec when that was higher: the workers run before table 1 grows this process."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # kB on Linux


def peak_rss_mib() -> float:
    """The peak RSS of this process's own memory (Linux: ``VmHWM``, reset at exec; else ``ru_maxrss``)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return max_rss_mib()


def rss_mib() -> float:
    """The current resident set size (Linux: /proc/self/statm; else the peak)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return peak_rss_mib()


def worker_recording(n: int, frames: int, clip_frames: int = 0) -> dict:
    """A recording of ``n`` moving bodies for ``frames`` frames, saved; ``clip_frames`` > 0: streamed to
    value clips of that many frames (``ClipStream``, as ``Simulation.stream_recording`` does)."""
    stage = body_stage(n)
    layer = output_layer(stage)
    paths = [f"/Boxes/Box_{i}" for i in range(n)]
    sync = StageSync(stage, layer, paths, StageFrame.of(stage))
    rng = np.random.default_rng(1)
    body_q = np.concatenate([rng.uniform(-5, 5, (n, 3)), np.tile([0.0, 0.0, 0.0, 1.0], (n, 1))], axis=1)
    marks = {frames // 4: None, frames // 2: None, frames: None}
    with tempfile.TemporaryDirectory() as tmp:
        out_path = os.path.join(tmp, "recording.usda" if clip_frames else "recording.usdc")
        stream = ClipStream(layer, out_path, clip_frames) if clip_frames else None
        start = rss_mib()
        t0 = time.perf_counter()
        for f in range(frames + 1):
            body_q[:, 2] -= 0.001  # moving bodies: every sample differs
            sync.write(body_q, float(f))
            if stream is not None:
                stream.frame_written(float(f))  # moves a chunk to a clip file once every clip_frames frames
            if f in marks:
                marks[f] = rss_mib()
        seconds = time.perf_counter() - t0
        recorded_peak, recorded_max = peak_rss_mib(), max_rss_mib()
        t0 = time.perf_counter()
        if stream is None:  # the output layer as one crate file
            layer.Export(out_path)
        else:  # as Simulation.save: the last chunk becomes the last clip, the output refers to the clips
            stream.close_chunk()
            out = Sdf.Layer.CreateNew(out_path)
            out.TransferContent(layer)
            stream.write_output(out)
            out.Save()
            stream.saved()
            del out
        save_seconds = time.perf_counter() - t0
        files = [out_path]
        if stream is not None:
            files += [os.path.join(stream.directory, name) for name in os.listdir(stream.directory)]
        file_mib = sum(os.path.getsize(f) for f in files) / 2**20
        saved = Usd.Stage.Open(out_path)  # what a reader sees
        samples = saved.GetAttributeAtPath(Sdf.Path(paths[0]).AppendProperty("xformOp:translate:physics"))
        samples = samples.GetNumTimeSamples()
        del saved
    return {
        "bodies": n,
        "frames": frames,
        "clip_frames": clip_frames,
        "clips": stream.count if stream else 0,
        "samples_per_attribute": samples,
        "rss_start_mib": start,
        "rss_at": {str(k): v for k, v in marks.items()},
        "peak_rss_recording_mib": recorded_peak,
        "maxrss_recording_mib": recorded_max,
        "peak_rss_mib": peak_rss_mib(),
        "maxrss_mib": max_rss_mib(),
        "write_seconds": seconds - (stream.seconds if stream else 0.0),
        "move_seconds": stream.seconds if stream else 0.0,
        "save_seconds": save_seconds,
        "file_mib": file_mib,
    }


def run_worker(n: int, frames: int, clip_frames: int) -> dict | str:
    """:func:`worker_recording` in a fresh process (its peak RSS is its own): the result, or the error."""
    cmd = [sys.executable, HERE, "--worker", str(n), str(frames), str(clip_frames)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(RESULT)]
    return json.loads(lines[-1][len(RESULT) :]) if lines else f"exit {proc.returncode}:\n{proc.stderr[-2000:]}"


def median_of(results: list) -> dict:
    """One result of :func:`worker_recording` holding the median of each number over ``results``."""
    first = results[0]
    out = {}
    for key, value in first.items():
        if isinstance(value, dict):
            out[key] = {k: float(np.median([r[key][k] for r in results])) for k in value}
        elif isinstance(value, float):
            out[key] = float(np.median([r[key] for r in results]))
        else:
            out[key] = value
    return out


def print_recording(runs: list, repeat: int) -> None:
    """Table 2: one column per recording (unstreamed, streamed to clips)."""
    n, frames = runs[0]["bodies"], runs[0]["frames"]
    values = 2 * n * frames
    print(
        f"\n2. Recording {n} bodies for {frames} frames (a fresh process each, median of {repeat}; trs ops, "
        f"{values:,} time samples)"
    )
    names = ["one layer" if r["clip_frames"] == 0 else f"clips of {r['clip_frames']} frames" for r in runs]
    print(f"   {'':<44}" + "".join(f"{name:>22}" for name in names))

    def row(label, fmt, fn):
        print(f"   {label:<44}" + "".join(f"{fmt.format(fn(r)):>22}" for r in runs))

    row("RSS before the recording (MiB)", "{:.0f}", lambda r: r["rss_start_mib"])
    prev = 0
    for f in sorted(int(k) for k in runs[0]["rss_at"]):

        def growth(r, f=f, prev=prev):
            before = r["rss_start_mib"] if prev == 0 else r["rss_at"][str(prev)]
            return (r["rss_at"][str(f)] - before) * 2**20 / (f - prev)

        row(f"RSS at frame {f:,} (MiB)", "{:.0f}", lambda r, f=f: r["rss_at"][str(f)])
        row(f"  growth, frames {prev:,}-{f:,} (bytes/frame)", "{:,.0f}", growth)
        prev = f
    row("peak RSS recording, ru_maxrss (MiB)", "{:.0f}", lambda r: r["maxrss_recording_mib"])
    row("peak RSS recording, VmHWM (MiB)", "{:.0f}", lambda r: r["peak_rss_recording_mib"])
    row("peak RSS recording and saving, ru_maxrss (MiB)", "{:.0f}", lambda r: r["maxrss_mib"])
    row("writing (µs per body and frame)", "{:.2f}", lambda r: r["write_seconds"] / (n * frames) * 1e6)
    row("moving chunks to clips (µs/body/frame)", "{:.2f}", lambda r: r["move_seconds"] / (n * frames) * 1e6)
    row("  (ms per frame, amortised)", "{:.3f}", lambda r: r["move_seconds"] / frames * 1e3)
    row("saving (s)", "{:.2f}", lambda r: r["save_seconds"])
    row("files on disk (MiB)", "{:.1f}", lambda r: r["file_mib"])
    row("clips", "{}", lambda r: r["clips"])
    row("time samples per attribute, read back", "{}", lambda r: r["samples_per_attribute"])
    print(
        "   (one layer: every sample stays in the output layer until it is saved, as one .usdc; clips: the "
        "layer holds one chunk, the output .usda refers to the .usdc clips)"
    )


# ---------------------------------------------------------------- 3. share of the frame time
def frame_share(n: int, frames: int, batch: int) -> dict:
    sim = Simulation.open(body_stage(n))
    sim.write_batch = batch
    sim.run(frames)
    sim.flush()  # (what the batches kept: counted in sync_seconds)
    sync = sim.sync_seconds
    return {
        "bodies": n,
        "frames": frames,
        "substeps": sim.substeps,
        "batch": batch,
        "solver": sim.wall_seconds,
        "sync": sync,
        "share": sync / (sim.wall_seconds + sync),
    }


def print_share(results: list) -> None:
    r = results[0]
    print(f"\n3. A {r['bodies']}-body stage under Simulation ({r['frames']} frames, {r['substeps']} substeps)")
    for r in results:
        how = f"in batches of {r['batch']} (usdsim)" if r["batch"] > 1 else "frame by frame (default)"
        print(
            f"   {how:<30} solver {r['solver'] * 1e3 / r['frames']:.2f} ms/frame, sync "
            f"{r['sync'] * 1e3 / r['frames']:.2f} ms/frame: sync is {r['share'] * 100:.1f} % of the frame time "
            f"(target under 20 %: {'met' if r['share'] < 0.2 else 'NOT met'})"
        )


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bodies", type=int, default=5000, help="bodies in table 1")
    p.add_argument("--frames", type=int, default=32, help="frames per repeat in table 1")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--record-bodies", type=int, default=100)
    p.add_argument("--record-frames", type=int, default=10000)
    p.add_argument("--record-repeat", type=int, default=3, help="table 2: runs of each recording (medians)")
    p.add_argument("--share-bodies", type=int, default=100)
    p.add_argument("--share-frames", type=int, default=120)
    p.add_argument(
        "--clip-frames", type=int, default=DEFAULT_CLIP_FRAMES, help="frames per clip of table 2's streamed run"
    )
    p.add_argument("--skip", nargs="*", type=int, default=[], help="tables not to run (1, 2, 3)")
    p.add_argument("--worker", nargs=3, type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        print(RESULT + json.dumps(worker_recording(*args.worker)), flush=True)
        return

    if 2 not in args.skip:
        # Alternating workers, the median of each number over the repeats (the machine's noise).
        runs = [
            [run_worker(args.record_bodies, args.record_frames, k) for k in (0, args.clip_frames)]
            for _ in range(args.record_repeat)
        ]
        failed = [r for rep in runs for r in rep if isinstance(r, str)]
        if failed:
            print(f"\n2. a recording worker failed ({failed[0]})")
        else:
            print_recording([median_of(list(column)) for column in zip(*runs, strict=True)], args.record_repeat)
    if 1 not in args.skip:
        print_write_rows(write_rows(args.bodies, args.frames, args.repeat), args.bodies, args.frames)
    if 3 not in args.skip:
        print_share([frame_share(args.share_bodies, args.share_frames, batch) for batch in (1, BATCH)])


if __name__ == "__main__":
    main()
