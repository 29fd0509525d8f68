"""The package's shape: pure modules import without MLX, functions and classes stay small,
harness.py stays a thin entry point."""

from __future__ import annotations

import ast
import subprocess

from checks import HARNESS, HERE, PY

PACKAGE = HERE / "supernode_harness"
PURE = ["kinds", "stats", "timing", "config", "output", "log", "placement", "machine", "power", "e2e.describe"]


def test_pure_modules_import_without_mlx():
    code = ("import sys; sys.modules['mlx'] = None\n"  # any `import mlx...` now fails
            + "".join(f"import supernode_harness.{m}\n" for m in PURE)
            + "assert not [m for m, v in sys.modules.items() if m.startswith('mlx') and v is not None]\n")
    r = subprocess.run([PY, "-c", code], capture_output=True, text=True, cwd=str(HERE), timeout=60)
    assert r.returncode == 0, r.stderr


def test_no_function_over_120_lines_and_no_class_over_300():
    too_long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            limit = {ast.FunctionDef: 120, ast.ClassDef: 300}.get(type(node))
            if limit and node.end_lineno - node.lineno + 1 > limit:
                too_long.append(f"{path.relative_to(HERE)}:{node.lineno} {node.name}")
    assert not too_long, too_long


def test_harness_py_is_a_thin_entry_point():
    tree = ast.parse(HARNESS.read_text())
    assert not [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    assert len(HARNESS.read_text().splitlines()) < 40
