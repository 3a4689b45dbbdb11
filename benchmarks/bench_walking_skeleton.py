"""Costs of the walking skeleton's layers, as ratios against baselines measured in the same run.

    python benchmarks/bench_walking_skeleton.py [--bodies 10 100 1000] [--frames 60]

Rows:
- import: ``builder.add_usd`` + ``finalize`` vs USD's own UsdPhysics parse of the same stage (the
  part of the import newton_usd cannot avoid).
- resolve: time spent in the schema resolver (newton/mjc/physx/physics values with provenance) vs the
  rest of the import; the target is under 20 %. "boxes" are free bodies whose colliders author newton
  and mjc values; "chains" are articulated chains whose joints apply NewtonJointAPI and MjcJointAPI
  and author values in both, as converted MJCF robots do.
- step (cpu): ``SolverMuJoCo.step`` (state exchange included; ping-pong States, zero control) vs bare
  ``mujoco.mj_step`` on the same compiled model, best of 3 interleaved runs; the next row is the same per
  step, with what the step adds to ``mj_step`` in microseconds against the target (at most 3 us).
- write-back: ``StageSync.write`` (Sdf level, one change block per frame) vs writing the same time
  samples through the ordinary USD API (``UsdGeom.XformOp.Set`` per body).
"""

from __future__ import annotations

import argparse
import time

import mujoco
import numpy as np
import warp as wp
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from newton_usd import ModelBuilder
from newton_usd.solvers import SolverMuJoCo
from newton_usd.sync import StageSync
from newton_usd.usd import StageFrame

wp.config.log_level = wp.LOG_WARNING
STEP_TARGET_US = 3.0  # the bound on what the state exchange adds per step (one world)


def boxes_stage(n: int) -> Usd.Stage:
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, "Z")
    UsdPhysics.Scene.Define(stage, "/Scene")
    ground = UsdGeom.Plane.Define(stage, "/Ground")
    UsdPhysics.CollisionAPI.Apply(ground.GetPrim())
    side = int(np.ceil(np.sqrt(n)))
    for i in range(n):
        cube = UsdGeom.Cube.Define(stage, f"/Boxes/Box_{i}")
        cube.CreateSizeAttr(0.2)
        cube.AddTranslateOp().Set(Gf.Vec3d(0.5 * (i % side), 0.5 * (i // side), 0.5 + 0.01 * (i % 7)))
        UsdPhysics.RigidBodyAPI.Apply(cube.GetPrim())
        UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
        cube.GetPrim().CreateAttribute("mjc:condim", Sdf.ValueTypeNames.Int).Set(4)
        cube.GetPrim().CreateAttribute("newton:contactMargin", Sdf.ValueTypeNames.Float).Set(0.001)
    return stage


def chains_stage(n: int, links: int = 8) -> Usd.Stage:
    """Articulated chains of ``links`` capsules on revolute joints that author newton and mjc values
    (as converted MJCF robots do): the resolver's heavy case."""
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, "Z")
    UsdPhysics.Scene.Define(stage, "/Scene")
    for c in range(max(1, n // links)):
        root = UsdGeom.Xform.Define(stage, f"/Chains/Chain_{c}")
        UsdPhysics.ArticulationRootAPI.Apply(root.GetPrim())
        parent = None
        for k in range(links):
            link = UsdGeom.Capsule.Define(stage, f"/Chains/Chain_{c}/Link_{k}")
            link.CreateRadiusAttr(0.02)
            link.CreateHeightAttr(0.1)
            link.AddTranslateOp().Set(Gf.Vec3d(c * 0.5, 0, 1.0 - 0.15 * k))
            prim = link.GetPrim()
            UsdPhysics.RigidBodyAPI.Apply(prim)
            UsdPhysics.CollisionAPI.Apply(prim)
            prim.ApplyAPI("MjcCollisionAPI")
            joint = UsdPhysics.RevoluteJoint.Define(stage, f"/Chains/Chain_{c}/Joint_{k}")
            if parent is not None:
                joint.CreateBody0Rel().SetTargets([parent])
                joint.CreateLocalPos0Attr(Gf.Vec3f(0, 0, -0.075))
            else:
                joint.CreateLocalPos0Attr(Gf.Vec3f(c * 0.5, 0, 1.075))
            joint.CreateBody1Rel().SetTargets([prim.GetPath()])
            joint.CreateLocalPos1Attr(Gf.Vec3f(0, 0, 0.075))
            joint.CreateAxisAttr("Y")
            jp = joint.GetPrim()
            jp.ApplyAPI("NewtonJointAPI")
            jp.ApplyAPI("MjcJointAPI")
            jp.CreateAttribute("newton:armature", Sdf.ValueTypeNames.Float).Set(0.01)
            jp.CreateAttribute("mjc:damping", Sdf.ValueTypeNames.Double).Set(0.1)
            parent = prim.GetPath()
    return stage


def import_rows(name: str, stage: Usd.Stage, n: int):
    load = getattr(UsdPhysics, "UsdPhysicsLoadStageFromPrimRange", None) or UsdPhysics.LoadUsdPhysicsFromRange
    t_parse = best(lambda: load(stage, ["/"]))

    def do_import():
        b = ModelBuilder()
        b.add_usd(stage)
        return b.finalize("cpu")

    rows = [(f"import {name}", n, best(do_import), t_parse, "UsdPhysics parse")]
    runs = []
    for _ in range(3):  # the fastest of three imports, split into resolving and the rest
        b = ModelBuilder()
        t0 = time.perf_counter()
        imported = b.add_usd(stage)
        runs.append((time.perf_counter() - t0, imported.resolver.seconds))
    total, resolving = min(runs)
    rows.append((f"resolve {name}", n, resolving, total - resolving, "rest of add_usd"))
    return rows


def best(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def bench(n: int, frames: int, substeps: int = 8):
    stage = boxes_stage(n)
    rows = import_rows("boxes", stage, n) + import_rows("chains", chains_stage(n), n)

    # step: ours and native interleaved, best of 3 runs each (both from the same state, in the same phases)
    b = ModelBuilder()
    b.add_usd(stage)
    model = b.finalize("cpu")
    solver = SolverMuJoCo(model, backend="cpu")
    dt = 1.0 / 480.0
    steps = frames * substeps
    s0, s1, control = model.state(), model.state(), model.control()
    mj_model = solver.mj_model
    mj_data = mujoco.MjData(mj_model)
    mj_data.qpos[:] = solver.mj_data.qpos

    def ours():
        nonlocal s0, s1
        for _ in range(steps):
            solver.step(s0, s1, control, None, dt)
            s0, s1 = s1, s0

    def native():
        for _ in range(steps):
            mujoco.mj_step(mj_model, mj_data)

    t_ours = t_native = float("inf")
    for _ in range(3):
        t_ours, t_native = min(t_ours, best(ours, 1)), min(t_native, best(native, 1))
    rows.append(("step (cpu)", n, t_ours, t_native, "mujoco.mj_step"))
    added = (t_ours - t_native) / steps * 1e6
    verdict = "ok" if added <= STEP_TARGET_US else "over"
    rows.append(
        (
            f"  added {added:.1f} us/step ({verdict}: target <= {STEP_TARGET_US:g})",
            n,
            t_ours / steps,
            t_native / steps,
            "per step",
        )
    )

    # write-back
    body_q = s0.body_q.numpy()
    layer = Sdf.Layer.CreateAnonymous()
    stage.GetSessionLayer().subLayerPaths.append(layer.identifier)
    sync = StageSync(stage, layer, model.body_label, StageFrame.of(stage))

    def ours_write():
        for f in range(frames):
            sync.write(body_q, float(f))

    base_stage = boxes_stage(n)
    ops = []
    for path in model.body_label:
        xf = UsdGeom.Xformable(base_stage.GetPrimAtPath(path))
        ops.append((xf.AddTranslateOp(opSuffix="sim"), xf.AddOrientOp(opSuffix="sim")))

    def usd_write():
        for f in range(frames):
            for b, (t_op, r_op) in enumerate(ops):
                p = body_q[b]
                t_op.Set(Gf.Vec3d(*map(float, p[:3])), f)
                r_op.Set(Gf.Quatf(float(p[6]), float(p[3]), float(p[4]), float(p[5])), f)

    rows.append(("write-back", n, best(ours_write, 1), best(usd_write, 1), "UsdGeom.XformOp.Set"))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bodies", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--frames", type=int, default=60)
    args = parser.parse_args()
    print(f"{'what':<15} {'bodies':>6} {'newton_usd':>12} {'baseline':>12} {'ratio':>7}  baseline is")
    for n in args.bodies:
        for what, count, ours, base, name in bench(n, args.frames):
            if name == "per step":
                print(f"{what:<46} {ours * 1e6:>10.2f}us {base * 1e6:>10.2f}us {ours / base:>7.2f}  mujoco.mj_step")
                continue
            print(f"{what:<15} {count:>6} {ours * 1e3:>10.2f}ms {base * 1e3:>10.2f}ms {ours / base:>7.2f}  {name}")


if __name__ == "__main__":
    main()
