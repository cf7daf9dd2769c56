"""A reader that closes the pipe early (``python run_textbox.py --help | head -1``): stop quietly, no traceback.

Standard library only (utils is the lowest layer). Shared by every command that prints to stdout.
"""
from __future__ import annotations

import os
import signal
import sys

SIGPIPE_EXIT_CODE = 128 + signal.SIGPIPE  # what a shell reports for a writer its reader stopped


def stop_quietly() -> int:
    """After a BrokenPipeError on stdout: point stdout at /dev/null, so that the flush at exit cannot fail (and
    print 'Exception ignored ... BrokenPipeError'), and return the exit code a shell expects."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return SIGPIPE_EXIT_CODE


def print_out(text: str) -> int:
    """Print ``text`` to stdout: 0, or SIGPIPE_EXIT_CODE when the reader has gone."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        return stop_quietly()
    return 0
