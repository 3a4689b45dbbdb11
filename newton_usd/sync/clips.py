"""ClipStream: a long recording streamed to USD value clips on disk, so that the output layer holds
at most one chunk of time samples.

Every ``frames_per_clip`` recorded frames, the time samples of every attribute of the output layer
(whatever wrote them: the body poses, joint states, PointInstancer arrays) are moved into a clip
layer saved as ``<stem>.clips/clip.<run>.<NNNN>.usdc`` beside the output, and released. The frame at
which a chunk ends stays in the layer as the first frame of the next chunk, so each clip also holds
the first sample of the one after it (a time between two frames of different chunks interpolates as
in one layer). :meth:`ClipStream.write_output` turns the saved copy of the output layer into a stage
that shows the recording through the clips:

- the clip-animated attributes keep their declarations, and lose their time samples (time samples in
  the layer that anchors clips win over the clips);
- their default values (the first pose) go into ``<stem>.clips/defaults.<run>.usda``, a sublayer of
  the output placed before the source: a default in the anchoring layer itself would also win over
  the clips (USD resolves a layer's time samples, then its default, then the clips it anchors, then
  the weaker layers), one in a weaker sublayer is seen at the default time only;
- each root prim above them anchors the clip set ``newton_usd`` (``Usd.ClipsAPI``): ``assetPaths``,
  ``primPath`` (the anchor itself: clips hold the output's paths), ``active`` (clip ``i`` from the
  first frame of its chunk), ``times`` (the identity: stage time is clip time),
  ``manifestAssetPath`` (``<stem>.clips/manifest.<run>.usda`` declares every clip-animated attribute,
  as USD recommends) and ``interpolateMissingClipValues`` (an attribute missing from some clips, e.g.
  of a body that a rebuild added mid-run, interpolates over them as one layer's samples would).

Asset paths are relative to the output file: the output and its clip directory move together. Each
stream has a run id of its own: a later run never picks up an earlier run's clips, and once an output
refers to this run's clips the other runs' files (and only files named as this module names them)
are removed from the directory.
"""

from __future__ import annotations

import math
import os
import re
import secrets
import time

from pxr import Sdf, Usd

from ..errors import NewtonUsdError
from .specs import over_prim_spec

CLIP_SET = "newton_usd"
"""The clip set name (a name of our own: the ``default`` set of a source prim would merge with ours)."""

DEFAULT_CLIP_FRAMES = 1000
"""Recorded frames per clip: the output layer holds at most this many frames of time samples (about
113 bytes per sample: ~22 MiB for 100 bodies' translate and orient), while a clip file stays large
enough that a player opens few of them (17 s of motion at 60 fps)."""

_OWN_FILE = re.compile(r"^(clip\.(?P<run>[0-9a-f]{8})\.\d{4,}\.usdc|(manifest|defaults)\.(?P<run2>[0-9a-f]{8})\.usda)$")
"""The names this module gives its files: the only ones it ever removes."""


def clip_directory(output_path) -> str:
    """Where the clips of an output go: ``<output stem>.clips`` beside it (``run.sim.usda``:
    ``run.sim.clips``)."""
    path = os.path.abspath(os.fspath(output_path))
    base = os.path.basename(path)
    stem = base.rsplit(".", 1)[0] if "." in base else base
    return os.path.join(os.path.dirname(path), f"{stem}.clips")


def _run_of(name: str) -> str | None:
    m = _OWN_FILE.match(name)
    return (m.group("run") or m.group("run2")) if m else None


def remove_clips(output_path, keep_run: str | None = None) -> int:
    """Remove the clip files of ``output_path``'s clip directory (files named as this module names
    them, of every run but ``keep_run``), and the directory when that leaves it empty: an output
    overwritten by one that does not use them. Returns the number of files removed."""
    return _remove(clip_directory(output_path), lambda name, run: run != keep_run, rmdir=True)


def _remove(directory: str, which, rmdir: bool = False) -> int:
    try:
        names = os.listdir(directory)
    except OSError:
        return 0
    removed = 0
    for name in names:
        run = _run_of(name)
        if run is not None and which(name, run):
            try:
                os.remove(os.path.join(directory, name))
                removed += 1
            except OSError:
                pass
    if rmdir and removed:
        try:
            os.rmdir(directory)  # only when empty
        except OSError:
            pass
    return removed


def _asset_path(path: str, directory: str) -> str:
    """``path`` relative to ``directory``, in USD's form (``./`` in front: anchored to the layer)."""
    rel = os.path.relpath(path, directory).replace(os.sep, "/")
    return rel if rel.startswith(".") else "./" + rel


def _declare(layer: Sdf.Layer, path: Sdf.Path, type_name) -> Sdf.AttributeSpec:
    """The attribute spec at ``path`` in ``layer``, declared (with ``over`` prims) when missing."""
    spec = layer.GetAttributeAtPath(path)
    if spec is None:
        spec = Sdf.AttributeSpec(over_prim_spec(layer, path.GetPrimPath()), path.name, type_name)
    return spec


class ClipStream:
    """Moves a recording's time samples out of ``layer`` into value clip files, a chunk at a time.

    Args:
        layer: the output layer the syncs write into.
        output_path: the file the recording will be saved as (the clips go to
            :func:`clip_directory` of it, and their paths are written relative to it).
        frames_per_clip: recorded frames per clip (time samples per attribute; the output layer holds
            at most this many, plus one).
        time_codes_per_second: of the manifest and defaults layers (the saved output's rate; default:
            ``layer``'s; a clip's own rate does not scale its times).

    Call :meth:`frame_written` after each recorded frame, and :meth:`write_output` on the saved copy
    of the layer. ``seconds`` is the time spent moving chunks.
    """

    def __init__(self, layer: Sdf.Layer, output_path, frames_per_clip: int = DEFAULT_CLIP_FRAMES, *,
                 time_codes_per_second: float | None = None):  # fmt: skip
        if int(frames_per_clip) < 1:
            raise NewtonUsdError(f"frames per clip must be at least 1, got {frames_per_clip}")
        self.layer = layer
        self.output_path = os.path.abspath(os.fspath(output_path))
        self.directory = clip_directory(self.output_path)
        if os.path.exists(self.directory) and not os.path.isdir(self.directory):
            raise NewtonUsdError(f"{self.directory}: cannot write the clips there: it is a file")
        parent = os.path.dirname(self.output_path)
        if not os.path.isdir(parent):
            raise NewtonUsdError(f"{output_path}: cannot write the output: no directory {parent}")
        self.frames_per_clip = int(frames_per_clip)
        self.time_codes_per_second = float(time_codes_per_second or layer.timeCodesPerSecond)
        self.seconds = 0.0
        self._made_directory = False
        self._referenced = set()  # file names a saved output refers to
        self._pending = set()  # file names of the output being written (referenced once it is saved)
        self._new_run()

    def _new_run(self) -> None:
        self.run = secrets.token_hex(4)
        self.clips = []  # [(activation time, file name)] of the chunks moved out, in time order
        self._attributes = {}  # every attribute moved to a clip: path -> type name (the manifest)
        self._frames = 0  # frames in the layer since the last move (the move's own frame included)
        self._chunk_start = None  # the first frame of the chunk in the layer (once a clip was written)
        self._last_time = None

    @property
    def count(self) -> int:
        """Clips written so far."""
        return len(self.clips)

    def _path(self, name: str) -> str:
        return os.path.join(self.directory, name)

    # ------------------------------------------------------------------ recording
    def frame_written(self, time_code: float) -> None:
        """A frame was recorded at ``time_code``: once a chunk is complete, move it to a clip."""
        self._frames += 1
        self._last_time = float(time_code)
        if self._frames > self.frames_per_clip:
            self._move(self._last_time)

    def moves_at_next_frame(self) -> bool:
        """Whether the next :meth:`frame_written` moves a chunk (what is kept for it must be in the layer)."""
        return self._frames + 1 > self.frames_per_clip

    def close_chunk(self) -> None:
        """Move what the layer holds since the last clip into a clip of its own (before saving).
        Nothing when the layer holds only the last clip's final frame."""
        if self._frames > 1 or (not self.clips and self._frames):
            self._move(self._last_time)

    def _animated(self) -> list:
        """``[(path, spec)]`` of the attributes of the layer that have time samples."""
        out = []

        def visit(path):
            if path.IsPrimPropertyPath() and self.layer.GetNumTimeSamplesForPath(path):
                spec = self.layer.GetAttributeAtPath(path)
                if spec is not None:
                    out.append((path, spec))

        self.layer.Traverse(Sdf.Path.absoluteRootPath, visit)
        return out

    def _move(self, end: float) -> None:
        """Move every time sample of the layer into the next clip; the samples at ``end`` (the frame
        just recorded, the next chunk's first) stay in the layer too. The layer is cleared only once
        the clip is on disk (a Ctrl-C on the way loses nothing)."""
        t0 = time.perf_counter()
        animated = self._animated()
        if not animated:
            self._frames = 0
            return
        if self.clips:
            start = self._chunk_start
        else:  # the first clip starts at the first sample (a stream begun mid-run moves what was before)
            start = min(self.layer.GetBracketingTimeSamplesForPath(p, -math.inf)[1] for p, _ in animated)
        name = f"clip.{self.run}.{len(self.clips):04d}.usdc"
        # The layer itself is the clip (its defaults and other fields ride along: clips give time samples
        # only): no copy of the chunk in memory.
        self._ensure_directory()
        if not self.layer.Export(self._path(name)):
            raise NewtonUsdError(f"{self._path(name)}: could not write the clip")
        _reload_if_open(self._path(name))
        for path, spec in animated:
            self._attributes.setdefault(path, spec.typeName)
        self.clips.append((start, name))
        self._chunk_start = end
        self._frames = 1
        with Sdf.ChangeBlock():
            for path, spec in animated:
                found, at, _ = self.layer.GetBracketingTimeSamplesForPath(path, end)
                keep = self.layer.QueryTimeSample(path, end) if found and at == end else None
                spec.ClearInfo("timeSamples")
                if keep is not None:  # an attribute not written at ``end`` has no sample in the next chunk
                    self.layer.SetTimeSample(path, end, keep)
        self.seconds += time.perf_counter() - t0

    def _ensure_directory(self) -> None:
        if not os.path.isdir(self.directory):
            try:
                os.makedirs(self.directory)
            except OSError as e:
                raise NewtonUsdError(f"{self.directory}: cannot make the clip directory: {e.strerror}") from None
            self._made_directory = True

    # ------------------------------------------------------------------ the saved output
    def write_output(self, out: Sdf.Layer) -> None:
        """Make ``out`` (a copy of the layer, about to be saved as the output path) show the recording
        through the clips: call :meth:`close_chunk` first. Writes the manifest and the defaults layer,
        strips the clip-animated attributes of ``out`` of their time samples and defaults, puts the
        defaults layer first among its sublayers and authors the clip set on the anchoring prims."""
        if not self.clips:
            return
        directory = os.path.dirname(self.output_path)
        manifest = Sdf.Layer.CreateAnonymous("manifest.usda")
        defaults = Sdf.Layer.CreateAnonymous("defaults.usda")
        for layer in (manifest, defaults):
            layer.timeCodesPerSecond = self.time_codes_per_second
        manifest.comment = "The attributes animated by the value clips of this directory (newton_usd)"
        defaults.comment = (
            f"Default values of the clip-animated attributes of {os.path.basename(self.output_path)} "
            "(a default in the layer that anchors clips would win over them)"
        )
        anchors = set()
        with Sdf.ChangeBlock():
            for path, type_name in self._attributes.items():
                _declare(manifest, path, type_name)
                spec = _declare(out, path, type_name)
                spec.ClearInfo("timeSamples")
                if spec.HasDefaultValue():
                    _declare(defaults, path, type_name).default = spec.default
                    spec.ClearDefaultValue()
                anchors.add(path.GetPrefixes()[0])
        names = {"manifest": f"manifest.{self.run}.usda", "defaults": f"defaults.{self.run}.usda"}
        for key, layer in (("manifest", manifest), ("defaults", defaults)):
            if key == "defaults" and not layer.rootPrims:
                names.pop(key)
                continue
            path = self._path(names[key])
            if not layer.Export(path):
                raise NewtonUsdError(f"{path}: could not write the clip {key}")
            _reload_if_open(path)

        def asset(name):
            return _asset_path(self._path(name), directory)

        if "defaults" in names:
            out.subLayerPaths.insert(0, asset(names["defaults"]))

        starts = [start for start, _ in self.clips]
        end = self._last_time
        times = [(t, t) for t in starts] + ([(end, end)] if end > starts[-1] else [])  # stage time is clip time
        # Usd.ClipsAPI authors the metadata with its types on a scratch stage; the prim specs take it.
        scratch = Usd.Stage.CreateInMemory()
        for anchor in sorted(anchors):
            api = Usd.ClipsAPI(scratch.OverridePrim(anchor))
            api.SetClipAssetPaths([Sdf.AssetPath(asset(n)) for _, n in self.clips], CLIP_SET)
            api.SetClipPrimPath(str(anchor), CLIP_SET)
            api.SetClipActive([(start, i) for i, start in enumerate(starts)], CLIP_SET)
            api.SetClipTimes(times, CLIP_SET)
            api.SetClipManifestAssetPath(Sdf.AssetPath(asset(names["manifest"])), CLIP_SET)
            api.SetInterpolateMissingClipValues(True, CLIP_SET)
            api.SetClipSets(Sdf.StringListOp.Create(prependedItems=[CLIP_SET]))
            authored = scratch.GetRootLayer().GetPrimAtPath(anchor)
            prim_spec = out.GetPrimAtPath(anchor) or Sdf.CreatePrimInLayer(out, anchor)
            for key in ("clips", "clipSets"):
                prim_spec.SetInfo(key, authored.GetInfo(key))
        self._pending = {n for _, n in self.clips} | set(names.values())

    def saved(self) -> None:
        """The output written by :meth:`write_output` is saved: it refers to this run's files; remove
        the files of other runs from the clip directory."""
        self._referenced = self._pending
        _remove(self.directory, lambda name, run: run != self.run)

    def overwritten(self) -> None:
        """The output path was saved without the clips (flattened): no saved output refers to them."""
        self._referenced = set()

    # ------------------------------------------------------------------ the whole recording
    def baked(self) -> Sdf.Layer:
        """A new anonymous copy of the layer with the clips' time samples back in it (the whole
        recording in memory: for a save that is not the streamed output)."""
        baked = Sdf.Layer.CreateAnonymous("newton_usd_output.usda")
        baked.TransferContent(self.layer)
        ends = [start for start, _ in self.clips[1:]] + [math.inf]
        with Sdf.ChangeBlock():
            for i, ((start, name), end) in enumerate(zip(self.clips, ends, strict=True)):
                start = -math.inf if i == 0 else start
                clip = Sdf.Layer.FindOrOpen(self._path(name))
                if clip is None:
                    raise NewtonUsdError(f"{self._path(name)}: the clip is missing")
                for path, type_name in self._attributes.items():
                    times = [t for t in clip.ListTimeSamplesForPath(path) if start <= t < end]
                    if times:
                        _declare(baked, path, type_name)
                    for t in times:
                        baked.SetTimeSample(path, t, clip.QueryTimeSample(path, t))
        return baked

    # ------------------------------------------------------------------ starting over, closing
    def restart(self) -> None:
        """The recording starts over (``Simulation.reset``): a new run; this run's files that no saved
        output refers to are removed."""
        self._remove_unreferenced()
        self._new_run()

    def close(self) -> None:
        """Remove this run's files that no saved output refers to (a stream never saved leaves
        nothing), and the clip directory when this stream made it and it is left empty."""
        self._remove_unreferenced()
        if self._made_directory:
            try:
                os.rmdir(self.directory)  # only when empty
            except OSError:
                pass

    def _remove_unreferenced(self) -> None:
        _remove(self.directory, lambda name, run: run == self.run and name not in self._referenced)


def _reload_if_open(path: str) -> None:
    """A layer of this file already open in this process (a stage showing an earlier save) reads it again."""
    layer = Sdf.Layer.Find(path)
    if layer is not None:
        layer.Reload(force=True)
