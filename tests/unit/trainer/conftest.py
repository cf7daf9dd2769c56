"""In-process Trainer pieces: a tiny BART (2 layers, d=32) on a reverse-the-words task, a fresh CPU Accelerator
per test, a Trainer factory whose keyword arguments override config keys, and the run's validation hook (the
Evaluator on a valid split) for a trainer."""
from __future__ import annotations

import logging
from typing import Any, Callable

import pytest
import torch

from textbox.data.split import Split
from tests.helpers import tiny_bart_config
from tests.unit.trainer.tiny import TINY_BART, reverse_words_split, trainer_config


@pytest.fixture(autouse=True)
def one_thread():
    """A tiny model runs fastest on one thread, and several threads crawl on a machine whose cores are busy."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="session")
def tokenizer(tiny_tokenizer) -> Any:
    """The tiny tokenizer (tests/conftest.py), under the name these tests use."""
    return tiny_tokenizer


@pytest.fixture(scope="session")
def encode(tokenizer) -> Callable[[Split], list[dict[str, list[int]]]]:
    """Tokenised examples (input_ids, labels) of a Split, as the data layer hands them to the Trainer."""

    def encode_split(split: Split) -> list[dict[str, list[int]]]:
        sources = tokenizer(split.sources)["input_ids"]
        targets = tokenizer([references[0] for references in split.targets])["input_ids"]
        return [{"input_ids": source, "labels": target} for source, target in zip(sources, targets)]

    return encode_split


@pytest.fixture
def tiny_model(tokenizer) -> Callable[..., torch.nn.Module]:
    """tiny_model(**config_kwargs): the same initial weights every call (seed 0)."""
    from transformers import BartForConditionalGeneration

    def build(**changes: Any) -> torch.nn.Module:
        torch.manual_seed(0)
        return BartForConditionalGeneration(tiny_bart_config(tokenizer, **{**TINY_BART, **changes}))

    return build


@pytest.fixture
def make_accelerator() -> Callable[..., Any]:
    """A fresh Accelerator, on the CPU unless cpu=False (accelerate keeps process-wide state: reset before and after
    each test)."""
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState, GradientState

    def reset() -> None:
        AcceleratorState._reset_state(reset_partial_state=True)
        GradientState._reset_state()

    def make(cpu: bool = True, **kwargs: Any) -> Accelerator:
        reset()
        return Accelerator(cpu=cpu, **kwargs)

    yield make
    reset()


@pytest.fixture
def make_trainer(tmp_path, tokenizer, tiny_model, make_accelerator) -> Callable[..., Any]:
    """make_trainer(mixed_precision=..., model=..., accelerator=..., **config_changes) -> Trainer writing under
    tmp_path/run; its Accelerator is a fresh CPU one of that precision unless one is given."""
    from textbox.data.collate import Seq2SeqCollator
    from textbox.trainer.context import RunContext, TrainerContext
    from textbox.trainer.loop import Trainer

    def make(mixed_precision: str = "no", model: torch.nn.Module | None = None, accelerator: Any = None,
             **changes: Any) -> Trainer:
        run_dir = tmp_path / "run"
        run_dir.mkdir(exist_ok=True)
        config = trainer_config(mixed_precision=mixed_precision, **changes)
        run = RunContext(config, accelerator or make_accelerator(mixed_precision=mixed_precision), run_dir,
                         logging.getLogger("textbox.tests"))
        return Trainer(TrainerContext(run, model or tiny_model(), tokenizer, Seq2SeqCollator(tokenizer.pad_token_id)))

    return make


@pytest.fixture
def train_data(encode) -> list[dict[str, list[int]]]:
    """24 examples: 6 batches of 4."""
    return encode(reverse_words_split(24, seed=1))


@pytest.fixture
def valid_set(encode) -> Any:
    from textbox.evaluator.eval_report import EvalSet

    split = reverse_words_split(8, seed=2)
    return EvalSet(encode(split), split)


@pytest.fixture
def validation(valid_set) -> Callable[..., Any]:
    """validation(trainer, on_validation=None): the pipeline's hook, validating on valid_set with an Evaluator
    of the trainer's config, accelerator, tokenizer and collator."""
    from textbox.evaluator.evaluator import Evaluator
    from textbox.trainer.context import RunContext
    from textbox.pipeline.validation import RunValidation

    def make(trainer: Any, on_validation: Callable[[int, dict[str, float]], None] | None = None) -> Any:
        evaluator = Evaluator(trainer.config, trainer.accelerator, trainer.tokenizer, trainer.collator)
        run = RunContext(trainer.config, trainer.accelerator, trainer.run_dir, trainer.logger)
        return RunValidation(run, evaluator, valid_set, on_validation)

    return make
