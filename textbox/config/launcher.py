"""The launcher's settings against the config, before anything starts.

`accelerate launch` hands its settings to every process as ACCELERATE_* environment variables (a config file under
configs/accelerate/ or command-line flags: --use_deepspeed, --deepspeed_config_file, --gradient_accumulation_steps,
--use_fsdp, ...). Several of them decide what our own keys decide; when both are set and disagree, one of them
would be ignored without a word, so the run is refused with both named. Cheap: environment and one JSON file,
no torch.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Protocol

from textbox.config.errors import TextBoxUserError
from textbox.config.schema import ConfigValue

Where = Callable[[str], str]

_TRUE = ("true", "1", "yes")


def uses_deepspeed(environ: Mapping[str, str]) -> bool:
    return environ.get("ACCELERATE_USE_DEEPSPEED", "false").lower() in _TRUE


def uses_fsdp(environ: Mapping[str, str]) -> bool:
    return environ.get("ACCELERATE_USE_FSDP", "false").lower() in _TRUE


def deepspeed_file(environ: Mapping[str, str]) -> str | None:
    path = environ.get("ACCELERATE_DEEPSPEED_CONFIG_FILE", "none")
    return None if path in ("", "none") else path


def read_deepspeed_config(path: str) -> dict[str, ConfigValue]:
    """The DeepSpeed JSON config a launcher names (ValueError saying what is wrong with it)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ValueError(f"cannot be read ({error.strerror or error})") from error
    try:
        loaded = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"is not valid JSON (line {error.lineno}: {error.msg})") from error
    if not isinstance(loaded, dict):
        raise ValueError("must hold a JSON object")
    return loaded


def launcher_problems(values: Mapping[str, ConfigValue], sources: Mapping[str, str], where: Where,
                      environ: Mapping[str, str] | None = None) -> list[str]:
    """Every disagreement between the launcher's settings (``environ``, default os.environ) and the config; a key
    left at its default gives way to the launcher's setting (``sources`` says which keys were set)."""
    environ = os.environ if environ is None else environ
    problems = _gpu_problems(values, where, environ)
    deepspeed, fsdp = uses_deepspeed(environ), uses_fsdp(environ)
    launcher_steps = _number(environ.get("ACCELERATE_GRADIENT_ACCUMULATION_STEPS"))
    if launcher_steps not in (None, 1) and not deepspeed:
        problems.append(f"the launcher's --gradient_accumulation_steps={launcher_steps:g} and "
                        f"{where('accumulation_steps')}={values['accumulation_steps']}: TextBox accumulates "
                        f"gradients itself; use "
                        f"--accumulation_steps={launcher_steps:g} and leave the launcher's setting out")
    if (deepspeed or fsdp) and values.get("efficient_methods"):
        problems.append(f"{where('efficient_methods')}={values['efficient_methods']} with "
                        f"{'DeepSpeed' if deepspeed else 'FSDP'}: checkpoints of sharded training hold the whole "
                        f"model; train efficient methods with plain DDP (no --use_deepspeed/--use_fsdp)")
    if deepspeed:
        problems.extend(_deepspeed_problems(values, sources, where, environ, launcher_steps))
    sharded = sharded_training(environ)
    if sharded and values.get("decoding_backend") == "ctranslate2":
        problems.append(f"{where('decoding_backend')}=ctranslate2 with {sharded}: CTranslate2 converts the whole "
                        f"model's weights, which are split over the processes here; use --decoding_backend=auto "
                        f"or transformers (generate runs on the sharded model)")
    return problems


def sharded_training(environ: Mapping[str, str] | None = None) -> str | None:
    """"FSDP" or "DeepSpeed ZeRO-3" when the launcher splits the weights over the processes (no process holds
    the whole model, so CTranslate2 has nothing to convert), else None."""
    environ = os.environ if environ is None else environ
    if uses_fsdp(environ):
        return "FSDP"
    if uses_deepspeed(environ) and _zero_stage(environ) == 3:
        return "DeepSpeed ZeRO-3"
    return None


def _zero_stage(environ: Mapping[str, str]) -> int | None:
    """The DeepSpeed ZeRO stage: the config file's zero_optimization.stage, else the launcher's --zero_stage."""
    path = deepspeed_file(environ)
    if path is not None:
        try:
            stage = read_deepspeed_config(path).get("zero_optimization", {}).get("stage")
        except (ValueError, AttributeError):
            return None  # reported by _deepspeed_problems
        number = _number(stage)
        return None if number is None else int(number)
    number = _number(environ.get("ACCELERATE_DEEPSPEED_ZERO_STAGE", "2"))
    return None if number is None else int(number)


def _gpu_problems(values: Mapping[str, ConfigValue], where: Where, environ: Mapping[str, str]) -> list[str]:
    """Each local process takes the device of its local rank among the gpu_id list (accelerate picks
    cuda:<LOCAL_RANK> of CUDA_VISIBLE_DEVICES): the list needs one id per process on this machine."""
    if values.get("gpu_id") is None:
        return []
    ids = gpu_id_list(values["gpu_id"])
    processes = int(environ.get("LOCAL_WORLD_SIZE", "1") or 1)
    if len(ids) >= processes:
        return []
    return [f"{where('gpu_id')}={','.join(ids)} names {len(ids)} device(s) for the {processes} processes the "
            f"launcher starts on this machine; give one id per process (e.g. --gpu_id="
            f"{','.join(str(index) for index in range(processes))}) or start fewer (--num_processes)"]


def gpu_id_list(value: object) -> list[str]:
    """--gpu_id=1, --gpu_id='0,1' or --gpu_id=[0,1] as a list of device ids."""
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    return [str(item).strip() for item in items if str(item).strip()]


def _deepspeed_problems(values: Mapping[str, ConfigValue], sources: Mapping[str, str], where: Where,
                        environ: Mapping[str, str], launcher_steps: float | None) -> list[str]:
    path = deepspeed_file(environ)
    settings: dict[str, ConfigValue] = {}
    if path is not None:
        try:
            settings = read_deepspeed_config(path)
        except ValueError as error:
            return [f"the launcher's DeepSpeed config file {path} {error}"]
    source = f"DeepSpeed config {path}" if path else "the launcher's DeepSpeed settings"
    problems: list[str] = []
    steps = _number(settings.get("gradient_accumulation_steps")) if path else launcher_steps
    if steps not in (None, 1) or values["accumulation_steps"] != 1:
        ours = values["accumulation_steps"]
        theirs = f"gradient_accumulation_steps={steps:g} in {source}" if steps is not None else ""
        problems.append(f"{where('accumulation_steps')}={ours}{' and ' + theirs if theirs else ''}: under "
                        f"DeepSpeed the engine steps the optimiser after every backward, so TextBox's accumulation "
                        f"cannot hold gradients back; set both to 1 (or 'auto') and raise --train_batch_size or the "
                        f"number of processes instead")
    explicit = lambda key: sources.get(key, "default") != "default"  # noqa: E731 - set by the user
    if "optimizer" in settings:
        for key in ("optimizer", "optimizer_kwargs"):
            if explicit(key):
                problems.append(f"{where(key)}={values[key]!r} and the optimizer of {source} "
                                f"({settings['optimizer'].get('type', '?')}): the engine would use the file's; "
                                f"remove one of them")
        lr = _number(settings["optimizer"].get("params", {}).get("lr"))
        if lr is not None and explicit("learning_rate") and lr != values["learning_rate"]:
            problems.append(f"{where('learning_rate')}={values['learning_rate']:g} and lr={lr:g} in {source}; "
                            f"make them equal or set the file's to \"auto\"")
    if "scheduler" in settings:
        for key in ("scheduler", "warmup_steps", "warmup_ratio"):
            if explicit(key):
                problems.append(f"{where(key)}={values[key]!r} and the scheduler of {source} "
                                f"({settings['scheduler'].get('type', '?')}): the engine would use the file's; "
                                f"remove one of them")
    problems.extend(_precision_problems(values, where, environ, settings, source))
    clipping = (_number(settings.get("gradient_clipping")) if path
                else _number(environ.get("ACCELERATE_GRADIENT_CLIPPING")))
    if clipping is not None and explicit("grad_clip") and clipping != (values["grad_clip"] or 0.0):
        problems.append(f"{where('grad_clip')}={values['grad_clip']} and gradient_clipping={clipping:g} in {source}; "
                        f"DeepSpeed clips by its own setting: make them equal or set the file's to \"auto\"")
    micro = _number(settings.get("train_micro_batch_size_per_gpu"))
    if micro is not None and explicit("train_batch_size") and micro != values["train_batch_size"]:
        problems.append(f"{where('train_batch_size')}={values['train_batch_size']} and "
                        f"train_micro_batch_size_per_gpu={micro:g} in {source}; make them equal or set the file's "
                        f"to \"auto\"")
    return problems


@dataclass(frozen=True)
class Launch:
    """What the launcher and the config agree the run's processes use, read once before anything starts: the plain
    values the pipeline sets the devices and the Accelerator up with."""

    gpu_ids: list[str] | None  # --gpu_id as device ids; None: the devices the launcher gives
    mixed_precision: str  # the Accelerator's (agreed_mixed_precision)
    gpu_only: str | None  # sharded training the launcher asks for, which accelerate runs on GPU processes only


class SourcedValues(Protocol):
    """A Config as agreed_launch reads it (the loader imports this module, so not the class itself)."""

    def __getitem__(self, name: str) -> ConfigValue: ...

    def source_of(self, name: str) -> str: ...


def agreed_launch(config: SourcedValues, environ: Mapping[str, str] | None = None) -> Launch:
    """The run's Launch (the launcher's settings: ``environ``, default os.environ)."""
    environ = os.environ if environ is None else environ
    gpu_only = ("FSDP (--use_fsdp / distributed_type: FSDP)" if uses_fsdp(environ) else
                "DeepSpeed (--use_deepspeed / distributed_type: DEEPSPEED)" if uses_deepspeed(environ) else None)
    ids = None if config["gpu_id"] is None else gpu_id_list(config["gpu_id"])
    return Launch(ids, agreed_mixed_precision(config, environ), gpu_only)


def agreed_mixed_precision(config: SourcedValues, environ: Mapping[str, str] | None = None) -> str:
    """The precision the Accelerator is built with: the launcher's --mixed_precision and the config must not
    silently disagree. `accelerate launch` always exports one ('no' when given none), so its 'no' leaves the choice
    to the config; a config that leaves mixed_precision at its default takes the launcher's."""
    environ = os.environ if environ is None else environ
    launcher = environ.get("ACCELERATE_MIXED_PRECISION")
    if launcher in (None, "no", config["mixed_precision"]):
        return config["mixed_precision"]
    if config.source_of("mixed_precision") == "default":
        return launcher
    raise TextBoxUserError(f"--mixed_precision={config['mixed_precision']} disagrees with the launcher's "
                           f"--mixed_precision={launcher}; make them equal (or set only one of them)")


def run_mixed_precision(values: Mapping[str, ConfigValue], environ: Mapping[str, str]) -> str:
    """The run's mixed precision: --mixed_precision, or the launcher's when the config leaves it at no (a
    disagreement between the two is refused when the Accelerator is built)."""
    launcher = environ.get("ACCELERATE_MIXED_PRECISION", "no")
    return values["mixed_precision"] if values["mixed_precision"] != "no" or launcher == "no" else launcher


def _precision_problems(values: Mapping[str, ConfigValue], where: Where, environ: Mapping[str, str],
                        settings: Mapping[str, ConfigValue], source: str) -> list[str]:
    ours = run_mixed_precision(values, environ)
    for kind in ("fp16", "bf16"):
        enabled = settings.get(kind, {}).get("enabled") if isinstance(settings.get(kind), dict) else None
        if enabled is True and ours != kind:
            return [f"{where('mixed_precision')}={ours} and {kind}.enabled=true in {source}; make them agree "
                    f"(--mixed_precision={kind}, or \"enabled\": \"auto\" in the file)"]
        if enabled is False and ours == kind:
            return [f"{where('mixed_precision')}={ours} and {kind}.enabled=false in {source}; make them agree"]
    return []


def _number(value: ConfigValue) -> float | None:
    """A numeric setting, or None for absent / "auto"."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def worker_gpu_ids(gpu_id: object, workers: int) -> list[str] | None:
    """The devices of each of a study's ``workers`` local worker processes: the gpu_id list cut into equal
    consecutive groups (--gpu_id=0,1,2,3 --workers=2: '0,1' and '2,3'), so that no two concurrent runs share a
    device. None without gpu_id or with one worker (the run keeps the whole list). A list that cannot give every
    worker the same number of devices (at least one) is refused: some would share or some would be left out."""
    if gpu_id is None or workers <= 1:
        return None
    ids = gpu_id_list(gpu_id)
    if len(ids) < workers or len(ids) % workers:
        raise TextBoxUserError(f"--gpu_id={','.join(ids)} cannot give each of the --workers={workers} worker "
                               f"processes its own device(s): give a multiple of {workers} ids (each worker takes "
                               f"an equal consecutive share), or fewer --workers")
    size = len(ids) // workers
    return [",".join(ids[start:start + size]) for start in range(0, len(ids), size)]
