"""A llama-like model, layer for layer mlx-lm's `mlx_lm.models.llama` (same modules, same
ops; a test checks the logits match when mlx-lm is installed), sharded as exo shards it.

Hand-written rather than imported from mlx-lm: mlx-lm pulls transformers and ~38 other
packages into the harness's environment (see README.md, "The e2e model and mlx-lm")."""

from __future__ import annotations

import mlx.core as mx
import mlx.nn as nn


class KVCache:
    """Preallocated per-layer cache like mlx-lm's KVCache (grows in 256 steps)."""

    step = 256

    def __init__(self):
        self.keys = None
        self.values = None
        self.offset = 0

    def update_and_fetch(self, k, v):
        prev = self.offset
        L = k.shape[2]
        if self.keys is None or prev + L > self.keys.shape[2]:
            B, Hkv, _, D = k.shape
            n = ((prev + L + self.step - 1) // self.step) * self.step
            nk = mx.zeros((B, Hkv, n, D), dtype=k.dtype)
            nv = mx.zeros((B, Hkv, n, D), dtype=v.dtype)
            if self.keys is not None:
                nk[..., :prev, :] = self.keys[..., :prev, :]
                nv[..., :prev, :] = self.values[..., :prev, :]
            self.keys, self.values = nk, nv
        self.keys[..., prev:prev + L, :] = k
        self.values[..., prev:prev + L, :] = v
        self.offset += L
        return self.keys[..., :self.offset, :], self.values[..., :self.offset, :]


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h, hd = cfg["hidden_size"], cfg["head_dim"]
        self.n_heads = cfg["num_attention_heads"]
        self.n_kv_heads = cfg["num_key_value_heads"]
        self.head_dim = hd
        self.scale = hd ** -0.5
        self.rope_theta = cfg["rope_theta"]
        self.q_proj = nn.Linear(h, self.n_heads * hd, bias=False)
        self.k_proj = nn.Linear(h, self.n_kv_heads * hd, bias=False)
        self.v_proj = nn.Linear(h, self.n_kv_heads * hd, bias=False)
        self.o_proj = nn.Linear(self.n_heads * hd, h, bias=False)

    def __call__(self, x, cache):
        B, L, _ = x.shape
        q = self.q_proj(x).reshape(B, L, self.n_heads, -1).transpose(0, 2, 1, 3)
        k = self.k_proj(x).reshape(B, L, self.n_kv_heads, -1).transpose(0, 2, 1, 3)
        v = self.v_proj(x).reshape(B, L, self.n_kv_heads, -1).transpose(0, 2, 1, 3)
        q = mx.fast.rope(q, self.head_dim, traditional=False, base=self.rope_theta, scale=1.0, offset=cache.offset)
        k = mx.fast.rope(k, self.head_dim, traditional=False, base=self.rope_theta, scale=1.0, offset=cache.offset)
        k, v = cache.update_and_fetch(k, v)
        o = mx.fast.scaled_dot_product_attention(q, k, v, scale=self.scale, mask="causal" if L > 1 else None)
        o = o.transpose(0, 2, 1, 3).reshape(B, L, -1)
        return self.o_proj(o)


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h, f = cfg["hidden_size"], cfg["intermediate_size"]
        self.gate_proj = nn.Linear(h, f, bias=False)
        self.up_proj = nn.Linear(h, f, bias=False)
        self.down_proj = nn.Linear(f, h, bias=False)

    def __call__(self, x):
        return self.down_proj(nn.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.self_attn = Attention(cfg)
        self.mlp = MLP(cfg)
        self.input_layernorm = nn.RMSNorm(cfg["hidden_size"], eps=cfg["rms_norm_eps"])
        self.post_attention_layernorm = nn.RMSNorm(cfg["hidden_size"], eps=cfg["rms_norm_eps"])

    def __call__(self, x, cache):
        h = x + self.self_attn(self.input_layernorm(x), cache)
        return h + self.mlp(self.post_attention_layernorm(h))


class Model(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"])
        self.layers = [Block(cfg) for _ in range(cfg["num_hidden_layers"])]
        self.norm = nn.RMSNorm(cfg["hidden_size"], eps=cfg["rms_norm_eps"])
        self.lm_head = nn.Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)

    def __call__(self, tokens, caches, last_only=True):
        x = self.embed_tokens(tokens)
        for layer, c in zip(self.layers, caches):
            x = layer(x, c)
        x = self.norm(x)
        if last_only:
            x = x[:, -1:, :]
        return self.lm_head(x)


def shard_model(model: Model, group) -> None:
    """Tensor parallel exactly as exo's auto_parallel does for llama-like models:
    q/k/v/gate/up all-to-sharded (column split, no communication), o_proj and
    down_proj sharded-to-all (row split + mx.distributed.all_sum): 2 all_sums per
    layer. Embedding, norms and lm_head stay replicated. KV cache is split by KV
    head because each rank only holds its heads."""
    from mlx.nn.layers.distributed import shard_linear

    N = group.size()
    for layer in model.layers:
        a = layer.self_attn
        a.q_proj = shard_linear(a.q_proj, "all-to-sharded", group=group)
        a.k_proj = shard_linear(a.k_proj, "all-to-sharded", group=group)
        a.v_proj = shard_linear(a.v_proj, "all-to-sharded", group=group)
        a.o_proj = shard_linear(a.o_proj, "sharded-to-all", group=group)
        a.n_heads //= N
        a.n_kv_heads //= N
        m = layer.mlp
        m.gate_proj = shard_linear(m.gate_proj, "all-to-sharded", group=group)
        m.up_proj = shard_linear(m.up_proj, "all-to-sharded", group=group)
        m.down_proj = shard_linear(m.down_proj, "sharded-to-all", group=group)


def tree_nbytes(module: nn.Module) -> int:
    from mlx.utils import tree_flatten

    return sum(v.nbytes for _, v in tree_flatten(module.parameters()))
