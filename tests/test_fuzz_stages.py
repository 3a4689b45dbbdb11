"""Property-based fuzzing, a short deterministic run: mutated stages end in a simulation, a clean error or a
warning, never an unexpected exception (benchmarks/fuzz_stages.py runs many more)."""

from fuzz_stages import MUTATIONS, base_stage, mutate, outcome
from hypothesis import HealthCheck, given, settings


def test_the_base_stage_simulates():
    assert outcome(base_stage()) == "simulated"


@settings(max_examples=25, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(MUTATIONS)
def test_mutated_stages_simulate_or_fail_cleanly(mutations):
    stage = base_stage()
    mutate(stage, mutations)
    outcome(stage)
