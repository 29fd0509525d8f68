"""The run's state: distributed group, device and dtype, timing budget, and the records."""

from __future__ import annotations

import os
import platform
import socket

import mlx.core as mx

from . import timing
from .kinds import KINDS
from .log import set_rank
from .mlxutil import dtype_from_name
from .placement import detect_backend, loopback_ring_ranks, pin_rank, quiet_launcher
from .stats import rnd, stats


class Context:
    """What every benchmark needs: the ranks, the device, the budget; `record` keeps results.

    Every rank runs every case at the same time; a record's samples are this rank's and
    `per_rank_median_s` has every rank's median."""

    def __init__(self, args):
        self.args = args
        self.quick = args.quick
        self._init_distributed(args.backend)
        set_rank(self.rank)
        self.cpu_affinity = None
        self.launcher = None
        local = loopback_ring_ranks()
        if args.pin == "on" or (args.pin == "auto" and local and self.size > 1 and platform.system() == "Linux"):
            self.cpu_affinity = pin_rank(self.rank if local is None else self.rank % local, local or self.size)
            self.launcher = quiet_launcher()
        self._init_device(args.device, args.dtype)
        self.only = set(args.only) if args.only else set(KINDS)
        self.qmm_working_set = args.qmm_working_set
        self.pace_state = None  # the pace probe's weights (bench.pace), made on first use
        self.e2e = None  # the e2e target (e2e.run.E2E), built once before the rounds
        self.e2e_pipe = None  # its pipeline-parallel twin (e2e.pipeline.PipelineE2E), 2+ ranks
        self.results: list[dict] = []
        self.round = 0  # which pass over the cases (--rounds); records are merged per case at the end
        self.rounds = max(1, args.rounds)
        self.sync_overhead_s: float | None = None
        self.power_info: dict = {}
        self.budget = timing.Budget.for_run(self.quick, self.rounds, args.warmup, args.repeats)
        mx.random.seed(args.seed)

    def _init_distributed(self, requested: str) -> None:
        backend = detect_backend(requested)
        if backend is None:
            self.group = None
            self.rank, self.size = 0, 1
            self.backend = "none"
            return
        self.group = mx.distributed.init(backend=backend, strict=True)
        self.rank, self.size = self.group.rank(), self.group.size()
        name = "jaccl-ring" if backend == "jaccl" and os.environ.get("MLX_JACCL_RING") else backend
        self.backend = name if self.size > 1 else "none"
        if self.size == 1:
            self.group = None

    def _init_device(self, device: str, dtype: str) -> None:
        if device == "cpu" or not mx.metal.is_available():
            mx.set_default_device(mx.cpu)
            self.device = "cpu"
        else:
            mx.set_default_device(mx.gpu)
            self.device = "gpu"
        if dtype == "auto":
            # The CPU kernels of mlx[cpu] are far slower in bf16 than in fp32
            # (qmm ~6x); models run bf16 on Metal.
            self.dtype = mx.bfloat16 if self.device == "gpu" else mx.float32
        else:
            self.dtype = dtype_from_name(dtype)

    # budget fields, as the benchmarks read them
    @property
    def warmup(self) -> int:
        return self.budget.warmup

    @property
    def min_reps(self) -> int:
        return self.budget.min_reps

    @property
    def max_reps(self) -> int:
        return self.budget.max_reps

    @property
    def case_budget_s(self) -> float:
        return self.budget.case_budget_s

    def wants(self, *kinds: str) -> bool:
        return any(k in self.only for k in kinds)

    def e2e_prompt_tokens(self) -> int:
        return self.args.prompt_tokens or (32 if self.quick else 512)

    # -- across ranks ------------------------------------------------------------
    def barrier(self) -> None:
        if self.group is not None:
            mx.eval(mx.distributed.all_sum(mx.zeros((1,), dtype=mx.float32), group=self.group, stream=mx.cpu))

    def gather_floats(self, vals: list[float]) -> list[list[float]] | None:
        """all_gather a short float vector from every rank (None when single rank)."""
        if self.group is None:
            return None
        a = mx.array(vals, dtype=mx.float32)
        g = mx.distributed.all_gather(a, group=self.group, stream=mx.cpu)
        mx.eval(g)
        flat = g.tolist()
        n = len(vals)
        return [flat[i * n:(i + 1) * n] for i in range(self.size)]

    def agree_int(self, v: int) -> int:
        """Max of an int over ranks, so every rank runs the same repeat count."""
        if self.group is None:
            return v
        g = mx.distributed.all_gather(mx.array([v], dtype=mx.int32), group=self.group, stream=mx.cpu)
        mx.eval(g)
        return int(max(g.tolist()))

    def gather_hosts(self) -> list[str] | None:
        """Every rank's hostname (None when single rank)."""
        if self.group is None:
            return None
        name = socket.gethostname().encode()[:63].ljust(64, b"\0")
        g = mx.distributed.all_gather(mx.array(list(name), dtype=mx.uint8), group=self.group, stream=mx.cpu)
        mx.eval(g)
        raw = bytes(g.tolist())
        return [raw[i * 64:(i + 1) * 64].rstrip(b"\0").decode(errors="replace") for i in range(self.size)]

    def gather_affinity(self) -> list[list[int] | None] | None:
        """Every rank's pinned CPUs (None for a rank not pinned; None when single rank)."""
        if self.group is None:
            return None
        aff = self.cpu_affinity or []
        width = self.agree_int(len(aff))
        rows = self.gather_floats([float(c) for c in aff] + [-1.0] * (width - len(aff))) if width else None
        return [[int(c) for c in row if c >= 0] or None for row in rows] if rows else None

    # -- timing and records --------------------------------------------------------
    def time_fn(self, fn, inner: int | None = None, reps: int | None = None, warmup: int | None = None,
                agree: bool = False) -> tuple[list[float], int]:
        """`timing.time_fn` with mx.eval and this run's budget; agree=True agrees the counts
        across ranks (collectives)."""
        return timing.time_fn(fn, mx.eval, self.budget, inner=inner, reps=reps, warmup=warmup,
                              agree=self.agree_int if agree else None, barrier=self.barrier)

    def record(self, kind: str, params: dict, bytes_: int | None, flops: float | None, samples: list[float],
               extra: dict | None = None, gather: bool = True) -> dict:
        """Keep one case's samples of this round as a record (with every rank's median)."""
        entry = {"kind": kind, "params": params, "bytes": bytes_, "flops": flops}
        entry.update(stats(samples))
        med = entry["median_s"]
        if bytes_ and med > 0:
            entry["bytes_per_s"] = rnd(bytes_ / med)
        if flops and med > 0:
            entry["flops_per_s"] = rnd(flops / med)
        if extra:
            entry.update(extra)
        if gather and self.group is not None:
            per_rank = self.gather_floats([entry["median_s"]])
            entry["per_rank_median_s"] = [rnd(r[0]) for r in per_rank]
        entry["round"] = self.round
        self.results.append(entry)
        return entry
