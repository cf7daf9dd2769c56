"""The software a run's figures were made with, for results.json: python, torch, transformers, accelerate,
ctranslate2 (when the run loaded it), this framework's version and the git revision of its code (when it runs from
a git checkout). Standard library only (utils is the lowest layer): versions are read from the installed packages'
metadata, never by importing them.
"""
from __future__ import annotations

import importlib.metadata
import platform
import subprocess
import sys
from pathlib import Path

from textbox import __version__

_PACKAGES = ("torch", "transformers", "accelerate", "datasets", "tokenizers", "peft")


def software_versions() -> dict[str, object]:
    """{'python': '3.11.9', 'torch': ..., 'textbox': '0.1.0', 'git_revision': '<sha>', 'git_dirty': False}; a
    package that is not installed is left out, as is ctranslate2 unless this process loaded it."""
    versions: dict[str, object] = {"python": platform.python_version()}
    names = [*_PACKAGES, *(("ctranslate2",) if "ctranslate2" in sys.modules else ())]
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    versions["textbox"] = __version__
    versions.update(_git_state(Path(__file__).resolve().parents[2]))
    return versions


def _git_state(root: Path) -> dict[str, object]:
    """The revision of the checkout holding this code and whether its tracked files differ from it; {} when the
    code is not in a git checkout (an installed package) or git is missing."""
    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)

    try:
        revision = git("rev-parse", "HEAD")
        if revision.returncode != 0 or not (root / "textbox").is_dir():
            return {}
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return {}
    return {"git_revision": revision.stdout.strip(), "git_dirty": bool(dirty.stdout.strip())}
