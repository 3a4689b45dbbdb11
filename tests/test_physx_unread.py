"""Authored ``physx*`` settings that no engine here reads are said once per run, in one warning naming each with its
number of prims; the ones an import reads are not."""

from __future__ import annotations

import logging

from pxr import Sdf, UsdPhysics
from test_newton_solvers import usdsim

from newton_usd.core.builder import ModelBuilder
from newton_usd.usd import add_usd
from newton_usd.usd.physx_unread import unread_physx_attributes

from stages import add_box, new_stage


def _stage(path):
    stage = new_stage(path)
    for i in range(2):
        prim = add_box(stage, f"/Box{i}", 0.2, (i, 0, 1), mass=1.0).GetPrim()
        prim.AddAppliedSchema("PhysxRigidBodyAPI")
        prim.CreateAttribute("physxRigidBody:solverPositionIterationCount", Sdf.ValueTypeNames.Int).Set(16)
        prim.CreateAttribute("physxRigidBody:maxAngularVelocity", Sdf.ValueTypeNames.Float).Set(1000.0)
    scene = UsdPhysics.Scene.Get(stage, "/PhysicsScene").GetPrim()
    scene.CreateAttribute("physxScene:enableCCD", Sdf.ValueTypeNames.Bool).Set(True)
    stage.Save()


def test_unread_physx_settings_are_listed_and_read_ones_are_not(tmp_path):
    _stage(tmp_path / "s.usda")
    imported = add_usd(ModelBuilder(), str(tmp_path / "s.usda"))
    unread = unread_physx_attributes(imported)
    assert unread == {
        "physxRigidBody:solverPositionIterationCount": ["/Box0", "/Box1"],
        "physxScene:enableCCD": ["/PhysicsScene"],
    }


def test_a_run_says_them_once_in_one_warning(tmp_path, caplog):
    _stage(tmp_path / "s.usda")
    with caplog.at_level(logging.WARNING, logger="newton_usd"):
        assert usdsim(tmp_path / "s.usda", "-n", 2, "-o", tmp_path / "out.usda") == 0
    said = [r.getMessage() for r in caplog.records if "PhysX setting" in r.getMessage()]
    assert len(said) == 1, caplog.text
    assert "2 PhysX settings that no engine here reads, not honored by the mujoco solver" in said[0]
    assert "physxRigidBody:solverPositionIterationCount (2 prims)" in said[0]
    assert "physxScene:enableCCD (1 prim)" in said[0]
    assert "maxAngularVelocity" not in said[0]
