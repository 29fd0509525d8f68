"""MoE routing of a batch for the `gather_qmm` cases (pure: no MLX).

Each token picks `top_k` distinct experts of `experts`, uniformly (the twin's coverage law
assumes it): a batch of B tokens then touches E(1-(1-k/E)^B) distinct experts on average,
which is what the twin charges weight traffic for. The routing of a case is a function of the
seed and the batch size alone, so every round (and both bit widths) times the same selection."""

from __future__ import annotations

import random


def route(seed: int, tokens: int, experts: int, top_k: int) -> list[list[int]]:
    """`tokens` rows of `top_k` distinct expert indices, seeded by (seed, tokens)."""
    if not 0 < top_k <= experts:
        raise ValueError(f"top_k {top_k} must be in 1..{experts}")
    rng = random.Random(seed * 1_000_003 + tokens)
    return [rng.sample(range(experts), top_k) for _ in range(tokens)]


def distinct(selection: list[list[int]]) -> int:
    """Experts a routed batch touches (each read once by a sorted gather)."""
    return len({e for row in selection for e in row})


def expected_distinct(experts: int, top_k: int, tokens: int) -> float:
    """E(1-(1-k/E)^B): the mean number of distinct experts B tokens touch."""
    return experts * (1.0 - (1.0 - top_k / experts) ** tokens)


def sorted_gather(selection: list[list[int]]) -> bool:
    """Whether mlx-lm's SwitchGLU sorts the rows by expert before gather_qmm (it does when the
    batch selects at least 64 (token, expert) pairs: `indices.size >= 64`, mlx-lm 0.32)."""
    return sum(len(r) for r in selection) >= 64
