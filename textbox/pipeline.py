"""One run, top to bottom: accelerator -> run directory -> data -> model -> train -> test -> results.json.

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
    """gpu_id must reach CUDA_VISIBLE_DEVICES before torch initialises CUDA (i.e. before the Accelerator)."""
    if config.gpu_id is None:
        return
    ids = config.gpu_id if isinstance(config.gpu_id, (list, tuple)) else [config.gpu_id]
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(str(i).strip() for i in ids)


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
    """Train, validate and test as the config says; return (and write) the results."""
    from textbox.trainer.run_dir import prepare_run_dir, write_run_config

    export_gpu_id(config)
    accelerator = build_accelerator(config)
    run_dir = prepare_run_dir(config, accelerator)
    from textbox.utils.logging import setup_logging

    logger = setup_logging(run_dir, accelerator.is_main_process)
    _quiet_libraries()
    started = time.perf_counter()
    if accelerator.is_main_process:
        write_run_config(config, run_dir)
    logger.info(f"run directory {run_dir}; {accelerator.num_processes} process(es) on {accelerator.device}, "
                f"mixed precision {accelerator.mixed_precision}")
    for note in config.notes:  # the model family read from a checkpoint, a run's config.yaml as a layer, ...
        logger.info(note)
    logger.info(config_summary(config))
    if config.tracker != "none":
        accelerator.project_configuration.set_directories(str(run_dir))
        accelerator.project_configuration.logging_dir = str(run_dir)  # set_directories keeps an older one
        accelerator.init_trackers("textbox", config=_tracker_hparams(config))
    results = _train_and_test(config, accelerator, run_dir, logger)
    results["run_dir"] = str(run_dir)
    results["seconds"] = round(time.perf_counter() - started, 1)
    if accelerator.is_main_process:
        from textbox.utils.json_numbers import finite_or_null  # NaN/inf figures: null, so the file is strict JSON

        text = json.dumps(finite_or_null(results), indent=2, allow_nan=False)
        write_text_atomic(run_dir / "results.json", text + "\n")
        _log_summary(logger, results)
    accelerator.wait_for_everyone()
    accelerator.end_training()
    return results


def _train_and_test(config: Config, accelerator: Any, run_dir: Path, logger: Any) -> dict[str, Any]:
    from accelerate.utils import set_seed

    from textbox.data import read_splits, tokenize_splits
    from textbox.data.collate import make_collator
    from textbox.model.loading import count_parameters
    from textbox.model.registry import get_builder
    from textbox.trainer.loop import EvalSet, Trainer
    from textbox.trainer.run_dir import check_free_space, peak_checkpoint_bytes

    set_seed(config.seed)
    testing = config.do_test and not config.input_file  # --input_file takes the test split's place
    wanted = [name for name, needed in (("train", config.do_train), ("valid", config.do_train and config.do_valid),
                                        ("test", testing)) if needed]
    with accelerator.main_process_first():  # builds, tokenizer training and caches happen once, on rank 0
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
    trainable, total = count_parameters(model)
    logger.info(f"model {config.model}: {total:,} parameters, {trainable:,} trainable")
    if config.do_train:
        weight_bytes = sum(parameter.numel() * parameter.element_size() for parameter in model.parameters())
        check_free_space(run_dir, peak_checkpoint_bytes(weight_bytes, config.max_save), accelerator)

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
