"""Long property-based fuzzing run: COUNT mutated stages (tests/fuzz_stages.py) through usdsim's code path;
prints how many simulated, how many ended in a clean error (NewtonUsdError) by kind, and every other
exception (a bug: a traceback a user would see) with the mutations that caused it.

    python benchmarks/fuzz_stages.py [COUNT] [--seed S] [--frames F]
"""

from __future__ import annotations

import argparse
import collections
import logging
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from fuzz_stages import MUTATIONS, base_stage, mutate, outcome  # noqa: E402
from hypothesis import HealthCheck, given, seed, settings  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("count", type=int, nargs="?", default=10_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--frames", type=int, default=3)
    args = p.parse_args()
    logging.disable(logging.WARNING)  # warnings are an allowed outcome; counted, not printed
    outcomes, bugs = collections.Counter(), []
    t0 = time.perf_counter()

    @seed(args.seed)
    @settings(max_examples=args.count, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(MUTATIONS)
    def run(mutations):
        stage = base_stage()
        mutate(stage, mutations)
        try:
            outcomes[outcome(stage, args.frames)] += 1
        except Exception as e:  # noqa: BLE001  (a find: recorded, the run goes on)
            outcomes["BUG"] += 1
            bugs.append((f"{type(e).__name__}: {e}", mutations, traceback.format_exc(limit=-4)))
        done = sum(outcomes.values())
        if done % 100 == 0:
            print(f"{done} stages, {time.perf_counter() - t0:.0f} s: {dict(outcomes)}", flush=True)

    run()
    total = sum(outcomes.values())
    print(f"\n{total} stages in {time.perf_counter() - t0:.0f} s (seed {args.seed}): {dict(outcomes)}")
    kinds = collections.Counter(b[0].split("\n")[0][:160] for b in bugs)
    for kind, n in kinds.most_common():
        example = next(b for b in bugs if b[0].split("\n")[0][:160] == kind)
        print(f"\n{n} x {kind}\n  e.g. mutations {example[1]}\n{example[2]}")
    return 1 if bugs else 0


if __name__ == "__main__":
    sys.exit(main())
