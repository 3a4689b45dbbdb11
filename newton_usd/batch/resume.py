"""What makes a run the same run again: its parameters and the bytes of every layer its stage composes.

``--resume`` skips a run whose directory holds a finished result (exit 0, the output stage present)
with the same input hash; an edited stage, sublayer, reference or payload, a changed parameter, or
another version of newton_usd or of an engine (newton, mujoco, mujoco-warp, warp-lang) makes a new
hash and the run goes again.
"""

from __future__ import annotations

import hashlib
import json
import os
from importlib import metadata

RESULT_FILE = "result.json"


def layer_digests(stage) -> list:
    """``[(layer path, sha256 of its bytes)]`` of every file-backed layer ``stage`` composes (its root
    layer, sublayers, references and payloads), sorted by path."""
    digests = {}
    for layer in stage.GetUsedLayers():
        path = layer.realPath
        if not path or layer.anonymous or path in digests:
            continue
        try:
            with open(path, "rb") as f:
                digests[path] = hashlib.file_digest(f, "sha256").hexdigest()
        except OSError:  # a layer inside a package (.usdz) or not on disk: its identifier is what we have
            digests[path] = layer.identifier
    return sorted(digests.items())


_ENGINES = ("newton", "mujoco", "mujoco-warp", "warp-lang")


def software_versions() -> dict:
    """The versions of newton_usd and of the engines a run's result depends on (None: not installed)."""
    from .. import __version__  # noqa: PLC0415 (the package imports batch lazily)

    versions = {"newton_usd": __version__}
    for name in _ENGINES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def input_hash(parameters, digests) -> str:
    """The hash of a run's parameters (JSON-able), its stage's layer digests and :func:`software_versions`."""
    record = {"parameters": parameters, "layers": digests, "versions": software_versions()}
    text = json.dumps(record, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def read_result(run_dir: str) -> dict | None:
    """The result a run left in its directory, or None."""
    try:
        with open(os.path.join(run_dir, RESULT_FILE)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def finished(job) -> dict | None:
    """The earlier result of ``job`` when it can be reused: same inputs, exit 0, output present."""
    result = read_result(job.run_dir)
    if not result or result.get("input_hash") != job.input_hash or result.get("exit_code") != 0:
        return None
    return result if os.path.exists(job.output) else None


def write_result(run_dir: str, result: dict) -> None:
    """Write a run's result atomically (a reader never sees half a file)."""
    path = os.path.join(run_dir, RESULT_FILE)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1, default=str)
    os.replace(tmp, path)
