"""Tests for the calibration harness. Run with the harness venv:

    calibration/harness/.venv/bin/python -m pytest -q calibration/harness

They run small subsets of the harness (single rank, and two ranks over the ring
backend on loopback) and validate the output against schema.json, both with the
`jsonschema` package and with plain Python checks.
"""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
HARNESS = HERE / "harness.py"
SCHEMA = json.loads((HERE / "schema.json").read_text())
EXAMPLE = HERE.parent / "measurements" / "harness-quick-example.json"
PY = sys.executable
LAUNCH = Path(PY).parent / "mlx.launch"

TINY_MODEL = {
    "hidden_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 512,
    "vocab_size": 1024,
    "quantization": {"bits": 4, "group_size": 64},
}

TOP_REQUIRED = SCHEMA["required"]
BENCH_REQUIRED = SCHEMA["$defs"]["benchmark"]["required"]
KINDS = set(SCHEMA["$defs"]["kind"]["enum"])
MODEL_REQUIRED = SCHEMA["$defs"]["model"]["required"]


def plain_check(doc: dict) -> None:
    """Schema essentials checked without jsonschema (what a reader relies on)."""
    missing = [k for k in TOP_REQUIRED if k not in doc]
    assert not missing, f"missing top-level keys {missing}"
    assert doc["schema_version"] == 1
    assert doc["tool"] == "supernode-harness"
    for k in ("hostname", "os", "platform", "cpu", "cores", "ram_bytes"):
        assert k in doc["machine"], k
    assert doc["backend"] in {"ring", "jaccl", "jaccl-ring", "mpi", "nccl", "none"}
    assert doc["device"] in {"cpu", "gpu"}
    assert isinstance(doc["quick"], bool)
    assert isinstance(doc["world_size"], int) and doc["world_size"] >= 1
    assert isinstance(doc["power"].get("available"), bool)
    assert isinstance(doc["benchmarks"], list) and doc["benchmarks"]
    for b in doc["benchmarks"]:
        miss = [k for k in BENCH_REQUIRED if k not in b]
        assert not miss, f"{b.get('kind')}: missing {miss}"
        assert b["kind"] in KINDS
        s = b["samples_s"]
        assert s and all(isinstance(v, (int, float)) and v >= 0 and math.isfinite(v) for v in s)
        assert b["p10_s"] <= b["median_s"] <= b["p90_s"]
        assert min(s) <= b["median_s"] <= max(s)
        srt = sorted(s)
        n = len(srt)
        med = srt[n // 2] if n % 2 else (srt[n // 2 - 1] + srt[n // 2]) / 2
        assert math.isclose(med, b["median_s"], rel_tol=1e-6, abs_tol=1e-9)
        if b["kind"].startswith("e2e_"):
            assert b["tokens_per_s"] > 0
            for k in MODEL_REQUIRED:
                assert k in b["model"], k


def schema_check(doc: dict) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)


def run_harness(tmp_path: Path, *args: str, timeout: int = 300) -> dict:
    out = tmp_path / "out.json"
    r = subprocess.run([PY, str(HARNESS), "--out", str(out), *args], capture_output=True, text=True,
                       timeout=timeout, cwd=str(HERE))
    assert r.returncode == 0, f"harness failed ({r.returncode}):\n{r.stderr[-4000:]}"
    assert "[harness r0" in r.stderr  # progress goes to stderr
    assert r.stdout == ""
    doc = json.loads(out.read_text())
    assert not list(tmp_path.glob(".out.json.*")), "temporary file left behind"
    return doc


def free_port_block(n: int = 4) -> int:
    """A starting port with n free consecutive ports (best effort)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + n >= 65535:
            continue
        ok = True
        for p in range(base, base + n):
            with socket.socket() as t:
                try:
                    t.bind(("127.0.0.1", p))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    return 32323


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
    # 3 model shapes x bits {4, 8}, plus the e2e model's 6 per-rank shapes at M=1 and, but for
    # the LM head (last position only), at the e2e prompt length (its prefill chunk)
    assert len(qmm) == 3 * 2 + 6 + 5
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
        # packed weights + fp scales/biases per group of 64
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
    assert set(e2e) == {"e2e_decode", "e2e_prefill", "pace"}  # the "e2e" group includes the pace probe
    m = e2e["e2e_decode"]["model"]
    assert (m["layers"], m["hidden"], m["heads"], m["kv_heads"], m["ffn"], m["vocab"], m["bits"],
            m["group_size"], m["ranks"]) == (2, 256, 4, 2, 512, 1024, 4, 64, 1)
    assert m["head_dim"] == 64
    assert len(e2e["e2e_decode"]["samples_s"]) == 4
    assert e2e["e2e_prefill"]["params"]["prompt_tokens"] == 16
    # three rounds (the default) of three prefills and decode windows each: the decode reports its best
    # window's median step
    dec = e2e["e2e_decode"]
    assert doc["rounds"] == 3 and len(dec["rounds"]) == 9 and len(e2e["e2e_prefill"]["rounds"]) == 9
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


@pytest.mark.skipif(not EXAMPLE.exists(), reason="no example measurement committed")
def test_committed_example_is_valid():
    doc = json.loads(EXAMPLE.read_text())
    plain_check(doc)
    schema_check(doc)
    assert EXAMPLE.stat().st_size < 400_000


def test_merge_rounds_keeps_every_round_and_reports_the_best():
    sys.path.insert(0, str(HERE))
    try:
        import harness
    finally:
        sys.path.pop(0)

    def rec(kind, rnd, samples, params=None, **extra):
        e = {"kind": kind, "params": dict(params or {"M": 1}), "bytes": 8, "flops": 2.0, "round": rnd}
        e.update(harness.stats(samples))
        e.update(extra)
        return e
    results = [
        rec("pace", 0, [1.0], {"at": "before qmm"}),
        rec("qmm", 0, [3.0, 3.2], {"M": 1, "inner": 4}, per_rank_median_s=[3.1, 2.0]),
        rec("qmm", 0, [5.0], {"M": 8, "inner": 1}),
        rec("pace", 1, [1.5], {"at": "before qmm"}),
        # round 1 is faster on rank 0 but its slowest rank is slower: round 0 is the best
        rec("qmm", 1, [2.0, 2.2], {"M": 1, "inner": 6}, per_rank_median_s=[2.1, 3.5]),
        rec("qmm", 1, [4.0], {"M": 8, "inner": 1}),
        rec("e2e_decode", 0, [0.2, 0.2], {"gen_tokens": 2}, tokens_per_s=5.0),
        rec("e2e_decode", 1, [0.1, 0.1], {"gen_tokens": 2}, tokens_per_s=10.0),
    ]
    out = harness.merge_rounds(results)
    assert [b["kind"] for b in out] == ["pace", "qmm", "qmm", "pace", "e2e_decode"]
    m1, m8, dec = out[1], out[2], out[4]
    assert m1["best_round"] == 0 and m1["median_s"] == 3.1 and m1["params"]["inner"] == 4
    assert [r["round"] for r in m1["rounds"]] == [0, 1] and m1["rounds"][1]["samples_s"] == [2.0, 2.2]
    assert m1["all_rounds"]["n"] == 4 and "round" not in m1
    assert m8["best_round"] == 1 and m8["median_s"] == 4.0
    assert dec["best_round"] == 1 and dec["tokens_per_s"] == 10.0
    assert math.isclose(dec["all_rounds"]["tokens_per_s_mean"], 4 / 0.6)
    # one round: the records pass through
    assert harness.merge_rounds(results[:3]) == results[:3]


def test_percentile_and_atomic_write(tmp_path):
    sys.path.insert(0, str(HERE))
    try:
        import harness
    finally:
        sys.path.pop(0)
    assert harness.percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert math.isclose(harness.percentile([0.0, 10.0], 10), 1.0)
    st = harness.stats([3.0, 1.0, 2.0])
    assert (st["median_s"], st["p10_s"], st["p90_s"], st["samples_s"]) == (2.0, 1.2, 2.8, [3.0, 1.0, 2.0])
    target = tmp_path / "sub" / "f.json"
    harness.write_atomic(target, {"a": 1})
    assert json.loads(target.read_text()) == {"a": 1}
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask
    assert [p.name for p in target.parent.iterdir()] == ["f.json"]
    assert harness.sanitize({"x": [float("nan"), 1.0]}) == {"x": [None, 1.0]}
