"""The two working steps of a run, each returning its part of results.json: ``fit`` trains (Trainer, validating
through the Evaluator), ``evaluate`` tests checkpoint_best (or the model as built) or generates for --input_file."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textbox.config import Config
from textbox.evaluator.eval_report import EvalSet
from textbox.evaluator.evaluator import Evaluator
from textbox.pipeline.build import Built
from textbox.pipeline.validation import OnValidation, RunValidation


@dataclass
class Trained:
    """What training hands to evaluation: the trained model, its part of the results, and the latest scored
    validation's metric details (results.json's metric_details when the test pass scores nothing)."""

    model: Any
    results: dict[str, Any] = field(default_factory=dict)
    details: dict[str, dict[str, Any]] | None = None


def fit(config: Config, accelerator: Any, run_dir: Path, logger: Any, built: Built, evaluator: Evaluator,
        collator: Any, on_validation: OnValidation | None = None) -> Trained:
    from textbox.trainer.loop import Trainer

    trainer = Trainer(config, accelerator, built.model, built.tokenizer, collator, run_dir, logger, built.efficient)
    validation = None
    if "valid" in built.splits:
        valid = EvalSet(built.tokenized["valid"], built.splits["valid"])
        validation = RunValidation(config, accelerator, evaluator, valid, run_dir, on_validation)
    started = time.perf_counter()
    state = trainer.fit(built.tokenized["train"], validation)
    results: dict[str, Any] = {"train_seconds": round(time.perf_counter() - started, 1)}  # validation included
    if config.compile:
        results["compile_seconds"] = round(trainer.compile_seconds, 1)  # included in train_seconds
    results.update(valid=state.best_valid, best_step=state.best_step, steps=state.step)
    if state.averaged:
        results["averaged"] = state.averaged
    return Trained(trainer.model, results, validation.details if validation is not None else None)


@dataclass
class Evaluated:
    """What evaluation hands to the closing report: its part of results.json, and the test examples to show
    beside their references (empty on the other processes, with --show_examples=0, or when nothing was tested)."""

    results: dict[str, Any]
    examples: str = ""


def evaluate(config: Config, accelerator: Any, run_dir: Path, logger: Any, built: Built, evaluator: Evaluator,
             trained: Trained) -> Evaluated:
    """--input_file generation, or the test pass (generation.txt, and generation_all.txt with several sequences
    per example); with checkpoint_best when training produced one."""
    results: dict[str, Any] = {}
    examples = ""
    details = trained.details
    if config.input_file:
        from textbox.pipeline.inference import generate_for_inputs, read_and_encode

        inputs = read_and_encode(config, built.tokenizer)
        model = evaluation_model(trained.model, run_dir, accelerator, logger)
        generate_for_inputs(config, evaluator, model, inputs, run_dir, logger)
    elif config.do_test:
        started = time.perf_counter()
        model = evaluation_model(trained.model, run_dir, accelerator, logger)
        report = evaluator.test(model, EvalSet(built.tokenized["test"], built.splits["test"]))
        results["test_seconds"] = round(time.perf_counter() - started, 1)
        results["test"] = report.figures
        if report.details is not None:
            details = report.details
        if accelerator.is_main_process:
            from textbox.evaluator.examples import format_examples
            from textbox.evaluator.generate import write_generations

            sequences = report.sequences or []
            if every := write_generations(run_dir / "generation.txt", sequences):
                logger.info(f"all {len(sequences[0])} generations per test example in {every}")
            if report.texts:
                examples = format_examples(built.splits["test"], report.texts, config.show_examples)
    if details:
        results["metric_details"] = details
    return Evaluated(results, examples)


def evaluation_model(model: Any, run_dir: Path, accelerator: Any, logger: Any) -> Any:
    """checkpoint_best when training produced one (an adapter/BitFit checkpoint goes back onto its base model),
    else ``model`` as it is; on the accelerator's device."""
    from textbox.trainer.checkpoint import BEST
    from textbox.utils.atomic import restore_interrupted

    best_dir = Path(run_dir) / BEST
    restore_interrupted(best_dir)
    if best_dir.exists():
        from textbox.model.loading import load_saved_model

        model = load_saved_model(best_dir, accelerator.unwrap_model(model))
        logger.info(f"using {best_dir}")
    return model.to(accelerator.device)
