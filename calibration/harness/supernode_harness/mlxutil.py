"""Small MLX helpers: dtype names and the allocator cache."""

from __future__ import annotations

import mlx.core as mx

DTYPES = {"float32": mx.float32, "float16": mx.float16, "bfloat16": mx.bfloat16}


def dtype_name(dt) -> str:
    return str(dt).split(".")[-1]


def dtype_from_name(name: str):
    return DTYPES[name]


def clear_cache() -> None:
    fn = getattr(mx, "clear_cache", None) or getattr(mx.metal, "clear_cache", None)
    if fn is not None:
        fn()
