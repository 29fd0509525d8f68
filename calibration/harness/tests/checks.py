"""What the tests share: the schema, checks of a harness file, running the harness."""

from __future__ import annotations

import json
import math
import socket
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent.parent  # calibration/harness
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
SCHEMA_KINDS = SCHEMA["$defs"]["kind"]["enum"]
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
        assert b["kind"] in SCHEMA_KINDS
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
    """Run harness.py (one rank) with `args`, check how it reports, return its file."""
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
