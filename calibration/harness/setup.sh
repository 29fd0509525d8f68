#!/usr/bin/env bash
# Create (or reuse) calibration/harness/.venv and install the pinned requirements.
#   bash calibration/harness/setup.sh            # idempotent
#   PYTHON=python3.12 bash calibration/harness/setup.sh
# On Linux this installs mlx[cpu] (CPU backend + ring over TCP); on macOS plain mlx
# (Metal + JACCL). See README.md.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="$HERE/.venv"
PY="${PYTHON:-python3}"

case "$(uname -s)" in
  Linux|Darwin) ;;
  *) echo "setup.sh: unsupported OS $(uname -s) (MLX runs on Linux and macOS)" >&2; exit 1 ;;
esac

if ! command -v "$PY" >/dev/null 2>&1; then
  echo "setup.sh: $PY not found; set PYTHON=/path/to/python3 (3.10+)" >&2
  exit 1
fi
"$PY" - <<'PYEOF'
import sys
if sys.version_info < (3, 10):
    sys.exit(f"setup.sh: Python 3.10+ needed, found {sys.version.split()[0]}")
PYEOF

if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import sys' >/dev/null 2>&1; then
  echo "setup.sh: reusing $VENV" >&2
else
  echo "setup.sh: creating $VENV with $("$PY" --version 2>&1)" >&2
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
fi

# Requirements use environment markers: mlx[cpu] on Linux, mlx on macOS.
"$VENV/bin/python" -m pip install --disable-pip-version-check -q -r "$HERE/requirements.txt"

"$VENV/bin/python" - <<'PYEOF'
import mlx.core as mx
dev = "gpu (Metal)" if mx.metal.is_available() else "cpu"
backends = [b for b in ("ring", "jaccl", "mpi", "nccl") if mx.distributed.is_available(b)]
print(f"setup.sh: mlx {mx.__version__}, device {dev}, distributed backends {backends}")
PYEOF
# The harness's package (supernode_harness/, beside harness.py) imports with this MLX.
(cd "$HERE" && "$VENV/bin/python" -c 'import supernode_harness.cli, supernode_harness.context, supernode_harness.e2e.run')
echo "setup.sh: done. Run: $VENV/bin/python $HERE/harness.py --quick" >&2
