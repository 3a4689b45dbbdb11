"""C MuJoCo's arena (contacts, constraints, solver stack) sized from the model, overridable, and a run
that fills it stops with a message saying how to give more."""

import pytest
from test_cli import usdsim

from newton_usd import Simulation
from newton_usd.errors import NewtonUsdError
from newton_usd.solvers.mujoco.spec import arena_bytes

from stages import pile


def test_the_arena_is_sized_from_the_model_and_grows_linearly():
    one, small, big = (Simulation.open(pile(n=n), live=False) for n in (1, 21, 201))
    for sim in (one, small, big):
        assert sim.solver.mj_model.narena == arena_bytes(sim.model)
    # Linear: ten times the bodies, ten times the memory (MuJoCo's default grows with the square).
    per_20 = small.solver.mj_model.narena - one.solver.mj_model.narena
    assert big.solver.mj_model.narena - one.solver.mj_model.narena == 10 * per_20
    assert big.solver.mj_model.narena < 64 << 20


def test_the_arena_can_be_given(tmp_path):
    sim = Simulation.open(pile(n=20), live=False, mujoco_memory=3 << 20)
    assert sim.solver.mj_model.narena == 3 << 20
    with pytest.raises(NewtonUsdError, match="memory must be a number of bytes > 0"):
        Simulation.open(pile(n=2), live=False, mujoco_memory=-1)


def test_a_full_arena_stops_the_run_and_says_how_to_give_more(tmp_path):
    src = tmp_path / "boxes.usda"
    pile(src, n=100, shape="box").Save()
    r = usdsim(src, "-n", "60", "-q", "--mujoco-memory", "0.5")
    assert r.returncode == 3, r.stderr
    assert "MuJoCo's arena of 0 MiB is full: contacts or constraints would be dropped" in r.stderr
    assert "usdsim --mujoco-memory MIB" in r.stderr
    r = usdsim(src, "-n", "2", "-q", "--mujoco-memory", "0.001")
    assert r.returncode == 2 and "MuJoCo could not compile the model" in r.stderr and "--mujoco-memory" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
