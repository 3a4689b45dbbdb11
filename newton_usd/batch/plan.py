"""A sweep expanded into its runs, every input checked before the first run starts.

Each stage is opened once: every override (fixed, grid and random values) is parsed by its
attribute's type there, as ``usdsim --set`` does, so a misspelled prim, attribute or value fails
the sweep at once with one line naming them; the layers it composes are hashed for ``--resume``.
"""

from __future__ import annotations

import os

from ..errors import UsdInputError
from ..run_options import run_parser
from .resume import input_hash, layer_digests
from .spec import RUN_OPTIONS, Job, Sweep, draw_samples, find_stages, grid_points, options_argv, run_name


def run_option_actions() -> dict:
    """usdsim run's argparse actions by dest, for the options a sweep may set."""
    return {a.dest: a for a in run_parser()._actions if a.dest in RUN_OPTIONS}


def check_options(argv: list) -> None:
    """Raise :class:`UsdInputError` when usdsim run would refuse these options."""
    parser = run_parser()

    def refuse(message):
        raise UsdInputError(f"run options: {message}")

    parser.error = refuse
    parser.parse_args(["STAGE", *argv])


def expand(sweep: Sweep, output_dir: str) -> list:
    """The :class:`Job`\\ s of ``sweep``, writing under ``output_dir``: stages x grid points x samples.

    Raises:
        UsdInputError: a malformed override or ``record`` entry, a run option usdsim refuses, no stage.
            A stage that does not open, or on which an override names a missing prim or attribute or
            has a value of the wrong type, does not raise: its jobs carry the error (``Job.error``).
    """
    from ..usd import open_stage  # noqa: PLC0415
    from ..usd.overrides import parse_assignment, resolve_assignment  # noqa: PLC0415

    options = options_argv(sweep.options, run_option_actions())
    check_options(options)
    for text in sweep.record:
        _check_record(text)
    # (sample number, {attr: value text}): two random draws of equal values are two runs, a value listed
    # twice in the grid is one.
    samples = list(enumerate(draw_samples(sweep))) if sweep.random else [(None, {})]
    points = [(i, {**g, **r}) for g in grid_points(sweep) for i, r in samples]
    for text in _texts(sweep, points):
        parse_assignment(text)  # a malformed PRIM.ATTR=VALUE is the sweep's error, not a stage's
    jobs, names = [], set()
    for stage_path in find_stages(sweep.stages, sweep.base):
        try:
            stage, _ = open_stage(stage_path)
            digests = layer_digests(stage)
            typed = {text: _plain(resolve_assignment(stage, text, stage_path)[2]) for text in _texts(sweep, points)}
            for text in sweep.record:
                _check_recorded(stage, text, stage_path)
            error = None
        except UsdInputError as e:  # this stage's runs get an error row each; the sweep goes on
            digests, typed, error = [], {}, str(e)
        for sample, point in points:
            varied = [f"{attr}={text}" for attr, text in point.items()]
            values = {str(parse_assignment(v)[0]): typed.get(v, v.partition("=")[2]) for v in varied}
            overrides = [*sweep.overrides, *varied]
            parameters = {"stage": stage_path, "set": overrides, "options": options, "record": sweep.record,
                          "env": sweep.env}  # fmt: skip
            if sample is not None:
                parameters["sample"] = sample
            name = run_name(stage_path, parameters)
            if name in names:
                continue
            names.add(name)
            run_dir = os.path.join(output_dir, "runs", name)
            base = os.path.basename(stage_path)
            output = os.path.join(run_dir, (base.rsplit(".", 1)[0] if "." in base else base) + ".sim.usda")
            jobs.append(
                Job(
                    index=len(jobs), stage=stage_path, values=values, overrides=overrides, options=options,
                    record=list(sweep.record), env=dict(sweep.env), name=name, run_dir=run_dir, output=output,
                    input_hash=input_hash(parameters, digests), error=error,
                )
            )  # fmt: skip
    return jobs


def _texts(sweep: Sweep, points: list) -> list:
    """Every distinct ``"PRIM.ATTR=TEXT"`` of the sweep, fixed overrides first."""
    texts = dict.fromkeys(sweep.overrides)
    for _, point in points:
        texts.update(dict.fromkeys(f"{attr}={text}" for attr, text in point.items()))
    return list(texts)


def _plain(value):
    """A parsed USD value as plain Python for the table: vectors and matrices as tuples of numbers."""
    if isinstance(value, bool | int | float | str):
        return value
    try:
        return tuple(_plain(v) for v in value)
    except TypeError:
        return str(value)


def _check_record(text: str) -> None:
    from pxr import Sdf  # noqa: PLC0415

    path = Sdf.Path(text) if Sdf.Path.IsValidPathString(text) else Sdf.Path()
    if not path.IsAbsolutePath() or not (path.IsPrimPath() or path.IsPropertyPath()):
        raise UsdInputError(f"--record wants a prim path (/World/Box) or an attribute (/World/Box.attr), got {text!r}")


def _check_recorded(stage, text: str, file: str) -> None:
    from pxr import Sdf  # noqa: PLC0415

    path = Sdf.Path(text)
    prim = stage.GetPrimAtPath(path.GetPrimPath())
    if not prim:
        raise UsdInputError("--record: no such prim", file=file, prim=str(path.GetPrimPath()))
    if path.IsPropertyPath() and not prim.GetAttribute(path.name):
        # Joint states and physics poses are written by the run itself: only the prim must exist.
        if not path.name.startswith(("state:", "xformOp:")):
            reason = f"--record: the prim has no attribute {path.name!r}"
            raise UsdInputError(reason, file=file, prim=str(prim.GetPath()))
