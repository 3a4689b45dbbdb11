"""The bridge to Newton (solvers/newton/model_bridge.py) builds the ``newton.Model`` that Newton's own builder
would build from our model's elements, added one by one through Newton's public API.

The bridge assigns bodies, joints and primitive shapes to Newton's ``ModelBuilder`` in bulk (arrays, as Newton's
``replicate`` leaves them, and extended lists); here the same model is replayed through ``add_link``/``add_shape``/
``add_joint`` and every array of the two finalized models is compared: a Newton release whose ``add_link``,
``add_shape`` or ``add_joint`` records something the bulk path does not fails here.
"""

from __future__ import annotations

import math

import newton
import numpy as np
import pytest
import warp as wp

from newton_usd.core import ModelBuilder
from newton_usd.core.builder import JointAxis, Mesh
from newton_usd.core.types import DriveMode, GeoType, JointType
from newton_usd.diagnostics import Diagnostics
from newton_usd.solvers.newton import bridge_model
from newton_usd.solvers.newton import model_bridge as mb
from newton_usd.solvers.newton.articulations import add_articulations

BOX = np.diag([0.02, 0.03, 0.04])


def _model(worlds=2):
    """Every joint type with limits, drives of each mode (one an acceleration drive, one with a target outside
    its limits), effort limits, armature and friction; a free body with its COM off its origin, a kinematic
    body, a shared ground plane; ``worlds`` copies."""
    b = ModelBuilder()
    b.add_shape_plane(-1, label="/Ground")
    free = b.add_body(((0.0, 0.0, 1.0), (0.0, 0.0, 0.0, 1.0)), mass=2.0, com=(0.05, -0.02, 0.0), inertia=BOX,
                      label="/Free")  # fmt: skip
    b.add_shape_box(free, hx=0.1, hy=0.1, hz=0.1, label="/Free/Box")
    # the other primitives, with their own materials, one that does not collide, one with a margin (Newton's gap),
    # and a mesh between them (the bridge adds runs of primitives at once, the rest one by one)
    turned = ((0.0, 0.1, 0.0), (0.0, 0.0, math.sin(0.2), math.cos(0.2)))
    b.add_shape(free, GeoType.ELLIPSOID, turned, (0.05, 0.03, 0.02), mu=0.3, restitution=0.4, label="/Free/Egg")
    b.add_shape_cylinder(free, turned, radius=0.02, half_height=0.06, collision_enabled=False, label="/Free/Rod")
    tetra = Mesh(
        [(0.0, 0.0, 0.0), (0.1, 0.0, 0.0), (0.0, 0.1, 0.0), (0.0, 0.0, 0.1)], [0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3]
    )
    b.add_shape_mesh(free, turned, mesh=tetra, label="/Free/Tetra")
    b.add_shape_sphere(free, radius=0.04, margin=0.01, mu_torsional=0.02, mu_rolling=0.001, label="/Free/Ball")
    b.add_joint_free(free, label="/Free/Joint")
    links = []
    for i in range(5):
        angle = 0.3 * i
        q = (0.0, math.sin(angle / 2), 0.0, math.cos(angle / 2))
        links.append(b.add_body(((0.2 * i, 1.0, 1.0), q), mass=1.0 + i, com=(0.0, 0.0, 0.01 * i),
                                inertia=BOX * (1 + i), label=f"/Chain/L{i}"))  # fmt: skip
        b.add_shape_capsule(links[-1], radius=0.03, half_height=0.1, label=f"/Chain/L{i}/C")
    x = ((0.1, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))
    b.add_joint_revolute(-1, links[0], x, None, axis=(0.0, 2.0, 0.0), limit_lower=-1.0, limit_upper=1.5,
                         target_ke=50.0, target_kd=2.0, target_pos=3.0, effort_limit=20.0, armature=0.01,
                         friction=0.1, label="/Chain/J0")  # fmt: skip
    b.add_joint_prismatic(links[0], links[1], x, None, axis=(0.0, 0.0, 1.0), target_ke=10.0, target_kd=1.0,
                          target_pos=0.05, drive_acceleration=True, label="/Chain/J1")  # fmt: skip
    b.add_joint_ball(links[1], links[2], x, None, label="/Chain/J2")
    b.add_joint_d6(links[2], links[3], x, None, linear_axes=[JointAxis((1.0, 0.0, 0.0), -0.1, 0.1)],
                   angular_axes=[JointAxis((0.0, 0.0, 1.0), target_kd=3.0, target_vel=0.5,
                                           target_mode=DriveMode.VELOCITY),
                                 JointAxis((0.0, 1.0, 0.0), -math.inf, 0.4)],
                   armature=(0.0, 0.02, 0.03), label="/Chain/J3")  # fmt: skip
    b.add_joint_fixed(links[3], links[4], x, None, label="/Chain/J4")
    # two cone-limited ball joints (bridged as D6 joints): an elliptical UsdPhysics cone about Y (twist free; its
    # swing limits about Z and X), a MuJoCo ball range (all three angles limited)
    cones = [b.add_body(((0.2 * i, 2.0, 1.0), (0.0, 0.0, 0.0, 1.0)), mass=1.0, com=(0.0, 0.1, 0.0),
                        inertia=BOX * (1 + i), label=f"/Cone/L{i}") for i in range(2)]  # fmt: skip
    for i, c in enumerate(cones):
        b.add_shape_sphere(c, radius=0.05, label=f"/Cone/L{i}/S")
    cone_y = b.add_joint_ball(-1, cones[0], x, None, label="/Cone/J0")
    ball_range = b.add_joint_ball(cones[0], cones[1], x, None, label="/Cone/J1")
    b.set_mujoco("joint", "joint_cone_limit", cone_y, 0.5)
    b.set_mujoco("joint", "joint_cone_axis", cone_y, 1)
    b.set_mujoco("joint", "joint_cone_swing", cone_y, (0.5, 0.35))
    b.set_mujoco("joint", "joint_cone_limit", ball_range, 0.3)
    lift = b.add_body(((2.0, 0.0, 0.5), (0.0, 0.0, 0.0, 1.0)), mass=1.0, inertia=BOX, label="/Lift", kinematic=True)
    b.add_shape_sphere(lift, radius=0.1, label="/Lift/S")
    b.add_joint_fixed(-1, lift, ((2.0, 0.0, 0.5), (0.0, 0.0, 0.0, 1.0)), None, label="/Lift/Weld")
    b.body_collision_filter_pairs.append((links[0], links[2]))
    if worlds > 1:
        b.replicate(worlds)
    return b.finalize("cpu")


def _replayed(model, limits) -> newton.Model:
    """``model`` through Newton's per-element API (add_link, add_shape, add_joint), as the bridge replayed it
    before it assigned bodies, joints and primitive shapes in bulk."""
    a = mb._host_arrays(model)
    diagnostics = Diagnostics()
    contact = mb.ContactSettings()
    nb = newton.ModelBuilder(gravity=tuple(float(g) for g in model.gravity))
    cones = mb._cone_joints(model, a, diagnostics, "featherstone")
    shape_map = np.full(model.shape_count, -1, dtype=np.int64)
    for s in np.nonzero(a["shape_world"] < 0)[0]:
        shape_map[s] = mb._add_shape(nb, model, a, int(s), contact, diagnostics)
    for w in range(model.num_worlds):
        nb.begin_world(label=f"world_{w}")
        for b in np.nonzero(a["body_world"] == w)[0]:
            nb.add_link(
                xform=wp.transform(*a["body_q"][b].tolist()),
                com=wp.vec3(*a["body_com"][b].tolist()),
                inertia=wp.mat33(*a["body_inertia"][b].ravel().tolist()),
                mass=float(a["body_mass"][b]),
                label=model.body_label[b],
                lock_inertia=True,
                is_kinematic=bool(a["body_kinematic"][b]),
            )
        for s in np.nonzero(a["shape_world"] == w)[0]:
            shape_map[s] = mb._add_shape(nb, model, a, int(s), contact, diagnostics)
        joints = np.nonzero(a["joint_world"] == w)[0]
        for j in joints:
            d0, (n_lin, n_ang) = int(a["joint_qd_start"][j]), (int(x) for x in a["joint_dof_dim"][j])
            dofs = []
            for d in range(d0, d0 + n_lin + n_ang):
                ke, kd = float(a["joint_target_ke"][d]), float(a["joint_target_kd"][d])
                if a["joint_drive_acceleration"][d]:
                    scale = mb._child_inertia_about(a, int(j), d, n_lin)
                    ke, kd = ke * scale, kd * scale
                limited, effort = bool(a["joint_limited"][d]), float(a["joint_effort_limit"][d])
                cfg = newton.ModelBuilder.JointDofConfig(
                    axis=wp.vec3(*a["joint_axis"][d].tolist()),
                    limit_lower=float(a["joint_limit_lower"][d]) if limited else -mb.UNLIMITED,
                    limit_upper=float(a["joint_limit_upper"][d]) if limited else mb.UNLIMITED,
                    target_ke=ke, target_kd=kd, target_qd=float(a["joint_target_vel"][d]),
                    armature=float(a["joint_armature"][d]), friction=float(a["joint_friction"][d]),
                    effort_limit=effort if math.isfinite(effort) and effort < mb.UNLIMITED else 1e6 * mb.UNLIMITED,
                    actuator_mode=newton.JointTargetMode(int(a["joint_target_mode"][d])),
                )  # fmt: skip
                if limits.ke is not None:
                    cfg.limit_ke = limits.ke
                elif int(j) in cones:  # (penalty cone limits scaled by the child's inertia about the axis)
                    inertia = mb._child_inertia_about(a, int(j), d, 0)
                    cfg.limit_ke = inertia * mb.CONE_LIMIT_FREQUENCY**2
                    cfg.limit_kd = 2.0 * inertia * mb.CONE_LIMIT_FREQUENCY
                cfg.target_q = float(a["joint_target_pos"][d])  # (not moved into the limits)
                dofs.append(cfg)
            joint_type = newton.JointType(int(a["joint_type"][j]))
            if int(j) in cones:  # a D6: the ball's DOFs from the first axis on, cyclically; the swings limited
                first, bounds = cones[int(j)]
                dofs = [dofs[(first + k) % 3] for k in range(3)]
                for cfg, bound in zip(dofs, bounds, strict=True):
                    bound = mb.UNLIMITED if bound is None else bound
                    cfg.limit_lower, cfg.limit_upper = -bound, bound
                joint_type = newton.JointType.D6
            nb.add_joint(joint_type, int(a["joint_parent"][j]),
                         int(a["joint_child"][j]), linear_axes=dofs[:n_lin], angular_axes=dofs[n_lin:],
                         parent_xform=wp.transform(*a["joint_X_p"][j].tolist()),
                         child_xform=wp.transform(*a["joint_X_c"][j].tolist()), collision_filter_parent=False,
                         label=model.joint_label[j])  # fmt: skip
        add_articulations(nb, model, a, joints)
        nb.end_world()
    mb._filter_collisions(nb, model, a, shape_map)
    newton_model = nb.finalize(device=model.device)
    for name in ("body_q", "body_qd", "joint_qd"):
        wp.copy(getattr(newton_model, name), getattr(model, name))
    return newton_model


@pytest.mark.parametrize("limits", [mb.JointLimitSettings(ke=2.0e3), mb.JointLimitSettings()])
def test_bridge_builds_what_newtons_per_element_api_builds(limits):
    model = _model()
    bridge = bridge_model(model, Diagnostics(), "featherstone", limits=limits)
    bridged = bridge.newton_model
    reference = _replayed(model, limits)
    assert bridged.joint_count == reference.joint_count == 2 * 9
    assert bridged.joint_dof_count == reference.joint_dof_count
    assert bridged.joint_coord_count == reference.joint_coord_count == model.joint_coord_count - 2 * 2
    compared = 0
    for name, theirs in vars(reference).items():
        if not isinstance(theirs, wp.array) or name in ("shape_source_ptr", "joint_q"):
            continue
        ours = getattr(bridged, name).numpy()
        theirs = theirs.numpy()
        assert ours.shape == theirs.shape, name
        if theirs.dtype.kind == "f":  # (axes: normalized in numpy here, by wp.normalize there)
            np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-7, err_msg=name)
        else:
            np.testing.assert_array_equal(ours, theirs, err_msg=name)
        compared += 1
    assert compared > 80
    for name in ("body_label", "joint_label", "shape_label", "articulation_label", "body_shapes"):
        assert getattr(bridged, name) == getattr(reference, name), name
    assert bridged.articulation_count == reference.articulation_count == 2 * 4
    # joint_q: our initial coordinates where they agree (a cone joint's Euler angles: the exchange's
    # initial_state), at Newton's coordinate starts
    ours_q, newton_q = model.joint_q.numpy(), bridged.joint_q.numpy()
    q_start, nq_start = model.joint_q_start.numpy(), bridged.joint_q_start.numpy()
    for j in range(model.joint_count):
        n = q_start[j + 1] - q_start[j]
        if bridge.cone_first_axis[j] < 0:
            np.testing.assert_array_equal(newton_q[nq_start[j] : nq_start[j] + n], ours_q[q_start[j] : q_start[j] + n])


def test_bridged_values_are_the_models():
    """Spot checks against our own arrays (not only against Newton's builder)."""
    model = _model(worlds=1)
    nm = bridge_model(model, Diagnostics(), "featherstone").newton_model
    np.testing.assert_array_equal(nm.body_mass.numpy(), model.body_mass.numpy())
    np.testing.assert_array_equal(nm.body_inertia.numpy(), model.body_inertia.numpy())
    cone = model.joint_label.index("/Cone/J0")
    shift = np.zeros(model.joint_count, dtype=np.int32)  # (each cone joint's coordinates: 3 Euler angles, not 4)
    shift[cone + 1], shift[cone + 2 :] = 1, 2
    q_start = model.joint_q_start.numpy()[:-1]
    np.testing.assert_array_equal(nm.joint_q_start.numpy()[: model.joint_count], q_start - shift)
    np.testing.assert_array_equal(nm.joint_qd_start.numpy(), model.joint_qd_start.numpy())
    types = model.joint_type.numpy()
    j = int(np.nonzero(types == int(JointType.REVOLUTE))[0][0])
    d = int(model.joint_qd_start.numpy()[j])
    np.testing.assert_allclose(nm.joint_axis.numpy()[d], (0.0, 1.0, 0.0))  # (authored (0, 2, 0))
    assert nm.joint_target_q.numpy()[int(model.joint_q_start.numpy()[j])] == 3.0  # outside its limits, kept
    assert nm.joint_effort_limit.numpy()[d] == 20.0
    ball = int(np.nonzero(types == int(JointType.BALL))[0][0])
    q0 = int(model.joint_q_start.numpy()[ball])
    np.testing.assert_array_equal(nm.joint_target_q.numpy()[q0 : q0 + 4], (0.0, 0.0, 0.0, 1.0))
    # the cone about Y: a D6 whose axes are Z, X (the swings, +-0.5 and +-0.35) and Y (the twist, free); the ball
    # range: X, Y, Z all +-0.3
    types = nm.joint_type.numpy()
    assert types[cone] == types[cone + 1] == int(newton.JointType.D6)
    d = int(model.joint_qd_start.numpy()[cone])
    np.testing.assert_allclose(nm.joint_axis.numpy()[d : d + 6], np.eye(3)[[2, 0, 1, 0, 1, 2]], atol=1e-7)
    np.testing.assert_allclose(nm.joint_limit_upper.numpy()[d : d + 6], [0.5, 0.35, mb.UNLIMITED, 0.3, 0.3, 0.3])
    np.testing.assert_allclose(nm.joint_limit_lower.numpy()[d : d + 6], [-0.5, -0.35, -mb.UNLIMITED, -0.3, -0.3, -0.3])
    flags = nm.body_flags.numpy()
    assert flags[model.body_label.index("/Lift")] == int(newton.BodyFlags.KINEMATIC)
    assert flags[model.body_label.index("/Free")] == int(newton.BodyFlags.DYNAMIC)


def _spinning_free_body(cone=False):
    """A free body with its COM off its origin, spinning and moving (its joint_qd differs between our
    convention and Newton's), beside a pendulum (``cone``: hung from a cone-limited ball joint, whose joint_q
    differs too)."""
    b = ModelBuilder()
    body = b.add_body(((0.0, 0.0, 2.0), (0.0, 0.0, 0.0, 1.0)), mass=2.0, com=(0.1, 0.05, 0.0), inertia=BOX,
                      velocity=(0.3, 0.0, 1.0, 0.5, 2.0, -1.0), label="/Spinner")  # fmt: skip
    b.add_joint_free(body, label="/Spinner/Joint")
    bob = b.add_body(((0.0, 1.0, 1.0), (0.0, 0.0, 0.0, 1.0)), mass=1.0, inertia=BOX, label="/Bob")
    frames = ((0.0, 1.0, 1.5), (0.0, 0.0, 0.0, 1.0)), ((0.0, 0.0, 0.5), (0.0, 0.0, 0.0, 1.0))
    if cone:
        hinge = b.add_joint_ball(-1, bob, *frames, label="/Bob/Hinge")
        b.set_mujoco("joint", "joint_cone_limit", hinge, 0.4)
        b.set_mujoco("joint", "joint_cone_axis", hinge, 2)
        b.joint_qd[hinge] = np.array([1.5, -0.7, 2.0])  # (swinging, and twisting about the cone's axis)
    else:
        b.add_joint_revolute(-1, bob, *frames, label="/Bob/Hinge")
    return b.finalize("cpu")


@pytest.mark.parametrize("cone", [False, True])
def test_joint_states_are_converted_when_read_and_agree_with_converting_every_step(cone):
    from newton_usd.solvers.newton import SolverFeatherstone

    model = _spinning_free_body(cone)
    lazy, eager = SolverFeatherstone(model), SolverFeatherstone(model)
    assert lazy.exchange._convert_free and lazy.exchange._convert_q == cone
    dt = 1.0 / 240.0
    # Four states in turn: a State's pending velocities survive until its buffer is needed again
    ours, theirs = [model.state() for _ in range(4)], [model.state() for _ in range(4)]
    seen = {}
    for i in range(24):
        a, b = i % 4, (i + 1) % 4
        lazy.step(ours[a], ours[b], None, None, dt)
        eager.step(theirs[a], theirs[b], None, None, dt)
        seen[i] = theirs[b].joint_qd.numpy().copy()  # (read at once: converted after every step)
        theirs[b].joint_q.numpy()
        if i == 21:  # a State two steps old, read late
            np.testing.assert_allclose(ours[(i - 1) % 4].joint_qd.numpy(), seen[i - 2], rtol=1e-5, atol=1e-6)
    final = ours[24 % 4]
    assert final._pending is not None  # (nothing read it yet)
    np.testing.assert_allclose(final.joint_qd.numpy(), seen[23], rtol=1e-5, atol=1e-6)
    assert final._pending is None
    np.testing.assert_allclose(final.joint_q.numpy(), theirs[24 % 4].joint_q.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(final.body_q.numpy(), theirs[24 % 4].body_q.numpy(), rtol=1e-5, atol=1e-6)
    # our convention: the free joint's linear velocity is its origin's (the body's own body_qd is its COM's)
    qd, body_qd = final.joint_qd.numpy(), final.body_qd.numpy()
    assert not np.allclose(qd[:3], body_qd[0, :3], atol=1e-3)
    np.testing.assert_allclose(qd[3:6], body_qd[0, 3:], rtol=1e-5, atol=1e-6)


def test_featherstone_reads_position_targets_of_newtons_length_on_a_floating_chain_without_drives():
    """Two floating boxes joined by an undriven, limited revolute joint (kamino's joint test stages): Newton's
    Featherstone reads every joint's position target at its coordinate index (times a zero gain), so the Control it
    gets holds one per coordinate (8: the free root's 7 and the hinge's 1), not ours, one per DOF (7): a read past
    the end of ours was garbage times zero, NaN at the first frame in about half the runs."""
    from newton_usd.solvers.newton import SolverFeatherstone

    from stages import add_box, add_hinge, new_stage

    stage = new_stage()
    add_box(stage, "/A", 0.1, (0, 0, 1))
    add_box(stage, "/B", 0.1, (0.2, 0, 1))
    add_hinge(stage, "/Hinge", "/A", "/B", (0.1, 0, 0), (-0.1, 0, 0), limits=(-90, 90))
    b = ModelBuilder()
    b.add_usd(stage)
    model = b.finalize("cpu")
    solver = SolverFeatherstone(model)
    nm = solver.newton_model
    assert (nm.joint_coord_count, nm.joint_dof_count) == (8, 7)
    s0, s1, control = model.state(), model.state(), model.control()
    _, _, newton_control = solver.exchange.inputs(s0, s1, control)
    assert newton_control.joint_target_q.shape[0] == nm.joint_coord_count
    for _ in range(20):
        solver.step(s0, s1, control, None, 1.0 / 480.0)
        s0, s1 = s1, s0
    assert np.isfinite(s0.body_q.numpy()).all()
