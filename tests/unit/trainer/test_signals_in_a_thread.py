"""A run inside a worker thread (a Ray Tune function trial) may not install signal handlers: it runs without
them, and the main thread's handlers stay as they were."""
from __future__ import annotations

import signal
import threading

from textbox.trainer.signals import stop_on_signals


def test_stop_on_signals_outside_the_main_thread_leaves_the_handlers_alone():
    before = signal.getsignal(signal.SIGINT)
    seen: list[object] = []

    def trial() -> None:
        with stop_on_signals() as request:
            seen.append(request.requested)

    worker = threading.Thread(target=trial)
    worker.start()
    worker.join()
    assert seen == [False] and signal.getsignal(signal.SIGINT) is before
