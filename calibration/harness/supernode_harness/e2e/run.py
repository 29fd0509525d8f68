"""The e2e runs: the prefill of a prompt and greedy decode windows from it, timed as a user's
synchronous generation loop would run them (one evaluation per token)."""

from __future__ import annotations

import random
import time

import mlx.core as mx
import mlx.nn as nn

from ..bench.pace import pace
from ..config import load_model_config, tensor_parallel_problems
from ..context import Context
from ..log import log
from ..mlxutil import clear_cache, dtype_name
from ..power import PowerSampler
from ..stats import percentile, rnd
from .describe import forward_flops, model_record
from .model import KVCache, Model, shard_model, tree_nbytes

BATCH_SIZES = [1, 2, 4, 8]


def build_model(ctx: Context, cfg: dict) -> tuple[Model, int, int, int]:
    """The model with seeded random weights (identical on every rank, like a checkpoint),
    quantized and sharded: (model, total weight bytes, bytes per rank, bytes read per forward)."""
    mx.random.seed(ctx.args.seed)
    model = Model(cfg)
    model.set_dtype(ctx.dtype)
    nn.quantize(model, group_size=cfg["group_size"], bits=cfg["bits"])
    mx.eval(model.parameters())
    total_bytes = tree_nbytes(model)
    if ctx.group is not None:
        shard_model(model, ctx.group)
    mx.eval(model.parameters())
    clear_cache()
    rank_bytes = tree_nbytes(model)
    emb_bytes = tree_nbytes(model.embed_tokens)
    # per forward: all weights but the embedding table (one row read)
    model.eval()
    return model, total_bytes, rank_bytes, rank_bytes - emb_bytes


class E2E:
    """The end-to-end validation target: a llama-like model with random weights, tensor parallel
    across the ranks, built and warmed up once. `prefill()` times the prompt's prefill and
    `decode_window()` a greedy decode from it; each call is one record, and `merge_rounds`
    keeps every one and reports the best."""

    def __init__(self, ctx: Context, cfg: dict, prompt: int, gen: int, prefill_reps: int):
        N = ctx.size
        problems = tensor_parallel_problems(cfg, N)
        if problems:
            raise SystemExit("e2e model config cannot be tensor-parallel split: " + "; ".join(problems))
        self.h, self.cfg, self.prompt, self.gen, self.prefill_reps = ctx, cfg, prompt, gen, prefill_reps
        self.caches = None
        self.first_tok = None

        log(f"e2e: building llama-like model L={cfg['num_hidden_layers']} h={cfg['hidden_size']} "
            f"heads={cfg['num_attention_heads']}/{cfg['num_key_value_heads']} ffn={cfg['intermediate_size']} "
            f"vocab={cfg['vocab_size']} q{cfg['bits']}g{cfg['group_size']}, TP over {N} rank(s)")
        self.model, total_bytes, rank_bytes, self.read_bytes = build_model(ctx, cfg)
        rng = random.Random(ctx.args.seed)
        self.prompt_toks = mx.array([[rng.randrange(cfg["vocab_size"]) for _ in range(prompt)]], dtype=mx.int32)
        self.warm_up()
        ctx.barrier()

        self.act_isz = mx.zeros((1,), dtype=ctx.dtype).itemsize
        self.model_cfg = model_record(cfg, N, dtype_name(ctx.dtype), self.act_isz, total_bytes, rank_bytes,
                                      self.read_bytes)
        self.flops_prefill, self.flops_decode = forward_flops(cfg, N, prompt, gen)

    def new_caches(self):
        return [KVCache() for _ in range(self.cfg["num_hidden_layers"])]

    def warm_up(self) -> None:
        """A short prefill and a few decode steps (kernel compile, allocator)."""
        model, caches = self.model, self.new_caches()
        logits = model(self.prompt_toks[:, :min(16, self.prompt)], caches)
        tok = mx.argmax(logits[:, -1, :], axis=-1)
        mx.eval(tok)
        for _ in range(3):
            tok = mx.argmax(model(tok[:, None], caches)[:, -1, :], axis=-1)
            mx.eval(tok)

    def prefill(self) -> None:
        """Time the prefill (one chunk: exo prefills in 2048-token chunks) and keep the filled
        KV cache and the first generated token for the decode windows."""
        h, model, prompt, N = self.h, self.model, self.prompt, self.h.size
        hid = self.cfg["hidden_size"]
        pre_samples = []
        for _ in range(self.prefill_reps):
            caches = self.new_caches()
            h.barrier()
            t0 = time.perf_counter()
            logits = model(self.prompt_toks, caches)
            tok = mx.argmax(logits[:, -1, :], axis=-1)
            mx.eval(tok)
            pre_samples.append(time.perf_counter() - t0)
        self.caches, self.first_tok = caches, tok
        e = h.record(
            "e2e_prefill",
            {"prompt_tokens": prompt, "chunk": prompt, "ranks": N,
             "all_sum_bytes": prompt * hid * self.act_isz if N > 1 else 0},
            self.read_bytes, self.flops_prefill, pre_samples,
            extra={"tokens_per_s": rnd(prompt / percentile(sorted(pre_samples), 50)), "model": self.model_cfg},
        )
        log(f"  e2e prefill {prompt} tokens: {e['tokens_per_s']:.1f} tok/s (median {e['median_s']:.3f} s)")

    def rewind(self) -> None:
        """Every decode window starts from the same context: the prefilled cache (filled now if no
        prefill ran) rewound to the prompt."""
        if self.caches is None:
            caches = self.new_caches()
            self.first_tok = mx.argmax(self.model(self.prompt_toks, caches)[:, -1, :], axis=-1)
            mx.eval(self.first_tok)
            self.caches = caches
        for c in self.caches:
            c.offset = self.prompt

    def decode_steps(self) -> tuple[list[float], list[float]]:
        """`gen` greedy steps, one synchronous eval per token: (seconds per step, seconds of each
        step spent building its graph in Python before the eval). Pace probes every 4 tokens
        run between the steps, outside the timed ones."""
        model, caches, tok = self.model, self.caches, self.first_tok
        dec_samples, build_samples = [], []
        for i in range(self.gen):
            if i and i % 4 == 0:
                pace(self.h, "e2e decode")  # between tokens, outside the timed steps
            t0 = time.perf_counter()
            logits = model(tok[:, None], caches)
            tok = mx.argmax(logits[:, -1, :], axis=-1)
            # MLX is lazy: up to here Python only built the step's graph; nothing ran yet.
            t_built = time.perf_counter()
            mx.eval(tok)
            dec_samples.append(time.perf_counter() - t0)
            build_samples.append(t_built - t0)
        return dec_samples, build_samples

    def decode_window(self) -> None:
        """Decode `gen` tokens greedily from the prefilled context, one eval per token. Every
        window starts from the same context (the cache is rewound to the prompt), so the
        windows are repeats of one case, spread over the run."""
        h, prompt, gen, N = self.h, self.prompt, self.gen, self.h.size
        self.rewind()
        power = PowerSampler() if h.rank == 0 and h.power_info.get("available") else None
        h.barrier()
        if power is not None:
            power.start()
        dec_samples, build_samples = self.decode_steps()
        if power is not None:
            h.power_info["during_e2e_decode"] = power.stop()
        # tokens/s from the median step: the typical step of the slowest rank (every step ends
        # in all_sums), robust to a lone stall; the mean rate is kept beside it.
        e = h.record(
            "e2e_decode",
            {"prompt_tokens": prompt, "gen_tokens": gen, "context_start": prompt, "context_end": prompt + gen,
             "ranks": N, "all_sum_bytes": self.cfg["hidden_size"] * self.act_isz if N > 1 else 0},
            self.read_bytes, self.flops_decode, dec_samples,
            extra={"tokens_per_s": rnd(1.0 / percentile(sorted(dec_samples), 50)),
                   "tokens_per_s_mean": rnd(gen / sum(dec_samples)),
                   # host time per step building the graph in Python, before the eval: part of
                   # every timed step here (one synchronous eval per token; mlx-lm overlaps it
                   # with the previous step through async_eval)
                   "host_build_s": rnd(percentile(sorted(build_samples), 50)),
                   "model": self.model_cfg},
        )
        log(f"  e2e decode: {e['tokens_per_s']:.2f} tok/s (median {e['median_s'] * 1e3:.1f} ms/token, "
            f"mean rate {e['tokens_per_s_mean']:.2f} tok/s)")


    def batch_caches(self, batch: int) -> list[KVCache]:
        """The prefilled prompt's cache for `batch` sequences: every sequence at the prompt's
        context (the twin's rows: B sequences of one token each over their own cache)."""
        self.rewind()
        out = []
        for c in self.caches:
            b = KVCache()
            b.keys, b.values = mx.tile(c.keys, (batch, 1, 1, 1)), mx.tile(c.values, (batch, 1, 1, 1))
            b.offset = self.prompt
            out.append(b)
        mx.eval([(c.keys, c.values) for c in out])
        return out

    def decode_batch(self, batch: int, gen: int) -> None:
        """`gen` greedy steps of `batch` sequences in one forward each (one eval per step), from
        the prompt's context; each sequence starts from its own (seeded) token. Records the
        aggregate rate (batch / median step) as `tokens_per_s`."""
        h, prompt, N = self.h, self.prompt, self.h.size
        caches = self.batch_caches(batch)
        rng = random.Random(self.h.args.seed * 7919 + batch)
        tok = mx.array([rng.randrange(self.cfg["vocab_size"]) for _ in range(batch)], dtype=mx.int32)
        mx.eval(tok)
        h.barrier()
        dec_samples, build_samples = [], []
        for _ in range(gen):
            t0 = time.perf_counter()
            tok = mx.argmax(self.model(tok[:, None], caches)[:, -1, :], axis=-1)
            t_built = time.perf_counter()
            mx.eval(tok)
            dec_samples.append(time.perf_counter() - t0)
            build_samples.append(t_built - t0)
        med = percentile(sorted(dec_samples), 50)
        e = h.record(
            "e2e_decode_batch",
            {"batch": batch, "prompt_tokens": prompt, "gen_tokens": gen, "context_start": prompt,
             "context_end": prompt + gen, "ranks": N,
             "all_sum_bytes": batch * self.cfg["hidden_size"] * self.act_isz if N > 1 else 0},
            self.read_bytes, batch * self.flops_batch_step(gen), dec_samples,
            extra={"tokens_per_s": rnd(batch / med),
                   "per_sequence_tokens_per_s": rnd(1.0 / med),
                   "tokens_per_s_mean": rnd(batch * gen / sum(dec_samples)),
                   "host_build_s": rnd(percentile(sorted(build_samples), 50)),
                   "model": self.model_cfg},
        )
        log(f"  e2e batched decode B={batch}: {e['tokens_per_s']:.2f} tok/s aggregate "
            f"(median {e['median_s'] * 1e3:.1f} ms/step)")

    def flops_batch_step(self, gen: int) -> float:
        """Flops per rank of one sequence's token in a batched step (at the window's middle)."""
        return forward_flops(self.cfg, self.h.size, self.prompt, gen)[1]

def e2e_setup(ctx: Context) -> None:
    """Build the e2e model once, before the rounds (when --only wants an e2e kind)."""
    if not ctx.wants("e2e_decode", "e2e_prefill", "e2e_decode_batch") or ctx.e2e is not None:
        return
    cfg = load_model_config(ctx.args.model_config)
    prompt = ctx.e2e_prompt_tokens()
    gen = ctx.args.gen_tokens or (16 if ctx.quick else 64)
    prefill_reps = 1 if ctx.quick else 2
    ctx.e2e = E2E(ctx, cfg, prompt, gen, prefill_reps)
    if ctx.size > 1 and ctx.wants("e2e_decode"):
        from .pipeline import PipelineE2E

        log(f"e2e: the same model as a {ctx.size}-stage pipeline")
        ctx.e2e_pipe = PipelineE2E(ctx, cfg, prompt, gen)


def e2e_window(ctx: Context) -> None:
    """The e2e run, three times per round between case groups: a prefill and a decode window
    from it, each its own record, so that the e2e target is sampled across the round as the
    cases are."""
    if ctx.e2e is None:
        return
    if "e2e_prefill" in ctx.only:
        ctx.e2e.prefill()
    if "e2e_decode" in ctx.only:
        ctx.e2e.decode_window()
        if ctx.e2e_pipe is not None:
            ctx.e2e_pipe.decode_window()


def e2e_batch(ctx: Context) -> None:
    """The batched decode, once per round: B = 1, 2, 4, 8 sequences (`--batch-sizes`) decoded
    together, `--batch-gen-tokens` steps each (4 quick, 32 full), from the prompt's context."""
    if ctx.e2e is None or "e2e_decode_batch" not in ctx.only:
        return
    gen = ctx.args.batch_gen_tokens or (4 if ctx.quick else 32)
    for batch in ctx.args.batch_sizes or BATCH_SIZES:
        ctx.e2e.decode_batch(batch, gen)
