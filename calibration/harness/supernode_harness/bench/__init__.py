"""One module per benchmark family; each `bench_*` function takes the run's `Context`,
times its cases (when `--only` wants them) and records them."""
