"""``usdsim convert MODEL.xml [-o OUT]``: an MJCF model to a USD asset."""

from __future__ import annotations

import argparse
import logging
import os

from .common import fail


def main(argv) -> int:
    p = argparse.ArgumentParser(
        prog="usdsim convert",
        description="Convert an MJCF model to a USD asset: UsdPhysics bodies, joints and colliders, and the mjc:* "
        "schemas for what only MuJoCo has (options with the exact time step, joint and contact parameters, "
        "actuators, equalities). Simulate it with `usdsim OUT`.",
    )
    p.add_argument("model", help="the MJCF file (.xml)")
    p.add_argument("-o", "--output", help="output USD file (default: MODEL's name with .usda, next to it)")
    p.add_argument("-v", "--verbose", action="store_true", help="tracebacks on errors")
    o = p.add_argument_group("import options (as add_mjcf's; see newton_usd.mjcf.options)")
    o.add_argument(
        "--fix-base", choices=("source", "fixed", "floating"), default="source",
        help="source: as the MJCF (default); fixed: delete the free joints of articulated root bodies (welded at "
        "qpos0); floating: a free joint for each jointless root body whose subtree has joints. Keyframes follow",
    )  # fmt: skip
    o.add_argument(
        "--no-scene", action="store_true",
        help="do not import <option> (gravity, time step, integrator, flags): no PhysicsScene is written, and "
        "usdsim simulates the asset with its defaults",
    )  # fmt: skip
    o.add_argument(
        "--no-self-collision", action="store_true",
        help="no contacts between the bodies of one kinematic tree (<exclude> pairs); without it, as the MJCF",
    )  # fmt: skip
    o.add_argument(
        "--collision-from-visuals", choices=("convexHull", "convexDecomposition", "boundingSphere", "boundingCube"),
        help="bodies without colliding geoms collide with their visual geoms: as they are (convexHull), split by "
        "CoACD (convexDecomposition), or bounding spheres or boxes; masses do not change",
    )  # fmt: skip
    o.add_argument(
        "--merge-meshes", action="store_true",
        help="merge each body's visual meshes of one group and material into one mesh (fewer prims)",
    )  # fmt: skip
    args = p.parse_args(argv)
    logging.basicConfig(format="usdsim: warning: %(message)s", level=logging.WARNING)
    from ..errors import NewtonUsdError  # noqa: PLC0415
    from ..mjcf import convert  # noqa: PLC0415
    from ..mjcf.options import FIX_BASE  # noqa: PLC0415

    base = os.path.basename(args.model)
    output = args.output or os.path.join(os.path.dirname(args.model), (base.rsplit(".", 1)[0] or base) + ".usda")
    if os.path.exists(output) and os.path.realpath(output) == os.path.realpath(args.model):
        return fail(f"{output}: refusing to overwrite the source model", args)
    try:
        convert(
            args.model, output, fix_base=FIX_BASE[args.fix_base], import_scene=not args.no_scene,
            self_collision=False if args.no_self_collision else None,
            collision_from_visuals=args.collision_from_visuals, merge_meshes=args.merge_meshes,
        )  # fmt: skip
    except NewtonUsdError as e:
        return fail(str(e), args)
    print(f"usdsim: wrote {output}")
    return 0
