"""Damaged checkpoint files, found by name: the libraries' own errors (safetensors' "incomplete metadata", a JSON
decode error) rarely say which file failed.

Standard library only, so that config validation can look before a run directory exists: JSON files must parse
and a ``.safetensors`` file must hold its whole header and every tensor its header lists (the format is an
8-byte little-endian header length, a JSON header with each tensor's byte range, then the data). Pickled
``.bin`` weights need torch to read: the loader (textbox.model.loading) checks those when loading fails.
"""
from __future__ import annotations

import json
import struct
from pathlib import Path

# The files a save_pretrained directory (or an efficient checkpoint, with its base_model/) holds.
_PATTERNS = ("*.json", "*.safetensors", "base_model/*.json", "base_model/*.safetensors")


def damaged_files(directory: str | Path) -> list[str]:
    """'file X is damaged (why)' for each JSON or safetensors file in ``directory`` that cannot be read."""
    directory = Path(directory).expanduser()
    if not directory.is_dir():
        return []
    found = []
    for path in sorted({path for pattern in _PATTERNS for path in directory.glob(pattern)}):
        problem = _json_problem(path) if path.suffix == ".json" else safetensors_problem(path)
        if problem:
            found.append(f"file {path} is damaged ({problem})")
    return found + _base_model_problems(directory, found)


def _base_model_problems(directory: Path, found: list[str]) -> list[str]:
    """An adapter's or BitFit's base model (recorded in its config) is loaded too: checked the same way."""
    for record in ("adapter_config.json", "bitfit_config.json"):
        path = directory / record
        if path.is_file() and not any(str(path) in problem for problem in found):
            base = json.loads(path.read_text(encoding="utf-8")).get("base_model_name_or_path")
            if isinstance(base, str) and base and Path(base).expanduser().resolve() != directory.resolve():
                return damaged_files(base)
    return []


def _json_problem(path: Path) -> str | None:
    try:
        json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        return f"cannot be read: {error}"
    except ValueError as error:
        return f"not valid JSON: {error}"
    return None


def safetensors_problem(path: Path) -> str | None:
    """Why ``path`` is not a whole safetensors file, or None."""
    try:
        size = path.stat().st_size
        with path.open("rb") as stream:
            prefix = stream.read(8)
            if len(prefix) < 8:
                return f"{size} bytes, shorter than a safetensors header"
            header_length = struct.unpack("<Q", prefix)[0]
            if header_length > size - 8:
                return (f"its header claims {header_length} bytes but the file has {size}: truncated or not "
                        f"a safetensors file")
            header = json.loads(stream.read(header_length).decode("utf-8"))
    except OSError as error:
        return f"cannot be read: {error}"
    except (ValueError, UnicodeDecodeError):
        return "its header is not valid: not a safetensors file"
    if not isinstance(header, dict):
        return "its header is not valid: not a safetensors file"
    ends = [entry["data_offsets"][1] for name, entry in header.items()
            if name != "__metadata__" and isinstance(entry, dict) and len(entry.get("data_offsets", ())) == 2]
    needed = 8 + header_length + max(ends, default=0)
    if needed > size:
        return f"{size} bytes where its header lists {needed}: truncated"
    return None
