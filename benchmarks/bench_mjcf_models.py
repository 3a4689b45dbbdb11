"""Real MJCF models through newton_usd, against native MuJoCo: ``add_mjcf`` and convert-then-``add_usd``
(and, optionally, mujoco-usd-converter's USD imported with ``add_usd``), model by model.

    python benchmarks/bench_mjcf_models.py --zoo-python /work/zoo-venv/bin/python
        [--peer-python /work/muc-venv/bin/python] [--steps 100] [--json results.json] [MODEL ...]

For each model and route the same checks as the issue's: the MuJoCo model SolverMuJoCo builds
(``SolverMuJoCo(model, backend="cpu").mj_model``) has the counts of native MuJoCo's (nbody, njnt, ngeom,
nu, ntendon, neq, nq, nv) and its total mass, and after ``--steps`` steps from qpos0 with zero
control its ``mj_data.qpos`` is within 1e-5 of native MuJoCo's (joint by joint, matched through the
bodies; hinge and slide coordinates relative to each side's qpos0, since newton_usd folds a joint's
``ref`` into the placement). Models with keyframes are also run from keyframe 0 on both sides
(``SolverMuJoCo.reset_to_keyframe``). The 1000-step run is also timed against ``mj_step`` on the MuJoCo
model SolverMuJoCo compiled (the state exchange's cost per step); ``--warp`` also runs the warp
backend (MuJoCo-Warp on Warp's CPU device) against the cpu backend. Routes:

- ``mjcf``: ``ModelBuilder().add_mjcf(xml)``;
- ``usd``: ``newton_usd.mjcf.convert(xml, out.usda)`` (timed), then ``add_usd(out.usda)``;
- ``peer``: mujoco-usd-converter's ``Converter().convert(xml, dir)`` (timed, in its own venv), then
  our ``add_usd`` on its output. Only with ``--peer-python`` (or ``PEER_PYTHON``).

Every (model, route) runs in a fresh process of this python (one model's crash or hang does not stop
the others; ``--timeout`` per process); native MuJoCo is recomputed in each. Convert times are the
``convert`` call alone (imports done before), so the two converters' columns compare like with like.

Where the models come from. MJCF files shipped inside PyPI packages, installed (files only) into a
venv of their own, the "zoo":

    python3 -m venv /work/zoo-venv
    /work/zoo-venv/bin/pip install mujoco-menagerie
    /work/zoo-venv/bin/pip install --no-deps dm-control==1.0.50 gymnasium-robotics==1.4.2 mjlab==1.6.0 \\
        mujoco-mjx==3.17.0 robosuite==1.5.2 mujoco-warp==4.0.0

``--no-deps``: only the XML and mesh files are needed (MuJoCo compiles them here, in this venv).
``mujoco-menagerie`` ships only a registry: its models are downloaded from GitHub on first use (into
its cache, or from ``MENAGERIE_ROOT``), so a ``menagerie:ROBOT[/ENTRY]`` model argument works only
where that download (or a local checkout) is possible; without it the row says why. Model arguments
are paths relative to ``--models-dir`` (default: the zoo venv's site-packages, found by running
``--zoo-python``, else ``ZOO_PYTHON``), absolute paths, or ``menagerie:...``, each optionally
``NAME=`` prefixed. Without model arguments the default list below runs (arms with meshes, grippers
with tendons and equalities, hands, quadrupeds, humanoids, spatial tendons, weld/connect equalities).

mujoco-usd-converter in a venv of its own (it pins its MuJoCo and USD):

    python3 -m venv /work/muc-venv && /work/muc-venv/bin/pip install mujoco-usd-converter
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from warnings_capture import capture_warnings  # a sibling file: benchmarks/ is sys.path[0]

HERE = os.path.abspath(__file__)
RESULT = "BENCH_MJCF_RESULT "
QPOS_TOL = 1e-5  # the issue's bound on |qpos - native qpos|
MASS_RTOL = 1e-6  # total mass; USD stores masses as float32
COUNTS = ("nbody", "njnt", "ngeom", "nu", "ntendon", "neq", "nq", "nv")
ROUTES = ("mjcf", "usd", "peer")

# (name, path relative to the zoo's site-packages, what it covers)
DEFAULT_MODELS = [
    ("panda", "robosuite/models/assets/robots/panda/robot.xml", "arm, 58 mesh geoms (robosuite)"),
    ("ur5e", "robosuite/models/assets/robots/ur5e/robot.xml", "arm, meshes (robosuite)"),
    ("yam", "mjlab/asset_zoo/robots/i2rt_yam/xmls/yam.xml", "arm + gripper, meshes, joint equality (mjlab)"),
    ("aloha_pot", "mujoco_warp/test_data/aloha_pot/scene.xml", "bimanual arms, meshes, joint eqs, keys"),
    ("fetch_pnp", "gymnasium_robotics/envs/assets/fetch/pick_and_place.xml", "mobile arm, meshes, mocap weld"),
    ("robotiq_140", "robosuite/models/assets/grippers/robotiq_gripper_140.xml", "gripper, tendons + tendon eqs"),
    ("robotiq_s", "robosuite/models/assets/grippers/robotiq_gripper_s.xml", "3-finger gripper, tendon+joint eqs"),
    ("shadow_hand", "mujoco/mjx/test_data/shadow_hand/right_hand.xml", "dexterous hand, meshes (mjx data)"),
    ("shadow_reach", "gymnasium_robotics/envs/assets/hand/reach.xml", "dexterous hand, 44 fixed tendons"),
    ("go1", "mjlab/asset_zoo/robots/unitree_go1/xmls/go1.xml", "quadruped, meshes, no floor (mjlab)"),
    ("barkour", "mujoco/mjx/test_data/barkour_v0/assets/barkour_v0_mjx.xml", "quadruped, meshes, keyframe"),
    ("dm_quadruped", "dm_control/suite/quadruped.xml", "quadruped, fixed tendons + tendon eqs, floor"),
    ("dm_dog", "dm_control/suite/dog.xml", "quadruped, 162 meshes, tendons, keyframe"),
    ("g1", "mjlab/asset_zoo/robots/unitree_g1/xmls/g1.xml", "humanoid, meshes, no floor (mjlab)"),
    ("humanoid", "mujoco_warp/test_data/humanoid/humanoid.xml", "humanoid, floor, 3 keyframes"),
    ("cmu_humanoid", "dm_control/suite/humanoid_CMU.xml", "humanoid, 56 hinges, floor"),
    ("ball_in_cup", "dm_control/suite/ball_in_cup.xml", "spatial tendon through sites"),
    ("pulley_wrap", "mujoco_warp/test_data/tendon/pulley_wrap.xml", "spatial tendons, wraps, pulleys, key"),
    ("tendon_clamp", "mujoco/mjx/test_data/actuator/tendon_force_clamp.xml", "spatial+fixed tendon actuators"),
    ("constraints", "mujoco_warp/test_data/constraints.xml", "connect + weld + joint + tendon eqs, keys"),
]
HOW_TO_GET = (
    "make the zoo venv (see this script's docstring) and pass --zoo-python /work/zoo-venv/bin/python "
    "(or set ZOO_PYTHON), or pass --models-dir DIR"
)
FIND_SITE = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
FIND_MENAGERIE = (
    "import sys, mujoco_menagerie as mm; name, _, entry = sys.argv[1].partition('/'); "
    "r = mm.get(name); print(r.xml(entry or r.default_model))"
)


# ---------------------------------------------------------------- workers (run in a fresh process)
def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"[:300]


CHAOS_EPS = 1e-9  # the perturbation of qpos0 that measures how chaotic a model is
OFFSET = 0.1  # the offset of every hinge and slide joint in the offset run
LONG_STEPS = 1000
WARP_TOL = 1e-4  # cpu (float64) vs warp (float32) backends
WARP_CHAOS_FACTOR = 100.0  # float32 rounding (~1e-7) is 100x the chaos column's 1e-9 perturbation


def _largest(q, others) -> float:
    """The largest |other - q| over the coordinate vectors ``others``."""
    import numpy as np

    return max(float(np.max(np.abs(o - q), initial=0.0)) for o in others)


def native_run(m, steps: int, key: int | None = None, offset: float = 0.0, perturb: float = 0.0):
    """qpos (and xpos) of native MuJoCo after ``steps`` steps from qpos0 (or keyframe ``key``), zero ctrl;
    ``offset``: every hinge and slide coordinate moved by it first; ``perturb``: every coordinate moved by
    +-perturb (alternating signs)."""
    import mujoco
    import numpy as np

    d = mujoco.MjData(m)
    if key is not None:
        mujoco.mj_resetDataKeyframe(m, d, key)
    for j in range(m.njnt):
        if offset and int(m.jnt_type[j]) in (mujoco.mjtJoint.mjJNT_SLIDE, mujoco.mjtJoint.mjJNT_HINGE):
            d.qpos[m.jnt_qposadr[j]] += offset
    d.qpos[:] += perturb * np.where(np.arange(m.nq) % 2, 1.0, -1.0)
    d.ctrl[:] = 0.0
    for _ in range(steps):
        mujoco.mj_step(m, d)
    mujoco.mj_kinematics(m, d)
    return np.array(d.qpos), np.array(d.xpos)


def our_run(model, solver, steps: int, dt: float, key=None, offset: float = 0.0):
    """qpos and xpos of our (fresh: no warm start left from another run) solver's MuJoCo data after
    ``steps`` steps from the model's initial state (or keyframe ``key``), zero control; ``offset``: every
    revolute and prismatic joint moved by it first, through ``State.joint_q`` (found by
    ``model.joint_q_start``)."""
    import mujoco
    import numpy as np

    from newton_usd.core.types import JointType

    s0, s1, control = model.state(), model.state(), model.control()
    if key is not None:
        solver.reset_to_keyframe(s0, key)  # (control zero: native zeroes ctrl too)
    if offset:
        q, kinds = s0.joint_q.numpy(), model.joint_type.numpy()
        for j, start in enumerate(model.joint_q_start.numpy()[:-1]):
            if kinds[j] in (JointType.REVOLUTE, JointType.PRISMATIC):
                q[start] += offset
        s0.joint_q.assign(q)
    for _ in range(steps):
        solver.step(s0, s1, control, None, dt)
        s0, s1 = s1, s0
    data = solver.mj_data
    mujoco.mj_kinematics(solver.mj_model, data)
    return np.array(data.qpos), np.array(data.xpos)


STEP_TARGET_US = 3.0  # the issue's bound on what the state exchange adds per step and world


def step_times_us(model, dt: float, steps: int, repeats: int = 5) -> tuple[float, float, float]:
    """Microseconds per step, ``(ours, native, exchange)``: our cpu step (a fresh ``SolverMuJoCo``, ping-pong
    States, zero control) and ``mujoco.mj_step`` on the MuJoCo model that solver compiled, both from
    qpos0, each the best of ``repeats`` runs of ``steps`` steps, the runs interleaved (ours, native, ours,
    ...) so that both see the same load and the same phases of the motion; ``exchange``: our step with the
    engine's step made a no-op, what the state exchange and the Python around it cost alone (the
    difference of the first two is that plus one more call into MuJoCo, and for big models mostly the
    noise of two long timings)."""
    import mujoco

    from newton_usd.solvers import SolverMuJoCo

    solver = SolverMuJoCo(model, backend="cpu")
    states = [model.state(), model.state()]
    control = model.control()

    def ours_run() -> float:
        s0, s1 = states
        t0 = time.perf_counter()
        for _ in range(steps):
            solver.step(s0, s1, control, None, dt)
            s0, s1 = s1, s0
        states[:] = s0, s1
        return time.perf_counter() - t0

    solver.step(*states, control, None, dt)  # (sets the timestep; the first step pushes the state)
    states.reverse()
    m = solver.mj_model
    d = mujoco.MjData(m)
    mujoco.mj_step(m, d)
    ours = native = float("inf")
    for _ in range(repeats):
        ours = min(ours, ours_run())
        t0 = time.perf_counter()
        for _ in range(steps):
            mujoco.mj_step(m, d)
        native = min(native, time.perf_counter() - t0)
    engine_step, solver._engine.step = solver._engine.step, lambda: None
    exchange = min(ours_run() for _ in range(repeats))
    solver._engine.step = engine_step
    return ours / steps * 1e6, native / steps * 1e6, exchange / steps * 1e6


def backend_difference(model, steps: int, dt: float) -> float:
    """Max |joint_q(warp) - joint_q(cpu)| after ``steps`` steps from the initial state, zero control,
    both read from ``State.joint_q`` (the warp backend on the model's device, here Warp's CPU)."""
    import numpy as np

    from newton_usd.solvers import SolverMuJoCo

    q = {}
    for backend in ("cpu", "warp"):
        solver = SolverMuJoCo(model, backend=backend)
        s0, s1, control = model.state(), model.state(), model.control()
        for _ in range(steps):
            solver.step(s0, s1, control, None, dt)
            s0, s1 = s1, s0
        q[backend] = s0.joint_q.numpy().astype(np.float64)
    return float(np.max(np.abs(q["warp"] - q["cpu"]), initial=0.0))


def _valid_identifier(name: str) -> str:
    from pxr import Tf

    return Tf.MakeValidIdentifier(name) if name else ""


def match_bodies(ref, ours, labels):
    """Native body id -> our MuJoCo body id. By name (the MJCF name for add_mjcf; the USD prim's leaf
    name, a valid identifier of the MJCF name, for USD routes), then the rest by their qpos0 world
    position and mass. ``labels``: our mj body id -> the model body label it came from."""
    import mujoco
    import numpy as np

    d_ref, d_ours = mujoco.MjData(ref), mujoco.MjData(ours)
    mujoco.mj_kinematics(ref, d_ref)
    mujoco.mj_kinematics(ours, d_ours)
    by_name = {}
    for b in range(1, ours.nbody):
        label = labels.get(b, "")
        for key in {label, label.rstrip("/").rsplit("/", 1)[-1]}:
            by_name.setdefault(key, []).append(b)
    match, taken = {0: 0}, {0}
    for b in range(1, ref.nbody):
        name = mujoco.mj_id2name(ref, mujoco.mjtObj.mjOBJ_BODY, b) or f"body_{b}"
        for key in (name, _valid_identifier(name)):
            free = [c for c in by_name.get(key, []) if c not in taken]
            if len(free) == 1:
                match[b] = free[0]
                taken.add(free[0])
                break
    for b in range(1, ref.nbody):  # the rest: nearest at qpos0 with the same mass
        if b in match:
            continue
        best, dist = None, 1e-4
        for c in range(1, ours.nbody):
            if c in taken or abs(ours.body_mass[c] - ref.body_mass[b]) > 1e-6 * max(1.0, ref.body_mass[b]):
                continue
            dd = float(np.linalg.norm(d_ours.xpos[c] - d_ref.xpos[b]))
            if dd < dist:
                best, dist = c, dd
        if best is not None:
            match[b] = best
            taken.add(best)
    return match


def qpos_difference(ref, ours, match, q_ref, q_ours):
    """Max |qpos - native qpos| over the joints of matched bodies (joints in order on each body).
    Hinge and slide coordinates relative to each model's qpos0; quaternions sign-aligned. Returns
    (max difference, joints compared, joints not compared)."""
    import numpy as np

    worst, compared, missing = 0.0, 0, 0
    for b, c in match.items():
        nj_ref, nj_ours = int(ref.body_jntnum[b]), int(ours.body_jntnum[c])
        missing += max(0, nj_ref - nj_ours)
        for k in range(min(nj_ref, nj_ours)):
            j1, j2 = int(ref.body_jntadr[b]) + k, int(ours.body_jntadr[c]) + k
            t = int(ref.jnt_type[j1])
            if t != int(ours.jnt_type[j2]):
                missing += 1
                continue
            a1, a2 = int(ref.jnt_qposadr[j1]), int(ours.jnt_qposadr[j2])
            if t in (2, 3):  # slide, hinge
                diff = abs((q_ours[a2] - ours.qpos0[a2]) - (q_ref[a1] - ref.qpos0[a1]))
            else:
                n, quat = (7, slice(3, 7)) if t == 0 else (4, slice(0, 4))
                x1, x2 = np.array(q_ref[a1 : a1 + n]), np.array(q_ours[a2 : a2 + n])
                if np.dot(x1[quat], x2[quat]) < 0:
                    x2[quat] = -x2[quat]
                diff = float(np.max(np.abs(x2 - x1)))
            worst = max(worst, float(diff))
            compared += 1
    return worst, compared, missing


def _peer_convert(xml: str, work: str) -> dict:
    """mujoco-usd-converter in its own venv: Converter().convert(xml, dir), timed."""
    import mujoco_usd_converter as muc

    out_dir = os.path.join(work, "peer_usd")
    t0 = time.perf_counter()
    asset = muc.Converter().convert(xml, out_dir)
    seconds = time.perf_counter() - t0
    path = getattr(asset, "path", str(asset))
    return {"usd": path, "convert_s": seconds, "version": muc.__version__}


def worker(
    route: str, xml: str, work: str, steps: int, usd: str | None, warp: bool = False, step_only: bool = False
) -> dict:
    """One route on one model, with native MuJoCo computed here as the reference (``step_only``: only the
    counts, the mass and the step time)."""
    out = {"route": route}
    long_steps = max(LONG_STEPS, steps)
    if route == "peer-convert":
        out.update(_peer_convert(xml, work))
        return out
    caught = capture_warnings(["newton_usd"])
    import mujoco
    import numpy as np

    from newton_usd import ModelBuilder
    from newton_usd.solvers import SolverMuJoCo

    stage = "native"
    try:
        ref = mujoco.MjModel.from_xml_path(xml)
        out["native"] = {k: int(getattr(ref, k)) for k in COUNTS} | {
            "mass": float(ref.body_mass.sum()),
            "nkey": int(ref.nkey),
            "timestep": float(ref.opt.timestep),
        }
        dt = float(ref.opt.timestep)
        stage = "import"
        b = ModelBuilder()
        if route == "mjcf":
            b.add_mjcf(xml)
        else:
            if route == "usd":
                from newton_usd.mjcf import convert

                stage = "convert"
                usd = os.path.join(work, "model.usda")
                t0 = time.perf_counter()
                convert(xml, usd)
                out["convert_s"] = time.perf_counter() - t0
                stage = "import"
            b.add_usd(usd)
        stage = "finalize"
        model = b.finalize("cpu")
        stage = "solver"
        solver = SolverMuJoCo(model, backend="cpu")
        mine = solver.mj_model
        out["ours"] = {k: int(getattr(mine, k)) for k in COUNTS} | {"mass": float(mine.body_mass.sum())}
        ours, native = out["ours"], out["native"]
        out["count_diffs"] = {k: [ours[k], native[k]] for k in COUNTS if ours[k] != native[k]}
        out["mass_rel"] = abs(out["ours"]["mass"] - out["native"]["mass"]) / max(out["native"]["mass"], 1e-12)
        labels = {int(mj): model.body_label[i] for i, mj in enumerate(solver.spec_map.body_mj)}
        match = match_bodies(ref, mine, labels)
        out["bodies_unmatched"] = ref.nbody - len(match)
        if step_only:
            stage = "step time"
            out["our_step_us"], out["native_step_us"], out["exchange_us"] = step_times_us(model, dt, long_steps)
            return out
        stage = "step"
        t0 = time.perf_counter()
        q_ours, x_ours = our_run(model, solver, steps, dt)
        out["step_s"] = time.perf_counter() - t0
        q_ref, x_ref = native_run(ref, steps)
        out["finite"] = bool(np.isfinite(q_ours).all())
        out["native_moved"] = float(np.max(np.abs(q_ref - ref.qpos0), initial=0.0))  # the check is not vacuous
        out["dqpos"], out["joints_compared"], out["joints_missing"] = qpos_difference(ref, mine, match, q_ref, q_ours)
        out["dxpos"] = max((float(np.max(np.abs(x_ours[c] - x_ref[bb]))) for bb, c in match.items() if bb), default=0.0)
        stage = "compare"  # the fields that differ from native's model (newton_usd.compare): a miss's cause
        from newton_usd.compare import field_differences, match_elements

        out["field_differences"] = [
            f"{d.kind} {d.name}: {d.field}"
            for d in field_differences(ref, mine, match_elements(ref, mine), {}, 1e-5, 1e-6)
        ]
        # How chaotic the model is: native against itself with qpos0 moved by 1e-9, and with its geometry at
        # float32 round-off (newton_usd.compare.float32_twins: what a USD round trip could give).
        from newton_usd.compare import float32_twins

        twins = float32_twins(ref)
        q_eps, _ = native_run(ref, steps, perturb=CHAOS_EPS)
        out["chaos"] = _largest(q_ref, [q_eps] + [native_run(t, steps)[0] for t in twins])
        stage = "offset run"  # every hinge and slide joint moved by 0.1 through State.joint_q
        q_ours, _ = our_run(model, SolverMuJoCo(model, backend="cpu"), steps, dt, offset=OFFSET)
        q_ref, _ = native_run(ref, steps, offset=OFFSET)
        out["dqpos_offset"] = qpos_difference(ref, mine, match, q_ref, q_ours)[0]
        q_eps, _ = native_run(ref, steps, offset=OFFSET, perturb=CHAOS_EPS)  # native's sensitivity from there
        out["chaos_offset"] = _largest(q_ref, [q_eps] + [native_run(t, steps, offset=OFFSET)[0] for t in twins])
        stage = "step time"  # our cpu step against mj_step on the model SolverMuJoCo compiled
        out["our_step_us"], out["native_step_us"], out["exchange_us"] = step_times_us(model, dt, long_steps)
        stage = "long run"
        q_ours, _ = our_run(model, SolverMuJoCo(model, backend="cpu"), long_steps, dt)
        q_ref, _ = native_run(ref, long_steps)
        out["dqpos_long"] = qpos_difference(ref, mine, match, q_ref, q_ours)[0]
        if warp:  # the warp backend (MuJoCo-Warp, float32) on Warp's CPU device against our cpu backend
            stage = "warp run"
            out["warp_dq"] = backend_difference(model, steps, dt)
        if ref.nkey:  # native and ours from keyframe 0 (SolverMuJoCo.reset_to_keyframe), zero ctrl after
            stage = "keyframe run"
            q_key, _ = native_run(ref, steps, key=0)
            out["native_key0_moved"] = float(np.max(np.abs(q_key - ref.key_qpos[0])))
            if not model.keyframe_label:
                out["key0"] = "unsupported"
            else:
                q_ours, _ = our_run(model, SolverMuJoCo(model, backend="cpu"), steps, dt, key=0)
                out["key0"] = qpos_difference(ref, mine, match, q_key, q_ours)[0]
                q_eps, _ = native_run(ref, steps, key=0, perturb=CHAOS_EPS)
                out["chaos_key0"] = _largest(q_key, [q_eps] + [native_run(t, steps, key=0)[0] for t in twins])
    except Exception as e:  # noqa: BLE001  (the row reports it)
        out["error"] = f"{stage}: {_first_line(e)}"
    out["warnings"] = sorted(set(caught))
    return out


# ---------------------------------------------------------------- driver
def run_worker(
    python: str, route: str, xml: str, work: str, steps: int, timeout: float, usd=None, warp=False, step_only=False
) -> dict:
    env = dict(os.environ)
    if route == "peer-convert":
        env.pop("PYTHONPATH", None)
        env.pop("PXR_PLUGINPATH_NAME", None)  # our schema plugins are not the peer's business
    cmd = [python, HERE, "--worker", route, "--xml", xml, "--work", work, "--steps", str(steps)]
    if usd:
        cmd += ["--usd", usd]
    if warp:
        cmd.append("--warp")
    if step_only:
        cmd.append("--step-only")
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=work, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"route": route, "error": f"timed out after {timeout:g} s"}
    wall = time.perf_counter() - t0
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT):
            result = json.loads(line[len(RESULT) :])
            result["process_s"] = wall
            return result
    tail = [x for x in (proc.stdout + proc.stderr).strip().splitlines() if x.strip()]
    why = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit status {proc.returncode}"
    return {"route": route, "error": f"{why}: {tail[-1][:300] if tail else ''}", "log_tail": tail[-15:]}


def python_of(arg: str | None, env_name: str, what: str) -> str | None:
    python = arg or os.environ.get(env_name)
    if python and not os.path.exists(python):
        sys.exit(f"{what} / {env_name}: no such file {python}")
    return python


def resolve_models(args, zoo_python: str | None) -> list[tuple[str, str, str]]:
    """(name, absolute xml path or an error text starting with '!', what it covers) per model."""
    specs = args.models or [f"{n}={p}" for n, p, _ in DEFAULT_MODELS]
    notes = {n: w for n, _, w in DEFAULT_MODELS}
    models_dir = args.models_dir
    if models_dir is None and any(not s.split("=", 1)[-1].startswith(("/", "menagerie:")) for s in specs):
        if zoo_python is None:
            sys.exit(f"no --models-dir and no zoo venv to find the models in: {HOW_TO_GET}")
        found = subprocess.run([zoo_python, "-c", FIND_SITE], capture_output=True, text=True)
        if found.returncode != 0:
            sys.exit(f"{zoo_python} failed: {found.stderr.strip()[-300:]}")
        models_dir = found.stdout.strip()
    out = []
    for spec in specs:
        name, _, path = spec.rpartition("=")
        if path.startswith("menagerie:"):
            robot = path[len("menagerie:") :]
            name = name or robot.replace("/", "_")
            if zoo_python is None:
                out.append((name, "!menagerie: needs --zoo-python", "menagerie"))
                continue
            found = subprocess.run([zoo_python, "-c", FIND_MENAGERIE, robot], capture_output=True, text=True)
            lines = (found.stdout + found.stderr).strip().splitlines()
            ok = found.returncode == 0 and lines and os.path.exists(lines[-1])
            out.append((name, lines[-1] if ok else f"!menagerie: {lines[-1][:250] if lines else '?'}", "menagerie"))
            continue
        xml = path if os.path.isabs(path) else os.path.join(models_dir, path)
        name = name or os.path.splitext(os.path.basename(path))[0]
        out.append((name, xml if os.path.exists(xml) else f"!no such file {xml}", notes.get(name, "")))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "models", nargs="*", help="[NAME=]PATH relative to --models-dir, absolute, or menagerie:ROBOT[/ENTRY]"
    )
    p.add_argument("--zoo-python", help="python of the venv holding the model packages (default: $ZOO_PYTHON)")
    p.add_argument("--models-dir", help="base of relative model paths (default: the zoo venv's site-packages)")
    p.add_argument("--peer-python", help="python of a venv with mujoco-usd-converter (default: $PEER_PYTHON)")
    p.add_argument("--routes", default="mjcf,usd,peer", help="comma-separated, of: mjcf, usd, peer")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per worker process")
    p.add_argument("--keep", metavar="DIR", help="keep the converted USD files here (default: a temporary dir)")
    p.add_argument("--json", metavar="PATH", help="also write the results here")
    p.add_argument(
        "--warp",
        action="store_true",
        help="also run the warp backend (MuJoCo-Warp on Warp's CPU device: slow) against the cpu backend",
    )
    p.add_argument(
        "--step-only",
        action="store_true",
        help="only the counts, the mass and the step time against mj_step (no trajectory checks)",
    )
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--xml", help=argparse.SUPPRESS)
    p.add_argument("--work", help=argparse.SUPPRESS)
    p.add_argument("--usd", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        result = worker(args.worker, args.xml, args.work, args.steps, args.usd, args.warp, args.step_only)
        print(RESULT + json.dumps(result), flush=True)
        return

    zoo_python = python_of(args.zoo_python, "ZOO_PYTHON", "--zoo-python")
    peer_python = python_of(args.peer_python, "PEER_PYTHON", "--peer-python")
    routes = [r for r in args.routes.split(",") if r]
    if bad := [r for r in routes if r not in ROUTES]:
        sys.exit(f"unknown route(s) {bad}; valid: {', '.join(ROUTES)}")
    if "peer" in routes and peer_python is None:
        routes.remove("peer")
        print("note: no --peer-python (or PEER_PYTHON): the mujoco-usd-converter route is skipped")
    models = resolve_models(args, zoo_python)
    with tempfile.TemporaryDirectory(prefix="bench_mjcf_") as tmp:
        results = bench(models, routes, peer_python, args, args.keep or tmp)
    if args.step_only:
        report_steps(results)
    else:
        report(results, routes, args.steps)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


def bench(models, routes, peer_python, args, root) -> list:
    results = []
    w = max([14] + [len(name) for name, _, _ in models])
    for name, xml, what in models:
        res = {"model": name, "xml": xml, "what": what, "routes": {}}
        results.append(res)
        if xml.startswith("!"):
            res["error"] = xml[1:]
            print(f"{name}: {xml[1:]}", flush=True)
            continue
        for route in routes:
            work = os.path.join(root, name, route)
            os.makedirs(work, exist_ok=True)
            usd = None
            if route == "peer":
                conv = run_worker(peer_python, "peer-convert", xml, work, args.steps, args.timeout)
                res["peer_convert"] = conv
                if "error" in conv:
                    res["routes"][route] = {"route": route, "error": f"peer convert: {conv['error']}"}
                    print(f"{name:<{w}} {route:<5} {res['routes'][route]['error']}", flush=True)
                    continue
                usd = conv["usd"]
            r = run_worker(
                sys.executable,
                route,
                xml,
                work,
                args.steps,
                args.timeout,
                usd=usd,
                warp=args.warp,
                step_only=args.step_only,
            )
            if route == "peer":
                r["convert_s"] = res["peer_convert"]["convert_s"]
            res["routes"][route] = r
            verdict = _step_verdict(r) if args.step_only else _verdict(r)
            print(f"{name:<{w}} {route:<5} {verdict:<5} {r.get('error', '')}", flush=True)
    return results


def _passes_qpos0(r) -> bool:
    return _structure_ok(r) and r.get("dqpos", 1.0) <= QPOS_TOL


def _structure_ok(r) -> bool:
    return (
        "error" not in r
        and not r.get("count_diffs")
        and r.get("mass_rel", 1.0) <= MASS_RTOL
        and r.get("finite", False)
        and not r.get("joints_missing")
        and not r.get("bodies_unmatched")
    )


def _verdict(r) -> str:
    """PASS: counts, mass, and |dqpos| within the tolerance from qpos0, with every hinge and slide offset
    by 0.1, and from keyframe 0 where the model has one. CHAOS: only the trajectories differ, and from
    each start where they differ native MuJoCo itself moves more than the tolerance when that start moves
    by 1e-9 (the model is chaotic over these steps from there: its own sensitivity, start by start).
    FAIL otherwise."""
    key0 = r.get("key0")
    if key0 is not None and not isinstance(key0, float):
        return "FAIL"
    runs = [(r.get("dqpos", 1.0), r.get("chaos", 0.0)), (r.get("dqpos_offset", 1.0), r.get("chaos_offset", 0.0))]
    if key0 is not None:
        runs.append((key0, r.get("chaos_key0", 0.0)))
    if not _structure_ok(r):
        return "FAIL"
    if max(d for d, _ in runs) <= QPOS_TOL:
        return "PASS"
    return "CHAOS" if all(d <= QPOS_TOL or chaos >= QPOS_TOL for d, chaos in runs) else "FAIL"


def _counts_text(r) -> str:
    if "count_diffs" not in r:
        return "-"
    diffs = r["count_diffs"]
    return "=" if not diffs else " ".join(f"{k} {a}/{b}" for k, (a, b) in diffs.items())


def report(results, routes, steps):
    print(
        f"\nMJCF models through newton_usd vs native MuJoCo: counts (ours/native where they differ), total mass,"
        f" max |qpos - native| after {steps} steps (zero ctrl) from qpos0 (|dqpos|), with every hinge and slide"
        f" offset by {OFFSET:g} (offset), from keyframe 0 (key0, where the model has one), and from qpos0 after"
        f" {LONG_STEPS} steps (@{LONG_STEPS}, reported only).\nPASS: counts equal, mass within {MASS_RTOL:g},"
        f" |dqpos|, offset and key0 <= {QPOS_TOL:g}. CHAOS: only the trajectories differ, and from each start where"
        f" they do, native MuJoCo itself moves more than that when the start moves by {CHAOS_EPS:g} or its geometry"
        f" by float32 round-off (its own sensitivity per start after {steps} steps: chaos from qpos0, chaos off"
        " from the offset joints)."
        "\n|dxpos|: max body position difference (m); moved: max |native qpos - qpos0| (the check is not vacuous);"
        " conv s: the convert call alone."
    )
    w = max([14] + [len(res["model"]) for res in results])
    head = (
        f"{'model':<{w}} {'route':<5} {'counts':<34} {'mass rel':>9} {'|dqpos|':>9} {'|dxpos|':>9}"
        f" {'offset':>9} {'key0':>9} {'@' + str(LONG_STEPS):>9} {'chaos':>9} {'chaos off':>9} {'moved':>8}"
        f" {'conv s':>7}"
        f" {'result':<6} error"
    )
    print(head)
    print("-" * len(head))
    for res in results:
        if "error" in res:
            blank = f"{'':>9} {'':>9} {'':>9} {'':>9} {'':>9} {'':>9} {'':>9} {'':>9} {'':>8} {'':>7}"
            print(f"{res['model']:<{w}} {'-':<5} {'-':<34} {blank} {'FAIL':<6} {res['error']}")
            continue
        for route in routes:
            r = res["routes"].get(route)
            if r is None:
                continue
            mass = f"{r['mass_rel']:.1e}" if "mass_rel" in r else "-"
            dq = f"{r['dqpos']:.1e}" if "dqpos" in r else "-"
            if "dqpos" in r and not r.get("finite", True):
                dq = "nan"
            dx = f"{r['dxpos']:.1e}" if "dxpos" in r else "-"
            conv = f"{r['convert_s']:.2f}" if "convert_s" in r else "-"
            moved = f"{r['native_moved']:.1e}" if "native_moved" in r else "-"
            extra = []
            if r.get("joints_missing"):
                extra.append(f"{r['joints_missing']} joints not compared")
            if r.get("bodies_unmatched"):
                extra.append(f"{r['bodies_unmatched']} bodies unmatched")
            if _verdict(r) == "FAIL" and r.get("field_differences"):
                fields = r["field_differences"]
                extra.append(f"differs from native's model (usdsim compare): {', '.join(fields[:3])}"
                             + (f" and {len(fields) - 3} more" if len(fields) > 3 else ""))  # fmt: skip
            err = "; ".join(extra + ([r["error"]] if "error" in r else []))
            key0 = r.get("key0", "-")
            key0 = f"{key0:.1e}" if isinstance(key0, float) else key0[:9]
            more = " ".join(f"{r[k]:>9.1e}" if k in r else f"{'-':>9}" for k in ("dqpos_offset", "dqpos_long"))
            chaos, chaos_off = (f"{r[k]:.1e}" if k in r else "-" for k in ("chaos", "chaos_offset"))
            print(
                f"{res['model']:<{w}} {route:<5} {_counts_text(r):<34.34} {mass:>9} {dq:>9} {dx:>9}"
                f" {more.split()[0]:>9} {key0:>9} {more.split()[1]:>9} {chaos:>9} {chaos_off:>9} {moved:>8} {conv:>7}"
                f" {_verdict(r):<6} {err}"
            )
    verdicts = [_verdict(r) for res in results for r in res.get("routes", {}).values()]
    total = sum(len(res.get("routes", {})) or 1 for res in results)
    print(
        f"{verdicts.count('PASS')} of {total} (model, route) rows pass, {verdicts.count('CHAOS')} chaotic; qpos0"
        f" alone: {sum(1 for res in results for r in res.get('routes', {}).values() if _passes_qpos0(r))} of {total}"
    )

    if "peer" in routes:
        print("\nConversion time (the convert call alone): newton_usd.mjcf.convert vs mujoco-usd-converter")
        print(f"{'model':<{w}} {'ours s':>8} {'peer s':>8} {'peer/ours':>10}")
        for res in results:
            ours = res.get("routes", {}).get("usd", {}).get("convert_s")
            peer = res.get("peer_convert", {}).get("convert_s")
            ratio = f"{peer / ours:.2f}x" if ours and peer else "-"
            print(f"{res['model']:<{w}} {_fmt(ours):>8} {_fmt(peer):>8} {ratio:>10}")

    report_steps(results)
    if any("warp_dq" in r for res in results for r in res.get("routes", {}).values()):
        print(
            f"\ncpu vs warp backend (MuJoCo-Warp in float32 on Warp's CPU device): max |joint_q difference| after"
            f" {steps} steps from qpos0. agree: <= {WARP_TOL:g}; CHAOS: native MuJoCo moves more than that when"
            f" qpos0 moves by {CHAOS_EPS:g} x {WARP_CHAOS_FACTOR:g} (float32's rounding)."
        )
        print(f"{'model':<{w}} {'route':<5} {'|dq|':>9} {'result':<6}")
        for res in results:
            for route, r in res.get("routes", {}).items():
                if "warp_dq" in r:
                    dq = r["warp_dq"]
                    verdict = (
                        "agree"
                        if dq <= WARP_TOL
                        else "CHAOS"
                        if r.get("chaos", 0) * WARP_CHAOS_FACTOR > WARP_TOL
                        else "FAIL"
                    )
                    print(f"{res['model']:<{w}} {route:<5} {dq:>9.1e} {verdict:<6}")

    print("\nnewton_usd warnings per model and route (distinct, first 6):")
    for res in results:
        for route, r in res.get("routes", {}).items():
            for text in r.get("warnings", [])[:6]:
                print(f"  {res['model']:<{w}} {route:<5} {text[:220]}")


def _step_verdict(r) -> str:
    """ok: our step adds at most STEP_TARGET_US to mj_step's; over: more; FAIL: no step time."""
    if "our_step_us" not in r:
        return "FAIL"
    return "ok" if r["our_step_us"] - r["native_step_us"] <= STEP_TARGET_US else "over"


def report_steps(results):
    w = max([14] + [len(res["model"]) for res in results])
    print(
        f"\nStep time, cpu backend: our step (state exchange included, ping-pong States, zero control) against"
        f" mujoco.mj_step on the MuJoCo model SolverMuJoCo compiled, per step, best of 5 interleaved runs of"
        f" {LONG_STEPS} steps from qpos0. Target: the exchange adds at most {STEP_TARGET_US:g} us per step (ok)."
    )
    print(
        f"{'model':<{w}} {'route':<5} {'native us':>10} {'ours us':>9} {'added us':>9} {'ratio':>6} target"
        f" {'exchange alone us':>18}"
    )
    for res in results:
        for route, r in res.get("routes", {}).items():
            if "our_step_us" in r:
                ours, native = r["our_step_us"], r["native_step_us"]
                print(
                    f"{res['model']:<{w}} {route:<5} {native:>10.1f} {ours:>9.1f} {ours - native:>9.1f}"
                    f" {ours / native:>6.2f} {_step_verdict(r):<6} {r.get('exchange_us', float('nan')):>18.2f}"
                )
            elif "error" in r:
                print(f"{res['model']:<{w}} {route:<5} {r['error']}")
    added = [
        r["our_step_us"] - r["native_step_us"]
        for res in results
        for r in res.get("routes", {}).values()
        if "our_step_us" in r
    ]
    if added:
        print(
            f"added per step: median {sorted(added)[len(added) // 2]:.1f} us, max {max(added):.1f} us;"
            f" {sum(a <= STEP_TARGET_US for a in added)} of {len(added)} within {STEP_TARGET_US:g} us"
        )
    alone = [r["exchange_us"] for res in results for r in res.get("routes", {}).values() if "exchange_us" in r]
    if alone:
        print(
            f"exchange alone (engine step a no-op): median {sorted(alone)[len(alone) // 2]:.2f} us,"
            f" max {max(alone):.2f} us; {sum(a <= STEP_TARGET_US for a in alone)} of {len(alone)}"
            f" within {STEP_TARGET_US:g} us"
        )


def _fmt(x) -> str:
    return f"{x:.2f}" if x is not None else "-"


if __name__ == "__main__":
    main()
