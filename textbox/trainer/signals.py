"""Turn SIGINT/SIGTERM into a flag the loop checks after each optimiser step, so that a stop request
saves checkpoint_last instead of killing the run in the middle of an update; after training (the test pass), into
an error the run reports (how to finish it) instead of dying silently."""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Callable, Iterator


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


@contextmanager
def raise_on_signals(make_error: Callable[[int], BaseException]) -> Iterator[None]:
    """SIGINT/SIGTERM raise ``make_error(signal_number)`` where the main thread is (once: a second signal while
    that error unwinds is ignored), for work that has no step boundary to stop at (the test pass after training),
    so that the run can say what was lost and how to finish it instead of dying without a word."""
    if threading.current_thread() is not threading.main_thread():
        yield  # as in stop_on_signals: the thread's owner handles the signals
        return
    raised = False

    def handler(signal_number: int, _frame) -> None:
        nonlocal raised
        if not raised:
            raised = True
            raise make_error(signal_number)

    previous = {signal_number: signal.signal(signal_number, handler)
                for signal_number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signal_number, old in previous.items():
            signal.signal(signal_number, old)
