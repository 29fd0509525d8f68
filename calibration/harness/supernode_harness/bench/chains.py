"""`op_chain` (the fixed cost of one op in a graph) and `segment_chain` (the e2e model's layer
skeleton without and with its all_sums: the collective in context)."""

from __future__ import annotations

import time

import mlx.core as mx
import mlx.nn as nn

from ..config import DEFAULT_MODEL, layer_shapes
from ..context import Context
from ..log import log
from ..mlxutil import dtype_name


def bench_op_chain(ctx: Context) -> None:
    """A chain of tiny element-wise ops evaluated at once: the fixed cost of one op in a
    graph (dispatch, allocation), which a small model's decode pays a few hundred times."""
    if not ctx.wants("op_chain"):
        return
    h = DEFAULT_MODEL["hidden_size"]
    x = mx.random.normal((1, h)).astype(ctx.dtype)
    mx.eval(x)
    for ops in (64, 256):
        def chain(ops=ops):
            y = x
            for _ in range(ops):
                y = y + 1.0
            return y
        samples, _ = ctx.time_fn(chain, inner=1)
        e = ctx.record("op_chain", {"ops": ops, "elements": h, "dtype": dtype_name(ctx.dtype)},
                       ops * 2 * x.nbytes, float(ops * h), samples)
        log(f"op_chain {ops} x add({h}): {e['median_s'] * 1e6 / ops:.1f} us per op")


def _segment_chain_fn(ctx: Context, weights, x, bits: int, gs: int):
    """chain(sync): every layer's attention projections and MLP, with an all_sum of the
    hidden state after each block when sync."""
    def qmm(y, w):
        return mx.quantized_matmul(y, *w, transpose=True, group_size=gs, bits=bits)

    def chain(sync):
        y = x
        for (wq, wk, wv, wo), (wg, wu, wd) in weights:
            a = qmm(qmm(y, wq), wo) + qmm(y, wk).sum() + qmm(y, wv).sum()
            if sync:
                a = mx.distributed.all_sum(a, group=ctx.group)
            y = mx.tanh(y + a)
            m = qmm(nn.silu(qmm(y, wg)) * qmm(y, wu), wd)
            if sync:
                m = mx.distributed.all_sum(m, group=ctx.group)
            y = mx.tanh(y + m)
        return y
    return chain


def _paired_samples(ctx: Context, chain) -> dict[bool, list[float]]:
    """The two chains timed in pairs, alternating sample by sample, so that both see the same
    machine (their difference, the collectives' cost in context, is a few ms of a ~40 ms chain)."""
    for sync in (False, True):
        for _ in range(max(1, ctx.warmup)):
            mx.eval(chain(sync))
    t0 = time.perf_counter()
    mx.eval(chain(True))
    one = time.perf_counter() - t0
    if ctx.quick:
        reps = max(5, 21 // ctx.rounds)
    else:
        reps = min(ctx.max_reps, max(ctx.min_reps, int(ctx.case_budget_s / (2 * one))))
    reps = ctx.agree_int(reps)
    ctx.barrier()
    samples: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(reps):
        for sync in (False, True):
            t0 = time.perf_counter()
            mx.eval(chain(sync))
            samples[sync].append(time.perf_counter() - t0)
    return samples


def bench_segment_chain(ctx: Context) -> None:
    """The collective in context: the skeleton of the e2e model's layers at its per-rank
    shapes (M=1, distinct weights per layer) -- an attention block (q, k, v, o projections)
    and an MLP block (gate, up, down) -- run for every layer, without and with an all_sum
    of the hidden state after each block, evaluated at once on every rank. Timed alone an
    all_sum costs tens of microseconds; between kernels it costs more, and the difference
    between the two chains is what the twin charges per collective in a forward pass. The
    two chains are timed in pairs, alternating sample by sample. Measured here (best of 3
    rounds) the difference came to 2-17 ms for the 16 all_sums; replacing the e2e model's
    own all_sums by the identity saved 0-16 ms per token in quiet minutes."""
    if not ctx.wants("segment_chain") or ctx.group is None:
        return
    cfg = DEFAULT_MODEL
    n, h, bits, gs = ctx.size, cfg["hidden_size"], cfg["bits"], cfg["group_size"]
    layers = cfg["num_hidden_layers"]
    attn_shapes, mlp_shapes = layer_shapes(cfg, n)

    def qw(N, K):
        w = (mx.random.normal((N, K)) * 0.02).astype(ctx.dtype)
        return mx.quantize(w, group_size=gs, bits=bits)
    weights = [([qw(*s_) for s_ in attn_shapes], [qw(*s_) for s_ in mlp_shapes]) for _ in range(layers)]
    mx.eval(weights)
    x = mx.random.normal((1, h)).astype(ctx.dtype)
    mx.eval(x)
    samples = _paired_samples(ctx, _segment_chain_fn(ctx, weights, x, bits, gs))
    for sync in (False, True):
        params = {"repeats": layers, "sync": sync, "M": 1, "bits": bits, "group_size": gs,
                  "blocks": [{"name": "attention projections", "shapes": attn_shapes, "elementwise": 6},
                             {"name": "mlp", "shapes": mlp_shapes, "elementwise": 5}],
                  "all_sum_bytes": h * x.itemsize if sync else 0, "world_size": n, "paired": True}
        flops = 2.0 * layers * sum(a * b for a, b in attn_shapes + mlp_shapes)
        e = ctx.record("segment_chain", params, 0, flops, samples[sync])
        log(f"segment_chain {layers} layers {'with' if sync else 'without'} all_sums: {e['median_s'] * 1e3:.2f} ms")
    del weights
