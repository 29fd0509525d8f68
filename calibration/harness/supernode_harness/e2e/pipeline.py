"""The pipeline-parallel e2e case (2+ ranks, the same model config as the tensor-parallel one),
run as exo's pipeline runs a decode step: rank r holds a contiguous range of layers (equal shares
on identical hosts; rank 0 the embedding, the last rank the norm and LM head); each stage builds
its graph in Python, evaluates it (a GPU->CPU sync), sends the hidden state to the next rank, which
wakes on the receive; the last stage's token is all-gathered so every rank has it. The twin fits
its per-stage host and synchronisation cost (`runtimes.mlx.stage_us`) from this record."""

from __future__ import annotations

import math
import random
import time

import mlx.core as mx
import mlx.nn as nn

from ..context import Context
from ..log import log
from ..mlxutil import clear_cache, dtype_name
from ..stats import percentile, rnd
from .describe import model_record
from .model import KVCache, Model, tree_nbytes


def stage_layers(layers: int, ranks: int) -> list[tuple[int, int]]:
    """Contiguous layer ranges in equal shares (exo sizes them by available memory: identical
    hosts get equal shares), cumulative rounding half away from zero (as the twin's
    `Plan::new`) so that they cover every layer."""
    out, prev = [], 0
    for r in range(ranks):
        end = layers if r == ranks - 1 else max(prev + 1, min(layers - (ranks - 1 - r), math.floor(layers * (r + 1) / ranks + 0.5)))
        out.append((prev, end))
        prev = end
    return out


class PipelineE2E:
    """The e2e model split into pipeline stages, one per rank; `decode_window()` records one
    `e2e_decode` with `model.parallelism = "pipeline"`."""

    def __init__(self, ctx: Context, cfg: dict, prompt: int, gen: int):
        self.h, self.cfg, self.prompt, self.gen = ctx, cfg, prompt, gen
        n, layers = ctx.size, cfg["num_hidden_layers"]
        self.stages = stage_layers(layers, n)
        lo, hi = self.stages[ctx.rank]
        mx.random.seed(ctx.args.seed)
        model = Model(cfg)
        model.set_dtype(ctx.dtype)
        nn.quantize(model, group_size=cfg["group_size"], bits=cfg["bits"])
        total = tree_nbytes(model)
        model.layers = model.layers[lo:hi]
        model.eval()
        mx.eval(model.parameters())
        clear_cache()
        self.model, self.first, self.last = model, ctx.rank == 0, ctx.rank == n - 1
        mine = tree_nbytes(model)
        if not self.first:
            mine -= tree_nbytes(model.embed_tokens)
        if not self.last:
            mine -= tree_nbytes(model.lm_head)
        self.act_isz = mx.zeros((1,), dtype=ctx.dtype).itemsize
        self.record_model = model_record(cfg, n, dtype_name(ctx.dtype), self.act_isz, total, mine, mine)
        self.record_model.update({
            "parallelism": "pipeline", "stages": [list(s) for s in self.stages], "all_sums_per_forward": 0,
            "sharding": {"layers": "contiguous ranges, one per rank", "replicated": [],
                         "handoff": "send/recv of the hidden state, then all_gather of the last stage's token"},
            "kv_bytes_per_token_per_rank": 2 * (hi - lo) * cfg["num_key_value_heads"] * cfg["head_dim"] * self.act_isz,
        })
        rng = random.Random(ctx.args.seed)
        self.prompt_toks = mx.array([[rng.randrange(cfg["vocab_size"]) for _ in range(prompt)]], dtype=mx.int32)
        self.caches = [KVCache() for _ in range(hi - lo)]
        self.tok = self.step(self.prompt_toks)[0]  # the prefill through the pipeline (untimed)
        for _ in range(2):
            self.step(self.tok[:, None])  # warm up the decode kernels
        ctx.barrier()

    def step(self, toks) -> tuple[mx.array, float]:
        """One forward through this rank's stage: (the next token on every rank, seconds spent
        building this stage's graph in Python)."""
        h, m = self.h, self.model
        t0 = time.perf_counter()
        shape = (1, toks.shape[1], self.cfg["hidden_size"])
        if self.first:
            x = m.embed_tokens(toks)
        else:
            x = mx.distributed.recv(shape, self.h.dtype, h.rank - 1, group=h.group)
        for layer, c in zip(m.layers, self.caches):
            x = layer(x, c)
        if self.last:
            tok = mx.argmax(m.lm_head(m.norm(x[:, -1:, :]))[:, -1, :], axis=-1).astype(mx.int32)
        else:
            build = time.perf_counter() - t0
            mx.eval(x)  # the GPU->CPU sync before the send
            mx.eval(mx.distributed.send(x, h.rank + 1, group=h.group))
            tok = mx.zeros((1,), dtype=mx.int32)
        if self.last:
            build = time.perf_counter() - t0
        # every rank gets the last stage's token (exo: all_gather of the final output)
        tok = mx.distributed.all_gather(tok, group=h.group)[-1:]
        mx.eval(tok)
        return tok, build

    def decode_window(self) -> None:
        """`gen` decode steps from the prompt's context (caches rewound), one record."""
        h = self.h
        for c in self.caches:
            c.offset = self.prompt
        tok = self.tok
        h.barrier()
        steps, builds = [], []
        for _ in range(self.gen):
            t0 = time.perf_counter()
            tok, build = self.step(tok[:, None])
            steps.append(time.perf_counter() - t0)
            builds.append(build)
        e = h.record(
            "e2e_decode",
            {"prompt_tokens": self.prompt, "gen_tokens": self.gen, "context_start": self.prompt,
             "context_end": self.prompt + self.gen, "ranks": h.size, "parallelism": "pipeline",
             "handoff_bytes": self.cfg["hidden_size"] * self.act_isz},
            # bytes and FLOPs per call: 0 (numbers, as the file format wants); the twin predicts
            # an e2e record from its model, not from these counts
            0, 0, steps,
            extra={"tokens_per_s": rnd(1.0 / percentile(sorted(steps), 50)),
                   "tokens_per_s_mean": rnd(self.gen / sum(steps)),
                   # this rank's Python graph build per step (rank 0's is the file's; every
                   # stage builds its own, serial with its eval)
                   "host_build_s": rnd(percentile(sorted(builds), 50)),
                   "model": self.record_model},
        )
        log(f"  e2e pipeline decode: {e['tokens_per_s']:.2f} tok/s (median {e['median_s'] * 1e3:.1f} ms/token)")
