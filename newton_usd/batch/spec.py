"""What a sweep is: stages, a grid and random samples of ``--set`` overrides, and the run options.

A :class:`Sweep` comes from the command line (``usdsim batch STAGE... --vary PRIM.ATTR=V1,V2``), from a
TOML or JSON file (:func:`load_sweep`), or from Python. :func:`expand` turns it into :class:`Job`\\ s,
one per run: every stage x every grid point x every random sample.

A sweep file (TOML; JSON has the same keys)::

    stages = ["pendulum.usda", "assets/*.usda"]   # paths or globs, relative to this file
    frames = 60                                    # or duration = 1.0; solver, device, and any usdsim
    write_joint_states = true                      # run option by its long name (dt, substeps, backend, ...)
    set = ["/World/Pendulum/Hinge.drive:angular:physics:damping=0"]   # the same in every run
    record = ["/World/Pendulum/Bob", "/World/Pendulum/Hinge.state:angular:physics:position"]

    [grid]                                         # one axis per attribute: all combinations
    "/World/Pendulum/Bob.physics:mass" = [1, 4]

    [random]                                       # `samples` draws per grid point, seeded
    samples = 4
    seed = 0
    "/World/Pendulum/Hinge.drive:angular:physics:stiffness" = { uniform = [1, 4] }
    # { normal = [mean, std] }, { choice = [v1, v2, ...] }
"""

from __future__ import annotations

import glob
import hashlib
import itertools
import json
import os
import tomllib
from dataclasses import dataclass, field

from ..errors import UsdInputError

# usdsim run options a sweep may set, by their argparse ``dest`` (the long option's name with _).
RUN_OPTIONS = (
    "num_frames", "duration", "fps", "dt", "substeps", "device", "solver", "backend", "worlds", "envs",
    "write_worlds", "world_spacing", "write_joint_states", "record_every", "clip_frames", "xform_ops",
    "keyframe", "flatten",
)  # fmt: skip
_ALIASES = {"frames": "num_frames"}
_SWEEP_KEYS = {"stages", "output", "jobs", "ray", "timeout", "record", "set", "grid", "random", "env", "isolation",
               "retries", "cpus_per_run", "gpus_per_run"}  # fmt: skip
DISTRIBUTIONS = ("uniform", "normal", "choice")


@dataclass
class Sweep:
    """A sweep: what to run, before expansion into runs.

    Args:
        stages: Stage paths or glob patterns.
        grid: ``{"PRIM.ATTR": [values]}``: one axis each; every combination runs.
        random: ``{"PRIM.ATTR": {"uniform": [lo, hi]} | {"normal": [mean, std]} | {"choice": [values]}}``.
        samples: Random draws per grid point (when ``random`` is given; default 1).
        seed: The random generator's seed.
        overrides: ``"PRIM.ATTR=VALUE"`` set in every run.
        options: usdsim run options by name (``num_frames``, ``duration``, ``solver``, ``device``, ...).
        record: Prims (their final world pose) and ``PRIM.ATTR`` attributes (their final value) for the table.
        env: Environment variables for every run.
        base: The directory relative stage paths are relative to (a sweep file's).
    """

    stages: list = field(default_factory=list)
    grid: dict = field(default_factory=dict)
    random: dict = field(default_factory=dict)
    samples: int | None = None
    seed: int | None = None
    overrides: list = field(default_factory=list)
    options: dict = field(default_factory=dict)
    record: list = field(default_factory=list)
    env: dict = field(default_factory=dict)
    base: str = "."
    settings: dict = field(default_factory=dict)  # executor settings from a file: output, jobs, ray, timeout, ...

    @property
    def varied(self) -> list:
        """The varied attributes, grid axes first: the table's parameter columns."""
        return list(self.grid) + [a for a in self.random if a not in self.grid]


@dataclass
class Job:
    """One run of a sweep."""

    index: int
    stage: str  # absolute path
    values: dict  # varied attribute -> value (as parsed by its type; vectors as tuples)
    overrides: list  # every "PRIM.ATTR=TEXT" of the run, fixed then varied
    options: list  # usdsim run options as argv
    record: list
    env: dict
    name: str = ""  # the run directory's name: stage stem and a hash of the parameters
    run_dir: str = ""
    output: str = ""
    input_hash: str = ""  # parameters and the bytes of every layer the stage composes
    error: str | None = None  # why the run cannot start (its stage does not open, an override does not apply)

    def argv(self) -> list:
        """The ``usdsim run`` command line of this run."""
        sets = [x for o in self.overrides for x in ("--set", o)]
        return ["run", self.stage, "-o", self.output, "--format", "json", "-q", *self.options, *sets]


def load_sweep(path: str) -> Sweep:
    """A :class:`Sweep` from a TOML (``.toml``) or JSON file; relative paths are relative to the file."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f) if not path.endswith(".json") else json.load(f)
    except OSError as e:
        raise UsdInputError(f"cannot read the sweep file: {e.strerror}", file=path) from None
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise UsdInputError(
            f"not a valid {'JSON' if path.endswith('.json') else 'TOML'} sweep file: {e}", file=path
        ) from None
    return sweep_from_dict(data, base=os.path.dirname(os.path.abspath(path)), file=path)


def sweep_from_dict(data: dict, base: str = ".", file: str | None = None) -> Sweep:
    """A :class:`Sweep` from the keys of a sweep file (see the module docstring)."""
    options, settings = {}, {}
    for key, value in data.items():
        name = _ALIASES.get(key.replace("-", "_"), key.replace("-", "_"))
        if name in RUN_OPTIONS:
            options[name] = value
        elif name not in _SWEEP_KEYS:
            known = ", ".join(sorted(_SWEEP_KEYS | set(RUN_OPTIONS) | set(_ALIASES)))
            raise UsdInputError(f"unknown sweep key {key!r} (known: {known})", file=file)
        elif name in ("output", "jobs", "ray", "timeout", "isolation", "retries", "cpus_per_run", "gpus_per_run"):
            settings[name] = value
    random = dict(data.get("random", {}))
    samples = random.pop("samples", None)
    seed = random.pop("seed", None)
    if settings.get("output") is not None:
        settings["output"] = os.path.join(base, settings["output"])
    stages = data.get("stages", [])
    sweep = Sweep(
        stages=[stages] if isinstance(stages, str) else list(stages),
        grid=dict(data.get("grid", {})),
        random=random,
        samples=samples,
        seed=seed,
        overrides=list(data.get("set", [])),
        options=options,
        record=list(data.get("record", [])),
        env={k: str(v) for k, v in data.get("env", {}).items()},
        base=base,
        settings=settings,
    )
    check_sweep(sweep, file)
    return sweep


def check_sweep(sweep: Sweep, file: str | None = None) -> None:
    """Raise :class:`UsdInputError` on a sweep whose shape is wrong (before any stage is opened)."""
    for attr, values in sweep.grid.items():
        if not isinstance(values, list) or not values:
            raise UsdInputError(f"grid: {attr} wants a non-empty list of values, got {values!r}", file=file)
    for attr, dist in sweep.random.items():
        if not (isinstance(dist, dict) and len(dist) == 1 and next(iter(dist)) in DISTRIBUTIONS):
            raise UsdInputError(
                f"random: {attr} wants one of {{uniform = [low, high]}}, {{normal = [mean, std]}}, "
                f"{{choice = [values]}}, got {dist!r}",
                file=file,
            )
        kind, args = next(iter(dist.items()))
        if kind != "choice" and not (isinstance(args, list) and len(args) == 2 and all(_is_number(a) for a in args)):
            raise UsdInputError(f"random: {attr}: {kind} wants two numbers, got {args!r}", file=file)
        if kind == "choice" and not (isinstance(args, list) and args):
            raise UsdInputError(f"random: {attr}: choice wants a non-empty list, got {args!r}", file=file)
    if sweep.samples is not None and not (isinstance(sweep.samples, int) and sweep.samples >= 1):
        raise UsdInputError(f"random: samples must be an integer >= 1, got {sweep.samples!r}", file=file)
    if sweep.samples is not None and not sweep.random:
        raise UsdInputError("random: samples given but no attribute to sample", file=file)


def _is_number(x) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def split_values(text: str) -> list:
    """``"1,2,(0, 0, 1)"`` -> ``["1", "2", "(0, 0, 1)"]``: commas inside brackets belong to a value."""
    values, depth, current = [], 0, ""
    for ch in text:
        depth += ch in "(["
        depth -= ch in ")]"
        if ch == "," and depth == 0:
            values.append(current.strip())
            current = ""
        else:
            current += ch
    values.append(current.strip())
    return values


def value_text(value) -> str:
    """A sweep file's value as ``--set`` text: numbers, booleans, strings, and lists of numbers (vectors)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list | tuple):
        return " ".join(value_text(v) for v in value)
    return str(value)


def find_stages(patterns, base: str = ".") -> list:
    """Absolute paths of the stages ``patterns`` name (paths or globs), in order, each once."""
    stages = []
    for pattern in patterns:
        full = os.path.join(base, os.path.expanduser(pattern))
        found = sorted(glob.glob(full, recursive=True)) if glob.has_magic(full) else [full]
        if not found:
            raise UsdInputError(f"no stage matches {pattern!r}")
        stages += [os.path.abspath(p) for p in found if os.path.abspath(p) not in stages]
    if not stages:
        raise UsdInputError("no stage to run: give STAGE paths or a sweep file with stages")
    return stages


def draw_samples(sweep: Sweep) -> list:
    """The random draws, ``[{attr: value text}]`` (one dict per sample; ``[{}]`` without random)."""
    if not sweep.random:
        return [{}]
    import numpy as np  # noqa: PLC0415

    rng = np.random.default_rng(sweep.seed)
    n = sweep.samples or 1
    columns = {}
    for attr, dist in sweep.random.items():
        kind, args = next(iter(dist.items()))
        if kind == "uniform":
            columns[attr] = [value_text(float(x)) for x in rng.uniform(args[0], args[1], n)]
        elif kind == "normal":
            columns[attr] = [value_text(float(x)) for x in rng.normal(args[0], args[1], n)]
        else:
            columns[attr] = [value_text(args[int(i)]) for i in rng.integers(0, len(args), n)]
    return [{attr: values[i] for attr, values in columns.items()} for i in range(n)]


def grid_points(sweep: Sweep) -> list:
    """Every combination of the grid's values, ``[{attr: value text}]``, the last axis varying fastest."""
    axes = [[(attr, value_text(v)) for v in values] for attr, values in sweep.grid.items()]
    return [dict(point) for point in itertools.product(*axes)]


def options_argv(options: dict, actions: dict) -> list:
    """usdsim run options (by dest) as argv, through the run parser's ``actions`` (dest -> argparse action)."""
    argv = []
    for name, value in options.items():
        action = actions[name]
        flag = action.option_strings[-1]
        if action.nargs == 0:  # store_true
            if value:
                argv.append(flag)
        elif value is not None:
            argv += [flag, value_text(value)]
    return argv


def run_name(stage: str, parameters) -> str:
    """A run directory's name: the stage's stem and 12 hex digits of the run's parameters."""
    stem = os.path.basename(stage).split(".", 1)[0]
    digest = hashlib.sha256(json.dumps(parameters, sort_keys=True).encode()).hexdigest()[:12]
    return f"{stem}-{digest}"
