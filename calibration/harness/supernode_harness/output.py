"""Writing the result file: default path, atomic write, JSON sanitising (pure: no MLX)."""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import tempfile
from pathlib import Path

# calibration/measurements, beside this package's calibration/harness
MEASUREMENTS = Path(__file__).resolve().parent.parent.parent / "measurements"


def default_out(host: str, now: _dt.datetime | None = None) -> Path:
    """calibration/measurements/harness-<host>-<UTC time>.json"""
    now = now or _dt.datetime.now(_dt.timezone.utc)
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in host)
    return MEASUREMENTS / f"harness-{safe}-{stamp}.json"


def write_atomic(path: Path, doc: dict) -> None:
    """Write `doc` as JSON through a temporary file in the same folder and a rename; the file
    gets the mode a plain open() would give it (umask applied)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=str(path.parent))
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a measurement file is shared
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=False, allow_nan=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def sanitize(o):
    """Replace NaN/inf (JSON has none) with None."""
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, dict):
        return {k: sanitize(v) for k, v in o.items()}
    if isinstance(o, list):
        return [sanitize(v) for v in o]
    return o
