#!/usr/bin/env bash
# The CUDA checks, in one run, for a machine with an NVIDIA GPU and newton_usd's dependencies installed:
#
#     bash benchmarks/gpu_checks.sh [LOG_DIR]        (PYTHON=... to pick the interpreter; default python3)
#
# 1. the gpu-marked tests of the files below (the Newton solvers' behaviour tests and the cone limits on CUDA,
#    MuJoCo-Warp on CUDA against C MuJoCo), with usdsim run end to end on the sample stages under every solver on
#    CUDA beside them;
# 2. then, with the GPU to itself: bench_newton_solvers.py on CUDA (our step against the same Newton solver
#    stepped directly) at 1 world and at 4,096, and bench_warp_worlds.py (our MuJoCo-Warp backend against
#    mujoco_warp called directly) for an ant and a humanoid at 4,096 worlds.
# Each part has a time limit of its own and its log in LOG_DIR (default gpu_logs); the tables come last.
set -u
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
LOG=${1:-gpu_logs}
mkdir -p "$LOG"
export PYTHONUNBUFFERED=1
# shellcheck disable=SC2155
export WARP_CACHE_PATH=${WARP_CACHE_PATH:-$(mktemp -d -t newton_usd_gpu_warp_cache.XXXXXX)}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$LOG/gpu.txt"
"$PY" -c "import warp as wp, newton, mujoco, mujoco_warp; wp.init(); print('warp', wp.__version__, 'newton',
newton.__version__, 'mujoco', mujoco.__version__, 'cuda devices', wp.get_cuda_devices())" 2>&1 | tee -a "$LOG/gpu.txt"

# 1. Tests and usdsim on CUDA, side by side (kernels compile into the shared cache for part 2).
parallel=()  # (pytest-xdist, where installed: the kernels of each solver compile in a process of its own)
"$PY" -c "import xdist" 2>/dev/null && parallel=(-n "${WORKERS:-10}")
timeout "${TESTS_TIMEOUT:-280}" "$PY" -m pytest -q -m gpu "${parallel[@]}" -p no:cacheprovider --durations=15 \
    tests/test_newton_solvers.py tests/test_cone_limit.py tests/test_solver_mujoco.py >"$LOG/tests.txt" 2>&1 &
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
            if ((SECONDS > ${USDSIM_SECONDS:-240})); then echo "  $solver: skipped (time)"; continue; fi
            timeout 120 "$PY" _usdsim.py "sample_stages/$stage.usda" --device cuda --solver "$solver" -n 120 \
                -o "$outputs/${stage}_${solver}.usda" --format json 2>&1 | "$PY" -c "$summary"
        done
    done
) >"$LOG/usdsim.txt" 2>&1
wait "$tests"
echo "tests: exit $?"

# 2. Benchmarks, one at a time.
timeout "${BENCH_TIMEOUT:-150}" "$PY" benchmarks/bench_newton_solvers.py --device cuda --steps 100 --repeat 3 \
    >"$LOG/bench_newton_1.txt" 2>&1
timeout "${BENCH_TIMEOUT:-150}" "$PY" benchmarks/bench_newton_solvers.py --device cuda --steps 100 --repeat 3 \
    --worlds 4096 >"$LOG/bench_newton_4096.txt" 2>&1
site=$("$PY" -c "import os, newton, mujoco_warp as m; print(os.path.dirname(newton.__file__), os.path.dirname(m.__file__))")
read -r newton_dir mjw_dir <<<"$site"
timeout "${BENCH_TIMEOUT:-150}" "$PY" benchmarks/bench_warp_worlds.py --device cuda --worlds 4096 --no-host \
    "ant=$newton_dir/examples/assets/nv_ant.xml" "humanoid=$mjw_dir/test_data/humanoid/humanoid.xml" \
    >"$LOG/bench_warp_worlds.txt" 2>&1

for f in usdsim bench_newton_1 bench_newton_4096 bench_warp_worlds; do
    echo "==== $f"
    grep -v '^\s*$' "$LOG/$f.txt" | grep -E -v '^(Warp|Module|  )' | tail -n 40
done
echo "==== tests"
tail -n 45 "$LOG/tests.txt"
