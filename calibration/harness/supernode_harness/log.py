"""Progress lines on stderr, prefixed with the rank and the time since start."""

from __future__ import annotations

import sys
import time

_T0 = time.perf_counter()
_state = {"rank": 0, "verbose": False}


def set_rank(rank: int) -> None:
    _state["rank"] = rank


def set_verbose(verbose: bool) -> None:
    _state["verbose"] = verbose


def log(msg: str, all_ranks: bool = False) -> None:
    """Progress line on stderr (rank 0 only unless all_ranks or --verbose)."""
    rank = _state["rank"]
    if rank == 0 or all_ranks or _state["verbose"]:
        el = time.perf_counter() - _T0
        print(f"[harness r{rank} {el:7.1f}s] {msg}", file=sys.stderr, flush=True)


def human_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:g} {unit}"
        n /= 1024
    return f"{n:g} GiB"
