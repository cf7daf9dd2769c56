"""The trainer's validation hook for a run: the Evaluator validates the training model, the run's
metrics_for_best_model turn its figures into the selection value, and what goes with a validation leaves here
(valid_generation.txt beside checkpoint_best, the caller's on_validation)."""
from __future__ import annotations

from typing import Callable

import torch

from textbox.config import TextBoxError
from textbox.evaluator.eval_report import EvalReport, EvalSet
from textbox.evaluator.evaluator import Evaluator
from textbox.evaluator.selection import selection_score
from textbox.trainer.context import RunContext
from textbox.trainer.hooks import Validation, ValidationHook
from textbox.utils.atomic import write_text_atomic

# on_validation(step, figures): called on the main process after each validation (e.g. to report to Ray Tune).
OnValidation = Callable[[int, dict[str, float]], None]
VALID_GENERATION_FILE = "valid_generation.txt"


class RunValidation(ValidationHook):
    def __init__(self, run: RunContext, evaluator: Evaluator, valid: EvalSet, on_validation: OnValidation | None = None):
        self.run = run
        self.evaluator = evaluator
        self.valid = valid
        self.on_validation = on_validation
        self.details: dict[str, dict[str, object]] | None = None  # the latest scored validation's metric details
        self._report: EvalReport | None = None

    def validate(self, model: torch.nn.Module) -> Validation:
        report = self.evaluator.validate(model, self.valid)
        self._report = report
        if report.details is not None:
            self.details = report.details
        names = self.run.config.metrics_for_best_model
        for metric, message in report.errors.items():
            self.run.logger.error(f"metric {metric} failed on the valid split: {message}")
        unscored = [name for name in names if name.lower() not in report.figures]
        if unscored and report.errors:  # a failed metric made the figure that chooses
            why = "; ".join(f"{metric}: {message}" for metric, message in report.errors.items())
            raise TextBoxError(f"{self.run.config.where('metrics_for_best_model')}: {', '.join(unscored)} could not "
                               f"be computed on the valid split ({why}); fix that metric, or choose the best model "
                               f"by other figures")
        return Validation(report.figures, selection_score(report.figures, names, self.run.config))

    def new_best(self, validation: Validation) -> None:
        """The best validation's generations go with checkpoint_best (when validation generated)."""
        texts = self._report.texts if self._report is not None else None
        if texts is not None and self.run.is_main_process:
            write_text_atomic(self.run.run_dir / VALID_GENERATION_FILE, "".join(text + "\n" for text in texts))

    def validated(self, step: int, validation: Validation) -> None:
        if self.on_validation is not None and self.run.is_main_process:
            self.on_validation(step, dict(validation.figures))
