"""Articulation links start where their joints put them (issue 43, round two): PhysX builds an articulation from its
root and joint frames, whatever poses its links' prims author (its FixedTendonTest.usda places links 10 m apart on
hinges 1 m apart); every engine starts them so, the joint coordinates read from the authored relative poses. Joints
outside articulations keep their bodies as authored."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
from pxr import Gf, Sdf, UsdGeom, UsdPhysics
from test_newton_solvers import positions, usdsim

from newton_usd import ModelBuilder
from newton_usd.cli import main

from stages import add_box, add_hinge, new_stage

PIVOT = np.array([0.0, 0.0, 2.0])
TURN = 30.0  # deg: the first link's authored turn about its hinge (Y), kept as its joint coordinate


def _spread_arm(path=None, articulation=True):
    """Two 1 m links hinged about Y end to end from the world at ``PIVOT``; their prims authored 2.5 m and 5 m farther
    out than the hinges put them, the first turned ``TURN`` degrees about its hinge, the second not (-``TURN``
    relative to the first)."""
    stage = new_stage(path)
    arm = UsdGeom.Xform.Define(stage, "/Arm")
    if articulation:
        UsdPhysics.ArticulationRootAPI.Apply(arm.GetPrim())
    for name, x, turn in (("L1", 3.0, TURN), ("L2", 6.5, 0.0)):
        link = add_box(stage, f"/Arm/{name}", 0.1, (x, 0, 2), mass=1.0, rotate_xyz=(0, turn, 0))
        link.AddScaleOp().Set(Gf.Vec3f(10, 1, 1))  # (a 1 m x 0.1 m x 0.1 m bar along its X)
    add_hinge(stage, "/Arm/H1", None, "/Arm/L1", tuple(PIVOT), (-0.05, 0, 0))
    add_hinge(stage, "/Arm/H2", "/Arm/L1", "/Arm/L2", (0.05, 0, 0), (-0.05, 0, 0))
    if path:
        stage.Save()
    return stage


def _where_the_hinges_put_them():
    """World positions of L1 and L2 where the hinges put them: L1 turned ``TURN`` about Y, L2 level after it."""
    along = np.array([math.cos(math.radians(TURN)), 0.0, -math.sin(math.radians(TURN))])
    return PIVOT + 0.5 * along, PIVOT + along + np.array([0.5, 0.0, 0.0])


def test_articulation_links_start_where_their_joints_put_them(caplog, capsys, tmp_path):
    caplog.set_level(logging.WARNING, logger="newton_usd")
    builder = ModelBuilder()
    imported = builder.add_usd(_spread_arm())
    l1, l2 = (imported.body_index[f"/Arm/{n}"] for n in ("L1", "L2"))
    want1, want2 = _where_the_hinges_put_them()
    np.testing.assert_allclose(builder.body_q[l1][0], want1, atol=1e-9)
    np.testing.assert_allclose(builder.body_q[l2][0], want2, atol=1e-9)
    turn = Gf.Rotation(Gf.Quatd(builder.body_q[l1][1][3], *builder.body_q[l1][1][:3]))
    assert turn.GetAngle() == pytest.approx(TURN) and builder.body_q[l2][1][3] == pytest.approx(1.0)
    assert builder.joint_q[imported.joint_index["/Arm/H1"]][0] == pytest.approx(math.radians(TURN))
    moved = {joint: (body, round(m, 3)) for joint, body, m, _ in imported.placed_links}
    assert moved == {
        "/Arm/H1": ("/Arm/L1", round(float(np.linalg.norm(want1 - (3, 0, 2))), 3)),
        "/Arm/H2": ("/Arm/L2", round(float(np.linalg.norm(want2 - (6.5, 0, 2))), 3)),
    }
    said = [r.getMessage() for r in caplog.records if "articulation links start where their joints" in r.getMessage()]
    assert len(said) == 1 and "/Arm/H1 (/Arm/L1: 2.58 m)" in said[0] and "(2 prims:" in said[0], said
    _spread_arm(tmp_path / "arm.usda")
    assert main(["check", str(tmp_path / "arm.usda"), "--solver", "xpbd"]) == 0
    assert "/Arm/H2 (/Arm/L2: 5.16 m)" in capsys.readouterr().out


def test_a_link_whose_own_joint_agrees_moves_with_its_parent():
    """Only the first hinge disagrees (L2 authored at its hinge on L1's authored pose): L2 follows L1, H1 is named."""
    stage = _spread_arm()
    along = np.array([math.cos(math.radians(TURN)), 0.0, -math.sin(math.radians(TURN))])
    at_hinge = np.array([3.0, 0.0, 2.0]) + 0.5 * along + (0.5, 0.0, 0.0)
    UsdGeom.Xformable(stage.GetPrimAtPath("/Arm/L2")).GetOrderedXformOps()[0].Set(Gf.Vec3d(*at_hinge))
    builder = ModelBuilder()
    imported = builder.add_usd(stage)
    np.testing.assert_allclose(builder.body_q[imported.body_index["/Arm/L2"]][0], _where_the_hinges_put_them()[1])
    assert [joint for joint, *_ in imported.placed_links] == ["/Arm/H1"]


def test_joints_outside_articulations_keep_their_bodies_as_authored():
    builder = ModelBuilder()
    imported = builder.add_usd(_spread_arm(articulation=False))
    np.testing.assert_allclose(builder.body_q[imported.body_index["/Arm/L2"]][0], (6.5, 0, 2))
    assert imported.placed_links == []


@pytest.mark.parametrize("engine", ["xpbd", "mujoco"])
def test_a_maximal_coordinate_engine_starts_the_arm_where_its_joints_hold_it(tmp_path, engine):
    """XPBD used to start from the authored poses and yank the links 2.5 m and 5 m onto their hinges; now its first
    frame shows them where the hinges put them, as MuJoCo's does (what PhysX shows)."""
    _spread_arm(tmp_path / "arm.usda")
    assert usdsim(tmp_path / "arm.usda", "--solver", engine, "-n", 2, "--fps", 240) == 0
    want1, want2 = _where_the_hinges_put_them()
    got = positions(tmp_path / "arm.sim.usda", "/Arm/L2", [1, 2])
    assert np.abs(got - want2).max() < 0.02, got  # (two 1/240 s frames of a swing from rest)
    np.testing.assert_allclose(positions(tmp_path / "arm.sim.usda", "/Arm/L1", [1])[0], want1, atol=0.02)


def test_what_is_put_on_a_link_moves_with_it_to_its_joint_state():
    """A site authored on a link whose hinge authors a start angle (PhysicsJointStateAPI) stays on the link as the
    link turns to it (it used to stay where it was authored, in the world)."""
    stage = new_stage()
    add_box(stage, "/Link", 0.1, (0.5, 0, 2), mass=1.0)
    tip = UsdGeom.Xform.Define(stage, "/Link/Tip")
    tip.AddTranslateOp().Set(Gf.Vec3d(0.5, 0, 0))  # (1 m from the hinge)
    tip.GetPrim().AddAppliedSchema("MjcSiteAPI")
    hinge = add_hinge(stage, "/Hinge", None, "/Link", tuple(PIVOT), (-0.5, 0, 0)).GetPrim()
    hinge.AddAppliedSchema("PhysicsJointStateAPI:angular")
    hinge.CreateAttribute("state:angular:physics:position", Sdf.ValueTypeNames.Float).Set(90.0)
    builder = ModelBuilder()
    builder.add_usd(stage)
    from newton_usd.core.quat import transform_multiply

    body, site = builder.body_q[0], builder.site_transform[builder.site_label.index("/Link/Tip")]
    np.testing.assert_allclose(body[0], PIVOT - (0, 0, 0.5), atol=1e-9)  # (turned 90 degrees about Y: down)
    np.testing.assert_allclose(transform_multiply(body, site)[0], PIVOT - (0, 0, 1.0), atol=1e-9)
