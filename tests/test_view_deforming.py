"""usdsim view / video of what deforms: a Mesh whose ``points`` are time-sampled (cloth, soft volumes) and a
``Points`` prim (grains), as ``usdsim`` writes them back (newton_usd/sync/points_sync.py). The stages are authored
here directly: the viewer reads USD only."""

from __future__ import annotations

import numpy as np
import pytest
from pxr import Gf, Usd, UsdGeom, UsdShade, Vt

from newton_usd.cli import view as cli
from newton_usd.errors import UsdInputError
from newton_usd.view.browser import gl_available
from newton_usd.view.scene import read_scene

FRAMES = 6
RED = (0.9, 0.1, 0.1)


def grid_points(frame: int) -> np.ndarray:
    """A 3x3 grid of 1 m x 1 m (meters, Z up) whose middle row rises 0.1 m a frame and whose corner (8) moves
    along +x."""
    x, y = np.meshgrid(np.linspace(-0.5, 0.5, 3), np.linspace(-0.5, 0.5, 3))
    p = np.stack([x.ravel(), y.ravel(), np.full(9, 0.5)], axis=1)
    p[3:6, 2] += 0.1 * frame
    p[8, 0] += 0.05 * frame
    return p


def grain_points(frame: int) -> np.ndarray:
    """Four grains (meters, Z up) falling 0.05 m a frame."""
    p = np.array([[1.0, 0.0, 0.6], [1.1, 0.0, 0.6], [1.0, 0.1, 0.6], [1.1, 0.1, 0.6]])
    p[:, 2] -= 0.05 * frame
    return p


def deforming_stage(path, meters_per_unit: float = 1.0, faceted: bool = False, grains: bool = True):
    """The grid mesh (red) and four grains (two materials, no displayColor), both time-sampled, in a stage of
    ``meters_per_unit`` (Z up)."""
    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, meters_per_unit)
    stage.SetStartTimeCode(0)
    stage.SetEndTimeCode(FRAMES - 1)
    stage.SetTimeCodesPerSecond(30)
    UsdGeom.Xform.Define(stage, "/World")
    s = 1.0 / meters_per_unit
    mesh = UsdGeom.Mesh.Define(stage, "/World/Cloth")
    mesh.CreateFaceVertexCountsAttr([4] * 4)
    mesh.CreateFaceVertexIndicesAttr([0, 1, 4, 3, 1, 2, 5, 4, 3, 4, 7, 6, 4, 5, 8, 7])
    mesh.CreateDisplayColorAttr([Gf.Vec3f(*RED)])
    mesh.CreatePointsAttr(Vt.Vec3fArray.FromNumpy((grid_points(0) * s).astype(np.float32)))  # the default
    if faceted:
        mesh.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
    for f in range(FRAMES):
        mesh.GetPointsAttr().Set(Vt.Vec3fArray.FromNumpy((grid_points(f) * s).astype(np.float32)), f)
    if grains:
        pts = UsdGeom.Points.Define(stage, "/World/Sand")
        pts.CreateWidthsAttr([0.04 * s])
        for f in range(FRAMES):
            pts.CreatePointsAttr().Set(Vt.Vec3fArray.FromNumpy((grain_points(f) * s).astype(np.float32)), f)
        for name, idx in (("Wet", [0, 1]), ("Dry", [2, 3])):
            material = UsdShade.Material.Define(stage, f"/World/Materials/{name}")
            subset = UsdGeom.Subset.CreateGeomSubset(pts, name, "point", Vt.IntArray(idx), "materialBind")
            UsdShade.MaterialBindingAPI.Apply(subset.GetPrim()).Bind(material, materialPurpose="physics")
    stage.GetRootLayer().Save()
    return str(path)


@pytest.mark.parametrize("meters_per_unit", [1.0, 0.01])
@pytest.mark.parametrize("faceted", [False, True])
def test_read_scene_gives_each_frame_s_vertices_and_points_in_si(tmp_path, meters_per_unit, faceted):
    scene = read_scene(deforming_stage(tmp_path / "d.usda", meters_per_unit, faceted))
    assert scene.animated and scene.frames == FRAMES
    cloth = [i for i, p in enumerate(scene.parts) if p.path == "/World/Cloth"]
    assert len(cloth) == 1 and set(scene.deforming) == set(cloth)
    (i,) = cloth
    part = scene.parts[i]
    assert scene.deforming[i].shape == (FRAMES, len(part.vertices), 3) and scene.deforming[i].dtype == np.float32
    assert scene.moving()[i]
    for f in range(FRAMES):
        # (the part's frame is the mesh's: identity here; each vertex is its source point's at that frame)
        np.testing.assert_allclose(scene.deforming[i][f], grid_points(f)[part.source], atol=1e-6)
    np.testing.assert_allclose(part.vertices, scene.deforming[i][0], atol=1e-6)
    (cloud,) = scene.clouds
    assert cloud.path == "/World/Sand" and cloud.positions.shape == (FRAMES, 4, 3)
    for f in range(FRAMES):
        np.testing.assert_allclose(cloud.positions[f], grain_points(f), atol=1e-6)
    np.testing.assert_allclose(cloud.radii, 0.02, rtol=1e-6)
    # No displayColor: one colour per material subset, the two apart.
    assert np.allclose(cloud.colors[0], cloud.colors[1]) and np.allclose(cloud.colors[2], cloud.colors[3])
    assert not np.allclose(cloud.colors[0], cloud.colors[2])
    lo, hi = scene.bounds([i])
    assert hi[2] == pytest.approx(0.5 + 0.1 * (FRAMES - 1), abs=1e-5)  # the highest frame's middle row


def test_points_only_stage_is_animated_and_displaycolor_wins(tmp_path):
    path = tmp_path / "g.usda"
    deforming_stage(path)
    stage = Usd.Stage.Open(str(path))
    stage.RemovePrim("/World/Cloth")
    UsdGeom.Points(stage.GetPrimAtPath("/World/Sand")).CreateDisplayColorAttr([Gf.Vec3f(0.1, 0.2, 0.9)])
    stage.GetRootLayer().Save()
    scene = read_scene(str(path))
    assert scene.parts == [] and scene.animated and scene.frames == FRAMES
    from newton_usd.view.camera import default_view  # noqa: PLC0415

    view = default_view(scene)  # framed on the grains, following them down
    assert view.what == "the default view, following the points"
    assert view.target[-1][2] == pytest.approx(view.target[0][2] - 0.05 * (FRAMES - 1), abs=0.02)
    np.testing.assert_allclose(scene.clouds[0].colors, [[0.1, 0.2, 0.9]] * 4, atol=1e-6)
    np.testing.assert_allclose(scene.clouds[0].positions[-1], grain_points(FRAMES - 1), atol=1e-6)


def test_a_mesh_whose_point_count_changes_is_refused_naming_it(tmp_path):
    path = deforming_stage(tmp_path / "d.usda", grains=False)
    stage = Usd.Stage.Open(path)
    attr = UsdGeom.Mesh(stage.GetPrimAtPath("/World/Cloth")).GetPointsAttr()
    attr.Set(Vt.Vec3fArray.FromNumpy(grid_points(3)[:7].astype(np.float32)), 3)
    with pytest.raises(UsdInputError, match=r"/World/Cloth.*points.*has 7 points at time 3 but 9"):
        read_scene(stage)


def test_page_data_holds_each_frame_s_vertices_and_points(tmp_path):
    from newton_usd.view.page import SceneNodes, start_server, stop_server  # noqa: PLC0415

    scene = read_scene(deforming_stage(tmp_path / "d.usda"))
    server = start_server()
    try:
        nodes = SceneNodes(server, scene)
        (i,) = scene.deforming
        for f in (0, 3, FRAMES - 1):
            nodes.pose(f)
            np.testing.assert_allclose(nodes.shapes[i].vertices, scene.deforming[i][f])
            np.testing.assert_allclose(nodes.clouds[0].points, grain_points(f), atol=1e-6)
    finally:
        stop_server(server)
    assert cli.main(["view", str(tmp_path / "d.usda"), "-o", str(tmp_path / "d.html")]) == 0
    payload = _page_payload(tmp_path / "d.html")
    # Each frame's vertices and grain positions are in the page, as float32 (viser's binary buffers).
    for f in range(FRAMES):
        assert scene.deforming[i][f].astype(np.float32).tobytes() in payload, f
        assert scene.clouds[0].positions[f].astype(np.float32).tobytes() in payload, f


def _page_payload(path) -> bytes:
    """The decompressed scene data embedded in a page viser wrote (its messages and binary buffers)."""
    import base64  # noqa: PLC0415
    import re  # noqa: PLC0415

    import zstandard  # noqa: PLC0415

    data = base64.b64decode(re.search(r'__VISER_EMBED_DATA__="([^"]*)"', path.read_text()).group(1))
    size = int.from_bytes(data[:8], "little")
    return zstandard.ZstdDecompressor().decompress(data[8:], max_output_size=size)


needs_gl = pytest.mark.skipif(
    gl_available() is None, reason="no offscreen GL (python -m newton_usd.view.browser setup installs it)"
)


def _decode(path):
    import av  # noqa: PLC0415

    with av.open(str(path)) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]


def _red(image):
    r, g, b = (image[..., k].astype(int) for k in range(3))
    return (r > 120) & (r > 2 * g) & (r > 2 * b)


def _blue(image):
    r, g, b = (image[..., k].astype(int) for k in range(3))
    return (b > 150) & (b > r + 60) & (b > g + 30)


@needs_gl
def test_video_draws_the_mesh_as_it_moves_and_the_grains(tmp_path, capsys):
    stage = deforming_stage(tmp_path / "d.usda", meters_per_unit=0.01, faceted=True)
    out = tmp_path / "d.mp4"
    assert cli.main(["video", stage, "-o", str(out), "--size", "320x240", "--fixed"]) == 0
    assert "1 part, 4 points" in capsys.readouterr().out
    frames = _decode(out)
    assert len(frames) == FRAMES
    first, last = _red(frames[0]), _red(frames[-1])
    # The view is still (--fixed): the red cloth covers other pixels as its middle row rises.
    print(f"red pixels: first {first.sum()}, last {last.sum()}, changed {(first ^ last).sum()}")
    assert first.sum() > 300 and last.sum() > 300
    assert (first ^ last).sum() > 0.3 * first.sum()
    assert np.argwhere(last)[:, 0].min() < np.argwhere(first)[:, 0].min() - 10  # it reaches higher up the picture
    # The grains of the second material (blue) are drawn, lower in the last frame (they fell 0.25 m).
    b0, b1 = np.argwhere(_blue(frames[0])), np.argwhere(_blue(frames[-1]))
    assert len(b0) >= 2 and len(b1) >= 2
    assert b1[:, 0].mean() > b0[:, 0].mean() + 3


@needs_gl
def test_video_of_a_still_mesh_is_unchanged_by_the_deforming_path(tmp_path):
    """A mesh whose points are sampled but do not move is drawn where and as the same mesh without samples (the
    floor grid may differ: a mesh without samples is no moving body)."""
    from newton_usd.view.video import render  # noqa: PLC0415

    path = deforming_stage(tmp_path / "d.usda", grains=False)
    scene = read_scene(path)
    (i,) = scene.deforming
    scene.deforming[i][:] = scene.deforming[i][0]
    moving = [rgb.copy() for rgb in render(scene, (160, 120))]
    scene.deforming = {}
    still = [rgb.copy() for rgb in render(scene, (160, 120))]
    red = _red(moving[-1])
    assert red.sum() > 300 and (red ^ _red(still[-1])).sum() <= 4
    assert np.abs(moving[-1][red].astype(int) - still[-1][red]).max() <= 12


@needs_gl
def test_video_draws_a_cloth_from_behind_too(tmp_path):
    """MuJoCo's renderer culls back faces: the cloth is drawn with a second side, so that turned over (its faces
    wound the other way, the camera on its back) it is as visible as it was from the front (a flag swung over its
    pole vanished)."""
    from newton_usd.view.video import render  # noqa: PLC0415

    path = deforming_stage(tmp_path / "d.usda", grains=False)
    scene = read_scene(path)
    (i,) = scene.deforming
    front = _red(next(iter(render(scene, (160, 120))))).sum()
    part = scene.parts[i]
    part.faces = part.faces[:, ::-1].copy()  # (its back towards the camera)
    back = _red(next(iter(render(scene, (160, 120))))).sum()
    assert front > 300 and back > 0.8 * front, (front, back)


def test_a_tetmesh_is_drawn_by_its_surface_as_it_deforms(tmp_path):
    stage = Usd.Stage.CreateNew(str(tmp_path / "t.usda"))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 0.01)
    stage.SetStartTimeCode(0)
    stage.SetEndTimeCode(2)
    tet = UsdGeom.TetMesh.Define(stage, "/Soft")
    rest = np.array([[0, 0, 0], [10, 0, 0], [0, 10, 0], [0, 0, 10]], np.float32)  # centimetres
    tet.CreateTetVertexIndicesAttr([Gf.Vec4i(0, 1, 2, 3)])
    tet.CreatePointsAttr(Vt.Vec3fArray.FromNumpy(rest))
    for f in range(3):
        tet.GetPointsAttr().Set(Vt.Vec3fArray.FromNumpy(rest * (1 + 0.5 * f)), f)
    stage.GetRootLayer().Save()
    scene = read_scene(str(tmp_path / "t.usda"))
    (part,) = scene.parts
    assert part.faces.shape == (4, 3) and set(scene.deforming) == {0}
    np.testing.assert_allclose(scene.deforming[0][2], rest[part.source] * 0.01 * 2.0, atol=1e-6)


def test_live_run_draws_the_cloth_and_grains_as_they_are_written(tmp_path):
    from newton_usd.view.serve import LiveRun  # noqa: PLC0415

    path = deforming_stage(tmp_path / "d.usda")
    stage = Usd.Stage.Open(path)
    cloth = stage.GetPrimAtPath("/World/Cloth")
    cloth.AddAppliedSchema("PhysicsSurfaceDeformableSimAPI")  # (what a run deforms)
    cloth_points = UsdGeom.Mesh(cloth).GetPointsAttr()
    sand_points = UsdGeom.Points(stage.GetPrimAtPath("/World/Sand")).GetPointsAttr()
    for attr in (cloth_points, sand_points):  # the run has not written anything yet
        for t in attr.GetTimeSamples():
            attr.ClearAtTime(t)
    sand_points.Set(Vt.Vec3fArray.FromNumpy(grain_points(0).astype(np.float32)))
    live = LiveRun(stage, port=0)
    try:
        (i,) = live.view.nodes.shapes
        for f in range(4):  # the run writes 4 frames
            cloth_points.Set(Vt.Vec3fArray.FromNumpy(grid_points(f).astype(np.float32)), f)
            sand_points.Set(Vt.Vec3fArray.FromNumpy(grain_points(f).astype(np.float32)), f)
        live.update(3, 4, 10, force=True)
        assert live.scene.frames == 4 and live.view.frame.value == 3
        part = live.scene.parts[i]
        np.testing.assert_allclose(live.scene.deforming[i][3], grid_points(3)[part.source], atol=1e-6)
        np.testing.assert_allclose(live.view.nodes.shapes[i].vertices, grid_points(3)[part.source], atol=1e-6)
        np.testing.assert_allclose(live.view.nodes.clouds[0].points, grain_points(3), atol=1e-6)
    finally:
        live.close()


def test_the_page_in_a_browser_shows_the_cloth_move(tmp_path):
    from test_view_browser import Loaded  # noqa: PLC0415

    from newton_usd.view.browser import browser_missing, launch  # noqa: PLC0415

    if browser_missing() is not None:
        pytest.skip(str(browser_missing()))
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    assert cli.main(["view", deforming_stage(tmp_path / "d.usda"), "-o", str(tmp_path / "d.html")]) == 0
    with sync_playwright() as p:
        browser = launch(p)
        try:
            page = Loaded(browser, tmp_path / "d.html")
            page.pause_and_seek(0.0)
            first = _red(page.shot())
            page.pause_and_seek(0.99)
            last = _red(page.shot())
            assert page.frame() == FRAMES - 1 and not page.errors, page.errors
        finally:
            browser.close()
    print(f"page: red pixels first {first.sum()}, last {last.sum()}, changed {(first ^ last).sum()}")
    assert first.sum() > 500 and (first ^ last).sum() > 0.2 * first.sum()


def test_a_y_up_stage_s_cloth_and_grains_are_turned_z_up(tmp_path):
    """Authored Y up: each frame's vertices, posed, and the grains are the Z-up stage's, (x, y, z) -> (x, -z, y)."""
    path = tmp_path / "y.usda"
    deforming_stage(path)
    stage = Usd.Stage.Open(str(path))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.y)
    stage.GetRootLayer().Save()
    scene = read_scene(str(path))
    (i,) = scene.deforming
    w = scene.wxyz[-1, i].astype(np.float64)
    from newton_usd.core.quat import quat_rotate  # noqa: PLC0415

    world = quat_rotate(np.array([*w[1:], w[0]]), scene.deforming[i][-1].astype(np.float64)) + scene.positions[-1, i]

    def z_up(p):
        return np.stack([p[:, 0], -p[:, 2], p[:, 1]], axis=1)

    np.testing.assert_allclose(world, z_up(grid_points(FRAMES - 1))[scene.parts[i].source], atol=1e-5)
    np.testing.assert_allclose(scene.clouds[0].positions[-1], z_up(grain_points(FRAMES - 1)), atol=1e-6)


def test_more_points_than_a_video_frame_draws_are_subsampled_and_said(tmp_path, monkeypatch, caplog):
    from newton_usd.view import video  # noqa: PLC0415

    scene = read_scene(deforming_stage(tmp_path / "d.usda"))
    monkeypatch.setattr(video, "MAX_POINTS", 2)
    (drawn,) = video._point_geoms(scene)
    assert drawn.tolist() == [0, 2]
    assert "4 points, more than the 2 spheres drawn in a frame: one point in 2 is drawn (/World/Sand)" in caplog.text
