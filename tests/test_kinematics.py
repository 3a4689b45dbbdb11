"""newton_usd.kinematics against MuJoCo and finite differences: forward kinematics, Jacobians and the mass matrix for
every joint type in several worlds, and inverse kinematics on a 6-DOF arm authored as a USD stage."""

import math

import mujoco
import numpy as np
import pytest
import warp as wp
from pxr import Gf, Sdf, UsdGeom, UsdPhysics

from newton_usd import ModelBuilder
from newton_usd.core.builder import JointAxis
from newton_usd.core.quat import quat_from_axis_angle, quat_multiply, quat_to_matrix
from newton_usd.core.types import JointType
from newton_usd.errors import NewtonUsdError
from newton_usd.kinematics import IKTarget, eval_fk, eval_ik, jacobian, mass_matrix
from newton_usd.kinematics.fk import frames
from newton_usd.solvers import SolverMuJoCo

from stages import new_stage

WORLDS = 3
OFFSET = np.array([0.1, -0.2, 0.3])


def every_joint_model():
    """A chain revolute -> prismatic -> ball -> D6 (two translations, two rotations) off the world, and a free body
    carrying a revolute child; frames turned, masses off-center, armature on the first hinge; 3 worlds."""
    b = ModelBuilder()
    inertia = np.array([[0.02, 0.001, 0.0], [0.001, 0.03, 0.002], [0.0, 0.002, 0.04]])

    def body(pos, label):
        return b.add_body((pos, (0, 0, 0, 1)), mass=1.3, com=(0.05, -0.02, 0.1), inertia=inertia, label=label)

    s, c = math.sin(0.3), math.cos(0.3)
    b0 = body((0, 0, 1), "/Chain/a")
    b.add_joint_revolute(-1, b0, ((0, 0, 1), (0, 0, 0, 1)), axis=(0, 1, 0), armature=0.01, label="/Chain/hinge")
    b1 = body((0, 0, 1.5), "/Chain/b")
    b.add_joint_prismatic(b0, b1, ((0, 0, 0.5), (0, 0, 0, 1)), axis=(1, 0, 0), label="/Chain/slider")
    b2 = body((0, 0, 2.0), "/Chain/c")
    b.add_joint_ball(b1, b2, ((0, 0, 0.5), (0, 0, s, c)), ((0, 0, 0), (s, 0, 0, c)), label="/Chain/ball")
    b3 = body((0, 0, 2.5), "/Chain/d")
    b.add_joint_d6(
        b2, b3, ((0, 0, 0.5), (0, 0, 0, 1)),
        linear_axes=[JointAxis((1, 0, 0)), JointAxis((0, 0, 1))],
        angular_axes=[JointAxis((0, 1, 0)), JointAxis((1, 0, 0))],
        label="/Chain/d6",
    )  # fmt: skip
    b4 = body((1, 0, 1), "/Float/base")
    b.add_joint_free(b4, label="/Float/free")
    b5 = body((1, 0, 0.5), "/Float/arm")
    b.add_joint_revolute(b4, b5, ((0, 0, -0.5), (0, 0, 0, 1)), axis=(0, 0, 1), label="/Float/hinge")
    b.replicate(WORLDS)
    return b.finalize("cpu")


def random_coordinates(model, seed=0):
    """Random joint coordinates for every world (unit quaternions for ball and free joints)."""
    rng = np.random.default_rng(seed)
    q = model.joint_q.numpy().astype(np.float64)
    jt, qs = model.joint_type.numpy(), model.joint_q_start.numpy()
    for j, t in enumerate(jt):
        seg = slice(qs[j], qs[j + 1])
        q[seg] += rng.uniform(-0.6, 0.6, qs[j + 1] - qs[j])
        if t == JointType.BALL:
            q[seg] /= np.linalg.norm(q[seg])
        elif t == JointType.FREE:
            q[qs[j] + 3 : qs[j + 1]] /= np.linalg.norm(q[qs[j] + 3 : qs[j + 1]])
    return q


@pytest.fixture(scope="module")
def posed():
    """(model, solver, state): the solver's own state at random coordinates (stepped by 1e-9 s from them)."""
    model = every_joint_model()
    solver = SolverMuJoCo(model, backend="cpu")
    state = model.state()
    state.joint_q.assign(random_coordinates(model).astype(np.float32))
    out = model.state()
    solver.step(state, out, None, None, 1e-9)
    return model, solver, out


def same_pose(a, b):
    """Largest difference between poses (n, 7), a quaternion and its negative being the same rotation."""
    pos = np.abs(a[:, :3] - b[:, :3]).max()
    rot = np.minimum(np.abs(a[:, 3:] - b[:, 3:]), np.abs(a[:, 3:] + b[:, 3:])).max()
    return max(pos, rot)


def test_fk_matches_the_solvers_body_poses(posed):
    model, _, state = posed
    fk = eval_fk(model, state)
    assert fk.shape == (model.body_count,) and fk.dtype == wp.transform
    assert same_pose(fk.numpy(), state.body_q.numpy()) < 1e-6
    # into a State's own array, from other coordinates: the moved bodies follow
    moved = model.state()
    q = random_coordinates(model, seed=5).astype(np.float32)
    eval_fk(model, moved, body_q=moved.body_q, joint_q=wp.array(q, device="cpu"))
    assert same_pose(moved.body_q.numpy(), fk.numpy()) > 0.1


def mujoco_at(solver, model, state, w):
    """World w's MjModel and an MjData at the state's coordinates, and T with MuJoCo qvel = T @ joint_qd."""
    m = solver.mj_models[w]
    d = mujoco.MjData(m)
    nq = model.joint_coord_count // model.num_worlds
    nv = model.joint_dof_count // model.num_worlds
    jq = state.joint_q.numpy().astype(np.float64)[w * nq : (w + 1) * nq]
    qvel = np.zeros(m.nv)
    solver.map.to_mujoco(jq, np.zeros(nv), d.qpos, qvel)
    T = np.zeros((m.nv, nv))
    for k in range(nv):
        unit = np.zeros(nv)
        unit[k] = 1.0
        solver.map.to_mujoco(jq, unit, np.zeros(m.nq), T[:, k])
    for stage in (mujoco.mj_kinematics, mujoco.mj_comPos, mujoco.mj_crb):
        stage(m, d)
    return m, d, T


def test_jacobians_match_mj_jac_for_every_body_and_world(posed):
    model, solver, state = posed
    for b in range(model.body_count // WORLDS):
        J = jacobian(model, state, model.body_label[b], offset=OFFSET).numpy()
        assert J.shape == (WORLDS, 6, model.joint_dof_count // WORLDS)
        for w in range(WORLDS):
            m, d, T = mujoco_at(solver, model, state, w)
            mb = solver.spec_map.body_mj[b]
            point = d.xpos[mb] + d.xmat[mb].reshape(3, 3) @ OFFSET
            jacp, jacr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
            mujoco.mj_jac(m, d, jacp, jacr, point, mb)
            np.testing.assert_allclose(J[w], np.vstack([jacp, jacr]) @ T, atol=1e-6, err_msg=f"body {b} world {w}")


def perturbed(model, q, w, k, eps):
    """Coordinates q with world w's DOF k moved by eps, as the DOF conventions integrate a velocity."""
    q = q.copy()
    per = model.joint_count // WORLDS
    jt, qs, ds = model.joint_type.numpy(), model.joint_q_start.numpy(), model.joint_qd_start.numpy()
    for j in range(w * per, (w + 1) * per):
        if not ds[j] <= w * (model.joint_dof_count // WORLDS) + k < ds[j + 1]:
            continue
        a = w * (model.joint_dof_count // WORLDS) + k - ds[j]
        axis = np.eye(3)[a % 3]
        if jt[j] == JointType.BALL:  # angular velocity in the child joint frame: on the right
            q[qs[j] : qs[j] + 4] = quat_multiply(q[qs[j] : qs[j] + 4], quat_from_axis_angle(axis, eps))
        elif jt[j] == JointType.FREE and a >= 3:  # world angular velocity: on the left
            q[qs[j] + 3 : qs[j] + 7] = quat_multiply(quat_from_axis_angle(axis, eps), q[qs[j] + 3 : qs[j] + 7])
        else:
            q[qs[j] + a] += eps
    return q


def test_jacobians_match_central_finite_differences(posed):
    model, _, state = posed
    q = state.joint_q.numpy().astype(np.float64)
    eps = 1e-5
    nv = model.joint_dof_count // WORLDS

    def pose(qq, b):
        x = frames(model, wp.array(qq, dtype=wp.float64, device="cpu"), state.body_q).body_x.numpy()[b]
        rot = quat_to_matrix(x[3:])
        return x[:3] + rot @ OFFSET, rot

    for b_local in (3, 5):  # the end of the chain (every joint type but free) and the free body's child
        J = jacobian(model, state, b_local, offset=OFFSET).numpy()
        for w in range(WORLDS):
            b = w * (model.body_count // WORLDS) + b_local
            fd = np.zeros((6, nv))
            for k in range(nv):
                (p1, r1), (p0, r0) = (pose(perturbed(model, q, w, k, s * eps), b) for s in (1, -1))
                fd[:3, k] = (p1 - p0) / (2 * eps)
                dr = r1 @ r0.T
                fd[3:, k] = np.array([dr[2, 1] - dr[1, 2], dr[0, 2] - dr[2, 0], dr[1, 0] - dr[0, 1]]) / (4 * eps)
            np.testing.assert_allclose(J[w], fd, atol=1e-6, err_msg=f"body {b_local} world {w}")


def test_mass_matrix_matches_mj_fullM(posed):
    model, solver, state = posed
    M = mass_matrix(model, state).numpy()
    nv = model.joint_dof_count // WORLDS
    assert M.shape == (WORLDS, nv, nv)
    for w in range(WORLDS):
        m, d, T = mujoco_at(solver, model, state, w)
        full = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, full)
        np.testing.assert_allclose(M[w], T.T @ full @ T, atol=1e-6, err_msg=f"world {w}")
    np.testing.assert_allclose(M, np.transpose(M, (0, 2, 1)))
    assert (np.linalg.eigvalsh(M) > 0).all()


def arm_stage():
    """A 6-DOF arm fixed to the world, authored in UsdPhysics: links /Arm/link0..5 stacked along Z, revolute joints
    /Arm/j0..5 about Z, Y, Y, X, Y, X, limited to +-150 degrees; the hand link5 ends 0.1 m above its joint."""
    stage = new_stage()
    UsdGeom.Xform.Define(stage, "/Arm")
    axes = ["Z", "Y", "Y", "X", "Y", "X"]
    heights = [0.1, 0.4, 0.8, 1.1, 1.2, 1.3]
    for k, (axis, z) in enumerate(zip(axes, heights, strict=True)):
        link = UsdGeom.Xform.Define(stage, f"/Arm/link{k}")
        link.AddTranslateOp().Set(Gf.Vec3d(0, 0, z))
        UsdPhysics.RigidBodyAPI.Apply(link.GetPrim())
        mass = UsdPhysics.MassAPI.Apply(link.GetPrim())
        mass.CreateMassAttr(1.0)
        mass.CreateDiagonalInertiaAttr(Gf.Vec3f(0.01, 0.01, 0.01))
        joint = UsdPhysics.RevoluteJoint.Define(stage, f"/Arm/j{k}")
        if k:
            joint.CreateBody0Rel().SetTargets([Sdf.Path(f"/Arm/link{k - 1}")])
            joint.CreateLocalPos0Attr(Gf.Vec3f(0, 0, z - heights[k - 1]))
        else:
            joint.CreateLocalPos0Attr(Gf.Vec3f(0, 0, z))
        joint.CreateBody1Rel().SetTargets([Sdf.Path(f"/Arm/link{k}")])
        joint.CreateLocalPos1Attr(Gf.Vec3f(0, 0, 0))
        joint.CreateAxisAttr(axis)
        joint.CreateLowerLimitAttr(-150.0)
        joint.CreateUpperLimitAttr(150.0)
    return stage


@pytest.fixture(scope="module")
def arm():
    b = ModelBuilder()
    b.add_usd(arm_stage())
    b.replicate(8)
    return b.finalize("cpu")


def test_ik_reaches_reachable_poses_within_a_millimeter_and_a_degree(arm):
    state = arm.state()
    rng = np.random.default_rng(3)
    goal_q = rng.uniform(-1.2, 1.2, (8, 6)).astype(np.float32)  # a reachable pose per world
    goal = eval_fk(arm, state, joint_q=wp.array(goal_q.reshape(-1), device="cpu")).numpy().reshape(8, 6, 7)[:, 5]
    goal_tip = goal[:, :3] + np.array([quat_to_matrix(g[3:]) @ [0, 0, 0.1] for g in goal])
    hand = IKTarget("/Arm/link5", position=goal_tip, orientation=goal[:, 3:], offset=(0, 0, 0.1))
    result = eval_ik(arm, state, hand)
    reached = eval_fk(arm, state, joint_q=result.joint_q).numpy().reshape(8, 6, 7)[:, 5]
    tip = reached[:, :3] + np.array([quat_to_matrix(r[3:]) @ [0, 0, 0.1] for r in reached])
    assert np.linalg.norm(tip - goal_tip, axis=1).max() < 1e-3
    angle = 2 * np.arccos(np.clip(np.abs((reached[:, 3:] * goal[:, 3:]).sum(axis=1)), 0, 1))
    assert np.degrees(angle).max() < 1.0
    assert result.position_error.max() < 1e-3 and np.degrees(result.angle_error.max()) < 1.0
    np.testing.assert_allclose(state.joint_q.numpy(), 0.0)  # the starting state is left as it was


def test_ik_respects_joint_limits(arm):
    state = arm.state()
    # straight out sideways at the shoulder's height needs j1 at 90 degrees: allowed up to 20 degrees only
    limited = arm.joint_limit_upper.numpy().copy()
    limited[1::6] = math.radians(20)
    arm.joint_limit_upper.assign(limited)
    try:
        result = eval_ik(arm, state, IKTarget("/Arm/link5", position=(1.0, 0.0, 0.4)), iterations=60)
    finally:
        limited[1::6] = math.radians(150)
        arm.joint_limit_upper.assign(limited)
    q = result.joint_q.numpy().reshape(8, 6)
    assert (q[:, 1] <= math.radians(20) + 1e-6).all() and (q >= math.radians(-150) - 1e-6).all()
    assert result.position_error.min() > 0.05  # not reachable within the limits


def test_bad_kinematics_input_is_named(arm):
    with pytest.raises(NewtonUsdError, match="/Arm/nothing: no such body"):
        jacobian(arm, arm.state(), "/Arm/nothing")
    with pytest.raises(NewtonUsdError, match="give a position, an orientation or both"):
        eval_ik(arm, arm.state(), IKTarget("/Arm/link5"))


STACKED_MJCF = """<mujoco>
  <worldbody>
    <body name="torso" pos="0 0 1">
      <freejoint name="root"/>
      <geom type="box" size="0.1 0.1 0.1" mass="3"/>
      <body name="thigh" pos="0.1 0 -0.1" euler="10 20 30">
        <joint name="hip_x" type="hinge" axis="1 0 0" pos="0 0 0.05"/>
        <joint name="hip_y" type="hinge" axis="0 1 0" pos="0.02 0 0"/>
        <joint name="hip_slide" type="slide" axis="0 0 1"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.04" mass="1"/>
        <body name="shin" pos="0 0 -0.3">
          <joint name="knee" type="ball" pos="0 0.01 0"/>
          <geom type="capsule" fromto="0 0 0 0.05 0 -0.3" size="0.03" mass="0.6"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>"""


def test_mjcf_bodies_with_several_joints():
    """MJCF nests several joints in one body: fk, Jacobians and the mass matrix follow the stack, as MuJoCo."""
    b = ModelBuilder()
    b.add_mjcf(STACKED_MJCF)
    b.replicate(2)
    model = b.finalize("cpu")
    solver = SolverMuJoCo(model, backend="cpu")
    state = model.state()
    q = random_coordinates(model, seed=7)
    state.joint_q.assign(q.astype(np.float32))
    out = model.state()
    solver.step(state, out, None, None, 1e-9)
    thigh = model.body_label.index("thigh")
    assert list(model.joint_child.numpy()[:5]).count(thigh) == 3  # a stack of three joints
    assert same_pose(eval_fk(model, out).numpy(), out.body_q.numpy()) < 1e-6
    M = mass_matrix(model, out).numpy()
    for b_local, name in ((1, "thigh"), (2, "shin")):
        J = jacobian(model, out, name, offset=OFFSET).numpy()
        for w in range(2):
            m, d, T = mujoco_at(solver, model, out, w)
            mb = solver.spec_map.body_mj[b_local]
            point = d.xpos[mb] + d.xmat[mb].reshape(3, 3) @ OFFSET
            jacp, jacr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
            mujoco.mj_jac(m, d, jacp, jacr, point, mb)
            np.testing.assert_allclose(J[w], np.vstack([jacp, jacr]) @ T, atol=1e-6)
            full = np.zeros((m.nv, m.nv))
            mujoco.mj_fullM(m, d, full)
            np.testing.assert_allclose(M[w], T.T @ full @ T, atol=1e-6)


def test_ik_through_ball_d6_and_free_joints():
    """Poses reachable through a ball and a D6 joint, and through a free joint: IK integrates their rotations."""
    model = every_joint_model()
    state = model.state()
    goal_q = wp.array(random_coordinates(model, seed=11).astype(np.float32), device="cpu")
    goal = eval_fk(model, state, joint_q=goal_q).numpy().reshape(WORLDS, -1, 7)
    targets = [
        IKTarget(label, position=goal[:, b, :3], orientation=goal[:, b, 3:])
        for b, label in ((3, "/Chain/d"), (5, "/Float/arm"))
    ]
    result = eval_ik(model, state, targets, iterations=200)
    reached = eval_fk(model, state, joint_q=result.joint_q).numpy().reshape(WORLDS, -1, 7)
    for b in (3, 5):
        assert np.abs(reached[:, b, :3] - goal[:, b, :3]).max() < 1e-3
        assert same_pose(reached[:, b], goal[:, b]) < 1e-3
    assert result.position_error.max() < 1e-3 and np.degrees(result.angle_error.max()) < 1.0
