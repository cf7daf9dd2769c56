"""The training loop: accelerate-prepared model and data, accumulation, validation, early stopping,
checkpoints and exact resume. Progress lives in a TrainState; the Config is never mutated."""
from __future__ import annotations

import contextlib
import json
import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TypeVar

import torch
from accelerate import Accelerator
from accelerate.utils import broadcast_object_list
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from textbox.config import Config, RunInterrupted, TextBoxError
from textbox.data.split import Split
from textbox.utils.compile_time import compilation_seconds
from textbox.decoding.engine import DecodingOptions
from textbox.evaluator.generate import generate_sequences, generate_texts, generation_settings
from textbox.evaluator.metrics.perplexity import perplexity_of
from textbox.trainer import checkpoint
from textbox.trainer.ddp import explain_ddp_errors
from textbox.trainer.loss import forward_token_losses, target_tokens
from textbox.trainer.optim import build_optimizer, build_scheduler
from textbox.trainer.signals import StopRequest, stop_on_signals
from textbox.trainer.state import TrainState, improves, selection_score
from textbox.utils.atomic import restore_interrupted, write_text_atomic
from textbox.utils.json_numbers import finite_or_null

LOSS_LIKE = ("loss", "perplexity")
# Page-locked batches copy to a GPU asynchronously; on a CPU-only machine there is nothing to copy.
_PIN_MEMORY = torch.cuda.is_available()
Batch = TypeVar("Batch")


@dataclass
class EvalSet:
    """A tokenised evaluation split with its raw text (references are needed by the metrics)."""

    data: Any  # datasets.Dataset with input_ids/labels
    split: Split


class Trainer:
    """Trains one model under accelerate and keeps checkpoint_best of the chosen validation figures.

    It accumulates gradients itself (config.accumulation_steps), so the Accelerator must not also do it."""

    def __init__(self, config: Config, accelerator: Accelerator, model: torch.nn.Module, tokenizer: Any,
                 collator: Any, run_dir: Path, logger: logging.Logger):
        if accelerator.gradient_accumulation_steps != 1:
            raise ValueError("build the Accelerator without gradient_accumulation_steps: the Trainer accumulates "
                             "config.accumulation_steps batches itself")
        self.config = config
        self.accelerator = accelerator
        self.model = model
        self.tokenizer = tokenizer
        self.collator = collator
        self.run_dir = Path(run_dir)
        self.logger = logger
        self.state = TrainState()
        self.best_dir = self.run_dir / checkpoint.BEST
        self.generation = generation_settings(config.generation_kwargs, config.tgt_len)
        self.decoding = DecodingOptions.from_values(config)  # which engine decodes (--decoding_backend, ...)
        self.metric_details: dict[str, Any] = {}
        self.resume_step: int | None = None  # the step checkpoint_last holds
        self.compile_seconds = 0.0  # time torch.compile spent (compile=True), not counted as training throughput
        self._train_forward: Any = model
        self._last_valid: dict[str, float] = {}  # the latest validation's figures

    # --- data ---------------------------------------------------------------------------------
    def eval_loader(self, data: Any) -> DataLoader:
        """Length-sorted batches (eval_max_tokens or eval_batch_size); every example carries its ``index``,
        by which generations return to dataset order."""
        from textbox.data.batching import EvalExamples, LengthSortedBatchSampler, column_lengths

        batches = LengthSortedBatchSampler(column_lengths(data, "input_ids"), column_lengths(data, "labels"),
                                           self.config.eval_batch_size, self.config.eval_max_tokens,
                                           self.accelerator.num_processes)
        # Its own generator: validation must not draw from the global RNG that training's dropout uses.
        loader = DataLoader(EvalExamples(data), batch_sampler=batches, generator=torch.Generator().manual_seed(0),
                            collate_fn=self.collator, num_workers=self.config.num_workers, pin_memory=_PIN_MEMORY)
        return self.accelerator.prepare(loader)

    def _train_loader(self, data: Any) -> DataLoader:
        # Its own generator: creating an epoch iterator must not draw from the global RNG (dropout),
        # or a resumed run would diverge from an uninterrupted one.
        generator = torch.Generator().manual_seed(self.config.seed)
        if self.config.max_tokens is not None:  # batch order depends on seed and epoch only (exact resume)
            from textbox.data.batching import TokenBudgetBatchSampler, column_lengths, padding_fraction

            sources, targets = column_lengths(data, "input_ids"), column_lengths(data, "labels")
            batches = TokenBudgetBatchSampler(sources, targets, self.config.max_tokens, self.config.seed)
            self.logger.info(f"max_tokens={self.config.max_tokens}: {len(batches)} batches per epoch of "
                             f"{len(data) / len(batches):.1f} examples on average, "
                             f"{padding_fraction(batches.batches(), sources, targets):.1%} of their tokens padding")
            loader = DataLoader(data, batch_sampler=batches, generator=generator, collate_fn=self.collator,
                                num_workers=self.config.num_workers, pin_memory=_PIN_MEMORY)
            return self.accelerator.prepare(loader)
        loader = DataLoader(data, batch_size=self.config.train_batch_size, shuffle=True, generator=generator,
                            collate_fn=self.collator, num_workers=self.config.num_workers, pin_memory=_PIN_MEMORY)
        return self.accelerator.prepare(loader)

    # --- training -----------------------------------------------------------------------------
    def fit(self, train_data: Any, valid: EvalSet | None) -> TrainState:
        config, accelerator = self.config, self.accelerator
        train_loader = self._train_loader(train_data)
        steps_per_epoch = math.ceil(len(train_loader) / config.accumulation_steps)
        total_steps = config.max_steps or config.epochs * steps_per_epoch
        epochs = math.ceil(total_steps / steps_per_epoch)
        optimizer = build_optimizer(config, self.model)
        self.model, optimizer = accelerator.prepare(self.model, optimizer)
        self._train_forward = self._compiled(self.model) if config.compile else self.model
        scheduler = build_scheduler(config, optimizer, total_steps)
        accelerator.register_for_checkpointing(scheduler)
        self._resume_if_asked()
        valid_loader = self.eval_loader(valid.data) if valid is not None else None
        self.logger.info(f"training: {len(train_data)} examples, {epochs} epoch(s), {steps_per_epoch} optimiser "
                         f"steps per epoch, {total_steps} steps in all, {accelerator.num_processes} process(es)"
                         + (f"; resuming at step {self.state.step}" if self.state.step else ""))

        window = _ThroughputWindow()
        progress = tqdm(total=total_steps, initial=self.state.step, desc="train",
                        disable=not accelerator.is_local_main_process)
        stop = self.state.step >= total_steps
        self.model.train()
        with stop_on_signals() as stop_request, explain_ddp_errors():
            for epoch in range(self.state.epoch, epochs):
                if stop:
                    break
                train_loader.set_epoch(epoch)
                batches = train_loader
                if self.state.batches_in_epoch:
                    batches = accelerator.skip_first_batches(train_loader, self.state.batches_in_epoch)
                for batch_window in accumulation_windows(batches, config.accumulation_steps):
                    compiling_before = compilation_seconds() if config.compile else 0.0
                    window.add(*self._train_step(batch_window, optimizer, scheduler))
                    if config.compile:
                        self._note_compilation(compilation_seconds() - compiling_before, window)
                    self.state.batches_in_epoch += len(batch_window)
                    self.state.step += 1
                    progress.update(1)
                    if self.state.step % config.logging_steps == 0 or self.state.step == total_steps:
                        self._log_train(window, scheduler, total_steps, epoch)
                    if config.valid_strategy == "step" and self.state.step % config.valid_steps == 0:
                        stop = self._validate(valid_loader, valid)
                    self._stop_if_signalled(stop_request)
                    if stop or self.state.step >= total_steps:
                        break
                if self.state.batches_in_epoch == len(train_loader):  # the epoch ran to its end
                    self.state.epoch, self.state.batches_in_epoch = epoch + 1, 0
                    if not stop and config.valid_strategy == "epoch" and self.state.epoch % config.valid_steps == 0:
                        stop = self._validate(valid_loader, valid)
                    self._stop_if_signalled(stop_request)
                stop = stop or self.state.step >= total_steps
            if self.state.validated_step != self.state.step:
                self._validate(valid_loader, valid)  # the final model always competes for checkpoint_best
        progress.close()
        if valid is not None and self.state.best_score is None and self.state.validations:
            self._best_is_final_model()
        elif valid is None or not self.best_dir.exists():
            checkpoint.save_model(accelerator, self.model, self.tokenizer, self.best_dir)
        self._save_resume_state()  # the final state, for the record
        return self.state

    def _best_is_final_model(self) -> None:
        """No validation gave a finite score (all NaN/inf: a diverged run). checkpoint_best is then the final
        model, as in a run without validation, and best_valid/best_step describe its validation; best_score stays
        None, so that any finite score (after a resume) still wins."""
        self.logger.warning(f"no validation gave a finite {'+'.join(self.config.metrics_for_best_model)} (all "
                            f"NaN/inf): checkpoint_best is the final model of step {self.state.step}, chosen by "
                            f"no validation")
        self.state.best_step, self.state.best_valid = self.state.validated_step, dict(self._last_valid)
        checkpoint.save_model(self.accelerator, self.model, self.tokenizer, self.best_dir)

    def _compiled(self, model: torch.nn.Module) -> Any:
        """torch.compile of the training forward only (saving, DDP's no_sync, evaluation and generation keep the
        plain module). dynamic=True: one graph for every batch shape, instead of a recompile per new length."""
        self.logger.info("compile=True: the training forward is compiled (torch.compile, dynamic shapes) on the "
                         "first step; the compile time is logged apart")
        return torch.compile(model, dynamic=True)

    def _note_compilation(self, seconds: float, window: "_ThroughputWindow") -> None:
        """Compilation happens inside the first step (and again if a guard fails): count it apart, and keep it
        out of the throughput figures."""
        if seconds <= 0:
            return
        self.compile_seconds += seconds
        window.start += seconds
        self.logger.info(f"torch.compile: {seconds:.1f} s compiling at step {self.state.step + 1} "
                         f"({self.compile_seconds:.1f} s in all)")

    def _resume_if_asked(self) -> None:
        if not self.config.resume:
            return
        found = checkpoint.find_resume_dir(self.run_dir)
        if found is None:
            raise TextBoxError(f"--resume=True but {self.run_dir} has no {checkpoint.LAST}/ to resume from; "
                               f"drop --resume to start afresh")
        self.state = checkpoint.load_resume_state(self.accelerator, found)
        self.resume_step = self.state.step
        self.logger.info(f"resumed from {found}: step {self.state.step}, epoch {self.state.epoch + 1}, "
                         f"{self.state.batches_in_epoch} batch(es) into the epoch")

    def _save_resume_state(self) -> None:
        checkpoint.save_resume_state(self.accelerator, self.run_dir, self.state)
        self.resume_step = self.state.step

    def _stop_if_signalled(self, request: StopRequest) -> None:
        """Every process must agree: one that was signalled makes all of them save and stop."""
        if self._sum_over_processes([1 if request.requested else 0])[0] == 0:
            return
        self._save_resume_state()
        raise RunInterrupted(f"interrupted at step {self.state.step}; saved {self.run_dir / checkpoint.LAST}; "
                             f"continue with --resume=True --saved_dir={self.config.saved_dir} "
                             f"--filename={self.run_dir.name}, or simply --model_path={self.run_dir}",
                             request.exit_code or 130)

    def _train_step(self, batches: list[dict[str, torch.Tensor]], optimizer: torch.optim.Optimizer,
                    scheduler: Any) -> tuple[float, int, int]:
        """One optimiser step over an accumulation window. Its gradient is that of the mean token loss over every
        target token of the window's finite batches on every process, i.e. exactly one large batch's, however the
        tokens are spread over batches and processes. Returns this process's (loss sum, target tokens, examples)
        of finite batches."""
        accelerator = self.accelerator
        window_tokens = max(self._sum_over_processes([sum(target_tokens(batch) for batch in batches)])[0], 1)
        loss_sum, tokens, examples, nonfinite = 0.0, 0, 0, 0
        for index, batch in enumerate(batches):
            syncing = index == len(batches) - 1  # gradients are all-reduced once per window
            with contextlib.nullcontext() if syncing else accelerator.no_sync(self.model):
                sums, _ = forward_token_losses(self._train_forward, accelerator.unwrap_model(self.model), batch,
                                               self.config.label_smoothing)
                batch_loss = sums.sum()
                if torch.isfinite(batch_loss):
                    loss_sum, tokens = loss_sum + batch_loss.item(), tokens + target_tokens(batch)
                    examples += batch["labels"].shape[0]
                else:
                    nonfinite += 1
                    # No update from this batch, yet every parameter takes part so that DDP still all-reduces.
                    batch_loss = sum(p.sum() for p in self.model.parameters() if p.requires_grad) * 0.0
                # DDP averages gradients over the processes: the factor turns that average into a sum.
                accelerator.backward(batch_loss * accelerator.num_processes / window_tokens)
        finite_tokens = self._finite_tokens(nonfinite, tokens)
        if 0 < finite_tokens != window_tokens:
            # Skipped batches: the backward divided by every token of the window, finite or not; the finite
            # batches' own count is the right denominator. (The DDP all-reduce is linear: rescaling after it is
            # the same on every process.)
            for parameter in self.model.parameters():
                if parameter.grad is not None:
                    parameter.grad.mul_(window_tokens / finite_tokens)
        self._optimizer_step(optimizer, scheduler, updates=finite_tokens > 0)
        return loss_sum, tokens, examples

    def _optimizer_step(self, optimizer: torch.optim.Optimizer, scheduler: Any, updates: bool) -> None:
        """The update, and the learning-rate schedule only when an update was really made: not when every batch
        was skipped (``updates`` false: not even weight decay or momentum move the weights), nor when the fp16
        gradient scaler found inf/NaN gradients and skipped optimizer.step (accelerate's optimizer_step_was_skipped,
        as transformers' Trainer does); else the schedule would run ahead of the updates."""
        if updates:
            if self.config.grad_clip is not None:
                self.accelerator.clip_grad_norm_(self.model.parameters(), self.config.grad_clip)
            optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if updates and not self.accelerator.optimizer_step_was_skipped:
            scheduler.step()
            return
        self.state.skipped_steps += 1
        self.logger.debug(f"optimiser step {self.state.step + 1} made no update "
                          f"({'inf/NaN gradients (fp16 scaler)' if updates else 'every batch skipped'}); "
                          f"the learning-rate schedule waits")

    def _finite_tokens(self, nonfinite: int, tokens: int) -> int:
        """The target tokens of finite batches over every process (one all-reduce, which also tells every process
        whether any saw a NaN/inf loss, so that all stop, or go on, together). Stopping happens before the
        optimiser step and saves nothing, so the checkpoints on disk stay good."""
        found, finite_tokens = (int(value) for value in self._sum_over_processes([nonfinite, tokens]))
        if found == 0:
            return finite_tokens
        step = self.state.step + 1
        if self.config.skip_nan_batches:
            self.logger.warning(f"optimiser step {step}: skipped {found} batch(es) with a NaN/inf loss"
                                + ("" if finite_tokens else "; no batch was left: no update at this step"))
            return finite_tokens
        if self.resume_step is None:
            kept = "no checkpoint had been saved yet"
        else:
            kept = (f"the last good checkpoints are {self.run_dir / checkpoint.LAST} (step {self.resume_step}; "
                    f"--resume=True continues from it) and {self.best_dir}")
        raise TextBoxError(f"the training loss is NaN/inf at optimiser step {step} (epoch {self.state.epoch + 1}); "
                           f"the run stopped before that update and {kept}. A lower --learning_rate or a --grad_clip "
                           f"often helps; --skip_nan_batches=True skips such batches instead of stopping")

    def _sum_over_processes(self, values: list[float]) -> list[float]:
        """Element-wise sums over every process (the values themselves with one process)."""
        if self.accelerator.num_processes == 1:
            return values
        tensor = torch.tensor(values, dtype=torch.float64, device=self.accelerator.device)
        return self.accelerator.reduce(tensor, reduction="sum").tolist()

    def _log_train(self, window: "_ThroughputWindow", scheduler: Any, total_steps: int, epoch: int) -> None:
        """Loss (token mean) and throughput of every process since the last log line, and an ETA."""
        figures = window.flush(self._sum_over_processes)
        remaining = (total_steps - self.state.step) / max(figures["steps_per_s"], 1e-9)
        skipped = f" ({self.state.skipped_steps} step(s) without update)" if self.state.skipped_steps else ""
        self.logger.info(f"step {self.state.step}/{total_steps} epoch {epoch + 1} loss {figures['loss']:.4f} "
                         f"lr {scheduler.get_last_lr()[0]:.2e}{skipped} {figures['examples_per_s']:.1f} examples/s "
                         f"{figures['tokens_per_s']:.0f} target tokens/s ETA {_duration(remaining)}")
        self._record({"step": self.state.step, "epoch": epoch + 1, "lr": scheduler.get_last_lr()[0], **figures},
                     prefix="train")

    def _record(self, row: dict[str, Any], prefix: str) -> None:
        """metrics.jsonl (always) and the configured tracker get every logged figure."""
        self.accelerator.log({f"{prefix}/{k}": v for k, v in row.items() if k != "step"}, step=self.state.step)
        if self.accelerator.is_main_process:
            with open(self.run_dir / "metrics.jsonl", "a", encoding="utf-8") as handle:
                handle.write(json.dumps(finite_or_null({"split": prefix, **row}), allow_nan=False) + "\n")

    # --- validation ---------------------------------------------------------------------------
    def _validate(self, loader: DataLoader | None, valid: EvalSet | None) -> bool:
        """Validate, keep the best checkpoint, save checkpoint_last; True when early stopping says stop."""
        if loader is None or valid is None:
            return False
        self.state.validations += 1
        self.state.validated_step = self.state.step
        figures, texts = self.evaluate(loader, valid, "valid")
        self._last_valid = figures
        score = selection_score(figures, self.config.metrics_for_best_model, self.config)
        improved = improves(score, self.state.best_score)
        shown = " ".join(f"{k} {v:.4f}" for k, v in figures.items())
        verdict = " (best so far)" if improved else "" if math.isfinite(score) else " (NaN/inf: cannot be the best)"
        self.logger.info(f"validation {self.state.validations} at step {self.state.step}: {shown}{verdict}")
        self._record({"step": self.state.step, **figures}, prefix="valid")
        if improved:
            self.state.best_score, self.state.best_step, self.state.best_valid = score, self.state.step, figures
            self.state.stale_validations = 0
            checkpoint.save_model(self.accelerator, self.model, self.tokenizer, self.best_dir)
            if texts is not None and self.accelerator.is_main_process:
                write_text_atomic(self.run_dir / "valid_generation.txt", "".join(t + "\n" for t in texts))
        else:
            self.state.stale_validations += 1
        if self.config.max_save > 0:
            checkpoint.save_model(self.accelerator, self.model, self.tokenizer,
                                  self.run_dir / f"checkpoint-{self.state.step}")
            if self.accelerator.is_main_process:
                checkpoint.prune_step_checkpoints(self.run_dir, self.config.max_save)
        self._save_resume_state()
        self.model.train()
        patience = self.config.stopping_steps
        if patience is not None and self.state.stale_validations >= patience:
            self.logger.info(f"early stopping: {patience} validation(s) without improvement")
            return True
        return False

    def evaluate(self, loader: DataLoader, evalset: EvalSet, name: str) -> tuple[dict[str, float], list[str] | None]:
        """Loss always; generation and metrics only when a non-loss figure chooses the best model."""
        figures = {"loss": self.eval_loss(loader)}
        wanted = [m.lower() for m in self.config.metrics_for_best_model]
        if all(m in LOSS_LIKE for m in wanted):
            if "perplexity" in wanted:
                figures["perplexity"] = perplexity_of(figures["loss"])
            return figures, None
        texts = generate_texts(self.accelerator, self.model, self.tokenizer, loader, self.generation, name,
                               self.decoding)
        figures.update(self.score(texts, evalset.split, loss=figures["loss"]))
        return figures, texts

    @torch.no_grad()
    def eval_loss(self, loader: DataLoader) -> float:
        """Token-level mean NLL over the whole split, exact across processes (no label smoothing)."""
        unwrapped = self.accelerator.unwrap_model(self.model)
        was_training = unwrapped.training
        self.model.eval()
        total, tokens = 0.0, 0
        for batch in loader:
            with self.accelerator.autocast():
                sums, counts = forward_token_losses(unwrapped, unwrapped, batch)
            sums, counts = self.accelerator.gather_for_metrics((sums, counts))
            total += sums.sum().item()
            tokens += counts.sum().item()
        self.model.train(was_training)
        return total / max(tokens, 1)

    def score(self, texts: list[str], split: Split, loss: float | None = None) -> dict[str, float]:
        """Metrics computed once on the main process and shared, so every process selects the same best."""
        from textbox.evaluator.metrics import compute_metrics

        holder: list[Any] = [None]
        if self.accelerator.is_main_process:
            report = compute_metrics(self.config.metrics, texts, split.targets, sources=split.sources,
                                     options=self.config, loss=loss)
            holder = [(report.scores, report.details)]
        scores, self.metric_details = broadcast_object_list(holder)[0]
        return scores

    def use_best_model(self) -> None:
        """Switch to checkpoint_best when training produced one (else keep the model as built), for testing."""
        restore_interrupted(self.best_dir)
        if self.best_dir.exists():
            from textbox.model.efficient import load_saved_model

            # an adapter/BitFit checkpoint goes back onto its base model
            self.model = load_saved_model(self.best_dir, self.accelerator.unwrap_model(self.model))
            self.logger.info(f"using {self.best_dir}")
        self.model = self.model.to(self.accelerator.device)

    def test(self, test: EvalSet) -> tuple[dict[str, float], list[list[str]]]:
        """Score the test split with checkpoint_best when training produced one, else the model as built.
        Returns the scores and each example's generations (num_return_sequences, best first; the first is scored)."""
        self.use_best_model()
        loader = self.eval_loader(test.data)
        loss = self.eval_loss(loader)
        if self.config.pretrain_task:  # pre-training is scored by its (denoising) loss alone: no generation
            return {"loss": loss}, []
        sequences = generate_sequences(self.accelerator, self.model, self.tokenizer, loader, self.generation, "test",
                                       self.decoding)
        return {"loss": loss, **self.score([texts[0] for texts in sequences], test.split, loss=loss)}, sequences


class _ThroughputWindow:
    """Loss sums and counts since the last log line, for this process (flush sums them over processes)."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.start = time.perf_counter()
        self.loss_sum = 0.0
        self.tokens = 0
        self.examples = 0
        self.steps = 0

    def add(self, loss_sum: float, tokens: int, examples: int) -> None:
        """One optimiser step's figures."""
        self.loss_sum += loss_sum
        self.tokens += tokens
        self.examples += examples
        self.steps += 1

    def flush(self, sum_over_processes: Callable[[list[float]], list[float]]) -> dict[str, float]:
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        loss_sum, tokens, examples = sum_over_processes([self.loss_sum, self.tokens, self.examples])
        figures = {"loss": loss_sum / max(tokens, 1), "examples_per_s": examples / elapsed,
                   "tokens_per_s": tokens / elapsed, "steps_per_s": self.steps / elapsed}
        self._reset()
        return figures


def accumulation_windows(batches: Iterable[Batch], size: int) -> Iterator[list[Batch]]:
    """Consecutive groups of ``size`` batches, one optimiser step each; an epoch's last may be shorter."""
    window: list[Batch] = []
    for batch in batches:
        window.append(batch)
        if len(window) == size:
            yield window
            window = []
    if window:
        yield window


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
