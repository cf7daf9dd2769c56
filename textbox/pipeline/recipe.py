"""One run, top to bottom: config -> devices -> run directory -> build (data, model, tokenizer) -> fit -> evaluate
-> results.json.

run_textbox.py, run_hyper.py and run_multi_seed.py all call `run(config)`; nothing patches the trainer. This module
alone decides the order, and reads in it: `run` sets up, `_run` opens the run directory, `build` reads the data and
builds the model, `fit` builds the Trainer and trains, `evaluate` tests checkpoint_best (or generates for
--input_file), `write_results` closes. The package is imported only to run (textbox.cli imports it after --help and
the config checks), so torch is imported here at the top like everything else.
"""
from __future__ import annotations

import logging
import shutil
import time
import dataclasses
from dataclasses import dataclass, field
from typing import Mapping, NamedTuple

import datasets
import torch
import transformers
from accelerate import Accelerator
from accelerate.utils import set_seed
from transformers import PreTrainedTokenizerBase

from textbox.checks import check_config
from textbox.config import Config, TextBoxError
from textbox.config.launcher import agreed_launch
from textbox.data.collate import make_collator
from textbox.data.readers import read_source_only_splits, read_splits
from textbox.data.split import Split
from textbox.data.streamed import ReadSplit, StreamedSplit
from textbox.data import shots
from textbox.data.tokenize import tokenize_splits, uses_chat_template
from textbox.evaluator.eval_report import EvalSet
from textbox.evaluator.evaluator import Evaluator
from textbox.decoding.generate import generation_settings, write_generations
from textbox.model.adapter_files import inner_model
from textbox.model.build import build_model
from textbox.model.built_model import EfficientRecord
from textbox.model.loading import count_parameters, load_saved_model
from textbox.model.run_generation import record_run_generation
from textbox.pipeline.processes import (announce_failure, build_accelerator, export_gpu_id,
                                        failure_of_another_process, failure_recorded, is_shared,
                                        leave_process_group, main_process_first)
from textbox.pipeline.inference import generate_for_inputs, read_and_encode
from textbox.pipeline.model_card import write_model_card
from textbox.pipeline.results import evaluation_interrupted, failed, format_examples, write_results
from textbox.pipeline.run_dir import (check_free_space, config_summary, make_run_dir, peak_checkpoint_bytes,
                                      plan_run_dir, write_run_config)
from textbox.pipeline.trackers import finish_trackers, start_trackers
from textbox.pipeline.validation import OnValidation, RunValidation
from textbox.trainer.checkpoint import (BEST, LAST, check_resume_files, find_resume_dir, keeps_best,
                                       planned_validations)
from textbox.trainer.context import RunContext, TrainerContext
from textbox.trainer.disks import copy_to_other_disks, disk_layout, writes_checkpoints
from textbox.trainer.loaders import steps_per_epoch
from textbox.trainer.loop import Trainer
from textbox.trainer.signals import raise_on_signals
from textbox.utils.atomic import remove_stale_staging, restore_interrupted, write_text_atomic
from textbox.utils.hub import push_folder
from textbox.utils.logging import attach_log_file, release_log_file, start_logging

def run(config: Config, *, on_validation: OnValidation | None = None) -> dict[str, object]:
    """Train, validate and test as the config says; return (and write) the results. ``on_validation`` is called on
    the main process after each validation with the optimiser step and the validation figures.

    Everything that can fail on the user's input (config, devices, run directory name, data, model) is tried
    before the run directory is made; a failure after it exists is written to its project.log and the run marked
    failed (a retry with the same --filename then replaces it)."""
    check_config(config)  # every problem at once, before anything is built (callers that skip textbox.checks too)
    launch = agreed_launch(config)  # what the launcher (accelerate launch) and the config agree on
    export_gpu_id(launch.gpu_ids)  # before anything starts CUDA
    accelerator = build_accelerator(config, launch)
    if accelerator.mixed_precision != config.mixed_precision:  # the launcher's: config.yaml records what ran
        config = config.replace(mixed_precision=accelerator.mixed_precision)
    try:
        return _run(config, accelerator, on_validation)
    except BaseException as error:
        shown = failure_of_another_process(error)  # a call broken by another process's failure: that one, quiet
        failure_recorded(shown)  # its FAILED mark and log are written: the failing process may exit
        # a failure of every process, or one announced to the others, leaves once it is shown (textbox.cli)
        if not is_shared(shown) and not announce_failure(shown):
            leave_process_group(meet_first=False)
        if shown is error:
            raise
        raise shown from error
    finally:
        release_log_file()


def _run(config: Config, accelerator: Accelerator, on_validation: OnValidation | None) -> dict[str, object]:
    _quiet_libraries()
    logger = start_logging(accelerator.is_main_process)
    started = time.perf_counter()
    logger.info(f"{accelerator.num_processes} process(es) on {accelerator.device}, "
                f"mixed precision {accelerator.mixed_precision}")
    for note in config.notes:  # the model family read from a checkpoint, a run's config.yaml as a layer, ...
        logger.info(note)
    logger.info(config_summary(config))
    run = RunContext(config, accelerator, plan_run_dir(config, accelerator), logger)
    disk_layout(accelerator, run.run_dir)  # machines without a shared disk keep their own checkpoints
    if config.resume and find_resume_dir(run.run_dir) is not None:  # a damaged checkpoint_last is named first
        check_resume_files(accelerator, run.run_dir / LAST)
    if config.resume and writes_checkpoints(accelerator):  # half-written copies of a killed process: disk to free
        stale = remove_stale_staging(run.run_dir)
        if stale:
            logger.info(f"removed what an interrupted process left unfinished in {run.run_dir}: {', '.join(stale)}")
    built = build(config, accelerator, logger)
    config = built.config  # its lengths fitted to the model: what tokenised the data, and what config.yaml records
    run = dataclasses.replace(run, config=config)
    evaluator = Evaluator(config, accelerator, built.tokenizer, make_collator(config, built.tokenizer))
    decodes = evaluator.decodes(validates="valid" in built.splits)
    # The decoding engines, chosen (and logged) before training: an explicit ctranslate2 the model rules out ends here.
    main_process_first(accelerator, lambda: evaluator.choose_engines(built.model, decodes))
    # --input_file read before the first step and before the run directory: a bad input file (an empty or
    # undecodable line, unreadable) is an input error with nothing written, not a failure after training
    inputs = read_and_encode(config, built.tokenizer) if config.input_file else None
    if config.do_train:  # the checkpoints must fit on the disk that will hold the run directory
        needed = peak_checkpoint_bytes(weight_bytes(built.model), config.max_save, _validations_ahead(run, built),
                                       config.save_optimizer)
        check_free_space(run.run_dir, needed, accelerator)
    make_run_dir(run.run_dir, config, accelerator)
    if accelerator.is_main_process:
        attach_log_file(run.run_dir)
    try:
        _open_run_directory(run, built.demonstrations)
        results, examples = _fit_and_evaluate(run, built, evaluator, on_validation, inputs)
        finish_trackers(run, results)  # test/* and best/*; TensorBoard's HPARAMS table
        write_results(run, results, started, examples)
        _drop_checkpoints_not_kept(run)
    except BaseException as error:
        own = failure_of_another_process(error)  # FAILED says what failed, on whichever process it was
        shown = failed(run, own)
        announce_failure(shown)  # before this process leaves: the others then show nothing of their own
        if shown is error:
            raise
        raise shown from error
    if accelerator.is_main_process and config.do_train and (run.run_dir / BEST).is_dir():
        write_model_card(config, run.run_dir / BEST, results, logger)  # costs the card alone if it fails
    accelerator.wait_for_everyone()
    accelerator.end_training()
    if accelerator.is_main_process and config.push_to_hub:  # the other processes are done: a failure ends this one
        push_checkpoint(run)
    return results


def _drop_checkpoints_not_kept(run: RunContext) -> None:
    """--max_save=0 (TextBox 2.0's "no checkpoint"): the checkpoint_best training wrote served the test pass;
    once results.json is written it goes too."""
    if run.config.do_train and not keeps_best(run.config.max_save) and writes_checkpoints(run.accelerator):
        shutil.rmtree(run.run_dir / BEST, ignore_errors=True)
        run.logger.info(f"--max_save=0: removed {run.run_dir / BEST} (the test pass has read it)")
    run.accelerator.wait_for_everyone()


def push_checkpoint(run: RunContext) -> None:
    """checkpoint_best (with its model card) uploaded to --hub_model_id (default the run directory's name); a
    failed upload is one error line, the run and its files complete."""
    best, repo_id = (run.run_dir / BEST).absolute(), run.config.hub_model_id or run.run_dir.name
    try:
        url = push_folder(best, repo_id, run.config.hub_private)
    except Exception as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise TextBoxError(f"push_to_hub: uploading {best} to the hub repository {repo_id!r} failed ({reason}); the "
                           f"run is complete: upload it with `hf upload {repo_id} {best}`") from error
    run.logger.info(f"pushed {best} to {url}")


def _validations_ahead(run: RunContext, built: Built) -> int:
    """The validations (each a checkpoint-<step>) this training will add: those it plans, less the checkpoint-<step>
    a resumed run holds already."""
    if "valid" not in built.splits:
        return 0
    per_epoch = steps_per_epoch(run.config, built.tokenized["train"], run.accelerator.num_processes)
    planned = planned_validations(run.config, per_epoch)
    written = len(list(run.run_dir.glob("checkpoint-*"))) if run.config.resume and run.run_dir.is_dir() else 0
    return max(planned - written, 0)


class Built(NamedTuple):
    """What a run is built from, before its run directory exists: a bad path or checkpoint fails while building,
    with nothing written."""

    splits: dict[str, Split]  # valid/test raw text, the metrics need the references (not train's: it may be streamed)
    model: torch.nn.Module
    tokenizer: PreTrainedTokenizerBase
    tokenized: dict[str, datasets.Dataset]
    config: Config  # the run's config with its lengths fitted to the model (textbox.model.lengths)
    efficient: EfficientRecord | None = None  # the model's efficient method: what its checkpoints hold
    fitted_lengths: dict[str, object] = {}  # results.json's record of what was fitted and why ({}: nothing)
    demonstrations: str = ""  # --num_shots: demonstrations.jsonl's text (textbox.data.shots)


def build(config: Config, accelerator: Accelerator, logger: logging.Logger) -> Built:
    """Data, model and tokenised splits. The main process goes first (builds, tokenizer training and caches happen
    once); a failure on any process is raised on all of them, shown once."""
    set_seed(config.seed)
    testing = config.do_test and not config.input_file  # --input_file takes the test split's place
    shot_testing = testing and config.num_shots > 0  # the demonstrations come from the train split
    wanted = [name for name, needed in (("train", config.do_train or shot_testing),
                                        ("valid", config.do_train and config.do_valid), ("test", testing)) if needed]

    def build_once() -> Built:
        splits: Mapping[str, ReadSplit]
        if config.pretrain_task == "denoising":  # train.src (and valid.src) alone, noised on the fly
            splits = read_source_only_splits(config, wanted, log=logger.info)
        else:
            splits = read_splits(config, wanted, logger.info, stream=True)
        for name, split in splits.items():
            logger.info(f"{name}: {len(split)} examples")
        record = build_model(config, splits.get("train") if config.do_train else None, logger)  # a BuiltModel
        fitted = record.fitting.config if record.fitting is not None else config
        # the run's generation settings in its checkpoints' generation_config.json (textbox.model.run_generation)
        record_run_generation(inner_model(record.model), generation_settings(fitted.generation_kwargs,
                                                                             fitted.tgt_len), logger.warning)
        evaluated = _evaluated(splits)
        demonstrations, read = "", splits
        if shot_testing:  # the test sources tokenised with their demonstrations; scored against the same references
            train = splits["train"]  # the demonstration pool: every text at hand (a streamed split read whole)
            pool = train.materialised() if isinstance(train, StreamedSplit) else train
            prompted = shots.with_demonstrations(fitted, record.tokenizer, pool, evaluated["test"],
                                                 uses_chat_template(fitted, record.tokenizer), logger.info)
            demonstrations = shots.records(pool, evaluated["test"], prompted)
            splits = {name: split for name, split in splits.items() if name != "train" or config.do_train}
            read = {**splits, "test": prompted.split}
        tokenized = tokenize_splits(fitted, read, record.tokenizer, logger.info)
        return Built(evaluated, record.model, record.tokenizer, tokenized, fitted, record.efficient,
                     record.fitting.record() if record.fitting is not None else {}, demonstrations)

    return main_process_first(accelerator, build_once)


def _evaluated(splits: Mapping[str, ReadSplit]) -> dict[str, Split]:
    """The valid and test splits, in memory (read_splits streams the train split alone): the metrics read their
    references."""
    evaluated = {}
    for name, split in splits.items():
        if name != "train":
            if not isinstance(split, Split):
                raise AssertionError(f"read_splits streams only the train split, not {name}")
            evaluated[name] = split
    return evaluated


def _open_run_directory(run: RunContext, demonstrations: str = "") -> None:
    """config.yaml (not rewritten when a resumed run's config is unchanged), demonstrations.jsonl (--num_shots) and
    the tracker's files."""
    if run.is_main_process:
        write_run_config(run.config, run.run_dir)
        if demonstrations:
            write_text_atomic(run.run_dir / shots.RECORD, demonstrations)
            run.logger.info(f"{run.config.num_shots}-shot ({run.config.shot_selection}): the demonstrations of "
                            f"every test example in {run.run_dir / shots.RECORD}")
    copy_to_other_disks(run.accelerator, run.run_dir / "config.yaml")  # --resume reads it on every machine
    run.logger.info(f"run directory {run.run_dir}")
    start_trackers(run)


def _fit_and_evaluate(run: RunContext, built: Built, evaluator: Evaluator, on_validation: OnValidation | None,
                      inputs: list[list[int]] | None) -> tuple[dict[str, object], str]:
    """Train (when do_train), then test, or generate for ``inputs`` (--input_file's, encoded), with one Evaluator
    for validation and test; the results and the test examples to show."""
    log_model_size(run.config, built.model, run.logger)
    trained = Trained(built.model)
    if run.config.do_train:
        collator = make_collator(run.config, built.tokenizer, training=True)  # --packing packs these alone
        trainer = Trainer(TrainerContext(run, built.model, built.tokenizer, collator, built.efficient))
        trained = fit(run, trainer, built, evaluator, on_validation)
    with raise_on_signals(lambda signal_number: evaluation_interrupted(run, signal_number)):
        evaluated = evaluate(run, built, evaluator, trained, inputs)
    fitted = {"fitted_lengths": built.fitted_lengths} if built.fitted_lengths else {}
    return {**fitted, **trained.results, **evaluated.results}, evaluated.examples


@dataclass
class Trained:
    """What training hands to evaluation: the trained model, its part of the results, and the latest scored
    validation's metric details (results.json's metric_details when the test pass scores nothing)."""

    model: torch.nn.Module
    results: dict[str, object] = field(default_factory=dict)
    details: dict[str, dict[str, object]] | None = None


def fit(run: RunContext, trainer: Trainer, built: Built, evaluator: Evaluator,
        on_validation: OnValidation | None = None) -> Trained:
    """Train on the train split, validating on the valid split (when there is one) through ``evaluator``."""
    validation = None
    if "valid" in built.splits:
        valid = EvalSet(built.tokenized["valid"], built.splits["valid"])
        validation = RunValidation(run, evaluator, valid, on_validation)
    started = time.perf_counter()
    state = trainer.fit(built.tokenized["train"], validation)
    results: dict[str, object] = {"train_seconds": round(time.perf_counter() - started, 1)}  # validation included
    if run.config.compile:
        results["compile_seconds"] = round(trainer.compile_seconds, 1)  # included in train_seconds
    results.update(valid=state.best_valid, best_step=state.best_step, steps=state.step)
    if state.averaged:
        results["averaged"] = state.averaged
    return Trained(trainer.model, results, validation.details if validation is not None else None)


@dataclass
class Evaluated:
    """What evaluation hands to the closing report: its part of results.json, and the test examples to show
    beside their references (empty on the other processes, with --show_examples=0, or when nothing was tested)."""

    results: dict[str, object]
    examples: str = ""


def evaluate(run: RunContext, built: Built, evaluator: Evaluator, trained: Trained,
             inputs: list[list[int]] | None) -> Evaluated:
    """--input_file generation (for ``inputs``, read and encoded before the first step), or the test pass
    (generation.txt, and generation_all.txt with several sequences per example); with checkpoint_best when
    training produced one."""
    config = run.config
    results: dict[str, object] = {}
    examples = ""
    details = trained.details
    if inputs is not None:  # given exactly when config.input_file is
        generate_for_inputs(run, evaluator, evaluation_model(run, trained.model), inputs)
    elif config.do_test:
        started = time.perf_counter()
        model = evaluation_model(run, trained.model)
        report = evaluator.test(model, EvalSet(built.tokenized["test"], built.splits["test"]),
                                keep=lambda sequences: keep_generations(run, sequences))
        results["test_seconds"] = round(time.perf_counter() - started, 1)
        results["test"] = report.figures
        if report.details is not None:
            details = report.details
        if report.errors:  # that metric alone is lost: the other figures, the outputs and results.json are written
            results["metric_errors"] = dict(report.errors)
            for metric, message in report.errors.items():
                run.logger.error(f"metric {metric} failed on the test split: {message}; the other figures "
                                 f"and the outputs are kept (results.json's metric_errors)")
        if run.is_main_process and report.texts:
            examples = format_examples(built.splits["test"], report.texts, config.show_examples)
    if details:
        results["metric_details"] = details
    return Evaluated(results, examples)


def keep_generations(run: RunContext, sequences: list[list[str]]) -> None:
    """generation.txt (and generation_all.txt with several sequences per example), written by the main process as
    soon as the test split is decoded: a failure while scoring it loses the figures, not the outputs."""
    if run.is_main_process:
        if every := write_generations(run.run_dir / "generation.txt", sequences):
            run.logger.info(f"all {len(sequences[0])} generations per test example in {every}")


def evaluation_model(run: RunContext, model: torch.nn.Module) -> torch.nn.Module:
    """checkpoint_best when training produced one (an adapter/BitFit checkpoint goes back onto its base model),
    else ``model`` as it is; on the accelerator's device."""
    best_dir = run.run_dir / BEST
    restore_interrupted(best_dir)
    if best_dir.exists():
        model = load_saved_model(best_dir, run.accelerator.unwrap_model(model))
        run.logger.info(f"using {best_dir}")
    return model.to(run.accelerator.device)


def _quiet_libraries() -> None:
    """Our own progress bars and log lines say what happens; the libraries' per-file bars only add noise."""
    transformers.utils.logging.disable_progress_bar()
    datasets.disable_progress_bars()
    # accelerate warns on every save that tied embeddings are stored once; loading re-ties them.
    logging.getLogger("accelerate.utils.other").setLevel(logging.ERROR)


def weight_bytes(model: torch.nn.Module) -> int:
    """The bytes of the model's parameters (what each checkpoint holds), for the free-space check."""
    return sum(parameter.numel() * parameter.element_size() for parameter in model.parameters())


def log_model_size(config: Config, model: torch.nn.Module, logger: logging.Logger) -> None:
    trainable, total = count_parameters(model)
    logger.info(f"model {config.model}: {total:,} parameters, {trainable:,} trainable")
