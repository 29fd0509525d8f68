"""The end-to-end target: a llama-like model with random weights, tensor parallel as exo
shards it (`model`), what the file says about it (`describe`), and its timed runs (`run`)."""
