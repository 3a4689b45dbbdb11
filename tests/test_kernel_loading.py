"""The Warp modules a run's frames use are loaded, in parallel, before its first frame (Simulation.load_kernels):
the first frame then loads none that existed before it (only the kernels a library generates inside its step), and
usdsim's summary says how long the load took and how much of it was compiling."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading

import pytest
import warp as wp

from newton_usd import Simulation
from newton_usd.cli import main
from newton_usd.solvers.kernel_loading import load_modules, tape_safe_workers

from conftest import usdsim_command
from stages import falling_cube

CHECK = r"""
import json, sys
import warp as wp
wp.config.enable_backward = False  # (the suite's kernels: see conftest.py)
wp.config.log_level = wp.LOG_WARNING
from warp._src.context import user_modules
from newton_usd import Simulation
from stages import falling_cube

def loaded(device):
    return {name for name, m in user_modules.items() if any(key[0] == device.context for key in m.execs)}

out = {}
Simulation.kernel_workers = 2  # (a pool, whatever the cores: what is checked is what it is given)
for engine in sys.argv[1:]:
    kw = {"solver": "mujoco", "backend": "warp"} if engine == "mujoco" else {"solver": engine}
    sim = Simulation.open(falling_cube(), device="cpu", live=False, record=False, **kw)
    device = sim.model.device
    load = sim.load_kernels()
    preloaded = loaded(device)
    # (what could be loaded before the frame: a module that existed, but for a generic kernel not yet overloaded,
    # whose code is made when it is launched)
    existing = {name for name, m in user_modules.items()
                if not any(k.is_generic and not k.overloads for k in m.kernels.values())}
    sim.run(2)
    missed = sorted((loaded(device) - preloaded) & existing)  # (could have been loaded before the frame, was by it)
    out[engine] = {"missed": missed, "modules": load.modules, "workers": load.workers}
    sim.close()
print(json.dumps(out))
"""


@pytest.mark.soak  # (four engines' first frames on a kernel cache of their own: every module compiled again)
@pytest.mark.parametrize("engines", [("xpbd", "featherstone", "semi_implicit", "mujoco")])
def test_the_first_frame_loads_no_module_that_could_have_been_loaded_before_it(engines):
    """In a fresh process (nothing loaded yet), each engine's modules loaded by load_kernels cover every module its
    first frames load that could be loaded before them (Newton's solver and collision modules, MuJoCo-Warp's, ours;
    not the generic kernels overloaded at their launch, nor the kernels generated inside a step): the lists in the
    solvers keep up with Newton and MuJoCo-Warp."""
    tests = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-c", CHECK, *engines], capture_output=True, text=True, env=env, timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    result = json.loads(r.stdout.strip().splitlines()[-1])
    for engine in engines:
        assert result[engine]["missed"] == [], (engine, result[engine])
    assert result[engines[0]]["modules"] >= 6 and result[engines[0]]["workers"] == 2, result


@pytest.mark.soak  # (a usdsim run on a kernel cache of its own, every module compiled again)
def test_usdsim_says_how_long_the_kernels_took(tmp_path, capsys):
    """The summary's line (a fresh process: none is loaded yet), and the JSON record's keys."""
    src = tmp_path / "cube.usda"
    falling_cube(src).Save()
    r = subprocess.run([*usdsim_command(), str(src), "--solver", "xpbd", "-n", "3", "--format", "json"],
                       capture_output=True, text=True, timeout=1800)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    record = json.loads(r.stdout)
    assert record["kernel_modules"] >= 6 and 0 <= record["kernels_compiled"] <= record["kernel_modules"], record
    assert 0.0 < record["kernel_seconds"] < record["setup_seconds"] + 1800
    r = subprocess.run([*usdsim_command(), str(src), "--solver", "xpbd", "-n", "3"], capture_output=True, text=True,
                       timeout=1800)  # fmt: skip
    loaded = r"usdsim: \d+ Warp modules loaded from the kernel cache for the setup and the first frame in [0-9.]+ s"
    compiled = r"usdsim: [0-9.]+ s loading Warp kernels for the setup and the first frame \(\d+ of \d+ Warp modules "
    said = re.search(f"{loaded}|{compiled}", r.stdout + r.stderr)
    assert said, r.stdout + r.stderr
    assert main([str(src), "--solver", "xpbd", "-n", "1", "--format", "json"]) == 0
    assert {"kernel_seconds", "kernel_modules", "kernels_compiled"} <= set(json.loads(capsys.readouterr().out))


def test_load_modules_compiles_what_the_cache_lacks_once(tmp_path, monkeypatch):
    """A module missing from Warp's kernel cache is compiled, and counted so; loaded, it is not loaded again."""
    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(tmp_path))

    @wp.kernel(module="unique")
    def _scale(x: wp.array(dtype=wp.float32), by: float):
        x[wp.tid()] = x[wp.tid()] * by

    load = load_modules([_scale.module, _scale.module], "cpu", max_workers=2)
    assert (load.modules, load.compiled) == (1, 1), load
    assert any(name.startswith(f"wp_{_scale.module.name}") for name in os.listdir(tmp_path))
    assert load_modules([_scale.module], "cpu").modules == 0  # (loaded already)
    x = wp.full(3, 2.0, dtype=wp.float32, device="cpu")
    wp.launch(_scale, dim=3, inputs=[x, 1.5], device="cpu")
    assert x.numpy().tolist() == [3.0, 3.0, 3.0]


def test_the_pool_leaves_an_active_tape_alone(tmp_path, monkeypatch):
    """Warp's load of a module opens and closes a scope on the process's active ``wp.Tape``, whichever thread loads:
    a pool's load that straddled the caller's ``with wp.Tape()`` broke the tape ("ended tape scope, but scope not
    present", then replayed at every load of the module). Under a tape the pool loads nothing (the module is loaded by
    the caller's launch, on its own thread), and a differentiable Simulation (requires_grad) starts no pool."""
    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(tmp_path))

    @wp.kernel(module="unique", enable_backward=True)  # (the suite compiles without adjoints: conftest.py)
    def _twice(x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32)):
        y[wp.tid()] = 2.0 * x[wp.tid()]

    x = wp.full(3, 1.0, dtype=wp.float32, device="cpu", requires_grad=True)
    y = wp.zeros(3, dtype=wp.float32, device="cpu", requires_grad=True)
    tape = wp.Tape()
    with tape:
        load = load_modules([_twice.module], "cpu", max_workers=2)
        assert load.modules == 0 and tape.scopes == [], (load, tape.scopes)  # (the pool's threads kept off it)
        wp.launch(_twice, dim=3, inputs=[x], outputs=[y], device="cpu")
    tape.backward(grads={y: wp.ones(3, dtype=wp.float32, device="cpu")})
    assert x.grad.numpy().tolist() == [2.0, 2.0, 2.0]

    assert tape_safe_workers(4, {"requires_grad": True}) == 0 and tape_safe_workers(4, {}) == 4
    sim = Simulation.open(falling_cube(), solver="semi_implicit", solver_options={"requires_grad": True}, device="cpu",
                          live=False, record=False)  # fmt: skip
    assert sim.load_kernels().workers == 0
    sim.close()


def test_a_differentiable_run_waits_for_the_pools_before_it(monkeypatch):
    """A pool that nothing waited for (a Simulation that ran no frame, an environment's) could still be loading when a
    later differentiable run enters its tape, and straddle it. The differentiable run's setup cancels such pools: the
    modules not begun are dropped, the load under way is waited for, each module's loads are unlocked again; a closed
    Simulation's pool stops likewise."""
    from newton_usd.solvers import kernel_loading

    @wp.kernel(module="unique")
    def _one(x: wp.array(dtype=wp.float32)):
        x[wp.tid()] = 1.0

    @wp.kernel(module="unique")
    def _two(x: wp.array(dtype=wp.float32)):
        x[wp.tid()] = 2.0

    began, release, loads = threading.Event(), threading.Event(), []

    def force_load(device, modules, max_workers):  # (a load that takes as long as the test says)
        loads.append(modules[0])
        began.set()
        assert release.wait(60)

    monkeypatch.setattr(kernel_loading.wp, "force_load", force_load)
    pool = kernel_loading.KernelLoading("cpu", 1)
    pool.add([_one.module, _two.module])
    assert began.wait(60)  # (the pool's thread is loading _one; _two waits in the queue)
    settled = threading.Thread(target=tape_safe_workers, args=(None, {"requires_grad": True}))
    settled.start()
    settled.join(0.2)
    assert settled.is_alive()  # (waits for the load under way)
    release.set()
    settled.join(60)
    assert not settled.is_alive()
    assert loads == [_one.module]  # (_two dropped: loaded where it is launched)
    assert "load" not in _one.module.__dict__ and "load" not in _two.module.__dict__

    began.clear()
    release.clear()
    monkeypatch.setattr(Simulation, "kernel_workers", 0)
    sim = Simulation.open(falling_cube(), solver="xpbd", device="cpu", live=False, record=False)
    sim.stepper.kernel_loading = pool = kernel_loading.KernelLoading("cpu", 1)  # (a pool still loading at the close)
    pool.add([_two.module, _one.module])
    assert began.wait(60)
    sim.close()  # (does not wait for the load under way)
    assert "load" not in _two.module.__dict__ and "load" not in _one.module.__dict__
    release.set()
    tape_safe_workers(None, {"requires_grad": True})  # (and a differentiable run waits for it)
    assert loads == [_one.module, _two.module] and not kernel_loading._pools
