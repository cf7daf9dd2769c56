"""A tiny fake standard library (and one fake installed package) for the pydoc builder: known functions, one per
rule they exercise."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from textbox.data.pydoc import Root

FAKE_MODULES = {
    # split_of: numbers:* -> train, words:fetch -> valid, strings:shout -> test
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

        def link(a):
            """Join :func:`~os.path.join` and ``a`` paths."""
            return a

        def params(x):
            """Parameters
            ----------
            x : int
            """
            return x

        def google(x):
            """Args: x the value."""
            return x

        class Counter:
            def increment(self, step=1):
                """Increase the counter by step."""
                self.value += step
                return self.value

            def reset(self):
                """Set the counter back to zero."""
                self.value = 0
        ''',
    "words.py": '''
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

FAKE_PACKAGE = {
    "__init__.py": 'def helper(x):\n    """Help with x, always."""\n    return x\n',
    "core.py": 'class Reader:\n    def read(self):\n        """Read the whole stream."""\n        return self.data\n',
    "testing/tools.py": 'def check():\n    """Check the package in tests."""\n    return True\n',
}


def _write(root: Path, files: dict[str, str]) -> Path:
    for relative, code in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code).lstrip("\n"))
    return root


@pytest.fixture
def fake_stdlib(tmp_path: Path) -> Path:
    return _write(tmp_path / "fake_stdlib", FAKE_MODULES)


@pytest.fixture
def fake_roots(fake_stdlib: Path) -> list[Root]:
    """What the builder reads in these tests: the fake standard library alone."""
    return [Root("", fake_stdlib)]


@pytest.fixture
def fake_package(tmp_path: Path) -> Root:
    return Root("fakepkg", _write(tmp_path / "fakepkg", FAKE_PACKAGE))
