"""The timing loop, driven by a fake clock and a fake eval (pure: no MLX)."""

from __future__ import annotations

from supernode_harness.timing import Budget, time_calls, time_fn


class FakeMachine:
    """A clock that advances `cost` seconds per evaluated call."""

    def __init__(self, cost: float):
        self.now = 0.0
        self.cost = cost
        self.calls = 0
        self.evals = 0

    def clock(self) -> float:
        return self.now

    def fn(self):
        self.calls += 1
        return "out"

    def evaluate(self, outs) -> None:
        self.evals += 1
        self.now += self.cost * (len(outs) if isinstance(outs, list) else 1)


def test_budget_defaults_of_quick_and_full_mode():
    q1 = Budget.for_run(quick=True, rounds=1)
    assert (q1.warmup, q1.min_reps, q1.max_reps, q1.case_budget_s, q1.inner_target_s) == (1, 3, 7, 0.25, 0.002)
    q3 = Budget.for_run(quick=True, rounds=3)
    assert (q3.min_reps, q3.max_reps) == (2, 7) and abs(q3.case_budget_s - 0.25 / 3) < 1e-12
    full = Budget.for_run(quick=False, rounds=3, warmup=5, repeats=60)
    assert (full.warmup, full.min_reps, full.max_reps, full.inner_target_s) == (5, 60, 60, 0.005)
    assert Budget.for_run(quick=True, rounds=0) == q1  # at least one round


def test_fast_call_is_batched_to_the_inner_target():
    # powers of two keep the fake clock exact
    m = FakeMachine(cost=2.0 ** -14)
    b = Budget(warmup=2, min_reps=2, max_reps=7, case_budget_s=2.0 ** -7, inner_target_s=2.0 ** -9)
    samples, inner = time_fn(m.fn, m.evaluate, b, clock=m.clock)
    assert inner == 32  # inner target / one call
    assert len(samples) == 4  # case budget / (32 calls)
    assert samples == [2.0 ** -14] * 4  # seconds per call
    assert m.calls == 2 + 1 + 4 * 32  # warm-up, sizing call, samples


def test_slow_call_needs_no_sizing_and_reps_stay_within_bounds():
    m = FakeMachine(cost=0.5)
    b = Budget(warmup=1, min_reps=3, max_reps=7, case_budget_s=0.25, inner_target_s=0.002)
    samples, inner = time_fn(m.fn, m.evaluate, b, clock=m.clock)
    assert (inner, len(samples)) == (1, 3) and m.calls == 1 + 3
    samples, _ = time_fn(m.fn, m.evaluate, b, inner=1, reps=4, warmup=3, clock=m.clock)
    assert len(samples) == 4


def test_agreed_counts_and_barrier():
    m = FakeMachine(cost=1.0)
    b = Budget(warmup=1, min_reps=1, max_reps=2, case_budget_s=1.0, inner_target_s=0.002)
    seen, barriers = [], []

    def agree(v):
        seen.append(v)
        return v + 1  # another rank wants one more

    samples, inner = time_fn(m.fn, m.evaluate, b, agree=agree, barrier=lambda: barriers.append(1), clock=m.clock)
    assert seen == [1, 1] and (inner, len(samples)) == (2, 2) and barriers == [1]


def test_time_calls_times_each_call_after_the_warm_up():
    m = FakeMachine(cost=0.25)
    assert time_calls(m.fn, m.evaluate, 3, warmup=10, clock=m.clock) == [0.25] * 3
    assert m.calls == 13 and m.evals == 13
