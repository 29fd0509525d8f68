"""`sdpa`: mx.fast.scaled_dot_product_attention, decode (one query) and causal prefill chunks."""

from __future__ import annotations

import mlx.core as mx

from ..context import Context
from ..log import log
from ..mlxutil import clear_cache, dtype_name

HEADS, KV_HEADS, HEAD_DIM = 32, 8, 128
QUICK_CASES = [(1, 256), (1, 1024), (1, 4096), (128, 256), (128, 1024)]  # (q_len, kv_len)
FULL_CASES = [(1, 256), (1, 1024), (1, 4096), (1, 16384), (1, 32768), (512, 512), (2048, 2048), (2048, 8192)]


def causal_keys_seen(q_len: int, kv_len: int) -> int:
    """Keys the queries attend to in total: causal, bottom-right aligned (query i sees
    kv_len - q_len + i + 1 keys); a single query sees them all."""
    return q_len * (kv_len - q_len) + q_len * (q_len + 1) // 2 if q_len > 1 else kv_len


def bench_sdpa(ctx: Context) -> None:
    if not ctx.wants("sdpa"):
        return
    H, Hkv, D = HEADS, KV_HEADS, HEAD_DIM
    cases = QUICK_CASES if ctx.quick else FULL_CASES
    isz = mx.zeros((1,), dtype=ctx.dtype).itemsize
    for Lq, Lkv in cases:
        q = mx.random.normal((1, H, Lq, D)).astype(ctx.dtype)
        k = mx.random.normal((1, Hkv, Lkv, D)).astype(ctx.dtype)
        v = mx.random.normal((1, Hkv, Lkv, D)).astype(ctx.dtype)
        mx.eval(q, k, v)
        mask = "causal" if Lq > 1 else None
        samples, inner = ctx.time_fn(lambda: mx.fast.scaled_dot_product_attention(q, k, v, scale=D ** -0.5, mask=mask))
        flops = 4.0 * H * D * causal_keys_seen(Lq, Lkv)
        kv_bytes = 2 * Hkv * Lkv * D * isz
        params = {
            "phase": "decode" if Lq == 1 else "prefill", "batch": 1, "q_len": Lq, "kv_len": Lkv,
            "heads": H, "kv_heads": Hkv, "head_dim": D, "dtype": dtype_name(ctx.dtype),
            "mask": mask or "none", "kv_bytes": kv_bytes, "flops_dense": 4.0 * H * D * Lq * Lkv,
            "inner": inner,
        }
        e = ctx.record("sdpa", params, kv_bytes, flops, samples)
        log(f"sdpa q={Lq} kv={Lkv}: {e['median_s'] * 1e3:.3f} ms")
        q = k = v = None  # freed before the next case's arrays
    clear_cache()
