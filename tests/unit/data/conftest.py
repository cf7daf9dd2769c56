"""A tiny fake standard library for the pydoc builder: known functions, one per rule they exercise."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

FAKE_MODULES = {
    # split_of: numbers -> train, omega -> valid, strings -> test
    "numbers.py": '''
        def add(a, b):
            """Return the sum of a and b.  Works for any numbers.

            More details here.
            """
            total = a + b
            return total

        def short():
            """Too short."""
            return 1

        def only_doc():
            """This function has only a docstring."""

        class Counter:
            def increment(self, step=1):
                """Increase the counter by step."""
                self.value += step
                return self.value
        ''',
    "omega.py": '''
        async def fetch(url):
            """Fetch the page at url. Returns bytes."""
            data = await get(url)
            return data

        def huge():
            """Return a very long list of numbers."""
            return [''' + ", ".join(str(i) for i in range(600)) + ''']
        ''',
    "strings.py": '''
        def shout(text):
            """Upper-case the text
            and add an exclamation mark.

            Second paragraph.
            """
            return text.upper() + '!'

        def add(a, b):
            """A duplicate of numbers.add: identical code is kept once."""
            total = a + b
            return total
        ''',
    "broken.py": "def oops(:\n",
    "pkg/__init__.py": "",
    "pkg/sub.py": "VALUE = 1\n",
    "test/test_numbers.py": 'def test_add():\n    """Check that add adds numbers."""\n    assert True\n',
    "site-packages/extra.py": 'def extra():\n    """Installed code is not the standard library."""\n    return 0\n',
}


@pytest.fixture
def fake_stdlib(tmp_path: Path) -> Path:
    root = tmp_path / "fake_stdlib"
    for relative, code in FAKE_MODULES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code).lstrip("\n"))
    return root


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A minimal plain dataset directory (one example per split)."""
    path = tmp_path / "toy"
    path.mkdir()
    for split in ("train", "valid", "test"):
        (path / f"{split}.src").write_text("a b\n")
        (path / f"{split}.tgt").write_text("c d\n")
    return path
