"""--user_dir's import by path: a module or a package, once per process, and one sentence when it cannot be."""
from __future__ import annotations

import sys

import pytest

from textbox.utils.user_dir import import_user_dir


def test_a_package_is_imported_once_under_its_directory_name_with_its_submodules(tmp_path):
    package = tmp_path / "my_ext_pkg"
    package.mkdir()
    (package / "helper.py").write_text("VALUE = 41\n")
    (package / "__init__.py").write_text("from .helper import VALUE\nCOUNT = VALUE + 1\n")
    try:
        module = import_user_dir(str(package))
        assert module.COUNT == 42 and sys.modules["my_ext_pkg"] is module
        module.COUNT = 0
        assert import_user_dir(str(package)).COUNT == 0  # not imported (run) twice
    finally:
        sys.modules.pop("my_ext_pkg", None)
        sys.modules.pop("my_ext_pkg.helper", None)


@pytest.mark.parametrize("make, message", [
    (lambda root: (root / "plain").mkdir(), "is a directory without __init__.py"),
    (lambda root: (root / "json.py").write_text(""), "a module named 'json' is already imported"),
    (lambda root: (root / "bad.py").write_text("def broken(:\n"), "importing it raised SyntaxError"),
])
def test_what_cannot_be_imported_is_one_sentence_naming_the_key(tmp_path, make, message):
    make(tmp_path)
    name = next(path.name for path in tmp_path.iterdir())
    with pytest.raises(ValueError, match=message) as raised:
        import_user_dir(str(tmp_path / name))
    assert str(raised.value).startswith(f"--user_dir={tmp_path / name}") and "\n" not in str(raised.value)
    assert "bad" not in sys.modules
