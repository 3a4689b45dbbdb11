"""``python differentiate_steps.py DIR DEVICE``: d(final height)/d(initial upward velocity) of a box thrown up, by
``wp.Tape`` through a Simulation's semi-implicit steps, and by a central finite difference; prints both as JSON.

A process of its own (run by tests/test_newton_solvers.py): the tests compile Warp's kernels without their adjoints
(conftest.py), and a Tape needs them, so this compiles the kernels it differentiates with Warp's default."""

import contextlib
import json
import sys
from pathlib import Path

import warp as wp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from newton_usd import Simulation  # noqa: E402

from stages import add_box, new_stage  # noqa: E402


@wp.kernel
def _height(body_q: wp.array(dtype=wp.transform), out: wp.array(dtype=wp.float32)):
    out[0] = wp.transform_get_translation(body_q[0])[2]


def main(directory: Path, device: str) -> dict:
    wp.config.log_level = wp.LOG_WARNING
    stage = new_stage(directory / "throw.usda")
    add_box(stage, "/Box", 0.2, (0, 0, 1.0))
    stage.Save()
    sim = Simulation.open(
        directory / "throw.usda", solver="semi_implicit", solver_options={"requires_grad": True}, device=device
    )
    model, solver, steps, dt = sim.model, sim.solver, 60, 1.0 / 120

    def final_height(v0, tape=None):
        states = [model.state(requires_grad=True) for _ in range(steps + 1)]
        qd = states[0].body_qd.numpy()
        qd[0, 2] = v0
        states[0].body_qd.assign(qd)
        height = wp.zeros(1, dtype=wp.float32, requires_grad=True, device=model.device)
        with tape or contextlib.nullcontext():
            for i in range(steps):
                solver.step(states[i], states[i + 1], sim.control, None, dt)
            wp.launch(_height, dim=1, inputs=[states[-1].body_q], outputs=[height], device=model.device)
        return states, height

    tape = wp.Tape()
    states, height = final_height(2.0, tape)
    tape.backward(loss=height)
    gradient = float(states[0].body_qd.grad.numpy()[0, 2])
    eps = 1e-2
    fd = (float(final_height(2.0 + eps)[1].numpy()[0]) - float(final_height(2.0 - eps)[1].numpy()[0])) / (2 * eps)
    sim.close()
    return {"tape": gradient, "finite_difference": fd}


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), sys.argv[2])))
