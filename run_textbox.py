"""Train, validate and test a text generation model: `python run_textbox.py --key=value ...`.

Run under `accelerate launch` for several processes. `--help` lists every key.
"""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from textbox.cli import run_cli

    return run_cli(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
