"""`all_sum`, `all_gather` and `send_recv` (rank 0 <-> 1 ping-pong) from 1 KiB up, plus the
1-element all_sum of `sync`. Run after the links are warmed up; counts are agreed across ranks."""

from __future__ import annotations

import time

import mlx.core as mx

from ..context import Context
from ..log import human_bytes, log
from ..mlxutil import clear_cache, dtype_from_name, dtype_name
from .sync import bench_sync_collective


def coll_sizes(max_bytes: int | None, quick: bool) -> list[int]:
    """Message sizes: 1 KiB up in powers of 4, to 256 MiB (4 MiB quick) or `max_bytes`."""
    cap = max_bytes or ((4 << 20) if quick else (256 << 20))
    sizes, s = [], 1024
    while s <= cap:
        sizes.append(s)
        s *= 4
    return sizes


def coll_reps(size: int, quick: bool) -> int:
    """Timed repeats of a collective of `size` bytes."""
    if quick:
        return 20 if size <= (64 << 10) else (10 if size <= (1 << 20) else 5)
    return 100 if size <= (64 << 10) else (30 if size <= (4 << 20) else 8)


def warm_up_links(ctx: Context) -> None:
    """The first collectives after init are slow and noisy (connection set-up)."""
    if ctx.group is None:
        return
    x = mx.ones((256,), dtype=mx.float32)
    for _ in range(30):
        mx.eval(mx.distributed.all_sum(x, group=ctx.group))
    for _ in range(5):
        mx.eval(mx.distributed.all_sum(mx.ones((1 << 18,), dtype=mx.float32), group=ctx.group))


def bench_collectives(ctx: Context) -> None:
    if ctx.group is None:
        if ctx.wants("all_sum", "all_gather", "send_recv"):
            log("collectives: skipped (single rank)")
        return
    warm_up_links(ctx)
    bench_sync_collective(ctx)
    if not ctx.wants("all_sum", "all_gather", "send_recv"):
        return
    dt = dtype_from_name(ctx.args.coll_dtype)
    for kind in ("all_sum", "all_gather"):
        if ctx.wants(kind):
            _bench_reduce_or_gather(ctx, kind, dt)
    if ctx.wants("send_recv"):
        _bench_send_recv(ctx, dt)
    clear_cache()


def _bench_reduce_or_gather(ctx: Context, kind: str, dt) -> None:
    isz = mx.zeros((1,), dtype=dt).itemsize
    g = ctx.group
    extra = {"sync_overhead_s": ctx.sync_overhead_s}
    op = mx.distributed.all_sum if kind == "all_sum" else mx.distributed.all_gather
    for size in coll_sizes(ctx.args.max_coll_bytes, ctx.quick):
        n = size // isz
        x = mx.ones((n,), dtype=dt)
        mx.eval(x)
        samples, _ = ctx.time_fn(lambda: op(x, group=g), inner=1, reps=coll_reps(size, ctx.quick),
                                 warmup=2, agree=True)
        params = {"message_bytes": size, "elements": n, "dtype": dtype_name(dt), "world_size": ctx.size,
                  "output_bytes": size * (ctx.size if kind == "all_gather" else 1)}
        e = ctx.record(kind, params, size, float(n * (ctx.size - 1)) if kind == "all_sum" else 0.0,
                       samples, extra=extra)
        log(f"{kind} {human_bytes(size)}: median {e['median_s'] * 1e6:.1f} us "
            f"({size / e['median_s'] / 1e9:.3f} GB/s algbw)")
        x = None  # freed before the next size's message


def _ping_pong(ctx: Context, x, reps: int) -> list[float]:
    """One-way times (round trip / 2) on rank 0, after 2 untimed round trips; NaN on ranks > 1."""
    g = ctx.group
    samples = []
    for i in range(2 + reps):
        t0 = time.perf_counter()
        if ctx.rank == 0:
            mx.eval(mx.distributed.send(x, 1, group=g))
            mx.eval(mx.distributed.recv_like(x, 1, group=g))
        elif ctx.rank == 1:
            r = mx.distributed.recv_like(x, 0, group=g)
            mx.eval(mx.distributed.send(r, 0, group=g))
        if i >= 2:
            samples.append((time.perf_counter() - t0) / 2.0)
    if ctx.rank > 1:
        samples = [float("nan")]
    return samples


def _bench_send_recv(ctx: Context, dt) -> None:
    isz = mx.zeros((1,), dtype=dt).itemsize
    extra = {"sync_overhead_s": ctx.sync_overhead_s}
    for size in coll_sizes(ctx.args.max_coll_bytes, ctx.quick):
        n = size // isz
        x = mx.ones((n,), dtype=dt)
        mx.eval(x)
        reps = coll_reps(size, ctx.quick)
        ctx.barrier()
        samples = _ping_pong(ctx, x, reps)
        params = {"message_bytes": size, "elements": n, "dtype": dtype_name(dt), "world_size": ctx.size,
                  "src": 0, "dst": 1, "timing": "one-way = ping-pong round trip / 2, timed on rank 0"}
        e = ctx.record("send_recv", params, size, 0.0, samples, extra=extra, gather=False)
        log(f"send_recv {human_bytes(size)}: one-way median {e['median_s'] * 1e6:.1f} us")
        x = None  # freed before the next size's message
