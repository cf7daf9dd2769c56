"""``python -m textbox.export --model_path=<checkpoint dir> --output=<dir> [--quantization=int8]``: a checkpoint
(a run's checkpoint_best, or any saved transformers model CTranslate2 converts) written as a CTranslate2 model that
``ctranslate2.Translator(dir)`` (``Generator`` for a decoder-only model) loads, with the tokenizer's files and the
arguments that decode as the checkpoint's ``generate`` (textbox.decoding.ctranslate2_export; docs/sharing.md).

Parsing needs nothing heavy (--help stays fast); bad input is one ``error:`` line and exit 2, a model the converter
cannot convert one line and exit 1, and nothing is written either way.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

from textbox.config.errors import TextBoxUserError
from textbox.utils.atomic import WriteFailed

USAGE = """usage: python -m textbox.export --model_path=<checkpoint dir> --output=<new dir> [--quantization=<type>]

Converts the checkpoint for CTranslate2 into --output (a directory that must not exist yet): the converted model,
the tokenizer's files, generation_config.json and, when the checkpoint's generation settings map to one
CTranslate2 call, generation_arguments.json (the keyword arguments of translate_batch / generate_batch).
--quantization: none (the weights' own type; default), int8, int8_float32, int8_float16, int8_bfloat16, float16,
bfloat16."""
_KEYS = ("model_path", "output", "quantization")


def parse(argv: Sequence[str]) -> dict[str, str]:
    """--key=value arguments (the keys of USAGE), each once; TextBoxUserError naming what is wrong."""
    values: dict[str, str] = {}
    for arg in argv:
        name, equals, value = arg.partition("=")
        key = name[2:] if name.startswith("--") else ""
        if key not in _KEYS or not equals or not value:
            raise TextBoxUserError(f"{arg!r} is not one of --model_path=<dir>, --output=<dir>, --quantization=<type> "
                                   f"(python -m textbox.export --help)")
        if key in values:
            raise TextBoxUserError(f"--{key} is given twice")
        values[key] = value
    missing = [f"--{key}" for key in ("model_path", "output") if key not in values]
    if missing:
        raise TextBoxUserError(f"{' and '.join(missing)} missing (python -m textbox.export --help)")
    return values


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if any(arg in ("-h", "--help") for arg in args):
        print(USAGE)
        return 0
    try:
        values = parse(args)
        from textbox.decoding.ctranslate2_cache import CTranslate2Failed
        from textbox.decoding.ctranslate2_export import ARGUMENTS, export_ctranslate2

        try:
            exported = export_ctranslate2(Path(values["model_path"]).expanduser(),
                                          Path(values["output"]).expanduser(), values.get("quantization", "none"))
        except (CTranslate2Failed, WriteFailed) as error:
            print(f"error: {error}; nothing was written", file=sys.stderr)
            return 1
    except TextBoxUserError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"exported {values['model_path']} to {exported.directory}: load it with "
          f"ctranslate2.{exported.engine}({str(exported.directory)!r})")
    if exported.no_arguments:
        print(f"note: {ARGUMENTS} not written: no single CTranslate2 call decodes as this checkpoint's generate "
              f"({exported.no_arguments}); give translate_batch your own arguments, or decode with textbox "
              f"(--decoding_backend=ctranslate2), which does")
    return 0


if __name__ == "__main__":
    sys.exit(main())
