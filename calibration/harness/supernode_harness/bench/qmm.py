"""`qmm` (mx.quantized_matmul at model shapes and at the e2e model's per-rank shapes) and
`gather_qmm` (the MoE expert kernel)."""

from __future__ import annotations

import mlx.core as mx

from ..config import DEFAULT_MODEL, e2e_qmm_shapes
from ..context import Context
from ..log import log
from ..mlxutil import clear_cache, dtype_name
from ..routing import distinct, expected_distinct, route, sorted_gather

# (N_out, K_in, label)
QMM_SHAPES = [
    (4096, 4096, "4096x4096 (e.g. Qwen3-235B q_proj/o_proj)"),
    (1536, 4096, "4096->1536 (Qwen3-235B expert gate/up)"),
    (2048, 7168, "7168->2048 (DeepSeek/Kimi expert gate/up)"),
]


def time_qmm(ctx: Context, w, N: int, K: int, bits: int, Ms, label: str) -> None:
    """Quantize `w` (N x K) to `bits` and time quantized_matmul at each M in `Ms`.

    Successive calls cycle through copies of the weights whose total is at least
    --qmm-working-set bytes, so that, as in a forward pass over a model, the weights come
    from the shared cache or DRAM and not from a private cache (a GPU's or a core's). On
    this CPU-only VM it made no measurable difference (MLX's CPU qmm is compute-bound at
    ~2.6 GFLOP/s either way).

    `bits` = 16 times the unquantized matmul `x @ w.T` in the weights' dtype (bf16/f16 GEMV,
    its own kernel family in the twin), recorded as a `qmm` with bits 16."""
    gs = 64
    if bits == 16:
        # 16-bit weights even when the run's dtype is float32 (a CPU host).
        wq, sc, bi = (w.astype(mx.bfloat16) if w.dtype == mx.float32 else w), None, None
        mx.eval(wq)
        wbytes = wq.nbytes
    else:
        wq, sc, bi = mx.quantize(w, group_size=gs, bits=bits)
        mx.eval(wq, sc, bi)
        wbytes = wq.nbytes + sc.nbytes + bi.nbytes
    copies = max(1, min(64, -(-ctx.qmm_working_set // wbytes)))
    if bits == 16:
        ws = [(wq, None, None)] + [(wq + 0, None, None) for _ in range(copies - 1)]
        mx.eval([c[0] for c in ws])
    else:
        ws = [(wq, sc, bi)] + [(wq + 0, sc + 0, bi + 0) for _ in range(copies - 1)]
        mx.eval(ws)
    for M in Ms:
        x = mx.random.normal((M, K)).astype(wq.dtype if bits == 16 else ctx.dtype)
        mx.eval(x)
        turn = [0]

        def fn():
            turn[0] = (turn[0] + 1) % copies
            q, s_, b_ = ws[turn[0]]
            if bits == 16:
                return x @ q.T
            return mx.quantized_matmul(x, q, s_, b_, transpose=True, group_size=gs, bits=bits)
        samples, inner = ctx.time_fn(fn)
        params = {
            "M": M, "N": N, "K": K, "bits": bits, "group_size": gs,
            "dtype": dtype_name(ctx.dtype), "weight_bytes": wbytes, "weight_copies": copies,
            "act_bytes": x.nbytes + M * N * x.itemsize, "inner": inner, "label": label,
        }
        e = ctx.record("qmm", params, wbytes, 2.0 * M * N * K, samples)
        log(f"qmm {K}->{N} b{bits} M={M} ({label}): {e['median_s'] * 1e3:.3f} ms  "
            f"({e['bytes_per_s'] / 1e9:.2f} GB/s, {e['flops_per_s'] / 1e9:.2f} GFLOP/s)")


def bench_qmm(ctx: Context) -> None:
    """The large model shapes, 4- and 8-bit (group 64) and unquantized (bits 16), so that a run
    pins the affine 4-bit, affine 8-bit and bf16 GEMV kernel families independently."""
    if not ctx.wants("qmm"):
        return
    # the large model shapes at M = 32 take ~0.4 s a call on a CPU; --quick times them at
    # M = 1 and 8 only (the e2e shapes cover M = 32 and the prompt length)
    Ms = ctx.args.qmm_m or ([1, 8] if ctx.quick else [1, 4, 8, 32])
    for N, K, label in QMM_SHAPES:
        w = (mx.random.normal((N, K)) * 0.02).astype(ctx.dtype)
        for bits in (4, 8, 16):
            time_qmm(ctx, w, N, K, bits, Ms, label)
        del w
    clear_cache()


def bench_qmm_e2e_shapes(ctx: Context) -> None:
    """The end-to-end model's own per-rank shapes (tensor parallel over the ranks), so that
    the fit sees the matrices a small model's decode and prefill run. Timed right before the
    e2e run: a shared machine's per-core speed drifts by tens of percent over a minute
    (measured here), and kernels timed next to the e2e run see the same machine."""
    if not ctx.wants("qmm"):
        return
    Ms = ctx.args.qmm_m or [1, 32]
    cfg = DEFAULT_MODEL
    # M = 1 (decode), 32 and the e2e prompt length (its prefill is one chunk of that many rows).
    prompt = ctx.e2e_prompt_tokens()
    e2e_ms = sorted({1, prompt} | ({32} if 32 in Ms else set()))
    for N, K, label in e2e_qmm_shapes(cfg, ctx.size):
        w = (mx.random.normal((N, K)) * 0.02).astype(ctx.dtype)
        time_qmm(ctx, w, N, K, cfg.get("bits", 4), [1] if N == cfg["vocab_size"] else e2e_ms, label)
        del w
    clear_cache()


GATHER_MS = [1, 2, 4, 8, 16, 32]
# Quick mode (the closed loop's) keeps the batch sizes it fitted before the batch cases: with
# M = 1..32 in its fit, the closed loop's gated e2e rows read +16..+27% (2026-12-03, six runs;
# +-6% before), as the twin has one expert compute efficiency for the memory-bound M = 1 gathers
# and the expert-sorted GEMM path of M >= 8. Full mode (a real calibration run) times all of them.
GATHER_MS_QUICK = [1, 4]


def gather_inputs(sel: list[list[int]], K: int, dtype):
    """The activations and expert indices of one gather_qmm call, as mlx-lm's SwitchGLU passes
    them: (M, 1, 1, K) against (M, top_k) indices, or, for a batch of 64 (token, expert) pairs
    or more, the rows sorted by expert ((M*top_k, 1, K) against sorted indices)."""
    M, topk = len(sel), len(sel[0])
    x = mx.random.normal((M, 1, 1, K)).astype(dtype)
    idx = mx.array(sel, dtype=mx.uint32)
    if not sorted_gather(sel):
        return x, idx, False
    flat = idx.flatten()
    order = mx.argsort(flat)
    return x.flatten(0, -3)[order // topk], flat[order], True


def bench_gather_qmm(ctx: Context) -> None:
    """mx.gather_qmm, 8 of 64 experts, 2048->768 (a Qwen3-30B-A3B-like expert), over a batch of
    M = 1..32 tokens each routed to its top-8 (seeded, uniform: `routing.route`). Records the
    experts the batch actually touched (`distinct_experts`, bytes = those experts' weights) next
    to the coverage law E(1-(1-k/E)^M) (`expected_distinct_experts`)."""
    if not ctx.wants("gather_qmm"):
        return
    E, topk, K, N, gs = 64, 8, 2048, 768, 64
    bits_list = [4] if ctx.quick else [4, 8]
    Ms = ctx.args.gather_m or (GATHER_MS_QUICK if ctx.quick else GATHER_MS)
    # One random expert tiled E times: values do not matter to the kernel and
    # generating E*N*K normals is slow on a small CPU. Every expert still has
    # its own memory.
    w = (mx.random.normal((N, K)) * 0.02).astype(ctx.dtype)
    mx.eval(w)
    for bits in bits_list:
        q1 = mx.quantize(w, group_size=gs, bits=bits)
        wq, sc, bi = (mx.tile(a[None], (E, 1, 1)) for a in q1)
        mx.eval(wq, sc, bi)
        del q1
        per_expert = (wq.nbytes + sc.nbytes + bi.nbytes) // E
        for M in Ms:
            sel = route(ctx.args.seed, M, E, topk)
            touched = distinct(sel)
            x, idx, srt = gather_inputs(sel, K, ctx.dtype)
            mx.eval(idx, x)
            samples, inner = ctx.time_fn(
                lambda: mx.gather_qmm(x, wq, sc, bi, rhs_indices=idx, transpose=True, group_size=gs, bits=bits,
                                      sorted_indices=srt))
            params = {
                "M": M, "N": N, "K": K, "experts": E, "top_k": topk, "distinct_experts": touched,
                "expected_distinct_experts": round(expected_distinct(E, topk, M), 4), "sorted_indices": srt,
                "bits": bits, "group_size": gs, "dtype": dtype_name(ctx.dtype),
                "bytes_per_expert": per_expert, "inner": inner,
                "label": "expert gate/up proj 2048->768, 8 of 64 experts (Qwen3-30B-A3B-like)",
            }
            e = ctx.record("gather_qmm", params, per_expert * touched, 2.0 * M * topk * N * K, samples)
            log(f"gather_qmm E={E} k={topk} b{bits} M={M} ({touched} experts): {e['median_s'] * 1e3:.3f} ms "
                f"({e['bytes_per_s'] / 1e9:.2f} GB/s, {e['flops_per_s'] / 1e9:.2f} GFLOP/s)")
        wq = sc = bi = None  # freed before the next bits' experts
    del w
    clear_cache()
