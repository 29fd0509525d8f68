"""The measurement kinds a harness file can hold: the one Python definition.

`schema.json` (`$defs/kind`) is the shared reference; a test checks that `KINDS` and the
schema's enum hold the same kinds. The order here is the order `--only` reports them in."""

from __future__ import annotations

import argparse

SCHEMA_VERSION = 1
TOOL = "supernode-harness"

KINDS: tuple[str, ...] = (
    "sync",
    "membw",
    "matmul_peak",
    "qmm",
    "gather_qmm",
    "sdpa",
    "all_sum",
    "all_gather",
    "send_recv",
    "op_chain",
    "segment_chain",
    "pace",
    "e2e_decode",
    "e2e_prefill",
    "e2e_decode_batch",
)

# Names `--only` accepts besides the kinds.
GROUPS: dict[str, list[str]] = {
    "collectives": ["all_sum", "all_gather", "send_recv", "segment_chain"],
    "e2e": ["e2e_decode", "e2e_prefill", "e2e_decode_batch", "pace"],
    "kernels": ["qmm", "gather_qmm", "sdpa", "op_chain"],
    "all": list(KINDS),
}

E2E_KINDS = ("e2e_decode", "e2e_prefill", "e2e_decode_batch")


def parse_only(s: str | None) -> list[str] | None:
    """`--only`'s comma list of kinds and groups, expanded to kinds (None: everything)."""
    if not s:
        return None
    out: list[str] = []
    for part in s.split(","):
        part = part.strip()
        if not part:
            continue
        if part in GROUPS:
            out.extend(GROUPS[part])
        elif part in KINDS:
            out.append(part)
        else:
            raise argparse.ArgumentTypeError(
                f"unknown kind '{part}' in --only (kinds: {', '.join(KINDS)}; groups: {', '.join(GROUPS)})")
    return out
