"""One run, top to bottom: config -> build (data, model, tokenizer) -> fit -> evaluate -> results.json.

run_textbox.py, run_hyper.py and run_multi_seed.py all call `run(config)`; nothing patches the trainer. This module
alone decides the order; each step is a function of its own (devices, build, steps, results).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textbox.checks import check_config
from textbox.config import Config

if TYPE_CHECKING:  # the hook's module imports torch: not at import of the pipeline (--help)
    from textbox.pipeline.validation import OnValidation


def run(config: Config, *, on_validation: OnValidation | None = None) -> dict[str, Any]:
    """Train, validate and test as the config says; return (and write) the results. ``on_validation`` is called on
    the main process after each validation with the optimiser step and the validation figures.

    Everything that can fail on the user's input (config, devices, run directory name, data, model) is tried
    before the run directory is made; a failure after it exists is written to its project.log and the run marked
    failed (a retry with the same --filename then replaces it)."""
    from textbox.pipeline.devices import build_accelerator, export_gpu_id

    check_config(config)  # every problem at once, before anything is built (callers that skip textbox.checks too)
    export_gpu_id(config)  # before anything starts CUDA
    accelerator = build_accelerator(config)
    if accelerator.mixed_precision != config.mixed_precision:  # the launcher's: config.yaml records what ran
        config = config.replace(mixed_precision=accelerator.mixed_precision)
    try:
        return _run(config, accelerator, on_validation)
    except BaseException as error:
        from textbox.pipeline.distributed import is_shared, leave_process_group

        if not is_shared(error):  # a failure of every process leaves once it is shown (textbox.cli)
            leave_process_group(meet_first=False)
        raise
    finally:
        from textbox.utils.logging import release_log_file

        release_log_file()


def _run(config: Config, accelerator: Any, on_validation: OnValidation | None) -> dict[str, Any]:
    from textbox.pipeline.build import build, weight_bytes
    from textbox.pipeline.results import failed, write_results
    from textbox.trainer.disks import disk_layout
    from textbox.pipeline.run_dir import check_free_space, make_run_dir, peak_checkpoint_bytes, plan_run_dir
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
    disk_layout(accelerator, run_dir)  # machines without a shared disk keep their own checkpoints (trainer.disks)
    if config.resume:  # a damaged checkpoint_last is named before any file of the run changes
        from textbox.trainer.checkpoint import LAST, check_resume_files, find_resume_dir

        if find_resume_dir(run_dir) is not None:
            check_resume_files(accelerator, run_dir / LAST)
    built = build(config, accelerator, logger)
    if config.do_train:  # the checkpoints must fit on the disk that will hold the run directory
        check_free_space(_existing_ancestor(run_dir), peak_checkpoint_bytes(weight_bytes(built.model),
                                                                             config.max_save), accelerator)
    make_run_dir(run_dir, config, accelerator)
    if accelerator.is_main_process:
        attach_log_file(run_dir)
    try:
        _open_run_directory(config, accelerator, run_dir, logger)
        results, examples = _fit_and_evaluate(config, accelerator, run_dir, logger, built, on_validation)
        write_results(results, run_dir, started, accelerator, logger, examples)
    except BaseException as error:
        shown = failed(error, run_dir, accelerator, logger)
        if shown is error:
            raise
        raise shown from error
    accelerator.wait_for_everyone()
    accelerator.end_training()
    return results


def _fit_and_evaluate(config: Config, accelerator: Any, run_dir: Path, logger: Any, built: Any,
                      on_validation: OnValidation | None) -> tuple[dict[str, Any], str]:
    """Train (when do_train), then test or generate, with one Evaluator for validation and test; the results and
    the test examples to show."""
    from textbox.data.batch_layout import make_collator
    from textbox.evaluator.evaluator import Evaluator
    from textbox.pipeline.build import log_model_size
    from textbox.pipeline.steps import Trained, evaluate, fit

    log_model_size(config, built.model, logger)
    collator = make_collator(config, built.tokenizer)
    evaluator = Evaluator(config, accelerator, built.tokenizer, collator)
    trained = Trained(built.model)
    if config.do_train:
        trained = fit(config, accelerator, run_dir, logger, built, evaluator, collator, on_validation)
    evaluated = evaluate(config, accelerator, run_dir, logger, built, evaluator, trained)
    return {**trained.results, **evaluated.results}, evaluated.examples


def _open_run_directory(config: Config, accelerator: Any, run_dir: Path, logger: Any) -> None:
    """config.yaml (not rewritten when a resumed run's config is unchanged) and the tracker's files."""
    from textbox.trainer.disks import copy_to_other_disks
    from textbox.pipeline.run_dir import write_run_config

    if accelerator.is_main_process:
        write_run_config(config, run_dir)
    copy_to_other_disks(accelerator, run_dir / "config.yaml")  # --resume reads it on every machine
    logger.info(f"run directory {run_dir}")
    if config.tracker != "none":
        accelerator.project_configuration.set_directories(str(run_dir))
        accelerator.project_configuration.logging_dir = str(run_dir)  # set_directories keeps an older one
        accelerator.init_trackers("textbox", config=_tracker_hparams(config))


def _existing_ancestor(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


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

    changed = [f"  {key} = {value!r}  ({_origin(config, key)})" for key, value in config.items()
               if value != DEFAULTS[key]]
    return "\n".join(["config (keys that differ from the defaults, and where they were set):", *changed])


def _origin(config: Config, key: str) -> str:
    """Where a key was set; a dict merged from several layers names the layer of each of its entries."""
    by_origin: dict[str, list[str]] = {}
    for entry, origin in config.entry_sources(key).items():
        by_origin.setdefault(origin, []).append(str(entry))
    if len(by_origin) < 2:
        return config.source_of(key)
    return "; ".join(f"{', '.join(entries)}: {origin}" for origin, entries in by_origin.items())


def _tracker_hparams(config: Config) -> dict[str, Any]:
    """Trackers accept scalars only: lists, dicts and None become strings."""
    return {k: v if isinstance(v, (int, float, str, bool)) else str(v) for k, v in config.items()}
