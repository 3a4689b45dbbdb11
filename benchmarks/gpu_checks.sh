#!/usr/bin/env bash
# The CUDA checks, in one run that fits one 8-minute call on a cold kernel cache, the most important first, for a
# machine with an NVIDIA GPU and newton_usd's dependencies installed:
#
#     bash benchmarks/gpu_checks.sh [LOG_DIR]        (PYTHON=... to pick the interpreter; default python3)
#
# 1. bench_cold_start.py: the first frame of the boxes stage per engine (xpbd, mujoco, featherstone, semi_implicit,
#    kamino) on an empty kernel cache, then warm (goal: at most 30 s cold, 2 s warm); each engine's compiled modules
#    are merged into the cache the later parts use, so they start warm;
# 2. bench_newton_solvers.py --usdsim, boxes stage, 4,096 worlds then 1 world: per solver our frame and Newton
#    captured as its examples, and a Simulation end to end (step_frame with nothing written, run writing world 0:
#    goals 0.95 and 0.9 of examples at 4,096 worlds, 0.9 at 1 world);
# 3. bench_warp_worlds.py: our MuJoCo-Warp backend against mujoco_warp's captured step, ant and humanoid, 4,096
#    worlds (goal 0.95);
# 4. bench_vector_env.py: the cart-pole stage as 4,096 Gymnasium environments against the same solver's bare captured
#    frames (goal: more than 2 M environment steps/s, at least 0.9x);
# 4b. (opt-in, PARTS="bench_deformables") bench_deformables.py: cloth of 10,000 and 100,000 points, our vbd frame
#    against Newton's own VBD loop (goal 0.95);
# 5. the gpu-marked tests: the two that failed on the H200 first, alone and without xdist (their tracebacks come
#    back), then every gpu-marked test of the files below with xdist, in the time left.
# Each part runs under `timeout`, within its own limit and what is left of TOTAL_SECONDS (default 450: the call's 8
# minutes less the unpacking), and writes its log in LOG_DIR (default gpu_logs); a part with too little time left is
# skipped and says so; the tables and the tests' results are printed last. On a cold cache the tests get what the
# tables leave: PARTS="tests_known tests" in a second call on the same machine runs them on the warm cache
# (WARP_CACHE_PATH, default /tmp/newton_usd_gpu_warp_cache, outlives the call).
# Environment: PARTS (default: all, in the order above), TOTAL_SECONDS, WORKERS (xdist, default 12), STEPS (steps timed
# per side and round, default 40), BASELINE_DIR (a checkout of the baseline commit: its bench_newton_solvers.py at
# 4,096 worlds, last, if time is left).
set -u
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
LOG=${1:-gpu_logs}
mkdir -p "$LOG"
export PYTHONUNBUFFERED=1
export WARP_CACHE_PATH=${WARP_CACHE_PATH:-/tmp/newton_usd_gpu_warp_cache}
mkdir -p "$WARP_CACHE_PATH"
TOTAL=${TOTAL_SECONDS:-450}
STEPS=${STEPS:-40}
PARTS=" ${PARTS:-cold_start bench_newton_boxes bench_warp_worlds bench_vector_env tests_known tests} "

# `part NAME LIMIT CMD...`: CMD under `timeout`, at most LIMIT seconds and what is left of TOTAL (less RESERVE for
# what must still run after it), its output in LOG/NAME.txt; skipped where under 20 s are left.
RESERVE=0
part() {
    local name=$1 limit=$2
    shift 2
    [[ $PARTS == *" $name "* ]] || return 0
    local left=$((TOTAL - SECONDS - RESERVE))
    ((left < limit)) && limit=$left
    if ((limit < 20)); then
        echo "skipped: out of time (${SECONDS} s of ${TOTAL} s used)" >"$LOG/$name.txt"
        return
    fi
    echo "== $name: up to $limit s (at ${SECONDS} s)"
    timeout "$limit" "$@" >"$LOG/$name.txt" 2>&1
    echo "exit $? after ${SECONDS} s" >>"$LOG/$name.txt"
}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$LOG/gpu.txt"
"$PY" -c "import os, warp as wp, newton, mujoco, mujoco_warp; wp.init(); print('warp', wp.__version__, 'newton',
newton.__version__, 'mujoco', mujoco.__version__, 'cuda devices', wp.get_cuda_devices(), 'conditional graphs',
wp.is_conditional_graph_supported(), 'mempool', wp.is_mempool_enabled('cuda:0'), 'cores', os.cpu_count())" \
    2>&1 | tee -a "$LOG/gpu.txt"

# 1. The first frame per engine, cold and warm; the cache the later parts use filled on the way.
RESERVE=180
part cold_start 170 "$PY" benchmarks/bench_cold_start.py --device cuda --modes parallel \
    --engines xpbd,mujoco,featherstone,semi_implicit,kamino --merge-cache "$WARP_CACHE_PATH"

# 2. Simulation against Newton captured, boxes stage.
bench=(benchmarks/bench_newton_solvers.py --device cuda --steps "$STEPS" --repeat 2 --substeps 4 --usdsim)
RESERVE=110
part bench_newton_boxes 110 "$PY" "${bench[@]}" --worlds 4096,1 --eager-up-to 0

# 3. The MuJoCo-Warp backend against mujoco_warp's captured step.
site=$("$PY" -c "import os, newton, mujoco_warp as m; print(os.path.dirname(newton.__file__), os.path.dirname(m.__file__))")
read -r newton_dir mjw_dir <<<"$site"
models=("ant=$newton_dir/examples/assets/nv_ant.xml" "humanoid=$mjw_dir/test_data/humanoid/humanoid.xml")
RESERVE=110
part bench_warp_worlds 60 "$PY" benchmarks/bench_warp_worlds.py --device cuda --worlds 4096 --no-host "${models[@]}"

# 4. The Gymnasium vector environment against the bare captured frames, cart-pole, 4,096 environments.
RESERVE=70
part bench_vector_env 45 "$PY" benchmarks/bench_vector_env.py --device cuda --envs 4096 --solvers featherstone mujoco \
    --pairs 5

# 4b. Opt-in (PARTS="bench_deformables"): cloth under our vbd frame (captured) against Newton's own VBD loop.
RESERVE=30
part bench_deformables 120 "$PY" benchmarks/bench_deformables.py --device cuda --vertices 10000,100000 --repeat 3

# 5. The GPU tests: the two that failed before first, alone; then all of them in what is left.
files=(tests/test_frame_capture.py tests/test_device_check.py tests/test_newton_solvers.py tests/test_cone_limit.py
    tests/test_solver_mujoco.py tests/test_newton_ball_joints.py tests/test_warp_backend.py tests/test_live_edits.py
    tests/test_gym_capture.py tests/test_sdf_colliders.py tests/test_newton_actuators.py tests/test_neural_actuators.py
    tests/test_grain_coupling.py tests/test_particle_recording.py tests/test_particle_views.py
    tests/test_granular_grid.py tests/test_velocity_limits.py)
RESERVE=30
part tests_known 60 "$PY" -m pytest -v -rfE --tb=long -p no:cacheprovider \
    "tests/test_newton_solvers.py::test_position_drive_reaches_its_target[cuda-xpbd]" \
    "tests/test_newton_solvers.py::test_pendulum_small_angle_period[cuda-xpbd]"
parallel=()  # (pytest-xdist, where installed)
"$PY" -c "import xdist" 2>/dev/null && parallel=(-n "${WORKERS:-12}")
# (-v -rfE: each test's result as it ends, so a run cut by its time limit still says which failed)
RESERVE=5
part tests 600 "$PY" -m pytest -v -rfE --tb=short -m gpu "${parallel[@]}" -p no:cacheprovider --durations=10 \
    "${files[@]}"
parts=(cold_start bench_newton_boxes bench_warp_worlds bench_vector_env bench_deformables)
if [ -n "${BASELINE_DIR:-}" ]; then  # the baseline's own benchmark, its code first on the path, if time is left
    RESERVE=0
    PARTS+="baseline_newton_4096 "
    PYTHONPATH="$BASELINE_DIR:${PYTHONPATH:-}" part baseline_newton_4096 90 "$PY" "$BASELINE_DIR/benchmarks/bench_newton_solvers.py" \
        --device cuda --steps "$STEPS" --repeat 2 --worlds 4096 --eager-up-to 0
    parts+=(baseline_newton_4096)
fi

for f in "${parts[@]}"; do
    [ -f "$LOG/$f.txt" ] || continue
    echo "==== $f"
    grep -v '^\s*$' "$LOG/$f.txt" | grep -E -v '^(Warp|Module|  )' | tail -n 60
done
for f in tests_known tests; do
    [ -f "$LOG/$f.txt" ] || continue
    echo "==== $f"
    grep -E "FAILED|ERROR|passed|failed|^exit|skipped: out" "$LOG/$f.txt" | tail -n 40
done
