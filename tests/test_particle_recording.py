"""Deformables' and grains' points and velocities in a recording: each frame's own in a pipelined run (read back with
the frame, not from the state of the frame queued after it), and streamed to value clips for long runs."""

from __future__ import annotations

import os

import numpy as np
from pxr import Usd
from test_deformables import FPS, SUBSTEPS, cloth_stage
from test_granular import sand_stage

from newton_usd.sim import Simulation
from newton_usd.sync.clips import clip_directory

FRAMES = 5


def samples(stage, path, name) -> dict:
    """time code -> the attribute's value (numpy) at each of its time samples."""
    attr = stage.GetPrimAtPath(path).GetAttribute(name)
    return {t: np.array(attr.Get(t)) for t in attr.GetTimeSamples()}


def recorded(src, out=None, clip_frames=None, frames=FRAMES, by_frame=False, device="cpu"):
    """A run of ``src`` (pipelined, or frame after frame ``by_frame``), saved to ``out`` (streamed to clips of
    ``clip_frames`` frames where given); the Simulation."""
    stream = {} if clip_frames is None else {"stream_to": out, "clip_frames": clip_frames}
    sim = Simulation.open(str(src), fps=FPS, substeps=SUBSTEPS, device=device, live=False, **stream)
    if by_frame:
        for i in range(frames):
            sim.step_frame(last=i == frames - 1)
    else:
        sim.run(frames)
    if out is not None:
        sim.save(out)
    return sim


def test_a_pipelined_cloth_run_writes_each_frames_own_points(tmp_path, device):
    """(On CUDA: the frame captured, the points read back into pinned memory behind it.)"""
    src = cloth_stage(tmp_path / "cloth.usda", box=False)
    pipelined = recorded(src, device=device)
    assert pipelined.pipelines()  # (VBD's frame function: frame k+1 is queued before frame k is written)
    one_by_one = recorded(src, by_frame=True, device=device)
    for name in ("points", "velocities"):
        a = samples(pipelined.stage, "/World/Cloth/sim", name)
        b = samples(one_by_one.stage, "/World/Cloth/sim", name)
        assert sorted(a) == sorted(b) and len(a) == FRAMES + 1
        for t in a:  # (a frame's points against the next frame's: 2 cm apart and more)
            np.testing.assert_allclose(a[t], b[t], atol=1e-4, err_msg=f"{name} at {t}")
    z = [samples(pipelined.stage, "/World/Cloth/sim", "points")[t][:, 2].mean() for t in range(FRAMES + 1)]
    assert all(b < a for a, b in zip(z, z[1:], strict=False)), z  # (falling: every frame lower, none repeated)


def test_cloth_points_stream_to_value_clips(tmp_path):
    src = cloth_stage(tmp_path / "cloth.usda", box=False)
    plain = recorded(src, tmp_path / "plain.usda")
    sim = recorded(src, tmp_path / "streamed.usda", clip_frames=2)
    assert sim.clips.count == 3  # (frames 0-1, 2-3, 4-5)
    layer = sim.output_layer  # (in memory: the last chunk at most, its first frame the clip before's last)
    assert layer.GetNumTimeSamplesForPath("/World/Cloth/sim.points") <= 3
    clips = sorted(os.listdir(clip_directory(tmp_path / "streamed.usda")))
    assert sum(name.startswith("clip.") for name in clips) == 3
    fresh = Usd.Stage.Open(str(tmp_path / "streamed.usda"))
    baseline = Usd.Stage.Open(str(tmp_path / "plain.usda"))
    for name in ("points", "velocities"):
        a, b = samples(fresh, "/World/Cloth/sim", name), samples(baseline, "/World/Cloth/sim", name)
        assert sorted(a) == sorted(b) and len(a) == FRAMES + 1
        for t in a:
            np.testing.assert_allclose(a[t], b[t], atol=1e-5, err_msg=f"{name} at {t}")
    plain.close()
    sim.close()


def test_grains_stream_to_value_clips(tmp_path):
    src = sand_stage(tmp_path / "pile.usda", side=3, layers=2)
    plain = recorded(src, tmp_path / "plain.usda")
    sim = recorded(src, tmp_path / "streamed.usda", clip_frames=2)
    assert sim.clips.count == 3
    fresh, baseline = Usd.Stage.Open(str(tmp_path / "streamed.usda")), Usd.Stage.Open(str(tmp_path / "plain.usda"))
    for name in ("points", "velocities"):
        a, b = samples(fresh, "/World/Pile", name), samples(baseline, "/World/Pile", name)
        assert sorted(a) == sorted(b) and len(a) == FRAMES + 1
        for t in a:
            np.testing.assert_allclose(a[t], b[t], atol=1e-5, err_msg=f"{name} at {t}")
    assert np.abs(a[FRAMES] - a[0]).max() > 1e-3  # (they moved)
    plain.close()
    sim.close()
