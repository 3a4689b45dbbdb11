"""Neural NewtonActuators (NewtonNeuralControlAPI, an ONNX network run in Warp by Newton's neural drives): our efforts
match Newton's own drive fed the same states, step by step (so a history or an LSTM's hidden state is carried), the arm
moves as the network says under each engine, and a model file Newton could not run is refused by name.

The networks are made here with ``onnx.helper`` from fixed numpy weights: an MLP (Gemm, Tanh, Gemm) reading the
position error and velocity now and one and three steps ago, an LSTM and a GRU of hidden size 4 with a linear head,
and a linear MLP that is a PD law (``kp e - kd qd``) to compare with a PID actuator without ``ki``.
"""

from __future__ import annotations

import json
import math

import numpy as np
import onnx
import pytest
import warp as wp
from onnx import TensorProto, helper, numpy_helper
from test_newton_actuators import KAMINO, KD, KP, WARP, arm_stage, held_angle, make_solver

from newton_usd.core.builder import ModelBuilder
from newton_usd.errors import UsdInputError

DT = 0.002
SEMI_IMPLICIT = pytest.param("semi_implicit", marks=pytest.mark.soak)  # (2000 steps: its stable step is short here)
RNG = np.random.default_rng(7)
MLP_WEIGHTS = (RNG.normal(0, 0.8, (8, 6)), RNG.normal(0, 0.1, 8), RNG.normal(0, 0.8, (1, 8)), RNG.normal(0, 0.1, 1))
LSTM_WEIGHTS = (RNG.normal(0, 0.5, (1, 16, 2)), RNG.normal(0, 0.5, (1, 16, 4)), RNG.normal(0, 0.1, (1, 32)),
                RNG.normal(0, 1.0, (1, 4)), np.array([0.2]))  # fmt: skip
GRU_WEIGHTS = (RNG.normal(0, 0.5, (1, 12, 2)), RNG.normal(0, 0.5, (1, 12, 4)), RNG.normal(0, 0.1, (1, 24)),
               RNG.normal(0, 1.0, (1, 4)), np.array([0.1]))  # fmt: skip


def _save(path, nodes, inputs, outputs, weights, metadata):
    graph = helper.make_graph(
        nodes, "net", inputs, outputs,
        initializer=[numpy_helper.from_array(np.asarray(v, np.float32), name) for name, v in weights.items()],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    prop = model.metadata_props.add()
    prop.key, prop.value = "metadata", json.dumps(metadata)
    onnx.save(model, str(path))
    return str(path)


def _value(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def mlp_model(path, weights=MLP_WEIGHTS, metadata=None, tanh=True, out_width=1):
    """Gemm (Tanh) Gemm on (batch, width) -> (batch, out_width)."""
    w1, b1, w2, b2 = weights
    nodes = [helper.make_node("Gemm", ["obs", "w1", "b1"], ["h"], transB=1)]
    if tanh:
        nodes.append(helper.make_node("Tanh", ["h"], ["a"]))
    nodes.append(helper.make_node("Gemm", ["a" if tanh else "h", "w2", "b2"], ["effort"], transB=1))
    meta = {"model_type": "mlp", "input_idx": [0, 1, 3], "pos_scale": 2.0, "vel_scale": 0.25, "effort_scale": 3.0}
    meta.update(metadata or {})
    return _save(path, nodes, [_value("obs", [None, w1.shape[1]])], [_value("effort", [None, out_width])],
                 {"w1": w1, "b1": b1, "w2": w2, "b2": b2}, meta)  # fmt: skip


def lstm_model(path, metadata=None):
    """One LSTM layer (hidden 4) on (1, batch, 2) with its states, a linear head on its last output."""
    w, r, b, head_w, head_b = LSTM_WEIGHTS
    state = [1, None, 4]
    nodes = [
        helper.make_node("LSTM", ["x", "W", "R", "B", "", "h0", "c0"], ["y", "h1", "c1"], hidden_size=4),
        helper.make_node("Squeeze", ["y", "axes"], ["last"]),
        helper.make_node("Gemm", ["last", "head_w", "head_b"], ["effort"], transB=1),
    ]
    meta = {"model_type": "lstm", "input_name": "x", "hidden_in_name": "h0", "cell_in_name": "c0",
            "output_name": "effort", "hidden_out_name": "h1", "cell_out_name": "c1", "num_layers": 1,
            "hidden_size": 4, "pos_scale": 1.5, "effort_scale": 4.0}  # fmt: skip
    meta.update(metadata or {})
    weights = {"W": w, "R": r, "B": b, "head_w": head_w, "head_b": head_b}
    graph_inputs = [_value("x", [1, None, 2]), _value("h0", state), _value("c0", state)]
    model = _save(path, nodes, graph_inputs, [_value("effort", [None, 1]), _value("h1", state), _value("c1", state)],
                  weights, meta)  # fmt: skip
    m = onnx.load(model)  # (the Squeeze axes: an int64 constant)
    m.graph.initializer.append(numpy_helper.from_array(np.array([0, 1], np.int64), "axes"))
    onnx.save(m, model)
    return model


def gru_model(path):
    """One GRU layer (hidden 4, linear_before_reset as Newton's GRU drive reads it) on the position error and
    velocity, a Gemm head, a Tanh."""
    w, r, b, head_w, head_b = GRU_WEIGHTS
    nodes = [
        helper.make_node("GRU", ["x", "W", "R", "B", "", "h0"], ["y", "h1"], hidden_size=4, linear_before_reset=1),
        helper.make_node("Squeeze", ["y", "axes"], ["last"]),
        helper.make_node("Gemm", ["last", "head_w", "head_b"], ["head"], transB=1),
        helper.make_node("Tanh", ["head"], ["effort"]),
    ]
    columns = ["position_error", "velocity"]
    normalization = {"inputs": {"mean": {"position_error": 0.05, "velocity": -0.1},
                                "std": {"position_error": 0.5, "velocity": 2.0}},
                     "targets": {"mean": {"torque": 0.1}, "std": {"torque": 2.0}}}  # fmt: skip
    meta = {"model_type": "gru", "input_columns": columns, "normalization": normalization, "sample_dt_s": DT}
    weights = {"W": w, "R": r, "B": b, "head_w": head_w, "head_b": head_b}
    graph_inputs = [_value("x", [1, None, 2]), _value("h0", [1, None, 4])]
    model = _save(path, nodes, graph_inputs, [_value("effort", [None, 1]), _value("h1", [1, None, 4])], weights, meta)
    m = onnx.load(model)
    m.graph.initializer.append(numpy_helper.from_array(np.array([0, 1], np.int64), "axes"))
    onnx.save(m, model)
    return model


def pd_model(path, kp=KP, kd=KD):
    """A linear MLP that is a PD law toward the target: ``kp (target - q) - kd qd``."""
    weights = (np.array([[kp, -kd]]), np.zeros(1), np.ones((1, 1)), np.zeros(1))
    return mlp_model(path, weights, metadata={"input_idx": [0], "pos_scale": 1.0, "vel_scale": 1.0,
                                              "effort_scale": 1.0}, tanh=False)  # fmt: skip


def neural_stage(model_path, target_deg=-10.0, **kw):
    return arm_stage(drive="NewtonNeuralControlAPI", values={"modelPath": str(model_path)}, target_deg=target_deg, **kw)


def newton_reference(stage):
    """Newton's own actuator for the stage's /Actuator: its USD reader's drive (newton.actuators.parse_actuator_prim),
    stepped on one DOF."""
    from newton.actuators import Actuator, parse_actuator_prim

    parsed = parse_actuator_prim(stage.GetPrimAtPath("/Actuator"))
    drive = parsed.drive_class(**parsed.drive_kwargs)
    return Actuator(indices=wp.array([0], dtype=wp.uint32, device="cpu"), drive=drive, control_feedforward_attr=None)


# ---------------------------------------------------------------- the same efforts as Newton's drive


@pytest.mark.parametrize("network", ["mlp", "lstm", "gru"])
def test_each_step_s_effort_is_newton_s_drive_s_for_the_same_state(tmp_path, network):
    path = {"mlp": mlp_model, "lstm": lstm_model, "gru": gru_model}[network](tmp_path / f"{network}.onnx")
    stage = neural_stage(path, target_deg=-20.0)
    builder = ModelBuilder()
    builder.add_usd(stage)
    model = builder.finalize("cpu")
    spec = model.actuator_spec[0]
    assert (spec.drive, spec.network, spec.model_path) == ("neural", network, path)
    engine = make_solver(model, "mujoco")
    reference = newton_reference(stage)
    ref_state, ref_next = reference.state(), reference.state()
    s0, s1, control = model.state(), model.state(), model.control()
    target = control.joint_target_pos.numpy()[:1]
    ours, newtons = [], []
    for _ in range(8):
        q, qd = s0.joint_q.numpy()[:1].copy(), s0.joint_qd.numpy()[:1].copy()
        engine.step(s0, s1, control, None, DT)
        s0, s1 = s1, s0
        ours.append(float(engine.mj_data.qfrc_applied[0]))  # (the Control's joint forces are zero: the effort alone)
        f = wp.zeros(1, dtype=float, device="cpu")
        sim_state = {
            "joint_q": wp.array(q, dtype=float, device="cpu"),
            "joint_qd": wp.array(qd, dtype=float, device="cpu"),
        }
        sim_control = {"joint_target_q": wp.array(target, dtype=float, device="cpu"),
                       "joint_target_qd": wp.zeros(1, dtype=float, device="cpu"), "joint_f": f}  # fmt: skip
        reference.step(sim_state, sim_control, ref_state, ref_next, dt=DT)
        ref_state, ref_next = ref_next, ref_state
        newtons.append(float(f.numpy()[0]))
    assert np.allclose(ours, newtons, rtol=1e-5, atol=1e-5), (ours, newtons)
    # the inputs changed over the steps and the network's memory with them: the efforts are not one value
    assert np.ptp(ours) > 1e-3, ours


# ---------------------------------------------------------------- the arm moves as the network says


@pytest.mark.parametrize("solver", ["mujoco", "featherstone", "xpbd", SEMI_IMPLICIT, KAMINO, WARP])
def test_a_network_that_is_a_pd_law_moves_the_arm_as_a_pd_law_does(tmp_path, solver):
    from test_newton_actuators import simulate

    # (semi_implicit's penalty joint is stable at steps up to 0.49 ms here: 0.8 s in steps of 0.4 ms)
    steps, dt = (2000, 4e-4) if solver == "semi_implicit" else (400, DT)
    neural = simulate(neural_stage(pd_model(tmp_path / "pd.onnx")), solver, steps, record=True, dt=dt)
    # (a PID without ki: the same law through the same applied-force path under MuJoCo, where a PD is native)
    pid = arm_stage(drive="NewtonPIDControlAPI", values={"kp": KP, "kd": KD}, target_deg=-10.0)
    pd = simulate(pid, solver, steps, record=True, dt=dt)
    assert np.allclose(neural, pd, atol=1e-4), np.abs(neural - pd).max()
    assert math.degrees(neural[-1]) == pytest.approx(math.degrees(held_angle(KP, math.radians(-10.0))), abs=0.2)


def test_the_engines_agree_on_a_recurrent_network_s_motion(tmp_path):
    """The LSTM's arm after 0.2 s is where MuJoCo, featherstone and XPBD all put it (the same network, state and
    effort path: one answer)."""
    from test_newton_actuators import simulate

    stage = neural_stage(lstm_model(tmp_path / "lstm.onnx"), target_deg=-20.0)
    angles = {solver: math.degrees(simulate(stage, solver, 100)) for solver in ("mujoco", "featherstone", "xpbd")}
    assert abs(angles["mujoco"]) > 1.0, angles
    assert max(angles.values()) - min(angles.values()) < 0.02, angles  # (XPBD 0.007 deg off the others)


def test_a_gru_runs_at_the_step_it_was_trained_at_only(tmp_path):
    from test_newton_actuators import simulate

    stage = neural_stage(gru_model(tmp_path / "gru.onnx"))
    builder = ModelBuilder()
    builder.add_usd(stage)
    assert builder.actuator_spec[0].sample_dt == DT
    with pytest.raises(UsdInputError) as err:
        simulate(stage, "featherstone", 2, dt=DT / 2)
    message = str(err.value)
    assert message.startswith("/Actuator.newton:modelPath: its network was trained at steps of 0.002 s"), message


@pytest.mark.parametrize("solver", ["mujoco", "featherstone"])
def test_the_network_s_memory_is_per_world_and_starts_over_with_a_reset(tmp_path, solver):
    """Two worlds share one network (one group): the same motion in each; a run again from the start without a reset
    carries the LSTM's hidden state over, after one it repeats the first; a reset of one world zeroes its own only."""
    builder = ModelBuilder()
    builder.add_usd(neural_stage(lstm_model(tmp_path / "lstm.onnx")))
    builder.replicate(2)
    model = builder.finalize("cpu")
    engine = make_solver(model, solver)
    (group,) = engine.actuators.actuators.groups

    def run():
        s0, s1, control = model.state(), model.state(), model.control()
        for _ in range(30):
            engine.step(s0, s1, control, None, DT)
            s0, s1 = s1, s0
        return s0.joint_q.numpy()

    first, carried = run(), run()
    assert first[0] == pytest.approx(first[1], abs=1e-9) and abs(first[0]) > 1e-3, first
    engine.reset_actuators()
    assert run()[0] == pytest.approx(first[0], abs=1e-6) and abs(carried[0] - first[0]) > 1e-6, (first, carried)
    engine.reset_actuators(wp.array([True, False], dtype=wp.bool, device="cpu"))
    hidden = group.state.drive_state.hidden.numpy()  # (layers, actuators, hidden size)
    assert np.all(hidden[:, 0] == 0.0) and np.any(hidden[:, 1] != 0.0)


@pytest.mark.gpu
@pytest.mark.parametrize("solver", ["featherstone", "mujoco"])  # (mujoco on CUDA: the MuJoCo-Warp backend)
def test_networks_step_alike_in_a_captured_cuda_frame(tmp_path, solver):
    """Each network (MLP with history, LSTM, GRU) in frames captured on CUDA (the solver's frame graph, replayed: the
    network's state advanced in place) moves the arm as eager frames on the CPU do."""
    from newton_usd import Simulation

    for make in (mlp_model, lstm_model, gru_model):
        stage = neural_stage(make(tmp_path / f"{make.__name__}.onnx"), target_deg=-20.0)
        angles = {}
        for device in ("cpu", "cuda"):
            sim = Simulation.open(stage, solver=solver, device=device, live=False, record=False, dt=DT)
            sim.write = False
            for _ in range(6):
                sim.step_frame()
            angles[device] = float(sim.state.joint_q.numpy()[0])
            if device == "cuda":
                assert sim.solver.frame_capture.replays > 1, make.__name__
            sim.close()
        assert abs(angles["cpu"]) > 1e-3, angles
        # (MuJoCo: C MuJoCo on the CPU, MuJoCo-Warp on CUDA, float64 and float32: a few hundredths of a degree apart)
        assert angles["cuda"] == pytest.approx(angles["cpu"], abs=math.radians(0.05)), (make.__name__, angles)


def test_explain_and_the_kernel_load_name_the_network(tmp_path):
    from newton_usd.inspect import explain_rows

    path = lstm_model(tmp_path / "lstm.onnx")
    builder = ModelBuilder()
    imported = builder.add_usd(neural_stage(path))
    model = builder.finalize("cpu")
    rows = {row[1]: row[2:] for row in explain_rows(imported, ["/Actuator"], model)}
    assert rows["actuator.drive"][0] == "NEURAL" and rows["actuator.network"] == (
        f"LSTM {path}",
        "",
        "newton:modelPath",
    )
    assert "actuator.kp" not in rows
    names = {m.name for m in make_solver(model, "featherstone").kernel_modules()}
    assert "newton._src.actuators.drives.drive_neural_lstm" in names, names


# ---------------------------------------------------------------- refused by name


def _bad(tmp_path, case):
    path = tmp_path / "net.onnx"
    if case == "not_onnx":
        path.write_bytes(b"\x08\x07 not a model")
    elif case == "torch":
        path = tmp_path / "net.pt2"
        path.write_bytes(b"PK")
    elif case == "no_model_type":
        mlp_model(path, metadata={"model_type": None})
    elif case == "input_width":  # (input_idx [0, 1]: 4 columns; the network takes 6)
        mlp_model(path, metadata={"input_idx": [0, 1]})
    elif case == "output_width":
        w1, b1, w2, b2 = MLP_WEIGHTS
        mlp_model(path, (w1, b1, np.vstack([w2, w2]), np.concatenate([b2, b2])), out_width=2)
    elif case == "lstm_names":
        lstm_model(path, metadata={"hidden_in_name": "h_in"})
    elif case == "lstm_metadata":
        lstm_model(path, metadata={"cell_out_name": None})
        m = onnx.load(str(path))
        meta = json.loads(m.metadata_props[0].value)
        del meta["cell_out_name"]
        m.metadata_props[0].value = json.dumps(meta)
        onnx.save(m, str(path))
    return path


@pytest.mark.parametrize(
    "case, expected",
    [
        ("not_onnx", "is not a valid ONNX model"),
        ("torch", "is a Torch checkpoint: export the network to ONNX"),
        ("no_model_type", "names no network Newton runs: its metadata's model_type is None"),
        ("input_width", "does not take what Newton's drive gives it (obs (1, 4))"),
        ("output_width", "gives its output effort in shape (1, 2)"),
        ("lstm_names", "has no graph input 'h_in', which its metadata's hidden_in_name names"),
        ("lstm_metadata", "is not a network Newton's DriveNeuralLSTM runs"),
    ],
)
def test_a_model_newton_cannot_run_is_refused_naming_the_actuator(tmp_path, case, expected):
    path = _bad(tmp_path, case)
    with pytest.raises(UsdInputError) as err:
        ModelBuilder().add_usd(neural_stage(path))
    message = str(err.value)
    assert "/Actuator" in message and "newton:modelPath" in message and str(path) in message, message
    assert expected in message and "\n" not in message, message
