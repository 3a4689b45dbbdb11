"""PointInstancer instances of rigid-body prototypes: one body each, written back as the instancer's
positions and orientations."""

import numpy as np
import pytest
from pxr import Gf, Usd, UsdGeom, UsdPhysics, Vt

from newton_usd import ModelBuilder
from newton_usd.sim import Simulation

from stages import add_ground, new_stage


def instancer_stage(path=None):
    """Three boxes of one rigid-body prototype at heights 1, 2 and 3 (the instancer raised 0.5), the
    middle one thrown sideways, plus one instance of a plain (non-physics) marker prototype."""
    stage = new_stage(path)
    add_ground(stage)
    pi = UsdGeom.PointInstancer.Define(stage, "/World/Boxes")
    pi.AddTranslateOp().Set(Gf.Vec3d(0, 0, 0.5))
    box = UsdGeom.Cube.Define(stage, "/World/Boxes/Prototypes/Box")
    box.CreateSizeAttr(0.2)
    UsdPhysics.RigidBodyAPI.Apply(box.GetPrim())
    UsdPhysics.CollisionAPI.Apply(box.GetPrim())
    UsdPhysics.MassAPI.Apply(box.GetPrim()).CreateMassAttr(2.0)
    marker = UsdGeom.Sphere.Define(stage, "/World/Boxes/Prototypes/Marker")
    marker.CreateRadiusAttr(0.05)
    pi.CreatePrototypesRel().SetTargets([box.GetPath(), marker.GetPath()])
    pi.CreatePositionsAttr(Vt.Vec3fArray([(0, 0, 0.5), (1, 0, 1.5), (2, 0, 2.5), (3, 0, 0.5)]))
    pi.CreateOrientationsAttr(Vt.QuathArray([Gf.Quath(1, 0, 0, 0)] * 4))
    pi.CreateProtoIndicesAttr(Vt.IntArray([0, 0, 0, 1]))
    pi.CreateVelocitiesAttr(Vt.Vec3fArray([(0, 0, 0), (0, 2, 0), (0, 0, 0), (0, 0, 0)]))
    return stage


def test_each_instance_is_a_body_that_falls_on_its_own():
    b = ModelBuilder()
    imported = b.add_usd(instancer_stage())
    assert b.body_label == ["/World/Boxes[0]", "/World/Boxes[1]", "/World/Boxes[2]"]  # not the marker
    assert b.body_mass == [2.0, 2.0, 2.0]
    np.testing.assert_allclose([q[0] for q in b.body_q], [(0, 0, 1), (1, 0, 2), (2, 0, 3)], atol=1e-6)
    assert "/World/Boxes[1]" in imported.shape_index
    sim = Simulation.open(instancer_stage(), device="cpu")
    sim.run(18)  # 0.3 s: free fall of 0.44 m, none has landed yet
    z = sim.state.body_q.numpy()[:, 2]
    # g t^2 / 2, plus the semi-implicit Euler step's g t dt / 2 (dt = 1/480 s)
    np.testing.assert_allclose(z, np.array([1.0, 2.0, 3.0]) - 0.5 * 9.81 * 0.3 * (0.3 + 1 / 480), atol=2e-4)
    assert sim.state.body_q.numpy()[1, 1] == pytest.approx(0.6, abs=1e-3)  # thrown at 2 m/s along +Y
    sim.run(102)  # 2 s: all at rest on the ground
    np.testing.assert_allclose(sim.state.body_q.numpy()[:, 2], 0.1, atol=3e-3)


def test_instances_are_written_as_the_instancers_arrays(tmp_path):
    src = tmp_path / "boxes.usda"
    instancer_stage(str(src)).Save()
    before = src.read_bytes()
    sim = Simulation.open(str(src), device="cpu")
    sim.run(30)
    out = tmp_path / "boxes.sim.usda"
    sim.save(out)
    assert src.read_bytes() == before
    stage = Usd.Stage.Open(str(out))
    pi = UsdGeom.PointInstancer(stage.GetPrimAtPath("/World/Boxes"))
    assert pi.GetPositionsAttr().GetNumTimeSamples() == 31
    assert pi.GetOrientationsfAttr().GetNumTimeSamples() == 31
    body_q = sim.state.body_q.numpy()
    world = [m * Gf.Matrix4d().SetTranslate(Gf.Vec3d(0, 0, 0.5)) for m in pi.ComputeInstanceTransformsAtTime(30, 30)]
    for i in range(3):  # the composed instance transforms are the bodies' poses
        np.testing.assert_allclose(world[i].ExtractTranslation(), body_q[i, :3], atol=1e-5)
    assert world[3].ExtractTranslation() == Gf.Vec3d(3, 0, 1.0)  # the marker stays where it was authored
    assert pi.GetPositionsAttr().Get(0)[1] == Gf.Vec3f(1, 0, 1.5)  # frame 0: the authored positions
    sim.reset()  # restore: the session's stage shows the authored arrays again
    assert not sim.stage.GetPrimAtPath("/World/Boxes").GetAttribute("orientationsf").HasAuthoredValue()


def test_inactive_instances_are_not_simulated():
    stage = instancer_stage()
    UsdGeom.PointInstancer(stage.GetPrimAtPath("/World/Boxes")).DeactivateId(1)
    b = ModelBuilder()
    b.add_usd(stage)
    assert b.body_label == ["/World/Boxes[0]", "/World/Boxes[2]"]


def test_rotated_instancer_and_instances_round_trip():
    """Instances rotated, on a rotated instancer: the imported pose is the composed instance transform,
    and writing an unmoved state back gives the authored positions and orientations."""
    stage = instancer_stage()
    pi = UsdGeom.PointInstancer(stage.GetPrimAtPath("/World/Boxes"))
    pi.AddRotateZOp().Set(30.0)
    q = Gf.Quath(Gf.Rotation(Gf.Vec3d(1, 0, 0), 40).GetQuat())
    pi.GetOrientationsAttr().Set(Vt.QuathArray([q] * 4))
    b = ModelBuilder()
    b.add_usd(stage)
    expected = pi.ComputeInstanceTransformsAtTime(0, 0)[2] * Gf.Matrix4d(
        UsdGeom.Xformable(pi.GetPrim()).ComputeLocalToWorldTransform(0)
    )
    np.testing.assert_allclose(b.body_q[2][0], expected.ExtractTranslation(), atol=1e-5)
    sim = Simulation.open(stage, device="cpu", record=False)
    sim.recorder.write_frame()
    np.testing.assert_allclose(np.array(pi.GetPositionsAttr().Get())[:3], [(0, 0, 0.5), (1, 0, 1.5), (2, 0, 2.5)],
                               atol=1e-5)  # fmt: skip
    got = pi.GetOrientationsfAttr().Get()[2]
    assert abs(abs(Gf.Dot(Gf.Quatd(got), Gf.Quatd(q))) - 1.0) < 1e-3  # half-precision authored quaternion
