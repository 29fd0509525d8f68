#!/usr/bin/env python3
"""supernode calibration harness: the command-line entry point.

Times the MLX kernels and collectives that exo / mlx-lm run (quantized matmul,
MoE gather_qmm, SDPA, all_sum / all_gather / send-recv, GPU<->CPU sync, memory
bandwidth, peak matmul) plus an end-to-end tensor-parallel decode and prefill
of a small llama-like model with random 4-bit weights, and writes ONE JSON file
(rank 0 only, atomically) that `supernode calibrate` fits the twin to.

Run it directly (one rank) or under mlx.launch, e.g. on one Linux box:

    .venv/bin/mlx.launch --backend ring -n 2 --python .venv/bin/python harness.py --quick

`python -m supernode_harness` (from this folder) is the same command. The code lives in the
package `supernode_harness/` beside this file; see README.md.
"""

import sys

from supernode_harness.cli import main

if __name__ == "__main__":
    sys.exit(main())
