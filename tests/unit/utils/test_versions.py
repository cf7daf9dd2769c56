"""results.json's versions: read from package metadata, ctranslate2 only when loaded, git only in a checkout."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import PROJECT_ROOT
from textbox.utils import versions


def test_versions_name_the_packages_and_this_code_revision(monkeypatch):
    monkeypatch.delitem(sys.modules, "ctranslate2", raising=False)
    found = versions.software_versions()
    assert {"python", "torch", "transformers", "accelerate", "textbox"} <= set(found) and "ctranslate2" not in found
    head = subprocess.run(["git", "-C", str(PROJECT_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    assert found["git_revision"] == head.stdout.strip()


def test_no_git_state_outside_a_checkout(tmp_path: Path):
    assert versions._git_state(tmp_path) == {}
