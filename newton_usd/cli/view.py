"""``usdsim view`` and ``usdsim video``, and the run flags ``--view`` / ``--video OUT.mp4``.

    usdsim view STAGE [-o PAGE.html] [--colliders] [--serve [--port N]] [--camera PATH | --follow PRIM | --fixed]
    usdsim video STAGE [-o OUT.mp4] [--size 640x480] [--fps F] [--camera PATH | --follow PRIM | --fixed]

:func:`register` adds both subcommands to an argparse sub-parser set, :func:`run` runs a parsed one;
:func:`add_run_flags` and :func:`after_run` give ``usdsim STAGE`` its ``--view`` and ``--video``.
Bad input (a missing or non-USD file, a port in use, an output that cannot be written, no offscreen GL, a
``--camera`` that is not a camera of the stage, a ``--follow`` prim with nothing drawn) is one line on stderr and
exit 2, and nothing is written.
"""

from __future__ import annotations

import argparse
import sys
import time

from .common import EXIT_INPUT

DEFAULT_PORT = 8080


def register(subparsers) -> None:
    """Add the ``view`` and ``video`` sub-commands to ``subparsers`` (``ArgumentParser.add_subparsers()``)."""
    v = subparsers.add_parser(
        "view",
        help="a web page playing a recording (or any stage)",
        description="Write one self-contained HTML page that plays STAGE's recording in any browser "
        "(play, pause, scrub, speed, frame and time), or serve it live with --serve.",
    )
    v.add_argument("stage", help="the stage to show (e.g. OUT.sim.usda; any USD stage)")
    v.add_argument("-o", "--output", help="the page to write (default: STAGE's name with .html, next to it)")
    v.add_argument("--colliders", action="store_true", help="draw the colliders too (guide/proxy purpose, "
                   "invisible collision shapes), translucent")  # fmt: skip
    v.add_argument("--serve", action="store_true", help="serve the scene live on 127.0.0.1 instead of writing a page")
    v.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"--serve's port (default {DEFAULT_PORT})")
    _add_view_flags(v)
    v.add_argument("-v", "--verbose", action="store_true", help="tracebacks on errors")
    v.set_defaults(view_command="view")
    m = subparsers.add_parser(
        "video",
        help="an MP4 of a recording, rendered offscreen on the CPU",
        description="Render STAGE's recording to an MP4 with MuJoCo's offscreen renderer (EGL or OSMesa) and PyAV.",
    )
    m.add_argument("stage", help="the stage to render (e.g. OUT.sim.usda)")
    m.add_argument("-o", "--output", help="the video (default: STAGE's name with .mp4, next to it)")
    m.add_argument("--size", default="640x480", help="WIDTHxHEIGHT in pixels (default 640x480)")
    m.add_argument("--fps", type=float, help="frames per second of the video (default: the stage's)")
    m.add_argument("--colliders", action="store_true", help="draw the colliders too, translucent")
    _add_view_flags(m)
    m.add_argument("-v", "--verbose", action="store_true", help="tracebacks on errors")
    m.set_defaults(view_command="video")


def _add_view_flags(parser) -> None:
    """Where the page or the video looks from (newton_usd.view.camera)."""
    g = parser.add_argument_group("the view (default: the stage's primary camera, else framed on the bodies at "
                                  "the first frame, from a three-quarter angle above, following them)")  # fmt: skip
    x = g.add_mutually_exclusive_group()
    x.add_argument("--camera", metavar="PATH", help="look through this Camera prim of the stage (its transform at "
                   "each frame, focal length, apertures and clipping range)")  # fmt: skip
    x.add_argument("--follow", metavar="PRIM", help="the default view, framed on this body (the gprims at or under "
                   "the prim) and following it")  # fmt: skip
    x.add_argument("--fixed", action="store_true", help="the default view, kept still at the first frame's framing")


def view(argv) -> int:
    """``usdsim view ...`` (``argv``: what follows ``view``)."""
    return main(["view", *argv])


def video(argv) -> int:
    """``usdsim video ...`` (``argv``: what follows ``video``)."""
    return main(["video", *argv])


def main(argv) -> int:
    """``usdsim view ...`` / ``usdsim video ...`` (``argv[0]`` is the sub-command)."""
    p = argparse.ArgumentParser(prog="usdsim")
    register(p.add_subparsers(dest="command", required=True))
    return run(p.parse_args(argv))


def run(args) -> int:
    """Run a parsed ``view`` or ``video`` command. Exit 0, or 2 on bad input."""
    from ..errors import NewtonUsdError  # noqa: PLC0415

    try:
        if args.view_command == "view":
            return _view(args)
        return _video(args)
    except NewtonUsdError as e:
        return _fail(str(e), args)


def _fail(message: str, args) -> int:
    print(f"usdsim {args.view_command}: {message}", file=sys.stderr)
    return EXIT_INPUT


def _default(stage: str, suffix: str) -> str:
    base = stage
    for ext in (".usda", ".usdc", ".usdz", ".usd"):
        if base.lower().endswith(ext):
            base = base[: -len(ext)]
            break
    return base + suffix


def _view(args) -> int:
    from ..view.page import check_writable, write_page  # noqa: PLC0415
    from ..view.scene import open_stage, read_scene  # noqa: PLC0415

    if args.serve:
        from ..view.serve import check_port, serve  # noqa: PLC0415

        check_port(args.port)
        stage = open_stage(args.stage)
        _check_camera(stage, args)
        scene = read_scene(stage)
        if not _says_what_is_shown(scene, args):
            return EXIT_INPUT
        return serve(scene, port=args.port, view=_choose_view(stage, scene, args))
    output = args.output or _default(args.stage, ".html")
    stage = open_stage(args.stage)
    check_writable(output)
    _check_camera(stage, args)
    t = time.perf_counter()
    scene = read_scene(stage)
    if not _says_what_is_shown(scene, args):
        return EXIT_INPUT
    view = _choose_view(stage, scene, args)
    size = write_page(scene, output, colliders=args.colliders, view=view)
    print(f"usdsim view: wrote {output} ({size / 1e6:.1f} MB, {_what(scene)}, {view.what}, "
          f"{time.perf_counter() - t:.1f} s): open it in a browser{_other_cameras(stage, view)}")  # fmt: skip
    return 0


def _video(args) -> int:
    from ..view.scene import open_stage, read_scene  # noqa: PLC0415
    from ..view.video import check_gl, parse_size, write_video  # noqa: PLC0415

    size = parse_size(args.size)
    if args.fps is not None and not args.fps > 0:
        return _fail(f"--fps must be > 0, got {args.fps}", args)
    output = args.output or _default(args.stage, ".mp4")
    stage = open_stage(args.stage)
    from ..view.page import check_writable  # noqa: PLC0415

    check_writable(output)
    _check_camera(stage, args)
    check_gl()
    t = time.perf_counter()
    scene = read_scene(stage)
    if not _says_what_is_shown(scene, args):
        return EXIT_INPUT
    view = _choose_view(stage, scene, args)
    frames = write_video(scene, output, size=size, fps=args.fps, colliders=args.colliders, view=view)
    print(f"usdsim video: wrote {output} ({frames} frames, {size[0]}x{size[1]}, {_what(scene)}, {view.what}, "
          f"{time.perf_counter() - t:.1f} s){_other_cameras(stage, view)}")  # fmt: skip
    return 0


def _check_camera(stage, args) -> None:
    """``--camera``'s prim is a camera of the stage (else :class:`UsdInputError`), checked before reading."""
    if getattr(args, "camera", None):
        from ..view.camera import check_camera  # noqa: PLC0415

        check_camera(stage, args.camera, args.stage)


def _choose_view(stage, scene, args):
    from ..view.camera import choose_view  # noqa: PLC0415

    return choose_view(stage, scene, camera=getattr(args, "camera", None), follow=getattr(args, "follow", None),
                       fixed=getattr(args, "fixed", False))  # fmt: skip


def _other_cameras(stage, view) -> str:
    """A hint naming the stage's cameras when the view is not through one of them."""
    if view.what.startswith("through"):
        return ""
    from ..view.camera import cameras  # noqa: PLC0415

    found = cameras(stage)
    if not found:
        return ""
    more = f" and {len(found) - 3} more" if len(found) > 3 else ""
    return f" (the stage's cameras: {', '.join(found[:3])}{more}; --camera PATH looks through one)"


def _what(scene) -> str:
    drawn = len(scene.visible())
    what = f"{drawn} part{'s' if drawn != 1 else ''}"
    if scene.clouds:
        what += f", {sum(len(c.radii) for c in scene.clouds)} points"
    if not scene.animated:
        return what + ", no time samples: the authored pose"
    return what + f", {scene.frames} frames at {scene.fps:g} fps"


def _says_what_is_shown(scene, args) -> bool:
    """False (and one line on stderr) when nothing would be drawn."""
    if scene.visible(colliders=getattr(args, "colliders", False)) or scene.clouds:
        return True
    colliders = len(scene.parts) - len(scene.visible())
    hint = f" ({colliders} collider(s): --colliders draws them)" if colliders else ""
    print(f"usdsim {args.view_command}: {args.stage}: nothing visible to draw: no gprim with purpose default or "
          f"render that is visible{hint}", file=sys.stderr)  # fmt: skip
    return False


# ---------------------------------------------------------------- usdsim STAGE --view / --video


def add_run_flags(parser) -> None:
    """``--view`` and ``--video OUT.mp4`` for ``usdsim STAGE``."""
    g = parser.add_argument_group("seeing the result")
    g.add_argument("--view", action="store_true", help="watch the run live in a browser (http://127.0.0.1:8080, "
                   "or a free port), and write a page playing it (OUTPUT's name with .html) at the end")  # fmt: skip
    g.add_argument("--video", metavar="OUT.mp4", help="render the recording to an MP4 after the run")
    _add_view_flags(parser)


def check_run_flags(args) -> str | None:
    """An error message for ``--video``/``--view`` given to ``usdsim STAGE``, checked before simulating
    (None: fine)."""
    from ..errors import NewtonUsdError  # noqa: PLC0415
    from ..view.page import check_writable  # noqa: PLC0415

    try:
        if getattr(args, "video", None):
            from ..view.video import check_gl  # noqa: PLC0415

            check_writable(args.video)
            check_gl()
    except NewtonUsdError as e:
        return str(e)
    if (getattr(args, "view", False) or getattr(args, "video", None)) and getattr(args, "benchmark", False):
        return "--view and --video show what the run writes: not with --benchmark"
    chosen = next((f for f in ("camera", "follow", "fixed") if getattr(args, f, None)), None)
    if chosen and not (getattr(args, "view", False) or getattr(args, "video", None)):
        return f"--{chosen} chooses the view of --view or --video: give one of them"
    return None


def check_run_camera(args) -> None:
    """``usdsim STAGE --camera PATH``: a Camera prim of STAGE (else :class:`UsdInputError`), checked before
    simulating (the file itself checked already)."""
    if getattr(args, "camera", None):
        from ..view.scene import open_stage  # noqa: PLC0415

        _check_camera(open_stage(args.stage), args)


def _view_argv(args) -> list:
    """The view flags of ``usdsim STAGE`` (``--camera``, ``--follow``, ``--fixed``) as ``usdsim view/video`` take
    them."""
    if getattr(args, "camera", None):
        return ["--camera", args.camera]
    if getattr(args, "follow", None):
        return ["--follow", args.follow]
    return ["--fixed"] if getattr(args, "fixed", False) else []


def live_view(args, sim):
    """``usdsim STAGE --view``: serve the run while it simulates (call ``.update(...)`` on the returned
    object from the run's progress callback, and pass it to :func:`after_run`). None without ``--view``."""
    if not getattr(args, "view", False):
        return None
    from ..view.serve import LiveRun  # noqa: PLC0415

    return LiveRun(sim.stage, camera=getattr(args, "camera", None), follow=getattr(args, "follow", None))


def after_run(args, output, live=None) -> int:
    """After ``usdsim STAGE`` saved ``output``: write the page (``--view``) and the video (``--video``);
    without either, say in one line how to see it. Returns an exit status (0, or 2)."""
    if live is not None:
        live.close()
    if output is None:
        return 0
    status = 0
    if getattr(args, "view", False):
        status = main(["view", str(output), *_view_argv(args)]) or status
    if getattr(args, "video", None):
        status = main(["video", str(output), "-o", args.video, *_view_argv(args)]) or status
    if not getattr(args, "view", False) and not getattr(args, "video", None) and not getattr(args, "quiet", False):
        print(f"usdsim: to watch it: usdsim view {output} (a web page) or usdsim video {output}", file=sys.stderr)
    return status
