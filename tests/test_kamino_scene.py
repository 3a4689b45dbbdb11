"""NewtonKaminoSceneAPI on the PhysicsScene configures Newton's Kamino solver: PADMM's tolerances, warm start and
acceleration, the constraint problem's preconditioning, the Baumgarte factors (joints, limits, contacts), how revolute
coordinates roll over, and ``newton:maxSolverIterations``. A value out of the schema's range is a one-line error
naming the scene and the attribute; another engine says it does not honor the schema."""

from __future__ import annotations

import dataclasses

import newton
import pytest
from pxr import Sdf

from newton_usd import ModelBuilder, Simulation
from newton_usd.cli import main
from newton_usd.solvers import SolverKamino
from newton_usd.solvers.newton.kamino_config import kamino_config, scene_settings_kept
from newton_usd.usd.honored import message, unhonored

from stages import add_box, falling_cube, new_stage

T = Sdf.ValueTypeNames

AUTHORED = {
    "newton:kamino:padmm:primalTolerance": (T.Float, 1e-4),
    "newton:kamino:padmm:dualTolerance": (T.Float, 2e-4),
    "newton:kamino:padmm:complementarityTolerance": (T.Float, 3e-4),
    "newton:kamino:padmm:warmstarting": (T.Token, "internal"),
    "newton:kamino:padmm:useAcceleration": (T.Bool, False),
    "newton:kamino:constraints:usePreconditioning": (T.Bool, False),
    "newton:kamino:constraints:alpha": (T.Float, 0.25),
    "newton:kamino:constraints:beta": (T.Float, 0.5),
    "newton:kamino:constraints:gamma": (T.Float, 0.75),
    "newton:kamino:jointCorrection": (T.Token, "continuous"),
    "newton:maxSolverIterations": (T.Int, 50),
}


def kamino_stage(path=None, **values):
    """A cube falling onto the ground, its scene applying NewtonKaminoSceneAPI with ``values`` (attribute ->
    (type, value)) authored."""
    stage = falling_cube(path)
    scene = stage.GetPrimAtPath("/PhysicsScene")
    assert scene.ApplyAPI("NewtonKaminoSceneAPI")
    for name, (type_name, value) in values.items():
        scene.CreateAttribute(name, type_name, custom=False).Set(value)
    if path is not None:
        stage.Save()
    return stage


def scene_settings(stage) -> dict:
    imported = ModelBuilder().add_usd(stage)
    return {name: resolved.value for name, resolved in imported.scene.items()}


def config_of(stage, **asked):
    """Kamino's config as ``SolverKamino.from_scene`` makes it for ``stage`` (``asked``: solver_options), without
    making the solver (its kernels take minutes to compile on the CPU)."""
    settings = scene_settings_kept(scene_settings(stage), SolverKamino.OPTIONS, asked)
    options = {**SolverKamino.options_from_scene(settings), **asked}
    return kamino_config(options)


def test_authored_settings_reach_kaminos_config():
    config = config_of(kamino_stage(**AUTHORED))
    assert config.padmm.primal_tolerance == pytest.approx(1e-4)
    assert config.padmm.dual_tolerance == pytest.approx(2e-4)
    assert config.padmm.compl_tolerance == pytest.approx(3e-4)
    assert config.padmm.warmstart_mode == "internal"
    assert config.padmm.use_acceleration is False
    assert config.padmm.max_iterations == 50
    assert config.dvi.max_alternating_iterations == 50 and config.lox.max_iterations == 50
    assert config.dynamics.preconditioning is False
    assert (config.constraints.alpha, config.constraints.beta, config.constraints.gamma) == pytest.approx(
        (0.25, 0.5, 0.75)
    )
    assert config.rotation_correction == "continuous"


def test_the_schemas_fallbacks_are_kaminos_defaults():
    config, default = config_of(kamino_stage()), newton.solvers.SolverKamino.Config()
    for part in ("padmm", "constraints", "dynamics"):
        ours, theirs = dataclasses.asdict(getattr(config, part)), dataclasses.asdict(getattr(default, part))
        for field, value in theirs.items():  # (the schema's floats are float32s)
            expected = pytest.approx(value, rel=1e-6) if isinstance(value, float) else value
            assert ours[field] == expected, f"{part}.{field}"
    assert config.rotation_correction == default.rotation_correction


def test_a_whole_part_in_solver_options_wins_over_the_scene():
    from newton._src.solvers.kamino.config import PADMMSolverConfig  # noqa: PLC0415

    stage = kamino_stage(**AUTHORED)
    config = config_of(stage, padmm=PADMMSolverConfig(primal_tolerance=5e-3), padmm_dual_tolerance=7e-3)
    assert config.padmm.primal_tolerance == pytest.approx(5e-3)  # (the caller's part, not the scene's 1e-4)
    assert config.padmm.dual_tolerance == pytest.approx(7e-3)  # (a field the caller named)
    assert config.padmm.max_iterations == 200  # (the scene's 50 is PADMM's: the caller's part wins)
    assert config.constraints.alpha == pytest.approx(0.25)  # (the scene's, for the other parts)


def test_explain_says_where_each_setting_came_from(tmp_path, capsys):
    path = tmp_path / "k.usda"
    kamino_stage(path, **{"newton:kamino:constraints:alpha": (T.Float, 0.25)})
    assert main(["explain", str(path), "/PhysicsScene"]) == 0
    rows = {r[1]: r for r in (line.split() for line in capsys.readouterr().out.splitlines()) if len(r) > 2}
    assert rows["kamino.constraints.alpha"][2] == "0.25"
    assert rows["kamino.constraints.alpha"][-1] == "newton:kamino:constraints:alpha"
    beta = " ".join(rows["kamino.constraints.beta"])
    assert "fallback of NewtonKaminoSceneAPI (newton:kamino:constraints:beta)" in beta
    assert "honored by kamino" in " ".join(rows["schema"])


@pytest.mark.parametrize(
    "attribute, value, said",
    [
        ("newton:kamino:constraints:alpha", (T.Float, 1.5), "must be in [0, 1]"),
        ("newton:kamino:padmm:dualTolerance", (T.Float, 0.0), "must be finite and >= 1e-10"),
        ("newton:kamino:padmm:warmstarting", (T.Token, "always"), "not one of the allowed values"),
        ("newton:kamino:jointCorrection", (T.Token, "wrap"), "not one of the allowed values"),
    ],
)
def test_a_value_out_of_range_is_a_one_line_error(tmp_path, capsys, attribute, value, said):
    path = tmp_path / "bad.usda"
    kamino_stage(path, **{attribute: value})
    assert main(["run", str(path), "--solver", "kamino", "-n", "1", "-o", str(tmp_path / "out.usda")]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("usdsim: error:")]
    assert len(errors) == 1 and "Traceback" not in err, err
    assert f"/PhysicsScene.{attribute}: " in errors[0] and said in errors[0], err


def test_another_engine_says_it_does_not_honor_the_schema(tmp_path, capsys):
    path = tmp_path / "k.usda"
    kamino_stage(path, **AUTHORED)
    text = message("NewtonKaminoSceneAPI", "mujoco")
    assert text.startswith("NewtonKaminoSceneAPI is not honored by the mujoco solver: its Kamino settings")
    assert text.endswith("(honored by the kamino solver)")
    assert main(["check", str(path), "--solver", "mujoco"]) == 0  # (a scene made for Kamino runs kamino otherwise)
    assert f"  - {text}: /PhysicsScene" in capsys.readouterr().out
    assert unhonored({"NewtonKaminoSceneAPI": ["/PhysicsScene"]}, "kamino", "/PhysicsScene") == []


@pytest.mark.slow
@pytest.mark.soak
def test_the_made_solver_holds_the_scenes_settings():
    """Kamino made and stepped on the stage (its kernels compile for minutes on an empty cache)."""
    sim = Simulation.open(kamino_stage(**AUTHORED), solver="kamino")
    config = sim.solver.newton_solver._config
    assert config.padmm.primal_tolerance == pytest.approx(1e-4)
    assert config.padmm.max_iterations == 50
    assert config.constraints.gamma == pytest.approx(0.75)
    assert config.rotation_correction == "continuous"
    sim.run(frames=60)  # (it lands at 0.43 s)
    z = sim.state.body_q.numpy()[0, 2]
    assert abs(z - 0.1) < 0.005, z


def test_a_scene_made_for_kamino_runs_kamino_unless_it_names_another(tmp_path, capsys):
    """As a scene made for XPBD runs XPBD: NewtonKaminoSceneAPI applied, no newton:usd:solver, the kamino solver is
    chosen (explain's solver row names the schema); a scene that also holds XPBD's settings chooses neither."""
    stage = new_stage(tmp_path / "s.usda")
    scene = stage.GetPrimAtPath("/PhysicsScene")
    scene.ApplyAPI("NewtonKaminoSceneAPI")
    add_box(stage, "/Box")
    stage.Save()
    assert main(["explain", str(tmp_path / "s.usda"), "/PhysicsScene"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if " solver " in f" {line} "]
    assert rows and "kamino" in rows[0] and "NewtonKaminoSceneAPI" in rows[0], rows
    scene.ApplyAPI("NewtonXpbdSceneAPI")
    stage.Save()
    assert main(["explain", str(tmp_path / "s.usda"), "/PhysicsScene"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if " solver " in f" {line} "]
    assert rows and "kamino" not in rows[0] and "xpbd" not in rows[0], rows
