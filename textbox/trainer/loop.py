"""The training loop: accelerate-prepared model and data, accumulation, validation, early stopping,
checkpoint_best. Progress lives in a TrainState; the Config is never mutated."""
from __future__ import annotations

import json
import logging
import math
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator
from accelerate.utils import broadcast_object_list
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from textbox.config import Config
from textbox.data.split import Split
from textbox.evaluator.generate import generate_texts, generation_settings
from textbox.trainer.loss import forward_token_losses
from textbox.trainer.optim import build_optimizer, build_scheduler
from textbox.trainer.state import TrainState, selection_score
from textbox.utils.atomic import atomic_directory, write_text_atomic

LOSS_LIKE = ("loss", "perplexity")


@dataclass
class EvalSet:
    """A tokenised evaluation split with its raw text (references are needed by the metrics)."""

    data: Any  # datasets.Dataset with input_ids/labels
    split: Split


class Trainer:
    """Trains one model under accelerate and keeps checkpoint_best of the chosen validation figures."""

    def __init__(self, config: Config, accelerator: Accelerator, model: torch.nn.Module, tokenizer: Any,
                 collator: Any, run_dir: Path, logger: logging.Logger):
        self.config = config
        self.accelerator = accelerator
        self.model = model
        self.tokenizer = tokenizer
        self.collator = collator
        self.run_dir = Path(run_dir)
        self.logger = logger
        self.state = TrainState()
        self.best_dir = self.run_dir / "checkpoint_best"
        self.generation = generation_settings(config.generation_kwargs, config.tgt_len)

    # --- data ---------------------------------------------------------------------------------
    def eval_loader(self, data: Any) -> DataLoader:
        loader = DataLoader(data, batch_size=self.config.eval_batch_size, shuffle=False,
                            collate_fn=self.collator, num_workers=self.config.num_workers)
        return self.accelerator.prepare(loader)

    def _train_loader(self, data: Any) -> DataLoader:
        generator = torch.Generator().manual_seed(self.config.seed)
        loader = DataLoader(data, batch_size=self.config.train_batch_size, shuffle=True, generator=generator,
                            collate_fn=self.collator, num_workers=self.config.num_workers, drop_last=False)
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
        scheduler = build_scheduler(config, optimizer, total_steps)
        valid_loader = self.eval_loader(valid.data) if valid is not None else None
        self.logger.info(f"training: {len(train_data)} examples, {epochs} epoch(s), {steps_per_epoch} optimiser "
                         f"steps per epoch, {total_steps} steps in all, {accelerator.num_processes} process(es)")

        window = _ThroughputWindow(accelerator.num_processes)
        progress = tqdm(total=total_steps, desc="train", disable=not accelerator.is_local_main_process)
        stop = False
        self.model.train()
        for epoch in range(self.state.epoch, epochs):
            train_loader.set_epoch(epoch)
            for batch in train_loader:
                loss = self._train_batch(batch, optimizer)
                window.add(batch, loss)
                if not accelerator.sync_gradients:
                    continue
                scheduler.step()
                self.state.step += 1
                window.steps += 1
                progress.update(1)
                if self.state.step % config.logging_steps == 0 or self.state.step == total_steps:
                    self._log_train(window, scheduler, total_steps, epoch)
                if config.valid_strategy == "step" and self.state.step % config.valid_steps == 0:
                    stop = self._validate(valid_loader, valid)
                if stop or self.state.step >= total_steps:
                    stop = True
                    break
            self.state.epoch = epoch + 1
            if not stop and config.valid_strategy == "epoch" and self.state.epoch % config.valid_steps == 0:
                stop = self._validate(valid_loader, valid)
            if stop:
                break
        progress.close()
        if valid is None or not self.best_dir.exists():
            self._save_model(self.best_dir)  # without validation the final model is the one to test
        accelerator.wait_for_everyone()
        return self.state

    def _train_batch(self, batch: dict[str, torch.Tensor], optimizer: torch.optim.Optimizer) -> float:
        with self.accelerator.accumulate(self.model):
            sums, counts = forward_token_losses(self.model, self.accelerator.unwrap_model(self.model), batch,
                                                self.config.label_smoothing)
            loss = sums.sum() / counts.sum().clamp(min=1)
            if not torch.isfinite(loss):
                raise FloatingPointError(f"loss is {loss.item()} at optimiser step {self.state.step + 1}; "
                                         f"the last good model is in {self.best_dir}")
            self.accelerator.backward(loss)
            if self.accelerator.sync_gradients and self.config.grad_clip is not None:
                self.accelerator.clip_grad_norm_(self.model.parameters(), self.config.grad_clip)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        return loss.item()

    def _log_train(self, window: "_ThroughputWindow", scheduler: Any, total_steps: int, epoch: int) -> None:
        figures = window.flush()
        remaining = (total_steps - self.state.step) / max(figures["steps_per_s"], 1e-9)
        self.logger.info(f"step {self.state.step}/{total_steps} epoch {epoch + 1} loss {figures['loss']:.4f} "
                         f"lr {scheduler.get_last_lr()[0]:.2e} {figures['examples_per_s']:.1f} examples/s "
                         f"{figures['tokens_per_s']:.0f} target tokens/s ETA {_duration(remaining)}")
        self._record({"step": self.state.step, "epoch": epoch + 1, "lr": scheduler.get_last_lr()[0], **figures})

    def _record(self, row: dict[str, Any]) -> None:
        """Append one line to metrics.jsonl (main process only): a machine-readable log of the run."""
        if self.accelerator.is_main_process:
            with open(self.run_dir / "metrics.jsonl", "a", encoding="utf-8") as handle:
                handle.write(json.dumps(row) + "\n")

    # --- validation ---------------------------------------------------------------------------
    def _validate(self, loader: DataLoader | None, valid: EvalSet | None) -> bool:
        """Validate, keep the best checkpoint, and return True when early stopping says stop."""
        if loader is None or valid is None:
            return False
        self.state.validations += 1
        figures, texts = self.evaluate(loader, valid, "valid")
        names = [name.lower() for name in self.config.metrics_for_best_model]
        score = selection_score(figures, names)
        improved = self.state.best_score is None or score > self.state.best_score
        shown = " ".join(f"{k} {v:.4f}" for k, v in figures.items())
        self.logger.info(f"validation {self.state.validations} at step {self.state.step}: {shown}"
                         f"{' (best so far)' if improved else ''}")
        self._record({"step": self.state.step, "valid": figures})
        if improved:
            self.state.best_score, self.state.best_step, self.state.best_valid = score, self.state.step, figures
            self.state.stale_validations = 0
            self._save_model(self.best_dir)
            if texts is not None and self.accelerator.is_main_process:
                write_text_atomic(self.run_dir / "valid_generation.txt", "".join(t + "\n" for t in texts))
        else:
            self.state.stale_validations += 1
        if self.config.max_save > 0:
            self._save_model(self.run_dir / f"checkpoint-{self.state.step}")
            self._prune_step_checkpoints()
        self.model.train()
        patience = self.config.stopping_steps
        if patience is not None and self.state.stale_validations >= patience:
            self.logger.info(f"early stopping: {patience} validation(s) without improvement")
            return True
        return False

    def evaluate(self, loader: DataLoader, evalset: EvalSet, name: str) -> tuple[dict[str, float], list[str] | None]:
        """Loss always; generation and metrics only when a non-loss figure is asked for."""
        figures = {"loss": self.eval_loss(loader)}
        wanted = [m.lower() for m in self.config.metrics_for_best_model]
        if all(m in LOSS_LIKE for m in wanted):
            if "perplexity" in wanted:
                figures["perplexity"] = math.exp(min(figures["loss"], 700.0))
            return figures, None
        texts = generate_texts(self.accelerator, self.model, self.tokenizer, loader, self.generation, name)
        figures.update(self.score(texts, evalset.split, loss=figures["loss"]))
        return figures, texts

    @torch.no_grad()
    def eval_loss(self, loader: DataLoader) -> float:
        """Token-level mean NLL over the whole split, exact across processes (no label smoothing)."""
        unwrapped = self.accelerator.unwrap_model(self.model)
        self.model.eval()
        total, tokens = 0.0, 0
        for batch in loader:
            with self.accelerator.autocast():
                sums, counts = forward_token_losses(self.model, unwrapped, batch)
            sums, counts = self.accelerator.gather_for_metrics((sums, counts))
            total += sums.sum().item()
            tokens += counts.sum().item()
        return total / max(tokens, 1)

    def score(self, texts: list[str], split: Split, loss: float | None = None) -> dict[str, float]:
        """Metrics computed once on the main process and shared, so every process selects the same best."""
        from textbox.evaluator.metrics import compute_metrics

        holder: list[Any] = [None]
        if self.accelerator.is_main_process:
            report = compute_metrics(self.config.metrics, texts, split.targets, sources=split.sources,
                                     options=self.config, loss=loss)
            holder = [(report.scores, report.details)]
        holder = broadcast_object_list(holder)
        scores, self.metric_details = holder[0]
        return scores

    def test(self, test: EvalSet) -> tuple[dict[str, float], list[str]]:
        """Score the test split with checkpoint_best when training produced one, else the model as built."""
        if self.best_dir.exists():
            model_class = type(self.accelerator.unwrap_model(self.model))
            self.model = model_class.from_pretrained(self.best_dir)
            self.logger.info(f"testing {self.best_dir}")
        self.model = self.model.to(self.accelerator.device)
        loader = self.eval_loader(test.data)
        loss = self.eval_loss(loader)
        texts = generate_texts(self.accelerator, self.model, self.tokenizer, loader, self.generation, "test")
        return {"loss": loss, **self.score(texts, test.split, loss=loss)}, texts

    # --- checkpoints --------------------------------------------------------------------------
    def _save_model(self, path: Path) -> None:
        """save_pretrained model + tokenizer, atomically, from the main process."""
        self.accelerator.wait_for_everyone()
        if self.accelerator.is_main_process:
            with atomic_directory(path) as tmp:
                self.accelerator.unwrap_model(self.model).save_pretrained(tmp)
                self.tokenizer.save_pretrained(tmp)
        self.accelerator.wait_for_everyone()

    def _prune_step_checkpoints(self) -> None:
        if not self.accelerator.is_main_process:
            return
        found = sorted(self.run_dir.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
        for old in found[: -self.config.max_save]:
            shutil.rmtree(old)


class _ThroughputWindow:
    """Loss and throughput since the last log line."""

    def __init__(self, num_processes: int):
        self.num_processes = num_processes
        self._reset()

    def _reset(self) -> None:
        self.start = time.perf_counter()
        self.losses: list[float] = []
        self.examples = 0
        self.tokens = 0
        self.steps = 0

    def add(self, batch: dict[str, torch.Tensor], loss: float) -> None:
        self.losses.append(loss)
        self.examples += batch["labels"].shape[0] * self.num_processes
        self.tokens += int((batch["labels"] != -100).sum()) * self.num_processes

    def flush(self) -> dict[str, float]:
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        figures = {"loss": sum(self.losses) / max(len(self.losses), 1), "examples_per_s": self.examples / elapsed,
                   "tokens_per_s": self.tokens / elapsed, "steps_per_s": self.steps / elapsed}
        self._reset()
        return figures


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
