"""The run's processes: the devices they use, the Accelerator that joins them, and one failure raised on all of
them.

Devices: --gpu_id exported before CUDA starts and its devices present, the tracker's package present, sharded
training only where accelerate runs it. What the launcher (accelerate launch) asked, and how it must agree with the
config, is textbox.config.launcher's: the Launch handed in here.

One failure, every process: a problem found on one process is raised on all of them, with its message shown once
(by the process that found it), so that no process waits forever at the next collective call and no gloo/NCCL error
hides the cause. The collectives come from accelerate and are no-ops in a single process.

Nothing heavy is imported here at the top: torch starts only once --gpu_id is exported (export_gpu_id), and
textbox.cli imports this module after a failure, torch or not.
"""
from __future__ import annotations

import os
import pickle
import sys
from dataclasses import dataclass
from datetime import timedelta
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any, Callable, TypeVar, cast

from textbox.config import Config
from textbox.config.errors import RunInterrupted, TextBoxError, TextBoxUserError
from textbox.config.launcher import Launch
from textbox.pipeline.trackers import TRACKER_PACKAGES

if TYPE_CHECKING:
    from accelerate import Accelerator

Result = TypeVar("Result")


# --- devices ----------------------------------------------------------------------------------------------------------
def export_gpu_id(ids: list[str] | None) -> None:
    """--gpu_id's device ``ids`` must reach CUDA_VISIBLE_DEVICES before torch initialises CUDA (i.e. before the
    Accelerator); the devices they name must then all be there: a run never falls back to other devices (or the
    CPU) silently.

    torch.cuda.device_count() is asked only after the export, so that CUDA starts with the chosen devices (in a
    process where CUDA is already initialised, e.g. a second in-process run, the first run's devices stay)."""
    if ids is None:
        return
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(ids)
    import torch

    visible = torch.cuda.device_count() if torch.version.cuda else 0
    check_gpu_ids(ids, visible, _machine_gpu_count(), cuda_build=torch.version.cuda is not None)


def check_gpu_ids(ids: list[str], visible: int, machine: int | None, cuda_build: bool = True) -> None:
    """``visible``: devices CUDA sees once CUDA_VISIBLE_DEVICES holds ``ids`` (it stops at the first id that does
    not exist); ``machine``: devices on the machine (None when unknown)."""
    if visible >= len(ids):
        return
    asked = f"--gpu_id={','.join(ids)}"
    if not cuda_build:
        raise TextBoxUserError(f"{asked}, but this torch is a CPU-only build: no CUDA device is visible; drop "
                               f"--gpu_id to run on the CPU")
    if machine == 0:
        raise TextBoxUserError(f"{asked}, but no CUDA device is visible on this machine; drop --gpu_id to run on "
                               f"the CPU")
    if machine is not None:
        raise TextBoxUserError(f"{asked} names device(s) that do not exist: this machine has {machine} CUDA "
                               f"device(s), ids {', '.join(map(str, range(machine)))}")
    raise TextBoxUserError(f"{asked} names device(s) that do not exist: CUDA sees {visible} of them (and the "
                           f"machine's devices could not be listed); choose existing ids, or drop --gpu_id to run "
                           f"on the CPU")


def _machine_gpu_count() -> int | None:
    """The machine's CUDA devices, counted through NVML (which, unlike the CUDA runtime, ignores
    CUDA_VISIBLE_DEVICES and initialises nothing); None when NVML cannot tell."""
    import torch

    if torch.version.cuda is None:
        return 0
    try:
        count = torch.cuda._raw_device_count_nvml()
    except Exception:  # a private helper: any failure only means 'unknown'
        return None
    return count if count >= 0 else None


def build_accelerator(config: Config, launch: Launch) -> Accelerator:
    """The run's Accelerator, with ``launch``'s precision. FSDP or DeepSpeed asked of the launcher on a machine
    without CUDA is refused: accelerate would train plain DDP (DistributedType.MULTI_CPU) without a word."""
    import torch
    from accelerate import Accelerator, DataLoaderConfiguration
    from accelerate.utils import DistributedDataParallelKwargs

    precision = launch.mixed_precision
    cuda = torch.cuda.is_available()
    if launch.gpu_only is not None and not cuda:
        error = TextBoxUserError(f"the launcher asks for {launch.gpu_only}, but no CUDA GPU is visible: accelerate "
                                 f"runs sharded training on GPU processes only and would silently train plain DDP "
                                 f"on the CPU; launch without it (multi-process DDP: --multi_gpu with "
                                 f"ACCELERATE_USE_CPU=true) or on GPUs")
        # every process finds it: the first process of each machine prints it
        error.shown_elsewhere = os.environ.get("LOCAL_RANK", "0") not in ("", "0")  # type: ignore[attr-defined]
        raise error
    if precision == "fp16" and not cuda:
        raise TextBoxUserError("--mixed_precision=fp16 needs a CUDA GPU; on CPU use --mixed_precision=bf16")
    tracker = None if config.tracker == "none" else config.tracker
    if tracker in TRACKER_PACKAGES and find_spec(tracker) is None:
        package = TRACKER_PACKAGES[tracker]
        raise TextBoxUserError(f"--tracker={tracker} needs the {package} package: pip install {package} (or pip "
                               f"install 'textbox[trackers]'; or --tracker=tensorboard / none)")
    return Accelerator(
        cpu=not cuda,  # on a CPU machine this is what makes `accelerate launch --multi_gpu` really distributed
        mixed_precision=precision,
        log_with=tracker,
        project_dir=config.saved_dir,  # moved to the run directory once its name is agreed on (run())
        # No gradient_accumulation_steps: the Trainer accumulates itself, weighting every target token alike.
        kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=config.find_unused_parameters)],
        dataloader_config=DataLoaderConfiguration(use_seedable_sampler=True),
    )


# --- one failure, every process ---------------------------------------------------------------------------------------
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
    _wait_until_recorded()  # a failure announced to the others: until they have recorded it


# --- a failure one process met alone ----------------------------------------------------------------------------------
# A process that fails where the others do not meet it (a checkpoint written by the main process alone, a figure
# computed there) leaves while they wait in their next collective call, which then breaks ("Connection closed by
# peer"): each would show that as an error of its own, one line per process, none saying what happened. The failing
# process announces its failure through the launcher's key-value store (torchrun's agent holds it, so it outlives
# every worker) before it leaves; a process whose call then breaks raises a quiet copy of the announced failure.

FAILURE_KEY = "textbox/failure/"  # + the rank that failed
RECORDED_KEY = "textbox/failure-recorded/"  # + a rank that recorded another's failure (its FAILED mark, its log)
STORE_SECONDS = 5.0  # the store's answer is awaited no longer (a store held by a process that is gone)
RECORDED_SECONDS = 20.0  # how long the failing process waits, once it has left, for the others to record it


@dataclass
class _Announced:
    """This process's announced failure: the store it went through and the ranks that will record it."""

    store: Any
    others: list[int]


_announced: _Announced | None = None


def announce_failure(error: BaseException) -> bool:
    """Tell the other processes of the run what this process's failure is (``error`` as its console shows it);
    whether it was told. The process then stays in the process group until its error is shown (textbox.cli
    leaves it): the others' calls break only then, so that none exits (and has the launcher stop this one with
    SIGTERM) before it is out. Nothing for a copy of another's failure, a stop request (it reaches every process),
    or a single process."""
    store = _failure_store()
    if (store is None or getattr(error, "shown_elsewhere", False) or isinstance(error, RunInterrupted)
            or not isinstance(error, Exception)):
        return False
    import torch.distributed as dist

    global _announced
    try:
        store.set(f"{FAILURE_KEY}{dist.get_rank()}", pickle.dumps(describe(error)))
    except Exception:  # the store is gone: the others show their own errors
        return False
    _announced = _Announced(store, [rank for rank in range(dist.get_world_size()) if rank != dist.get_rank()])
    return True


def failure_recorded(error: BaseException) -> None:
    """Tell the process whose failure ``error`` copies (failure_of_another_process) that this one has recorded it
    (its FAILED mark and log are written): that process leaves only then, since the launcher stops every other
    process (SIGTERM) the moment the first one exits."""
    if not getattr(error, "announced_copy", False):
        return
    store = _failure_store()
    if store is None:
        return
    import torch.distributed as dist

    try:
        store.set(f"{RECORDED_KEY}{dist.get_rank()}", b"1")
    except Exception:  # the store is gone: nobody is waiting
        pass


def _wait_until_recorded() -> None:
    """Once this process, whose failure was announced, has left the process group (the others' calls break only
    then): wait, a bounded time, until each other process has recorded the failure."""
    global _announced
    if _announced is None:
        return
    announced, _announced = _announced, None
    try:
        announced.store.wait([f"{RECORDED_KEY}{rank}" for rank in announced.others],
                             timedelta(seconds=RECORDED_SECONDS))
    except Exception:  # one did not record it in time, or is gone: nothing more to wait for
        pass


def failure_of_another_process(error: BaseException) -> BaseException:
    """``error`` itself, unless it is what another process's announced failure caused here (a collective call
    broken by that process leaving, or the launcher's SIGTERM that followed it): then a quiet copy of that failure
    (its message for this process's FAILED mark and log, its exit code; the CLI prints nothing)."""
    if not isinstance(error, (RuntimeError, RunInterrupted)) or getattr(error, "shown_elsewhere", False):
        return error
    store = _failure_store()
    if store is None:
        return error
    import torch.distributed as dist

    try:
        keys = [f"{FAILURE_KEY}{rank}" for rank in range(dist.get_world_size()) if rank != dist.get_rank()]
        announced = [key for key in keys if store.check([key])]
        if not announced:
            return error
        failure: SharedFailure = pickle.loads(store.get(announced[0]))
    except Exception:  # the store is gone too: this process's own error is all there is to show
        return error
    copy = (TextBoxUserError if failure.user_error else TextBoxError)(failure.message)
    copy.exit_code = failure.exit_code
    copy.shown_elsewhere = True  # type: ignore[attr-defined]
    copy.announced_copy = True  # type: ignore[attr-defined]  # failure_recorded tells its process once recorded
    return copy


def _failure_store() -> Any:
    """The launcher's store (torch's Store), or None outside a process group of two or more."""
    if "torch" not in sys.modules:
        return None
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
        return None
    try:
        store = dist.distributed_c10d._get_default_store()
        store.set_timeout(timedelta(seconds=STORE_SECONDS))
    except Exception:
        return None
    return store


def describe(error: BaseException) -> SharedFailure:
    if isinstance(error, TextBoxError):
        return SharedFailure(str(error), error.exit_code, isinstance(error, TextBoxUserError))
    return SharedFailure(f"{type(error).__name__}: {error} (on another process)", 1, False)


def main_process_first(accelerator: Accelerator, work: Callable[[], Result]) -> Result:
    """``work`` on the main process, then (if it succeeded there) on the others: builds, downloads and caches
    happen once. A failure anywhere is raised on every process (accelerate's own ``main_process_first`` leaves
    the others waiting in a barrier that breaks with a gloo error when the main process exits)."""
    from accelerate.utils import broadcast_object_list, gather_object

    result: Result | None = None
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
    return cast(Result, result)  # work's own value: a failure (result None) was raised above


def _attempt(work: Callable[[], Result]) -> tuple[Result | None, BaseException | None]:
    try:
        return work(), None
    except (RunInterrupted, KeyboardInterrupt):  # a stop request reaches every process by itself
        raise
    except Exception as error:
        return None, error


def raise_on_every_process(problem: str | None, accelerator: Accelerator) -> None:
    """The main process found (or did not find) a problem: every process raises it (shown once, by the main
    process), none waits forever."""
    from accelerate.utils import broadcast_object_list

    problem = broadcast_object_list([problem])[0]
    if problem:
        error = TextBoxUserError(problem)
        error.shown_elsewhere = not accelerator.is_main_process  # type: ignore[attr-defined]
        error.shared = True  # type: ignore[attr-defined]  # raised by every process
        raise error
    accelerator.wait_for_everyone()
