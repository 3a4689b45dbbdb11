"""The page of ``usdsim view`` in a real browser: Debian's chromium-headless-shell driven by playwright
(WebGL on SwiftShader, the CPU). Skipped, saying why, where the browser is not installed
(``python -m newton_usd.view.browser setup`` installs it as root).

One browser serves every test (SwiftShader is slow: a modest viewport, one page load per stage).
"""

from __future__ import annotations

import colorsys
import io

import numpy as np
import pytest
from test_view import BLUE, GREEN, RED, falling_box, tall_box, three_boxes, tracked_fall

from newton_usd.cli import view as cli
from newton_usd.view.browser import browser_missing, launch
from newton_usd.view.camera import default_view
from newton_usd.view.scene import read_scene

pytestmark = pytest.mark.skipif(browser_missing() is not None, reason=str(browser_missing()))

VIEWPORT = {"width": 640, "height": 420}
LOAD_TIMEOUT_MS = 180_000


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    with sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


class Loaded:
    """A page loaded in the browser, its console errors, and screenshots of its canvas."""

    def __init__(self, browser, path):
        self.page = browser.new_page(viewport=VIEWPORT)
        self.errors = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(f"file://{path}")
        self.page.wait_for_selector("canvas", timeout=LOAD_TIMEOUT_MS)
        self.page.wait_for_selector("#usdsim-frame", timeout=LOAD_TIMEOUT_MS)
        self.canvas = self.page.locator("canvas").first

    def shot(self) -> np.ndarray:
        from PIL import Image  # noqa: PLC0415  (a dependency of viser)

        self.page.wait_for_timeout(1500)  # a few SwiftShader frames
        return np.asarray(Image.open(io.BytesIO(self.canvas.screenshot(timeout=LOAD_TIMEOUT_MS))).convert("RGB"))

    def frame(self) -> int:
        return int(self.page.locator("#usdsim-frame").get_attribute("data-frame"))

    def pause_and_seek(self, fraction: float) -> None:
        """Pause the player (its first button) and click its time slider at ``fraction`` of its length."""
        slider = self.page.locator("[role=slider]").first.locator("xpath=..")
        if not hasattr(self, "_paused"):
            bar = slider.locator("xpath=ancestor::div[.//button][1]")
            bar.locator("button").first.click()
            self._paused = True
        box = slider.bounding_box()
        self.page.mouse.click(box["x"] + fraction * box["width"], box["y"] + box["height"] / 2)
        self.page.wait_for_timeout(500)

    def check_time(self, start: float, fps: float) -> None:
        """The frame and time in the corner are those of the frame the player shows at its clock (the time
        slider's value, seconds from the first recorded frame), and viser's time box is that clock."""
        clock = float(self.page.locator("[role=slider]").first.get_attribute("aria-valuenow"))
        frame = self.frame()
        text = self.page.locator("#usdsim-frame").text_content()
        seconds = frame / fps  # (a recording of every frame)
        assert f"frame {start + frame:g} / " in text and f"  {seconds:.2f} s" in text, (text, frame)
        assert seconds <= clock + 1e-3 and clock < seconds + 1 / fps + 1e-3, (text, clock)
        box = float(self.page.locator("input").first.input_value())  # viser rounds its clock to 0.1 s
        assert abs(box - clock) <= 0.05 + 1e-3, (box, clock)

    def close(self):
        self.page.close()


def project(scene, point, width, height) -> tuple:
    """Pixel (x, y) of a world point (meters, Z up) seen by the page's initial camera, the default view's at the
    first frame (three.js's perspective: vertical field of view, square pixels)."""
    view = default_view(scene)
    c = {"fov": view.fovy(0)}
    eye, target = view.eye[0], view.target[0]
    forward = (target - eye) / np.linalg.norm(target - eye)
    right = np.cross(forward, (0, 0, 1.0))
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    d = np.asarray(point, float) - eye
    x, y, z = d @ right, d @ up, d @ forward
    f = 1.0 / np.tan(c["fov"] / 2)
    ndc_x, ndc_y = f * x / z / (width / height), f * y / z
    return (ndc_x + 1) / 2 * width, (1 - ndc_y) / 2 * height


def hue_of(pixels) -> tuple:
    r, g, b = np.median(pixels.reshape(-1, 3), axis=0) / 255.0
    return colorsys.rgb_to_hsv(r, g, b)


def same_hue(pixels, rgb) -> bool:
    h, s, _ = hue_of(pixels)
    want = colorsys.rgb_to_hsv(*rgb)[0]
    return s > 0.35 and min(abs(h - want), 1 - abs(h - want)) < 0.07


def red_pixels(image) -> tuple:
    """(ys, xs) of the red pixels (red, not orange), or an empty tuple where there are hardly any."""
    r, g, b = (image[..., k].astype(int) for k in range(3))
    ys, xs = np.nonzero((r > 100) & (r > 2 * g) & (r > 2 * b) & (np.abs(g - b) < 40))
    return (ys, xs) if len(ys) > 30 else ()


def red_centroid(image) -> tuple:
    found = red_pixels(image)
    assert found, "the red box is on screen"
    ys, xs = found
    spread = [float(np.subtract(*np.percentile(v, [98, 2]))) + 1 for v in (xs, ys)]  # not a stray pixel's
    return float(np.median(xs)), float(np.median(ys)), tuple(spread)


def test_colors_where_the_bodies_are_no_console_error(browser, tmp_path):
    stage = three_boxes(tmp_path / "rgb.usda")
    assert cli.main(["view", stage, "-o", str(tmp_path / "rgb.html")]) == 0
    scene = read_scene(stage)
    page = Loaded(browser, tmp_path / "rgb.html")
    try:
        image = page.shot()
        h, w = image.shape[:2]
        assert "no time samples" in page.page.locator("#usdsim-frame").text_content()
        for part, rgb in zip(sorted(scene.parts, key=lambda p: p.path), (BLUE, GREEN, RED), strict=True):
            i = scene.parts.index(part)
            x, y = project(scene, scene.positions[0, i], w, h)
            window = image[int(y) - 4 : int(y) + 5, int(x) - 4 : int(x) + 5]
            assert same_hue(window, rgb), f"{part.path} at ({x:.0f}, {y:.0f}) is {hue_of(window)}, not {rgb}"
        # No ground in the stage: the floor grid under the boxes, light blue-grey, in the lower part.
        lower = image[2 * h // 3 :].astype(int)
        assert ((lower[..., 2] - lower[..., 0] > 12) & (lower[..., 0] > 140)).mean() > 0.3
        assert page.errors == []
    finally:
        page.close()


def test_falling_box_frames_differ_and_the_slider_moves_it(browser, tmp_path):
    # From time code 10 at 30 time codes per second: the player's clock starts at the first frame.
    # Invisible from frame 27 to 33 (time-sampled visibility).
    stage = falling_box(tmp_path / "fall.usda", frames=60, start=10, fps=30, hidden=range(27, 34))
    assert cli.main(["view", stage]) == 0
    page = Loaded(browser, tmp_path / "fall.html")
    try:
        page.pause_and_seek(0.02)
        early, early_frame = page.shot(), page.frame()
        page.check_time(start=10, fps=30)
        page.pause_and_seek(0.97)
        late, late_frame = page.shot(), page.frame()
        page.check_time(start=10, fps=30)
        assert early_frame < 10 and late_frame > 50, (early_frame, late_frame)
        # The view follows the box (the one body that moves): it stays put on the page while the ground comes
        # up behind it.
        (x0, y0, _), (x1, y1, _) = red_centroid(early), red_centroid(late)
        assert abs(x1 - x0) < 15 and abs(y1 - y0) < 15, f"the box is followed: ({x0}, {y0}) -> ({x1}, {y1})"
        assert (np.abs(early.astype(int) - late.astype(int)).sum(axis=2) > 60).mean() > 0.1
        for fraction in (0.31, 0.62):  # mid-frame clocks, where a rounded or shifted time shows
            page.pause_and_seek(fraction)
            page.check_time(start=10, fps=30)
        page.pause_and_seek(0.5)
        assert 27 <= page.frame() <= 33 and not red_pixels(page.shot()), "invisible on that frame"
        assert page.errors == []
    finally:
        page.close()


@pytest.mark.parametrize("up", ["Y", "Z"])
def test_y_up_and_z_up_stand_upright(browser, tmp_path, up):
    stage = tall_box(tmp_path / f"tall_{up}.usda", up)
    assert cli.main(["view", stage]) == 0
    page = Loaded(browser, tmp_path / f"tall_{up}.html")
    try:
        _, _, (width, height) = red_centroid(page.shot())
        assert height > 2 * width, f"the 1 m tall box stands up: {width:.0f} x {height:.0f} pixels"
    finally:
        page.close()


def test_the_page_looks_through_the_stage_camera(browser, tmp_path):
    """--camera: the page's initial camera is the Camera prim's (a still camera looking at the red box, which
    stays put, in a Y-up stage in centimetres: the page as it opens, whatever frame it plays), and where that
    camera moves (it tracks the red box falling 30 m), the player moves the page's camera with it at each
    frame."""
    for camera, drop in (("still", 0.0), ("tracking", 30.0)):
        stage = tracked_fall(tmp_path / f"{camera}.usda", frames=24, drop=drop, camera=camera, up="Y",
                             meters_per_unit=0.01)  # fmt: skip
        assert cli.main(["view", stage, "--camera", "/Cam"]) == 0
        page = Loaded(browser, tmp_path / f"{camera}.html")
        try:
            for fraction in (None,) if camera == "still" else (0.0, 0.95):
                if fraction is not None:
                    page.pause_and_seek(fraction)
                image = page.shot()
                h, w = image.shape[:2]
                x, y, _ = red_centroid(image)
                assert abs(x - w / 2) < w / 12 and abs(y - h / 2) < h / 12, (camera, page.frame(), x, y, w, h)
            assert camera == "still" or page.frame() > 20
            assert page.errors == []
        finally:
            page.close()


def test_the_live_page_follows_a_falling_body(browser, tmp_path):
    """usdsim STAGE --view: as the run's frames arrive, the default view follows the bodies: a box falling 29 m
    stays in the middle third of the page at every batch."""
    from pxr import Usd, UsdGeom  # noqa: PLC0415

    from newton_usd.view.serve import LiveRun  # noqa: PLC0415

    stage = Usd.Stage.Open(tracked_fall(tmp_path / "fall.usda", frames=48, companion=False))
    op = UsdGeom.Xformable(stage.GetPrimAtPath("/Falling")).GetOrderedXformOps()[0]
    samples = {t: op.Get(t) for t in op.GetAttr().GetTimeSamples()}
    op.GetAttr().Clear()  # the run has not written anything yet
    op.Set(samples[0])
    live = LiveRun(stage, port=0)
    page = browser.new_page(viewport=VIEWPORT)
    from PIL import Image  # noqa: PLC0415  (a dependency of viser)

    def centred() -> tuple:
        """Whether the red box is in the middle third, waiting for it as long as a loaded machine may need (the
        browser's camera moves once it has the frame's message, and SwiftShader draws slowly)."""
        for _ in range(LOAD_TIMEOUT_MS // 1000):
            page.wait_for_timeout(1000)
            image = np.asarray(Image.open(io.BytesIO(page.locator("canvas").first.screenshot())).convert("RGB"))
            found = red_pixels(image)
            if found:
                x, y = float(np.median(found[1])), float(np.median(found[0]))
                if image.shape[1] / 3 < x < 2 * image.shape[1] / 3 and image.shape[0] / 3 < y < 2 * image.shape[0] / 3:
                    return True, (x, y)
        return False, (x, y) if found else None

    try:
        page.goto(f"http://127.0.0.1:{live.server.get_port()}/")
        page.wait_for_selector("canvas", timeout=LOAD_TIMEOUT_MS)
        for written in (16, 32, 48):  # three batches of frames, as usdsim writes them
            for t in range(written):
                op.Set(samples[t], t)
            live.update(written - 1, written, 48, force=True)
            ok, where = centred()
            assert ok, (written, where, samples[written - 1])
    finally:
        page.close()
        live.close()
