"""Simulation.reset() (and a reset into a keyframe) starts deformables and grains over: their points and velocities the
authored ones, whatever a run or a view did to them, the stage showing the authored points, and the run repeats."""

from __future__ import annotations

import numpy as np
import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, Vt
from test_deformables import FPS, SIDE, SUBSTEPS, cloth_stage
from test_granular import sand_stage

from newton_usd.cli import main
from newton_usd.selection import ParticleView
from newton_usd.sim import Simulation

FRAMES = 3
PENDULUM = """<mujoco model="pendulum"><worldbody><body name="arm" pos="0 0 1">
  <joint name="swing" type="hinge" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.03"/>
  </body></worldbody><keyframe><key name="raised" qpos="1.4"/></keyframe></mujoco>"""


def particles(sim):
    state = sim.physics.state
    return state.particle_q.numpy().copy(), state.particle_qd.numpy().copy()


def check_reset(sim, path, frames=FRAMES):
    """Run, move the points by a view, reset: the authored points and velocities, nothing written; the run again
    ends where the first did."""
    sim.run(frames)
    first = particles(sim)
    view = ParticleView(sim, path)
    view.set_positions(view.get_positions().numpy() + 0.5)
    sim.reset()
    q, qd = particles(sim)
    np.testing.assert_array_equal(q, sim.model.particle_q.numpy())
    np.testing.assert_array_equal(qd, sim.model.particle_qd.numpy())
    assert np.abs(qd).max() > 0.5  # (the authored velocities, not zeros)
    assert sim.stage.GetPrimAtPath(path).GetAttribute("points").GetNumTimeSamples() == 0
    sim.run(frames)
    again = particles(sim)
    np.testing.assert_allclose(again[0], first[0], atol=1e-5)
    np.testing.assert_allclose(again[1], first[1], atol=1e-4)


def test_a_reset_starts_a_thrown_cloth_over(tmp_path):
    path = cloth_stage(tmp_path / "cloth.usda", box=False)
    stage = Usd.Stage.Open(path)
    UsdGeom.Mesh(stage.GetPrimAtPath("/World/Cloth/sim")).CreateVelocitiesAttr([Gf.Vec3f(1, 0, 0)] * SIDE * SIDE)
    stage.Save()
    sim = Simulation.open(path, fps=FPS, substeps=SUBSTEPS, device="cpu")
    check_reset(sim, "/World/Cloth/sim")
    sim.close()


def test_a_reset_starts_thrown_grains_over(tmp_path):
    velocities = Vt.Vec3fArray([Gf.Vec3f(1, 0, 0)] * 18)
    sim = Simulation.open(str(sand_stage(tmp_path / "pile.usda", side=3, layers=2, velocities=velocities)),
                          fps=FPS, substeps=SUBSTEPS, device="cpu")  # fmt: skip
    check_reset(sim, "/World/Pile")
    sim.close()


@pytest.mark.parametrize("solver", ["vbd", None])
def test_a_reset_into_a_keyframe_puts_the_joints_there_and_the_cloth_back(tmp_path, solver):
    """A pendulum with a keyframe beside a cloth, under vbd (and the engine the stage gets by default: MuJoCo for the
    pendulum coupled with vbd for the cloth): the keyframe moves the joint, the cloth starts from its authored
    points."""
    (tmp_path / "pendulum.xml").write_text(PENDULUM)
    assert main(["convert", str(tmp_path / "pendulum.xml")]) == 0
    stage = Usd.Stage.Open(str(tmp_path / "pendulum.usda"))
    mesh = UsdGeom.Mesh.Define(stage, "/pendulum/Cloth")
    mesh.CreatePointsAttr([(2, 0, 1), (2.3, 0, 1), (2.3, 0.3, 1), (2, 0.3, 1)])
    mesh.CreateFaceVertexCountsAttr([4])
    mesh.CreateFaceVertexIndicesAttr([0, 1, 2, 3])
    for api in ("PhysicsDeformableBodyAPI", "PhysicsSurfaceDeformableSimAPI"):
        mesh.GetPrim().AddAppliedSchema(api)
    mesh.GetPrim().CreateAttribute("physics:thicknesses", Sdf.ValueTypeNames.FloatArray).Set([0.004])
    mesh.GetPrim().CreateAttribute("physics:thicknesses:elementType", Sdf.ValueTypeNames.Token).Set("constant")
    stage.Save()
    sim = Simulation.open(str(tmp_path / "pendulum.usda"), fps=FPS, substeps=SUBSTEPS, device="cpu", keyframe="raised",
                          solver=solver)  # fmt: skip
    assert solver is None or sim.solver.name == solver
    np.testing.assert_allclose(sim.physics.state.joint_q.numpy(), [1.4], atol=1e-6)
    sim.run(FRAMES)
    assert sim.physics.state.particle_q.numpy()[:, 2].max() < 1.0  # (the cloth fell)
    sim.reset(keyframe="raised")
    np.testing.assert_allclose(sim.physics.state.joint_q.numpy(), [1.4], atol=1e-6)
    np.testing.assert_array_equal(sim.physics.state.particle_q.numpy(), sim.model.particle_q.numpy())
    np.testing.assert_array_equal(sim.physics.state.particle_qd.numpy(), 0.0)
    sim.close()
