"""When progress bars are drawn: standard library only (utils is the lowest layer).

tqdm reads TQDM_DISABLE itself (tqdm >= 4.66) only when ``disable`` is not passed; we pass it (a bar on the first
process of each machine only), so the variable is read here. A bar is drawn only on a terminal: in a file (``2>
train.log``, nohup, a batch scheduler's log) its carriage returns glue every update onto the log lines, and the log
already reports progress every logging_steps. TQDM_DISABLE=0 draws bars even into a file.
"""
from __future__ import annotations

import os


def bar_disabled(main_process: bool) -> bool | None:
    """tqdm's ``disable`` for a bar: True on a process other than the first of its machine, or under TQDM_DISABLE
    (1, true, yes: no bars; 0, false, no: bars even when stderr is not a terminal); else None, tqdm's own 'no bar
    unless stderr is a terminal'."""
    if not main_process:
        return True
    setting = os.environ.get("TQDM_DISABLE", "").strip().lower()
    if setting in ("1", "true", "yes", "on"):
        return True
    if setting in ("0", "false", "no", "off"):
        return False
    return None
