"""The layering contract in pyproject.toml holds: no upward import, no cycle (import-linter, the tool made for it)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_import_linter_contracts_are_kept() -> None:
    linter = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(linter), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
                            cwd=ROOT, capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
