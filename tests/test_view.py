"""usdsim view / video without a browser: what is read from a stage, the page and the MP4 written, bad input.

The recordings here are authored directly (time-sampled translate ops, as a recording is): the viewer
reads USD only, whichever engine wrote it. The browser tests are in test_view_browser.py.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from pxr import Gf, Sdf, UsdGeom

from newton_usd.cli import view as cli
from newton_usd.view.browser import gl_available
from newton_usd.view.scene import read_scene

from stages import add_box, falling_cube, new_stage

RED = (0.9, 0.1, 0.1)
GREEN = (0.1, 0.75, 0.15)
BLUE = (0.1, 0.25, 0.9)


def colored_box(stage, path, color, pos, size=0.3, scale=None):
    cube = add_box(stage, path, size, pos)
    cube.CreateDisplayColorAttr([Gf.Vec3f(*color)])
    if scale is not None:
        cube.AddScaleOp().Set(Gf.Vec3f(*scale))
    return cube


def falling_box(path, frames=60, up="Z", meters_per_unit=1.0, top=2.0, bottom=0.15, start=0, fps=60, hidden=()):
    """A red box falling from ``top`` to ``bottom`` (meters) over ``frames`` frames from time code ``start``
    (``fps`` time codes per second), beside a static blue box on a grey ground: a recording as usdsim writes
    one (translate time samples). The red box is invisible on the frames ``hidden`` (time-sampled
    ``visibility``)."""
    stage = new_stage(str(path), up=up, meters_per_unit=meters_per_unit, fps=fps)
    k = 1.0 / meters_per_unit

    def at(x, height):
        return (x * k, height * k, 0.0) if up == "Y" else (x * k, 0.0, height * k)

    ground = UsdGeom.Cube.Define(stage, "/Ground")
    ground.CreateSizeAttr(1.0)
    ground.AddTranslateOp().Set(Gf.Vec3d(*at(0, -0.05)))
    ground.AddScaleOp().Set(Gf.Vec3f(*((3 * k, 0.1 * k, 3 * k) if up == "Y" else (3 * k, 3 * k, 0.1 * k))))
    ground.CreateDisplayColorAttr([Gf.Vec3f(0.55, 0.55, 0.55)])
    box = colored_box(stage, "/Falling", RED, at(-0.4, top), size=0.3 * k)
    colored_box(stage, "/Resting", BLUE, at(0.4, 0.15), size=0.3 * k)
    op = box.GetOrderedXformOps()[0]
    for f in range(frames):
        op.Set(Gf.Vec3d(*at(-0.4, top + (bottom - top) * (f / (frames - 1)) ** 2)), start + f)
        if hidden:
            box.CreateVisibilityAttr().Set(
                UsdGeom.Tokens.invisible if f in hidden else UsdGeom.Tokens.inherited, start + f
            )
    stage.SetStartTimeCode(start)
    stage.SetEndTimeCode(start + frames - 1)
    stage.GetRootLayer().Save()
    return str(path)


def three_boxes(path, up="Z"):
    """Red, green and blue boxes in a row along X, standing on nothing, no time samples."""
    stage = new_stage(str(path), up=up)
    for name, color, x in (("Red", RED, -0.6), ("Green", GREEN, 0.0), ("Blue", BLUE, 0.6)):
        colored_box(stage, f"/{name}", color, (x, 0.2, 0) if up == "Y" else (x, 0, 0.2), size=0.35)
    stage.GetRootLayer().Save()
    return str(path)


def tall_box(path, up):
    """A box 1 m tall along the stage's up axis (0.25 m wide), red, on a grey ground."""
    stage = new_stage(str(path), up=up)
    scale = (0.25, 1.0, 0.25) if up == "Y" else (0.25, 0.25, 1.0)
    colored_box(stage, "/Tall", RED, (0, 0.5, 0) if up == "Y" else (0, 0, 0.5), size=1.0, scale=scale)
    stage.GetRootLayer().Save()
    return str(path)


def tracked_fall(path, frames=48, fps=24, drop=30.0, camera=None, up="Z", meters_per_unit=1.0, companion=True):
    """A red box falling ``drop`` meters from 1 m over ``frames`` frames (free fall, no ground) beside a blue box
    that falls 1 m and rests (``companion``); a recording as usdsim writes one. ``camera``: ``"still"`` adds
    /Cam, a camera 6 m away level with the red box's start, looking at it; ``"tracking"`` moves that camera
    down with the red box. Lengths are meters, authored in the stage's units and up axis."""
    stage = new_stage(str(path), up=up, meters_per_unit=meters_per_unit, fps=fps)
    k = 1.0 / meters_per_unit

    def at(x, y, height):  # Z-up meters -> the stage's axes and units
        return Gf.Vec3d(x * k, height * k, -y * k) if up == "Y" else Gf.Vec3d(x * k, y * k, height * k)

    red = colored_box(stage, "/Falling", RED, at(2.0, 1.0, 1.0), size=0.3 * k)
    blue = colored_box(stage, "/Dropped", BLUE, at(-1.0, 0.0, 1.15), size=0.3 * k) if companion else None
    op = None
    if camera:
        cam = UsdGeom.Camera.Define(stage, "/Cam")
        cam.CreateFocalLengthAttr(35.0)
        cam.CreateClippingRangeAttr(Gf.Vec2f(0.1 * k, 1000.0 * k))
        op = cam.AddTransformOp()
    up_vec = Gf.Vec3d(0, 1, 0) if up == "Y" else Gf.Vec3d(0, 0, 1)
    for f in range(frames):
        height = 1.0 - drop * (f / (frames - 1)) ** 2
        red.GetOrderedXformOps()[0].Set(at(2.0, 1.0, height), f)
        if blue is not None:
            blue.GetOrderedXformOps()[0].Set(at(-1.0, 0.0, max(0.15, 1.15 - 4.9 * (f / fps) ** 2)), f)
        if op is not None and (camera == "tracking" or f == 0):
            look = Gf.Matrix4d().SetLookAt(at(2.0, -5.0, height), at(2.0, 1.0, height), up_vec).GetInverse()
            if camera == "tracking":
                op.Set(look, f)
            else:
                op.Set(look)
    stage.SetStartTimeCode(0)
    stage.SetEndTimeCode(frames - 1)
    stage.GetRootLayer().Save()
    return str(path)


# ---------------------------------------------------------------- reading the stage


def test_scene_reads_colors_poses_and_units(tmp_path):
    stage = falling_box(tmp_path / "fall.usda", frames=30, up="Y", meters_per_unit=0.01, hidden=(0, 1, 2))
    scene = read_scene(stage)
    assert scene.animated and scene.frames == 30 and scene.fps == 60
    by_path = {p.path: i for i, p in enumerate(scene.parts)}
    fall, rest = by_path["/Falling"], by_path["/Resting"]
    np.testing.assert_allclose(scene.parts[fall].color, RED, atol=1e-6)
    np.testing.assert_allclose(scene.parts[rest].color, BLUE, atol=1e-6)
    # Y up and centimeters read as Z up and meters: the box falls along Z from 2 m to 0.15 m.
    np.testing.assert_allclose(scene.positions[0, fall], (-0.4, 0, 2.0), atol=1e-5)
    np.testing.assert_allclose(scene.positions[-1, fall], (-0.4, 0, 0.15), atol=1e-5)
    np.testing.assert_allclose(np.ptp(scene.parts[fall].vertices, axis=0), (0.3, 0.3, 0.3), atol=1e-5)
    # The ground's scale (3 x 0.1 x 3 in Y up) is baked into its vertices: 3 m wide, 0.1 m thick along Z.
    lo, hi = scene.bounds([by_path["/Ground"]])
    np.testing.assert_allclose(hi - lo, (3, 3, 0.1), atol=1e-5)
    assert list(scene.moving()) == [i == fall for i in range(len(scene.parts))]
    # Invisible on its first three frames (time-sampled visibility): drawn, shown from frame 3 on.
    assert list(scene.shown[:, fall]) == [f >= 3 for f in range(30)] and scene.shown[:, rest].all()


def test_purpose_visibility_and_colliders(tmp_path):
    stage = new_stage(str(tmp_path / "p.usda"))
    colored_box(stage, "/Shown", RED, (0, 0, 1))
    guide = colored_box(stage, "/Guide", GREEN, (1, 0, 1))
    UsdGeom.Imageable(guide).CreatePurposeAttr(UsdGeom.Tokens.guide)
    hidden = colored_box(stage, "/HiddenCollider", BLUE, (2, 0, 1))  # add_box applies CollisionAPI
    UsdGeom.Imageable(hidden).MakeInvisible()
    plain = UsdGeom.Sphere.Define(stage, "/HiddenVisual")
    UsdGeom.Imageable(plain).MakeInvisible()
    stage.GetRootLayer().Save()
    scene = read_scene(str(tmp_path / "p.usda"))
    kinds = {p.path: p.collider for p in scene.parts}
    assert kinds == {"/Shown": False, "/Guide": True, "/HiddenCollider": True}
    assert not scene.animated and scene.frames == 1


def test_instancing_and_point_instancer(tmp_path):
    stage = new_stage(str(tmp_path / "i.usda"))
    stage.CreateClassPrim("/Proto")  # a class: not drawn itself, only where referenced
    cube = UsdGeom.Cube.Define(stage, "/Proto/Cube")
    cube.CreateSizeAttr(0.1)
    cube.CreateDisplayColorAttr([Gf.Vec3f(*GREEN)])
    for k in range(2):
        ref = UsdGeom.Xform.Define(stage, f"/Ref{k}")
        ref.AddTranslateOp().Set(Gf.Vec3d(k, 5, 0))
        ref.GetPrim().GetReferences().AddInternalReference("/Proto")
        ref.GetPrim().SetInstanceable(True)
    inst = UsdGeom.PointInstancer.Define(stage, "/Instancer")
    ball = UsdGeom.Sphere.Define(stage, "/Instancer/Protos/Ball")
    ball.CreateRadiusAttr(0.05)
    inst.CreatePrototypesRel().SetTargets([ball.GetPath()])
    inst.CreateProtoIndicesAttr([0, 0, 0])
    positions = inst.CreatePositionsAttr()
    for f in range(3):
        positions.Set([Gf.Vec3f(i, 0, 1 - 0.1 * f) for i in range(3)], f)
    stage.SetStartTimeCode(0)
    stage.SetEndTimeCode(2)
    stage.GetRootLayer().Save()
    scene = read_scene(str(tmp_path / "i.usda"))
    paths = sorted(p.path for p in scene.parts)
    assert paths == ["/Instancer[0]", "/Instancer[1]", "/Instancer[2]", "/Ref0/Cube", "/Ref1/Cube"]
    i = [p.path for p in scene.parts].index("/Instancer[2]")
    np.testing.assert_allclose(scene.positions[:, i], [(2, 0, 1), (2, 0, 0.9), (2, 0, 0.8)], atol=1e-6)
    j = [p.path for p in scene.parts].index("/Ref1/Cube")
    np.testing.assert_allclose(scene.positions[0, j], (1, 5, 0), atol=1e-6)


def test_mesh_colored_per_face_is_split_by_color(tmp_path):
    stage = new_stage(str(tmp_path / "m.usda"))
    mesh = UsdGeom.Mesh.Define(stage, "/Quad")
    mesh.CreatePointsAttr([(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (2, 0, 0), (2, 1, 0)])
    mesh.CreateFaceVertexCountsAttr([4, 4])
    mesh.CreateFaceVertexIndicesAttr([0, 1, 2, 3, 1, 4, 5, 2])
    pv = mesh.CreateDisplayColorPrimvar(UsdGeom.Tokens.uniform)
    pv.Set([Gf.Vec3f(*RED), Gf.Vec3f(*BLUE)])
    stage.GetRootLayer().Save()
    scene = read_scene(str(tmp_path / "m.usda"))
    assert len(scene.parts) == 2 and all(len(p.faces) == 2 for p in scene.parts)
    colors = sorted(scene.parts, key=lambda p: p.color[0])
    np.testing.assert_allclose([colors[0].color, colors[1].color], [BLUE, RED], atol=1 / 255)
    assert colors[1].vertices[:, 0].max() == 1.0 and colors[0].vertices[:, 0].min() == 1.0  # red left, blue right


# ---------------------------------------------------------------- usdsim view (the page)


def test_view_writes_a_self_contained_page(tmp_path, capsys):
    stage = falling_box(tmp_path / "fall.usda", frames=20)
    assert cli.main(["view", stage]) == 0
    page = tmp_path / "fall.html"
    text = page.read_text()
    assert "__VISER_EMBED_DATA__" in text and "usdsim-frame" in text
    assert "http://" not in text.split("__VISER_EMBED_DATA__")[0][-2000:]  # nothing fetched from a server
    out = capsys.readouterr().out
    assert "wrote" in out and "20 frames at 60 fps" in out
    umask = os.umask(0)
    os.umask(umask)
    assert page.stat().st_mode & 0o777 == 0o666 & ~umask  # a file like any other (to copy and serve), not 0600


def test_view_of_a_stage_without_time_samples_says_so(tmp_path, capsys):
    assert cli.main(["view", three_boxes(tmp_path / "still.usda"), "-o", str(tmp_path / "p.html")]) == 0
    assert "no time samples: the authored pose" in capsys.readouterr().out
    assert (tmp_path / "p.html").exists()


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda d: str(d / "missing.usda"), "missing.usda: no such file"),
        (lambda d: (d / "notes.txt").write_text("hello") and str(d / "notes.txt"), "not a USD file"),
        (lambda d: (d / "bad.usda").write_text("#usda 1.0\n def Xform {") and str(d / "bad.usda"), "cannot be opened"),
    ],
)
@pytest.mark.parametrize("command", ["view", "video"])
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path, capsys, make, message, command):
    stage = make(tmp_path)
    before = set(os.listdir(tmp_path))
    assert cli.main([command, stage]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert set(os.listdir(tmp_path)) == before


@pytest.mark.parametrize("command", ["view", "video"])
def test_unwritable_output_is_exit_2(tmp_path, capsys, command):
    stage = falling_box(tmp_path / "fall.usda", frames=5)
    target = str(tmp_path / "no_such_dir" / "out.html")
    assert cli.main([command, stage, "-o", target]) == 2
    err = capsys.readouterr().err
    assert "not a writable directory" in err and len(err.strip().splitlines()) == 1
    assert not os.path.exists(os.path.dirname(target))


def test_nothing_visible_says_so(tmp_path, capsys):
    stage = new_stage(str(tmp_path / "empty.usda"))
    hidden = colored_box(stage, "/Hidden", RED, (0, 0, 1))
    UsdGeom.Imageable(hidden).CreatePurposeAttr(UsdGeom.Tokens.guide)
    stage.GetRootLayer().Save()
    assert cli.main(["view", str(tmp_path / "empty.usda")]) == 2
    err = capsys.readouterr().err
    assert "nothing visible" in err and "--colliders" in err
    assert not (tmp_path / "empty.html").exists()
    assert cli.main(["view", str(tmp_path / "empty.usda"), "--colliders"]) == 0


def test_view_port_in_use_is_exit_2(tmp_path, capsys):
    import socket  # noqa: PLC0415

    stage = falling_box(tmp_path / "fall.usda", frames=5)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert cli.main(["view", stage, "--serve", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"port {port} is in use" in err and len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------- usdsim video

needs_gl = pytest.mark.skipif(
    gl_available() is None, reason="no offscreen GL (python -m newton_usd.view.browser setup installs it)"
)


def _decode(path):
    import av  # noqa: PLC0415

    with av.open(str(path)) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]


def _hue(rgb):
    import colorsys  # noqa: PLC0415

    return colorsys.rgb_to_hsv(*(np.asarray(rgb, float) / 255.0))


def _red_rows(image):
    r, g, b = (image[..., k].astype(int) for k in range(3))
    mask = (r > 120) & (r > 2 * g) & (r > 2 * b)
    return np.nonzero(mask)


@needs_gl
def test_video_frames_colors_and_motion(tmp_path, capsys):
    stage = falling_box(tmp_path / "fall.usda", frames=30, hidden=range(10, 14))
    out = tmp_path / "fall.mp4"
    assert cli.main(["video", stage, "-o", str(out), "--size", "320x240"]) == 0
    frames = _decode(out)
    assert len(frames) == 30 and frames[0].shape == (240, 320, 3)
    # Invisible on frames 10 to 13 (its visibility is time-sampled), seen before and after.
    assert [len(_red_rows(frames[f])[0]) > 50 for f in (9, 10, 13, 14)] == [True, False, False, True]
    first, last = _red_rows(frames[0]), _red_rows(frames[-1])
    assert len(first[0]) > 50 and len(last[0]) > 50, "the red box is seen in the first and the last frame"
    # The colour under the box is red (its displayColor); the view follows it (the one moving body): it stays
    # in the middle of the picture while the ground comes up behind it.
    y, x = int(np.median(first[0])), int(np.median(first[1]))
    h, s, _ = _hue(frames[0][y, x])
    assert (h < 0.05 or h > 0.95) and s > 0.5
    for ys, xs in (first, last):  # (the lit faces are red: the box's middle is within a few pixels of theirs)
        assert abs(np.median(xs) - 160) < 40 and abs(np.median(ys) - 120) < 40
    assert (np.abs(frames[0].astype(int) - frames[-1]).sum(axis=2) > 60).mean() > 0.2


@needs_gl
def test_video_fps_resamples(tmp_path):
    stage = falling_box(tmp_path / "fall.usda", frames=61)  # one second at 60 fps
    out = tmp_path / "slow.mp4"
    assert cli.main(["video", stage, "-o", str(out), "--size", "160x120", "--fps", "15"]) == 0
    assert len(_decode(out)) == 16


def test_video_without_gl_names_the_package(tmp_path, capsys, monkeypatch):
    from newton_usd.view import video  # noqa: PLC0415

    def no_gl(width, height):
        raise video.NoGLError(video.NO_GL)

    monkeypatch.setattr(video, "_context", no_gl)
    stage = falling_box(tmp_path / "fall.usda", frames=5)
    assert cli.main(["video", stage]) == 2
    err = capsys.readouterr().err
    assert "libegl-mesa0" in err and "libosmesa6" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "fall.mp4").exists()


def _red_centroid(image):
    ys, xs = _red_rows(image)
    return (float(np.mean(xs)), float(np.mean(ys)), float(np.ptp(ys)) + 1) if len(xs) > 4 else None


@needs_gl
@pytest.mark.parametrize("up, meters_per_unit", [("Z", 1.0), ("Y", 0.01)])
def test_video_through_a_stage_camera(tmp_path, capsys, up, meters_per_unit):
    """--camera looks through the Camera prim at each frame (a camera tracking the falling red box keeps it in
    the middle), with its focal length and apertures (the box's height in the picture), in the stage's units
    and up axis."""
    stage = tracked_fall(tmp_path / "cam.usda", frames=12, camera="tracking", up=up, meters_per_unit=meters_per_unit)
    out = tmp_path / "cam.mp4"
    assert cli.main(["video", stage, "-o", str(out), "--size", "160x120", "--camera", "/Cam"]) == 0
    assert "through /Cam" in capsys.readouterr().out
    # 0.3 m at 6 m through 35 mm: the default 20.955 x 15.2908 mm filmback fitted to 4:3 is 15.72 mm tall.
    tall = 120 * (0.3 / 6.0) / (20.955 / (4 / 3) / 35.0)
    for image in _decode(out)[::11]:
        x, y, height = _red_centroid(image)
        assert abs(x - 80) < 3 and abs(y - 60) < 3, (x, y)
        assert abs(height - tall) < 3, (height, tall)


@needs_gl
def test_video_through_an_orthographic_camera_with_lens_shift(tmp_path):
    """An orthographic camera's aperture is its view's size (tenths of a stage unit), and its aperture offset
    shifts the picture: the box looked at is a quarter of the width left of the middle."""
    from pxr import Usd  # noqa: PLC0415

    path = tracked_fall(tmp_path / "ortho.usda", frames=2, drop=0.0, camera="still", companion=False)
    stage = Usd.Stage.Open(path)
    cam = UsdGeom.Camera(stage.GetPrimAtPath("/Cam"))
    cam.CreateProjectionAttr(UsdGeom.Tokens.orthographic)
    cam.CreateHorizontalApertureAttr(20.0)  # 2 m by 1.5 m
    cam.CreateVerticalApertureAttr(15.0)
    cam.CreateHorizontalApertureOffsetAttr(5.0)
    stage.Save()
    out = tmp_path / "ortho.mp4"
    assert cli.main(["video", path, "-o", str(out), "--size", "160x120", "--camera", "/Cam"]) == 0
    x, y, height = _red_centroid(_decode(out)[0])
    assert abs(x - 40) < 2 and abs(y - 60) < 2 and abs(height - 120 * 0.3 / 1.5) < 2, (x, y, height)


def test_a_camera_that_is_not_there_is_one_line_exit_2(tmp_path, capsys):
    stage = tracked_fall(tmp_path / "cam.usda", frames=3, camera="still")
    before = set(os.listdir(tmp_path))
    for command in ("video", "view"):
        for path, message in (
            ("/Nope", "--camera /Nope: no such prim (the stage's cameras: /Cam)"),
            ("/Falling", "--camera /Falling: not a Camera (its type: Cube; the stage's cameras: /Cam)"),
            ("Cam", "--camera Cam: not an absolute prim path"),
        ):
            assert cli.main([command, stage, "--camera", path]) == 2
            err = capsys.readouterr().err
            assert message in err and len(err.strip().splitlines()) == 1, err
    assert cli.main(["video", stage, "--follow", "/Nope"]) == 2
    err = capsys.readouterr().err
    assert "--follow /Nope: no drawn gprim at or under this prim" in err and len(err.strip().splitlines()) == 1
    assert set(os.listdir(tmp_path)) == before


def test_the_primary_camera_is_used_without_camera(tmp_path):
    """A stage whose render settings name a camera, or that Kit saved looking through one of its cameras, is
    seen through it; --follow and --fixed ask for the default view."""
    from pxr import Usd, UsdRender  # noqa: PLC0415

    from newton_usd.view.camera import choose_view  # noqa: PLC0415

    path = tracked_fall(tmp_path / "cam.usda", frames=3, camera="still")
    stage = Usd.Stage.Open(path)
    UsdGeom.Camera.Define(stage, "/Other")
    scene = read_scene(stage)
    assert choose_view(stage, scene).what == "the default view, following the bodies"
    layer = stage.GetRootLayer()
    layer.customLayerData = {"cameraSettings": {"boundCamera": "/OmniverseKit_Persp"}}  # Kit's, not in the file
    assert choose_view(stage, scene).what.startswith("the default view")
    layer.customLayerData = {"cameraSettings": {"boundCamera": "/Cam"}}
    layer.Save()
    view = choose_view(stage, scene)
    assert view.what == "through /Cam (the camera Kit saved the stage looking through)"
    np.testing.assert_allclose(view.eye[0], (2.0, -5.0, 1.0), atol=1e-9)
    np.testing.assert_allclose(view.target[0], (2.0, 0.5, 1.0), atol=1e-9)  # the bodies' middle, on its axis
    out = Sdf.Layer.CreateNew(str(tmp_path / "cam.sim.usda"))  # a recording sublayers the stage it simulated
    out.subLayerPaths = ["./cam.usda"]
    out.Save()
    recording = Usd.Stage.Open(out.identifier)
    assert choose_view(recording, read_scene(recording)).what.startswith("through /Cam (the camera Kit saved")
    settings = UsdRender.Settings.Define(stage, "/Render/Settings")
    settings.GetCameraRel().SetTargets(["/Other"])
    layer.pseudoRoot.SetInfo("renderSettingsPrimPath", "/Render/Settings")
    assert choose_view(stage, scene).what == "through /Other (the camera of the stage's render settings " \
        "/Render/Settings)"  # fmt: skip
    assert choose_view(stage, scene, fixed=True).what == "the default view"
    assert choose_view(stage, scene, follow="/Falling").what == "the default view, following /Falling"


@needs_gl
def test_video_follows_a_falling_body_and_shows_the_grid_and_the_clock(tmp_path):
    """--follow keeps a box falling 30 m in the middle third of every frame, where the default view follows
    the middle of both falling boxes and --fixed lets it go; the stage has no ground, so the floor grid is drawn
    under them (in the lower part of the picture), and the clock in the corner changes with the frame."""
    stage = tracked_fall(tmp_path / "fall.usda", frames=24, fps=12)
    runs = {}
    for flag in ("--follow", "--fixed", None):
        out = tmp_path / f"{flag}.mp4"
        extra = {"--follow": ["--follow", "/Falling"], "--fixed": ["--fixed"], None: []}[flag]
        assert cli.main(["video", stage, "-o", str(out), "--size", "120x90", *extra]) == 0
        runs[flag] = _decode(out)
    for image in runs["--follow"]:
        x, y, _ = _red_centroid(image)
        assert 40 <= x <= 80 and 30 <= y <= 60, (x, y)
    assert _red_centroid(runs["--fixed"][-1]) is None, "the fixed view lets the box fall out of the picture"
    assert any(c is None or not (30 <= c[1] <= 60) for c in map(_red_centroid, runs[None])), "the bodies' middle"
    # The grid: light blue-grey in the lower third (its lines bluer still); the sky is above the horizon.
    lower = runs["--fixed"][0][60:].astype(int)
    grid = (lower[..., 2] - lower[..., 0] > 12) & (lower[..., 0] > 120)
    assert grid.mean() > 0.5, grid.mean()
    # The clock: text in the top-left corner, which changes from frame to frame (the view is still).
    first, later = runs["--fixed"][0][:12, :60].astype(int), runs["--fixed"][12][:12, :60].astype(int)
    assert np.ptp(first) > 100 and np.abs(first - later).max() > 100


@needs_gl
def test_a_stage_with_a_ground_has_no_grid_and_a_light_sky(tmp_path):
    stage = falling_box(tmp_path / "fall.usda", frames=2)
    out = tmp_path / "fall.mp4"
    assert cli.main(["video", stage, "-o", str(out), "--size", "120x90"]) == 0
    image = _decode(out)[0].astype(int)
    lower = image[60:]
    assert ((lower[..., 2] - lower[..., 0] > 12) & (lower[..., 0] > 120)).mean() < 0.01
    assert image[20:, 0].min() > 150 or image[:20, 100].min() > 150, "a light background, not black"


def test_value_clips_recording_is_read(tmp_path):
    """A recording written as value clips (as usdsim writes long runs) reads as its time samples."""
    clip = Sdf.Layer.CreateNew(str(tmp_path / "clip.usda"))
    stage_clip = new_stage(None)
    del stage_clip
    from pxr import Usd  # noqa: PLC0415

    c = Usd.Stage.Open(clip)
    cube = UsdGeom.Xform.Define(c, "/Box")
    op = cube.AddTranslateOp()
    for f in range(10):
        op.Set(Gf.Vec3d(0, 0, 1 - 0.1 * f), f)
    clip.Save()
    main = new_stage(str(tmp_path / "main.usda"))
    box = UsdGeom.Cube.Define(main, "/Box")
    box.CreateSizeAttr(0.2)
    box.AddTranslateOp()
    model = Usd.ClipsAPI(box.GetPrim())
    model.SetClipAssetPaths([Sdf.AssetPath("./clip.usda")])
    model.SetClipPrimPath("/Box")
    model.SetClipActive([(0, 0)])
    model.SetClipTimes([(0, 0), (9, 9)])
    main.SetStartTimeCode(0)
    main.SetEndTimeCode(9)
    main.GetRootLayer().Save()
    scene = read_scene(str(tmp_path / "main.usda"))
    assert scene.animated and scene.frames == 10
    np.testing.assert_allclose(scene.positions[:, 0, 2], 1 - 0.1 * np.arange(10), atol=1e-6)


# ---------------------------------------------------------------- live: usdsim view --serve, usdsim STAGE --view


def test_live_run_shows_frames_as_they_are_written(tmp_path):
    import urllib.request  # noqa: PLC0415

    from pxr import Usd  # noqa: PLC0415

    from newton_usd.view.serve import LiveRun  # noqa: PLC0415

    stage = Usd.Stage.Open(falling_box(tmp_path / "fall.usda", frames=2))
    op = UsdGeom.Xformable(stage.GetPrimAtPath("/Falling")).GetOrderedXformOps()[0]
    op.GetAttr().Clear()  # the run has not written anything yet
    live = LiveRun(stage, port=0)
    try:
        port = live.server.get_port()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as r:
            assert r.status == 200 and b"<html" in r.read().lower()
        live.update(0, 0, 40, force=True)
        assert live.scene.frames == 1
        for f in range(20):  # the run writes 20 frames
            op.Set(Gf.Vec3d(-0.4, 0, 2.0 - 0.05 * f), f)
        live.update(19, 20, 40, force=True)
        assert live.scene.frames == 20 and live.view.frame.max == 19 and live.view.frame.value == 19
        i = [p.path for p in live.scene.parts].index("/Falling")
        np.testing.assert_allclose(live.scene.positions[-1, i], (-0.4, 0, 2.0 - 0.05 * 19), atol=1e-6)
        for f in range(20, 30):
            op.Set(Gf.Vec3d(-0.4, 0, 2.0 - 0.05 * f), f)
        live.update(29, 30, 40, force=True)
        assert live.scene.frames == 30 and "frame 30 of 40" in live.view.status.content
        view = live.view.view  # (the default view follows the bodies as their frames arrive)
        assert view.frames == 30 and "following" in view.what, view.what
        assert view.target[-1][2] < view.target[0][2] - 0.3, view.target[[0, -1]]
    finally:
        live.close()


def test_live_run_through_a_moving_camera_moves_with_it(tmp_path):
    """usdsim STAGE --view --camera PATH: an animated camera, or one under a body the run moves, is looked through at
    each frame shown, as the frames arrive."""
    from pxr import Usd  # noqa: PLC0415

    from newton_usd.view.serve import LiveRun  # noqa: PLC0415

    stage = Usd.Stage.Open(tracked_fall(tmp_path / "cam.usda", frames=30, camera="tracking", companion=False))
    under = UsdGeom.Camera.Define(stage, "/Falling/Eye")  # (a camera riding on the body)
    under.AddTranslateOp().Set(Gf.Vec3d(0, -20, 0))
    op = UsdGeom.Xformable(stage.GetPrimAtPath("/Falling")).GetOrderedXformOps()[0]
    samples = {t: op.Get(t) for t in op.GetAttr().GetTimeSamples()}
    op.GetAttr().Clear()  # the run has not written anything yet
    op.Set(samples[0])
    lives = [LiveRun(stage, port=0, camera=path) for path in ("/Cam", "/Falling/Eye")]
    try:
        for t in range(30):
            op.Set(samples[t], t)
        for live in lives:
            live.update(29, 30, 30, force=True)
            view = live.view.view
            assert view.frames == 30 and view.moves(), view.what
            drop = view.eye[0][2] - view.eye[-1][2]  # (the box falls 29 m; each camera with it)
            assert abs(drop - (samples[0][2] - samples[29][2])) < 1e-3, (view.what, drop)
    finally:
        for live in lives:
            live.close()


def test_usdsim_run_view_writes_the_page(tmp_path, capsys):
    from newton_usd.cli import main  # noqa: PLC0415

    stage = str(tmp_path / "cube.usda")
    falling_cube(stage).Save()
    assert main([stage, "-n", "10", "--view", "-q"]) == 0
    err = capsys.readouterr()
    assert (tmp_path / "cube.sim.html").exists(), err
    assert "watching the run at http://127.0.0.1:" in err.err


def _red_cube_and_camera(path):
    """A red 0.2 m cube (a rigid body over a ground) at (0, 0, 1) and /Cam, 6 m in front of it, looking at it."""
    stage = falling_cube(str(path))
    UsdGeom.Gprim(stage.GetPrimAtPath("/Cube")).CreateDisplayColorAttr([Gf.Vec3f(*RED)])
    cam = UsdGeom.Camera.Define(stage, "/Cam")
    cam.CreateFocalLengthAttr(35.0)
    look = Gf.Matrix4d().SetLookAt(Gf.Vec3d(0, -6, 1), Gf.Vec3d(0, 0, 1), Gf.Vec3d(0, 0, 1)).GetInverse()
    cam.AddTransformOp().Set(look)
    stage.Save()
    return str(path)


@needs_gl
def test_usdsim_run_video_looks_through_the_camera_asked(tmp_path, capsys):
    """usdsim STAGE --video OUT --camera PATH: the run's video through the stage's camera (the cube it looks at in
    the middle of the first frame); a camera that is not there is one line, exit 2, before simulating: nothing
    written; a view flag without --view or --video is an error too."""
    from newton_usd.cli import main  # noqa: PLC0415

    stage = _red_cube_and_camera(tmp_path / "cube.usda")
    out = tmp_path / "run.mp4"
    assert main([stage, "-n", "3", "--video", str(out), "--camera", "/Cam", "-q"]) == 0
    assert "through /Cam" in capsys.readouterr().out
    x, y, _ = _red_centroid(_decode(out)[0])
    assert abs(x - 320) < 4 and abs(y - 240) < 4, (x, y)
    before = set(os.listdir(tmp_path))
    assert main([stage, "-n", "3", "--video", str(tmp_path / "nope.mp4"), "--camera", "/Nope"]) == 2
    err = capsys.readouterr().err
    assert "--camera /Nope: no such prim (the stage's cameras: /Cam)" in err and len(err.strip().splitlines()) == 1
    assert main([stage, "-n", "3", "--fixed"]) == 2
    assert "--fixed chooses the view of --view or --video" in capsys.readouterr().err
    assert set(os.listdir(tmp_path)) == before


def test_live_run_looks_through_the_camera_asked_or_the_primary_one(tmp_path):
    """usdsim STAGE --view --camera PATH serves the run through that camera; without it, through the camera the
    stage marks as its primary one; --follow frames the default view on the prim."""
    from pxr import Usd  # noqa: PLC0415

    from newton_usd.view.serve import LiveRun  # noqa: PLC0415

    stage = Usd.Stage.Open(_red_cube_and_camera(tmp_path / "cube.usda"))
    for kw, what in (({"camera": "/Cam"}, "through /Cam"), ({"follow": "/Cube"}, "framed on /Cube"), ({}, "default")):
        live = LiveRun(stage, port=0, **kw)
        try:
            assert what in live.view.view.what, (kw, live.view.view.what)
        finally:
            live.close()
    stage.GetRootLayer().customLayerData = {"cameraSettings": {"boundCamera": "/Cam"}}
    live = LiveRun(stage, port=0)
    try:
        assert "through /Cam" in live.view.view.what
    finally:
        live.close()


def test_recording_of_every_nth_frame_plays_its_frames(tmp_path):
    """usdsim --record-every 3 writes frames 0, 3, ..., and the last: those are the frames shown, each
    at its own time."""
    path = falling_box(tmp_path / "fall.usda", frames=30)
    from pxr import Usd  # noqa: PLC0415

    stage = Usd.Stage.Open(path)
    attr = UsdGeom.Xformable(stage.GetPrimAtPath("/Falling")).GetOrderedXformOps()[0].GetAttr()
    for f in range(30):
        if f % 3 and f != 29:
            attr.ClearAtTime(f)
    stage.Save()
    scene = read_scene(path)
    written = [*range(0, 30, 3), 29]
    assert list(scene.times) == written
    np.testing.assert_allclose(scene.seconds()[-1], 29 / 60)
    assert scene.frame_rate() == 20.0
    from newton_usd.view.video import video_frames  # noqa: PLC0415

    assert list(video_frames(scene, None)) == list(range(len(written)))
    shown = video_frames(scene, 60.0)  # back to 60 fps: each recorded frame held until the next
    assert len(shown) == 30 and list(shown[:7]) == [0, 0, 0, 1, 1, 1, 2] and shown[-1] == len(written) - 1


def test_mesh_shading_follows_its_normals(tmp_path):
    """The viewers compute normals from the faces around each vertex, so a mesh's normals decide which
    corners share a vertex: a polygonal mesh (subdivisionScheme none) without normals is faceted (no corner
    shared), one with vertex normals or a subdivision surface smooth; faceVarying and uniform normals share
    a point's corners where their normals agree."""
    stage = new_stage(str(tmp_path / "n.usda"))
    for name, scheme, normals in (("Faceted", "none", None), ("Smooth", "none", "vertex"), ("Subdiv", None, None)):
        mesh = UsdGeom.Mesh.Define(stage, f"/{name}")
        mesh.CreatePointsAttr([(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0.5, 0.5, 1)])
        mesh.CreateFaceVertexCountsAttr([3, 3, 3, 3])
        mesh.CreateFaceVertexIndicesAttr([0, 1, 4, 1, 2, 4, 2, 3, 4, 3, 0, 4])
        if scheme:
            mesh.CreateSubdivisionSchemeAttr(scheme)
        if normals:
            mesh.CreateNormalsAttr([(0, 0, 1)] * 5)
            mesh.SetNormalsInterpolation(normals)
    # faceVarying normals: the apex's shared by the four faces (smooth there), each face its own at its two
    # base corners (sharp edges): 1 + 4 x 2 drawn vertices. Uniform: one normal per face, all sharp.
    tilted = [(0.6, 0.0, 0.8), (0.0, 0.6, 0.8), (-0.6, 0.0, 0.8), (0.0, -0.6, 0.8)]  # one per face
    for name, interp, values in (
        ("Mixed", UsdGeom.Tokens.faceVarying, [n for t in tilted for n in (t, t, (0, 0, 1))]),
        ("Uniform", UsdGeom.Tokens.uniform, tilted),
    ):
        mesh = UsdGeom.Mesh.Define(stage, f"/{name}")
        mesh.CreatePointsAttr([(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0.5, 0.5, 1)])
        mesh.CreateFaceVertexCountsAttr([3, 3, 3, 3])
        mesh.CreateFaceVertexIndicesAttr([0, 1, 4, 1, 2, 4, 2, 3, 4, 3, 0, 4])
        UsdGeom.PrimvarsAPI(mesh).CreatePrimvar("normals", Sdf.ValueTypeNames.Normal3fArray, interp).Set(values)
    stage.GetRootLayer().Save()
    scene = read_scene(str(tmp_path / "n.usda"))
    corners = {p.path: len(p.vertices) for p in scene.parts}
    assert corners == {"/Faceted": 12, "/Smooth": 5, "/Subdiv": 5, "/Mixed": 9, "/Uniform": 12}
    mixed = next(p for p in scene.parts if p.path == "/Mixed")
    apex = np.flatnonzero(np.all(np.isclose(mixed.vertices, (0.5, 0.5, 1)), axis=1))
    assert len(apex) == 1 and np.sum(mixed.faces == apex[0]) == 4, "the four faces share the apex"


def test_time_samples_without_a_time_range_are_played(tmp_path):
    path = falling_box(tmp_path / "fall.usda", frames=12)
    from pxr import Usd  # noqa: PLC0415

    stage = Usd.Stage.Open(path)
    stage.GetRootLayer().ClearStartTimeCode()
    stage.GetRootLayer().ClearEndTimeCode()
    stage.Save()
    scene = read_scene(path)
    assert not Usd.Stage.Open(path).HasAuthoredTimeCodeRange()
    assert scene.animated and list(scene.times) == list(range(12))


# ---------------------------------------------------------------- reading poses fast, and exactly


def _sampled_body(stage, path, frames, ops):
    """A 0.2 m cube at ``path`` moving through ``frames`` with time-sampled ``ops`` (op names, in order)."""
    cube = UsdGeom.Cube.Define(stage, path)
    cube.CreateSizeAttr(0.2)
    add = {
        "translate": cube.AddTranslateOp,
        "orient": lambda: cube.AddOrientOp(UsdGeom.XformOp.PrecisionDouble),
        "rotateXYZ": cube.AddRotateXYZOp,
    }
    added = [add[name]() for name in ops]
    for f in frames:
        s = f / 10.0
        for name, op in zip(ops, added, strict=True):
            if name == "translate":
                op.Set(Gf.Vec3d(0.3 * s, 1.0 - 0.2 * s * s, 0.5 + 0.1 * s), f)
            elif name == "orient":
                q = Gf.Rotation(Gf.Vec3d(0.3, 1.0, 0.2).GetNormalized(), 40.0 * s).GetQuat()
                op.Set(Gf.Quatd(q.GetReal(), q.GetImaginary()), f)
            elif name == "rotateXYZ":
                op.Set(Gf.Vec3f(30.0 * s, -20.0 * s, 45.0 * s), f)
    return cube


def _poses_stage(tmp_path):
    """A Y-up centimetre stage whose bodies need every way of reading poses (see the test below)."""
    from pxr import Usd  # noqa: PLC0415

    from newton_usd.sync.clips import ClipStream  # noqa: PLC0415

    frames = range(12)
    sub = new_stage(str(tmp_path / "retimed.usda"), up="Y", meters_per_unit=0.01)
    _sampled_body(sub, "/World/Retimed", frames, ["translate", "orient"])
    sub.GetRootLayer().Save()
    stage = new_stage(str(tmp_path / "src.usda"), up="Y", meters_per_unit=0.01)
    UsdGeom.Xform.Define(stage, "/World")
    body = UsdGeom.Xform.Define(stage, "/World/Body")  # a body whose gprim is a child, moved and scaled
    translate, orient = body.AddTranslateOp(), body.AddOrientOp(UsdGeom.XformOp.PrecisionDouble)
    for f in frames:
        translate.Set(Gf.Vec3d(-0.2, 0.04 * f, 0.1), f)
        orient.Set(Gf.Quatd(Gf.Rotation(Gf.Vec3d(0, 1, 0), 3.0 * f).GetQuat()), f)
    colored_box(stage, "/World/Body/Geom", RED, (0.1, 0.0, 0.05), size=0.2, scale=(1.0, 2.0, 0.5))
    _sampled_body(stage, "/World/Euler", frames, ["translate", "rotateXYZ"])  # rotateXYZ: matrices
    _sampled_body(stage, "/World/OrientFirst", frames, ["orient", "translate"])  # another op order
    _sampled_body(stage, "/World/Sparse", frames[::3], ["translate", "orient"])  # frames between samples
    skew = UsdGeom.Xform.Define(stage, "/World/Skewed")  # under a non-uniform, rotated parent: matrices
    skew.AddRotateZOp().Set(30.0)
    skew.AddScaleOp().Set(Gf.Vec3f(2.0, 1.0, 1.0))
    _sampled_body(stage, "/World/Skewed/Body", frames, ["translate", "orient"])
    carrier = UsdGeom.Xform.Define(stage, "/World/Carrier")  # a moving parent: the XformCache
    carrier_op = carrier.AddTranslateOp()
    for f in frames:
        carrier_op.Set(Gf.Vec3d(0.0, 0.0, 0.05 * f), f)
    _sampled_body(stage, "/World/Carrier/Rider", frames, ["translate", "orient"])
    inverse = UsdGeom.Cube.Define(stage, "/World/Inverse")  # spun about a pivot: an inverse op
    inverse.AddTranslateOp(opSuffix="pivot").Set(Gf.Vec3d(0.1, 0.2, 0.3))
    spin = inverse.AddOrientOp(UsdGeom.XformOp.PrecisionDouble, opSuffix="spin")
    for f in frames:
        spin.Set(Gf.Quatd(Gf.Rotation(Gf.Vec3d(1, 0, 0), 15.0 * f).GetQuat()), f)
    inverse.AddTranslateOp(opSuffix="pivot", isInverseOp=True)
    colored_box(stage, "/World/Static", BLUE, (0.0, -0.1, 0.0))
    stage.GetRootLayer().subLayerPaths.append("./retimed.usda")
    stage.GetRootLayer().subLayerOffsets[0] = Sdf.LayerOffset(offset=2.0)  # retimed: stage t = layer t + 2
    stage.SetStartTimeCode(0)
    stage.SetEndTimeCode(11)
    stage.GetRootLayer().Save()

    # A body recorded as value clips, as usdsim writes a long run (newton_usd.sync.clips).
    out_path = str(tmp_path / "src.sim.usda")
    layer = Sdf.Layer.CreateAnonymous("output.usda")
    stream = ClipStream(layer, out_path, frames_per_clip=4, time_codes_per_second=60)
    spec = Sdf.CreatePrimInLayer(layer, "/World/Clipped")
    spec.specifier = Sdf.SpecifierDef
    spec.typeName = "Cube"
    Sdf.AttributeSpec(spec, "size", Sdf.ValueTypeNames.Double).default = 20.0
    translate = Sdf.AttributeSpec(spec, "xformOp:translate", Sdf.ValueTypeNames.Double3)
    orient = Sdf.AttributeSpec(spec, "xformOp:orient", Sdf.ValueTypeNames.Quatf)
    order = Sdf.AttributeSpec(spec, "xformOpOrder", Sdf.ValueTypeNames.TokenArray, variability=Sdf.VariabilityUniform)
    order.default = ["xformOp:translate", "xformOp:orient"]
    for f in frames:
        layer.SetTimeSample(translate.path, f, Gf.Vec3d(10.0 * f, 50.0, -5.0 * f))
        layer.SetTimeSample(orient.path, f, Gf.Quatf(Gf.Rotation(Gf.Vec3d(0, 0, 1), 20.0 * f).GetQuat()))
        stream.frame_written(f)
    stream.close_chunk()
    out = Sdf.Layer.CreateNew(out_path)
    out.TransferContent(layer)
    out.subLayerPaths = ["./src.usda"]
    for key in ("upAxis", "metersPerUnit"):  # stamped as usdsim stamps its output
        out.pseudoRoot.SetInfo(key, stage.GetRootLayer().pseudoRoot.GetInfo(key))
    out.timeCodesPerSecond = out.framesPerSecond = 60
    out.startTimeCode, out.endTimeCode = 0, 11
    stream.write_output(out)
    out.Save()
    stream.saved()
    assert len(stream.clips) >= 2
    return Usd.Stage.Open(out_path)


def test_fast_pose_reading_matches_the_xform_cache(tmp_path):
    """Poses read from the layers' time samples in one call per attribute, composed as rigid motions or
    matrices, equal USD's own (UsdGeom.XformCache, frame by frame) for every way a stage can hold them:
    plain samples, a retimed sublayer, samples between frames, value clips as usdsim writes them, other op
    orders (rotateXYZ, orient before translate, an inverse op), scaled and moving parents, a Y-up stage in
    centimetres."""
    from newton_usd.view.poses import part_poses  # noqa: PLC0415
    from newton_usd.view.scene import stage_to_si  # noqa: PLC0415

    stage = _poses_stage(tmp_path)
    names = ["Body/Geom", "Euler", "OrientFirst", "Sparse", "Skewed/Body", "Carrier/Rider", "Inverse", "Static",
             "Retimed", "Clipped"]  # fmt: skip
    prims = [stage.GetPrimAtPath(f"/World/{n}") for n in names]
    assert all(prims)
    times = np.arange(12.0)
    to_si = stage_to_si("Y", 0.01)
    fast = part_poses(prims, times, to_si)
    slow = part_poses(prims, times, to_si, xform_cache=True)
    assert fast.how == {
        "/World/Body": "rigid layer",
        "/World/Euler": "matrix layer",
        "/World/OrientFirst": "rigid layer",
        "/World/Sparse": "rigid resolved",  # frames between samples: USD interpolates
        "/World/Skewed/Body": "matrix layer",  # a non-uniform scale above a rotation
        "/World/Carrier/Rider": "xformcache",  # a moving parent
        "/World/Inverse": "rigid layer",
        "/World/Retimed": "rigid resolved",  # a layer offset
        "/World/Clipped": "rigid resolved",  # value clips
    }
    assert set(slow.how.values()) == {"xformcache"}
    np.testing.assert_allclose(fast.positions, slow.positions, atol=2e-6)
    dots = np.abs(np.sum(fast.wxyz.astype(np.float64) * slow.wxyz, axis=-1))
    np.testing.assert_allclose(dots, 1.0, atol=2e-6)
    np.testing.assert_allclose(fast.baked, slow.baked, atol=1e-9)
    # What is drawn: each corner of each cube where USD puts it (the baked scale, then the pose).
    from pxr import Usd  # noqa: PLC0415

    from newton_usd.core.quat import quat_rotate  # noqa: PLC0415

    corners = np.array([[x, y, z] for x in (-0.1, 0.1) for y in (-0.1, 0.1) for z in (-0.1, 0.1)])
    cache = UsdGeom.XformCache()
    for f in (0, 5, 11):
        cache.SetTime(Usd.TimeCode(f))
        for j, prim in enumerate(prims):
            if j == names.index("Skewed/Body"):
                continue  # a sheared part is drawn with its first frame's shear: not exact later
            world = np.array(cache.GetLocalToWorldTransform(prim)) @ to_si
            want = np.c_[corners, np.ones(8)] @ world
            q = fast.wxyz[f, j].astype(np.float64)
            got = quat_rotate(np.r_[q[1:], q[0]], corners @ fast.baked[j]) + fast.positions[f, j]
            np.testing.assert_allclose(got, want[:, :3], atol=2e-6, err_msg=f"{names[j]} at frame {f}")
    # read_scene takes the same path: the clipped body falls where the XformCache says.
    scene = read_scene(stage)
    k = [p.path for p in scene.parts].index("/World/Clipped")
    np.testing.assert_allclose(scene.positions[:, k], slow.positions[:, names.index("Clipped")], atol=2e-6)
