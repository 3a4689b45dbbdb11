"""A recording streamed to USD value clips (Simulation.stream_recording, usdsim --clip-frames): the
saved output, opened fresh with pxr, has the same values and time samples as an unstreamed recording
of the same stage, and the output layer in memory never holds more than one chunk."""

import json
import os
import re
import shutil

import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdUtils
from test_cli import usdsim
from test_instancers import instancer_stage

from newton_usd import Simulation
from newton_usd.errors import NewtonUsdError
from newton_usd.sync.clips import CLIP_SET, clip_directory

from conftest import SAMPLES, UsdsimProcess
from stages import add_box

CLIP_FILE = re.compile(r"^clip\.([0-9a-f]{8})\.\d{4}\.usdc$")


def mixed_stage(path):
    """Every kind of animated attribute: a PointInstancer's three body instances (positions and
    orientationsf), a box (translate and orient ops), a box under a non-uniformly scaled Xform (one
    transform matrix) and a pendulum on a hinge (joint states)."""
    stage = instancer_stage(str(path))
    add_box(stage, "/World/Box", 0.2, (0, 2, 1), mass=1.0, rotate_xyz=(10, 20, 30))
    stretched = UsdGeom.Xform.Define(stage, "/World/Stretched")
    stretched.AddTranslateOp().Set(Gf.Vec3d(0, -2, 0))
    stretched.AddScaleOp().Set(Gf.Vec3f(1, 3, 1))
    add_box(stage, "/World/Stretched/Box", 0.2, (0, 0, 1), mass=1.0)
    bob = UsdGeom.Xform.Define(stage, "/World/Pendulum")
    bob.AddTranslateOp().Set(Gf.Vec3d(-3, 0, 2))
    bob.AddRotateXYZOp().Set(Gf.Vec3f(0, 30, 0))
    mass = UsdPhysics.MassAPI.Apply(UsdPhysics.RigidBodyAPI.Apply(bob.GetPrim()).GetPrim())
    mass.CreateMassAttr(1.0)
    mass.CreateCenterOfMassAttr(Gf.Vec3f(0, 0, -0.5))
    mass.CreateDiagonalInertiaAttr(Gf.Vec3f(0.004, 0.004, 0.004))
    hinge = UsdPhysics.RevoluteJoint.Define(stage, "/World/Hinge")
    hinge.CreateBody1Rel().SetTargets([bob.GetPath()])
    hinge.CreateAxisAttr("Y")
    hinge.CreateLocalPos0Attr(Gf.Vec3f(-3, 0, 2))
    hinge.CreateLocalPos1Attr(Gf.Vec3f(0, 0, 0))
    stage.Save()
    return str(path)


ANIMATED = [
    "/World/Boxes.positions",
    "/World/Boxes.orientationsf",
    "/World/Box.xformOp:translate:physics",
    "/World/Box.xformOp:orient:physics",
    "/World/Stretched/Box.xformOp:transform:physics",
    "/World/Pendulum.xformOp:translate:physics",
    "/World/Hinge.state:angular:physics:position",
    "/World/Hinge.state:angular:physics:velocity",
]
"""The attributes of :func:`mixed_stage` a recording animates (xform_ops "trs")."""
ANIMATED_MATRIX = [p for p in ANIMATED if "/World/Box." not in p and "Pendulum" not in p] + [
    "/World/Box.xformOp:transform:physics",
    "/World/Pendulum.xformOp:transform:physics",
]


def record(src, out, frames, clip_frames=None, record_every=1, xform_ops="trs"):
    """A run of ``src`` saved to ``out``: streamed to clips of ``clip_frames`` frames, or not (None)."""
    stream = {} if clip_frames is None else {"stream_to": out, "clip_frames": clip_frames}
    sim = Simulation.open(src, device="cpu", joint_states=True, live=False, xform_ops=xform_ops, **stream)
    sim.record_every = record_every
    sim.run(frames)
    sim.save(out)
    return sim


def written_attributes(path) -> list:
    """Every attribute an (unstreamed) output file authors."""
    layer = Sdf.Layer.FindOrOpen(str(path))
    out = []
    layer.Traverse(Sdf.Path.absoluteRootPath, lambda p: out.append(p) if layer.GetAttributeAtPath(p) else None)
    return out


def assert_same_recording(plain, streamed, animated=ANIMATED):
    """``streamed`` (clips) shows what ``plain`` (time samples) does: every attribute of ``plain``, its
    time samples and its value at each of them, between them, outside them and at the default time."""
    a, b = Usd.Stage.Open(str(plain)), Usd.Stage.Open(str(streamed))
    assert (a.GetStartTimeCode(), a.GetEndTimeCode()) == (b.GetStartTimeCode(), b.GetEndTimeCode())
    paths = written_attributes(plain)
    assert {str(p) for p in paths} >= set(animated)
    sampled = 0
    for path in paths:
        x, y = a.GetAttributeAtPath(path), b.GetAttributeAtPath(path)
        samples = x.GetTimeSamples()
        assert y.GetTimeSamples() == samples, path
        between = [(t0 + t1) / 2 for t0, t1 in zip(samples, samples[1:], strict=False)]
        times = [Usd.TimeCode.Default(), -5.0, *samples, *between, (samples or [0])[-1] + 3.5]
        for t in times:
            assert x.Get(t) == y.Get(t), (str(path), t)
        sampled += bool(samples)
    assert sampled >= len(animated)
    return b


def clip_runs(directory) -> set:
    return {m.group(1) for m in map(CLIP_FILE.match, os.listdir(directory)) if m}


def assert_uses_clips(path, clips, animated=ANIMATED):
    """The output anchors ``clips`` clips (Usd.ClipsAPI sees them; UsdUtils finds every file) and
    authors no time samples of its own."""
    stage = Usd.Stage.Open(str(path))
    api = Usd.ClipsAPI(stage.GetPrimAtPath("/World"))
    assert CLIP_SET in api.GetClipSets().GetAddedOrExplicitItems()
    assets = api.GetClipAssetPaths(CLIP_SET)
    assert len(assets) == clips
    assert all(a.path.startswith("./") and a.resolvedPath for a in assets)
    assert api.GetClipManifestAssetPath(CLIP_SET).resolvedPath
    assert api.GetClipPrimPath(CLIP_SET) == "/World"
    assert [int(i) for _, i in api.GetClipActive(CLIP_SET)] == list(range(clips))
    layers, _, unresolved = UsdUtils.ComputeAllDependencies(str(path))
    assert not unresolved
    on_disk = {os.path.realpath(p) for p in (layer.realPath for layer in layers) if p}
    directory = clip_directory(path)
    assert {os.path.realpath(os.path.join(directory, n)) for n in os.listdir(directory)} <= on_disk
    root = Sdf.Layer.FindOrOpen(str(path))
    for attr in animated:
        assert root.GetNumTimeSamplesForPath(attr) == 0 and not root.GetAttributeAtPath(attr).HasDefaultValue()
    return stage


@pytest.mark.parametrize("xform_ops", ["trs", "matrix"])
def test_streamed_recording_reads_as_the_unstreamed_one(tmp_path, xform_ops):
    src = mixed_stage(tmp_path / "mixed.usda")
    animated = ANIMATED if xform_ops == "trs" else ANIMATED_MATRIX
    record(src, tmp_path / "plain.usda", 40, xform_ops=xform_ops)
    # Frame by frame: the output layer never holds more than one chunk (the 8th frame written ends a chunk of 7).
    out = tmp_path / "streamed.usda"
    sim = Simulation.open(src, device="cpu", joint_states=True, live=False, xform_ops=xform_ops)
    directory = sim.stream_recording(out, 7)
    assert directory == str(tmp_path / "streamed.clips")
    most = 0
    for i in range(40):
        sim.step_frame(last=i == 39)
        most = max(most, max(sim.output_layer.GetNumTimeSamplesForPath(p) for p in animated))
    assert most == 7  # (8 while the 8th is written, then moved)
    assert sim.clips.count == 5  # frames 0-7, 7-14, ... 28-35; the last, 35-40, when saved
    sim.save(out)
    assert sim.clips.count == 6 and len(clip_runs(directory)) == 1
    assert_same_recording(tmp_path / "plain.usda", out, animated)
    assert_uses_clips(out, 6, animated)
    # The saved output imports again (its joint state and poses start at the authored frame-0 state).
    again = Simulation.open(str(out), device="cpu")
    assert again.model.body_count == sim.model.body_count


@pytest.mark.parametrize(
    "frames, clip_frames, record_every, clips",
    [
        (5, 10, 1, 1),  # shorter than one chunk: one clip
        (30, 10, 1, 3),  # an exact multiple: frames 0-10, 10-20, 20-30, and no clip of one frame
        (47, 4, 3, 4),  # every 3rd frame (and the last): 0, 3, ... 45, 47 in clips of 4 recorded frames
    ],
)
def test_chunk_lengths_and_record_every(tmp_path, frames, clip_frames, record_every, clips):
    src = mixed_stage(tmp_path / "mixed.usda")
    record(src, tmp_path / "plain.usda", frames, record_every=record_every)
    sim = record(src, tmp_path / "streamed.usda", frames, clip_frames, record_every=record_every)
    assert sim.clips.count == clips
    stage = assert_same_recording(tmp_path / "plain.usda", tmp_path / "streamed.usda")
    assert_uses_clips(tmp_path / "streamed.usda", clips)
    samples = stage.GetAttributeAtPath("/World/Box.xformOp:translate:physics").GetTimeSamples()
    assert samples == sorted({*range(0, frames + 1, record_every), frames})


def test_a_new_run_over_an_existing_output_leaves_no_stale_clips(tmp_path):
    src = mixed_stage(tmp_path / "mixed.usda")
    out = tmp_path / "out.usda"
    record(src, out, 30, 4)
    directory = clip_directory(out)
    (first,) = clip_runs(directory)
    with open(os.path.join(directory, "notes.txt"), "w") as f:  # not ours: never removed
        f.write("mine")
    held = Usd.Stage.Open(str(out))  # a stage holding the first run's clips open meanwhile
    assert held.GetAttributeAtPath("/World/Box.xformOp:translate:physics").Get(30) is not None
    record(src, out, 12, 5)
    (second,) = clip_runs(directory)
    assert second != first
    assert sorted(n for n in os.listdir(directory) if not CLIP_FILE.match(n)) == sorted(
        ["notes.txt", f"manifest.{second}.usda", f"defaults.{second}.usda"]
    )
    record(src, tmp_path / "plain.usda", 12)
    assert_same_recording(tmp_path / "plain.usda", out)
    # An unstreamed output at that path removes the clips (ours only).
    record(src, out, 12)
    assert os.listdir(directory) == ["notes.txt"]
    assert_same_recording(tmp_path / "plain.usda", out)


def test_output_and_clips_move_together(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    src = mixed_stage(a / "mixed.usda")
    record(src, a / "plain.usda", 20)
    record(src, a / "out.usda", 20, 6)
    shutil.move(str(a), str(b))
    assert_same_recording(b / "plain.usda", b / "out.usda")
    assert_uses_clips(b / "out.usda", 4)


def test_saves_elsewhere_flattened_and_in_place_bake_the_clips(tmp_path):
    src = mixed_stage(tmp_path / "mixed.usda")
    record(src, tmp_path / "plain.usda", 25)
    in_place = tmp_path / "in_place.usda"
    shutil.copy(src, in_place)
    sim = record(str(in_place), tmp_path / "out.usda", 25, 6)
    assert sim.clips.count == 5
    elsewhere = sim.save(tmp_path / "elsewhere.usda")
    assert not Usd.Stage.Open(elsewhere).GetPrimAtPath("/World").GetMetadata("clips")
    assert_same_recording(tmp_path / "plain.usda", elsewhere)
    flat = sim.save(tmp_path / "flat.usda", flatten=True)
    assert not Sdf.Layer.FindOrOpen(flat).subLayerPaths
    assert_same_recording(tmp_path / "plain.usda", flat)
    sim.save_in_place()
    assert_same_recording(tmp_path / "plain.usda", in_place)
    # The streamed output itself is still whole (the baking took nothing from it), and the run goes on
    # after a save: the next save holds every frame.
    assert_same_recording(tmp_path / "plain.usda", tmp_path / "out.usda")
    sim.run(9)
    sim.save(tmp_path / "out.usda")
    record(src, tmp_path / "plain34.usda", 34)
    assert_same_recording(tmp_path / "plain34.usda", tmp_path / "out.usda")


def test_reset_starts_a_new_run_and_close_removes_the_unsaved_clips(tmp_path):
    src = mixed_stage(tmp_path / "mixed.usda")
    out = tmp_path / "out.usda"
    sim = Simulation.open(src, device="cpu", joint_states=True, live=False, stream_to=out, clip_frames=5)
    sim.run(23)
    directory = sim.clips.directory
    (first,) = clip_runs(directory)
    sim.reset()  # the unsaved run's clips go; the recording starts over
    assert not clip_runs(directory)
    sim.run(12)
    sim.save(out)
    record(src, tmp_path / "plain.usda", 12)
    assert_same_recording(tmp_path / "plain.usda", out)
    sim.close()  # saved: the clips stay
    assert len(os.listdir(directory)) == 3 + 2
    # A stream never saved leaves nothing behind.
    other = Simulation.open(src, device="cpu", live=False, stream_to=tmp_path / "other.usda", clip_frames=3)
    other.run(10)
    assert os.path.isdir(clip_directory(tmp_path / "other.usda"))
    other.close()
    assert not os.path.exists(clip_directory(tmp_path / "other.usda"))


def test_a_stage_made_in_memory_streams_into_a_flattened_output(tmp_path):
    stage = Usd.Stage.Open(Sdf.Layer.OpenAsAnonymous(mixed_stage(tmp_path / "mixed.usda")))
    for out, clip_frames in ((tmp_path / "plain.usda", None), (tmp_path / "out.usda", 6)):
        stream = {} if clip_frames is None else {"stream_to": out, "clip_frames": clip_frames}
        sim = Simulation.open(stage, device="cpu", joint_states=True, live=False, **stream)
        sim.run(20)
        sim.save(out)
        sim.close()
    assert not Sdf.Layer.FindOrOpen(str(tmp_path / "plain.usda")).subLayerPaths  # the composed stage, flattened
    assert_same_recording(tmp_path / "plain.usda", tmp_path / "out.usda")
    assert_uses_clips(tmp_path / "out.usda", 4)


def test_live_edits_that_rebuild_mid_chunk_read_the_same(tmp_path):
    """A box added mid-run (a rebuild) and a body disabled mid-run (in place: held, no longer written): the same
    values at every time. The one difference USD's clips make: the added box's attributes also list the first frame
    of the clip in which they start (frame 4: clips of 4 frames; the box is written from frame 7)."""
    batched = tmp_path / "batched.usda"  # also in batches of 5 frames: a rebuild writes what the old sync kept
    for out, clip_frames, batch in ((tmp_path / "plain.usda", None, 1), (tmp_path / "out.usda", 4, 1), (batched, 4, 5)):
        stage = Usd.Stage.Open(Sdf.Layer.OpenAsAnonymous(str(SAMPLES / "boxes_on_ground.usda")))
        stream = {} if clip_frames is None else {"stream_to": out, "clip_frames": clip_frames}
        sim = Simulation.open(stage, device="cpu", **stream)
        sim.write_batch = batch
        sim.run(6)
        cube = UsdGeom.Cube.Define(stage, "/World/NewBox")
        cube.CreateSizeAttr(0.2)
        cube.AddTranslateOp().Set(Gf.Vec3d(2, 0, 1))
        UsdPhysics.RigidBodyAPI.Apply(cube.GetPrim())
        UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
        sim.run(6)
        UsdPhysics.RigidBodyAPI(stage.GetPrimAtPath("/World/TiltedBox")).CreateRigidBodyEnabledAttr(False)
        sim.run(9)
        assert sim.rebuilds == 1
        sim.save(out)
    a = Usd.Stage.Open(str(tmp_path / "plain.usda"))
    for b in (Usd.Stage.Open(str(tmp_path / "out.usda")), Usd.Stage.Open(str(batched))):
        for path in ("/World/NewBox", "/World/TiltedBox", "/World/Box"):
            for name in ("xformOp:translate:physics", "xformOp:orient:physics"):
                x, y = a.GetPrimAtPath(path).GetAttribute(name), b.GetPrimAtPath(path).GetAttribute(name)
                samples = x.GetTimeSamples()
                expected = sorted({4.0, *samples}) if path == "/World/NewBox" else samples
                assert samples[0] == (7.0 if path == "/World/NewBox" else 0.0) and y.GetTimeSamples() == expected
                for t in [Usd.TimeCode.Default()] + [i / 2 for i in range(-2, 48)]:
                    assert x.Get(t) == y.Get(t), (path, name, t)


@pytest.mark.parametrize("xform_ops", ["trs", "matrix"])
def test_recording_written_in_batches_reads_as_frame_by_frame(tmp_path, xform_ops):
    """Simulation.write_batch (usdsim writes 32 frames at a time): the stage lags until a batch is full or
    flushed; what is saved, plain or streamed to clips whose length the batch does not divide, is the
    recording written frame by frame, value for value."""
    src = mixed_stage(tmp_path / "mixed.usda")
    animated = ANIMATED if xform_ops == "trs" else ANIMATED_MATRIX
    record(src, tmp_path / "plain.usda", 40, xform_ops=xform_ops)
    sim = Simulation.open(src, device="cpu", joint_states=True, live=False, xform_ops=xform_ops)
    sim.write_batch = 5
    sim.run(12)  # frames 0-12 recorded: two batches written, three frames kept
    box = "/World/Box.xformOp:transform:physics" if xform_ops == "matrix" else "/World/Box.xformOp:translate:physics"
    assert sim.output_layer.ListTimeSamplesForPath(box) == list(range(10))
    assert sim.output_layer.GetNumTimeSamplesForPath("/World/Hinge.state:angular:physics:position") == 13  # at once
    sim.flush()
    assert sim.output_layer.ListTimeSamplesForPath(box) == list(range(13))
    sim.run(28)
    sim.save(tmp_path / "batched.usda")
    assert_same_recording(tmp_path / "plain.usda", tmp_path / "batched.usda", animated)
    out = tmp_path / "streamed.usda"
    sim = Simulation.open(src, device="cpu", joint_states=True, live=False, xform_ops=xform_ops)
    sim.stream_recording(out, 7)
    sim.write_batch = 5
    sim.run(40)
    sim.save(out)
    assert_same_recording(tmp_path / "plain.usda", out, animated)
    assert_uses_clips(out, 6, animated)
    with pytest.raises(NewtonUsdError, match="write_batch must be at least 1"):
        sim.write_batch = 0


def test_stream_arguments_are_checked(tmp_path):
    src = mixed_stage(tmp_path / "mixed.usda")
    with pytest.raises(NewtonUsdError, match="source stage"):
        Simulation.open(src, device="cpu", stream_to=src)
    (tmp_path / "taken.clips").write_text("a file")
    with pytest.raises(NewtonUsdError, match="is a file"):
        Simulation.open(src, device="cpu", stream_to=tmp_path / "taken.usda")
    sim = Simulation.open(src, device="cpu", record=False)
    with pytest.raises(NewtonUsdError, match="record=True"):
        sim.stream_recording(tmp_path / "out.usda")
    with pytest.raises(NewtonUsdError, match="not a USD file name"):
        Simulation.open(src, device="cpu", stream_to=tmp_path / "out.txt")
    sim = Simulation.open(src, device="cpu", stream_to=tmp_path / "out.usda")
    with pytest.raises(NewtonUsdError, match="already streamed"):
        sim.stream_recording(tmp_path / "another.usda")


def test_usdsim_streams_long_recordings_to_clips(tmp_path):
    from newton_usd import cli
    from newton_usd.sync import clips

    assert cli.DEFAULT_CLIP_FRAMES == clips.DEFAULT_CLIP_FRAMES  # (a copy: the CLI's --help imports nothing)
    src = mixed_stage(tmp_path / "mixed.usda")
    plain, out = tmp_path / "plain.usda", tmp_path / "out.usda"
    r = usdsim(src, "-o", plain, "-n", 40, "--write-joint-states", "--clip-frames", 0, "--format", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["clip_dir"] is None and not os.path.exists(tmp_path / "plain.clips")
    r = usdsim(src, "-o", out, "-n", 40, "--write-joint-states", "--clip-frames", 7, "--format", "json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["clip_dir"] == str(tmp_path / "out.clips") and summary["clips"] == 6
    assert_same_recording(plain, out)
    assert_uses_clips(out, 6)
    r = usdsim(src, "-o", out, "-n", 40, "--write-joint-states", "--clip-frames", 7)
    assert r.returncode == 0 and f"and 6 value clips in {tmp_path / 'out.clips'}" in r.stdout
    assert len(clip_runs(tmp_path / "out.clips")) == 1
    # Not longer than one chunk (the default is 1000 frames), --flatten: one file, as before.
    for args in (["-n", 40], ["-n", 40, "--clip-frames", 7, "--flatten"]):
        r = usdsim(src, "-o", tmp_path / "one.usda", "--format", "json", *args)
        assert r.returncode == 0 and json.loads(r.stdout)["clip_dir"] is None
    assert not os.path.exists(tmp_path / "one.clips")
    r = usdsim(src, "-o", tmp_path / "x.usda", "--clip-frames", -1)
    assert r.returncode == 2 and "--clip-frames must be >= 0" in r.stderr


@pytest.mark.soak  # a 10-million-frame run streamed to clips until Ctrl-C
def test_usdsim_blow_up_and_ctrl_c_save_the_clips_so_far(tmp_path):
    import signal

    from stages import falling_cube

    src = tmp_path / "fast.usda"
    stage = falling_cube(src)
    UsdPhysics.RigidBodyAPI(stage.GetPrimAtPath("/Cube")).CreateVelocityAttr(Gf.Vec3f(1e12, 0, 0))
    stage.Save()
    r = usdsim(src, "-o", tmp_path / "fast.sim.usda", "-n", 10, "--clip-frames", 1)
    assert r.returncode == 3, r.stdout + r.stderr
    saved = Usd.Stage.Open(str(tmp_path / "fast.sim.usda"))
    attr = saved.GetAttributeAtPath("/Cube.xformOp:translate:physics")
    assert attr.GetTimeSamples() == [0.0] and attr.Get(0)[2] == pytest.approx(1.0)  # frame 0, from a clip
    assert Usd.ClipsAPI(saved.GetPrimAtPath("/Cube")).GetClipAssetPaths(CLIP_SET)

    boxes = tmp_path / "boxes.usda"
    shutil.copy(SAMPLES / "boxes_on_ground.usda", boxes)
    out = tmp_path / "out.usda"
    run = UsdsimProcess(boxes, "-o", out, "-n", "10000000", "--clip-frames", "20")
    clips = tmp_path / "out.clips"
    run.wait_for(lambda: os.path.isdir(clips) and len(os.listdir(clips)) >= 3)  # a few clips are on disk
    run.proc.send_signal(signal.SIGINT)
    code, stdout, err = run.finish()
    assert code == 130, err
    assert "value clips in" in stdout
    saved = Usd.Stage.Open(str(out))
    attr = saved.GetAttributeAtPath("/World/Box.xformOp:translate:physics")
    samples = attr.GetTimeSamples()
    assert len(samples) > 60 and samples == [float(t) for t in range(len(samples))]
    assert all(attr.Get(t) is not None for t in samples)
