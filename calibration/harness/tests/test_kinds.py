"""The measurement kinds: one Python definition, checked against schema.json."""

from __future__ import annotations

import argparse

import pytest
from checks import SCHEMA, SCHEMA_KINDS

from supernode_harness.kinds import GROUPS, KINDS, SCHEMA_VERSION, TOOL, parse_only


def test_kinds_are_the_schemas_kinds():
    # schema.json is the shared reference (the Rust side is checked against it too); KINDS's
    # order is the harness's own (the order `only` is reported in), so compare as sets
    assert len(set(KINDS)) == len(KINDS), "a kind is listed twice"
    assert len(set(SCHEMA_KINDS)) == len(SCHEMA_KINDS), "schema.json lists a kind twice"
    assert set(KINDS) == set(SCHEMA_KINDS), (
        f"only in Python: {sorted(set(KINDS) - set(SCHEMA_KINDS))}; "
        f"only in schema.json: {sorted(set(SCHEMA_KINDS) - set(KINDS))}")


def test_schema_version_and_tool_match_the_schema():
    assert SCHEMA["properties"]["schema_version"]["const"] == SCHEMA_VERSION
    assert SCHEMA["properties"]["tool"]["const"] == TOOL


def test_groups_name_only_kinds():
    for name, kinds in GROUPS.items():
        assert name not in KINDS
        assert set(kinds) <= set(KINDS), name
    assert GROUPS["all"] == list(KINDS)


def test_parse_only_expands_groups_and_rejects_unknown_names():
    assert parse_only(None) is None and parse_only("") is None
    assert parse_only("qmm, sync,,") == ["qmm", "sync"]
    assert parse_only("e2e") == ["e2e_decode", "e2e_prefill", "e2e_decode_batch", "pace"]
    with pytest.raises(argparse.ArgumentTypeError, match="bogus"):
        parse_only("qmm,bogus")
