"""``python -m textbox.analysis run_dir_a [run_dir_b] ...``: the command of analysis/command.py."""
import sys

from textbox.analysis.command import main

sys.exit(main())
