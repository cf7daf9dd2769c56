"""The Evaluator: loss, generation (through the decoding engine) and scoring of a split, on a model it is given.

Validation during training, the test pass and --input_file generation all go through it: the same length-sorted
batches, the same generation settings and engine, the same metrics. It holds no model: each call names the one to
evaluate (the training model, checkpoint_best, the model as built)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import torch
from accelerate import Accelerator
from accelerate.utils import broadcast_object_list
from torch.utils.data import DataLoader

from textbox.config import Config
from textbox.data.split import Split
from textbox.decoding.engine import DecodingOptions, EngineChoices, choose_engine
from textbox.evaluator.eval_report import EvalReport, EvalSet
from textbox.decoding.generate import generate_sequences, generation_settings
from textbox.evaluator.metrics import compute_metrics
from textbox.evaluator.metrics.perplexity import perplexity_of
from textbox.evaluator.selection import needs_generation
from textbox.model.loss import forward_token_losses

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from textbox.data.examples import Collator, Examples
    from textbox.evaluator.metrics.base import Details


class Evaluator:
    """Loss, generation and scores of the splits it is given, with the run's generation settings and engine."""

    def __init__(self, config: Config, accelerator: Accelerator, tokenizer: PreTrainedTokenizerBase,
                 collator: Collator):
        self.config = config
        self.accelerator = accelerator
        self.tokenizer = tokenizer
        self.collator = collator
        self.generation = generation_settings(config.generation_kwargs, config.tgt_len)
        self.decoding = DecodingOptions.from_values(config)  # which engine decodes (--decoding_backend, ...)
        self.engines = EngineChoices()  # the engines this run decoded with: a switch is logged (decoding.engine)

    # --- batches ------------------------------------------------------------------------------
    def loader(self, data: Examples) -> DataLoader:
        """Length-sorted batches (eval_max_tokens or eval_batch_size); every example carries its ``index``,
        by which generations return to dataset order."""
        from textbox.data.batching import EvalExamples, LengthSortedBatchSampler, column_lengths

        batches = LengthSortedBatchSampler(column_lengths(data, "input_ids"), column_lengths(data, "labels"),
                                           self.config.eval_batch_size, self.config.eval_max_tokens,
                                           self.accelerator.num_processes)
        # Its own generator: evaluation must not draw from the global RNG that training's dropout uses.
        # Page-locked batches copy to a GPU asynchronously; on a CPU there is nothing to copy.
        loader = DataLoader(EvalExamples(data), batch_sampler=batches, generator=torch.Generator().manual_seed(0),
                            collate_fn=self.collator, num_workers=self.config.num_workers,
                            pin_memory=self.accelerator.device.type == "cuda")
        return self.accelerator.prepare(loader)

    def loader_of(self, evalset: EvalSet) -> DataLoader:
        """The split's loader, built on first use and kept (validation runs many times over the same split)."""
        if evalset.loader is None:
            evalset.loader = self.loader(evalset.data)
        return evalset.loader

    # --- the three parts ----------------------------------------------------------------------
    @torch.no_grad()
    def loss(self, model: torch.nn.Module, loader: DataLoader) -> float:
        """Token-level mean NLL over the whole split, exact across processes (no label smoothing)."""
        unwrapped = self.accelerator.unwrap_model(model)
        was_training = unwrapped.training
        model.eval()
        total, tokens = 0.0, 0
        for batch in loader:
            with self.accelerator.autocast():
                sums, counts = forward_token_losses(unwrapped, unwrapped, batch)
            sums, counts = self.accelerator.gather_for_metrics((sums, counts))
            total += sums.sum().item()
            tokens += counts.sum().item()
        model.train(was_training)
        return total / max(tokens, 1)

    def generate(self, model: torch.nn.Module, loader: DataLoader, description: str) -> list[list[str]]:
        """Each example's num_return_sequences generations (best first), in dataset order, on every process."""
        return generate_sequences(self.accelerator, model, self.tokenizer, loader, self.generation, description,
                                  self.decoding, self.engines)

    def decodes(self, validates: bool) -> list[str]:
        """The kinds of decode this run makes: validation by generation (when ``validates`` and a non-loss figure
        chooses the best model), then --input_file generation or the test pass (none when pre-training)."""
        wanted = [name.lower() for name in self.config.metrics_for_best_model]
        kinds = ["valid"] if validates and needs_generation(wanted) else []
        if self.config.input_file:
            kinds.append("generate")
        elif self.config.do_test and not self.config.pretrain_task:
            kinds.append("test")
        return kinds

    def choose_engines(self, model: torch.nn.Module, descriptions: list[str]) -> None:
        """Choose, before training, the engine of each kind of decode the run will make (``valid``, ``test``,
        ``generate``): the log says it up front, and an explicit --decoding_backend=ctranslate2 that the model
        (its type, its generation config, its tokenizer's end token) rules out stops the run before its first
        step. The decodes choose again (the same model kind, so the same engine, unless CTranslate2 fails)."""
        for description in descriptions:
            choose_engine(self.accelerator.unwrap_model(model), self.generation, description, self.decoding,
                          self.tokenizer, self.engines)

    def score(self, texts: list[str], split: Split, loss: float | None = None
              ) -> tuple[dict[str, float], dict[str, Details], dict[str, str]]:
        """The figures of config.metrics, how each was computed, and why any metric failed (that metric's figures
        are then absent, the others computed), computed once on the main process and shared, so that every process
        selects the same best."""

        holder: list[tuple[dict[str, float], dict[str, Details], dict[str, str]] | None] = [None]
        if self.accelerator.is_main_process:
            report = compute_metrics(self.config.metrics, texts, split.targets, sources=split.sources,
                                     options=self.config, loss=loss, keep_going=True)
            holder = [(report.scores, report.details, report.errors)]
        return broadcast_object_list(holder)[0]

    # --- what the pipeline asks for -----------------------------------------------------------
    def validate(self, model: torch.nn.Module, valid: EvalSet) -> EvalReport:
        """Loss always; generation and metrics only when a non-loss figure chooses the best model."""
        loader = self.loader_of(valid)
        loss = self.loss(model, loader)
        wanted = [name.lower() for name in self.config.metrics_for_best_model]
        if not needs_generation(wanted):
            figures = {"loss": loss}
            if "perplexity" in wanted:
                figures["perplexity"] = perplexity_of(loss)
            return EvalReport(figures)
        return self._scored(loss, self.generate(model, loader, "valid"), valid.split)

    def test(self, model: torch.nn.Module, test: EvalSet,
             keep: Callable[[list[list[str]]], None] | None = None) -> EvalReport:
        """Loss, every example's generations and the metrics of the first; pre-training is scored by its
        (denoising) loss alone, with nothing generated. ``keep`` gets the generations before they are scored, so
        that a failure while scoring does not lose them."""
        loader = self.loader_of(test)
        loss = self.loss(model, loader)
        sequences = [] if self.config.pretrain_task else self.generate(model, loader, "test")
        if keep is not None:
            keep(sequences)
        if self.config.pretrain_task:
            return EvalReport({"loss": loss}, sequences=sequences)
        return self._scored(loss, sequences, test.split)

    def _scored(self, loss: float, sequences: list[list[str]], split: Split) -> EvalReport:
        scores, details, errors = self.score([texts[0] for texts in sequences], split, loss=loss)
        return EvalReport({"loss": loss, **scores}, details, sequences, errors)
