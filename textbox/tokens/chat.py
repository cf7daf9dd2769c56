"""Chat templates of decoder-only models: which template a run uses (--chat_template, else the tokenizer's own),
whether examples are rendered through it (--use_chat_template), and the checks of those keys before anything is
built.

Kept in textbox.tokens because data/ (rendering examples, textbox.data.chat) and model/ (setting --chat_template on
the tokenizer, so that every checkpoint saves it) both need it. Standard library only: the tokenizer is read through
the attributes transformers gives it, and a local checkpoint's files are read as JSON/text.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Mapping

from textbox.config.errors import TextBoxUserError

JINJA_MARKS = ("{{", "{%")  # a --chat_template value holding one of these is the template itself, not a path
# Where save_pretrained writes a template: transformers 5 as chat_template.jinja (and additional_chat_templates/ for
# named ones), earlier releases in tokenizer_config.json, some processors in chat_template.json.
TEMPLATE_FILES = ("chat_template.jinja", "chat_template.json", "additional_chat_templates")
INSTRUCTION_FORMATS = ("alpaca", "messages")


def given_template(value: str) -> str:
    """The template --chat_template names: the text of the file at ``value``, or ``value`` itself when it is a Jinja
    template (holds ``{{`` or ``{%``). TextBoxUserError when it is neither (a mistyped path)."""
    if any(mark in value for mark in JINJA_MARKS):
        return value
    path = Path(value).expanduser()
    if not path.is_file():
        raise TextBoxUserError(f"--chat_template={value!r} is neither a file nor a Jinja template (no '{{{{' or "
                               f"'{{%'): give the path of a template file, or the template itself")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise TextBoxUserError(f"--chat_template={value}: cannot read it as UTF-8 text ({error})") from error
    if not text.strip():
        raise TextBoxUserError(f"--chat_template={value} is empty; write a Jinja chat template in it")
    return text


def saved_template(model_path: str | None) -> bool | None:
    """Whether the local checkpoint at ``model_path`` saved a chat template with its tokenizer; None when that cannot
    be told here (no path, or a hub id: the builder checks the loaded tokenizer)."""
    if not model_path or not Path(model_path).expanduser().is_dir():
        return None
    directory = Path(model_path).expanduser()
    if any((directory / name).exists() for name in TEMPLATE_FILES):
        return True
    try:
        settings = json.loads((directory / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # no readable tokenizer_config.json: loading names the problem
    return isinstance(settings, dict) and bool(settings.get("chat_template"))


def wants_template(values: Mapping[str, Any]) -> bool:
    """Whether the configuration needs a chat template whatever the tokenizer holds (a key that only a template
    reads, or messages data)."""
    return (values["use_chat_template"] is True or values["system_prompt"] is not None
            or values["data_format"] == "messages")


def problems(values: Mapping[str, Any], decoder_only: bool, where: Callable[[str], str]) -> list[str]:
    """The chat keys' problems before anything is built (the family table refuses them for encoder-decoders)."""
    found: list[str] = []
    if values["data_format"] == "messages" and not decoder_only:
        return [f"{where('data_format')}=messages holds chat turns, which only a decoder-only model with a chat "
                f"template reads; use --data_format=alpaca or json for an encoder-decoder"]
    if not decoder_only:
        return found
    if values["chat_template"] is not None:
        try:
            given_template(values["chat_template"])
        except TextBoxUserError as error:
            found.append(f"{where('chat_template')}: {error}")
    if values["use_chat_template"] is False:
        needing = [key for key in ("system_prompt", "chat_template") if values[key] is not None]
        needing += ["data_format"] if values["data_format"] == "messages" else []
        return found + [f"{where(key)} is read through a chat template, but {where('use_chat_template')}=False "
                        f"renders none: drop one of them" for key in needing]
    if values["chat_template"] is None and wants_template(values) and \
            saved_template(values["model_path"]) is False:
        key, asked = (("use_chat_template", "=True") if values["use_chat_template"] is True
                      else ("system_prompt", "") if values["system_prompt"] is not None else ("data_format", "=messages"))
        found.append(f"{where(key)}{asked} needs a chat template, but the tokenizer of --model_path="
                     f"{values['model_path']} has none: give one with --chat_template=<file or template>")
    if values["data_format"] == "messages" and values["group_references"]:
        found.append(f"{where('group_references')}: messages data has one reference per conversation (its last "
                     f"assistant turn); drop --group_references")
    return found


def apply_template(value: str | None, tokenizer: Any) -> None:
    """Set --chat_template (``value``) on ``tokenizer``: save_pretrained then writes it with every checkpoint."""
    if value is not None:
        tokenizer.chat_template = given_template(value)


def templating(values: Mapping[str, Any], tokenizer: Any) -> bool:
    """Whether examples are rendered through the chat template: use_chat_template, auto = when the tokenizer has
    one. A template asked for on a tokenizer without one (a hub id the checks could not read) is a TextBoxUserError."""
    has_template = bool(getattr(tokenizer, "chat_template", None))
    if values["use_chat_template"] is False:
        return False
    if not has_template and wants_template(values):
        raise TextBoxUserError(f"--model_path={values['model_path']}: its tokenizer has no chat template, which "
                               f"use_chat_template=True, system_prompt or data_format=messages need: give one with "
                               f"--chat_template=<file or template>")
    return has_template
