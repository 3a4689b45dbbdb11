"""The Kit playback (without Kit) of deformables and grains: each update's points shown on the stage (live) or
recorded, the authored points back on Stop, and a grain that leaves a fixed MPM grid stopping the run with its
prim named."""

from __future__ import annotations

import logging

import numpy as np
from pxr import Gf, Usd, Vt
from test_deformables import cloth_stage
from test_granular import sand_stage
from test_kit_playback import playing

CLOTH = "/World/Cloth/sim"


def points(stage, path, time=None):
    attr = stage.GetPrimAtPath(path).GetAttribute("points")
    return np.array(attr.Get(Usd.TimeCode.Default() if time is None else time), dtype=np.float64)


def test_a_cloth_falls_on_the_stage_while_playing_and_is_back_on_stop(tmp_path, caplog):
    stage = Usd.Stage.Open(cloth_stage(tmp_path / "cloth.usda", box=False))
    authored = points(stage, CLOTH)
    with caplog.at_level(logging.INFO, logger="newton_usd.kit"):
        pb = playing(stage, substeps=4)
        shown = []
        for _ in range(3):
            assert pb.update(0.0) == 1
            shown.append(points(stage, CLOTH)[:, 2].mean())
    assert pb.sim.solver.name == "vbd" and "64 particles of 1 prim" in caplog.text
    assert shown[0] < authored[:, 2].mean() and shown[2] < shown[1] < shown[0]  # (each update's, in the live layer)
    np.testing.assert_allclose(points(stage, CLOTH), pb.sim.physics.state.particle_q.numpy() - [0.05, 0, 0.5],
                               atol=1e-5)  # fmt: skip
    pb.stop()
    np.testing.assert_array_equal(points(stage, CLOTH), authored)


def test_grains_are_recorded_and_saved_on_stop(tmp_path):
    src = sand_stage(tmp_path / "pile.usda", side=3, layers=2)
    out = tmp_path / "pile.sim.usda"
    pb = playing(Usd.Stage.Open(str(src)), substeps=2, write_back="record", record_path=str(out))
    for _ in range(3):
        pb.update(0.0)
    pb.stop()
    saved = Usd.Stage.Open(str(out))
    attr = saved.GetPrimAtPath("/World/Pile").GetAttribute("points")
    times = attr.GetTimeSamples()
    assert len(times) == 4
    assert np.abs(np.array(attr.Get(times[-1])) - np.array(attr.Get(times[0]))).max() > 1e-3  # (they moved)


def test_grains_leaving_a_fixed_grid_stop_the_run_naming_their_prim(tmp_path, caplog):
    src = sand_stage(tmp_path / "fixed.usda", side=3, layers=2, velocities=Vt.Vec3fArray([Gf.Vec3f(3, 0, 0)] * 18),
                     **{"scene_newton:mpm:gridType": "fixed"})  # fmt: skip
    pb = playing(Usd.Stage.Open(str(src)), substeps=2)
    with caplog.at_level(logging.ERROR, logger="newton_usd.kit"):
        for _ in range(4):
            pb.update(0.0)
    assert pb.sim is None and pb.state == "stopped"
    assert "(/World/Pile)" in pb.last_error and "left the MPM grid" in pb.last_error, pb.last_error
