"""The shape the code keeps (issue 32's checks): a function of textbox/ reads on one screen. Read from the source
(ast), nothing imported."""
from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import PROJECT_ROOT

LONGEST_FUNCTION = 60  # lines, decorators and docstring included: a longer one is split by meaning


def function_lengths(root: Path) -> list[tuple[int, str]]:
    """(lines, "path:line name") of every function and method under ``root``."""
    lengths = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
                name = f"{path.relative_to(root)}:{node.lineno} {node.name}"
                lengths.append((node.end_lineno - first + 1, name))
    return lengths


def test_no_function_of_textbox_is_longer_than_a_screen():
    too_long = [f"{name} ({lines} lines)" for lines, name in function_lengths(PROJECT_ROOT / "textbox")
                if lines > LONGEST_FUNCTION]
    assert not too_long, f"split these by meaning (at most {LONGEST_FUNCTION} lines each): {too_long}"


def test_the_length_check_sees_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(LONGEST_FUNCTION))
    (tmp_path / "long.py").write_text(f"def long():\n{body}\n", encoding="utf-8")
    assert function_lengths(tmp_path) == [(LONGEST_FUNCTION + 1, "long.py:1 long")]
