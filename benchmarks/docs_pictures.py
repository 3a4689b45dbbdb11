"""The pictures of the README and docs/viewing.md, made by the commands they show: the sample stage simulated by
``usdsim``, its page from ``usdsim view`` in headless Chromium paused at frame 30, frames of its ``usdsim video``,
and frames of the video of Newton's ``ant.usda`` (no ground: the floor grid), all through the default view.

    PYTHONPATH=. python benchmarks/docs_pictures.py [--out docs/_static]

Needs the test browser and offscreen GL (``python -m newton_usd.view.browser setup``), and newton's examples for
the ant (skipped, saying so, without them).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def usdsim(*argv) -> None:
    from newton_usd.cli import main  # noqa: PLC0415

    with contextlib.redirect_stdout(io.StringIO()):
        status = main(list(argv))
    if status:
        raise SystemExit(f"usdsim {' '.join(argv)}: exit {status}")


def page_picture(page: str, out: str, frame: int, frames: int) -> None:
    """A screenshot (800x450) of ``page`` paused at ``frame`` (of ``frames``), the WebGL notice closed."""
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    from newton_usd.view.browser import launch  # noqa: PLC0415

    with sync_playwright() as p:
        browser = launch(p)
        tab = browser.new_page(viewport={"width": 800, "height": 450})
        tab.goto(f"file://{page}")
        tab.wait_for_selector("#usdsim-frame", timeout=300_000)
        tab.wait_for_selector("[role=slider]", state="attached", timeout=300_000)
        tab.wait_for_timeout(2000)
        for close in tab.locator(".mantine-Notification-root button").all():  # "Software WebGL rendering"
            with contextlib.suppress(Exception):
                close.click(timeout=2000)
        slider = tab.locator("[role=slider]").first.locator("xpath=..")
        slider.locator("xpath=ancestor::div[.//button][1]").locator("button").first.click()  # pause
        box = slider.bounding_box()
        for _ in range(5):  # a click lands on the nearest frame: nudge until it is the one asked for
            shown = int(tab.locator("#usdsim-frame").get_attribute("data-frame"))
            if shown == frame:
                break
            x = box["x"] + (frame + 0.5) / frames * box["width"]
            tab.mouse.click(x, box["y"] + box["height"] / 2)
            tab.wait_for_timeout(800)
        tab.mouse.move(799, 200)
        tab.wait_for_timeout(2500)
        tab.screenshot(path=out, timeout=300_000)
        browser.close()


def video_strip(video: str, out: str, frames, width: int = 320) -> None:
    """The video's ``frames`` side by side, each ``width`` pixels wide."""
    import av  # noqa: PLC0415
    from PIL import Image  # noqa: PLC0415

    with av.open(video) as c:
        decoded = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
    images = [Image.fromarray(decoded[min(f, len(decoded) - 1)]) for f in frames]
    height = round(images[0].height * width / images[0].width)
    strip = Image.new("RGB", (width * len(images) + 4 * (len(images) - 1), height), (255, 255, 255))
    for k, image in enumerate(images):
        strip.paste(image.resize((width, height), Image.LANCZOS), (k * (width + 4), 0))
    strip.save(out, optimize=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.path.join(REPO, "docs", "_static"))
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        stage = shutil.copy(os.path.join(REPO, "sample_stages", "boxes_on_ground.usda"), d)
        usdsim(stage, "-q")
        recording = stage.replace(".usda", ".sim.usda")
        usdsim("view", recording)
        page_picture(recording.replace(".usda", ".html"), os.path.join(args.out, "viewing_boxes.png"), 30, 121)
        usdsim("video", recording, "-o", os.path.join(d, "boxes.mp4"))
        video_strip(os.path.join(d, "boxes.mp4"), os.path.join(args.out, "video_boxes.png"), (0, 30, 60, 120))
        print(f"wrote {args.out}/viewing_boxes.png and video_boxes.png")
        try:
            import newton  # noqa: PLC0415
        except ImportError:
            print("newton is not installed: no picture of the ant")
            return
        ant = os.path.join(os.path.dirname(newton.__file__), "examples", "assets", "ant.usda")
        ant = shutil.copy(ant, d)
        usdsim(ant, "-q")
        usdsim("video", ant.replace(".usda", ".sim.usda"), "-o", os.path.join(d, "ant.mp4"))
        video_strip(os.path.join(d, "ant.mp4"), os.path.join(args.out, "video_ant.png"), (0, 48, 96, 120))
        print(f"wrote {args.out}/video_ant.png")


if __name__ == "__main__":
    main()
