"""Views by prim pattern (newton_usd.selection): rows per environment world, columns named in order, index-masked
writes that move only the chosen worlds, model values pushed to the solver, key/value access to user arrays."""

import numpy as np
import pytest
import warp as wp

from newton_usd.errors import NewtonUsdError
from newton_usd.selection import ArticulationView, RigidBodyView, SimulationView
from newton_usd.sim import Simulation

from stages import falling_cube, robot_environments

N = 4
ROBOTS = "/World/envs/env_*/Robot"


def open_robots(n=N, backend="cpu"):
    return Simulation.open(robot_environments(n=n), env_root="/World/envs", record=False, device="cpu", backend=backend)


def test_rows_are_worlds_and_columns_are_named_in_model_order():
    sim = open_robots()
    view = ArticulationView(sim, ROBOTS)
    assert view.count == N
    assert view.prim_paths == [f"/World/envs/env_{w}/Robot" for w in range(N)]
    assert list(view.worlds) == list(range(N))
    assert view.dof_names == ["shoulder", "elbow"] and view.position_names == ["shoulder", "elbow"]
    assert view.body_names == ["base", "link1", "link2"]
    assert view.is_floating
    q = view.get_dof_positions()
    assert isinstance(q, wp.array) and q.shape == (N, 2) and q.device == sim.model.device
    shared = np.from_dlpack(q)  # DLPack (torch, JAX, numpy) takes it without a copy
    assert shared.ctypes.data == q.ptr and shared.shape == (N, 2)
    # the columns are the joints' coordinates: each row is its world's
    joint_q = sim.state.joint_q.numpy()
    labels = sim.model.joint_label
    starts = sim.model.joint_q_start.numpy()
    q_np = np.array(joint_q)
    for w in range(N):
        for c, name in enumerate(view.dof_names):
            j = labels.index(f"/World/envs/env_{w}/Robot/{name}")
            q_np[starts[j]] = 0.1 * (w + 1) + 0.01 * c
    sim.state.joint_q.assign(q_np)
    got = view.get_dof_positions().numpy()
    np.testing.assert_allclose(got, [[0.1 * (w + 1), 0.1 * (w + 1) + 0.01] for w in range(N)], atol=1e-7)
    roots = view.get_root_transforms().numpy()
    np.testing.assert_allclose(roots[:, 0], [2.0 * w for w in range(N)], atol=1e-6)  # each env 2 m along X
    links = view.get_link_transforms().numpy()
    assert links.shape == (N, 3, 7)
    np.testing.assert_allclose(links[:, :, 2], [[0.3, 0.6, 0.9]] * N, atol=1e-6)


def test_a_write_with_indices_moves_only_those_worlds():
    sims = [open_robots(), open_robots()]
    views = [ArticulationView(s, ROBOTS) for s in sims]
    before = views[1].get_dof_positions().numpy()
    views[1].set_dof_positions(np.array([[0.4, -0.3]]), indices=[2])
    after = views[1].get_dof_positions().numpy()
    np.testing.assert_array_equal(np.delete(after, 2, axis=0), np.delete(before, 2, axis=0))
    np.testing.assert_allclose(after[2], [0.4, -0.3], atol=1e-7)
    # full-size buffers with indices, as the tensor API passes them: only the indexed rows are taken
    targets = np.full((N, 2), 0.2, dtype=np.float32)
    targets[3] = [0.5, 0.5]
    views[1].set_dof_position_targets(targets, indices=wp.array([3], dtype=wp.int32))
    np.testing.assert_allclose(views[1].get_dof_position_targets().numpy()[:3], 0.0)
    np.testing.assert_allclose(views[1].get_dof_position_targets().numpy()[3], [0.5, 0.5])
    for s in sims:
        s.run(20)
    a, b = (v.get_link_transforms().numpy() for v in views)
    for w in range(N):
        if w in (2, 3):
            assert np.abs(a[w] - b[w]).max() > 1e-3, w
        else:
            np.testing.assert_array_equal(a[w], b[w])


class _GpuTensor:
    """An array only DLPack reads, as numpy cannot read a torch or JAX array on a GPU (``np.asarray`` of a CUDA
    tensor raises): what a learning loop on CUDA passes as its environment ids."""

    def __init__(self, values, dtype):
        self._array = wp.array(np.asarray(values, dtype=dtype), device="cpu")

    def __dlpack__(self, stream=None, **kwargs):
        return self._array.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_indices_may_be_a_gpu_tensor():
    """``indices`` as a learning loop on CUDA gives them (torch's int64 environment ids on the GPU, DLPack only): the
    rows written are those, as with a list."""
    sim = open_robots()
    view = ArticulationView(sim, ROBOTS)
    before = view.get_dof_positions().numpy()
    view.set_dof_positions(np.array([[0.4, -0.3], [0.2, 0.1]]), indices=_GpuTensor([3, 1], np.int64))
    after = view.get_dof_positions().numpy()
    np.testing.assert_allclose(after[[3, 1]], [[0.4, -0.3], [0.2, 0.1]], atol=1e-7)
    np.testing.assert_array_equal(after[[0, 2]], before[[0, 2]])
    sv = SimulationView(sim)
    sv.set_state_attr("joint_qd", _GpuTensor([1, 2], np.int64), [0.5, -0.5])
    np.testing.assert_allclose(sv.get_state_attr("joint_qd", _GpuTensor([2, 1], np.int32)).numpy(), [-0.5, 0.5])


@pytest.mark.parametrize("solver", ["xpbd", "semi_implicit"])
def test_a_joint_write_in_one_world_leaves_the_other_worlds_bodies_as_stepped(solver):
    """Under a solver that steps body states, writing one world's joint positions moves that world's bodies to
    them; the other worlds' bodies stay bit for bit as stepped (forward kinematics of the joint states computed
    from bodies that satisfy their joints only to the solver's tolerance would move them)."""
    sim = Simulation.open(robot_environments(n=N), env_root="/World/envs", record=False, device="cpu", solver=solver)
    view = ArticulationView(sim, ROBOTS)
    sim.run(5)
    before_q, before_qd = sim.state.body_q.numpy().copy(), sim.state.body_qd.numpy().copy()  # (numpy(): a view)
    view.set_dof_positions(np.array([[0.4, -0.3]]), indices=[2])
    after_q, after_qd = sim.state.body_q.numpy(), sim.state.body_qd.numpy()
    world = sim.model.body_world.numpy()
    others = world != 2
    np.testing.assert_array_equal(after_q[others], before_q[others])
    np.testing.assert_array_equal(after_qd[others], before_qd[others])
    assert np.abs(after_q[~others] - before_q[~others]).max() > 1e-2  # (world 2's links moved to the new angles)
    np.testing.assert_allclose(view.get_dof_positions().numpy()[2], [0.4, -0.3], atol=1e-6)


def test_warp_backend_views_write_one_world_on_the_device():
    sims = [open_robots(3, "warp"), open_robots(3, "warp")]
    views = [ArticulationView(s, ROBOTS) for s in sims]
    views[1].set_dof_positions(np.array([[0.3, 0.0]]), indices=[1])
    for s in sims:
        s.run(5)
    a, b = (v.get_dof_positions().numpy() for v in views)
    np.testing.assert_array_equal(a[[0, 2]], b[[0, 2]])
    assert abs(a[1, 0] - b[1, 0]) > 1e-3


def test_root_transforms_and_velocities_of_a_floating_base():
    sim = open_robots()
    view = ArticulationView(sim, ROBOTS)
    pose = np.array([[9.0, 1.0, 2.0, 0.0, 0.0, 0.0, 1.0]])
    view.set_root_transforms(pose, indices=[1])
    np.testing.assert_allclose(view.get_root_transforms().numpy()[1], pose[0], atol=1e-7)
    view.set_root_velocities(np.array([[0.0, 0.0, 0.0, 0.0, 0.0, 0.0]] * N))
    sim.step_frame()
    roots = view.get_root_transforms().numpy()
    assert abs(roots[1, 0] - 9.0) < 1e-3 and abs(roots[1, 1] - 1.0) < 1e-3 and roots[1, 2] < 2.0  # falls from there
    np.testing.assert_allclose(roots[0, :2], [0.0, 0.0], atol=1e-4)


def test_model_values_reach_the_solver_per_world():
    sim = open_robots()
    view = ArticulationView(sim, ROBOTS)
    masses = view.get_masses().numpy()
    np.testing.assert_allclose(masses, [[2.0, 0.5, 0.5]] * N)
    view.set_masses(np.array([[3.0, 0.7, 0.6]]), indices=[2])
    model = sim.model
    solver = sim.solver
    base = model.body_label.index("/World/envs/env_2/Robot/base")
    assert model.body_mass.numpy()[base] == pytest.approx(3.0)
    assert model.body_inv_mass.numpy()[base] == pytest.approx(1 / 3.0)
    mj_base = solver.spec_map.body_mj[0]
    assert solver.mj_models[2].body_mass[mj_base] == pytest.approx(3.0)
    assert solver.mj_models[1].body_mass[mj_base] == pytest.approx(2.0)
    ke = view.get_dof_stiffnesses().numpy()
    view.set_dof_stiffnesses(ke[:1] * 2, indices=[0])
    assert solver.mj_models[0].actuator_biasprm[0, 1] == pytest.approx(-2 * ke[0, 0], rel=1e-6)
    assert solver.mj_models[1].actuator_biasprm[0, 1] == pytest.approx(-ke[0, 0], rel=1e-6)
    limits = view.get_dof_limits().numpy()
    np.testing.assert_allclose(limits[0], [[-np.pi / 2, np.pi / 2]] * 2, atol=1e-6)
    view.set_dof_limits(np.array([[[-0.1, 0.1], [-0.2, 0.2]]]), indices=[3])
    mj_joint = solver.spec_map.dof_mj[model.world_view(0).joint_qd_start.numpy()[1]]
    np.testing.assert_allclose(solver.mj_models[3].jnt_range[mj_joint], [-0.1, 0.1], atol=1e-7)
    np.testing.assert_allclose(solver.mj_models[0].jnt_range[mj_joint], [-np.pi / 2, np.pi / 2], atol=1e-6)
    assert view.shape_names == ["base"]
    view.set_friction_coefficients(np.array([[0.25]]), indices=[1])
    mu = view.get_friction_coefficients().numpy()
    assert mu[1, 0] == pytest.approx(0.25) and mu[0, 0] != pytest.approx(0.25)


def test_rigid_body_view_of_free_bodies():
    sim = Simulation.open(falling_cube(), worlds=3, record=False, device="cpu")
    view = RigidBodyView(sim, "/Cube")
    assert view.count == 3  # one row per world: the worlds share the prim path
    assert view.get_transforms().shape == (3, 7) and view.get_masses().shape == (3,)
    view.set_transforms(np.array([[0.0, 0.0, 3.0, 0.0, 0.0, 0.0, 1.0]]), indices=[1])
    view.set_velocities(np.array([[1.0, 0.0, 0.0, 0.0, 0.0, 0.0]]), indices=[2])
    sim.run(6)  # 0.1 s
    poses = view.get_transforms().numpy()
    assert poses[1, 2] > 2.9 and poses[0, 2] < 1.0
    assert poses[2, 0] == pytest.approx(0.1, abs=2e-3) and abs(poses[0, 0]) < 1e-6


def test_any_array_by_name_and_the_key_value_accessors():
    sim = open_robots()
    view = ArticulationView(sim, ROBOTS)
    np.testing.assert_allclose(view.get_attribute("body_mass").numpy(), view.get_masses().numpy())
    # a user's per-body array, told apart by its length
    sim.model.body_temperature = wp.array(np.arange(3 * N, dtype=np.float32), device="cpu")
    np.testing.assert_allclose(view.get_attribute("body_temperature").numpy(), np.arange(3 * N).reshape(N, 3))
    view.set_attribute("body_temperature", np.full((1, 3), -1.0), indices=[1])
    assert list(sim.model.body_temperature.numpy()[3:6]) == [-1.0, -1.0, -1.0]
    sv = SimulationView(sim)
    assert sv.get_model_attr("body_temperature") is sim.model.body_temperature
    sv.set_state_attr("joint_qd", [1], [0.5])
    assert sv.get_state_attr("joint_qd", [1]).numpy()[0] == pytest.approx(0.5)
    sv.set_model_attr("shape_lubrication", wp.zeros(sim.model.shape_count, dtype=wp.float32, device="cpu"))
    assert sv.get_model_attr("shape_lubrication").shape == (sim.model.shape_count,)
    assert sv.create_articulation_view(ROBOTS).count == N


def test_bad_patterns_and_shapes_say_what_is_wrong():
    sim = open_robots(2)
    with pytest.raises(NewtonUsdError, match="no prim matches '/World/envs/env_\\*/Robo'"):
        ArticulationView(sim, "/World/envs/env_*/Robo")
    view = ArticulationView(sim, ROBOTS)
    with pytest.raises(NewtonUsdError, match="3 rows of values for a view of 2 rows"):
        view.set_dof_positions(np.zeros((3, 2)))
    with pytest.raises(NewtonUsdError, match="row indices must be in"):
        view.set_dof_positions(np.zeros((1, 2)), indices=[5])
    with pytest.raises(NewtonUsdError, match=r"row indices must be in \[0, 2\), got -1\.\.1"):
        view.set_dof_positions(np.zeros((2, 2)), indices=wp.array([-1, 1], dtype=wp.int32, device="cpu"))
    with pytest.raises(NewtonUsdError, match="row indices must be in"):
        view.set_dof_positions(np.zeros((1, 2)), indices=wp.array([2], dtype=wp.int64, device="cpu"))
    with pytest.raises(NewtonUsdError, match="not a rigid body"):
        RigidBodyView(sim, "/World/envs/env_*/Robot")


def test_a_device_write_skips_rows_out_of_range():
    """On a GPU the rows are not read back to be checked: the write's kernel skips a row out of range rather than
    writing out of bounds (the kernel run here on the CPU)."""
    from newton_usd.selection.kernels import scatter_rows  # noqa: PLC0415

    index = wp.array([[0, 1], [2, 3]], dtype=wp.int32, device="cpu")  # 2 rows of 2 scalars
    dst = wp.zeros(4, dtype=wp.float32, device="cpu")
    values = wp.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=wp.float32, device="cpu")
    rows = wp.array([1, 7, -3], dtype=wp.int32, device="cpu")
    value_rows = wp.array([0, 1, 2], dtype=wp.int32, device="cpu")
    wp.launch(scatter_rows, dim=(3, 2), inputs=[values, value_rows, rows, index], outputs=[dst], device="cpu")
    assert dst.numpy().tolist() == [0.0, 0.0, 1.0, 2.0]


def test_a_users_model_array_does_not_rebuild_the_solver():
    sim = open_robots(2)
    solver = sim.solver
    sv = SimulationView(sim)
    sv.set_model_attr("shape_lubrication", wp.zeros(sim.model.shape_count, dtype=wp.float32, device="cpu"))
    sv.set_model_attr("shape_material_mu", np.full(sim.model.shape_count, 0.3, dtype=np.float32))
    assert sim.solver is solver  # taken in place
    assert solver.mj_models[0].geom_friction[:, 0].max() == pytest.approx(0.3)


def test_a_value_the_solver_cannot_take_in_place_rebuilds_a_simulations_solver():
    sim = Simulation.open(falling_cube(), record=False, device="cpu")
    solver = sim.solver
    shapes = SimulationView(sim).get_model_attr("shape_scale").numpy()
    row = sim.model.shape_label.index("/Cube")
    shapes[row] = [0.2, 0.2, 0.2]
    SimulationView(sim).set_model_attr("shape_scale", shapes)
    assert sim.solver is not solver  # a geom size is compiled into MuJoCo's model: a new solver
    geom = sim.solver.spec_map.shape_mj[row]
    np.testing.assert_allclose(sim.solver.mj_model.geom_size[geom], [0.2, 0.2, 0.2], atol=1e-6)
    sim.run(2)
    bare = SimulationView(sim.model, state=sim.state, solver=sim.solver)
    with pytest.raises(NewtonUsdError, match="cannot take shape_scale without a rebuild"):
        bare.set_model_attr("shape_scale", shapes)


def test_jacobians_and_mass_matrices_per_row():
    from newton_usd.kinematics import jacobian, mass_matrix  # noqa: PLC0415

    sim = open_robots(3)
    view = ArticulationView(sim, ROBOTS)
    q = np.array([[0.1, -0.2], [0.3, 0.4], [-0.5, 0.6]], dtype=np.float32)
    view.set_dof_positions(q)
    J = view.get_jacobians().numpy()
    M = view.get_generalized_mass_matrices().numpy()
    assert J.shape == (3, 3, 6, 8) and M.shape == (3, 8, 8)  # 6 root columns, then shoulder and elbow
    model, state = sim.model, sim.state
    full_M = mass_matrix(model, state).numpy()  # world's DOFs: the free root (6), shoulder, elbow
    np.testing.assert_allclose(M, full_M, atol=1e-6)
    for link, name in enumerate(view.body_names):
        full_J = jacobian(model, state, f"/World/envs/env_0/Robot/{name}").numpy()
        np.testing.assert_allclose(J[:, link], full_J, atol=1e-6)
    assert np.abs(J[0, 2, :, 6:] - J[1, 2, :, 6:]).max() > 1e-2  # each row at its world's coordinates


def test_several_matches_in_one_world():
    """Without env_root the environments are one world: a row per matched prim, each with its own elements."""
    sim = Simulation.open(robot_environments(n=3), record=False, device="cpu")
    assert sim.model.num_worlds == 1
    view = ArticulationView(sim, ROBOTS)
    assert view.count == 3 and list(view.worlds) == [0, 0, 0] and view.dof_names == ["shoulder", "elbow"]
    view.set_dof_positions(np.array([[0.2, 0.1]]), indices=[1])
    np.testing.assert_allclose(view.get_dof_positions().numpy(), [[0, 0], [0.2, 0.1], [0, 0]], atol=1e-7)
    J = view.get_jacobians().numpy()
    assert J.shape == (3, 3, 6, 8)
    np.testing.assert_allclose(J[0, 1:, :, 6:], J[2, 1:, :, 6:], atol=1e-6)  # the same pose, 4 m apart
    assert np.abs(J[0, 2, :, 6:] - J[1, 2, :, 6:]).max() > 1e-2
    assert view.get_generalized_mass_matrices().shape == (3, 8, 8)
