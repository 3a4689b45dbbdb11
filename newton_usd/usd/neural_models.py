"""A neural actuator's model file (``newton:modelPath``), checked when the stage is read as Newton 1.8's neural drives
read it: an ONNX file (Newton's USD reader refuses Torch checkpoints, its deprecated form), whose metadata names its
``model_type`` (mlp, lstm or gru), that Newton's drive of that kind accepts, and whose graph, run once by ONNX's
reference evaluator (numpy) on the inputs the drive gives one actuator, gives the outputs the drive reads in the
shapes it needs (one effort; an LSTM's next hidden and cell states).

The drive itself runs the network in Warp (warp-nn, Newton's ``onnx`` extra) once a solver is made
(:mod:`newton_usd.solvers.actuators`); this check compiles no kernels.
"""

from __future__ import annotations

import functools
import os

_TORCH = (".pt", ".pth", ".pt2")


class NeuralModelError(ValueError):
    """Why Newton could not run a model file: a phrase that follows "the neural model file PATH"."""


def check_model(path: str) -> tuple[str, float]:
    """The kind of network (``"mlp"``, ``"lstm"`` or ``"gru"``) in the ONNX file ``path``, as Newton's neural drive of
    that kind would run it, and the step (s) it runs at only (a GRU's ``sample_dt_s``; 0: any). Checked once per
    version of the file (the actuators of a robot often share one).

    Raises:
        NeuralModelError: a Torch checkpoint, a file that is not ONNX, metadata without a ``model_type`` Newton runs
            or that its drive refuses, a graph whose inputs or outputs do not fit what the drive gives and reads.
    """
    status = os.stat(path)
    return _checked(path, status.st_mtime_ns, status.st_size)


@functools.lru_cache(maxsize=64)
def _checked(path: str, _mtime_ns: int, _size: int) -> tuple[str, float]:
    if os.path.splitext(path)[1].lower() in _TORCH:
        raise NeuralModelError("is a Torch checkpoint: export the network to ONNX (.onnx), the form Newton 1.8 runs")
    try:
        import onnx
        from newton._src.actuators.utils import load_metadata  # (how Newton's drives read a checkpoint's metadata)
        from newton.actuators import DriveNeuralGRU, DriveNeuralLSTM, DriveNeuralMLP
    except ImportError as err:
        raise NeuralModelError(f"cannot be read without the onnx package ({err}): pip install 'newton[onnx]'") from None
    try:
        model = onnx.load(path)
        onnx.checker.check_model(model)
    except Exception as err:  # (protobuf's DecodeError, onnx's ValidationError, ...: each says it is not ONNX)
        raise NeuralModelError(f"is not a valid ONNX model ({_line(err)})") from None
    try:
        metadata = load_metadata(path)
    except ValueError as err:
        raise NeuralModelError(f"has metadata Newton cannot read ({_line(err)})") from None
    drives = {"mlp": DriveNeuralMLP, "lstm": DriveNeuralLSTM, "gru": DriveNeuralGRU}
    network = metadata.get("model_type")
    if network not in drives:
        raise NeuralModelError(
            f"names no network Newton runs: its metadata's model_type is {network!r}, valid: {', '.join(drives)}"
        )
    try:
        drive = drives[network](model_path=path)
    except (ValueError, KeyError, TypeError) as err:
        raise NeuralModelError(f"is not a network Newton's {drives[network].__name__} runs ({_line(err)})") from None
    if drive.custom_inputs:
        raise NeuralModelError(
            f"reads inputs that no stage gives ({', '.join(drive.custom_inputs)}: custom inputs a caller of Newton's "
            "drive supplies)"
        )
    if network == "mlp":
        _check_mlp(model, drive)
    elif network == "lstm":
        _check_lstm(model, metadata)
    # (a GRU's graph, its inputs and outputs, is checked by DriveNeuralGRU as it reads the file)
    return network, float(metadata["sample_dt_s"]) if network == "gru" else 0.0


def _line(err) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= 200 else text[:197] + "..."


def _graph_inputs(model) -> list:
    constants = {t.name for t in model.graph.initializer}
    return [v.name for v in model.graph.input if v.name not in constants]


def _run(model, feeds: dict) -> dict:
    """The graph's outputs by name, run once on ``feeds``."""
    import numpy as np
    from onnx.reference import ReferenceEvaluator

    given = ", ".join(f"{name} {tuple(value.shape)}" for name, value in feeds.items())
    try:
        values = ReferenceEvaluator(model).run(None, feeds)
    except Exception as err:  # (a shape mismatch inside the graph, an input it lacks: the evaluator's own errors)
        raise NeuralModelError(f"does not take what Newton's drive gives it ({given}): {_line(err)}") from None
    return {out.name: np.asarray(value) for out, value in zip(model.graph.output, values, strict=True)}


def _check_shape(outputs: dict, name: str, expected: tuple, what: str) -> None:
    shape = tuple(outputs[name].shape)
    if shape != expected:
        raise NeuralModelError(f"gives its output {name} in shape {shape}, Newton's drive reads {what} {expected}")


def _check_mlp(model, drive) -> None:
    """Newton's MLP drive feeds the first graph input ``(actuators, 2 * len(input_idx))`` (position errors and
    velocities, now and from its history) and reads the first output as one effort per actuator."""
    import numpy as np

    inputs = _graph_inputs(model)
    if len(inputs) != 1:
        raise NeuralModelError(
            f"has {len(inputs)} graph inputs ({', '.join(inputs) or 'none'}): Newton's MLP drive gives one, "
            "(actuators, 2 * len(input_idx))"
        )
    width = 2 * len(drive.input_idx)
    outputs = _run(model, {inputs[0]: np.zeros((1, width), dtype=np.float32)})
    _check_shape(outputs, model.graph.output[0].name, (1, 1), "one effort per actuator:")


def _check_lstm(model, metadata: dict) -> None:
    """Newton's LSTM drive feeds the inputs its metadata names (``input_name`` ``(1, actuators, 2)``, the hidden and
    cell states ``(num_layers, actuators, hidden_size)``) and reads the outputs it names in the same shapes."""
    import numpy as np

    layers, hidden = int(metadata["num_layers"]), int(metadata["hidden_size"])
    state = (layers, 1, hidden)
    shapes = {"input_name": (1, 1, 2), "hidden_in_name": state, "cell_in_name": state}
    inputs = set(_graph_inputs(model))
    feeds = {}
    for key, shape in shapes.items():
        if metadata[key] not in inputs:
            raise NeuralModelError(f"has no graph input {metadata[key]!r}, which its metadata's {key} names")
        feeds[metadata[key]] = np.zeros(shape, dtype=np.float32)
    outputs = _run(model, feeds)
    for key, shape in (("output_name", (1, 1)), ("hidden_out_name", state), ("cell_out_name", state)):
        if metadata[key] not in outputs:
            raise NeuralModelError(f"has no graph output {metadata[key]!r}, which its metadata's {key} names")
        _check_shape(outputs, metadata[key], shape, f"({key})")
