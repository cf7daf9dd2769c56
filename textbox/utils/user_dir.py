"""--user_dir: the researcher's own module or package, imported by path (fairseq's --user-dir), so that what it
registers (a metric: textbox.register_metric) exists before the config naming it is checked.

Standard library only: the config check imports this, and `--help` must stay fast.
"""
from __future__ import annotations

import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType


def import_user_dir(path: str, named: str = "--user_dir") -> ModuleType:
    """Import the module (a .py file) or package (a directory with __init__.py) at ``path`` under its own name
    (the file's stem, the directory's name), once per process: a second call returns the module already imported.
    ``named`` is how messages name the key. ValueError with one sentence saying what is wrong and what to do."""
    location = Path(path).expanduser().resolve()
    if location.is_dir():
        init = location / "__init__.py"
        if not init.is_file():
            raise ValueError(f"{named}={path} is a directory without __init__.py; give a package (a directory with "
                             f"__init__.py) or a .py file")
        name, file, search = location.name, init, [str(location)]
    elif location.is_file() and location.suffix == ".py":
        name, file, search = location.stem, location, None
    else:
        what = "does not exist" if not location.exists() else "is not a .py file"
        raise ValueError(f"{named}={path} {what}; give a .py file or a package directory (with __init__.py)")
    if not name.isidentifier():
        raise ValueError(f"{named}={path}: {name!r} is not a Python module name; rename it (letters, digits, _)")
    loaded = sys.modules.get(name)
    if loaded is not None:
        if Path(getattr(loaded, "__file__", "") or "").resolve() == file:
            return loaded
        raise ValueError(f"{named}={path}: a module named {name!r} is already imported (from "
                         f"{getattr(loaded, '__file__', None) or 'the interpreter'}); rename your module")
    spec = importlib.util.spec_from_file_location(name, file, submodule_search_locations=search)
    if spec is None or spec.loader is None:
        raise ValueError(f"{named}={path}: Python cannot import {file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as a normal import does: the package's own submodules find it
    try:
        spec.loader.exec_module(module)
    except BaseException as error:
        del sys.modules[name]
        if not isinstance(error, Exception):
            raise
        raise ValueError(f"{named}={path}: importing it raised {type(error).__name__}: {error}"
                         f"{_where(error, file.parent)}; fix the module") from error
    return module


def _where(error: BaseException, directory: Path) -> str:
    """' (file, line N)' of the innermost frame of the user's own files, where the error was raised."""
    if isinstance(error, SyntaxError) and error.filename:
        return f" ({error.filename}, line {error.lineno})"
    frames = [frame for frame in traceback.extract_tb(error.__traceback__)
              if Path(frame.filename).resolve().is_relative_to(directory)]
    return f" ({frames[-1].filename}, line {frames[-1].lineno})" if frames else ""
