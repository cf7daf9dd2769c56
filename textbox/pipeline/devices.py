"""The run's devices and accelerator: --gpu_id exported before CUDA starts and its devices present, the tracker's
package present, sharded training only where accelerate runs it. What the launcher (accelerate launch) asked, and
how it must agree with the config, is textbox.config.launcher's: the Launch handed in here."""
from __future__ import annotations

import importlib.util
import os
from typing import TYPE_CHECKING

from textbox.config import Config, TextBoxUserError
from textbox.config.launcher import Launch

if TYPE_CHECKING:  # torch starts only once --gpu_id is exported (export_gpu_id)
    from accelerate import Accelerator


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
    if tracker and importlib.util.find_spec(tracker) is None:
        raise TextBoxUserError(f"--tracker={tracker} needs the {tracker} package: pip install {tracker} "
                               f"(or --tracker=tensorboard / none)")
    return Accelerator(
        cpu=not cuda,  # on a CPU machine this is what makes `accelerate launch --multi_gpu` really distributed
        mixed_precision=precision,
        log_with=tracker,
        project_dir=config.saved_dir,  # moved to the run directory once its name is agreed on (run())
        # No gradient_accumulation_steps: the Trainer accumulates itself, weighting every target token alike.
        kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=config.find_unused_parameters)],
        dataloader_config=DataLoaderConfiguration(use_seedable_sampler=True),
    )
