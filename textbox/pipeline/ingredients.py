"""Build what a run needs (splits, model, tokenizer, tokenised splits) before its run directory exists: a bad path
or checkpoint fails here, with nothing written."""
from __future__ import annotations

import logging
from typing import NamedTuple

import datasets
import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from transformers import PreTrainedTokenizerBase

from textbox.config import Config
from textbox.data import read_splits, tokenize_splits
from textbox.data.denoising import read_source_only_splits
from textbox.data.split import Split
from textbox.model.build import build_model
from textbox.model.loading import count_parameters
from textbox.model.built_model import EfficientRecord
from textbox.pipeline.distributed import main_process_first


class Built(NamedTuple):
    splits: dict[str, Split]  # raw text: the metrics need the references
    model: torch.nn.Module
    tokenizer: PreTrainedTokenizerBase
    tokenized: dict[str, datasets.Dataset]
    efficient: EfficientRecord | None = None  # the model's efficient method: what its checkpoints hold


def build(config: Config, accelerator: Accelerator, logger: logging.Logger) -> Built:
    """Data, model and tokenised splits. The main process goes first (builds, tokenizer training and caches happen
    once); a failure on any process is raised on all of them, shown once."""
    set_seed(config.seed)
    testing = config.do_test and not config.input_file  # --input_file takes the test split's place
    wanted = [name for name, needed in (("train", config.do_train), ("valid", config.do_train and config.do_valid),
                                        ("test", testing)) if needed]

    def build_once() -> Built:
        if config.pretrain_task == "denoising":  # train.src (and valid.src) alone, noised on the fly
            splits = read_source_only_splits(config, wanted, log=logger.info)
        else:
            splits = read_splits(config, wanted, log=logger.info)
        for name, split in splits.items():
            logger.info(f"{name}: {len(split)} examples")
        record = build_model(config, splits.get("train"), logger)  # a BuiltModel, efficient method applied
        tokenized = tokenize_splits(config, splits, record.tokenizer, logger.info)
        return Built(splits, record.model, record.tokenizer, tokenized, record.efficient)

    return main_process_first(accelerator, build_once)


def weight_bytes(model: torch.nn.Module) -> int:
    """The bytes of the model's parameters (what each checkpoint holds), for the free-space check."""
    return sum(parameter.numel() * parameter.element_size() for parameter in model.parameters())


def log_model_size(config: Config, model: torch.nn.Module, logger: logging.Logger) -> None:
    trainable, total = count_parameters(model)
    logger.info(f"model {config.model}: {total:,} parameters, {trainable:,} trainable")
