"""The timing loop and its budgets (pure: MLX's `mx.eval` is passed in as `evaluate`).

Clock: `time.perf_counter` around the evaluation; MLX is lazy, so a sample covers building
the graph and running it. A sample of `inner` back-to-back calls is divided by `inner`."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

Clock = Callable[[], float]


@dataclass(frozen=True)
class Budget:
    """How long a case is timed: warm-up calls, samples per case and round, seconds per sample."""

    warmup: int  # warm-up calls per case
    min_reps: int  # minimum samples per case and round
    max_reps: int
    case_budget_s: float  # measured time per case and round
    inner_target_s: float  # one sample lasts about this long (calls are batched to reach it)

    @classmethod
    def for_run(cls, quick: bool, rounds: int, warmup: int | None = None, repeats: int | None = None) -> "Budget":
        """The defaults of `--quick` and full mode, split over `rounds` (`--warmup` and
        `--repeats` override). Quick: 3 samples in one round, 2 per round with several."""
        rounds = max(1, rounds)
        min_reps = repeats if repeats is not None else ((3 if rounds == 1 else 2) if quick else 10)
        return cls(
            warmup=warmup if warmup is not None else (1 if quick else 3),
            min_reps=min_reps,
            max_reps=max(min_reps, 7 if quick else 50),
            case_budget_s=(0.25 if quick else 2.0) / rounds,
            inner_target_s=0.002 if quick else 0.005,
        )

    def reps_for(self, seconds_per_sample: float) -> int:
        """Samples that fill the case's budget, within [min_reps, max_reps]."""
        return int(min(self.max_reps, max(self.min_reps, self.case_budget_s / seconds_per_sample)))


def time_fn(fn: Callable[[], Any], evaluate: Callable[[Any], None], budget: Budget, inner: int | None = None,
            reps: int | None = None, warmup: int | None = None, agree: Callable[[int], int] | None = None,
            barrier: Callable[[], None] | None = None, clock: Clock = time.perf_counter) -> tuple[list[float], int]:
    """Time `fn` (returns an array or list of arrays); returns (seconds per call, inner).

    Each sample evaluates `inner` back-to-back calls and reports seconds per call. `inner` is
    chosen so one sample lasts ~inner_target_s; the number of repeats so the case takes
    ~case_budget_s (within [min_reps, max_reps]). With `agree` (the max over ranks) the counts
    are agreed across ranks, then `barrier` lines the ranks up (collectives)."""
    warmup = budget.warmup if warmup is None else warmup
    t0 = clock()
    evaluate(fn())
    first = clock() - t0
    for _ in range(max(0, warmup - 1)):
        evaluate(fn())
    if inner is None and first >= 4 * budget.inner_target_s:
        inner, one = 1, first  # slow case: no need for a sizing call
    elif inner is None:
        t0 = clock()
        evaluate(fn())
        one = clock() - t0
        inner = int(min(256, max(1, budget.inner_target_s / max(one, 1e-7))))
    else:
        one = first
    if reps is None:
        reps = budget.reps_for(max(one, 1e-7) * inner)
    if agree is not None:
        inner = agree(inner)
        reps = agree(reps)
        if barrier is not None:
            barrier()
    samples = []
    for _ in range(reps):
        t0 = clock()
        outs = [fn() for _ in range(inner)]
        evaluate(outs)
        samples.append((clock() - t0) / inner)
        del outs
    return samples, inner


def time_calls(fn: Callable[[], Any], evaluate: Callable[[Any], None], n: int, warmup: int = 0,
               clock: Clock = time.perf_counter) -> list[float]:
    """`warmup` untimed calls, then `n` calls timed one by one (one evaluation each)."""
    for _ in range(warmup):
        evaluate(fn())
    samples = []
    for _ in range(n):
        t0 = clock()
        evaluate(fn())
        samples.append(clock() - t0)
    return samples
