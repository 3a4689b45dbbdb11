"""The options of one simulation run, as ``usdsim run`` and ``usdsim batch`` take them.

``usdsim run`` parses its command line with :func:`run_parser`; ``usdsim batch`` offers the same options for
every run of a sweep, and :mod:`newton_usd.batch.plan` checks a sweep's options with the same parser, so the
two cannot disagree on what a run accepts. Standard library only: ``--help`` stays instant.
"""

from __future__ import annotations

import argparse

DEFAULT_CLIP_FRAMES = 1000  # newton_usd.sync.clips.DEFAULT_CLIP_FRAMES (not imported: --help stays instant)


def substeps_arg(text: str):
    """``--substeps``: a whole number, or ``auto``."""
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number or auto, got {text!r}") from None


def run_parser() -> argparse.ArgumentParser:
    """``usdsim run``'s argument parser: the options of one simulation run."""
    p = argparse.ArgumentParser(
        prog="usdsim",
        description="Simulate the physics authored in a USD stage and write the motion onto its prims, "
        "in an output stage that sublayers the source (the source file is never modified).",
    )
    p.add_argument("stage", help="the USD stage to simulate (.usd, .usda, .usdc, .usdz)")
    p.add_argument("-o", "--output", help="output stage (default: STAGE's name with .sim.usda, next to it)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--flatten", action="store_true", help="write one self-contained file (the whole composed stage)")
    out.add_argument(
        "--in-place",
        action="store_true",
        help="write the motion into STAGE itself (its authored poses are replaced; only when you ask for it)",
    )
    length = p.add_mutually_exclusive_group()
    length.add_argument(
        "-n", "--num-frames", type=int, help="frames to simulate (default: the stage's time range, else 120)"
    )
    length.add_argument("--duration", type=float, help="seconds to simulate (instead of --num-frames)")
    p.add_argument("--device", default="cpu", help="Warp device for the model: cpu or cuda[:N] (default: cpu)")
    p.add_argument(
        "--solver",
        help="mujoco, xpbd, featherstone, semi_implicit or kamino (Newton's Warp solvers; kamino is beta); vbd (cloth "
        "and soft volumes) or implicit_mpm (grains) (default: the stage's newton:usd:solver; the engine of the scene's "
        "NewtonXpbdSceneAPI, NewtonKaminoSceneAPI, NewtonVbdSceneAPI or NewtonMPMSceneAPI; vbd for a stage with "
        "deformables; else mujoco). On a stage with cloth or soft volumes, mujoco and xpbd run its rigid bodies "
        "coupled with vbd for its deformables (mujoco_vbd, xpbd_vbd)",
    )
    p.add_argument(
        "--backend",
        choices=("auto", "cpu", "warp"),
        help="MuJoCo backend: C MuJoCo (cpu) or MuJoCo-Warp (warp); auto picks warp on CUDA",
    )
    p.add_argument("--fps", type=float, help="frames per second (default: the stage's timeCodesPerSecond)")
    step = p.add_mutually_exclusive_group()
    step.add_argument(
        "--substeps",
        type=substeps_arg,
        help="physics steps per frame (default: the stage's time step, else one of at most 1/480 s); auto: as many "
        "more as the solver's step estimated stable asks (featherstone, semi_implicit), else the default",
    )
    step.add_argument("--dt", type=float, help="physics time step in seconds (default: the stage's)")
    worlds = p.add_mutually_exclusive_group()
    worlds.add_argument(
        "--worlds",
        type=int,
        default=1,
        help="simulate N independent copies of the stage's physics (world 0 is written onto the prims)",
    )
    worlds.add_argument(
        "--envs",
        metavar="PRIM",
        help="the parent of identical environment prims (e.g. /World/envs): one world per child prim, the first "
        "imported once and replicated at each one's place; every environment's prims are written",
    )
    p.add_argument(
        "--write-worlds",
        choices=("first", "all"),
        default="first",
        help="with --worlds N: write world 0 onto the prims (first), or also every other world onto a copy of "
        "the environment in the output, physics stripped, laid out on a grid (all)",
    )
    p.add_argument(
        "--world-spacing",
        type=float,
        metavar="D",
        help="with --write-worlds all: the grid spacing of the copies in stage units (default: by the "
        "environment's size; 0: all in place)",
    )
    p.add_argument(
        "--write-joint-states",
        action="store_true",
        help="also write joint positions and velocities (PhysicsJointStateAPI attributes) onto the joint prims",
    )
    p.add_argument(
        "--record-every", type=int, default=1, metavar="N", help="write every N-th frame (default: every frame)"
    )
    p.add_argument(
        "--clip-frames",
        type=int,
        metavar="K",
        help=f"a recording of more than K frames is streamed to USD value clips, K frames per clip, in OUT's "
        f"STEM.clips/ directory beside it (memory stays bounded however long the run; default: "
        f"{DEFAULT_CLIP_FRAMES}); 0: never, one file as --flatten and --in-place always write",
    )
    p.add_argument(
        "--xform-ops",
        choices=("trs", "matrix"),
        default="trs",
        help="how poses go onto the prims: translate/orient ops (trs, the default) or one transform matrix "
        "per prim (matrix: half the values to write, for big scenes)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="PRIM.ATTR=VALUE",
        help="override an authored value before simulating, e.g. --set /World/Box.physics:mass=2 (repeatable); "
        "written into the output, never into STAGE",
    )
    p.add_argument(
        "--keyframe",
        metavar="KEY",
        help="start from this keyframe (an MjcKeyframe prim's name or path, or an index)",
    )
    p.add_argument(
        "--max-distance",
        type=float,
        default=1e6,
        metavar="M",
        help="a body farther than M meters from the origin stops the run, exit 3 (default: 1e6)",
    )
    p.add_argument(
        "--max-speed",
        type=float,
        default=1e4,
        metavar="V",
        help="a body faster than V m/s stops the run, exit 3 (default: 1e4)",
    )
    p.add_argument(
        "--mujoco-memory",
        type=float,
        metavar="MIB",
        help="MiB of C MuJoCo's arena per world: contacts, constraints, solver stack (default: sized from the "
        "model; a run that fills it stops, exit 3)",
    )
    p.add_argument("--benchmark", action="store_true", help="simulate only: write nothing, and report the timing")
    p.add_argument("--format", choices=("human", "json"), default="human", help="the closing summary's format")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary")
    p.add_argument("-v", "--verbose", action="store_true", help="tracebacks on errors, and informational logs")
    return p
