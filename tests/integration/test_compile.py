"""--compile=True trains through torch.compile: the same losses as eager training, compile time reported apart."""
from __future__ import annotations

import json

import pytest

from tests.helpers import TINY_MODEL_ARGS, make_copy_dataset, run_in_process, run_script, train_losses

pytestmark = pytest.mark.slow


def test_compiled_training_matches_eager_and_reports_compile_time(tmp_path):
    make_copy_dataset(tmp_path / "copy", {"train": 32, "valid": 8, "test": 8})
    no_dropout = "--config_kwargs={'d_model': 32, 'encoder_layers': 2, 'decoder_layers': 2, " \
                 "'encoder_attention_heads': 2, 'decoder_attention_heads': 2, 'encoder_ffn_dim': 64, " \
                 "'decoder_ffn_dim': 64, 'dropout': 0.0}"
    common = [*TINY_MODEL_ARGS, no_dropout, "--dataset=copy", f"--data_path={tmp_path / 'copy'}", "--max_steps=4",
              "--logging_steps=1", "--do_test=False", f"--saved_dir={tmp_path / 'saved'}",
              f"--cache_dir={tmp_path / 'cache'}"]
    assert run_in_process([*common, "--filename=eager"], cwd=tmp_path) == 0  # the reference, in this process
    compiled = run_script([*common, "--filename=compiled", "--compile=True"], cwd=tmp_path)  # as a user runs it
    assert compiled.returncode == 0, compiled.stderr[-3000:]
    results = json.loads((tmp_path / "saved" / "compiled" / "results.json").read_text())
    assert results["compile_seconds"] > 0
    assert "compile_seconds" not in json.loads((tmp_path / "saved" / "eager" / "results.json").read_text())
    assert "torch.compile:" in (tmp_path / "saved" / "compiled" / "project.log").read_text()
    eager, compiled = (list(train_losses(tmp_path / "saved" / name).values()) for name in ("eager", "compiled"))
    assert len(eager) == len(compiled) == 4
    assert compiled == pytest.approx(eager, rel=1e-4)  # kernels fuse differently: equal up to rounding
    # The compiled run's weights are saved like any other (the plain module is saved, not the compiled wrapper).
    assert (tmp_path / "saved" / "compiled" / "checkpoint_best" / "config.json").is_file()
