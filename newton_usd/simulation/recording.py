"""The recording: frames written onto the output layer (in batches, or streamed to value clips), and the output
saved as a stage that sublayers the source, flattened, or in place."""

from __future__ import annotations

import os
import time

from pxr import Sdf, UsdUtils

from ..errors import NewtonUsdError
from ..sync import JointStateSync
from ..sync.clips import DEFAULT_CLIP_FRAMES, ClipStream, remove_clips
from ..sync.curves_sync import CurvesSync
from ..sync.graphics_sync import GraphicsSync
from ..sync.points_sync import PointsSync
from ..sync.state_rows import particle_rows
from .worlds import stage_sync, written_points

_STAGE_METADATA = ("upAxis", "metersPerUnit", "kilogramsPerUnit")


def attach_output_layer(stage) -> Sdf.Layer:
    """A new in-memory layer, strongest in the stage (first sublayer of the session layer)."""
    layer = Sdf.Layer.CreateAnonymous("newton_usd_output.usda")
    # Same time-code rate as the stage, or USD rescales the output's time samples.
    layer.timeCodesPerSecond = stage.GetTimeCodesPerSecond()
    stage.GetSessionLayer().subLayerPaths.insert(0, layer.identifier)
    return layer


def default_output(stage_path: str) -> str:
    """Where a run of ``stage_path`` is saved by default: its name with ``.sim.usda``, next to it."""
    base = os.path.basename(stage_path)
    stem = base.rsplit(".", 1)[0] if "." in base else base
    return os.path.join(os.path.dirname(stage_path), f"{stem}.sim.usda")


class Recorder:
    """A Simulation's part that writes its frames onto the output layer (every :attr:`record_every`-th, in batches of
    :attr:`batch_frames`, or streamed to value clips) and saves the output.

    Each simulated prim is written from its rows of the state (:attr:`rows`, a
    :class:`~newton_usd.sync.state_rows.StateRows`): a rigid body's pose through the
    :class:`~newton_usd.sync.StageSync`, and its joints' positions and velocities where asked (``joint_states``).

    Args:
        stage, output_layer: the stage and the layer the run writes.
        physics, clock: the run's :class:`~newton_usd.simulation.physics.Physics` and clock.
        options: the :class:`~newton_usd.simulation.options.RunOptions` (``record``, ``xform_ops``, ``joint_states``).
        copies: the run's :class:`~newton_usd.simulation.worlds.EnvironmentCopies` (the other worlds' copies).
        mute: a context manager's factory: the run's own writes, not edits of the user's.
    """

    def __init__(self, stage, output_layer, physics, clock, options, copies, mute):
        self._stage, self.output_layer = stage, output_layer
        self._physics, self._clock, self._copies, self._mute = physics, clock, copies, mute
        self.record = options.record
        self.record_every = 1  # write every n-th frame (the first and the last are always written)
        self.write = True  # False: simulate only (benchmarking), nothing goes onto the stage
        self.clips = None  # the ClipStream of a recording streamed to value clips (stream)
        self._written_frame = None
        self.sync, self.rows = stage_sync(stage, output_layer, physics.model, copies.copies, physics.imported.frame,
                                          options.xform_ops)  # fmt: skip
        self.points_sync, self.particle_rows = self._points_sync()
        self.curves_sync = self._curves_sync()
        self.graphics_sync = self._graphics_sync()
        self._joint_states = options.joint_states
        self.joint_sync = self._joint_sync() if options.joint_states else None
        self._retired_joint_syncs = []  # the joint syncs of models rebuilt during the run (restored at a reset)

    def _points_sync(self):
        """(the :class:`~newton_usd.sync.points_sync.PointsSync` of the model's particle prims, their
        :class:`~newton_usd.sync.state_rows.StateRows`); (None, None) where the model has no particles."""
        model = self._physics.model
        if not model.particle_count:
            return None, None
        groups = written_points(model, self._copies.copies)
        sync = PointsSync(self._stage, self.output_layer, groups, self._physics.imported.frame)
        return sync, particle_rows(model)

    def _curves_sync(self):
        """The :class:`~newton_usd.sync.curves_sync.CurvesSync` of the model's cables (None: it has none)."""
        model = self._physics.model
        if not model.cables:
            return None
        return CurvesSync(self._stage, self.output_layer, model.cables, self._physics.imported.frame,
                          self._copies.copies)  # fmt: skip

    def _graphics_sync(self):
        """The :class:`~newton_usd.sync.graphics_sync.GraphicsSync` of the graphics meshes following the model's
        cloth and soft volumes (None: none)."""
        return GraphicsSync.of(self._stage, self.output_layer, self._physics.model, self._physics.imported.frame)

    def _joint_sync(self):
        physics = self._physics
        return JointStateSync(self.output_layer, physics.model, physics.imported.frame.meters_per_unit)

    def write_start(self) -> None:
        """Before the first frame: the starting poses written as frame 0 (once)."""
        if self._clock.frame == 0 and self.sync.frames_written == 0 and self.write:
            self.write_frame()

    def records_frame(self, last: bool) -> bool:
        """Whether the frame just simulated is written: every :attr:`record_every`-th, and the ``last``."""
        return self.write and (last or self._clock.frame % max(1, self.record_every) == 0)

    def written(self) -> bool:
        """Whether the current frame was written."""
        return self._written_frame == self._clock.frame

    def write_frame(self, positions=None, at=None, particles=None) -> None:
        """Write the simulated prims from ``positions`` (their rows of the state: None, the current state's) onto the
        stage as the current frame, or as ``at`` (frame, time code): a frame read back late (a pipelined run), its
        particles' positions and velocities read back with it (``particles``; None: the current state's)."""
        t0 = time.perf_counter()
        state = self._physics.state
        if positions is None:
            positions = self.rows.positions(state)
        body_q = positions  # (the cables' points: from their segments' poses)
        positions = self._copies.shown(positions)
        time_code = (self._clock.time_code if at is None else at[1]) if self.record else None
        with self._mute():
            self.sync.write(positions[: self.rows.count], time_code)
            if self.joint_sync is not None:
                self.joint_sync.write(state.joint_q.numpy(), state.joint_qd.numpy(), time_code)
            if self.points_sync is not None:  # (the particle prims' points: as read back, else from the state now)
                q, qd = particles if particles is not None else (state.particle_q.numpy(), state.particle_qd.numpy())
                self.points_sync.write(q, qd, time_code)
                if self.graphics_sync is not None:  # (graphics meshes that follow their deformables)
                    self.graphics_sync.write(q, qd, time_code)
            if self.curves_sync is not None:
                self.curves_sync.write(body_q, time_code)
            if self.clips is not None and time_code is not None:
                if self.clips.moves_at_next_frame():
                    self.flush()  # the chunk holds every frame written so far
                self.clips.frame_written(time_code)  # once per chunk: moves it to a clip file
        self._clock.sync_seconds += time.perf_counter() - t0
        self._written_frame = self._clock.frame if at is None else at[0]

    def flush(self) -> None:
        """Write the frames the sync keeps (counted as time spent in the sync)."""
        t0 = time.perf_counter()
        with self._mute():
            self.sync.flush()
        self._clock.sync_seconds += time.perf_counter() - t0

    @property
    def batch_frames(self) -> int:
        """Recorded frames written onto the stage together (see :attr:`~newton_usd.sim.Simulation.write_batch`)."""
        return self.sync.batch_frames

    @batch_frames.setter
    def batch_frames(self, frames: int) -> None:
        self.flush()
        self.sync.batch_frames = int(frames)

    def place(self, body_q, rows) -> None:
        """Bodies the user placed (``rows`` of ``body_q``, the state's poses) shown there at once."""
        with self._mute():
            self.sync.place(self._copies.shown(body_q)[: self.rows.count], rows,
                            self._clock.time_code if self.record else None)  # fmt: skip

    def hold(self, held) -> None:
        """Bodies held by their prims (``held``: per body) are no longer written; the others are."""
        with self._mute():  # (the sync's batch flushed: the run's own writes)
            self.sync.hold(held)

    def resync(self, keep: bool = True) -> None:
        """A new sync of the model's bodies, onto the prims and the copies of the environment as they are now,
        going on from the old one (``keep``: its prepared specs and what it wrote); a rebuilt model's joint sync."""
        physics = self._physics
        with self._mute():  # (the old sync's batch flushed: the run's own writes, not the user's edits)
            self.sync, self.rows = stage_sync(
                self._stage, self.output_layer, physics.model, self._copies.copies, physics.imported.frame,
                self.sync.xform_ops, old=self.sync if keep else None,
            )  # fmt: skip

    def rebuilt(self, keep: bool) -> None:
        """The model was rebuilt: a new sync (see :meth:`resync`) and joint sync (the old one's writes restored at a
        reset)."""
        self.resync(keep)
        if self.points_sync is not None:
            with self._mute():
                self.points_sync.restore()
        self.points_sync, self.particle_rows = self._points_sync()
        if self.curves_sync is not None:
            with self._mute():
                self.curves_sync.restore()
        self.curves_sync = self._curves_sync()
        if self.graphics_sync is not None:
            with self._mute():
                self.graphics_sync.restore()
        self.graphics_sync = self._graphics_sync()
        if self.joint_sync is not None:
            self._retired_joint_syncs.append(self.joint_sync)
            self.joint_sync = self._joint_sync()

    def restore(self) -> None:
        """The authored poses on the stage again (a reset): everything written is removed; a streamed recording
        starts a new run of clips."""
        with self._mute():
            if self.joint_sync is not None:
                self.joint_sync.restore()
            for old in self._retired_joint_syncs:
                old.restore()
            self._retired_joint_syncs = []
            if self.points_sync is not None:
                self.points_sync.restore()
            if self.curves_sync is not None:
                self.curves_sync.restore()
            if self.graphics_sync is not None:
                self.graphics_sync.restore()
            self.sync.restore()  # also prunes the prim specs left empty
        if self.clips is not None:
            self.clips.restart()  # the recording starts over: a new run of clips
        self._written_frame = None

    def close(self) -> None:
        self.flush()
        if self.clips is not None:
            self.clips.close()

    def stream(self, path, frames_per_clip: int = DEFAULT_CLIP_FRAMES) -> str:
        """Stream the recording to USD value clips as it runs, for a run of any length in bounded memory.

        ``path`` is where the recording will be saved (:meth:`save` with that path). Every
        ``frames_per_clip`` recorded frames, the time samples the output layer holds (body poses, joint
        states, PointInstancer arrays: every time-sampled attribute) move into a clip file,
        ``<path stem>.clips/clip.<run>.<NNNN>.usdc``, and leave memory: the output layer holds one chunk
        at most, and so does the stage in memory (earlier frames are on disk only). ``save(path)`` then
        writes the last chunk as the last clip and ``path`` as a stage that shows them: opened with
        pxr, it has the same values at every time code as an unstreamed recording (see
        :mod:`newton_usd.sync.clips` for its layout). Saving elsewhere, ``flatten=True`` and
        :meth:`save_in_place` bake the clips back into time samples (the whole recording in memory
        once). :meth:`reset` starts a new run of clips; :meth:`close` removes the clips that no saved
        output refers to. Returns the clip directory.
        """
        if not self.record:
            raise NewtonUsdError("only a recording (record=True) can be streamed to value clips")
        path = os.path.abspath(os.fspath(path))
        if self.clips is not None:
            if path != self.clips.output_path:
                raise NewtonUsdError(f"the recording is already streamed to clips of {self.clips.output_path}")
            self.clips.frames_per_clip = max(1, int(frames_per_clip))
            return self.clips.directory
        src = self._stage.GetRootLayer()
        if os.path.exists(path) and os.path.realpath(path) == os.path.realpath(src.realPath or ""):
            raise NewtonUsdError(f"{path}: refusing to overwrite the source stage; choose another output path")
        if Sdf.FileFormat.FindByExtension(path) is None:
            raise NewtonUsdError(f"{path}: cannot stream the recording there: not a USD file name")
        self.clips = ClipStream(self.output_layer, path, frames_per_clip, time_codes_per_second=self._clock.fps)
        return self.clips.directory

    def _streams_to(self, path, flatten: bool) -> bool:
        """Whether a save to ``path`` writes the streamed recording as clips (else it bakes them)."""
        return self.clips is not None and not flatten and os.path.abspath(path) == self.clips.output_path

    def save(self, path, flatten: bool = False, end_time: float | None = None) -> str:
        """Write the output layer to ``path`` as a stage that sublayers the source file (``flatten``:
        one self-contained file holding the whole composed stage).

        Opening ``path`` shows the source with the simulated motion on top; the source is not touched.
        A recording streamed to ``path`` (:meth:`stream_recording`) is saved as value clips beside it;
        saved to another path, or flattened, its clips are baked into time samples.
        """
        path = os.fspath(path)
        end_time = self._clock.time_code if end_time is None else end_time
        src = self._stage.GetRootLayer()
        if os.path.exists(path) and os.path.realpath(path) == os.path.realpath(src.realPath or ""):
            raise NewtonUsdError(f"{path}: refusing to overwrite the source stage; choose another output path")
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise NewtonUsdError(f"{path}: cannot write the output: no directory {directory}")
        clips = self._streams_to(path, flatten)
        if clips:
            with self._mute():
                self.clips.close_chunk()  # the last chunk becomes the last clip
        layer = self.clips.baked() if self.clips is not None and not clips else self.output_layer
        out = Sdf.Layer.Find(path) or Sdf.Layer.CreateNew(path)
        if out is None:
            raise NewtonUsdError(f"{path}: cannot write the output (not a USD file name, or not writable)")
        if src.realPath and not flatten:
            out.TransferContent(layer)
            if self._copies.layer is not None:  # the other worlds' copies of the environment
                UsdUtils.StitchLayers(out, self._copies.layer)
            rel = os.path.relpath(src.realPath, directory)
            out.subLayerPaths = [rel.replace(os.sep, "/")]
        else:  # one file: the whole composed stage (an in-memory source has no file to sublayer)
            out.TransferContent(self._flattened(layer))
        if clips:
            self.clips.write_output(out)
        self._stamp(out, src, end_time)
        out.comment = f"Simulated by newton_usd from {os.path.basename(src.realPath or src.identifier)}"
        if not out.Save():
            raise NewtonUsdError(f"{path}: could not write the output stage")
        if clips:
            self.clips.saved()  # and the clips of earlier runs go
        else:  # the clips of an earlier output at this path (a stream to it keeps this run's, for a later save)
            streaming = self.clips is not None and os.path.abspath(path) == self.clips.output_path
            if streaming:
                self.clips.overwritten()
            remove_clips(path, keep_run=self.clips.run if streaming else None)
        return path

    def _flattened(self, layer) -> Sdf.Layer:
        """The composed stage flattened, with ``layer`` in place of the output layer."""
        if layer is self.output_layer:
            return self._stage.Flatten(addSourceFileComment=False)
        subs = self._stage.GetSessionLayer().subLayerPaths
        at = list(subs).index(self.output_layer.identifier)
        with self._mute():
            subs[at] = layer.identifier
            try:
                return self._stage.Flatten(addSourceFileComment=False)
            finally:
                subs[at] = self.output_layer.identifier

    def save_in_place(self, end_time: float | None = None) -> str:
        """Write the simulated motion (and the ``overrides``) into the source file itself: every
        attribute of the output layer replaces the source's (a streamed recording's clips are baked
        into time samples). Only when the user asks for it."""
        end_time = self._clock.time_code if end_time is None else end_time
        src = self._stage.GetRootLayer()
        if not src.realPath:
            raise NewtonUsdError("the stage has no file to write in place (it was made in memory)")
        if self._copies.copies is not None:
            raise NewtonUsdError(
                f"{src.realPath}: will not write copies of the other worlds into the source; write to an output file"
            )
        if not os.access(src.realPath, os.W_OK):
            raise NewtonUsdError(f"{src.realPath}: cannot write in place: the file is not writable")
        if src.HasTimeCodesPerSecond() and src.timeCodesPerSecond != self._clock.fps:
            raise NewtonUsdError(
                f"{src.realPath}: cannot write in place at {self._clock.fps:g} fps: the stage's timeCodesPerSecond is "
                f"{src.timeCodesPerSecond:g} (its other animation would change speed); write to an output file"
            )
        layer = self.clips.baked() if self.clips is not None else self.output_layer

        def copy(path):
            if path.IsPropertyPath():
                Sdf.CreatePrimInLayer(src, path.GetPrimPath())
                Sdf.CopySpec(layer, path, src, path)

        with Sdf.ChangeBlock():
            layer.Traverse(Sdf.Path.absoluteRootPath, copy)
            self._stamp(src, src, end_time)
        if not src.Save():
            raise NewtonUsdError(f"{src.realPath}: could not write the stage in place")
        return src.realPath

    def _stamp(self, out, src, end_time: float) -> None:
        """Stage metadata of an output layer: units and up axis of the source, the frame rate and range."""
        if out is not src:
            for key in _STAGE_METADATA:
                if src.pseudoRoot.HasInfo(key):
                    out.pseudoRoot.SetInfo(key, src.pseudoRoot.GetInfo(key))
            if src.defaultPrim:
                out.defaultPrim = src.defaultPrim
        out.timeCodesPerSecond = self._clock.fps
        out.framesPerSecond = self._clock.fps
        if self.record:
            out.startTimeCode = self._clock.start_time
            out.endTimeCode = end_time
