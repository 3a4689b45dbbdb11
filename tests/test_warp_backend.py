"""The warp backend's stepping (step2 then step1) and its exchange with the model's arrays on the device."""

import mujoco
import numpy as np
import pytest
import warp as wp

from newton_usd import ModelBuilder
from newton_usd.solvers import SolverMuJoCo

# A free box dropped on the ground and a hinge chain (two axes) swinging from the world.
BOX_AND_CHAIN = """<mujoco><option timestep="0.002"/><worldbody><geom type="plane" size="5 5 .1"/>
<body name="box" pos="0 0 .6" euler="10 20 30"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
<body name="l1" pos="1 0 1"><joint name="h1" type="hinge" axis="0 1 0"/>
<geom type="capsule" fromto="0 0 0 .4 0 0" size=".04"/>
<body name="l2" pos=".4 0 0"><joint name="h2" type="hinge" axis="0 1 0"/>
<geom type="capsule" fromto="0 0 0 .4 0 0" size=".04"/>
<body name="l3" pos=".4 0 0"><joint name="h3" type="hinge" axis="0 0 1"/>
<geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/></body></body></body>
</worldbody></mujoco>"""


def build(xml, worlds=2, **options):
    b = ModelBuilder()
    b.add_mjcf(xml)
    b.replicate(worlds)
    model = b.finalize("cpu")
    return model, SolverMuJoCo(model, backend="warp", **options)


@pytest.mark.parametrize("integrator", ["euler", "implicitfast", "implicit", "rk4"])
def test_warp_steps_as_mujoco_warp_step_then_kinematics(integrator):
    import mujoco_warp as mjw

    model, solver = build(BOX_AND_CHAIN, integrator=integrator)
    assert solver._two_phase == (integrator != "rk4")  # RK4: step2 would integrate with Euler
    m = solver.mj_model
    data = mujoco.MjData(m)
    data.qpos[:] = solver._data.qpos
    with wp.ScopedDevice("cpu"):
        ref_m = mjw.put_model(m)
        ref_d = mjw.put_data(m, data, nworld=2, nconmax=solver.mjw_data.naconmax // 2, njmax=solver.mjw_data.njmax)
    s0, s1, control = model.state(), model.state(), model.control()
    for _ in range(150):
        solver.step(s0, s1, control, None, 0.002)
        s0, s1 = s1, s0
        with wp.ScopedDevice("cpu"):
            mjw.step(ref_m, ref_d)
    with wp.ScopedDevice("cpu"):
        for stage in (mjw.kinematics, mjw.com_pos, mjw.com_vel):
            stage(ref_m, ref_d)
    qpos = ref_d.qpos.numpy()
    assert qpos[:, 2].max() < 0.2  # the box fell onto the ground (from 0.6 m)
    assert np.abs(qpos[:, 7:] - qpos[:1, 7:]).max() < 1e-6 and np.abs(qpos[0, 7:9]).min() > 0.05  # swung
    np.testing.assert_allclose(solver.mjw_data.qpos.numpy(), qpos, atol=1e-5)
    np.testing.assert_allclose(solver.mjw_data.qvel.numpy(), ref_d.qvel.numpy(), atol=1e-4)
    body_q = s0.body_q.numpy().reshape(2, -1, 7)
    xpos, xquat = ref_d.xpos.numpy()[:, solver.spec_map.body_mj], ref_d.xquat.numpy()[:, solver.spec_map.body_mj]
    np.testing.assert_allclose(body_q[..., :3], xpos, atol=1e-5)
    np.testing.assert_allclose(body_q[..., 3:], xquat[..., [1, 2, 3, 0]], atol=1e-5)
