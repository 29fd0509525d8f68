"""Where the ranks run: which distributed backend to start, pinning the ranks of one box to
their own CPUs, and keeping mlx.launch's relay threads off them (pure: no MLX)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from .log import log


def detect_backend(requested: str) -> str | None:
    """Which mx.distributed backend to init, or None for a single process."""
    if requested == "none":
        return None
    if requested == "jaccl-ring":
        return "jaccl"  # the ring variant of JACCL is chosen by MLX_JACCL_RING=1
    if requested != "auto":
        return requested
    if "MLX_JACCL_COORDINATOR" in os.environ or "MLX_IBV_DEVICES" in os.environ:
        return "jaccl"
    if "MLX_HOSTFILE" in os.environ:
        return "ring"
    if "OMPI_COMM_WORLD_SIZE" in os.environ or "PMI_SIZE" in os.environ:
        return "mpi"
    if "NCCL_HOST_IP" in os.environ:
        return "nccl"
    return None


def loopback_ring_ranks() -> int | None:
    """Number of ranks when mlx.launch started a ring whose hosts are all loopback
    addresses (all ranks on this machine), else None."""
    path = os.environ.get("MLX_HOSTFILE")
    if not path:
        return None
    try:
        hosts = json.loads(Path(path).read_text() or "null")
        addrs = [a.rsplit(":", 1)[0] for node in hosts for a in node]
    except Exception:
        return None
    if hosts and all(a.startswith("127.") or a in ("localhost", "[::1]", "::1") for a in addrs):
        return len(hosts)
    return None


def pin_rank(rank: int, local_ranks: int) -> list[int] | None:
    """Pin every thread of this process to its own slice of the CPUs.

    Several ranks on one box otherwise share all cores, and the ring backend
    busy-polls while it waits: a waiting rank's spinning threads then steal the
    CPU from the rank that is still computing, and each all_sum inside a forward
    pass costs milliseconds (measured: 36 ms/token instead of 3 ms for a tiny
    2-layer model). Separate cores is what separate machines look like."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    per = len(cpus) // max(1, local_ranks)
    if per < 1:
        log(f"not pinning: {local_ranks} ranks share {len(cpus)} cpus", all_ranks=True)
        return None
    mine = set(cpus[rank * per:(rank + 1) * per])
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), mine)
        except OSError:
            pass
    return sorted(mine)


def quiet_launcher() -> str | None:
    """Put the process that started this rank, when it is MLX's launcher, at
    idle CPU priority. `mlx.launch` (0.32) relays each rank's stdin/stdout in a
    thread per rank that select()s on the rank's stdin pipe, which is always
    writable, so the threads spin: on a 2-core box the launcher took 75-88% of a
    core from the ranks and rank 0's kernels ran up to 1.7x slower than rank
    1's. Every thread of the launcher gets SCHED_IDLE (runs only when a core has
    nothing else to do) and niceness 19; on Linux both are per thread, and
    lowering the priority of one's own process needs no privileges."""
    ppid = os.getppid()
    try:
        cmdline = Path(f"/proc/{ppid}/cmdline").read_bytes().split(b"\0")
        tids = [int(t) for t in os.listdir(f"/proc/{ppid}/task")]
    except OSError:
        return None
    if not any(b"mlx.launch" in a or b"distributed_run" in a for a in cmdline):
        return None
    done = 0
    for tid in tids:
        try:
            os.setpriority(os.PRIO_PROCESS, tid, 19)
            if hasattr(os, "sched_setscheduler"):
                os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
            done += 1
        except (OSError, AttributeError):
            pass
    return f"launcher pid {ppid}: {done} of {len(tids)} threads at idle priority" if done else None
