"""usdsim view / video: the page written for N bodies over F frames (seconds, MB), its load time in
headless Chromium, and video frames per second at 640x480 including the encode; the default view's cost (its
framing, the followed centre and the floor's ground test), timed apart, and the page's cost of the camera that
follows (against ``--fixed``'s), as a ratio.

    PYTHONPATH=. python benchmarks/bench_view.py [--bodies 100,1000,10000] [--frames 600] [--no-browser]

The recordings are authored here as usdsim writes them (translate and orient time samples on each
body, in a .usdc), boxes of four colours falling and spinning, so that the numbers are the viewer's
alone, not a simulation's. The page is written in stages: reading the USD (``read_scene``) and drawing
the page (viser's serializer and zstd), timed apart. For the smallest recording the bodies' poses are
also read through ``UsdGeom.XformCache`` frame by frame (what every prim would cost without the one-call
reads), as a ratio. CPU seconds are printed beside the wall-clock ones: the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np
from pxr import Gf, Sdf, Usd, UsdGeom

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from newton_usd.view.camera import default_view  # noqa: E402
from newton_usd.view.floor import floor  # noqa: E402
from newton_usd.view.page import write_page  # noqa: E402
from newton_usd.view.poses import part_poses  # noqa: E402
from newton_usd.view.scene import read_scene, stage_to_si  # noqa: E402

COLORS = [(0.9, 0.2, 0.1), (0.1, 0.6, 0.9), (0.2, 0.8, 0.2), (0.9, 0.8, 0.1)]


def recording(path: str, bodies: int, frames: int) -> str:
    """A .usdc of ``bodies`` 0.1 m boxes on a grid, each falling and spinning over ``frames`` frames."""
    stage = Usd.Stage.CreateNew(path)
    UsdGeom.SetStageUpAxis(stage, "Z")
    stage.SetTimeCodesPerSecond(60)
    stage.SetStartTimeCode(0)
    stage.SetEndTimeCode(frames - 1)
    ground = UsdGeom.Plane.Define(stage, "/World/Ground")
    side = int(np.ceil(np.sqrt(bodies)))
    ground.CreateWidthAttr(side * 0.3 + 1)
    ground.CreateLengthAttr(side * 0.3 + 1)
    layer = stage.GetRootLayer()
    paths = []
    with Sdf.ChangeBlock():
        for i in range(bodies):
            p = Sdf.Path(f"/World/Box{i}")
            prim = Sdf.CreatePrimInLayer(layer, p)
            prim.specifier = Sdf.SpecifierDef
            prim.typeName = "Cube"
            Sdf.AttributeSpec(prim, "size", Sdf.ValueTypeNames.Double).default = 0.1
            color = Sdf.AttributeSpec(prim, "primvars:displayColor", Sdf.ValueTypeNames.Color3fArray)
            color.default = [Gf.Vec3f(*COLORS[i % 4])]
            Sdf.AttributeSpec(prim, "xformOp:translate", Sdf.ValueTypeNames.Double3)
            Sdf.AttributeSpec(prim, "xformOp:orient", Sdf.ValueTypeNames.Quatd)
            order = Sdf.AttributeSpec(
                prim, "xformOpOrder", Sdf.ValueTypeNames.TokenArray, variability=Sdf.VariabilityUniform
            )
            order.default = ["xformOp:translate", "xformOp:orient"]
            paths.append(p)
    grid = np.stack([np.arange(bodies) % side, np.arange(bodies) // side], axis=1) * 0.3
    phase = np.random.default_rng(0).uniform(0, 10, bodies)
    with Sdf.ChangeBlock():
        for f in range(frames):
            t = f / 60.0 + phase  # each body its own motion: nothing for the page's compressor to share
            z = 0.05 + 2.0 * np.abs(np.cos(3 * t))
            c, s = np.cos(t), np.sin(t)
            for i, p in enumerate(paths):
                pos = Gf.Vec3d(float(grid[i, 0]), float(grid[i, 1]), float(z[i]))
                layer.SetTimeSample(p.AppendProperty("xformOp:translate"), f, pos)
                layer.SetTimeSample(p.AppendProperty("xformOp:orient"), f, Gf.Quatd(float(c[i]), 0.0, 0.0, float(s[i])))
    layer.Save()
    return path


def page_load_seconds(page: str) -> float | None:
    from newton_usd.view.browser import browser_missing, launch  # noqa: PLC0415

    if browser_missing():
        print(f"  (page load not measured: {browser_missing()})")
        return None
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    with sync_playwright() as p:
        b = launch(p)
        tab = b.new_page(viewport={"width": 800, "height": 500})
        t = time.perf_counter()
        tab.goto(f"file://{page}")
        tab.wait_for_function("() => document.body.innerText.includes('Embedded') || "
                              "document.querySelector('[role=slider]') !== null", timeout=600_000)  # fmt: skip
        tab.wait_for_selector("canvas", timeout=600_000)
        seconds = time.perf_counter() - t
        b.close()
    return seconds


def video_fps(scene, frames: int) -> float | None:
    from newton_usd.view.browser import gl_available  # noqa: PLC0415
    from newton_usd.view.video import write_video  # noqa: PLC0415

    if gl_available() is None:
        print("  (video not measured: no offscreen GL)")
        return None
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        n = write_video(scene, os.path.join(d, "v.mp4"), size=(640, 480))
        return n / (time.perf_counter() - t)


def pose_seconds(path: str, times) -> tuple:
    """Seconds to read the boxes' poses at ``times`` (the layer already loaded): as ``read_scene`` does, and
    through the XformCache frame by frame."""
    stage = Usd.Stage.Open(path)
    prims = [p for p in stage.Traverse() if p.GetName().startswith("Box")]
    out = []
    for xform_cache in (False, True):
        t = time.perf_counter()
        part_poses(prims, times, stage_to_si("Z", 1.0), xform_cache=xform_cache)
        out.append(time.perf_counter() - t)
    return tuple(out)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--bodies", default="100,1000,10000")
    p.add_argument("--frames", type=int, default=600)
    p.add_argument("--no-browser", action="store_true")
    args = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        warm = read_scene(recording(os.path.join(d, "warm.usdc"), 2, 2))  # imports (trimesh, ...) before timing
        write_page(warm, os.path.join(d, "warm.html"))  # (viser's too)
        for n in [int(x) for x in args.bodies.split(",")]:
            path = recording(os.path.join(d, f"rec{n}.usdc"), n, args.frames)
            t0, c0 = time.perf_counter(), time.process_time()
            scene = read_scene(path)
            t1, c1 = time.perf_counter(), time.process_time()
            page = os.path.join(d, f"rec{n}.html")
            t_view = time.perf_counter()
            view = default_view(scene)
            floor(scene)
            t_view = time.perf_counter() - t_view
            tp, cp = time.perf_counter(), time.process_time()
            size = write_page(scene, page, view=view)
            t2, c2 = time.perf_counter(), time.process_time()
            cpu = (c1 - c0, c2 - cp)
            t_fixed = time.perf_counter()
            fixed_size = write_page(scene, os.path.join(d, f"rec{n}_fixed.html"), view=default_view(scene, fixed=True))
            t_fixed = time.perf_counter() - t_fixed
            print(f"  {n} bodies: the default view and the floor in {t_view:.2f} s; the page that follows "
                  f"{t2 - tp:.2f} s, {size / 1e6:.2f} MB against --fixed's {t_fixed:.2f} s, {fixed_size / 1e6:.2f} MB "
                  f"({(t2 - tp) / t_fixed:.2f}x, {size / fixed_size:.3f}x)")  # fmt: skip
            if n == min(int(x) for x in args.bodies.split(",")) and n <= 1000:
                fast, slow = pose_seconds(path, scene.times)
                print(f"  {n} bodies: the poses read in {fast:.2f} s, through the XformCache {slow:.2f} s "
                      f"({slow / fast:.1f}x)")  # fmt: skip
            load = None if args.no_browser or n > 1000 else page_load_seconds(page)
            fps = video_fps(scene, args.frames) if n == 100 else None
            rows.append((n, args.frames, t1 - t0, t2 - tp, size / 1e6, load, fps, cpu))
            line = f"{n} bodies x {args.frames} frames: read {t1 - t0:.2f} s (cpu {cpu[0]:.2f}), "
            line += f"page {t2 - tp:.2f} s (cpu {cpu[1]:.2f}), {size / 1e6:.1f} MB"
            line += (f", load {load:.1f} s" if load else "") + (f", video {fps:.0f} fps" if fps else "")
            print(line, flush=True)
    print()
    columns = ["bodies", "frames", "read USD (s)", "write page (s)", "total (s)", "total CPU (s)", "page (MB)"]
    columns += ["load in Chromium (s)", "video 640x480 (fps)"]
    print("| " + " | ".join(columns) + " |")
    print("|" + "---:|" * len(columns))
    for n, f, read, write, mb, load, fps, cpu in rows:
        print(f"| {n:,} | {f} | {read:.2f} | {write:.2f} | {read + write:.2f} | {sum(cpu):.2f} | {mb:.1f} | "
              f"{'' if load is None else f'{load:.1f}'} | {'' if fps is None else f'{fps:.0f}'} |")  # fmt: skip


if __name__ == "__main__":
    main()
