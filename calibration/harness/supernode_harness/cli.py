"""The command line and the order of a run: sync, the e2e model, then `--rounds` passes over
the case groups with the e2e prefill and decode between them; rank 0 writes the file."""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
import time
from pathlib import Path

from .kinds import GROUPS, KINDS, SCHEMA_VERSION, TOOL, parse_only
from .log import log, set_verbose
from .output import default_out, sanitize, write_atomic
from .stats import merge_rounds


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="supernode calibration harness (MLX)")
    p.add_argument("--out", type=Path, default=None,
                   help="output JSON (default calibration/measurements/harness-<host>-<date>.json)")
    p.add_argument("--quick", action="store_true", help="small sizes, few repeats (CI; < 2 min on 2 cores)")
    p.add_argument("--only", type=parse_only, default=None,
                   help="comma list of kinds/groups to run: " + ",".join(KINDS) + " | " + ",".join(GROUPS))
    p.add_argument("--backend", default="auto",
                   help="mx.distributed backend: auto (from mlx.launch env), ring, jaccl, mpi, nccl, none")
    p.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto")
    p.add_argument("--dtype", choices=["auto", "float32", "float16", "bfloat16"], default="auto",
                   help="activation / scale dtype (auto: bfloat16 on GPU, float32 on CPU)")
    p.add_argument("--coll-dtype", choices=["float32", "float16", "bfloat16"], default="bfloat16",
                   help="dtype of collective payloads (exo sends bf16 activations)")
    p.add_argument("--max-coll-bytes", type=int, default=None,
                   help="largest collective message (default 256 MiB, 4 MiB with --quick)")
    p.add_argument("--qmm-m", type=lambda v: [int(x) for x in v.split(",") if x], default=None,
                   help="token counts M for the qmm cases (default 1,4,8,32; 1,8 with --quick)")
    p.add_argument("--gather-m", type=lambda v: [int(x) for x in v.split(",") if x], default=None,
                   help="batch sizes M (tokens) for the gather_qmm cases (default 1,2,4,8,16,32)")
    p.add_argument("--qmm-working-set", type=int, default=64 << 20,
                   help="bytes of weight copies qmm cycles through (default 64 MiB: beyond a core's private cache)")
    p.add_argument("--membw-bytes", type=int, default=None, help="array size for membw (default 1 GiB / 256 MiB quick)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up calls per case (default 3, 1 quick)")
    p.add_argument("--repeats", type=int, default=None, help="minimum timed samples per case (default 10, 3 quick)")
    p.add_argument("--model-config", type=str, default=None,
                   help="JSON (HF config.json style keys) overriding the e2e model config")
    p.add_argument("--prompt-tokens", type=int, default=None, help="e2e prompt length (default 512, 32 quick)")
    p.add_argument("--gen-tokens", type=int, default=None,
                   help="e2e tokens per decode window (default 64, 16 quick; three windows per round)")
    p.add_argument("--batch-sizes", type=lambda v: [int(x) for x in v.split(",") if x], default=None,
                   help="sequences per forward of the batched e2e decode (default 1,2,4,8)")
    p.add_argument("--batch-gen-tokens", type=int, default=None,
                   help="steps of each batched e2e decode (default 32, 4 quick; once per round)")
    p.add_argument("--pin", choices=["auto", "on", "off"], default="auto",
                   help="pin each rank to its own CPUs (auto: Linux ring whose ranks are all on loopback)")
    p.add_argument("--rounds", type=int, default=3,
                   help="passes over all cases, spread over the run; each case reports its best round (default 3)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--verbose", action="store_true", help="progress from every rank")
    return p


def schedule():
    """One round: (name, benchmark) in order; the e2e window runs three times, between groups,
    the batched e2e decode once, last.
    A pace probe runs before each ("before <name>", "before e2e" for the windows)."""
    from .bench.chains import bench_op_chain, bench_segment_chain
    from .bench.collectives import bench_collectives
    from .bench.memory import bench_matmul_peak, bench_membw
    from .bench.qmm import bench_gather_qmm, bench_qmm, bench_qmm_e2e_shapes
    from .bench.sdpa import bench_sdpa
    from .e2e.run import e2e_batch, e2e_window

    return [("membw", bench_membw), ("matmul_peak", bench_matmul_peak), ("qmm", bench_qmm),
            ("gather_qmm", bench_gather_qmm), ("sdpa", bench_sdpa), ("e2e_window", e2e_window),
            ("collectives", bench_collectives), ("op_chain", bench_op_chain),
            ("segment_chain", bench_segment_chain), ("e2e_window", e2e_window),
            ("qmm_e2e_shapes", bench_qmm_e2e_shapes), ("e2e_window", e2e_window), ("e2e_batch", e2e_batch)]


def run_rounds(ctx) -> None:
    """Every round over the schedule, with the pace probes; logs the wall time per group."""
    from .bench.pace import pace

    spent: dict[str, float] = {}  # wall time per group, over all rounds
    for r in range(ctx.rounds):
        ctx.round = r
        if ctx.rounds > 1:
            log(f"round {r + 1} of {ctx.rounds}")
        for name, bench in schedule():
            t0 = time.perf_counter()
            pace(ctx, "before " + ("e2e" if name in ("e2e_window", "e2e_batch") else name))
            bench(ctx)
            spent[name] = spent.get(name, 0.0) + time.perf_counter() - t0
        pace(ctx, "after e2e")
    ctx.barrier()
    log("wall time per group: " + ", ".join(f"{k} {v:.1f} s" for k, v in spent.items()))


TIMING_NOTE = {
    "clock": "time.perf_counter around mx.eval",
    "samples": "seconds per call; a sample of `inner` back-to-back calls is divided by inner",
    "ranks": "every rank runs every case at the same time; samples are rank 0's, "
             "per_rank_median_s has each rank's median",
    "rounds": "every case runs once per round (the e2e prefill and decode three times per "
              "round, between case groups, pooled per round); a case's headline statistics are its "
              "best round's (slowest rank fastest; highest tokens/s for e2e), `rounds` has each "
              "round's and `all_rounds` the pooled statistics",
}


def build_doc(ctx, args, started: _dt.datetime, elapsed: float, hosts, affinity, results) -> dict:
    """The file (schema.json), from rank 0's view of the run."""
    import mlx.core as mx

    from .machine import machine_info, mlx_env
    from .mlxutil import dtype_name

    mach = machine_info()
    b = ctx.budget
    timing = {"clock": TIMING_NOTE["clock"], "samples": TIMING_NOTE["samples"], "warmup": b.warmup,
              "min_repeats": b.min_reps, "max_repeats": b.max_reps, "ranks": TIMING_NOTE["ranks"],
              "rounds": TIMING_NOTE["rounds"]}
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": TOOL,
        "created": started.isoformat(timespec="seconds"),
        "elapsed_s": round(elapsed, 3),
        "machine": mach,
        "hosts": hosts or [mach["hostname"]],
        "cpu_affinity": affinity if ctx.group is not None else ctx.cpu_affinity,
        "launcher": ctx.launcher,
        "mlx_version": mx.__version__,
        "backend": ctx.backend,
        "world_size": ctx.size,
        "rank": ctx.rank,
        "device": ctx.device,
        "dtype": dtype_name(ctx.dtype),
        "quick": bool(ctx.quick),
        "only": sorted(ctx.only, key=KINDS.index) if args.only else None,
        "seed": args.seed,
        "argv": sys.argv[1:],
        "env": mlx_env(),
        "power": ctx.power_info,
        "timing": timing,
        "rounds": ctx.rounds,
        "benchmarks": results,
    }


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    set_verbose(args.verbose)
    import mlx.core as mx

    from .bench.sync import bench_sync
    from .context import Context
    from .e2e.run import e2e_setup
    from .mlxutil import dtype_name
    from .power import power_info

    started = _dt.datetime.now(_dt.timezone.utc)
    t_start = time.perf_counter()
    ctx = Context(args)
    log(f"mlx {mx.__version__}, backend {ctx.backend}, world {ctx.size}, device {ctx.device}, "
        f"dtype {dtype_name(ctx.dtype)}, quick={ctx.quick}")
    ctx.power_info = power_info(ctx.rank)
    affinity = ctx.gather_affinity()  # cpu affinity of every rank, for the record
    hosts = ctx.gather_hosts()

    bench_sync(ctx)
    e2e_setup(ctx)
    run_rounds(ctx)
    ctx.e2e = None
    ctx.e2e_pipe = None
    results = merge_rounds(ctx.results)

    elapsed = time.perf_counter() - t_start
    if ctx.rank == 0:
        doc = build_doc(ctx, args, started, elapsed, hosts, affinity, results)
        out = args.out or default_out(doc["machine"]["hostname"])
        write_atomic(out, sanitize(doc))
        log(f"wrote {out} ({len(results)} benchmarks, {ctx.rounds} round(s)) in {elapsed:.1f} s")
    return 0
