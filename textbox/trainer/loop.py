"""The training loop: accelerate-prepared model and data, accumulation, early stopping, checkpoints and exact
resume. Validation is a hook it is given (textbox.trainer.hooks): the trainer neither generates nor scores. Progress
lives in a TrainState; the Config is never mutated."""
from __future__ import annotations

import contextlib
import math
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import torch
from accelerate.utils import DistributedType
from tqdm.auto import tqdm

from textbox.config import RunInterrupted, TextBoxError, TextBoxUserError
from textbox.model import losses
from textbox.model.loss import forward_token_losses, target_tokens, trained_examples
from textbox.trainer import averaging, checkpoint
from textbox.trainer.allocator import keep_freed_memory
from textbox.trainer.context import TrainerContext
from textbox.trainer.ddp import explain_ddp_errors
from textbox.trainer.hooks import ValidationHook
from textbox.trainer.loaders import EpochBatches, accumulation_windows, train_loader
from textbox.trainer.optim import LearningRateSchedule
from textbox.trainer.records import ThroughputWindow, duration, record
from textbox.trainer.sharding import prepare_training
from textbox.trainer.signals import StopRequest, stop_on_signals
from textbox.trainer.state import TrainState, improves
from textbox.utils.compile_time import compilation_seconds
from textbox.utils.progress import bar_disabled

if TYPE_CHECKING:
    import datasets


class _Plan(NamedTuple):
    """What one fit trains with: the train loader, the prepared optimiser and schedule, and its length."""

    loader: EpochBatches
    optimizer: torch.optim.Optimizer
    scheduler: LearningRateSchedule
    total_steps: int
    epochs: int


class Trainer:
    """Trains one model under accelerate and keeps checkpoint_best of the chosen validation figures.

    It accumulates gradients itself (config.accumulation_steps), so the Accelerator must not also do it."""

    def __init__(self, context: TrainerContext):
        run = context.run
        if run.accelerator.gradient_accumulation_steps != 1:
            raise ValueError("build the Accelerator without gradient_accumulation_steps: the Trainer accumulates "
                             "config.accumulation_steps batches itself")
        self.run = run
        self.config = run.config
        self.accelerator = run.accelerator
        self.model = context.model
        self.tokenizer = context.tokenizer
        self.efficient = context.efficient  # the model's efficient method (BuiltModel.efficient): what checkpoints hold
        self.collator = context.collator
        self.run_dir = Path(run.run_dir)
        self.logger = run.logger
        self.state = TrainState()
        self.best_dir = self.run_dir / checkpoint.BEST
        self.resume_step: int | None = None  # the step checkpoint_last holds
        self.compile_seconds = 0.0  # time torch.compile spent (compile=True), not counted as training throughput
        self._train_forward: torch.nn.Module = context.model
        self._last_valid: dict[str, float] = {}  # the latest validation's figures
        self._validation: ValidationHook | None = None
        # --loss: a registered token loss, or None for the built-in cross-entropy (its faster path)
        self._token_loss = None if self.config.loss == losses.CROSS_ENTROPY else losses.token_loss(self.config.loss)

    # --- training -----------------------------------------------------------------------------
    def fit(self, train_data: datasets.Dataset, validation: ValidationHook | None = None) -> TrainState:
        """Train to max_steps (or epochs), validating through ``validation`` as valid_strategy/valid_steps say, and
        once more at the end; without it, checkpoint_best is the final model."""
        self._validation = validation
        self._reuse_freed_memory()
        plan = self._prepare(train_data)
        window = ThroughputWindow()
        self.model.train()
        # the bar is closed (its line ended) however training ends, so that an error prints on a line of its own
        with tqdm(total=plan.total_steps, initial=self.state.step, desc="train",
                  disable=bar_disabled(self.accelerator.is_local_main_process)) as progress, \
                stop_on_signals() as stop_request, explain_ddp_errors():
            self._train_epochs(plan, window, progress, stop_request)
            if self.state.validated_step != self.state.step:
                self._validate()  # the final model always competes for checkpoint_best
            if self.config.average_checkpoints > 1 and validation is not None and \
                    self.state.averaged.get("at_step") != self.state.step:
                self._validate_average()  # so does the mean of the last checkpoints
        if validation is not None and self.state.best_score is None and self.state.validations:
            self._best_is_final_model()
        elif validation is None or not self.best_dir.exists():
            checkpoint.save_model(self.accelerator, self.model, self.tokenizer, self.best_dir, self.efficient)
        self._save_resume_state()  # the final state, for the record
        return self.state

    def _prepare(self, train_data: datasets.Dataset) -> _Plan:
        """The train loader, the step counts, the prepared model, optimiser and schedule, and the resumed state."""
        config, accelerator = self.config, self.accelerator
        loader = train_loader(config, accelerator, train_data, self.collator, self.logger.info)
        steps_per_epoch = math.ceil(len(loader) / config.accumulation_steps)
        total_steps = config.max_steps or config.epochs * steps_per_epoch
        epochs = math.ceil(total_steps / steps_per_epoch)
        # optimiser and schedule: ours, or the DeepSpeed engine's when its config defines them (trainer.sharding)
        if not config.save_optimizer and accelerator.distributed_type == DistributedType.DEEPSPEED:
            raise TextBoxUserError("--save_optimizer=False cannot be honoured under DeepSpeed, whose engine saves its "
                                   "optimiser state with its own checkpoint: drop --save_optimizer=False")
        self.model, optimizer, scheduler = prepare_training(config, accelerator, self.model, total_steps)
        self._train_forward = self._compiled(self.model) if config.compile else self.model
        accelerator.register_for_checkpointing(scheduler)
        self._resume_if_asked()
        self.logger.info(f"training: {len(train_data)} examples, {epochs} epoch(s), {steps_per_epoch} optimiser "
                         f"steps per epoch, {total_steps} steps in all, {accelerator.num_processes} process(es)"
                         + (f"; resuming at step {self.state.step}" if self.state.step else ""))
        return _Plan(loader, optimizer, scheduler, total_steps, epochs)

    def _train_epochs(self, plan: _Plan, window: ThroughputWindow, progress: tqdm, stop_request: StopRequest) -> None:
        """Epoch after epoch (from where a resume left off) to the last step, or until a validation stops early;
        epoch-wise validation after each epoch that ran to its end."""
        config = self.config
        stop = self.state.step >= plan.total_steps
        for epoch in range(self.state.epoch, plan.epochs):
            if stop:
                break
            stop = self._train_epoch(plan, epoch, window, progress, stop_request)
            if self.state.batches_in_epoch == len(plan.loader):  # the epoch ran to its end
                self.state.epoch, self.state.batches_in_epoch = epoch + 1, 0
                if not stop and config.valid_strategy == "epoch" and self.state.epoch % config.valid_steps == 0:
                    stop = self._validate()
                self._stop_if_signalled(stop_request)
            stop = stop or self.state.step >= plan.total_steps

    def _train_epoch(self, plan: _Plan, epoch: int, window: ThroughputWindow, progress: tqdm,
                     stop_request: StopRequest) -> bool:
        """One epoch's optimiser steps (skipping the batches a resume already trained), logging and step-wise
        validation between them; whether a validation asked to stop early."""
        config, stop = self.config, False
        plan.loader.set_epoch(epoch)
        batches = plan.loader
        if self.state.batches_in_epoch:
            batches = self.accelerator.skip_first_batches(plan.loader, self.state.batches_in_epoch)
        for batch_window in accumulation_windows(batches, config.accumulation_steps):
            compiling_before = compilation_seconds() if config.compile else 0.0
            window.add(*self._train_step(batch_window, plan.optimizer, plan.scheduler))
            if config.compile:
                self._note_compilation(compilation_seconds() - compiling_before, window)
            self.state.batches_in_epoch += len(batch_window)
            self.state.step += 1
            progress.update(1)
            if self.state.step % config.logging_steps == 0 or self.state.step == plan.total_steps:
                self._log_train(window, plan.scheduler, plan.total_steps, epoch)
            if config.valid_strategy == "step" and self.state.step % config.valid_steps == 0:
                stop = self._validate()
            self._stop_if_signalled(stop_request)
            if stop or self.state.step >= plan.total_steps:
                break
        return stop

    def _reuse_freed_memory(self) -> None:
        """--cpu_memory_reuse on a CPU device: freed memory stays in the process for the next step
        (textbox.trainer.allocator says why)."""
        if not self.config.cpu_memory_reuse or self.accelerator.device.type != "cpu":
            return
        if keep_freed_memory():
            self.logger.info("cpu_memory_reuse=True: freed memory is kept for the next step (glibc mallopt: blocks "
                             "up to 32 MiB from the heap, no trimming); the process's memory stays near its peak")
        else:
            self.logger.info("cpu_memory_reuse=True has no effect here: this C library has no glibc mallopt")

    def _best_is_final_model(self) -> None:
        """No validation gave a finite score (all NaN/inf: a diverged run). checkpoint_best is then the final
        model, as in a run without validation, and best_valid/best_step describe its validation; best_score stays
        None, so that any finite score (after a resume) still wins."""
        self.logger.warning(f"no validation gave a finite {'+'.join(self.config.metrics_for_best_model)} (all "
                            f"NaN/inf): checkpoint_best is the final model of step {self.state.step}, chosen by "
                            f"no validation")
        self.state.best_step, self.state.best_valid = self.state.validated_step, dict(self._last_valid)
        checkpoint.save_model(self.accelerator, self.model, self.tokenizer, self.best_dir, self.efficient)

    def _compiled(self, model: torch.nn.Module) -> torch.nn.Module:
        """torch.compile of the training forward only (saving, DDP's no_sync, evaluation and generation keep the
        plain module). dynamic=True: one graph for every batch shape, instead of a recompile per new length."""
        self.logger.info("compile=True: the training forward is compiled (torch.compile, dynamic shapes) on the "
                         "first step; the compile time is logged apart")
        # of a Module torch.compile makes an OptimizedModule (a Module); its annotation says only Callable
        return torch.compile(model, dynamic=True)  # type: ignore[return-value]

    def _note_compilation(self, seconds: float, window: ThroughputWindow) -> None:
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
            raise TextBoxUserError(f"--resume=True but {self.run_dir} has no {checkpoint.LAST}/ to resume from; "
                                   f"drop --resume to start afresh")
        self.state = checkpoint.load_resume_state(self.accelerator, found, self.model)
        self.resume_step = self.state.step
        self.logger.info(f"resumed from {found}: step {self.state.step}, epoch {self.state.epoch + 1}, "
                         f"{self.state.batches_in_epoch} batch(es) into the epoch")

    def _save_resume_state(self) -> None:
        """checkpoint_last, unless --max_save (0 or 1) keeps none: then one a resume left behind is removed, so
        that the run directory holds what --max_save says."""
        if not checkpoint.keeps_last(self.config.max_save):
            if checkpoint.writes_checkpoints(self.accelerator):
                shutil.rmtree(self.run_dir / checkpoint.LAST, ignore_errors=True)
            return
        checkpoint.save_resume_state(self.accelerator, self.run_dir, self.state, self.config.save_optimizer)
        self.resume_step = self.state.step

    def _stop_if_signalled(self, request: StopRequest) -> None:
        """Every process must agree: one that was signalled makes all of them save and stop."""
        if self._sum_over_processes([1 if request.requested else 0])[0] == 0:
            return
        self._save_resume_state()
        if not checkpoint.keeps_last(self.config.max_save):
            raise RunInterrupted(f"interrupted at step {self.state.step}; --max_save={self.config.max_save} keeps no "
                                 f"{checkpoint.LAST}, so the run cannot be resumed (its best weights so far are in "
                                 f"{self.best_dir}, if a validation wrote it)", request.exit_code or 130)
        raise RunInterrupted(f"interrupted at step {self.state.step}; saved {self.run_dir / checkpoint.LAST}; "
                             f"continue with --resume=True --saved_dir={self.config.saved_dir} "
                             f"--filename={self.run_dir.name}, or simply --model_path={self.run_dir}",
                             request.exit_code or 130)

    def _train_step(self, batches: list[dict[str, torch.Tensor]], optimizer: torch.optim.Optimizer,
                    scheduler: LearningRateSchedule) -> tuple[float, int, int]:
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
                                               self.config.label_smoothing, self._token_loss)
                batch_loss = sums.sum()
                if torch.isfinite(batch_loss):
                    loss_sum, tokens = loss_sum + batch_loss.item(), tokens + target_tokens(batch)
                    examples += trained_examples(batch)  # fillers count none
                else:
                    nonfinite += 1
                    # No update from this batch, yet every parameter takes part so that DDP still all-reduces.
                    batch_loss = sum((p.sum() for p in self.model.parameters() if p.requires_grad),
                                     batch_loss.new_zeros(())) * 0.0
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

    def _optimizer_step(self, optimizer: torch.optim.Optimizer, scheduler: LearningRateSchedule,
                        updates: bool) -> None:
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
        if self.resume_step is None and self.best_dir.exists():  # --max_save=0 or 1: no checkpoint_last
            kept = f"{self.best_dir} holds the best weights so far (--max_save={self.config.max_save}: no resume)"
        elif self.resume_step is None:
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

    def _log_train(self, window: ThroughputWindow, scheduler: LearningRateSchedule, total_steps: int,
                   epoch: int) -> None:
        """Loss (token mean) and throughput of every process since the last log line, and an ETA."""
        figures = window.flush(self._sum_over_processes)
        remaining = (total_steps - self.state.step) / max(figures["steps_per_s"], 1e-9)
        skipped = f" ({self.state.skipped_steps} step(s) without update)" if self.state.skipped_steps else ""
        self.logger.info(f"step {self.state.step}/{total_steps} epoch {epoch + 1} loss {figures['loss']:.4f} "
                         f"lr {scheduler.get_last_lr()[0]:.2e}{skipped} {figures['examples_per_s']:.1f} examples/s "
                         f"{figures['tokens_per_s']:.0f} target tokens/s ETA {duration(remaining)}")
        record(self.accelerator, self.run_dir, self.state.step,
               {"step": self.state.step, "epoch": epoch + 1, "lr": scheduler.get_last_lr()[0], **figures}, "train")

    # --- validation ---------------------------------------------------------------------------
    def _validate_average(self) -> None:
        """--average_checkpoints=N: the mean of the last N validations' checkpoints competes for checkpoint_best."""
        assert self._validation is not None
        self.state.averaged, model, validation = averaging.validate_average(
            self.config.average_checkpoints, self.run_dir, self.state.step, self.accelerator, self.model,
            self._validation, self.logger)
        if model is not None and validation is not None and improves(validation.score, self.state.best_score):
            self.state.averaged["chosen"] = True
            self.logger.info("the average beats every single checkpoint: it becomes checkpoint_best")
            self.state.best_score, self.state.best_step = validation.score, self.state.step
            self.state.best_valid = dict(validation.figures)
            checkpoint.save_model(self.accelerator, model, self.tokenizer, self.best_dir, self.efficient)
            self._validation.new_best(validation)

    def _validate(self) -> bool:
        """Validate through the hook, keep the best checkpoint, save checkpoint_last; True when early stopping
        says stop."""
        hook = self._validation
        if hook is None:
            return False
        self.state.validations += 1
        self.state.validated_step = self.state.step
        validation = hook.validate(self.model)
        figures = dict(validation.figures)
        self._last_valid = figures
        score = validation.score
        improved = improves(score, self.state.best_score)
        shown = " ".join(f"{k} {v:.4f}" for k, v in figures.items())
        verdict = " (best so far)" if improved else "" if math.isfinite(score) else " (NaN/inf: cannot be the best)"
        self.logger.info(f"validation {self.state.validations} at step {self.state.step}: {shown}{verdict}")
        record(self.accelerator, self.run_dir, self.state.step, {"step": self.state.step, **figures}, "valid")
        if improved:
            self.state.best_score, self.state.best_step, self.state.best_valid = score, self.state.step, figures
            self.state.stale_validations = 0
            checkpoint.save_model(self.accelerator, self.model, self.tokenizer, self.best_dir, self.efficient)
            hook.new_best(validation)
        else:
            self.state.stale_validations += 1
        kept = checkpoint.step_checkpoints_kept(self.config.max_save)
        if kept != 0:
            checkpoint.save_model(self.accelerator, self.model, self.tokenizer,
                                  self.run_dir / f"checkpoint-{self.state.step}", self.efficient)
        if kept is not None and checkpoint.writes_checkpoints(self.accelerator):  # each machine prunes its own
            checkpoint.prune_step_checkpoints(self.run_dir, kept)  # a resume may have lowered --max_save
        self._save_resume_state()
        self.model.train()
        hook.validated(self.state.step, validation)
        patience = self.config.stopping_steps
        if patience is not None and self.state.stale_validations >= patience:
            self.logger.info(f"early stopping: {patience} validation(s) without improvement")
            return True
        return False
