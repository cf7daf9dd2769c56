"""Turn SIGINT/SIGTERM into a flag the loop checks after each optimiser step, so that a stop request
saves checkpoint_last instead of killing the run in the middle of an update."""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator


class StopRequest:
    def __init__(self) -> None:
        self.signal_number: int | None = None

    @property
    def requested(self) -> bool:
        return self.signal_number is not None

    @property
    def exit_code(self) -> int:
        return 128 + (self.signal_number or 0)


@contextmanager
def stop_on_signals() -> Iterator[StopRequest]:
    request = StopRequest()
    previous = {}
    if threading.current_thread() is not threading.main_thread():
        # Python delivers signals to the main thread only, and only it may install handlers: a run in another
        # thread (a Ray Tune function trial) is stopped by that thread's owner, which handles the signals.
        yield request
        return

    def handler(signal_number: int, _frame) -> None:
        request.signal_number = signal_number

    for signal_number in (signal.SIGINT, signal.SIGTERM):
        previous[signal_number] = signal.signal(signal_number, handler)
    try:
        yield request
    finally:
        for signal_number, old in previous.items():
            signal.signal(signal_number, old)
