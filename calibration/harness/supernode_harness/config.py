"""The e2e model's configuration and the per-rank shapes derived from it (pure: no MLX)."""

from __future__ import annotations

import json
from pathlib import Path

DEFAULT_MODEL = {
    "arch": "llama",
    "hidden_size": 1024,
    "num_hidden_layers": 8,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
    "intermediate_size": 2816,
    "vocab_size": 32000,
    "head_dim": 64,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "tie_word_embeddings": False,
    "bits": 4,
    "group_size": 64,
}


def load_model_config(path: str | Path | None) -> dict:
    """DEFAULT_MODEL, with the keys a Hugging Face style config.json at `path` sets
    (`quantization.bits/group_size` become `bits`/`group_size`; other keys are ignored).
    Without `head_dim` in the file it is hidden / heads."""
    cfg = dict(DEFAULT_MODEL)
    if not path:
        return cfg
    user = json.loads(Path(path).read_text())
    q = user.pop("quantization", None)
    if isinstance(q, dict):
        user.setdefault("bits", q.get("bits"))
        user.setdefault("group_size", q.get("group_size"))
    cfg.update({k: v for k, v in user.items() if k in DEFAULT_MODEL})
    if "head_dim" not in user:
        cfg["head_dim"] = cfg["hidden_size"] // cfg["num_attention_heads"]
    return cfg


def tensor_parallel_problems(cfg: dict, ranks: int) -> list[str]:
    """Why `cfg` cannot be split over `ranks` the way exo splits it (empty: it can)."""
    heads, kv, hid, ffn, gs = (cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["hidden_size"],
                               cfg["intermediate_size"], cfg["group_size"])
    problems = []
    if heads % ranks or kv % ranks:
        problems.append(f"ranks ({ranks}) must divide heads ({heads}) and kv heads ({kv})")
    if hid % ranks:
        problems.append(f"ranks ({ranks}) must divide hidden ({hid})")
    if (ffn // ranks) % gs or (heads * cfg['head_dim'] // ranks) % gs:
        problems.append(f"per-rank input dims of o_proj/down_proj must be multiples of group size {gs}")
    return problems


def layer_shapes(cfg: dict, ranks: int) -> tuple[list[list[int]], list[list[int]]]:
    """Per-rank [N_out, K_in] of one layer's attention projections (q, k, v, o) and MLP
    (gate, up, down) under tensor parallelism, with head_dim = hidden / heads."""
    n, h, f = ranks, cfg["hidden_size"], cfg["intermediate_size"]
    kv = cfg["num_key_value_heads"] * (h // cfg["num_attention_heads"])
    attn = [[h // n, h], [kv // n, h], [kv // n, h], [h, h // n]]
    mlp = [[f // n, h], [f // n, h], [h, f // n]]
    return attn, mlp


def e2e_qmm_shapes(cfg: dict, ranks: int) -> list[tuple[int, int, str]]:
    """The e2e model's distinct per-rank matmuls as (N_out, K_in, label)."""
    n = max(1, ranks)
    hd = cfg["hidden_size"] // cfg["num_attention_heads"]
    h, f = cfg["hidden_size"], cfg["intermediate_size"]
    kv = cfg["num_key_value_heads"] * hd
    return [
        (h // n, h, "e2e q_proj (column split)"),
        (kv // n, h, "e2e k/v_proj (column split)"),
        (h, h // n, "e2e o_proj (row split)"),
        (f // n, h, "e2e gate/up_proj (column split)"),
        (h, f // n, "e2e down_proj (row split)"),
        (cfg["vocab_size"], h, "e2e lm_head (replicated)"),
    ]
