"""SolverMuJoCo's cpu state exchange: a step's output State is pending and converted when read (see
``newton_usd/solvers/mujoco/exchange.py``). Whatever a user does with States and Controls, what they read
and what gets simulated are what they were when every step wrote all four arrays: the reference here is
a State-like object the solver cannot leave pending, which it writes at once (the old path)."""

import copy

import numpy as np
import pytest
import warp as wp

from newton_usd import ModelBuilder
from newton_usd.solvers import SolverMuJoCo

from conftest import SAMPLES

NAMES = ("joint_q", "joint_qd", "body_q", "body_qd")
DT = 0.002

# A hinge, a ball joint in a rotated frame, a free box (given a tumble) and a mocap (kinematic) body.
ARM = """<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
    <body name="arm" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      <body name="forearm" pos="0.3 0 0" quat="0.9 0.1 0.3 0.2">
        <joint name="elbow" type="ball"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      </body>
    </body>
    <body name="box" pos="1 0 1.5" euler="30 40 10">
      <freejoint/>
      <geom type="box" size="0.1 0.1 0.1"/>
    </body>
    <body name="target" mocap="true" pos="0 1 0.5">
      <geom type="sphere" size="0.05" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <actuator><motor joint="shoulder" gear="1"/></actuator>
</mujoco>"""
SPIN = [0.5, 0.0, 0.0, 0.0, 0.0, 0.3, 0.0, 0.0, 2.0, 9.0, -5.0, 7.0]  # joint_qd per world; W worlds: repeated


def arm_model(worlds=1):
    b = ModelBuilder()
    b.add_mjcf(ARM)
    if worlds > 1:
        b.replicate(worlds)
    model = b.finalize("cpu")
    if worlds > 1:  # different masses per world: every world gets its own MjModel
        mass = model.body_mass.numpy().reshape(worlds, -1)
        mass[:, 2] *= np.arange(1, worlds + 1)
        model.body_mass.assign(mass.reshape(-1))
    return model


class Plain:
    """A State-like object (not a State): the solver writes its arrays at every step."""


def plain(model):
    s, p = model.state(), Plain()
    for name in NAMES + ("body_f",):
        setattr(p, name, wp.clone(getattr(s, name)))
    return p


def start(model, state):
    """The initial state with a tumble and some swing, different per world."""
    qd = np.resize(np.array(SPIN, dtype=np.float32), model.joint_dof_count)
    qd *= np.repeat(np.arange(1, model.num_worlds + 1), model.joint_dof_count // model.num_worlds)
    state.joint_qd.assign(qd)
    return state


def stepped(model, steps):
    """``(solver, latest output, the other state, control)`` after ``steps`` ping-pong steps from start()."""
    solver = SolverMuJoCo(model, backend="cpu")
    s0, s1, control = start(model, model.state()), model.state(), model.control()
    for _ in range(steps):
        solver.step(s0, s1, control, None, DT)
        s0, s1 = s1, s0
    return solver, s0, s1, control


def values(state):
    return {name: getattr(state, name).numpy().copy() for name in NAMES}


def reference(model, steps, edit=None, control=None):
    """Every step's output as the solver writes it at once; ``edit(k, state, control)`` before step k."""
    solver = SolverMuJoCo(model, backend="cpu")
    a, b = start(model, plain(model)), plain(model)
    control = control or model.control()
    out = []
    for k in range(steps):
        if edit is not None:
            edit(k, a, control)
        solver.step(a, b, control, None, DT)
        a, b = b, a
        out.append(values(a))
    return out


def assert_same(got, expected):
    for name in NAMES:
        np.testing.assert_array_equal(got[name], expected[name], err_msg=name)


# ------------------------------------------------------------------ reading
def test_pending_states_read_as_if_every_step_wrote_them():
    """Ping-pong States, nothing read while stepping: afterwards the last output (MuJoCo still holds it)
    and the one before (copied when MuJoCo moved on; its body state recomputed from the copy) read exactly
    what the solver writing at every step wrote; so does a run reading every step."""
    model = arm_model()
    ref = reference(model, 40)
    solver, s0, s1, control = stepped(model, 40)
    assert s0._pending is not None and s0._pending.live and not s1._pending.live
    assert_same(values(s1), ref[-2])
    assert_same(values(s0), ref[-1])
    assert np.abs(ref[-1]["joint_qd"]).max() > 1.0 and np.abs(ref[-1]["body_qd"]).max() > 1.0  # moving
    reading = SolverMuJoCo(model, backend="cpu")
    s0, s1 = start(model, model.state()), model.state()
    for k in range(40):
        reading.step(s0, s1, control, None, DT)
        s0, s1 = s1, s0
        assert_same(values(s0), ref[k])


def test_every_output_keeps_its_values_after_any_number_of_steps():
    """A chain of States (each step's output a new one), all read only at the end: each holds its step's
    values, the input of the first still the initial state."""
    model = arm_model()
    ref = reference(model, 12)
    solver = SolverMuJoCo(model, backend="cpu")
    chain = [start(model, model.state())] + [model.state() for _ in range(12)]
    initial = values(chain[0])
    control = model.control()
    for k in range(12):
        solver.step(chain[k], chain[k + 1], control, None, DT)
    assert_same(values(chain[0]), initial)
    for k in range(12):
        assert_same(values(chain[k + 1]), ref[k])


def test_several_worlds_read_as_if_every_step_wrote_them():
    model = arm_model(worlds=3)
    ref = reference(model, 30)
    solver = SolverMuJoCo(model, backend="cpu")
    assert solver.mj_batch is not None and len({id(m) for m in solver.mj_models}) == 3
    s0, s1, control = start(model, model.state()), model.state(), model.control()
    for _ in range(30):
        solver.step(s0, s1, control, None, DT)
        s0, s1 = s1, s0
    assert_same(values(s1), ref[-2])
    assert_same(values(s0), ref[-1])
    per_world = ref[-1]["joint_qd"].reshape(3, -1)
    assert not np.allclose(per_world[0], per_world[2])  # the worlds differ


# ------------------------------------------------------------------ arrays held and edited
def test_arrays_held_across_steps_stay_current():
    """Arrays obtained before stepping and kept (a wp.array, a numpy view of one, a Warp slice) hold each
    step's values without being read through the State again."""
    model = arm_model()
    ref = reference(model, 21)
    solver = SolverMuJoCo(model, backend="cpu")
    s0, s1, control = start(model, model.state()), model.state(), model.control()
    q1 = s1.joint_q  # a wp.array
    body_q0 = s0.body_q.numpy()  # a numpy view of one (CPU arrays share their memory)
    qd1_slice = s1.joint_qd[1:4]  # a Warp slice: it keeps the array alive
    for k in range(21):
        solver.step(s0, s1, control, None, DT)
        s0, s1 = s1, s0
        out = q1 if k % 2 == 0 else None  # s1 was this step's output on even steps
        if out is not None:
            np.testing.assert_array_equal(q1.numpy(), ref[k]["joint_q"])
            np.testing.assert_array_equal(qd1_slice.numpy(), ref[k]["joint_qd"][1:4])
        else:
            np.testing.assert_array_equal(body_q0, ref[k]["body_q"])


@pytest.mark.parametrize(
    "how",
    ["held wp.array", "held numpy view", "numpy view after the step", "assign", "wp.copy", "joint_qd only"],
)
def test_arrays_edited_in_place_are_pushed(how):
    """Edits of a pending State's arrays between steps go into MuJoCo as the user left them, through an
    array obtained before stepping or after, through numpy, assign or wp.copy: the run goes on exactly as
    the run whose solver wrote every step and saw the same edit."""
    model = arm_model()
    at = 15  # the edit, before step 15 (its input is step 14's output)

    def change(q, qd):
        q[0] += 0.3
        qd[:] = qd * 0.5

    def edit_reference(k, state, control):
        if k == at:
            q, qd = state.joint_q.numpy(), state.joint_qd.numpy()
            if how == "joint_qd only":
                q = q.copy()
            change(q, qd)

    ref = reference(model, 25, edit_reference)
    solver = SolverMuJoCo(model, backend="cpu")
    s0, s1, control = start(model, model.state()), model.state(), model.control()
    names = {id(s0): "s0", id(s1): "s1"}
    if how == "held wp.array":  # (else nothing holds the arrays: an edit is found because it was read)
        held = {"s0": (s0.joint_q, s0.joint_qd), "s1": (s1.joint_q, s1.joint_qd)}
    elif how == "held numpy view":
        views = {"s0": (s0.joint_q.numpy(), s0.joint_qd.numpy()), "s1": (s1.joint_q.numpy(), s1.joint_qd.numpy())}
    for k in range(25):
        if k == at:
            which = names[id(s0)]
            if how == "held wp.array":
                change(held[which][0].numpy(), held[which][1].numpy())
            elif how == "held numpy view":
                change(*views[which])
            else:
                q, qd = s0.joint_q.numpy().copy(), s0.joint_qd.numpy().copy()
                change(q, qd)
                if how == "numpy view after the step":
                    s0.joint_q.numpy()[:], s0.joint_qd.numpy()[:] = q, qd
                elif how == "assign":
                    s0.joint_q.assign(q)
                    s0.joint_qd.assign(qd)
                elif how == "wp.copy":
                    wp.copy(s0.joint_q, wp.array(q, dtype=wp.float32, device="cpu"))
                    wp.copy(s0.joint_qd, wp.array(qd, dtype=wp.float32, device="cpu"))
                else:  # joint_qd only
                    s0.joint_qd.numpy()[:] = qd
        solver.step(s0, s1, control, None, DT)
        s0, s1 = s1, s0
    assert_same(values(s1), ref[-2])  # (read only now: nothing but the edit touched the arrays)
    assert_same(values(s0), ref[-1])
    assert np.abs(ref[-1]["joint_q"] - reference(model, 25)[-1]["joint_q"]).max() > 1e-3  # the edit mattered


def test_setting_an_array_of_a_pending_state_keeps_the_others_and_pushes_it():
    model = arm_model()
    ref = reference(model, 10)
    solver, s0, s1, control = stepped(model, 10)
    new_q = ref[-1]["joint_q"].copy()
    new_q[0] = 0.7
    s0.joint_q = wp.array(new_q, dtype=wp.float32, device="cpu")
    assert s0._pending is None
    for name in ("joint_qd", "body_q", "body_qd"):
        np.testing.assert_array_equal(getattr(s0, name).numpy(), ref[-1][name])
    solver.step(s0, s1, control, None, DT)
    assert abs(s1.joint_q.numpy()[0] - 0.7) < 0.01


def test_copies_of_a_pending_state_hold_its_values():
    model = arm_model()
    ref = reference(model, 6)
    solver, s0, s1, control = stepped(model, 6)
    shallow = copy.copy(s1)
    assert s1._pending is None and shallow._pending is None
    assert_same(values(shallow), ref[-2])
    assert_same(values(s1), ref[-2])


def test_kinematic_body_moved_through_a_held_body_q_view():
    """Writing a kinematic (mocap) body's pose into a pending State's body_q, through a numpy view kept from
    before stepping, moves MuJoCo's mocap body at the next step (and only that)."""
    model = arm_model()
    solver = SolverMuJoCo(model, backend="cpu")
    s0, s1, control = start(model, model.state()), model.state(), model.control()
    views = {id(s0): s0.body_q.numpy(), id(s1): s1.body_q.numpy()}
    for _ in range(5):
        solver.step(s0, s1, control, None, DT)
        s0, s1 = s1, s0
    qd_before = s0.joint_qd.numpy().copy()
    views[id(s0)][3, :3] = (0.2, 0.4, 0.6)
    solver.step(s0, s1, control, None, DT)
    np.testing.assert_allclose(solver.mj_data.mocap_pos[0], (0.2, 0.4, 0.6))
    np.testing.assert_allclose(s1.body_q.numpy()[3, :3], (0.2, 0.4, 0.6), atol=1e-7)
    assert np.abs(s1.joint_qd.numpy() - qd_before).max() < 0.1  # the rest went on as before


def test_a_state_without_an_array_has_no_such_attribute():
    from newton_usd.core.model import State

    s = State()
    assert not hasattr(s, "joint_q")
    with pytest.raises(AttributeError, match="joint_q"):
        s.joint_q  # noqa: B018
    s.joint_q = wp.zeros(3, dtype=wp.float32, device="cpu")
    assert s.joint_q.shape == (3,)
    del s.joint_q
    assert not hasattr(s, "joint_q")


# ------------------------------------------------------------------ which state is stepped from
def test_a_fresh_state_or_another_solvers_state_is_pushed():
    model = arm_model()
    ref = reference(model, 8)
    solver, s0, s1, control = stepped(model, 20)
    # A fresh state: the run starts again from it, as a new solver's first step (but for rounding: MuJoCo's
    # data holds more than the state, e.g. its warm start).
    solver.step(start(model, model.state()), s1, control, None, DT)
    for name in NAMES:
        np.testing.assert_allclose(getattr(s1, name).numpy(), ref[0][name], atol=1e-6, err_msg=name)
    assert np.abs(s0.joint_q.numpy() - ref[0]["joint_q"]).max() > 0.01  # (where it would have gone on)
    # Another solver's pending output goes into this one as the values it reads.
    other = SolverMuJoCo(model, backend="cpu")
    a, b = start(model, model.state()), model.state()
    for _ in range(7):
        other.step(a, b, control, None, DT)
        a, b = b, a
    mine = model.state()
    solver.step(a, mine, control, None, DT)
    copy_in, expected = plain(model), plain(model)
    for name in ("joint_q", "joint_qd", "body_q"):
        getattr(copy_in, name).assign(getattr(a, name).numpy())
    SolverMuJoCo(model, backend="cpu").step(copy_in, expected, control, None, DT)
    assert_same(values(mine), values(expected))
    other.step(a, b, control, None, DT)  # the other solver still holds it: it goes on as if nobody read it
    assert_same(values(b), ref[7])


def test_stepping_again_from_an_older_state_starts_from_it_exactly():
    """Branching: two steps from the same (pending) State give the same output, in place (one State as
    input and output) the run is the ping-pong run."""
    model = arm_model()
    ref = reference(model, 10)
    solver, s0, s1, control = stepped(model, 8)
    branch_a, branch_b = model.state(), model.state()
    solver.step(s0, branch_a, control, None, DT)
    solver.step(s0, branch_b, control, None, DT)  # s0 copied back into MuJoCo, exactly
    assert_same(values(branch_a), ref[8])
    assert_same(values(branch_b), ref[8])
    in_place = SolverMuJoCo(model, backend="cpu")
    s = start(model, model.state())
    for k in range(10):
        in_place.step(s, s, control, None, DT)
        assert_same(values(s), ref[k])


def test_one_world_steps_as_mj_step_bit_for_bit():
    import mujoco

    model = arm_model()
    solver = SolverMuJoCo(model, backend="cpu")
    s0, s1, control = start(model, model.state()), model.state(), model.control()
    solver.step(s0, s1, control, None, DT)
    native = mujoco.MjData(solver.mj_model)
    native.qpos[:], native.qvel[:] = solver.mj_data.qpos, solver.mj_data.qvel
    for _ in range(400):  # the box lands: contacts
        solver.step(s1, s0, control, None, DT)
        s0, s1 = s1, s0
        mujoco.mj_step(solver.mj_model, native)
    np.testing.assert_array_equal(solver.mj_data.qpos, native.qpos)
    np.testing.assert_array_equal(solver.mj_data.qvel, native.qvel)
    assert solver.mj_data.ncon > 0


def test_update_parameters_keeps_what_pending_states_read():
    """A body's COM moves (update_parameters) while older States are pending: they read the body velocities
    (the velocity of each body's COM) of the model they were stepped with."""
    model = arm_model()
    ref = reference(model, 10)
    solver, s0, s1, control = stepped(model, 10)
    com = model.body_com.numpy()
    com[0] += (0.0, 0.0, 0.05)  # (the arm: MuJoCo lets a body whose COM is off its frame move it)
    model.body_com.assign(com)
    assert solver.update_parameters(model, {"body_com"}) == set()
    assert_same(values(s1), ref[-2])
    assert_same(values(s0), ref[-1])
    solver.step(s0, s1, control, None, DT)
    assert np.abs(values(s1)["body_qd"][0] - ref[-1]["body_qd"][0]).max() > 1e-3  # (the COM moved)


# ------------------------------------------------------------------ controls
def driven_pendulum():
    b = ModelBuilder()
    b.add_usd(str(SAMPLES / "pendulum.usda"))
    return b.finalize("cpu")


def run_controls(model, steps, edit):
    """joint_q after each step; ``edit(k, control)`` before step k may change the Control in place or
    return a new one."""
    solver = SolverMuJoCo(model, backend="cpu")
    s0, s1, control = model.state(), model.state(), model.control()
    out = []
    for k in range(steps):
        control = edit(k, control) or control
        solver.step(s0, s1, control, None, DT)
        s0, s1 = s1, s0
        out.append(s0.joint_q.numpy().copy())
    return np.array(out)


def _new_control(model, control, name, value, index=0):
    """A new Control holding ``control``'s values with ``name[index] = value``."""
    new = model.control()
    for n in ("joint_target_pos", "joint_target_vel", "joint_f"):
        getattr(new, n).assign(getattr(control, n).numpy())
    new.mujoco.ctrl.assign(control.mujoco.ctrl.numpy())
    array = new.mujoco.ctrl if name == "ctrl" else getattr(new, name)
    v = array.numpy().copy()
    v[index] = value
    array.assign(v)
    return new


@pytest.mark.parametrize(
    "model_of,name,value",
    [(driven_pendulum, "joint_target_pos", 0.2), (driven_pendulum, "joint_f", 3.0), (arm_model, "ctrl", 2.5)],
)
def test_controls_edited_in_place_are_pushed(model_of, name, value):
    """A drive target, a joint force or an MjcActuator control written in place, through a numpy view
    kept from before the run, reaches MuJoCo at the next step: the run is the one given a new Control with
    those values; and back to the old value, the run follows that too."""
    model = model_of()
    held = {}

    def in_place(k, control):
        if k == 0:
            held["view"] = (control.mujoco.ctrl if name == "ctrl" else getattr(control, name)).numpy()
            held["old"] = float(held["view"][0])
        if k == 20:
            held["view"][0] = value
        if k == 40:
            held["view"][0] = held["old"]

    def new_objects(k, control):
        if k in (20, 40):
            return _new_control(model, control, name, value if k == 20 else held["old"])

    edited = run_controls(model, 60, in_place)
    expected = run_controls(model, 60, new_objects)
    np.testing.assert_array_equal(edited, expected)
    unchanged = run_controls(model, 60, lambda k, c: None)
    assert np.abs(unchanged[25:] - expected[25:]).max() > 1e-6  # the edit mattered


def test_a_replaced_control_array_is_pushed():
    model = driven_pendulum()

    def replace(k, control):
        if k == 10:
            control.joint_target_pos = wp.array([0.1], dtype=wp.float32, device="cpu")

    def new_objects(k, control):
        if k == 10:
            return _new_control(model, control, "joint_target_pos", 0.1)

    np.testing.assert_array_equal(run_controls(model, 30, replace), run_controls(model, 30, new_objects))


def test_new_drive_gains_change_the_controls_of_an_unchanged_control():
    """update_parameters with new gains: the next step's drive controls (ke * target) use them, though the
    Control is the same, unchanged."""
    model = driven_pendulum()
    solver = SolverMuJoCo(model, backend="cpu")
    s0, s1, control = model.state(), model.state(), model.control()
    for _ in range(5):
        solver.step(s0, s1, control, None, DT)
        s0, s1 = s1, s0
    ke = model.joint_target_ke.numpy().copy()
    model.joint_target_ke.assign(ke * 3.0)
    assert solver.update_parameters(model, {"joint_target_ke"}) == set()
    solver.step(s0, s1, control, None, DT)
    target = model.joint_target_pos.numpy()[0] + solver.map.dof_ref[0]
    assert solver.mj_data.ctrl[0] == pytest.approx(3.0 * ke[0] * target, rel=1e-6)
