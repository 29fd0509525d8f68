"""`sync`: the fixed cost of an evaluation, of a device -> CPU -> device crossing, and of a
1-element all_sum."""

from __future__ import annotations

import mlx.core as mx

from ..context import Context
from ..log import log


def bench_sync(ctx: Context) -> None:
    """mx.eval round trip of a 1-element array; default device -> CPU stream -> default device."""
    if not ctx.wants("sync"):
        return
    log("sync: eval round trips")
    x = mx.array([1.0], dtype=mx.float32)
    mx.eval(x)
    reps = 50 if ctx.quick else 500
    samples, _ = ctx.time_fn(lambda: x + 1, inner=1, reps=reps, warmup=5)
    e = ctx.record("sync", {"op": "eval_roundtrip", "elements": 1, "device": ctx.device}, 4, 0, samples)
    ctx.sync_overhead_s = e["median_s"]
    log(f"  eval round trip median {e['median_s'] * 1e6:.1f} us")

    # default device -> CPU stream -> default device: the crossing a
    # collective pays on Metal (collectives run on the CPU stream).
    def crossing():
        a = x + 1
        b = mx.add(a, 1, stream=mx.cpu)
        return mx.multiply(b, 2)

    samples, _ = ctx.time_fn(crossing, inner=1, reps=reps, warmup=5)
    e = ctx.record("sync", {"op": "device_cpu_device", "elements": 1, "device": ctx.device}, 4, 0, samples)
    log(f"  device->cpu->device median {e['median_s'] * 1e6:.1f} us")


def bench_sync_collective(ctx: Context) -> None:
    """Round trip of a 1-element all_sum: the fixed cost of one collective."""
    if not ctx.wants("sync") or ctx.group is None:
        return
    y = mx.array([1.0], dtype=mx.float32)
    reps = 50 if ctx.quick else 500
    samples, _ = ctx.time_fn(lambda: mx.distributed.all_sum(y, group=ctx.group), inner=1, reps=reps,
                             warmup=5, agree=True)
    e = ctx.record("sync", {"op": "all_sum_tiny", "elements": 1, "dtype": "float32", "world_size": ctx.size},
                   4, 0, samples)
    log(f"sync: all_sum(4 B) round trip median {e['median_s'] * 1e6:.1f} us")
