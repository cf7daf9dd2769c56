"""Importing the trainer, the evaluator and the pipeline asks nothing of CUDA: --gpu_id must reach
CUDA_VISIBLE_DEVICES before CUDA starts, and the pipeline exports it only once these modules are imported."""
from __future__ import annotations

import importlib

import pytest
import torch

MODULES = ["textbox.trainer.loaders", "textbox.trainer.records", "textbox.trainer.loop", "textbox.evaluator.evaluator",
           "textbox.pipeline.validation", "textbox.pipeline.recipe"]


def test_no_cuda_call_at_import(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("CUDA was asked at import")

    for name in ("is_available", "device_count", "init", "_lazy_init", "current_device", "get_device_properties"):
        monkeypatch.setattr(torch.cuda, name, refuse)
    for module in MODULES:
        importlib.reload(importlib.import_module(module))
    with pytest.raises(AssertionError):  # the trap is armed
        torch.cuda.is_available()
