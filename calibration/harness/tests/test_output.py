"""Writing the file (pure: no MLX)."""

from __future__ import annotations

import datetime as dt
import json
import os

import pytest

from supernode_harness.output import MEASUREMENTS, default_out, sanitize, write_atomic


def test_atomic_write_gives_the_umask_mode_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "sub" / "f.json"
    write_atomic(target, {"a": 1})
    assert json.loads(target.read_text()) == {"a": 1}
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask
    assert [p.name for p in target.parent.iterdir()] == ["f.json"]


def test_a_failed_write_keeps_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "f.json"
    write_atomic(target, {"a": 1})
    with pytest.raises(ValueError):
        write_atomic(target, {"a": float("nan")})  # JSON has no NaN: sanitize first
    assert json.loads(target.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]


def test_sanitize_replaces_non_finite_numbers():
    assert sanitize({"x": [float("nan"), 1.0, {"y": float("inf")}], "n": 3}) == {"x": [None, 1.0, {"y": None}], "n": 3}


def test_default_out_is_in_calibration_measurements():
    p = default_out("my host/1", dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc))
    assert p == MEASUREMENTS / "harness-my_host_1-20260102T030405Z.json"
    assert MEASUREMENTS.parent.name == "calibration" and (MEASUREMENTS.parent / "harness" / "harness.py").exists()
