"""supernode calibration harness.

Times, with MLX, the kernels and collectives that exo / mlx-lm run plus an end-to-end
tensor-parallel decode and prefill of a small llama-like model, and writes one JSON file
(schema: ../schema.json) that `supernode calibrate` fits the twin to.

Layout (modules marked pure import neither MLX nor anything outside the standard library):

- `kinds` (pure): the measurement kinds, the `--only` groups, the file's schema version.
- `stats` (pure): percentile, per-case statistics, merging the rounds of a case.
- `timing` (pure): the timing loop and its budgets; MLX's eval is passed in.
- `config` (pure): the e2e model's configuration and the per-rank shapes derived from it.
- `output` (pure): default output path, atomic write, NaN sanitising.
- `log` (pure): progress lines on stderr.
- `placement` (pure): distributed backend detection, CPU pinning, quietening mlx.launch.
- `machine`, `power`: what the file records about the machine and its power draw.
- `context`: the run's state (distributed group, device, dtype, budgets, records).
- `bench.*`: one module per benchmark family; `e2e.*`: the model and the end-to-end runs.
- `cli`: the command line and the order of the run.
"""
