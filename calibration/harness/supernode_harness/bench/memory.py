"""`membw` (memory bandwidth of a reduction) and `matmul_peak` (dense matmul throughput)."""

from __future__ import annotations

import time

import mlx.core as mx

from ..context import Context
from ..log import log
from ..mlxutil import clear_cache, dtype_name


def bench_membw(ctx: Context) -> None:
    """mx.sum over a 256 MiB (quick) / 1 GiB fp32 array (--membw-bytes)."""
    if not ctx.wants("membw"):
        return
    nbytes = ctx.args.membw_bytes or ((256 if ctx.quick else 1024) << 20)
    n = nbytes // 4
    log(f"membw: mx.sum over {nbytes >> 20} MiB fp32")
    a = mx.full((n,), 1.0, dtype=mx.float32)
    mx.eval(a)
    samples, inner = ctx.time_fn(lambda: mx.sum(a), inner=1, reps=5 if ctx.quick else 20)
    e = ctx.record("membw", {"op": "sum", "dtype": "float32", "elements": n, "inner": inner}, a.nbytes, float(n), samples)
    log(f"  {e['bytes_per_s'] / 1e9:.2f} GB/s")
    a = None  # freed before the cache is cleared
    clear_cache()


def _matmul_size(dt, target: float, max_n: int) -> int:
    """Square size, doubled from 256, until one call takes `target` seconds (or max_n)."""
    n = 256
    while True:
        a = mx.random.normal((n, n)).astype(dt)
        b = mx.random.normal((n, n)).astype(dt)
        mx.eval(a, b)
        mx.eval(a @ b)
        t0 = time.perf_counter()
        mx.eval(a @ b)
        one = time.perf_counter() - t0
        if one >= target or n >= max_n:
            return n
        n *= 2


def bench_matmul_peak(ctx: Context) -> None:
    """Square matmul per dtype at a size long enough to reach the peak (agreed across ranks)."""
    if not ctx.wants("matmul_peak"):
        return
    target = 0.05 if ctx.quick else 0.5  # seconds for one call at the chosen size
    max_n = 4096 if ctx.quick else 8192
    # --quick: the activation dtype only (the twin uses the fastest rate measured)
    dtypes = [ctx.dtype] if ctx.quick else [mx.float32, mx.float16, mx.bfloat16]
    for dt in dtypes:
        n = ctx.agree_int(_matmul_size(dt, target, max_n))
        a = mx.random.normal((n, n)).astype(dt)
        b = mx.random.normal((n, n)).astype(dt)
        mx.eval(a, b)
        samples, inner = ctx.time_fn(lambda: a @ b)
        flops = 2.0 * n ** 3
        e = ctx.record(
            "matmul_peak",
            {"dtype": dtype_name(dt), "M": n, "N": n, "K": n, "inner": inner},
            3 * n * n * a.itemsize,
            flops,
            samples,
        )
        log(f"matmul_peak {dtype_name(dt)} n={n}: {e['flops_per_s'] / 1e9:.2f} GFLOP/s")
        a = b = None  # freed before the next dtype's arrays
    clear_cache()
