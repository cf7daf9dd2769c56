"""Checkpoints, always written atomically so that a kill at any moment leaves a loadable previous version.

checkpoint_best/ and checkpoint-<step>/: save_pretrained model + tokenizer (for testing and sharing); with
efficient_methods only the adapter (or BitFit's biases) and the base model's path (textbox.model.efficient).
checkpoint_last/: accelerate's full state (model, optimiser, scheduler, every RNG) + train_state.json,
everything an exact resume needs. A damaged or missing file there is reported by name (exit 2) before
training starts, and nothing on disk is touched.
"""
from __future__ import annotations

import shutil
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, TypeVar, cast

from accelerate import Accelerator
from accelerate.utils import DistributedType
from accelerate.utils import load  # accelerate's own torch.load (weights_only, numpy's RNG state allowed)

from textbox.config import Config, TextBoxUserError
from textbox.config.run_config import BEST_CHECKPOINT, LAST_CHECKPOINT
from textbox.model.adapter_files import inner_model, save_model_files
from textbox.model.built_model import EfficientRecord
from textbox.model.files import safetensors_problem
from textbox.model.quantization import is_quantized
from textbox.model.run_generation import save_run_generation
from textbox.trainer.disks import copy_to_other_disks, processes_on_this_disk, writes_checkpoints
from textbox.trainer.sharding import full_state_dict, save_full_model
from textbox.trainer.state import TrainState
from textbox.utils.atomic import atomic_directory, restore_interrupted, staged, swap_in

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedTokenizerBase

Read = TypeVar("Read")

TRAIN_STATE_FILE = "train_state.json"
LAST = LAST_CHECKPOINT  # one home for both names: the config layer recognises run directories by them
BEST = BEST_CHECKPOINT


def save_model(accelerator: Accelerator, model: torch.nn.Module, tokenizer: PreTrainedTokenizerBase, path: Path,
               efficient: EfficientRecord | None = None) -> None:
    """save_pretrained model + tokenizer from the main process, atomically; of a model that carries an efficient
    method (``efficient``, its BuiltModel record) only what the method trains."""
    accelerator.wait_for_everyone()
    state = full_state_dict(accelerator, model)  # FSDP/DeepSpeed: gathered from every process; else None
    if accelerator.is_main_process:
        with atomic_directory(path) as tmp:
            if state is not None:
                save_full_model(accelerator, model, tmp, state)
            else:
                save_model_files(accelerator.unwrap_model(model), tmp, efficient)  # only what a method trains
            tokenizer.save_pretrained(tmp)
            save_run_generation(inner_model(accelerator.unwrap_model(model)), tmp)  # what a later run puts back
    copy_to_other_disks(accelerator, path)  # machines that do not share the main process's disk get a copy
    accelerator.wait_for_everyone()


def save_resume_state(accelerator: Accelerator, run_dir: Path, state: TrainState, optimizer: bool = True) -> None:
    """accelerate's save_state into a shared temporary directory (every process writes its own RNG file),
    then the same two-rename swap as atomic_directory, by the main process. ``optimizer=False``
    (--save_optimizer=False) leaves the optimiser state out: no optimizer.bin."""
    final = Path(run_dir) / LAST
    tmp = Path(run_dir) / f".{LAST}.tmp"
    if writes_checkpoints(accelerator):
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    accelerator.wait_for_everyone()
    with staged(tmp, LAST):  # a failed save leaves no partial copy behind; a full disk is a NoSpaceLeft
        with _optimizers_left_out(accelerator, not optimizer):
            accelerator.save_state(str(tmp))
        accelerator.wait_for_everyone()
        if writes_checkpoints(accelerator):
            (tmp / TRAIN_STATE_FILE).write_text(state.to_json(), encoding="utf-8")
            swap_in(tmp, final)
    accelerator.wait_for_everyone()


@contextmanager
def _optimizers_left_out(accelerator: Accelerator, leave_out: bool) -> Iterator[None]:
    """save_state saves every optimiser registered with the Accelerator (its ``_optimizers``, which accelerate
    offers no switch for): hidden while it saves, restored whatever happens."""
    if not leave_out:
        yield
        return
    registered = accelerator._optimizers
    accelerator._optimizers = []
    try:
        yield
    finally:
        accelerator._optimizers = registered


def find_resume_dir(run_dir: Path) -> Path | None:
    """checkpoint_last, restored first if a kill landed between the two renames of its last save."""
    final = Path(run_dir) / LAST
    restore_interrupted(final)
    return final if final.is_dir() else None


def resume_files(accelerator: Accelerator) -> list[str]:
    """What save_resume_state writes for the Trainer's one model, optimiser and schedule (registered for
    checkpointing), fp16's gradient scaler, and every process's random states."""
    return [TRAIN_STATE_FILE, *resume_model_files(accelerator), "custom_checkpoint_0.pkl",
            *(["scaler.pt"] if accelerator.scaler is not None else []),
            *(f"random_states_{index}.pkl" for index in processes_on_this_disk(accelerator))]


def resume_model_files(accelerator: Accelerator) -> list[str]:
    """The model and optimiser files accelerate's save_state writes (checked before a resume)."""

    if accelerator.distributed_type == DistributedType.DEEPSPEED:
        return []  # the engine's own checkpoint directory; accelerate's load_state names what is missing
    if accelerator.distributed_type == DistributedType.FSDP:
        return ["pytorch_model_fsdp.bin", "optimizer.bin"]  # FULL_STATE_DICT, as configs/accelerate/fsdp.yaml
    return ["model.safetensors", "optimizer.bin"]


def check_resume_files(accelerator: Accelerator, path: Path) -> None:
    """Before anything of the run is touched (its project.log included): every file of checkpoint_last is there
    and whole. Cheap: the small files are read, the large ones only checked for a complete container (the
    safetensors header and byte ranges; torch's zip directory, which sits at the end of the file)."""

    path = Path(path)
    for name in resume_files(accelerator):
        file = path / name
        if not file.is_file():
            raise _damaged(file, "missing")
        if name == TRAIN_STATE_FILE or name.startswith("random_states_"):
            _read(file, _READERS[file.suffix])
        elif file.suffix == ".safetensors" and (problem := safetensors_problem(file)):
            raise _damaged(file, f"damaged ({problem})")
        elif file.suffix in (".bin", ".pkl", ".pt"):
            try:
                with zipfile.ZipFile(file) as archive:
                    archive.namelist()
            except (zipfile.BadZipFile, OSError) as error:
                raise _damaged(file, f"damaged ({type(error).__name__}: {error})") from error


def load_resume_state(accelerator: Accelerator, path: Path, model: torch.nn.Module | None = None) -> TrainState:
    """accelerate's load_state, then train_state.json. A missing or unreadable file is a TextBoxUserError naming
    it: accelerate raises a bare library error, or, for the random-state files, carries on silently without them
    (the resumed run would then differ from an uninterrupted one), so those are read first. Only memory changes.
    ``model`` (the prepared model) tells whether its base is quantised (see ``_model_loading``)."""
    path = Path(path)
    check_resume_files(accelerator, path)  # every process checks every file, so that all stop together
    state = _read(path / TRAIN_STATE_FILE, TrainState.from_file)
    try:
        accelerator.load_state(str(path), **_model_loading(accelerator, path, model))
    except Exception as error:
        for file in sorted(path.iterdir()):  # which file? each is read again on its own (the rare failure path)
            if file.is_file():
                _read(file, _READERS.get(file.suffix, lambda _: None))
        raise error  # every file reads: not a damaged file (e.g. weights of another model); the library's error
    return state


def _model_loading(accelerator: Accelerator, path: Path, model: torch.nn.Module | None) -> dict[str, bool]:
    """Settings of accelerate's model loading. The state of a model with a bitsandbytes 4-bit base also holds the
    quantisation constants of its frozen weights (absmax, quant_map, ...), which its load_state_dict does not take
    back (the base is loaded quantised from --model_path again, identical): those keys are left to the strict=False
    load once the file is known to hold nothing else and every trained parameter."""

    if model is None or not is_quantized(accelerator.unwrap_model(model)):
        return {}
    from safetensors import safe_open

    file = path / "model.safetensors"
    with safe_open(str(file), framework="pt") as handle:
        saved = set(handle.keys())
    unwrapped = accelerator.unwrap_model(model)
    foreign = sorted(saved - set(unwrapped.state_dict()))
    trained = sorted(name for name, parameter in unwrapped.named_parameters() if parameter.requires_grad)
    lost = [name for name in trained if name not in saved]
    if foreign or lost:
        what = f"holds {foreign[0]!r}, which this model has not" if foreign else f"lacks the trained {lost[0]!r}"
        raise _damaged(file, f"not this model's state ({what})")
    return {"strict": False}


def _torch_load(path: Path, weights_only: bool = True) -> object:
    return load(path, map_location="cpu", weights_only=weights_only)


def _safetensors_load(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(path)


def _custom_state_load(path: Path) -> object:
    return _torch_load(path, weights_only=False)  # as accelerate's load_custom_state reads it


_READERS: dict[str, Callable[[Path], object]] = {".safetensors": _safetensors_load, ".bin": _torch_load,
                                              ".pkl": _torch_load, ".pt": _torch_load, ".json": TrainState.from_file}


def _read(file: Path, reader: Callable[[Path], Read]) -> Read:
    """reader(file), or a TextBoxUserError saying that this file of checkpoint_last is missing or damaged."""
    if file.name.startswith("custom_checkpoint_"):  # only ever read to check it (what it holds is not used)
        reader = cast("Callable[[Path], Read]", _custom_state_load)
    try:
        return reader(file)
    except Exception as error:  # any reader's failure (truncated, corrupt, wrong content) means the same here
        reason = " ".join(str(error).split()).split(". ")[0][:200]  # the first sentence says what is wrong
        raise _damaged(file, f"damaged ({type(error).__name__}: {reason})") from error


def _damaged(file: Path, problem: str) -> TextBoxUserError:
    run_dir = file.parent.parent
    best = run_dir / BEST
    alternative = f", or use --model_path={best} to fine-tune from its best weights" if best.is_dir() else ""
    return TextBoxUserError(f"{run_dir / LAST / file.name} is {problem}; the run cannot continue exactly from "
                            f"it: start a new run (another --filename){alternative}")


def step_checkpoints_kept(max_save: int) -> int | None:
    """How many checkpoint-<step> directories --max_save keeps (None: all). max_save counts as TextBox 2.0 did,
    the best and the latest: checkpoint_best and checkpoint_last are two of them."""
    return None if max_save == -1 else max(max_save - 2, 0)


def keeps_last(max_save: int) -> bool:
    """Whether checkpoint_last (what --resume continues) is written: not with --max_save=0 or 1, TextBox 2.0's
    "no checkpoint" and "the best one only"."""
    return max_save == -1 or max_save >= 2


def keeps_best(max_save: int) -> bool:
    """Whether checkpoint_best outlives the run: --max_save=0 keeps nothing (the test pass still reads it, then
    the run removes it)."""
    return max_save != 0


def planned_validations(config: Config, steps_per_epoch: int) -> int:
    """How many validations (each writes a checkpoint-<step>) training does at most, as the loop reads its
    settings: every valid_steps steps or full epochs, and once more at the end unless the last step was one
    (early stopping may end sooner). 0 with --do_valid=False."""
    if not config.do_valid:
        return 0
    total_steps = config.max_steps or config.epochs * steps_per_epoch
    if config.valid_strategy == "step":
        return total_steps // config.valid_steps + (total_steps % config.valid_steps != 0)
    full_epochs = total_steps // steps_per_epoch
    at_end = total_steps % steps_per_epoch == 0 and full_epochs % config.valid_steps == 0
    return full_epochs // config.valid_steps + (not at_end)


def prune_step_checkpoints(run_dir: Path, keep: int) -> None:
    """Keep the newest ``keep`` checkpoint-<step> directories."""
    found = sorted(Path(run_dir).glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    for old in found[:-keep] if keep else found:
        shutil.rmtree(old)
