"""Nothing silent: an applied newton:* or mjc:* schema that the chosen engine does not honor is said once per run,
naming the schema, its prims and the engine that would take it; ``usdsim check`` lists it and ``usdsim explain``
names the engines that honor it (newton_usd/usd/honored.py holds the one table)."""

from __future__ import annotations

import logging

from pxr import Gf, Sdf, UsdGeom, UsdPhysics

from newton_usd.cli import main
from newton_usd.usd.honored import HONORED, honors, message, unhonored

from stages import add_ground, new_stage

CUBE_POINTS = [Gf.Vec3f(x, y, z) for z in (-0.1, 0.1) for y in (-0.1, 0.1) for x in (-0.1, 0.1)]
CUBE_FACES = [0, 2, 3, 1, 4, 5, 7, 6, 0, 1, 5, 4, 2, 6, 7, 3, 0, 4, 6, 2, 1, 3, 7, 5]


def stage_with_unhonored_schemas(path):
    """A falling SDF mesh, an arm on a hinge with a PD NewtonActuator clamped (honored by every engine: not said), and
    NewtonVbdSceneAPI on the scene."""
    stage = new_stage(path)
    stage.GetPrimAtPath("/PhysicsScene").ApplyAPI("NewtonVbdSceneAPI")
    add_ground(stage)
    mesh = UsdGeom.Mesh.Define(stage, "/SdfBox")
    mesh.CreatePointsAttr(CUBE_POINTS)
    mesh.CreateFaceVertexCountsAttr([4] * 6)
    mesh.CreateFaceVertexIndicesAttr(CUBE_FACES)
    mesh.AddTranslateOp().Set(Gf.Vec3d(1, 0, 0.5))
    UsdPhysics.RigidBodyAPI.Apply(mesh.GetPrim())
    assert mesh.GetPrim().ApplyAPI("NewtonSDFCollisionAPI")  # (brings NewtonCollisionAPI, PhysicsCollisionAPI)
    arm = UsdGeom.Cube.Define(stage, "/Arm")
    arm.CreateSizeAttr(0.1)
    arm.AddTranslateOp().Set(Gf.Vec3d(0.5, 0, 1))
    UsdPhysics.RigidBodyAPI.Apply(arm.GetPrim())
    UsdPhysics.CollisionAPI.Apply(arm.GetPrim())
    hinge = UsdPhysics.RevoluteJoint.Define(stage, "/Hinge")
    hinge.CreateBody1Rel().SetTargets([Sdf.Path("/Arm")])
    hinge.CreateAxisAttr("Y")
    hinge.CreateLocalPos0Attr(Gf.Vec3f(0, 0, 1))
    hinge.CreateLocalPos1Attr(Gf.Vec3f(-0.5, 0, 0))
    actuator = stage.DefinePrim("/Actuator", "NewtonActuator")
    actuator.CreateRelationship("newton:targets").SetTargets([Sdf.Path("/Hinge")])
    assert actuator.ApplyAPI("NewtonPDControlAPI") and actuator.ApplyAPI("NewtonMaxEffortClampingAPI")
    actuator.CreateAttribute("newton:kp", Sdf.ValueTypeNames.Float).Set(10.0)
    stage.Save()
    return path


def expected(engine):
    """(message, prim) of what ``engine`` is to say of the stage above, by the table (an entry flips when its
    engine honors it): the PD control law is said where the engine drives actuators, else the actuator."""
    found = {"NewtonSDFCollisionAPI": "/SdfBox", "NewtonVbdSceneAPI": "/PhysicsScene"}
    found["NewtonPDControlAPI" if honors("NewtonActuator", engine) else "NewtonActuator"] = "/Actuator"
    return [(message(schema, engine), prim) for schema, prim in found.items() if not honors(schema, engine)]


def test_a_run_says_each_unhonored_schema_once_with_its_prims(tmp_path, caplog):
    path = stage_with_unhonored_schemas(tmp_path / "s.usda")
    with caplog.at_level(logging.WARNING, logger="newton_usd"):
        assert main([str(path), "-q", "-n", "2", "--solver", "mujoco"]) == 0  # (NewtonVbdSceneAPI's engine: vbd)
    said = expected("mujoco")
    assert any(m.startswith("NewtonSDFCollisionAPI is not honored by the mujoco solver") for m, _ in said)
    assert any(m.startswith("NewtonVbdSceneAPI is not honored by the mujoco solver") for m, _ in said)
    for text, prim in said:
        lines = [r.getMessage() for r in caplog.records if text in r.getMessage()]
        assert len(lines) == 1, (text, caplog.text)  # once per run
        assert f"(1 prim: {prim})" in lines[0]
    # The clamp is honored wherever actuators are driven, and said with the actuator elsewhere: never on its own.
    assert "NewtonMaxEffortClampingAPI is not honored" not in caplog.text
    assert any("/Actuator" in p for _, p in said) == (not honors("NewtonPDControlAPI", "mujoco"))


def test_check_lists_them_and_explain_names_who_honors_them(tmp_path, capsys):
    path = stage_with_unhonored_schemas(tmp_path / "s.usda")
    assert main(["check", str(path), "--solver", "mujoco"]) == 0  # (the scene's engine would be vbd)
    out = capsys.readouterr().out
    for text, prim in expected("mujoco"):
        assert f"  - {text}: {prim}" in out, out
    assert main(["explain", str(path), "/SdfBox", "/PhysicsScene"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    sdf = next(r for r in rows if r[:3] == ["/SdfBox", "schema", "NewtonSDFCollisionAPI"])
    assert " ".join(sdf[3:]).startswith("defined, not honored by any engine yet") or "honored by" in " ".join(sdf)
    assert any(r[:3] == ["/PhysicsScene", "schema", "NewtonVbdSceneAPI"] for r in rows)


def test_the_table():
    assert set(HONORED["NewtonXpbdSceneAPI"].engines) == {"xpbd"}
    found = {"NewtonXpbdSceneAPI": ["/A", "/B"], "NewtonPIDControlAPI": ["/Act"], "NewtonSiteAPI": ["/Site"]}
    said = unhonored(found, "mujoco", scene_path="/B")
    # Scene settings on the simulated scene only; a schema not in the table (NewtonSiteAPI) is honored everywhere.
    assert said[0] == (
        "NewtonXpbdSceneAPI is not honored by the mujoco solver: its XPBD settings are not used (honored by the xpbd "
        "solver)",
        ["/B"],
    )
    assert unhonored(found, "xpbd", scene_path="/B")[:1] != said[:1]
    # An actuator's control law is part of the actuator's report where actuators are not driven.
    pid = [text for text, _ in said if text.startswith("NewtonPIDControlAPI")]
    assert bool(pid) == (honors("NewtonActuator", "mujoco") and not honors("NewtonPIDControlAPI", "mujoco"))
    assert unhonored({"NewtonActuator": ["/Act"], "NewtonPIDControlAPI": ["/Act"]}, "nothing") == [
        (message("NewtonActuator", "nothing"), ["/Act"])
    ]
    assert "honored by the vbd solver" in message("NewtonVbdSceneAPI", "xpbd")


def test_several_scenes_each_say_their_own_prims():
    class Scenes:  # (as usd/scenes.py's: the scene of a body's prims; the default scene takes the rest)
        default = "/SceneA"

        @staticmethod
        def scene_of(path):
            return {"/B/Sdf": "/SceneB", "/A/Sdf": "/SceneA"}.get(path)

    found = {"NewtonSDFCollisionAPI": ["/A/Sdf", "/B/Sdf", "/Static"], "NewtonVbdSceneAPI": ["/SceneA", "/SceneB"]}
    said = {scene: unhonored(found, "mujoco", scene, Scenes) for scene in ("/SceneA", "/SceneB")}
    assert [paths for _, paths in said["/SceneA"]] == [["/SceneA"], ["/A/Sdf", "/Static"]]
    assert [paths for _, paths in said["/SceneB"]] == [["/SceneB"], ["/B/Sdf"]]
