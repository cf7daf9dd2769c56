"""Hyper-parameter search: `python run_hyper.py --space=<file> --algo=tpe --max_evals=20 [--key=value ...]`.

Every trial is a full run_textbox run in its own sub-directory; `--help` lists the options.
"""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from textbox.cli import report_user_error, wants_help
    from textbox.config import TextBoxError
    from textbox.utils.pipes import print_out
    from textbox.studies.search.options import HELP
    from textbox.studies.search.search import run_search

    argv = sys.argv[1:] if argv is None else argv
    if wants_help(argv):
        return print_out(HELP)
    try:
        print(run_search(argv).report)
    except TextBoxError as error:
        return report_user_error(error)
    return 0


if __name__ == "__main__":
    sys.exit(main())
