"""The harness run end to end: small subsets on one rank and on two ranks over the ring
backend on loopback, the output validated against schema.json (with the `jsonschema` package
and with plain Python checks). Run with the harness venv:

    calibration/harness/.venv/bin/python -m pytest -q calibration/harness
"""

from __future__ import annotations

import json
import math
import subprocess

import pytest
from checks import (EXAMPLE, HARNESS, HERE, LAUNCH, PY, SCHEMA, TINY_MODEL, free_port_block, plain_check,
                    run_harness, schema_check)


def test_schema_is_valid_json_schema():
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_single_rank_subset(tmp_path):
    doc = run_harness(tmp_path, "--quick", "--only", "membw,sync,qmm", "--qmm-m", "1",
                      "--membw-bytes", str(16 << 20), "--rounds", "2")
    plain_check(doc)
    schema_check(doc)
    kinds = {b["kind"] for b in doc["benchmarks"]}
    assert kinds == {"membw", "sync", "qmm"}
    assert doc["world_size"] == 1 and doc["backend"] == "none" and doc["quick"] is True
    assert doc["only"] == ["sync", "membw", "qmm"]
    qmm = [b for b in doc["benchmarks"] if b["kind"] == "qmm"]
    # 3 model shapes x bits {4, 8, 16 (bf16 GEMV)}, plus the e2e model's 6 per-rank shapes at M=1
    # and, but for the LM head (last position only), at the e2e prompt length (its prefill chunk)
    assert len(qmm) == 3 * 3 + 6 + 5
    assert sum(1 for b in qmm if b["params"]["label"].startswith("e2e")) == 11
    assert {b["params"]["M"] for b in qmm if b["params"]["label"].startswith("e2e")} == {1, 32}
    # every case ran in both rounds and reports its best one; sync runs once, before the rounds
    assert doc["rounds"] == 2
    for b in qmm:
        assert [r["round"] for r in b["rounds"]] == [0, 1] and b["best_round"] in (0, 1)
        best = b["rounds"][b["best_round"]]
        assert b["median_s"] == best["median_s"] == min(r["median_s"] for r in b["rounds"])
        assert b["all_rounds"]["n"] == sum(r["n"] for r in b["rounds"])
    assert all("rounds" not in b for b in doc["benchmarks"] if b["kind"] == "sync")
    # the weights are cycled through copies beyond a core's private cache
    assert all(b["params"]["weight_copies"] * b["params"]["weight_bytes"] >= 64 << 20 or b["params"]["weight_copies"] == 64
               for b in qmm)
    for b in qmm:
        p = b["params"]
        assert b["flops"] == 2 * p["M"] * p["N"] * p["K"]
        # packed weights + fp scales/biases per group of 64 (bits 16: the bf16 weights alone)
        assert b["bytes"] >= p["N"] * p["K"] * p["bits"] / 8
        assert b["bytes"] < p["N"] * p["K"] * (p["bits"] + 1.1) / 8
    mb = [b for b in doc["benchmarks"] if b["kind"] == "membw"][0]
    assert mb["bytes"] == 16 << 20 and mb["bytes_per_s"] > 0
    if doc["machine"]["os"] != "Darwin":
        assert doc["power"] == {"available": False, "reason": doc["power"]["reason"]}


def test_single_rank_e2e_tiny_model(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(TINY_MODEL))
    doc = run_harness(tmp_path, "--quick", "--only", "e2e", "--model-config", str(cfg),
                      "--prompt-tokens", "16", "--gen-tokens", "4")
    plain_check(doc)
    schema_check(doc)
    e2e = {b["kind"]: b for b in doc["benchmarks"]}
    # the "e2e" group includes the batched decode and the pace probe
    assert set(e2e) == {"e2e_decode", "e2e_prefill", "e2e_decode_batch", "pace"}
    assert [b["params"]["batch"] for b in doc["benchmarks"] if b["kind"] == "e2e_decode_batch"] == [1, 2, 4, 8]
    m = e2e["e2e_decode"]["model"]
    assert (m["layers"], m["hidden"], m["heads"], m["kv_heads"], m["ffn"], m["vocab"], m["bits"],
            m["group_size"], m["ranks"]) == (2, 256, 4, 2, 512, 1024, 4, 64, 1)
    assert m["head_dim"] == 64
    assert len(e2e["e2e_decode"]["samples_s"]) == 12  # the best round's three windows of 4 steps, pooled
    assert e2e["e2e_prefill"]["params"]["prompt_tokens"] == 16
    # three rounds (the default) of three prefills and decode windows each, pooled per round: the
    # decode reports its best round's median step
    dec = e2e["e2e_decode"]
    assert doc["rounds"] == 3 and len(dec["rounds"]) == 3 and len(e2e["e2e_prefill"]["rounds"]) == 3
    assert dec["windows"] == 3 and all(r["n"] == 12 for r in dec["rounds"])
    assert dec["tokens_per_s"] == max(r["tokens_per_s"] for r in dec["rounds"])
    assert math.isclose(dec["tokens_per_s"], 1.0 / dec["median_s"], rel_tol=1e-6)
    assert dec["all_rounds"]["tokens_per_s_mean"] > 0
    # the Python graph-building time per step, part of every timed step
    assert 0 < dec["host_build_s"] < dec["median_s"]


def test_only_rejects_unknown_kind(tmp_path):
    r = subprocess.run([PY, str(HARNESS), "--only", "qmm,bogus", "--out", str(tmp_path / "x.json")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert "bogus" in r.stderr
    assert not (tmp_path / "x.json").exists()


@pytest.mark.skipif(not LAUNCH.exists(), reason="mlx.launch not installed next to this python")
def test_two_ranks_ring_loopback(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(TINY_MODEL))
    out = tmp_path / "ring.json"
    cmd = [str(LAUNCH), "--backend", "ring", "-n", "2", "--starting-port", str(free_port_block()),
           "--python", PY, str(HARNESS), "--quick", "--only", "sync,collectives,e2e",
           "--max-coll-bytes", "16384", "--model-config", str(cfg), "--prompt-tokens", "16",
           "--gen-tokens", "4", "--out", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=str(HERE))
    assert r.returncode == 0, f"mlx.launch failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    doc = json.loads(out.read_text())
    plain_check(doc)
    schema_check(doc)
    assert doc["world_size"] == 2 and doc["backend"] == "ring"
    assert len(doc["hosts"]) == 2
    by_kind: dict[str, list] = {}
    for b in doc["benchmarks"]:
        by_kind.setdefault(b["kind"], []).append(b)
    for kind in ("all_sum", "all_gather", "send_recv"):
        sizes = [b["params"]["message_bytes"] for b in by_kind[kind]]
        assert sizes == [1024, 4096, 16384], (kind, sizes)
    ops = {b["params"]["op"] for b in by_kind["sync"]}
    assert {"eval_roundtrip", "all_sum_tiny"} <= ops
    for b in by_kind["all_sum"]:
        assert len(b["per_rank_median_s"]) == 2
    # the collective in context: the same MLP-block chain without and with an all_sum per block
    chains = {b["params"]["sync"]: b for b in by_kind["segment_chain"]}
    assert [blk["name"] for blk in chains[True]["params"]["blocks"]] == ["attention projections", "mlp"]
    assert set(chains) == {False, True}
    assert chains[True]["params"]["all_sum_bytes"] > 0 and chains[False]["params"]["all_sum_bytes"] == 0
    assert len(chains[True]["per_rank_median_s"]) == 2
    assert doc["launcher"] is None or "idle priority" in doc["launcher"]
    # the pace probe runs between the cases and around the e2e run
    ats = [b["params"]["at"] for b in by_kind["pace"]]
    assert "before e2e" in ats and ats[-1] == "after e2e"
    dec = by_kind["e2e_decode"][0]
    assert dec["model"]["ranks"] == 2
    assert dec["model"]["prefill_logits"] == "last"
    assert dec["model"]["all_sums_per_forward"] == 2 * TINY_MODEL["num_hidden_layers"]
    # each rank holds half of every sharded layer but a full copy of embedding/lm_head
    assert dec["model"]["weight_bytes_per_rank"] < dec["model"]["weight_bytes_total"]
    # the same model as a 2-stage pipeline: its own e2e_decode record, layers split in two
    pipe = [b for b in by_kind["e2e_decode"] if b["params"].get("parallelism") == "pipeline"]
    assert len(pipe) == 1, [b["params"] for b in by_kind["e2e_decode"]]
    p = pipe[0]
    assert p["model"]["parallelism"] == "pipeline" and p["model"]["ranks"] == 2
    assert p["model"]["stages"] == [[0, 1], [1, 2]]
    assert p["params"]["gen_tokens"] == 4 and p["tokens_per_s"] > 0 and p["host_build_s"] >= 0
    # three rounds of three windows, pooled per round like the tensor-parallel decode's
    assert len(p["per_rank_median_s"]) == 2 and len(p["rounds"]) == 3 and p["bytes"] == 0
    assert dec["model"]["parallelism"] == "tensor"


def test_stage_layers_cover_every_layer():
    from supernode_harness.e2e.pipeline import stage_layers

    assert stage_layers(2, 2) == [(0, 1), (1, 2)]
    assert stage_layers(7, 2) == [(0, 4), (4, 7)]  # 3.5 rounds up, as the twin's split does
    assert stage_layers(5, 4) == [(0, 1), (1, 3), (3, 4), (4, 5)]


@pytest.mark.skipif(not EXAMPLE.exists(), reason="no example measurement committed")
def test_committed_example_is_valid():
    doc = json.loads(EXAMPLE.read_text())
    plain_check(doc)
    schema_check(doc)
    assert EXAMPLE.stat().st_size < 400_000


def test_module_entry_point_has_the_same_command_line():
    """`python -m supernode_harness` and harness.py are one command line (--help needs no MLX run)."""
    a = subprocess.run([PY, str(HARNESS), "--help"], capture_output=True, text=True, timeout=60)
    b = subprocess.run([PY, "-m", "supernode_harness", "--help"], capture_output=True, text=True, timeout=60,
                       cwd=str(HERE))
    assert a.returncode == 0 and b.returncode == 0, b.stderr
    assert "--model-config" in a.stdout and "--rounds" in a.stdout
    # the same options and help; only the usage block, which names the program, differs
    assert a.stdout.split("\n\n", 1)[1] == b.stdout.split("\n\n", 1)[1]
