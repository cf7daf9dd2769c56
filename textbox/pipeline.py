"""One run, top to bottom: accelerator -> data -> model -> run directory -> train -> test -> results.json.

run_textbox.py, run_hyper.py and run_multi_seed.py all call `run(config)`; nothing patches the trainer.
"""
from __future__ import annotations

import importlib.util
import json
import os
import time
from pathlib import Path
from typing import Any

from textbox.config import Config, TextBoxUserError
from textbox.utils.atomic import write_text_atomic


def export_gpu_id(config: Config) -> None:
    """gpu_id must reach CUDA_VISIBLE_DEVICES before torch initialises CUDA (i.e. before the Accelerator); the
    devices it names must then all be there: a run never falls back to other devices (or the CPU) silently.

    torch.cuda.device_count() is asked only after the export, so that CUDA starts with the chosen devices (in a
    process where CUDA is already initialised, e.g. a second in-process run, the first run's devices stay)."""
    if config.gpu_id is None:
        return
    ids = gpu_ids(config.gpu_id)
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(ids)
    import torch

    visible = torch.cuda.device_count() if torch.version.cuda else 0
    check_gpu_ids(ids, visible, _machine_gpu_count(), cuda_build=torch.version.cuda is not None)


def gpu_ids(value: Any) -> list[str]:
    """--gpu_id=1, --gpu_id='0,1' or --gpu_id=[0,1] as a list of device ids."""
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    return [str(item).strip() for item in items if str(item).strip()]


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


def resolve_mixed_precision(config: Config) -> str:
    """The launcher's --mixed_precision and the config must not silently disagree. `accelerate launch` always
    exports one ('no' when given none), so its 'no' leaves the choice to the config."""
    launcher = os.environ.get("ACCELERATE_MIXED_PRECISION")
    if launcher in (None, "no", config.mixed_precision):
        return config.mixed_precision
    if config.source_of("mixed_precision") == "default":
        return launcher
    raise TextBoxUserError(f"--mixed_precision={config.mixed_precision} disagrees with the launcher's "
                           f"--mixed_precision={launcher}; make them equal (or set only one of them)")


def build_accelerator(config: Config) -> Any:
    import torch
    from accelerate import Accelerator, DataLoaderConfiguration
    from accelerate.utils import DistributedDataParallelKwargs

    precision = resolve_mixed_precision(config)
    cuda = torch.cuda.is_available()
    from textbox.trainer.sharding import refuse_on_cpu  # accelerate would drop FSDP/DeepSpeed on CPU silently

    refuse_on_cpu(cuda)
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


def run(config: Config) -> dict[str, Any]:
    """Train, validate and test as the config says; return (and write) the results.

    Everything that can fail on the user's input (config, devices, run directory name, data, model) is tried
    before the run directory is made; a failure after it exists is written to its project.log and the run marked
    failed (a retry with the same --filename then replaces it)."""
    export_gpu_id(config)
    accelerator = build_accelerator(config)
    if accelerator.mixed_precision != config.mixed_precision:  # the launcher's: config.yaml records what ran
        config = config.replace(mixed_precision=accelerator.mixed_precision)
    try:
        return _run(config, accelerator)
    except BaseException as error:
        from textbox.utils.distributed import is_shared, leave_process_group

        if not is_shared(error):  # a failure of every process leaves once it is shown (textbox.cli)
            leave_process_group(meet_first=False)
        raise
    finally:
        from textbox.utils.logging import release_log_file

        release_log_file()


def _run(config: Config, accelerator: Any) -> dict[str, Any]:
    from textbox.trainer.run_dir import check_free_space, make_run_dir, peak_checkpoint_bytes, plan_run_dir
    from textbox.utils.logging import attach_log_file, start_logging

    _quiet_libraries()
    logger = start_logging(accelerator.is_main_process)
    started = time.perf_counter()
    logger.info(f"{accelerator.num_processes} process(es) on {accelerator.device}, "
                f"mixed precision {accelerator.mixed_precision}")
    for note in config.notes:  # the model family read from a checkpoint, a run's config.yaml as a layer, ...
        logger.info(note)
    logger.info(config_summary(config))
    run_dir = plan_run_dir(config, accelerator)
    from textbox.trainer.nodes import disk_layout  # machines without a shared disk keep their own checkpoints

    disk_layout(accelerator, run_dir)
    if config.resume:  # a damaged checkpoint_last is named before any file of the run changes
        from textbox.trainer.checkpoint import LAST, check_resume_files, find_resume_dir

        if find_resume_dir(run_dir) is not None:
            check_resume_files(accelerator, run_dir / LAST)
    prepared = _prepare(config, accelerator, logger)
    if config.do_train:  # the checkpoints must fit on the disk that will hold the run directory
        model = prepared[1]
        weight_bytes = sum(parameter.numel() * parameter.element_size() for parameter in model.parameters())
        check_free_space(_existing_ancestor(run_dir), peak_checkpoint_bytes(weight_bytes, config.max_save),
                         accelerator)
    make_run_dir(run_dir, config, accelerator)
    if accelerator.is_main_process:
        attach_log_file(run_dir)
    try:
        results = _run_in_directory(config, accelerator, run_dir, logger, prepared)
        _write_results(results, run_dir, started, accelerator, logger)
    except BaseException as error:
        shown = _failed(error, run_dir, accelerator, logger)
        if shown is error:
            raise
        raise shown from error
    accelerator.wait_for_everyone()
    accelerator.end_training()
    return results


def _write_results(results: dict[str, Any], run_dir: Path, started: float, accelerator: Any, logger: Any) -> None:
    from textbox.trainer.run_dir import clear_failed_mark

    results["run_dir"] = str(run_dir)
    results["seconds"] = round(time.perf_counter() - started, 1)
    results["device"] = str(accelerator.device)
    results["num_processes"] = accelerator.num_processes
    if accelerator.is_main_process:
        clear_failed_mark(run_dir)  # a resumed run that failed once and now finished
        from textbox.utils.json_numbers import finite_or_null  # NaN/inf figures: null, so the file is strict JSON

        text = json.dumps(finite_or_null(results), indent=2, allow_nan=False)
        write_text_atomic(run_dir / "results.json", text + "\n")
        _log_summary(logger, results)


def _existing_ancestor(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _run_in_directory(config: Config, accelerator: Any, run_dir: Path, logger: Any,
                      prepared: tuple[Any, ...]) -> dict[str, Any]:
    from textbox.trainer.run_dir import write_run_config

    if accelerator.is_main_process:
        write_run_config(config, run_dir)  # not rewritten when a resumed run's config is unchanged
    from textbox.trainer.nodes import copy_to_other_disks  # --resume reads it on every machine

    copy_to_other_disks(accelerator, run_dir / "config.yaml")
    logger.info(f"run directory {run_dir}")
    if config.tracker != "none":
        accelerator.project_configuration.set_directories(str(run_dir))
        accelerator.project_configuration.logging_dir = str(run_dir)  # set_directories keeps an older one
        accelerator.init_trackers("textbox", config=_tracker_hparams(config))
    return _train_and_test(config, accelerator, run_dir, logger, *prepared)


def _failed(error: BaseException, run_dir: Path, accelerator: Any, logger: Any) -> BaseException:
    """Record a failure in the run directory (project.log, FAILED) and say what the console should show: the
    error itself when it explains itself, else one line with the log's path (the traceback is in the log)."""
    import logging
    import traceback

    from textbox.config import RunInterrupted, TextBoxError
    from textbox.trainer.run_dir import FAILED_MARKER, mark_failed
    from textbox.utils.logging import log_file_path, log_to_file

    if isinstance(error, RunInterrupted):  # checkpoint_last is saved: the run continues with --resume
        log_to_file(logging.WARNING, str(error))
        return error
    if isinstance(error, TextBoxError):
        message, shown = str(error), error
    elif isinstance(error, Exception):
        message = f"{type(error).__name__}: {error}"
        log = log_file_path() or run_dir / "project.log"
        shown = TextBoxError(f"unexpected {message}\n(the traceback is in {log})")
    else:  # KeyboardInterrupt, SystemExit: not a failure of the run's own making, but the run did not finish
        message, shown = f"stopped by {type(error).__name__} before the run finished", error
    log_to_file(logging.ERROR, f"the run failed: {message}")
    if not isinstance(error, TextBoxError):
        log_to_file(logging.ERROR, "".join(traceback.format_exception(error)).rstrip())
    if accelerator.is_main_process:
        mark_failed(run_dir, message)
        log_to_file(logging.ERROR, f"marked failed ({run_dir / FAILED_MARKER}); a retry with the same --filename "
                                   f"replaces this run unless it has a checkpoint_last to --resume from")
    return shown


def _prepare(config: Config, accelerator: Any, logger: Any) -> tuple[Any, Any, Any, Any]:
    """Data, model and tokenised splits, before the run directory exists (a bad path or checkpoint fails here,
    with nothing written). The main process goes first (builds, tokenizer training and caches happen once);
    a failure on any process is raised on all of them, shown once."""
    from accelerate.utils import set_seed

    from textbox.data import read_splits, tokenize_splits
    from textbox.model.registry import get_builder
    from textbox.utils.distributed import main_process_first

    set_seed(config.seed)
    testing = config.do_test and not config.input_file  # --input_file takes the test split's place
    wanted = [name for name, needed in (("train", config.do_train), ("valid", config.do_train and config.do_valid),
                                        ("test", testing)) if needed]

    def build() -> tuple[Any, Any, Any, Any]:
        if config.pretrain_task == "denoising":  # train.src (and valid.src) alone, noised on the fly
            from textbox.data.denoising import read_source_only_splits

            splits = read_source_only_splits(config, wanted, log=logger.info)
        else:
            splits = read_splits(config, wanted, log=logger.info)
        for name, split in splits.items():
            logger.info(f"{name}: {len(split)} examples")
        model, tokenizer = get_builder(config.model)(config, splits.get("train"))
        if config.efficient_methods:  # after loading, before tokenising: nothing here depends on it
            from textbox.model.efficient import apply_efficient_methods

            model = apply_efficient_methods(config, model, logger)
        tokenized = tokenize_splits(config, splits, tokenizer, logger.info)
        return splits, model, tokenizer, tokenized

    return main_process_first(accelerator, build)


def _train_and_test(config: Config, accelerator: Any, run_dir: Path, logger: Any, splits: Any, model: Any,
                    tokenizer: Any, tokenized: Any) -> dict[str, Any]:
    from textbox.data.collate import make_collator
    from textbox.model.loading import count_parameters
    from textbox.trainer.loop import EvalSet, Trainer

    trainable, total = count_parameters(model)
    logger.info(f"model {config.model}: {total:,} parameters, {trainable:,} trainable")

    trainer = Trainer(config, accelerator, model, tokenizer, make_collator(config, model, tokenizer), run_dir, logger)
    results: dict[str, Any] = {}
    if config.do_train:
        valid = EvalSet(tokenized["valid"], splits["valid"]) if "valid" in splits else None
        started = time.perf_counter()
        state = trainer.fit(tokenized["train"], valid)
        results["train_seconds"] = round(time.perf_counter() - started, 1)  # validation included
        if config.compile:
            results["compile_seconds"] = round(trainer.compile_seconds, 1)  # included in train_seconds
        results["valid"] = state.best_valid
        results["best_step"] = state.best_step
        results["steps"] = state.step
    if config.input_file:
        from textbox.inference import run_inference

        run_inference(config, trainer, run_dir)
    elif config.do_test:
        started = time.perf_counter()
        scores, sequences = trainer.test(EvalSet(tokenized["test"], splits["test"]))
        results["test_seconds"] = round(time.perf_counter() - started, 1)
        results["test"] = scores
        if accelerator.is_main_process:
            from textbox.evaluator.generate import write_generations

            if every := write_generations(run_dir / "generation.txt", sequences):
                logger.info(f"all {len(sequences[0])} generations per test example in {every}")
    if getattr(trainer, "metric_details", None):
        results["metric_details"] = trainer.metric_details
    return results


def _quiet_libraries() -> None:
    """Our own progress bars and log lines say what happens; the libraries' per-file bars only add noise."""
    import logging

    import datasets
    import transformers

    transformers.utils.logging.disable_progress_bar()
    datasets.disable_progress_bars()
    # accelerate warns on every save that tied embeddings are stored once; loading re-ties them.
    logging.getLogger("accelerate.utils.other").setLevel(logging.ERROR)


def config_summary(config: Config) -> str:
    """The keys that differ from their defaults and where each was set: what makes this run this run."""
    from textbox.config.schema import DEFAULTS

    changed = [f"  {key} = {value!r}  ({config.source_of(key)})" for key, value in config.items()
               if value != DEFAULTS[key]]
    return "\n".join(["config (keys that differ from the defaults, and where they were set):", *changed])


def _tracker_hparams(config: Config) -> dict[str, Any]:
    """Trackers accept scalars only: lists, dicts and None become strings."""
    return {k: v if isinstance(v, (int, float, str, bool)) else str(v) for k, v in config.items()}


def _log_summary(logger: Any, results: dict[str, Any]) -> None:
    rows = [(split, name, value) for split in ("valid", "test") for name, value in results.get(split, {}).items()]
    if not rows:
        return
    lines = ["", f"{'split':<6} {'figure':<14} {'value':>10}"]
    lines += [f"{split:<6} {name:<14} {value:>10.4f}" for split, name, value in rows]
    logger.info("\n".join(lines) + f"\nfinished in {results['seconds']} s; outputs in {results['run_dir']}")
