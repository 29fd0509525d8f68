"""What the file records about rank 0's machine and the MLX environment."""

from __future__ import annotations

import json
import os
import platform
import socket
import subprocess
from pathlib import Path


def run_quiet(cmd: list[str]) -> str | None:
    """A command's stripped stdout, None when it fails or is missing."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=5)
        if out.returncode == 0:
            return out.stdout.strip()
    except Exception:
        pass
    return None


def _first_line_value(path: str, prefix: str) -> str | None:
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(prefix):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _linux_info(info: dict) -> None:
    cpu = _first_line_value("/proc/cpuinfo", "model name")
    if cpu is not None:
        info["cpu"] = cpu
    mem = _first_line_value("/proc/meminfo", "MemTotal:")
    if mem is not None:
        info["ram_bytes"] = int(mem.split()[0]) * 1024
    try:
        info["os_version"] = platform.freedesktop_os_release().get("PRETTY_NAME")
    except Exception:
        pass
    try:
        info["cores_available"] = len(os.sched_getaffinity(0))
    except Exception:
        pass


def _darwin_info(info: dict) -> None:
    info["os_version"] = "macOS " + platform.mac_ver()[0]
    info["cpu"] = run_quiet(["sysctl", "-n", "machdep.cpu.brand_string"]) or info["cpu"]
    mem = run_quiet(["sysctl", "-n", "hw.memsize"])
    if mem and mem.isdigit():
        info["ram_bytes"] = int(mem)
    model = run_quiet(["sysctl", "-n", "hw.model"])
    if model:
        info["model"] = model
    for key, name in (("hw.perflevel0.physicalcpu", "p_cores"), ("hw.perflevel1.physicalcpu", "e_cores")):
        v = run_quiet(["sysctl", "-n", key])
        if v and v.isdigit():
            info[name] = int(v)
    wired = run_quiet(["sysctl", "-n", "iogpu.wired_limit_mb"])
    if wired is not None:
        info["iogpu_wired_limit_mb"] = wired


def _gpu_info(info: dict) -> None:
    try:
        import mlx.core as mx

        if mx.metal.is_available():
            di = (getattr(mx, "device_info", None) or mx.metal.device_info)()
            info["gpu"] = {k: (v if isinstance(v, (int, float, str, bool)) else str(v)) for k, v in di.items()}
    except Exception:
        pass


def machine_info() -> dict:
    """The `machine` object of the file (schema: hostname, os, platform, cpu, cores, ram_bytes...)."""
    system = platform.system()
    info: dict = {
        "hostname": socket.gethostname(),
        "os": system,
        "os_release": platform.release(),
        "platform": platform.platform(),
        "arch": platform.machine(),
        "python": platform.python_version(),
        "cores": os.cpu_count(),
        "cpu": platform.processor() or None,
        "ram_bytes": None,
    }
    if system == "Linux":
        _linux_info(info)
    elif system == "Darwin":
        _darwin_info(info)
    _gpu_info(info)
    return info


def mlx_env() -> dict:
    """The MLX_* environment variables that shape a run (hostfiles read in)."""
    keep = (
        "MLX_METAL_FAST_SYNCH",
        "MLX_RANK",
        "MLX_WORLD_SIZE",
        "MLX_JACCL_COORDINATOR",
        "MLX_JACCL_RING",
        "MLX_RING_VERBOSE",
        "MLX_MAX_OPS_PER_BUFFER",
        "MLX_MAX_MB_PER_BUFFER",
    )
    env = {k: os.environ[k] for k in keep if k in os.environ}
    for k in ("MLX_HOSTFILE", "MLX_IBV_DEVICES"):
        if k in os.environ:
            try:
                env[k] = json.loads(Path(os.environ[k]).read_text() or "null")
            except Exception:
                env[k] = "(set)"
    return env
