"""The e2e model computes what mlx-lm's llama computes. Runs where mlx-lm is installed (it is
not in requirements.txt: see README.md, "The e2e model and mlx-lm"); skipped otherwise."""

from __future__ import annotations

import pytest

mlx_lm_llama = pytest.importorskip("mlx_lm.models.llama")


def test_logits_match_mlx_lm_llama_with_the_same_weights():
    import mlx.core as mx
    import mlx.nn as nn
    from mlx.utils import tree_flatten

    from supernode_harness.config import DEFAULT_MODEL
    from supernode_harness.e2e.model import KVCache, Model

    cfg = dict(DEFAULT_MODEL, hidden_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
               intermediate_size=512, vocab_size=1024, head_dim=64)
    mx.random.seed(0)
    ours = Model(cfg)
    nn.quantize(ours, group_size=64, bits=4)
    args = mlx_lm_llama.ModelArgs(
        model_type="llama", hidden_size=256, num_hidden_layers=2, intermediate_size=512, num_attention_heads=4,
        rms_norm_eps=cfg["rms_norm_eps"], vocab_size=1024, head_dim=64, num_key_value_heads=2,
        rope_theta=cfg["rope_theta"], tie_word_embeddings=False)
    theirs = mlx_lm_llama.Model(args)
    nn.quantize(theirs, group_size=64, bits=4)
    # the same weights; mlx-lm nests all but the LM head under `model.`
    theirs.load_weights([(k if k.startswith("lm_head") else "model." + k, v)
                         for k, v in tree_flatten(ours.parameters())], strict=True)
    toks = mx.array([[1, 5, 9, 200, 3, 77, 1000, 12]], dtype=mx.int32)
    c_ours, c_theirs = [KVCache() for _ in range(2)], theirs.make_cache()
    a, b = ours(toks, c_ours, last_only=False), theirs(toks, c_theirs)
    assert mx.allclose(a, b, atol=1e-5).item()  # prefill: every position
    tok = mx.argmax(a[:, -1, :], axis=-1)
    for _ in range(4):  # decode steps through the KV caches
        a, b = ours(tok[:, None], c_ours), theirs(tok[:, None], c_theirs)
        assert mx.allclose(a, b, atol=1e-5).item()
        tok = mx.argmax(a[:, -1, :], axis=-1)
