"""usdsim batch: sweeps of a sample stage on the local executor and on a local Ray cluster, failed and
hung runs, a killed Ray worker, --resume."""

import math
import os
import shutil
import signal
import sys
import threading
import time

import numpy as np
import pytest
from pxr import Usd

from newton_usd import cli
from newton_usd.batch import run_sweep
from newton_usd.batch.table import read_csv

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PENDULUM = os.path.join(ROOT, "sample_stages", "pendulum.usda")
BOB, HINGE = "/World/Pendulum/Bob", "/World/Pendulum/Hinge"
MASS = f"{BOB}.physics:mass"
STIFFNESS = f"{HINGE}.drive:angular:physics:stiffness"  # N m per degree
ANGLE = f"{HINGE}.state:angular:physics:position"
MASSES = [1, 4]
STIFFNESSES = [1, 2, 4, 8]
# Undamped, about a 30 degree target: the bob oscillates about its equilibrium (the joint limit is far).
FIXED = [f"{HINGE}.drive:angular:physics:damping=0", f"{HINGE}.drive:angular:physics:targetPosition=30"]
DETERMINISTIC = ("index", "run", MASS, STIFFNESS, "status", "exit_code", "error", "frames", "steps", "resumed")


def _sweep(stage=PENDULUM, **extra):
    return {
        "stages": [stage],
        "grid": {MASS: MASSES, STIFFNESS: STIFFNESSES},
        "set": FIXED,
        "frames": 120,
        "write_joint_states": True,
        "record": [BOB, ANGLE],
        **extra,
    }


def _period(output: str) -> float:
    """The joint angle's oscillation period in the output stage: mean time between upward crossings of its mean."""
    stage = Usd.Stage.Open(output)
    attr = stage.GetAttributeAtPath(ANGLE)
    times = np.array(attr.GetTimeSamples()) / stage.GetTimeCodesPerSecond()
    angle = np.array([attr.Get(t) for t in attr.GetTimeSamples()])
    d = angle - 0.5 * (angle.max() + angle.min())
    up = np.nonzero((d[:-1] < 0) & (d[1:] >= 0))[0]
    crossings = times[up] + (times[up + 1] - times[up]) * (-d[up] / (d[up + 1] - d[up]))
    assert len(crossings) >= 2, output
    return float(np.mean(np.diff(crossings)))


def _expected_period(mass: float, stiffness_per_degree: float) -> float:
    """Small oscillations about the drive's equilibrium: I = m l^2 + I_yy, k = drive + m g l cos(theta)."""
    k_drive, length, target = stiffness_per_degree * 180 / math.pi, 0.5, math.radians(30)
    thetas = np.linspace(0, target, 100001)  # equilibrium: k (target - theta) = m g l sin(theta)
    theta = thetas[np.argmin(np.abs(k_drive * (target - thetas) - mass * 9.81 * length * np.sin(thetas)))]
    k = k_drive + mass * 9.81 * length * math.cos(theta)
    return 2 * math.pi * math.sqrt((mass * length**2 + 0.004) / k)


def _table(rows):
    return [{k: row.get(k) for k in (*DETERMINISTIC, *(c for c in row if "@end" in c))} for row in rows]


@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("local")
    return out, run_sweep(_sweep(), out, jobs=2)


def test_grid_sweep_runs_every_combination_and_follows_the_overrides(local_sweep):
    out, result = local_sweep
    assert result.ran == 8 and not result.failed and not result.interrupted
    rows = read_csv(result.csv)
    assert len(rows) == 8
    assert [(float(r[MASS]), float(r[STIFFNESS])) for r in rows] == [(m, k) for m in MASSES for k in STIFFNESSES]
    outputs = {r["output"] for r in rows}
    assert len(outputs) == 8 and all(os.path.isfile(p) and p.startswith(str(out)) for p in outputs)
    periods = {}
    for row in rows:
        mass, stiffness = float(row[MASS]), float(row[STIFFNESS])
        stage = Usd.Stage.Open(row["output"])
        assert stage.GetAttributeAtPath(MASS).Get() == mass  # the override is in the output
        periods[mass, stiffness] = period = _period(row["output"])
        assert period == pytest.approx(_expected_period(mass, stiffness), rel=0.15), (mass, stiffness)
        # The recorded columns are the output's last values.
        last = stage.GetAttributeAtPath(ANGLE).Get(stage.GetEndTimeCode())
        assert float(row[f"{ANGLE}@end"]) == pytest.approx(last)
        assert int(row["frames"]) == 120 and row["status"] == "ok" and row["exit_code"] == "0"
    for k in STIFFNESSES:  # a heavier pendulum swings slower
        assert periods[4, k] > 1.3 * periods[1, k]
    for m in MASSES:  # a stiffer drive, faster
        assert all(periods[m, a] > 1.2 * periods[m, b] for a, b in zip(STIFFNESSES, STIFFNESSES[1:], strict=False))


def test_resume_reruns_nothing_unchanged_and_reruns_an_edited_stage(tmp_path):
    stage = tmp_path / "pendulum.usda"
    shutil.copy(PENDULUM, stage)
    top = tmp_path / "top.usda"  # the pendulum as a sublayer: an edit of the sublayer is an edit of the stage
    top.write_text('#usda 1.0\n(\n    defaultPrim = "World"\n    subLayers = [@./pendulum.usda@]\n)\n')
    sweep = {"stages": [str(top)], "grid": {MASS: [1, 2]}, "frames": 6}
    first = run_sweep(sweep, tmp_path / "out", jobs=2)
    assert first.ran == 2 and not first.failed
    again = run_sweep(sweep, tmp_path / "out", resume=True)
    assert again.ran == 0 and [r["resumed"] for r in again.rows] == [True, True]
    assert _table(again.rows) == [{**r, "resumed": True} for r in _table(first.rows)]
    stage.write_text(stage.read_text().replace("double radius = 0.1", "double radius = 0.12"))
    edited = run_sweep(sweep, tmp_path / "out", resume=True)
    assert edited.ran == 2 and [r["resumed"] for r in edited.rows] == [False, False]
    grown = run_sweep({**sweep, "grid": {MASS: [1, 2, 3]}}, tmp_path / "out", resume=True)
    assert grown.ran == 1 and [r["resumed"] for r in grown.rows] == [True, True, False]


def _hanging_pendulum(tmp_path):
    """The pendulum with MuJoCo's time step authorable: 2e-7 s (83,333 steps a frame, under usdsim's limit of
    100,000) makes a run of 600 frames (50 million steps) take minutes (C MuJoCo steps it at about 290,000 steps a
    second on this machine: 60 frames were done in 17 s, within the test's 20 s timeout on a quiet machine)."""
    scene = 'def PhysicsScene "PhysicsScene"'
    text = open(PENDULUM).read().replace(scene, scene + ' (prepend apiSchemas = ["MjcSceneAPI"])')
    path = tmp_path / "pendulum_mjc.usda"
    path.write_text(text)
    return path


@pytest.mark.soak
def test_failed_and_hung_runs_get_their_rows_and_the_others_finish(tmp_path):
    garbage = tmp_path / "broken.usda"
    garbage.write_text("#usda 1.0\ndef Xform (\n")
    step = "/World/PhysicsScene.mjc:option:timestep"
    sweep = {"stages": [str(_hanging_pendulum(tmp_path)), str(garbage)], "grid": {step: [0.002, 2e-7, 0.001]},
             "frames": 600}  # fmt: skip
    result = run_sweep(sweep, tmp_path / "out", jobs=2, timeout=20)
    rows = {(r["stage"].rsplit("/", 1)[-1], r[step]): r for r in result.rows}
    assert len(rows) == 6
    for dt in (0.002, 0.001):
        good = rows["pendulum_mjc.usda", dt]
        assert good["status"] == "ok" and os.path.isfile(good["output"])
    hung = rows["pendulum_mjc.usda", 2e-7]
    assert hung["status"] == "timeout" and hung["exit_code"] == 124 and "timed out after 20 s" in hung["error"]
    for dt in (0.002, 2e-7, 0.001):  # the broken stage: one row per run, with pxr's reason
        assert rows["broken.usda", f"{dt!r}"]["exit_code"] == 2
        assert "broken.usda" in rows["broken.usda", f"{dt!r}"]["error"]
    assert len(read_csv(result.csv)) == 6


def _processes_writing(log_path: str) -> list:
    """The pids whose stdout is ``log_path`` (a run's process)."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/fd/1") == log_path:
                pids.append(int(pid))
        except OSError:
            continue
    return pids


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the run's process in /proc")
def test_a_crashed_run_gets_its_row_and_the_others_finish(tmp_path):
    step = "/World/PhysicsScene.mjc:option:timestep"
    sweep = {"stages": [str(_hanging_pendulum(tmp_path))], "grid": {step: [0.002, 2e-7, 0.001]}, "frames": 600}
    out = tmp_path / "out"
    done = {}
    thread = threading.Thread(target=lambda: done.setdefault("result", run_sweep(sweep, out, jobs=1)))
    thread.start()
    from newton_usd.batch.plan import expand  # noqa: PLC0415
    from newton_usd.batch.spec import sweep_from_dict  # noqa: PLC0415

    hanging = expand(sweep_from_dict(sweep), str(out))[1]
    log = os.path.join(hanging.run_dir, "usdsim.log")
    deadline = time.monotonic() + 300
    while not _processes_writing(log) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in _processes_writing(log):
        os.kill(pid, signal.SIGKILL)  # as a segfault or the OOM killer would end it
    thread.join(300)
    rows = done["result"].rows
    assert [r["status"] for r in rows] == ["ok", "crashed", "ok"]
    assert rows[1]["exit_code"] == -signal.SIGKILL and "crashed: SIGKILL" in rows[1]["error"]


def test_usdsim_batch_command_line(tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["batch", PENDULUM, "--vary", f"{MASS}=1,2", "-n", "4", "-o", str(out), "-q", "--record", BOB]
    assert cli.main(argv) == 0
    rows = read_csv(out / "runs.csv")
    assert [r[MASS] for r in rows] == ["1.0", "2.0"] and all(r["status"] == "ok" for r in rows)
    assert float(rows[0][f"{BOB}@end.z"]) == pytest.approx(1.5)  # the pivot, where the bob's frame is
    # Bad input: one line naming the prim and attribute, nothing runs.
    assert cli.main(["batch", PENDULUM, "--vary", f"{BOB}.physics:mas=1,2", "-o", str(tmp_path / "bad")]) == 1
    rows = read_csv(tmp_path / "bad" / "runs.csv")
    assert all("/World/Pendulum/Bob" in r["error"] and "physics:mass" in r["error"] for r in rows)
    assert cli.main(["batch", PENDULUM, "--vary", "nonsense", "-o", str(tmp_path / "bad2")]) == 2
    with pytest.raises(SystemExit, match="2"):  # argparse's usage error, as usdsim run's
        cli.main(["batch", PENDULUM, "--vary", f"{MASS}=1", "--substeps", "x", "-o", str(tmp_path / "b3")])
    assert cli.main(["batch", PENDULUM, "--vary", f"{MASS}=1", "--substeps", "0", "-o", str(tmp_path / "b4")]) == 1
    assert read_csv(tmp_path / "b4" / "runs.csv")[0]["error"] == "--substeps must be >= 1, got 0"
    err = capsys.readouterr().err
    assert "usdsim: error: --vary wants PRIM.ATTR=V1,V2" in err and "Traceback" not in err
    assert "argument --substeps: must be a whole number or auto, got 'x'" in err


def test_sweep_file_with_random_samples(tmp_path):
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        f'stages = ["{PENDULUM}"]\nframes = 4\noutput = "out"\n'
        f'[grid]\n"{STIFFNESS}" = [1, 2]\n'
        f'[random]\nsamples = 3\nseed = 7\n"{MASS}" = {{ uniform = [0.5, 2.0] }}\n'
        f'"{HINGE}.drive:angular:physics:targetPosition" = {{ choice = [10, 20] }}\n'
    )
    result = run_sweep(str(sweep), jobs=2)
    assert len(result.rows) == 6 and not result.failed and result.csv == str(tmp_path / "out" / "runs.csv")
    masses = [r[MASS] for r in result.rows]
    assert masses[:3] == masses[3:] and all(0.5 <= m <= 2.0 for m in masses) and len(set(masses)) == 3
    again = run_sweep(str(sweep), jobs=2, resume=True)  # the same seed: the same samples, nothing to run
    assert again.ran == 0


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.mark.soak
def test_ray_sweep_gives_the_same_table(ray_cluster, local_sweep, tmp_path):
    _, local = local_sweep
    result = run_sweep(_sweep(), tmp_path / "ray", ray="auto")
    assert not result.failed and len(result.rows) == 8
    assert _table(result.rows) == _table(local.rows)


@pytest.mark.soak
def test_killing_a_ray_worker_loses_no_run(ray_cluster, tmp_path):
    step = "/World/PhysicsScene.mjc:option:timestep"
    # One run of 1e-5 s steps (about 20,000 steps, seconds): long enough to find its worker and kill it.
    sweep = {"stages": [str(_hanging_pendulum(tmp_path))], "grid": {step: [0.002, 1e-5, 0.001, 0.0005]},
             "frames": 12}  # fmt: skip
    done = {}
    thread = threading.Thread(target=lambda: done.setdefault("result", run_sweep(sweep, tmp_path / "out", ray="auto")))
    thread.start()
    killed, deadline = [], time.monotonic() + 300
    while not killed and time.monotonic() < deadline and thread.is_alive():
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                title = open(f"/proc/{pid}/cmdline", "rb").read()
            except OSError:
                continue
            if title.startswith(b"ray::usdsim:pendulum_mjc") and not killed:
                os.kill(int(pid), signal.SIGKILL)
                killed.append(pid)
        time.sleep(0.05)
    thread.join(300)
    assert killed, "no Ray worker running a run was found"
    rows = done["result"].rows
    assert len(rows) == 4 and [r["status"] for r in rows] == ["ok"] * 4


def test_parquet_table_holds_the_same_rows(local_sweep):
    pq = pytest.importorskip("pyarrow.parquet")
    _, result = local_sweep
    table = pq.read_table(result.parquet).to_pylist()
    assert _table(table) == _table(result.rows)
    assert isinstance(table[0][MASS], float) and table[0]["status"] == "ok"


def test_the_sample_sweep_file_expands_to_its_runs(tmp_path):
    from newton_usd.batch import load_sweep  # noqa: PLC0415
    from newton_usd.batch.plan import expand  # noqa: PLC0415

    sweep = load_sweep(os.path.join(ROOT, "sample_stages", "pendulum_sweep.toml"))
    jobs = expand(sweep, str(tmp_path))
    target = f"{HINGE}.drive:angular:physics:targetPosition"
    assert len(jobs) == 16 and all(j.stage == PENDULUM and j.error is None for j in jobs)
    assert sorted({j.values[MASS] for j in jobs}) == [1.0, 4.0] and len({j.values[target] for j in jobs}) == 2
    assert all(20 <= j.values[target] <= 40 for j in jobs) and len({j.name for j in jobs}) == 16


def test_equal_random_draws_are_runs_of_their_own_and_a_repeated_grid_value_runs_once(tmp_path):
    from newton_usd.batch import sweep_from_dict  # noqa: PLC0415
    from newton_usd.batch.plan import expand  # noqa: PLC0415

    target = f"{HINGE}.drive:angular:physics:targetPosition"
    sweep = sweep_from_dict(
        {"stages": [PENDULUM], "grid": {MASS: [1, 1, 2]}, "random": {"samples": 3, target: {"choice": [5]}}}
    )
    jobs = expand(sweep, str(tmp_path))
    assert [(j.values[MASS], j.values[target]) for j in jobs] == [(1.0, 5.0)] * 3 + [(2.0, 5.0)] * 3
    assert len({j.run_dir for j in jobs}) == 6


@pytest.mark.soak
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the run's process in /proc")
def test_ctrl_c_kills_the_runs_going_on_and_keeps_the_finished_rows(tmp_path):
    import subprocess  # noqa: PLC0415

    step = "/World/PhysicsScene.mjc:option:timestep"
    stage = str(_hanging_pendulum(tmp_path))
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "newton_usd.cli", "batch", stage, "--vary", f"{step}=0.002,2e-7", "-n", "600",
            "-o", str(out), "-j", "1", "-q"]  # fmt: skip
    from conftest import _default_sigint  # noqa: PLC0415  (SIGINT not inherited as ignored: a background job's)

    batch = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint
    )
    from newton_usd.batch import sweep_from_dict  # noqa: PLC0415
    from newton_usd.batch.plan import expand  # noqa: PLC0415

    sweep = sweep_from_dict({"stages": [stage], "grid": {step: ["0.002", "2e-7"]}, "frames": 600})
    hanging = expand(sweep, str(out))[1]
    log = os.path.join(hanging.run_dir, "usdsim.log")
    deadline = time.monotonic() + 300
    while not _processes_writing(log) and time.monotonic() < deadline:
        time.sleep(0.1)
    run = _processes_writing(log)
    assert run
    batch.send_signal(signal.SIGINT)
    assert batch.wait(120) == 130
    rows = read_csv(out / "runs.csv")
    assert [(r[step], r["status"]) for r in rows] == [("0.002", "ok")]
    deadline = time.monotonic() + 60  # a busy machine takes a moment to reap the killed process
    while any(os.path.exists(f"/proc/{pid}") for pid in run) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(os.path.exists(f"/proc/{pid}") for pid in run)  # the hung run was killed
