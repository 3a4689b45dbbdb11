import hashlib
import os
import shutil
import subprocess
import sys
import time

import pytest
from pxr import Sdf, Usd, UsdGeom
from usdsim_fork import run_usdsim

from conftest import SAMPLE_STAGES, SAMPLES, UsdsimProcess, _default_sigint, has_cuda, usdsim_command


def usdsim(*args):
    """``usdsim ARGS``, a process of its own forked from a preloaded server (tests/usdsim_fork.py)."""
    return run_usdsim(args)


# The console script of the environment running the tests (not whatever `usdsim` is first on PATH).
def console_script(*args):
    return subprocess.run(usdsim_command() + [str(a) for a in args], capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("name", SAMPLE_STAGES)
def test_usdsim_writes_time_sampled_motion_and_leaves_the_source_alone(name, tmp_path):
    src = tmp_path / name
    shutil.copy(SAMPLES / name, src)
    before = hashlib.sha256(src.read_bytes()).hexdigest()
    r = usdsim(src, "--num-frames", 30)
    assert r.returncode == 0, r.stderr
    out = tmp_path / name.replace(".usda", ".sim.usda")
    assert f"wrote {out}" in r.stdout
    assert "30 frames" in r.stdout and "steps/s" in r.stdout
    assert hashlib.sha256(src.read_bytes()).hexdigest() == before
    stage = Usd.Stage.Open(str(out))
    moved = 0
    for prim in stage.Traverse():
        attr = prim.GetAttribute("xformOp:translate:physics")
        if not attr:
            continue
        assert attr.GetNumTimeSamples() == 31
        xf = UsdGeom.Xformable(prim)
        m0 = xf.ComputeLocalToWorldTransform(0)
        m1 = xf.ComputeLocalToWorldTransform(30)
        moved += any(abs(m1[i][j] - m0[i][j]) > 1e-3 for i in range(4) for j in range(4))
    assert moved >= 1
    assert stage.GetEndTimeCode() == 30


def test_output_path_and_run_subcommand(tmp_path):
    out = tmp_path / "sub" / "result.usda"
    os.makedirs(out.parent)
    r = console_script("run", SAMPLES / "pendulum.usda", "-o", out, "-n", "5", "--quiet")  # (the installed one)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    stage = Usd.Stage.Open(str(out))
    layer = stage.GetRootLayer()
    assert layer.subLayerPaths[0].endswith("sample_stages/pendulum.usda")


def test_xform_ops_matrix_writes_one_transform_per_prim_with_the_same_motion(tmp_path):
    outputs = {}
    for ops in ("trs", "matrix"):
        outputs[ops] = tmp_path / f"boxes.{ops}.usda"
        r = usdsim(SAMPLES / "boxes_on_ground.usda", "-o", outputs[ops], "-n", "20", "--quiet", "--xform-ops", ops)
        assert r.returncode == 0, r.stderr
    trs, matrix = (Usd.Stage.Open(str(outputs[k])) for k in ("trs", "matrix"))
    bodies = [p.GetPath() for p in matrix.Traverse() if p.GetAttribute("xformOp:transform:physics")]
    assert bodies
    for path in bodies:
        prim = matrix.GetPrimAtPath(path)
        assert list(prim.GetAttribute("xformOpOrder").Get()) == ["xformOp:transform:physics"]
        assert prim.GetAttribute("xformOp:transform:physics").GetNumTimeSamples() == 21
        assert not prim.GetAttribute("xformOp:translate:physics")
        for t in (0, 10, 20):
            a = UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(t)
            b = UsdGeom.Xformable(trs.GetPrimAtPath(path)).ComputeLocalToWorldTransform(t)
            assert all(abs(a[i][j] - b[i][j]) < 1e-6 for i in range(4) for j in range(4)), (path, t)


@pytest.mark.parametrize(
    "content,expected",
    [
        (None, "no such file"),
        ("not usd at all\n", "not a USD file pxr can read (<"),
        ('#usda 1.0\ndef Xform "A"\n{\n}\n', "no physics to simulate"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, content, expected):
    path = tmp_path / "input.usda"
    if content is not None:
        path.write_text(content)
    r = usdsim(path)
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("usdsim: error: ") and str(path) in lines[0] and expected in lines[0]
    assert "Traceback" not in r.stderr


def test_verbose_shows_the_traceback(tmp_path):
    r = usdsim(tmp_path / "missing.usda", "--verbose")
    assert r.returncode == 2
    assert "Traceback" in r.stderr and "no such file" in r.stderr


def test_refuses_to_overwrite_the_source(tmp_path):
    src = tmp_path / "cube.usda"
    shutil.copy(SAMPLES / "boxes_on_ground.usda", src)
    before = src.read_bytes()
    r = usdsim(src, "-o", src, "-n", "2")
    assert r.returncode == 2 and "refusing to overwrite the source" in r.stderr
    assert src.read_bytes() == before


def test_blow_up_names_frame_and_body_saves_and_exits_3(tmp_path):
    from pxr import Gf, UsdPhysics

    from stages import falling_cube

    src = tmp_path / "fast.usda"
    stage = falling_cube(src)
    UsdPhysics.RigidBodyAPI(stage.GetPrimAtPath("/Cube")).CreateVelocityAttr(Gf.Vec3f(1e12, 0, 0))
    stage.Save()
    out = tmp_path / "fast.sim.usda"
    r = usdsim(src, "-o", out, "-n", "10")
    assert r.returncode == 3, r.stdout + r.stderr
    assert "frame 1: /Cube" in r.stderr and "blew up" in r.stderr
    assert "Traceback" not in r.stderr
    assert out.exists()


@pytest.mark.skipif(has_cuda(), reason="checks the message on a machine without CUDA")
def test_cuda_device_without_cuda_is_a_clear_error():
    r = usdsim(SAMPLES / "pendulum.usda", "--device", "cuda", "-n", "1")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1].startswith("usdsim: error: device 'cuda' is not available")


def test_explain_shows_value_unit_and_source(tmp_path):
    from pxr import Sdf

    from stages import pendulum

    src = tmp_path / "p.usda"
    stage = pendulum(src)
    hinge = stage.GetPrimAtPath("/Hinge")
    hinge.CreateAttribute("newton:damping", Sdf.ValueTypeNames.Float).Set(1.0)
    hinge.CreateAttribute("mjc:damping", Sdf.ValueTypeNames.Double).Set(9.0)
    stage.GetPrimAtPath("/PhysicsScene").CreateAttribute("mjc:option:timestep", Sdf.ValueTypeNames.Double).Set(0.004)
    stage.Save()
    r = usdsim("explain", src, "/Hinge", "/PhysicsScene")
    assert r.returncode == 0, r.stderr
    rows = {tuple(line.split()[:2]): line for line in r.stdout.splitlines()[2:]}
    assert "57.2958" in rows[("/Hinge", "damping")] and "newton:damping" in rows[("/Hinge", "damping")]
    assert rows[("/Hinge", "armature")].rstrip().endswith("default")
    assert (
        "0.004" in rows[("/PhysicsScene", "timestep")] and "mjc:option:timestep" in rows[("/PhysicsScene", "timestep")]
    )
    assert not any(line.startswith("/Pendulum/Ball") for line in r.stdout.splitlines())
    r = usdsim("explain", src, "/Hinge", "--order", "mjc,newton")
    assert "mjc:damping" in r.stdout and " 9 " in r.stdout


def test_check_lists_approximations_and_unused_values(tmp_path):
    from pxr import Sdf, UsdPhysics

    from stages import add_box, falling_cube

    src = tmp_path / "c.usda"
    stage = falling_cube(src)
    add_box(stage, "/Other", 0.2, (1, 0, 1), mass=1.0)
    UsdPhysics.DistanceJoint.Define(stage, "/Dist").CreateBody1Rel().SetTargets([Sdf.Path("/Other")])
    stage.GetPrimAtPath("/Cube").CreateAttribute("mjc:unknownThing", Sdf.ValueTypeNames.Double).Set(1.0)
    stage.GetPrimAtPath("/Cube").CreateAttribute("mjc:condim", Sdf.ValueTypeNames.Int).Set(1)
    stage.Save()
    r = usdsim("check", src)
    assert r.returncode == 0, r.stderr
    assert "distance joint with neither a minimum nor a maximum distance does not constrain: /Dist" in r.stdout
    assert "mjc:unknownThing (1 prim: /Cube)" in r.stdout
    assert "mjc:condim" not in r.stdout  # read and used


def test_convert_then_simulate_an_mjcf_model(tmp_path):
    from test_mjcf import ROBOT

    src = tmp_path / "robot.xml"
    src.write_text(ROBOT)
    r = usdsim("convert", src)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "robot.usda"
    assert f"wrote {out}" in r.stdout
    r = usdsim(out, "-n", "10", "-q")
    assert r.returncode == 0, r.stderr
    stage = Usd.Stage.Open(str(tmp_path / "robot.sim.usda"))
    attr = stage.GetPrimAtPath("/robot/box").GetAttribute("xformOp:translate:physics")
    assert attr.GetNumTimeSamples() > 1
    r = usdsim(src)  # usdsim on the MJCF itself says how to convert it
    assert r.returncode == 2 and "usdsim convert" in r.stderr


def test_info_summarizes_the_stage_and_the_simulation():
    r = usdsim("info", SAMPLES / "cartpole.usda")
    assert r.returncode == 0, r.stderr
    assert "60 time codes/s, frames 0-120" in r.stdout
    assert "2 bodies, 3 shapes, 2 joints (1 prismatic, 1 revolute), 1 articulation" in r.stdout
    assert "8 substeps/frame at 60 fps" in r.stdout and "integrator implicitfast" in r.stdout


def _box_z(stage, time_code):
    xf = UsdGeom.Xformable(stage.GetPrimAtPath("/World/Box"))
    return xf.ComputeLocalToWorldTransform(time_code).ExtractTranslation()[2]


def test_json_summary_duration_record_every_and_set(tmp_path):
    import json

    src = tmp_path / "boxes.usda"
    shutil.copy(SAMPLES / "boxes_on_ground.usda", src)
    before = src.read_bytes()
    out = tmp_path / "out.usda"
    sets = ["--set", "/World/Box.physics:mass=3", "--set", "/World/PhysicsScene.physics:gravityMagnitude=4.9"]
    r = usdsim(src, "-o", out, "--duration", "0.5", "--record-every", "5", "--format", "json", *sets)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    for key in ("device", "solver", "backend", "bodies", "worlds", "frames", "steps_per_second", "realtime_factor",
                "solver_seconds", "sync_seconds", "first_step_seconds", "output", "exit_code"):  # fmt: skip
        assert key in summary
    assert summary["frames"] == 30 and summary["output"] == str(out) and summary["exit_code"] == 0
    assert src.read_bytes() == before  # the overrides went into the output, not the source
    stage = Usd.Stage.Open(str(out))
    attr = stage.GetPrimAtPath("/World/Box").GetAttribute("xformOp:translate:physics")
    assert attr.GetTimeSamples() == [0, 5, 10, 15, 20, 25, 30]
    assert stage.GetPrimAtPath("/World/Box").GetAttribute("physics:mass").Get() == 3
    # half gravity: after 0.25 s the box has fallen 0.5 * 4.9 * 0.25^2 = 0.153 m
    assert 1.0 - _box_z(stage, 15) == pytest.approx(0.153, abs=0.005)


@pytest.mark.parametrize(
    "args,expected",
    [
        (["--set", "/World/Nope.physics:mass=1"], "/World/Nope: --set: no such prim"),
        (["--set", "/World/Box.physics:mas=1"], "did you mean physics:mass"),
        (["--set", "/World/Box.physics:mass=heavy"], "'heavy' is not a float value"),
        (["--set", "World/Box"], "--set wants"),
        (["--solver", "bullet"], "unknown solver 'bullet'"),
        (["--device", "tpu"], "tpu"),
        (["-o", "/no/such/dir/out.usda"], "not a writable directory"),
        (["--worlds", "0"], "--worlds must be >= 1"),
        (["--dt", "-1"], "--dt must be > 0"),
    ],
)
def test_bad_run_arguments_are_one_line_exit_2_and_write_nothing(tmp_path, args, expected):
    src = tmp_path / "boxes.usda"
    shutil.copy(SAMPLES / "boxes_on_ground.usda", src)
    r = usdsim(src, "-n", "2", *args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert expected in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert sorted(os.listdir(tmp_path)) == ["boxes.usda"]


def test_flatten_in_place_benchmark_dt_and_worlds(tmp_path):
    src = tmp_path / "boxes.usda"
    shutil.copy(SAMPLES / "boxes_on_ground.usda", src)
    flat = tmp_path / "flat.usda"
    r = usdsim(src, "-o", flat, "-n", "10", "--flatten", "--dt", "0.004", "--worlds", "3")
    assert r.returncode == 0, r.stderr
    assert "x 3 worlds" in r.stdout and "steps of 4.000 ms (4/frame" in r.stdout  # the step as given
    layer = Sdf.Layer.FindOrOpen(str(flat))
    assert not layer.subLayerPaths and layer.GetPrimAtPath("/World/PhysicsScene")  # self-contained
    assert _box_z(Usd.Stage.Open(str(flat)), 10) < 1.0
    r = usdsim(src, "-n", "10", "--benchmark")
    assert r.returncode == 0 and "wrote nothing" in r.stdout
    assert sorted(os.listdir(tmp_path)) == ["boxes.usda", "flat.usda"]
    r = usdsim(src, "-n", "10", "--in-place")
    assert r.returncode == 0, r.stderr
    assert f"wrote {src}" in r.stdout
    stage = Usd.Stage.Open(str(src))
    assert _box_z(stage, 0) == pytest.approx(1.0) and _box_z(stage, 10) < 1.0


def test_ctrl_c_saves_the_frames_so_far_and_exits_130(tmp_path):
    import re
    import signal

    src = tmp_path / "boxes.usda"
    shutil.copy(SAMPLES / "boxes_on_ground.usda", src)
    out = tmp_path / "out.usda"
    run = UsdsimProcess(src, "-o", out, "-n", "10000000")
    run.wait_for(lambda: run.said("simulating"))  # the run has started (whatever else was said before)
    time.sleep(1.0)  # some frames, likely; the checks below hold for any number (clips: see test_recording_clips)
    run.proc.send_signal(signal.SIGINT)
    code, _, err = run.finish()
    assert code == 130, err
    if "interrupted before the first frame" in err:  # a busy machine: still in the first frame, nothing saved
        assert not out.exists()
        return
    frames = int(re.search(r"interrupted at frame (\d+)", err).group(1))
    stage = Usd.Stage.Open(str(out))
    samples = stage.GetPrimAtPath("/World/Box").GetAttribute("xformOp:translate:physics").GetTimeSamples()
    assert samples == [float(t) for t in range(frames + 1)]  # every frame simulated is saved


PENDULUM_WITH_KEYS = """
<mujoco model="pendulum">
  <worldbody>
    <body name="arm" pos="0 0 1">
      <joint name="swing" type="hinge" axis="0 1 0" ref="0.2"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.03"/>
      <body name="tip" pos="0.5 0 0"><geom size="0.05"/></body>
    </body>
  </worldbody>
  <keyframe>
    <key name="raised" qpos="1.4"/>
    <key name="down" qpos="-1.0" qvel="2"/>
  </keyframe>
</mujoco>
"""


def test_run_starts_from_a_keyframe(tmp_path):
    """`usdsim run --keyframe NAME` starts the converted model in that MJCF keyframe: the first frame
    written is the keyframe's pose, as MuJoCo's mj_resetDataKeyframe gives it; an unknown one is exit 2."""
    import mujoco
    import numpy as np

    src = tmp_path / "pendulum.xml"
    src.write_text(PENDULUM_WITH_KEYS)
    assert usdsim("convert", src).returncode == 0
    m = mujoco.MjModel.from_xml_string(PENDULUM_WITH_KEYS)
    d = mujoco.MjData(m)
    for key in ("raised", "1"):
        out = tmp_path / f"out_{key}.usda"
        r = usdsim(tmp_path / "pendulum.usda", "-n", "2", "-q", "--keyframe", key, "-o", out)
        assert r.returncode == 0, r.stderr
        stage = Usd.Stage.Open(str(out))
        tip = stage.GetPrimAtPath("/pendulum/arm/tip")
        world = UsdGeom.Xformable(tip).ComputeLocalToWorldTransform(stage.GetStartTimeCode())
        mujoco.mj_resetDataKeyframe(m, d, 0 if key == "raised" else 1)
        mujoco.mj_forward(m, d)
        np.testing.assert_allclose(world.ExtractTranslation(), d.xpos[m.body("tip").id], atol=1e-5, err_msg=key)
    r = usdsim(tmp_path / "pendulum.usda", "-n", "2", "--keyframe", "squat", "-o", tmp_path / "out.usda")
    assert r.returncode == 2 and "no keyframe 'squat'" in r.stderr and "raised" in r.stderr


def test_write_worlds_all_writes_each_world_onto_a_copy(tmp_path):
    """``--worlds 4 --write-worlds all``: the output holds worlds 1-3 as copies of the environment (also
    with --flatten); the JSON summary lists them; --in-place and a negative --world-spacing are refused."""
    import json

    src = tmp_path / "cartpole.usda"
    shutil.copy(SAMPLES / "cartpole.usda", src)
    for extra in ([], ["--flatten"]):
        out = tmp_path / f"out{len(extra)}.usda"
        r = usdsim(src, "--worlds", 4, "--write-worlds", "all", "--world-spacing", 3, "-n", 10, "-o", out,
                   "--format", "json", *extra)  # fmt: skip
        assert r.returncode == 0, r.stderr
        summary = json.loads(r.stdout)
        assert summary["world_copies"] == ["/CartPole_world1", "/CartPole_world2", "/CartPole_world3"]
        stage = Usd.Stage.Open(str(out))
        cache = UsdGeom.XformCache(10)
        for k, off in ((1, (3, 0, 0)), (3, (3, 3, 0))):  # identical worlds, on a 2x2 grid 3 units apart
            mine = cache.GetLocalToWorldTransform(stage.GetPrimAtPath(f"/CartPole_world{k}/Cart"))
            first = cache.GetLocalToWorldTransform(stage.GetPrimAtPath("/CartPole/Cart"))
            assert tuple(mine.ExtractTranslation() - first.ExtractTranslation()) == pytest.approx(off, abs=1e-5)
    r = usdsim(src, "--worlds", 2, "--write-worlds", "all", "--in-place")
    assert r.returncode == 2 and "--in-place" in r.stderr
    r = usdsim(src, "--worlds", 2, "--write-worlds", "all", "--world-spacing", -1)
    assert r.returncode == 2 and "--world-spacing" in r.stderr


INTERRUPTIBLE_SETUP = """
import sys, time
from newton_usd.cli.run import interruptible

def setup(job):  # a setup step inside one long C call (time.sleep releases the GIL, as MuJoCo's compiler does)
    print("in setup", flush=True)
    time.sleep(120)
    return 0

sys.exit(interruptible(setup))
"""


def test_ctrl_c_during_a_long_c_call_of_the_setup_exits_130_at_once():
    """A signal handler runs in the main thread between bytecodes only: usdsim runs the setup (imports,
    MuJoCo's compiler, Warp's kernel compiler: C calls) in a worker thread, so Ctrl-C is seen at once."""
    import signal

    proc = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTIBLE_SETUP],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,  # (not inherited as ignored)
    )
    assert proc.stdout.readline() == "in setup\n"  # our own process: no other output comes first
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=100)  # well before the 120 s the C call takes
    assert proc.returncode == 130, err
    assert err.strip() == "usdsim: interrupted before the first frame: nothing simulated, nothing saved"
    assert time.monotonic() - t0 < 60


@pytest.mark.soak  # (a planted bug in a fresh interpreter's usdsim run: a minute on 2 cores; .ci/run runs it)
def test_an_unexpected_exception_is_one_line_unless_debugging(tmp_path, monkeypatch):
    """A bug of ours (here: an exception planted in the importer) ends in one line and exit 1; with -v or
    NEWTON_USD_DEBUG=1, the traceback (the test suite sets it, so that real bugs show theirs)."""
    src = tmp_path / "boxes.usda"
    shutil.copy(SAMPLES / "boxes_on_ground.usda", src)
    plant = tmp_path / "sitecustomize.py"
    plant.write_text(
        "import newton_usd.usd.importer as m\n"
        "def boom(*a, **k):\n    raise ZeroDivisionError('planted')\n"
        "m.add_usd = boom\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # (read by a fresh interpreter: the console script)
    monkeypatch.delenv("NEWTON_USD_DEBUG", raising=False)
    r = console_script(src, "-n", "2")
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1].startswith("usdsim: internal error: ZeroDivisionError: planted")
    assert "Traceback" not in r.stderr
    monkeypatch.setenv("NEWTON_USD_DEBUG", "1")
    r = console_script(src, "-n", "2")
    assert r.returncode == 1 and "Traceback" in r.stderr and "planted" in r.stderr


def test_a_reader_that_stops_early_is_not_an_error(tmp_path):
    """`usdsim explain STAGE | head -1`: the closed pipe ends the run quietly with exit 0, no internal error.
    400 bodies give far more rows than a pipe buffers, so usdsim is still writing when the reader leaves."""
    from stages import pile

    src = tmp_path / "pile.usda"
    pile(src, 400).Save()
    proc = subprocess.Popen(
        usdsim_command() + ["explain", str(src)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().startswith("prim")
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=600) == 0, err
    assert "Error" not in err and "Traceback" not in err


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="watches /proc/PID/maps (Linux)")
def test_ctrl_c_while_python_imports_newton_usd_exits_130_without_a_traceback(tmp_path):
    """The console script imports newton_usd (USD's libraries: about a second) inside its Ctrl-C handling.
    SIGINT is sent as soon as USD's first library is loaded: during the import or, on a fast machine,
    just after; either way the user sees one line and exit 130."""
    import signal

    src = tmp_path / "boxes.usda"
    shutil.copy(SAMPLES / "boxes_on_ground.usda", src)
    proc = subprocess.Popen(
        usdsim_command() + [str(src), "-o", str(tmp_path / "out.usda"), "-n", "1000000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            with open(f"/proc/{proc.pid}/maps") as f:
                if "usd_core" in f.read():  # usd-core's shared libraries: pxr is being imported
                    break
        except OSError:  # (the process ended between poll and open: its exit code is checked below)
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err
