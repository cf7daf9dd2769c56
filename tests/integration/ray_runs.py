"""Fake runs for Ray workers, in a module they import by its package name (pytest imports test files by
their bare name, which a Ray worker cannot)."""
from __future__ import annotations

import os

from tests.unit.hyper.test_search import fake_run


def killing_run(config) -> dict:
    """The worker dies without an exception (as under the kernel's OOM killer) for lr 0.003 and seed 2021."""
    if config.learning_rate == 0.003 or config.seed == 2021:
        os._exit(9)
    return fake_run(config)


def interrupting_run(config) -> dict:
    """trial-001 presses Ctrl-C in the driver (pid in TEXTBOX_TEST_DRIVER_PID) a moment after it starts, then
    hangs until Tune stops it; the other trials run normally."""
    import signal
    import time

    if config.filename == "trial-001":
        time.sleep(3)
        os.kill(int(os.environ["TEXTBOX_TEST_DRIVER_PID"]), signal.SIGINT)
        time.sleep(120)
    return fake_run(config)
