"""Score output files against a dataset's test references and compare them in one table (TextBox 2.0's command):
`python run_analysis.py --dataset=cnndm BART_output.txt T5_output.txt`. `--help` says more.
"""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from textbox.compare_files import main as compare_files

    return compare_files(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
