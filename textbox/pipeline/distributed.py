"""One failure, every process: a problem found on one process is raised on all of them, with its message shown
once (by the process that found it), so that no process waits forever at the next collective call and no
gloo/NCCL error hides the cause.

The collectives come from accelerate and are no-ops in a single process.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from textbox.config.errors import RunInterrupted, TextBoxError, TextBoxUserError

if TYPE_CHECKING:  # textbox.cli imports this module after a failure, torch or not
    from accelerate import Accelerator

Result = TypeVar("Result")


@dataclass(frozen=True)
class SharedFailure:
    """What the other processes need to know about a failure (picklable: it travels between processes)."""

    message: str
    exit_code: int
    user_error: bool


def is_shared(error: BaseException) -> bool:
    """Raised on every process at once (so every process can meet once more before leaving)."""
    return getattr(error, "shared", False)


def raise_shared(failure: SharedFailure | None, own_error: BaseException | None = None) -> None:
    """Raise ``failure`` here: the original exception where it happened, a quiet copy everywhere else (marked
    ``shown_elsewhere``: the CLI prints nothing for it, the process that found the failure prints it)."""
    if failure is None:
        return
    if own_error is not None:
        own_error.shared = True  # type: ignore[attr-defined]
        raise own_error
    copy = (TextBoxUserError if failure.user_error else TextBoxError)(failure.message)
    copy.exit_code = failure.exit_code
    copy.shown_elsewhere = True  # type: ignore[attr-defined]
    copy.shared = True  # type: ignore[attr-defined]
    raise copy


def leave_process_group(meet_first: bool) -> None:
    """Leave the process group (if any) before the process exits on an error: exiting with it alive aborts
    ('terminate called without an active exception') instead of exiting with the error's code.

    ``meet_first`` (for a failure every process raised, once its message is printed): wait for the others, so
    that no process exits (and has the launcher kill the rest) before the message is out."""
    if "torch" not in sys.modules:  # nothing started one (and importing torch here would only cost time)
        return
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return
    if meet_first:
        try:
            dist.barrier()
        except Exception:  # a process already gone: nothing left to wait for
            pass
    dist.destroy_process_group()


def describe(error: BaseException) -> SharedFailure:
    if isinstance(error, TextBoxError):
        return SharedFailure(str(error), error.exit_code, isinstance(error, TextBoxUserError))
    return SharedFailure(f"{type(error).__name__}: {error} (on another process)", 1, False)


def main_process_first(accelerator: Accelerator, work: Callable[[], Result]) -> Result:
    """``work`` on the main process, then (if it succeeded there) on the others: builds, downloads and caches
    happen once. A failure anywhere is raised on every process (accelerate's own ``main_process_first`` leaves
    the others waiting in a barrier that breaks with a gloo error when the main process exits)."""
    from accelerate.utils import broadcast_object_list, gather_object

    result: Any = None
    own_error: BaseException | None = None
    failure: SharedFailure | None = None
    if accelerator.is_main_process:
        result, own_error = _attempt(work)
        failure = describe(own_error) if own_error is not None else None
    raise_shared(broadcast_object_list([failure])[0], own_error)
    if not accelerator.is_main_process:
        result, own_error = _attempt(work)
    failures = gather_object([describe(own_error) if own_error is not None else None])
    failed = [rank for rank, found in enumerate(failures) if found is not None]
    if failed:  # the lowest failing rank shows its error; every other process raises a quiet copy
        raise_shared(failures[failed[0]], own_error if failed[0] == accelerator.process_index else None)
    return result


def _attempt(work: Callable[[], Result]) -> tuple[Result | None, BaseException | None]:
    try:
        return work(), None
    except (RunInterrupted, KeyboardInterrupt):  # a stop request reaches every process by itself
        raise
    except Exception as error:
        return None, error
