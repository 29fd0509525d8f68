"""The e2e model's configuration, shapes and description (pure: no MLX)."""

from __future__ import annotations

import json

import pytest
from checks import EXAMPLE, TINY_MODEL

from supernode_harness.config import (DEFAULT_MODEL, e2e_qmm_shapes, layer_shapes, load_model_config,
                                      tensor_parallel_problems)
from supernode_harness.e2e.describe import forward_flops, model_record, params_total


def test_model_config_reads_hugging_face_keys(tmp_path):
    assert load_model_config(None) == DEFAULT_MODEL
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(TINY_MODEL, model_type="llama", unknown_key=1)))
    cfg = load_model_config(path)
    assert (cfg["hidden_size"], cfg["num_hidden_layers"], cfg["bits"], cfg["group_size"]) == (256, 2, 4, 64)
    assert cfg["head_dim"] == 256 // 4 and "unknown_key" not in cfg and cfg["rope_theta"] == 10000.0
    path.write_text(json.dumps({"head_dim": 128, "quantization": {"bits": 8, "group_size": 32}}))
    cfg = load_model_config(path)
    assert (cfg["head_dim"], cfg["bits"], cfg["group_size"], cfg["hidden_size"]) == (128, 8, 32, 1024)


def test_tensor_parallel_split_rules():
    assert tensor_parallel_problems(DEFAULT_MODEL, 1) == [] and tensor_parallel_problems(DEFAULT_MODEL, 2) == []
    assert tensor_parallel_problems(DEFAULT_MODEL, 4) == []
    probs = tensor_parallel_problems(DEFAULT_MODEL, 3)
    assert any("heads" in p for p in probs) and any("hidden" in p for p in probs)
    assert tensor_parallel_problems(dict(DEFAULT_MODEL, intermediate_size=2816 + 64), 2)  # ffn/2 not a group multiple


def test_per_rank_shapes_of_the_default_model():
    attn, mlp = layer_shapes(DEFAULT_MODEL, 2)
    assert attn == [[512, 1024], [128, 1024], [128, 1024], [1024, 512]]
    assert mlp == [[1408, 1024], [1408, 1024], [1024, 1408]]
    shapes = e2e_qmm_shapes(DEFAULT_MODEL, 2)
    assert [(n, k) for n, k, _ in shapes] == [(512, 1024), (128, 1024), (1024, 512), (1408, 1024), (1024, 1408),
                                              (32000, 1024)]
    assert e2e_qmm_shapes(DEFAULT_MODEL, 0) == e2e_qmm_shapes(DEFAULT_MODEL, 1)


@pytest.mark.skipif(not EXAMPLE.exists(), reason="no example measurement committed")
def test_description_and_flops_reproduce_the_committed_example():
    doc = json.loads(EXAMPLE.read_text())
    for b in (b for b in doc["benchmarks"] if b["kind"] in ("e2e_decode", "e2e_prefill")):
        m, p = b["model"], b["params"]
        cfg = dict(DEFAULT_MODEL, hidden_size=m["hidden"], num_hidden_layers=m["layers"],
                   num_attention_heads=m["heads"], num_key_value_heads=m["kv_heads"], head_dim=m["head_dim"],
                   intermediate_size=m["ffn"], vocab_size=m["vocab"], bits=m["bits"], group_size=m["group_size"])
        act = 4 if m["dtype"] == "float32" else 2
        assert model_record(cfg, m["ranks"], m["dtype"], act, m["weight_bytes_total"], m["weight_bytes_per_rank"],
                            m["weight_bytes_read_per_forward_per_rank"]) == m
        assert params_total(cfg) == m["params_total"]
        gen = b["params"].get("gen_tokens", 16)  # the prefill's flops do not depend on it
        prefill, decode = forward_flops(cfg, m["ranks"], p["prompt_tokens"], gen)
        assert b["flops"] == (decode if b["kind"] == "e2e_decode" else prefill)
