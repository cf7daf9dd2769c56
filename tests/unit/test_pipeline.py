"""The pipeline's set-up decisions: precision (config vs launcher), trackers, and the config summary of the log."""
from __future__ import annotations

import importlib.util

import pytest
import torch

from textbox.config import TextBoxUserError, load_config
from textbox.pipeline import build_accelerator, config_summary, resolve_mixed_precision


@pytest.fixture
def fresh_accelerate_state():
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()
    yield
    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()


@pytest.mark.parametrize("launcher, arguments, chosen", [
    (None, ["--mixed_precision=bf16"], "bf16"),  # plain python: the config decides
    ("bf16", [], "bf16"),  # accelerate launch --mixed_precision bf16, config left at its default
    ("no", ["--mixed_precision=bf16"], "bf16"),  # launch without the flag exports 'no': the config decides
    ("bf16", ["--mixed_precision=bf16"], "bf16"),  # both say the same
])
def test_precision_comes_from_whichever_of_launcher_and_config_set_it(monkeypatch, launcher, arguments, chosen):
    if launcher is None:
        monkeypatch.delenv("ACCELERATE_MIXED_PRECISION", raising=False)
    else:
        monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", launcher)
    assert resolve_mixed_precision(load_config(arguments)) == chosen


@pytest.mark.parametrize("launcher, configured", [("bf16", "no"), ("fp16", "bf16")])
def test_launcher_and_config_disagreeing_is_an_error(monkeypatch, launcher, configured):
    monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", launcher)
    with pytest.raises(TextBoxUserError, match=f"--mixed_precision={configured} disagrees with the launcher's "
                                               f"--mixed_precision={launcher}"):
        resolve_mixed_precision(load_config([f"--mixed_precision={configured}"]))


@pytest.mark.skipif(torch.cuda.is_available(), reason="fp16 is allowed where CUDA exists")
def test_fp16_without_cuda_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("ACCELERATE_MIXED_PRECISION", raising=False)
    with pytest.raises(TextBoxUserError, match="--mixed_precision=fp16 needs a CUDA GPU; on CPU use "
                                               "--mixed_precision=bf16"):
        build_accelerator(load_config(["--mixed_precision=fp16"]))


def test_bf16_accelerator_on_cpu_autocasts_to_bf16(monkeypatch, fresh_accelerate_state):
    monkeypatch.delenv("ACCELERATE_MIXED_PRECISION", raising=False)
    accelerator = build_accelerator(load_config(["--mixed_precision=bf16", "--tracker=none"]))
    assert accelerator.mixed_precision == "bf16"
    with accelerator.autocast():
        assert torch.nn.Linear(2, 2)(torch.ones(1, 2)).dtype == torch.bfloat16


@pytest.mark.parametrize("tracker", ["wandb", "mlflow"])
def test_a_tracker_that_is_not_installed_is_a_clear_error(tracker):
    if importlib.util.find_spec(tracker) is not None:
        pytest.skip(f"{tracker} is installed here")
    with pytest.raises(TextBoxUserError, match=f"--tracker={tracker} needs the {tracker} package: "
                                               f"pip install {tracker}"):
        build_accelerator(load_config([f"--tracker={tracker}"]))


def test_config_summary_lists_changed_keys_with_their_source():
    summary = config_summary(load_config(["--learning_rate=0.5", "--seed=2020"]))
    lines = summary.splitlines()
    assert "  learning_rate = 0.5  (command line)" in lines
    assert not any(line.startswith("  seed =") for line in lines)  # set, but to its default
    assert any(line.startswith("  config_kwargs = ") and line.endswith("transformer.yaml)") for line in lines)
