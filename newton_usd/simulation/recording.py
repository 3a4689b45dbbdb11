"""The recording: frames written onto the output layer (in batches, or streamed to value clips), and the output
saved as a stage that sublayers the source, flattened, or in place."""

from __future__ import annotations

import os
import time

import numpy as np
from pxr import Sdf, UsdUtils

from ..errors import NewtonUsdError
from ..sync.clips import DEFAULT_CLIP_FRAMES, ClipStream, remove_clips

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


class Recording:
    """:class:`~newton_usd.sim.Simulation`'s output: which frames are written, and where they are saved."""

    def _write_start(self) -> None:
        """Before the first frame: the starting poses written as frame 0 (once)."""
        if self.frame == 0 and self.sync.frames_written == 0 and self.write:
            self._write()

    def _records_frame(self, last: bool) -> bool:
        """Whether the frame just simulated is written: every :attr:`record_every`-th, and the ``last``."""
        return self.write and (last or self.frame % max(1, self.record_every) == 0)

    def _write(self, body_q=None, at=None):
        """Write ``body_q`` (None: the state's) onto the stage as the current frame, or as ``at`` (frame, time
        code): a frame read back late (:meth:`_run_pipelined`)."""
        t0 = time.perf_counter()
        if body_q is None:
            body_q = self.state.body_q.numpy()
        if self._display_offset is not None:  # worlds written onto their copies, at their places
            body_q = np.array(body_q, dtype=np.float32)
            body_q[:, :3] += self._display_offset[: len(body_q)]
        time_code = (self.time_code if at is None else at[1]) if self.record else None
        with self._own_writes():
            self.sync.write(body_q[: self.sync.body_count], time_code)
            if self.joint_sync is not None:
                self.joint_sync.write(self.state.joint_q.numpy(), self.state.joint_qd.numpy(), time_code)
            if self.clips is not None and time_code is not None:
                if self.clips.moves_at_next_frame():
                    self._flush_syncs()  # the chunk holds every frame written so far
                self.clips.frame_written(time_code)  # once per chunk: moves it to a clip file
        self.sync_seconds += time.perf_counter() - t0
        self._written_frame = self.frame if at is None else at[0]

    def flush(self) -> None:
        """Write the current frame if it was not written (e.g. with ``record_every`` > 1, when a run
        stops early), and the frames kept by :attr:`write_batch`: the stage shows the whole run."""
        if self.write and getattr(self, "_written_frame", None) != self.frame:
            self._write()
        with self._own_writes():
            for other in self.scenes:
                other.flush()
        self._flush_syncs()

    @property
    def write_batch(self) -> int:
        """Recorded frames written onto the stage together (default 1: every frame at once). More is
        about twice as fast to write (see :attr:`~newton_usd.sync.StageSync.batch_frames`), but the stage
        shows a frame only once its batch is written (:meth:`flush`, :meth:`save` and the value clips
        write what is kept): for runs no one watches, as ``usdsim run``'s 32."""
        return self.sync.batch_frames

    @write_batch.setter
    def write_batch(self, frames: int) -> None:
        if int(frames) < 1:
            raise NewtonUsdError(f"write_batch must be at least 1 frame, got {frames}")
        self._flush_syncs()
        for sim in (self, *self.scenes):
            sim.sync.batch_frames = int(frames)

    def _flush_syncs(self) -> None:
        """Write the frames the syncs of every scene keep (counted as time spent in the sync)."""
        with self._own_writes():
            for sim in (self, *self.scenes):
                t0 = time.perf_counter()
                sim.sync.flush()
                sim.sync_seconds += time.perf_counter() - t0

    def stream_recording(self, path, frames_per_clip: int = DEFAULT_CLIP_FRAMES) -> str:
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
        src = self.stage.GetRootLayer()
        if os.path.exists(path) and os.path.realpath(path) == os.path.realpath(src.realPath or ""):
            raise NewtonUsdError(f"{path}: refusing to overwrite the source stage; choose another output path")
        if Sdf.FileFormat.FindByExtension(path) is None:
            raise NewtonUsdError(f"{path}: cannot stream the recording there: not a USD file name")
        self.clips = ClipStream(self.output_layer, path, frames_per_clip, time_codes_per_second=self.fps)
        return self.clips.directory

    def _streams_to(self, path, flatten: bool) -> bool:
        """Whether a save to ``path`` writes the streamed recording as clips (else it bakes them)."""
        return self.clips is not None and not flatten and os.path.abspath(path) == self.clips.output_path

    def save(self, path, flatten: bool = False) -> str:
        """Write the output layer to ``path`` as a stage that sublayers the source file (``flatten``:
        one self-contained file holding the whole composed stage).

        Opening ``path`` shows the source with the simulated motion on top; the source is not touched.
        A recording streamed to ``path`` (:meth:`stream_recording`) is saved as value clips beside it;
        saved to another path, or flattened, its clips are baked into time samples.
        """
        path = os.fspath(path)
        self._flush_syncs()
        src = self.stage.GetRootLayer()
        if os.path.exists(path) and os.path.realpath(path) == os.path.realpath(src.realPath or ""):
            raise NewtonUsdError(f"{path}: refusing to overwrite the source stage; choose another output path")
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise NewtonUsdError(f"{path}: cannot write the output: no directory {directory}")
        clips = self._streams_to(path, flatten)
        if clips:
            with self._own_writes():
                self.clips.close_chunk()  # the last chunk becomes the last clip
        layer = self.clips.baked() if self.clips is not None and not clips else self.output_layer
        out = Sdf.Layer.Find(path) or Sdf.Layer.CreateNew(path)
        if out is None:
            raise NewtonUsdError(f"{path}: cannot write the output (not a USD file name, or not writable)")
        if src.realPath and not flatten:
            out.TransferContent(layer)
            if self._copies_layer is not None:  # the other worlds' copies of the environment
                UsdUtils.StitchLayers(out, self._copies_layer)
            rel = os.path.relpath(src.realPath, directory)
            out.subLayerPaths = [rel.replace(os.sep, "/")]
        else:  # one file: the whole composed stage (an in-memory source has no file to sublayer)
            out.TransferContent(self._flattened(layer))
        if clips:
            self.clips.write_output(out)
        self._stamp(out, src)
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
            return self.stage.Flatten(addSourceFileComment=False)
        subs = self.stage.GetSessionLayer().subLayerPaths
        at = list(subs).index(self.output_layer.identifier)
        with self._own_writes():
            subs[at] = layer.identifier
            try:
                return self.stage.Flatten(addSourceFileComment=False)
            finally:
                subs[at] = self.output_layer.identifier

    def save_in_place(self) -> str:
        """Write the simulated motion (and the ``overrides``) into the source file itself: every
        attribute of the output layer replaces the source's (a streamed recording's clips are baked
        into time samples). Only when the user asks for it."""
        self._flush_syncs()
        src = self.stage.GetRootLayer()
        if not src.realPath:
            raise NewtonUsdError("the stage has no file to write in place (it was made in memory)")
        if self.copies is not None:
            raise NewtonUsdError(
                f"{src.realPath}: will not write copies of the other worlds into the source; write to an output file"
            )
        if not os.access(src.realPath, os.W_OK):
            raise NewtonUsdError(f"{src.realPath}: cannot write in place: the file is not writable")
        if src.HasTimeCodesPerSecond() and src.timeCodesPerSecond != self.fps:
            raise NewtonUsdError(
                f"{src.realPath}: cannot write in place at {self.fps:g} fps: the stage's timeCodesPerSecond is "
                f"{src.timeCodesPerSecond:g} (its other animation would change speed); write to an output file"
            )
        layer = self.clips.baked() if self.clips is not None else self.output_layer

        def copy(path):
            if path.IsPropertyPath():
                Sdf.CreatePrimInLayer(src, path.GetPrimPath())
                Sdf.CopySpec(layer, path, src, path)

        with Sdf.ChangeBlock():
            layer.Traverse(Sdf.Path.absoluteRootPath, copy)
            self._stamp(src, src)
        if not src.Save():
            raise NewtonUsdError(f"{src.realPath}: could not write the stage in place")
        return src.realPath

    def _stamp(self, out, src) -> None:
        """Stage metadata of an output layer: units and up axis of the source, the frame rate and range."""
        if out is not src:
            for key in _STAGE_METADATA:
                if src.pseudoRoot.HasInfo(key):
                    out.pseudoRoot.SetInfo(key, src.pseudoRoot.GetInfo(key))
            if src.defaultPrim:
                out.defaultPrim = src.defaultPrim
        out.timeCodesPerSecond = self.fps
        out.framesPerSecond = self.fps
        if self.record:
            out.startTimeCode = self.start_time
            out.endTimeCode = max(s.time_code for s in (self, *self.scenes))
