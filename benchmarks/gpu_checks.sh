#!/usr/bin/env bash
# The CUDA checks, in one run (about 6 minutes on an H200 with a cold kernel cache), for a machine with an NVIDIA
# GPU and newton_usd's dependencies installed:
#
#     bash benchmarks/gpu_checks.sh [LOG_DIR]        (PYTHON=... to pick the interpreter; default python3)
#
# 1. the gpu-marked tests (frames captured against eager frames and single steps, the Newton solvers' behaviour,
#    the cone limits, MuJoCo-Warp against C MuJoCo) with a time limit, and usdsim end to end on the sample stages
#    under every solver on CUDA beside them (kernels compile into one cache for part 2);
# 2. then, with the GPU to itself, bench_newton_solvers.py: per solver our step and Newton's stepped directly (a step
#    at a time), our frame (one CUDA graph a frame) and Newton captured as its examples, world-steps/s and ratios:
#    the boxes stage at 1 and 4,096 worlds (with a usdsim end-to-end row at 4,096), Newton's ant and
#    humanoid at 4,096; then bench_warp_worlds.py (our MuJoCo-Warp backend against mujoco_warp's captured step,
#    ant and humanoid, 4,096 worlds).
# Each part has a time limit of its own (`timeout`) and its log in LOG_DIR (default gpu_logs); the tables come last.
# Environment: BIG=1 adds 1,024 and 16,384 worlds to the boxes table (a minute or two more); BASELINE_DIR=a checkout of the baseline commit runs
# its bench_newton_solvers.py (boxes, 4,096 worlds) and bench_warp_worlds.py too, for the before/after;
# TESTS_TIMEOUT, BENCH_TIMEOUT, USDSIM_SECONDS (the limits, s) and STEPS (steps timed per side and round) override.
set -u
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
LOG=${1:-gpu_logs}
mkdir -p "$LOG"
export PYTHONUNBUFFERED=1
# shellcheck disable=SC2155
export WARP_CACHE_PATH=${WARP_CACHE_PATH:-$(mktemp -d -t newton_usd_gpu_warp_cache.XXXXXX)}
STEPS=${STEPS:-80}
BT=${BENCH_TIMEOUT:-90}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$LOG/gpu.txt"
"$PY" -c "import warp as wp, newton, mujoco, mujoco_warp; wp.init(); print('warp', wp.__version__, 'newton',
newton.__version__, 'mujoco', mujoco.__version__, 'cuda devices', wp.get_cuda_devices(), 'conditional graphs',
wp.is_conditional_graph_supported(), 'mempool', wp.is_mempool_enabled('cuda:0'))" 2>&1 | tee -a "$LOG/gpu.txt"

# 1. Tests and usdsim on CUDA, side by side.
parallel=()  # (pytest-xdist, where installed: the kernels of each solver compile in a process of its own)
"$PY" -c "import xdist" 2>/dev/null && parallel=(-n "${WORKERS:-10}")
# (-v -rfE: each test's name and result as it ends, so a run cut by its time limit still says which failed; on
# an H200 with a cold kernel cache these files took over 190 s at 10-12 workers)
timeout "${TESTS_TIMEOUT:-300}" "$PY" -m pytest -v -rfE --tb=short -m gpu "${parallel[@]}" -p no:cacheprovider \
    --durations=15 tests/test_frame_capture.py tests/test_newton_solvers.py tests/test_cone_limit.py \
    tests/test_solver_mujoco.py tests/test_newton_ball_joints.py tests/test_warp_backend.py tests/test_live_edits.py \
    >"$LOG/tests.txt" 2>&1 &
tests=$!
outputs=$(mktemp -d -t newton_usd_gpu_outputs.XXXXXX)
summary='import json, sys
lines = sys.stdin.read().splitlines()
start = next((i for i, line in enumerate(lines) if line.startswith("{")), len(lines))
for line in lines[:start]:
    print("    " + line)
try:
    r = json.loads("\n".join(lines[start:]))
except ValueError:
    print("    (no summary)", *lines[start:], sep="\n    ")
else:
    print("  {solver:<13} exit {exit_code}  {steps} steps  {steps_per_second:9.0f} steps/s  first step {first_step_seconds:.2f} s"
          "  setup {setup_seconds:.2f} s  {error}".format(**{**r, "error": r.get("error") or ""}))'
(
    for stage in boxes_on_ground cartpole pendulum; do
        echo "sample_stages/$stage.usda, 120 frames, --device cuda:"
        for solver in mujoco xpbd featherstone semi_implicit kamino; do
            if ((SECONDS > ${USDSIM_SECONDS:-120})); then echo "  $solver: skipped (time)"; continue; fi
            timeout 60 "$PY" _usdsim.py "sample_stages/$stage.usda" --device cuda --solver "$solver" -n 120 \
                -o "$outputs/${stage}_${solver}.usda" --format json 2>&1 | "$PY" -c "$summary"
        done
    done
) >"$LOG/usdsim.txt" 2>&1
wait "$tests"
echo "tests: exit $?" | tee "$LOG/tests_exit.txt"

# 2. Benchmarks, one at a time.
bench=(benchmarks/bench_newton_solvers.py --device cuda --steps "$STEPS" --repeat 2 --substeps 4)
worlds=1,4096
[ "${BIG:-0}" = 1 ] && worlds=1,1024,4096,16384
timeout "$((2 * BT))" "$PY" "${bench[@]}" --worlds "$worlds" --eager-up-to 4096 \
    >"$LOG/bench_newton_boxes.txt" 2>&1
timeout "$BT" "$PY" "${bench[@]}" --worlds 4096 --usdsim --solvers xpbd,featherstone \
    >"$LOG/bench_newton_usdsim.txt" 2>&1
timeout "$BT" "$PY" "${bench[@]}" --worlds 4096 --stage ant --stage humanoid --solvers xpbd,featherstone \
    >"$LOG/bench_newton_robots.txt" 2>&1
site=$("$PY" -c "import os, newton, mujoco_warp as m; print(os.path.dirname(newton.__file__), os.path.dirname(m.__file__))")
read -r newton_dir mjw_dir <<<"$site"
models=("ant=$newton_dir/examples/assets/nv_ant.xml" "humanoid=$mjw_dir/test_data/humanoid/humanoid.xml")
timeout "$BT" "$PY" benchmarks/bench_warp_worlds.py --device cuda --worlds 4096 --no-host "${models[@]}" \
    >"$LOG/bench_warp_worlds.txt" 2>&1
parts=(usdsim bench_newton_boxes bench_newton_usdsim bench_newton_robots bench_warp_worlds)
if [ -n "${BASELINE_DIR:-}" ]; then  # the baseline's own benchmarks, its code first on the path
    PYTHONPATH="$BASELINE_DIR" timeout "$BT" "$PY" "$BASELINE_DIR/benchmarks/bench_newton_solvers.py" --device cuda \
        --steps "$STEPS" --repeat 2 --worlds 4096 >"$LOG/baseline_newton_4096.txt" 2>&1
    PYTHONPATH="$BASELINE_DIR" timeout "$BT" "$PY" "$BASELINE_DIR/benchmarks/bench_warp_worlds.py" --device cuda \
        --worlds 4096 --no-host "${models[@]}" >"$LOG/baseline_warp_worlds.txt" 2>&1
    parts+=(baseline_newton_4096 baseline_warp_worlds)
fi

for f in "${parts[@]}"; do
    echo "==== $f"
    grep -v '^\s*$' "$LOG/$f.txt" | grep -E -v '^(Warp|Module|  )' | tail -n 60
done
echo "==== tests ($(cat "$LOG/tests_exit.txt"))"
grep -E "FAILED|ERROR|passed|failed" "$LOG/tests.txt" | tail -n 45
