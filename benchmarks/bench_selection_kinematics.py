"""Views and kinematics for many worlds: our Warp kernels against indexing the raw arrays and MuJoCo's C functions.

    python benchmarks/bench_selection_kinematics.py [--worlds 4096] [--repeats 5] [--device cpu] [--humanoid XML]

Models: a 6-DOF arm (six hinges, built in code) and MuJoCo-Warp's test humanoid (free root and 21 hinges, through
``add_mjcf``), each replicated into ``--worlds`` worlds.

View rows (``ArticulationView(model, pattern, state=, control=)``): ``get_dof_positions`` (a ``(worlds, dofs)``
Warp array) against the raw array indexed in numpy with a precomputed index (``joint_q.numpy()[index]``, what one
writes without views; zero-copy on the CPU), and ``set_dof_positions`` of every other world against
``joint_q.numpy()[index[rows]] = values``. Kinematics (every world at once, one launch each): ``eval_fk``,
``jacobian`` of the last link, ``mass_matrix``, against MuJoCo's per-world C functions called in a Python loop over
the worlds on the compiled model (``solver.mj_model``): qpos set and ``mj_kinematics``; then ``mj_comPos`` and
``mj_jacBody``; then ``mj_comPos``, ``mj_crb`` and ``mj_fullM``. Times are the best of ``--repeats``, per call for
all worlds; ratio = ours / baseline (below 1: ours is faster).
"""

from __future__ import annotations

import argparse
import os
import sysconfig
import time

import mujoco
import numpy as np
import warp as wp


def arm_model(worlds, device):
    from newton_usd import ModelBuilder  # noqa: PLC0415

    b = ModelBuilder()
    axes = [(0, 0, 1), (0, 1, 0), (0, 1, 0), (1, 0, 0), (0, 1, 0), (1, 0, 0)]
    parent, z = -1, 0.0
    for k, axis in enumerate(axes):
        z += 0.1 if k in (0, 4, 5) else 0.3
        body = b.add_body(((0, 0, z), (0, 0, 0, 1)), mass=1.0, com=(0, 0, 0.05), inertia=np.eye(3) * 0.01,
                          label=f"/Arm/link{k}")  # fmt: skip
        offset = (0, 0, z) if parent < 0 else (0, 0, 0.1 if k in (4, 5) else 0.3)
        b.add_joint_revolute(parent, body, (offset, (0, 0, 0, 1)), axis=axis, label=f"/Arm/j{k}")
        parent = body
    b.replicate(worlds)
    return b.finalize(device), "/Arm", "/Arm/link5"


def humanoid_model(xml, worlds, device):
    from newton_usd import ModelBuilder  # noqa: PLC0415

    b = ModelBuilder()
    b.add_mjcf(xml)
    # MJCF labels are MuJoCo names: put them under one prim path, as a converted stage would have them
    b.body_label = [f"/Humanoid/{label}" for label in b.body_label]
    b.joint_label = [f"/Humanoid/{label}" for label in b.joint_label]
    b.replicate(worlds)
    model = b.finalize(device)
    return model, "/Humanoid", model.body_label[model.body_count // worlds - 1]


def best(fn, repeats, device):
    fn()  # (kernels loaded)
    times = []
    for _ in range(repeats):
        wp.synchronize_device(device)
        t = time.perf_counter()
        fn()
        wp.synchronize_device(device)
        times.append(time.perf_counter() - t)
    return min(times)


def run(name, model, pattern, last_link, repeats):
    from newton_usd.kinematics import eval_fk, jacobian, mass_matrix  # noqa: PLC0415
    from newton_usd.selection import ArticulationView  # noqa: PLC0415
    from newton_usd.solvers import SolverMuJoCo  # noqa: PLC0415

    device = model.device
    W = model.num_worlds
    state, control = model.state(), model.control()
    rng = np.random.default_rng(0)
    q = state.joint_q.numpy()
    hinges = model.joint_type.numpy() == 1
    qs = model.joint_q_start.numpy()
    q[qs[:-1][hinges]] = rng.uniform(-0.5, 0.5, hinges.sum())
    state.joint_q.assign(q)
    view = ArticulationView(model, pattern, state=state, control=control)
    rows = []

    # ------------------------------------------------------------------ views
    index = view.columns("coord")  # (worlds, dofs): the raw array's index of each view entry
    values = np.full((W // 2, index.shape[1]), 0.1, dtype=np.float32)
    half = np.arange(0, W, 2)
    half_wp = wp.array(half.astype(np.int32), device=device)
    values_wp = wp.array(values, device=device)

    def raw_read():
        return state.joint_q.numpy()[index]

    def raw_write():
        a = state.joint_q.numpy()
        a[index[half]] = values
        if not device.is_cpu:
            state.joint_q.assign(a)

    rows.append(("get_dof_positions", best(view.get_dof_positions, repeats, device), best(raw_read, repeats, device),
                 "numpy index"))  # fmt: skip
    rows.append(("set_dof_positions (half)", best(lambda: view.set_dof_positions(values_wp, half_wp), repeats, device),
                 best(raw_write, repeats, device), "numpy index"))  # fmt: skip

    # ------------------------------------------------------------------ kinematics
    solver = SolverMuJoCo(model.world_view(0) if W > 1 else model, backend="cpu")
    m = solver.mj_model
    d = mujoco.MjData(m)
    qpos = np.zeros((W, m.nq))
    solver.map.to_mujoco(q.astype(np.float64).reshape(W, -1), np.zeros((W, model.joint_dof_count // W)), qpos,
                         np.zeros((W, m.nv)))  # fmt: skip
    body = solver.spec_map.body_mj[model.body_label.index(last_link) % (model.body_count // W)]
    jacp, jacr, full = np.zeros((3, m.nv)), np.zeros((3, m.nv)), np.zeros((m.nv, m.nv))

    def mj_fk():
        for w in range(W):
            d.qpos[:] = qpos[w]
            mujoco.mj_kinematics(m, d)

    def mj_jacobian():
        for w in range(W):
            d.qpos[:] = qpos[w]
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
            mujoco.mj_jacBody(m, d, jacp, jacr, body)

    def mj_mass():
        for w in range(W):
            d.qpos[:] = qpos[w]
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
            mujoco.mj_crb(m, d)
            mujoco.mj_fullM(m, d, full)

    out = wp.empty(model.body_count, dtype=wp.transform, device=device)
    for op, ours, base, what in (
        ("eval_fk", lambda: eval_fk(model, state, body_q=out), mj_fk, "mj_kinematics loop"),
        ("jacobian (last link)", lambda: jacobian(model, state, last_link), mj_jacobian, "+ mj_comPos, mj_jacBody"),
        ("mass_matrix", lambda: mass_matrix(model, state), mj_mass, "+ mj_comPos, mj_crb, mj_fullM"),
    ):
        rows.append((op, best(ours, repeats, device), best(base, repeats, device), what))
    print(f"\n{name}: {W} worlds, {model.joint_dof_count // W} DOFs and {model.body_count // W} bodies per world, "
          f"device {device}")  # fmt: skip
    print(f"{'operation':28s} {'ours (ms)':>10s} {'baseline (ms)':>14s} {'ratio':>7s}  baseline")
    for op, ours, base, what in rows:
        print(f"{op:28s} {ours * 1e3:10.3f} {base * 1e3:14.3f} {ours / base:7.2f}  {what}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worlds", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--humanoid", default=os.path.join(sysconfig.get_paths()["purelib"],
                                                           "mujoco_warp/test_data/humanoid/humanoid.xml"))  # fmt: skip
    args = parser.parse_args()
    wp.config.quiet = True
    wp.init()
    run("6-DOF arm", *arm_model(args.worlds, args.device), args.repeats)
    if os.path.isfile(args.humanoid):
        run("humanoid", *humanoid_model(args.humanoid, args.worlds, args.device), args.repeats)
    else:
        print(f"\n(no humanoid: {args.humanoid} not found)")


if __name__ == "__main__":
    main()
