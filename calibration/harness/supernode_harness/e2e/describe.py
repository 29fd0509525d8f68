"""What the file says about the e2e model: its `model` object (enough for a simulator to
rebuild it) and its flops per forward per rank (pure: no MLX)."""

from __future__ import annotations


def params_total(cfg: dict) -> int:
    """Weights of the layers, the embedding and the (untied) LM head."""
    hid, heads, kv, hd, ffn = (cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"],
                               cfg["head_dim"], cfg["intermediate_size"])
    layers = cfg["num_hidden_layers"]
    return layers * (hid * heads * hd * 2 + hid * kv * hd * 2 + 3 * hid * ffn) + 2 * cfg["vocab_size"] * hid


def forward_flops(cfg: dict, ranks: int, prompt: int, gen: int) -> tuple[float, float]:
    """(prefill of the prompt, one decode step at the window's middle context), per rank:
    sharded layer matmuls / ranks, the replicated LM head on the last token, attention
    (QK^T and PV over the causal context) split by head."""
    hid, heads, hd, layers = cfg["hidden_size"], cfg["num_attention_heads"], cfg["head_dim"], cfg["num_hidden_layers"]
    head_params = cfg["vocab_size"] * hid
    layer_params = params_total(cfg) - 2 * head_params
    attn_prefill = 4.0 * layers * heads * hd * (prompt * (prompt + 1) // 2)
    prefill = (2.0 * layer_params * prompt + attn_prefill) / ranks + 2.0 * head_params
    ctx_mid = prompt + gen / 2.0
    decode = (2.0 * layer_params + 4.0 * layers * heads * hd * ctx_mid) / ranks + 2.0 * head_params
    return prefill, decode


def model_record(cfg: dict, ranks: int, dtype: str, act_isz: int, total_bytes: int, rank_bytes: int,
                 read_bytes: int) -> dict:
    """The e2e records' `model` object (schema `$defs/model`, plus how it is sharded)."""
    layers, kv, hd = cfg["num_hidden_layers"], cfg["num_key_value_heads"], cfg["head_dim"]
    return {
        "arch": cfg["arch"],
        "layers": layers,
        "hidden": cfg["hidden_size"],
        "heads": cfg["num_attention_heads"],
        "kv_heads": kv,
        "head_dim": hd,
        "ffn": cfg["intermediate_size"],
        "vocab": cfg["vocab_size"],
        "bits": cfg["bits"],
        "group_size": cfg["group_size"],
        "ranks": ranks,
        "dtype": dtype,
        "tie_word_embeddings": False,
        "parallelism": "tensor" if ranks > 1 else "none",
        "sharding": {
            "column_split": ["q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"],
            "row_split_then_all_sum": ["o_proj", "down_proj"],
            "replicated": ["embed_tokens", "lm_head", "norms"],
            "kv_cache": "split by kv head",
        },
        "all_sums_per_forward": 2 * layers if ranks > 1 else 0,
        "prefill_logits": "last",  # the LM head sees the last position only (Model.__call__ last_only)
        "params_total": params_total(cfg),
        "weight_bytes_total": total_bytes,
        "weight_bytes_per_rank": rank_bytes,
        "kv_bytes_per_token_per_rank": 2 * layers * (kv // ranks) * hd * act_isz,
        "quantized_modules": "all Linear and the Embedding (mlx.nn.quantize)",
        "weights": "random (seeded, identical on every rank before sharding)",
        "weight_bytes_read_per_forward_per_rank": read_bytes,
    }
