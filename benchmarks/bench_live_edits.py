"""What a live edit costs: a frame that carries one edit of the stage vs a plain frame, every engine on the CPU.

    python benchmarks/bench_live_edits.py [--bodies 1000] [--engines mujoco mujoco-warp xpbd ...] [--repeat 5]
        [--edits "bind material" friction ...]

The stage: ``--bodies`` rigid bodies, half of them boxes resting on the ground (a physics material bound to them),
half the links of chains of 8 capsules hanging from the world on driven revolute joints (limits, drive gains,
force limits, armature and joint friction authored). Each edit is made the way a user makes it while the run goes
on (a gizmo drag, a slider): one property of one prim set on the stage, then one frame stepped. The frame applies
the edit first (in place: no import of the stage, see ``newton_usd.simulation.in_place``), so its time over a plain
frame's is what the edit costs ("applied": in place; a new solver of the edited model where the engine compiles the
value, no import; in place after a new solver at the first edit, where the first switch compiles the body switchable
(MuJoCo's kinematic switch: that frame's ratio in brackets); or an import of the stage and a rebuild, where the edit
changes what is simulated). Plain and edited frames alternate on the same Simulation (the same contacts, the same
state), ``--repeat`` of each per edit; the table shows the best of each and the ratio (the best: the machine's other
work left out). Each switch (collider, kinematic, body enabled) toggles a box of its own; so do the material bindings,
made as Kit's material UI makes them: MaterialBindingAPI applied to the box, then its ``material:binding:physics``
bound ("bind material": to the stage's material, and unbound with the API removed, in turn; "bind new material": to a
material defined in the same frame, a new one each time). The physics step is the one each engine estimates stable
(``substeps="auto"``). The target: at most 1.5x.
"""

from __future__ import annotations

import argparse
import logging
import time

import numpy as np
import warp as wp
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade

from newton_usd.sim import Simulation

wp.config.log_level = wp.LOG_WARNING
TARGET = 1.5
LINKS = 8
ENGINES = {  # name -> Simulation.open's solver and backend
    "mujoco": ("mujoco", "cpu"),
    "mujoco-warp": ("mujoco", "warp"),
    "xpbd": ("xpbd", None),
    "featherstone": ("featherstone", None),
    "semi_implicit": ("semi_implicit", None),
    "kamino": ("kamino", None),
}


def live_stage(n: int) -> Usd.Stage:
    """Boxes resting on the ground under a material, and driven chains hanging from the world (see the module)."""
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, "Z")
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    stage.SetTimeCodesPerSecond(60)
    scene = UsdPhysics.Scene.Define(stage, "/Scene")
    scene.CreateGravityDirectionAttr(Gf.Vec3f(0, 0, -1))
    scene.CreateGravityMagnitudeAttr(9.81)
    ground = UsdGeom.Plane.Define(stage, "/Ground")
    UsdPhysics.CollisionAPI.Apply(ground.GetPrim())
    material = UsdShade.Material.Define(stage, "/Looks/Rubber")
    api = UsdPhysics.MaterialAPI.Apply(material.GetPrim())
    api.CreateDynamicFrictionAttr(0.8)
    api.CreateStaticFrictionAttr(0.8)
    api.CreateRestitutionAttr(0.0)
    boxes = n // 2
    side = int(np.ceil(np.sqrt(max(boxes, 1))))
    unbound = {4, 5}  # (the boxes the binding edits bind)
    for i in range(boxes):
        cube = UsdGeom.Cube.Define(stage, f"/Boxes/Box_{i}")
        cube.CreateSizeAttr(0.2)
        cube.AddTranslateOp().Set(Gf.Vec3d(0.4 * (i % side), 0.4 * (i // side), 0.1))
        prim = cube.GetPrim()
        UsdPhysics.RigidBodyAPI.Apply(prim)
        UsdPhysics.CollisionAPI.Apply(prim)
        UsdPhysics.MassAPI.Apply(prim).CreateMassAttr(1.0)
        if i not in unbound:
            UsdShade.MaterialBindingAPI.Apply(prim).Bind(material, materialPurpose="physics")
    for c in range(max(1, (n - boxes) // LINKS)):
        x, y = -1.0 - 0.5 * (c % side), 0.5 * (c // side)
        parent = None
        for k in range(LINKS):
            link = UsdGeom.Capsule.Define(stage, f"/Chains/Chain_{c}/Link_{k}")
            link.CreateRadiusAttr(0.04)
            link.CreateHeightAttr(0.07)
            link.AddTranslateOp().Set(Gf.Vec3d(x, y, 2.0 - 0.15 * k))
            prim = link.GetPrim()
            UsdPhysics.RigidBodyAPI.Apply(prim)
            UsdPhysics.CollisionAPI.Apply(prim)
            joint = UsdPhysics.RevoluteJoint.Define(stage, f"/Chains/Chain_{c}/Joint_{k}")
            if parent is not None:
                joint.CreateBody0Rel().SetTargets([parent])
                joint.CreateLocalPos0Attr(Gf.Vec3f(0, 0, -0.075))
            else:
                joint.CreateLocalPos0Attr(Gf.Vec3f(x, y, 2.075))
            joint.CreateBody1Rel().SetTargets([prim.GetPath()])
            joint.CreateLocalPos1Attr(Gf.Vec3f(0, 0, 0.075))
            joint.CreateAxisAttr("Y")
            joint.CreateLowerLimitAttr(-90.0)
            joint.CreateUpperLimitAttr(90.0)
            drive = UsdPhysics.DriveAPI.Apply(joint.GetPrim(), "angular")
            drive.CreateStiffnessAttr(0.02)
            drive.CreateDampingAttr(0.002)
            drive.CreateMaxForceAttr(100.0)
            drive.CreateTargetPositionAttr(0.0)
            jp = joint.GetPrim()
            jp.CreateAttribute("newton:armature", Sdf.ValueTypeNames.Float).Set(0.001)
            jp.CreateAttribute("newton:friction", Sdf.ValueTypeNames.Float).Set(0.001)
            parent = prim.GetPath()
    return stage


def edits(stage: Usd.Stage) -> dict:
    """Edit name -> ``edit(k)``: the k-th edit of that kind (a new value each time, as a drag or a slider)."""
    box = stage.GetPrimAtPath("/Boxes/Box_0")
    switched = [stage.GetPrimAtPath(f"/Boxes/Box_{i}") for i in (1, 2, 3)]  # (switched: one edit on, the next off)
    joint = stage.GetPrimAtPath("/Chains/Chain_0/Joint_3")
    material = stage.GetPrimAtPath("/Looks/Rubber")
    scene = UsdPhysics.Scene(stage.GetPrimAtPath("/Scene"))
    bound = [stage.GetPrimAtPath(f"/Boxes/Box_{i}") for i in (4, 5)]  # (unbound at first)

    Bool = Sdf.ValueTypeNames.Bool  # noqa: N806

    def attr(prim, name, type_name=Sdf.ValueTypeNames.Float):
        return prim.GetAttribute(name) or prim.CreateAttribute(name, type_name)

    def move(k):  # a gizmo drag: the body's own translate op, at the current time
        attr(box, "xformOp:translate", Sdf.ValueTypeNames.Double3).Set(Gf.Vec3d(0.0, 0.0, 0.1 + 0.02 * (k + 1)))

    def bind(k):  # Kit's material UI: the API applied, then the binding; unbound (and the API removed) in turn
        if k % 2 == 0:
            UsdShade.MaterialBindingAPI.Apply(bound[0]).Bind(UsdShade.Material(material), materialPurpose="physics")
        else:
            UsdShade.MaterialBindingAPI(bound[0]).UnbindDirectBinding("physics")
            bound[0].RemoveAPI(UsdShade.MaterialBindingAPI)

    def bind_new(k):  # a material defined during the run, then bound
        new = UsdShade.Material.Define(stage, f"/Looks/New_{k}")
        api = UsdPhysics.MaterialAPI.Apply(new.GetPrim())
        api.CreateDynamicFrictionAttr(0.3 + 0.05 * k)
        api.CreateStaticFrictionAttr(0.3 + 0.05 * k)
        UsdShade.MaterialBindingAPI.Apply(bound[1]).Bind(new, materialPurpose="physics")

    return {
        "transform": move,
        "velocity": lambda k: attr(box, "physics:velocity", Sdf.ValueTypeNames.Vector3f).Set(Gf.Vec3f(0, 0, 0.1 * k)),
        "mass": lambda k: attr(box, "physics:mass").Set(1.0 + 0.1 * (k + 1)),
        "friction": lambda k: attr(material, "physics:dynamicFriction").Set(0.8 - 0.01 * (k + 1)),
        "restitution": lambda k: attr(material, "physics:restitution").Set(0.01 * (k + 1)),
        "joint limit": lambda k: attr(joint, "physics:upperLimit").Set(90.0 - k - 1),
        "drive gain": lambda k: attr(joint, "drive:angular:physics:stiffness").Set(0.02 + 0.001 * (k + 1)),
        "drive max force": lambda k: attr(joint, "drive:angular:physics:maxForce").Set(100.0 - k - 1),
        "drive target": lambda k: attr(joint, "drive:angular:physics:targetPosition").Set(float(k + 1)),
        "joint friction": lambda k: attr(joint, "newton:friction").Set(0.001 * (k + 2)),
        "armature": lambda k: attr(joint, "newton:armature").Set(0.001 * (k + 2)),
        "gravity": lambda k: scene.GetGravityMagnitudeAttr().Set(9.81 - 0.01 * (k + 1)),
        "collider on/off": lambda k: attr(switched[0], "physics:collisionEnabled", Bool).Set(k % 2 == 1),
        "kinematic on/off": lambda k: attr(switched[1], "physics:kinematicEnabled", Bool).Set(k % 2 == 0),
        "body on/off": lambda k: attr(switched[2], "physics:rigidBodyEnabled", Bool).Set(k % 2 == 1),
        "bind material": bind,
        "bind new material": bind_new,
    }


MAX_BODIES = {"kamino": 20}
"""Engines measured on fewer bodies: Kamino refuses 1,000 bodies in one world (its dense Delassus matrix exceeds int32
indexing), and on the CPU it takes 35 s a frame at 100."""


class Imports(logging.Handler):
    """Counts the frames that applied edits through an import of the stage (the run's log says so)."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.count = 0

    def emit(self, record) -> None:
        self.count += "importing the stage again" in str(record.msg)


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def measure(engine: str, n: int, repeat: int, settle: int, only=None):
    """Rows ``(edit, plain ms, edited ms, ratio, imports)`` of one engine (``only``: of those edits)."""
    solver, backend = ENGINES[engine]
    stage = live_stage(n)
    sim = Simulation.open(stage, solver=solver, backend=backend, device="cpu", record=False, substeps="auto")
    sim.check_flung = False  # (a benchmark of edits: the edited boxes jump)
    sim.run(settle)
    imports, log = Imports(), logging.getLogger("newton_usd")
    log.addHandler(imports)
    level = log.level
    log.setLevel(logging.INFO)
    rows = []
    for name, edit in edits(stage).items():
        if only and name not in only:
            continue
        rebuilds, applied, imported = sim.rebuilds, sim.edits_applied, imports.count
        plain, edited, new_solver = [], [], []
        for k in range(repeat):
            plain.append(timed(sim.step_frame))
            solver = sim.solver
            edit(k)
            edited.append(timed(sim.step_frame))
            new_solver.append(sim.solver is not solver)
        if name.endswith("on/off") and repeat % 2:  # (switched back, untimed: the next edits see the stage as made)
            edit(repeat)
            sim.step_frame()
        a, b = min(plain), min(edited)
        took = sim.edits_applied - applied - (1 if name.endswith("on/off") and repeat % 2 else 0)
        how = "in place" if took == repeat else f"{took}/{repeat} applied"
        if sim.rebuilds > rebuilds:
            how = "import, rebuilt"
        elif imports.count > imported:  # (the import's model had the same elements: its values taken)
            how = "import, values taken"
        elif all(new_solver):
            how = "new solver, no import"
        elif any(new_solver):  # (MuJoCo: a body's first switch compiles it switchable; the later ones are in place)
            first = max(t for t, new in zip(edited, new_solver, strict=True) if new)
            how = f"in place after a new solver at the first ({first / a:.1f}x)"
        rows.append((name, a * 1e3, b * 1e3, b / a, how))
    log.removeHandler(imports)
    log.setLevel(level)
    sim.close()
    return sim.model.body_count, rows


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bodies", type=int, default=1000)
    p.add_argument("--engines", nargs="+", default=list(ENGINES), choices=list(ENGINES))
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--settle", type=int, default=5, help="frames stepped before measuring")
    p.add_argument("--edits", nargs="+", help="only these edits (names as the table prints them)")
    args = p.parse_args()
    print(f"Live edit cost ({args.bodies} bodies, CPU, ms per frame: best of {args.repeat}; target <= {TARGET}x)")
    print(f"{'engine':<14} {'edit':<17} {'plain frame':>12} {'edited frame':>13} {'ratio':>7}  applied", flush=True)
    worst, over = 0.0, []
    for engine in args.engines:
        n = min(args.bodies, MAX_BODIES.get(engine, args.bodies))
        bodies, rows = measure(engine, n, args.repeat, args.settle, args.edits)
        label = engine if n == args.bodies else f"{engine} ({bodies})"
        for name, a, b, ratio, how in rows:
            worst = max(worst, ratio) if how.startswith("in place") else worst
            over += [f"{label} {name} ({how})"] if ratio > TARGET else []
            print(f"{label:<14} {name:<17} {a:>12.2f} {b:>13.2f} {ratio:>6.2f}x  {how}", flush=True)
    print(f"worst ratio of the edits taken in place: {worst:.2f}x (target {TARGET}x); over the target: "
          f"{', '.join(over) or 'none'}")  # fmt: skip


if __name__ == "__main__":
    main()
