"""Instruction data: alpaca-style rows (instruction, input, output) and chat conversations (messages), read from
json/jsonl files through ``datasets`` into ``Split``s.

- alpaca: ``{split}.json`` (a list of rows) or ``{split}.jsonl``; the source is the instruction, then a blank line
  and the input when there is one (Stanford Alpaca's two parts, without its English preamble: a chat template, or
  the plain layout, adds what frames them); the target is the output (valid/test: a list of references allowed).
- messages: ``{split}.jsonl`` (or .json) rows ``{"messages": [{"role": ..., "content": ...}, ...]}``; roles system
  (first only), user and assistant, ending with an assistant turn. The turns before the last assistant turn are the
  example's context (``Split.contexts``: every earlier assistant turn is trained on too, textbox.data.chat), the last
  assistant turn its reference, the last user turn its source as logs and result files show it.

Every problem is a DataError naming the file and row.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from textbox.config.errors import DataError
from textbox.data.split import Message, Split

ALPACA_FIELDS = ("instruction", "input", "output")
ROLES = ("system", "user", "assistant")
EXTENSIONS = ("jsonl", "json")


def instruction_file(directory: Path, name: str, data_format: str) -> Path:
    """``{name}.jsonl`` or ``{name}.json`` in ``directory``; a DataError when neither is there."""
    for extension in EXTENSIONS:
        if (directory / f"{name}.{extension}").is_file():
            return directory / f"{name}.{extension}"
    raise DataError(f"{directory} holds neither {name}.jsonl nor {name}.json; data_format={data_format} reads the "
                    f"{name} split from one of them")


def read_alpaca(path: Path, name: str, rows: list[dict[str, Any]]) -> Split:
    """Sources and targets of alpaca rows (see the module docstring)."""
    sources, targets = [], []
    for number, row in enumerate(rows, start=1):
        where = f"{path} row {number}"
        instruction, extra, output = (row.get(field) for field in ALPACA_FIELDS)
        if not isinstance(instruction, str) or not instruction.strip():
            raise DataError(f"{where}: 'instruction' is empty or missing ({instruction!r:.60}); every row needs one")
        if extra is not None and not isinstance(extra, str):
            raise DataError(f"{where}: 'input' must be text, got {type(extra).__name__}")
        references = [output] if isinstance(output, str) else output
        if not isinstance(references, list) or not references or \
                not all(isinstance(text, str) and text.strip() for text in references):
            raise DataError(f"{where}: 'output' is empty or not text ({output!r:.60}); give a text (valid/test: "
                            f"or a list of texts)")
        if name == "train" and len(references) > 1:
            references = references[:1]
        sources.append(f"{instruction}\n\n{extra}" if extra and extra.strip() else instruction)
        targets.append(list(references))
    return Split(name, sources, targets)


def read_messages(path: Path, name: str, rows: list[dict[str, Any]]) -> Split:
    """Contexts, sources and targets of conversations (see the module docstring)."""
    sources, targets, contexts = [], [], []
    for number, row in enumerate(rows, start=1):
        turns = _turns(row.get("messages"), f"{path} row {number}")
        sources.append(next(turn["content"] for turn in reversed(turns) if turn["role"] == "user"))
        targets.append([turns[-1]["content"]])
        contexts.append(turns[:-1])
    return Split(name, sources, targets, contexts)


def _turns(messages: object, where: str) -> list[Message]:
    if not isinstance(messages, list) or not messages:
        raise DataError(f"{where}: 'messages' is missing or not a list of turns ({messages!r:.60}); write "
                        f'{{"messages": [{{"role": "user", "content": ...}}, {{"role": "assistant", ...}}]}}')
    turns = []
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if role not in ROLES or (role == "system" and index > 0):
            raise DataError(f"{where}: turn {index + 1} has role {role!r}; roles are system (first turn only), user "
                            f"and assistant")
        if not isinstance(content, str) or not content.strip():
            raise DataError(f"{where}: turn {index + 1} ({role}) has no text content ({content!r:.60})")
        turns.append({"role": role, "content": content})
    if turns[-1]["role"] != "assistant" or not any(turn["role"] == "user" for turn in turns):
        raise DataError(f"{where}: a conversation needs a user turn and must end with an assistant turn (the "
                        f"reference); it ends with a {turns[-1]['role']} turn")
    return turns
