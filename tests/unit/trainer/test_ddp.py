"""A DDP failure about unused parameters is reported with its fix; other errors pass through unchanged."""
from __future__ import annotations

import tempfile

import pytest
import torch
import torch.distributed as dist

from textbox.config import TextBoxUserError
from textbox.trainer.ddp import explain_ddp_error, explain_ddp_errors


class PartlyUsed(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.used = torch.nn.Linear(2, 2)
        self.unused = torch.nn.Linear(2, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.used(x)


@pytest.fixture
def unused_parameter_error() -> RuntimeError:
    """The error torch itself raises: a one-process gloo group, DDP without find_unused_parameters."""
    with tempfile.NamedTemporaryFile() as store_file:
        dist.init_process_group("gloo", store=dist.FileStore(store_file.name, 1), rank=0, world_size=1)
        try:
            model = torch.nn.parallel.DistributedDataParallel(PartlyUsed())
            with pytest.raises(RuntimeError) as caught:
                for _ in range(2):
                    model(torch.ones(1, 2)).sum().backward()
        finally:
            dist.destroy_process_group()
    return caught.value


def test_torch_unused_parameter_error_becomes_the_fix(unused_parameter_error):
    explained = explain_ddp_error(unused_parameter_error)
    assert isinstance(explained, TextBoxUserError)
    assert "rerun with --find_unused_parameters=True" in str(explained)
    assert "Expected to have finished reduction" in str(explained)  # torch's own words, for searching


def test_other_runtime_errors_pass_through_unchanged():
    original = RuntimeError("mat1 and mat2 shapes cannot be multiplied")
    assert explain_ddp_error(original) is None
    with pytest.raises(RuntimeError) as caught:
        with explain_ddp_errors():
            raise original
    assert caught.value is original


def test_the_context_manager_raises_the_explanation_from_the_original(unused_parameter_error):
    with pytest.raises(TextBoxUserError) as caught:
        with explain_ddp_errors():
            raise unused_parameter_error
    assert caught.value.__cause__ is unused_parameter_error
