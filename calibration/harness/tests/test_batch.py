"""The batch cases: MoE routing of a batch (pure), the batched e2e records' merge (pure), and
the gather_qmm and batched-decode records of a real run (one rank, MLX)."""

from __future__ import annotations

import json
import math
import random

import pytest
from checks import EXAMPLE, TINY_MODEL, plain_check, run_harness, schema_check

from supernode_harness.routing import distinct, expected_distinct, route, sorted_gather
from supernode_harness.stats import merge_rounds, stats


def test_routing_is_a_function_of_the_seed_and_the_batch():
    a = route(0, 8, 64, 8)
    assert a == route(0, 8, 64, 8)  # same seed, same batch: same routing (every round, every bits)
    assert a != route(1, 8, 64, 8)
    assert route(0, 4, 64, 8) != a[:4]  # each batch size draws its own routing
    assert len(a) == 8 and all(len(r) == 8 == len(set(r)) and all(0 <= e < 64 for e in r) for r in a)
    with pytest.raises(ValueError):
        route(0, 1, 4, 5)


def test_distinct_experts_follow_the_coverage_law():
    assert distinct([[0, 1], [1, 2], [2, 0]]) == 3
    assert expected_distinct(64, 8, 1) == 8.0
    assert math.isclose(expected_distinct(64, 8, 32), 64 * (1 - (56 / 64) ** 32))
    # the mean coverage of many seeded batches is E(1-(1-k/E)^B), within sampling error
    for tokens in (2, 4, 8, 16, 32):
        counts = [distinct(route(seed, tokens, 64, 8)) for seed in range(400)]
        mean = sum(counts) / len(counts)
        sd = (sum((c - mean) ** 2 for c in counts) / (len(counts) - 1)) ** 0.5
        assert abs(mean - expected_distinct(64, 8, tokens)) < 4 * sd / len(counts) ** 0.5 + 1e-9, tokens


def test_gather_is_sorted_from_64_token_expert_pairs_as_mlx_lm_does():
    rng = random.Random(3)
    assert not sorted_gather([rng.sample(range(64), 8) for _ in range(7)])
    assert sorted_gather([rng.sample(range(64), 8) for _ in range(8)])


def test_batched_decode_rounds_merge_on_the_aggregate_rate():
    def dec(r, samples, batch):
        return {"kind": "e2e_decode_batch", "params": {"batch": batch, "gen_tokens": len(samples)}, "bytes": 8,
                "flops": 2.0, "round": r, "tokens_per_s": batch / stats(samples)["median_s"],
                "per_sequence_tokens_per_s": 1 / stats(samples)["median_s"], **stats(samples)}
    out = merge_rounds([dec(0, [0.4, 0.4], 4), dec(0, [0.1, 0.1], 1), dec(1, [0.2, 0.2], 4), dec(1, [0.2, 0.2], 1)])
    b4, b1 = out
    assert (b4["params"]["batch"], b4["best_round"], b4["tokens_per_s"]) == (4, 1, 20.0)
    assert (b1["params"]["batch"], b1["best_round"], b1["tokens_per_s"]) == (1, 0, 10.0)
    # a sample per step of `batch` tokens
    assert math.isclose(b4["all_rounds"]["tokens_per_s_mean"], 4 * 4 / 1.2, rel_tol=1e-8)


def test_gather_qmm_over_a_batch_and_batched_decode_records(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(TINY_MODEL))
    doc = run_harness(tmp_path, "--quick", "--only", "gather_qmm,e2e_decode_batch", "--gather-m", "1,2,8",
                      "--model-config", str(cfg), "--prompt-tokens", "16", "--batch-sizes", "1,2,4",
                      "--batch-gen-tokens", "3", "--rounds", "2")
    plain_check(doc)
    schema_check(doc)
    g = [b for b in doc["benchmarks"] if b["kind"] == "gather_qmm"]
    assert [b["params"]["M"] for b in g] == [1, 2, 8]
    for b in g:
        p = b["params"]
        # the experts the batch touched are the seeded routing's, identical in both rounds
        assert p["distinct_experts"] == distinct(route(0, p["M"], p["experts"], p["top_k"]))
        assert p["expected_distinct_experts"] == round(expected_distinct(64, 8, p["M"]), 4)
        assert p["sorted_indices"] == (p["M"] * p["top_k"] >= 64)
        assert b["bytes"] == p["bytes_per_expert"] * p["distinct_experts"]
        assert b["flops"] == 2 * p["M"] * p["top_k"] * p["N"] * p["K"]
        assert len(b["rounds"]) == 2
    assert g[0]["params"]["distinct_experts"] == 8
    d = [b for b in doc["benchmarks"] if b["kind"] == "e2e_decode_batch"]
    assert [b["params"]["batch"] for b in d] == [1, 2, 4]
    for b in d:
        p = b["params"]
        assert (p["gen_tokens"], p["prompt_tokens"], p["context_start"], p["ranks"]) == (3, 16, 16, 1)
        assert b["n"] == 3 and len(b["rounds"]) == 2
        assert math.isclose(b["tokens_per_s"], p["batch"] / b["median_s"], rel_tol=1e-6)
        assert math.isclose(b["per_sequence_tokens_per_s"], 1 / b["median_s"], rel_tol=1e-6)
        assert 0 < b["host_build_s"] < b["median_s"]
        assert b["model"]["layers"] == TINY_MODEL["num_hidden_layers"]
    assert d[2]["flops"] == 4 * d[0]["flops"]


BATCH_EXAMPLE = EXAMPLE.parent / "harness-batch-example.json"


@pytest.mark.skipif(not BATCH_EXAMPLE.exists(), reason="no batch example committed")
def test_committed_batch_example_is_valid():
    doc = json.loads(BATCH_EXAMPLE.read_text())
    plain_check(doc)
    schema_check(doc)
    assert [b["params"]["batch"] for b in doc["benchmarks"] if b["kind"] == "e2e_decode_batch"] == [1, 2, 4, 8]
    assert [b["params"]["M"] for b in doc["benchmarks"] if b["kind"] == "gather_qmm"] == [1, 2, 4, 8, 16, 32]
    assert BATCH_EXAMPLE.stat().st_size < 400_000
