"""Power draw from `powermetrics` (macOS, root only): idle and during the e2e decode."""

from __future__ import annotations

import os
import platform
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from .stats import percentile


class PowerSampler:
    """Runs `powermetrics` in the background and parses its power lines (mW)."""

    KEYS = {"CPU Power": "cpu_w", "GPU Power": "gpu_w", "ANE Power": "ane_w",
            "Combined Power (CPU + GPU + ANE)": "combined_w"}

    def __init__(self, interval_ms: int = 250):
        self.interval_ms = interval_ms
        self.proc = None
        self.path = None

    def start(self) -> None:
        fd, self.path = tempfile.mkstemp(prefix="harness-power-", suffix=".txt")
        os.close(fd)
        self.proc = subprocess.Popen(
            ["powermetrics", "--samplers", "cpu_power,gpu_power", "-i", str(self.interval_ms), "-o", self.path],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self) -> dict:
        if self.proc is None:
            return {}
        time.sleep(self.interval_ms / 1000.0 * 1.5)
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        try:
            series = parse_powermetrics(Path(self.path).read_text(errors="replace"), self.KEYS)
        finally:
            try:
                os.unlink(self.path)
            except OSError:
                pass
        out = {"interval_ms": self.interval_ms}
        for name, vals in series.items():
            if vals:
                s = sorted(vals)
                out[name] = {"median": percentile(s, 50), "p10": percentile(s, 10), "p90": percentile(s, 90),
                             "n": len(s)}
        return out


def parse_powermetrics(text: str, keys: dict[str, str]) -> dict[str, list[float]]:
    """Watts per sample of each `keys` line (`CPU Power: 1234 mW`) in powermetrics' output."""
    series: dict[str, list[float]] = {v: [] for v in keys.values()}
    for line in text.splitlines():
        for key, name in keys.items():
            if line.startswith(key + ":") and line.rstrip().endswith("mW"):
                try:
                    series[name].append(float(line.split(":", 1)[1].split()[0]) / 1000.0)
                except ValueError:
                    pass
    return series


def power_info(rank: int) -> dict:
    """The file's `power` object: whether power is sampled (and why not), and the idle draw."""
    if platform.system() != "Darwin":
        return {"available": False, "reason": f"no power meter on {platform.system()} (powermetrics is macOS only)"}
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return {"available": False, "reason": "powermetrics needs root; run the harness with sudo to record power"}
    if shutil.which("powermetrics") is None:
        return {"available": False, "reason": "powermetrics not found"}
    if rank != 0:
        return {"available": False, "reason": "sampled on rank 0 only"}
    info = {"available": True, "tool": "powermetrics", "samplers": "cpu_power,gpu_power",
            "scope": "rank 0's machine only"}
    try:
        ps = PowerSampler()
        ps.start()
        time.sleep(2.0)
        info["idle"] = ps.stop()
    except Exception as ex:  # never let power sampling kill a run
        return {"available": False, "reason": f"powermetrics failed: {ex}"}
    return info
