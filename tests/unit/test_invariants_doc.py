"""docs/invariants.md names the test that holds each invariant: every test it names must exist, or the page would
promise a guarantee nothing checks."""
from __future__ import annotations

import re

from tests.conftest import PROJECT_ROOT


def test_every_test_the_invariants_page_names_exists():
    page = (PROJECT_ROOT / "docs" / "invariants.md").read_text(encoding="utf-8")
    sources = {path: path.read_text(encoding="utf-8") for path in (PROJECT_ROOT / "tests").rglob("test_*.py")}
    named = re.findall(r"`(?:(tests/[\w/]+\.py))?::(test_\w+)`", page)
    assert len(named) > 20
    for path, name in named:
        files = [PROJECT_ROOT / path] if path else list(sources)
        assert any(re.search(rf"^def {name}\(", sources.get(file, ""), re.M) for file in files), (path, name)
    for path in re.findall(r"`(tests/[\w/]+(?:\.py)?)[`:]", page):
        assert (PROJECT_ROOT / path).exists(), path
