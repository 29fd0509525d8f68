"""`pace`: a fixed small kernel timed between the case groups and during the e2e run, so that
`supernode validate` can report how the machine's speed drifted."""

from __future__ import annotations

import mlx.core as mx

from ..config import DEFAULT_MODEL
from ..context import Context
from ..timing import time_calls

WARMUP_CALLS = 10  # right after another case the first calls run slow (measured 1.7 vs 1.1 ms)
TIMED_CALLS = 30


def pace(ctx: Context, at: str) -> None:
    """The e2e MLP's gate projection (M=1, the default model's per-rank shape), timed on every
    rank. A shared machine's speed drifts (measured here: the same 2-rank decode at 70
    ms/token in one minute and 105-140 in the next, while the kernels timed a minute earlier
    had not changed); `supernode validate` reports the ratio of the pace during the e2e decode
    (`at` = "e2e decode", "after e2e") to the pace around the microbenchmarks."""
    if "pace" not in ctx.only:
        return
    cfg = DEFAULT_MODEL
    if ctx.pace_state is None:
        h, f, n = cfg["hidden_size"], cfg["intermediate_size"], max(1, ctx.size)
        w = (mx.random.normal((f // n, h)) * 0.02).astype(ctx.dtype)
        wq = mx.quantize(w, group_size=cfg["group_size"], bits=cfg["bits"])
        x = mx.random.normal((1, h)).astype(ctx.dtype)
        mx.eval(wq, x)
        ctx.pace_state = (wq, x)
    wq, x = ctx.pace_state
    samples = time_calls(
        lambda: mx.quantized_matmul(x, *wq, transpose=True, group_size=cfg["group_size"], bits=cfg["bits"]),
        mx.eval, TIMED_CALLS, warmup=WARMUP_CALLS)
    N, K = wq[0].shape[0], x.shape[1]
    ctx.record("pace", {"at": at, "M": 1, "N": N, "K": K, "bits": cfg["bits"]}, 0, 2.0 * N * K, samples)
