"""Issue 36: everything that can be checked before the first step is checked then. A value that would fail later
(building the model, the first step, seeding) is one `error:` line naming the key and what to do, exit 2, before
anything is built or written."""
from __future__ import annotations

from pathlib import Path

import pytest

from textbox.cli import run_cli


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "toy"
    path.mkdir()
    for split in ("train", "valid", "test"):
        (path / f"{split}.src").write_text("a b\n")
        (path / f"{split}.tgt").write_text("c d\n")
    return path


def refused(argv: list[str], capsys) -> str:
    """run_cli's exit code must be 2 with nothing run; the error it printed."""
    ran = []
    assert run_cli(argv, runner=ran.append) == 2
    assert not ran
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    return err


@pytest.mark.parametrize("seed", ["-1", str(2**32)])
def test_a_seed_numpy_and_torch_refuse_is_refused_at_config_validation(data: Path, tmp_path: Path, capsys, seed):
    err = refused([f"--data_path={data}", f"--saved_dir={tmp_path / 'saved'}", f"--seed={seed}"], capsys)
    assert f"--seed must be in [0, 2**32 - 1] (= 4294967295), the seeds numpy and torch accept, got {seed}" in err
    assert not (tmp_path / "saved").exists()
    assert run_cli([f"--data_path={data}", f"--seed={2**32 - 1}"], runner=lambda config: None) == 0


TEXTBOX2 = Path(__file__).resolve().parents[1] / "fixtures" / "textbox2"


@pytest.fixture
def bart_checkpoint(tmp_path: Path) -> Path:
    """What the checks read of a BART checkpoint: its config.json (weights are read when the model is built)."""
    path = tmp_path / "tiny-bart"
    path.mkdir()
    (path / "config.json").write_text('{"model_type": "bart", "is_encoder_decoder": true, '
                                      '"architectures": ["BartForConditionalGeneration"], "d_model": 32}')
    return path


def test_config_kwargs_of_a_type_the_model_config_refuses_are_refused_before_the_tokenizer_is_trained(
        data: Path, tmp_path: Path, bart_checkpoint: Path, capsys):
    """Was: the BPE tokenizer trained, then StrictDataclassFieldValidationError twice (exit 1). Now the model
    config class's own validators of each field given, before anything is built."""
    saved = f"--saved_dir={tmp_path / 'saved'}"
    err = refused([f"--data_path={data}", saved, "--config_kwargs={'d_model': 'abc'}"], capsys)
    assert "--config_kwargs: 'd_model' must be int or None (BartConfig's type), got str 'abc'" in err
    textbox_yaml = tmp_path / "transformer.yaml"  # TextBox 2.0's model yaml: fields at the top level
    textbox_yaml.write_text((TEXTBOX2 / "transformer.yaml").read_text().replace("d_model: 32", "d_model: abc"))
    err = refused(["--config_files", str(textbox_yaml), "--model=transformer", f"--data_path={data}", saved], capsys)
    assert f"config_kwargs (from {textbox_yaml}): 'd_model' must be int or None (BartConfig's type), got str 'abc'" \
        in err
    err = refused([f"--data_path={data}", saved, "--model=bart", f"--model_path={bart_checkpoint}",
                   "--config_kwargs={'dropout': 'high'}"], capsys)
    assert "--config_kwargs: 'dropout' must be float or int or None (BartConfig's type), got str 'high'" in err
    err = refused([f"--data_path={data}", saved, "--model=gru", "--config_kwargs={'hidden_size': 'big'}"], capsys)
    assert "--config_kwargs of the gru model: hidden_size must be a positive integer, got 'big'" in err
    err = refused([f"--data_path={data}", saved, "--tokenizer_kwargs={'vocab_size': 'big'}"], capsys)
    assert "--tokenizer_kwargs: vocab_size of the BPE tokenizer that --model=transformer trains must be an integer " \
           "of at least 1, got str 'big'" in err
    assert not (tmp_path / "saved").exists()
    for fine in (["--config_kwargs={'d_model': 64, 'dropout': 0}"],
                 ["--model=bart", f"--model_path={bart_checkpoint}", "--config_kwargs={'hidden_size': 32}"]):
        assert run_cli([f"--data_path={data}", *fine], runner=lambda config: None) == 0, capsys.readouterr().err


def test_efficient_kwargs_of_a_type_the_peft_config_does_not_declare_are_refused_before_the_first_step(
        data: Path, tmp_path: Path, bart_checkpoint: Path, capsys):
    """Was (TextBox 2.0's lora_r: four): the model built, then "'<=' not supported between instances of 'str' and
    'int'" when peft adapted the first layer. Now each setting against peft's declared field type (and its name)."""
    base = [f"--data_path={data}", f"--saved_dir={tmp_path / 'saved'}", "--model=bart",
            f"--model_path={bart_checkpoint}"]
    err = refused([*base, "--efficient_methods=['lora']", "--efficient_kwargs={'lora_r': 'four'}"], capsys)
    assert "--efficient_kwargs: 'r' of lora (peft LoraConfig) must be int, got str 'four'" in err
    err = refused([*base, "--efficient_methods=['prefix-tuning']",
                   "--efficient_kwargs={'num_virtual_tokens': 2.5, 'prefix_projectoin': True}"], capsys)
    assert "--efficient_kwargs: 'prefix_projectoin' is not a setting of prefix-tuning (peft PrefixTuningConfig); " \
           "did you mean 'prefix_projection'?" in err
    assert "--efficient_kwargs: 'num_virtual_tokens' of prefix-tuning (peft PrefixTuningConfig) must be int, got " \
           "float 2.5" in err
    assert not (tmp_path / "saved").exists()
    fine = "--efficient_kwargs={'r': 8, 'lora_dropout': 0, 'target_modules': ['q_proj'], 'bias': 'all', " \
           "'init_lora_weights': 'pissa_niter_4', 'layers_to_transform': [0, 1], 'modules_to_save': None}"
    assert run_cli([*base, "--efficient_methods=['lora']", fine], runner=lambda config: None) == 0, \
        capsys.readouterr().err


def test_a_run_keeping_every_checkpoint_is_refused_when_the_disk_cannot_hold_them_all(tmp_path: Path, capsys,
                                                                                      monkeypatch):
    """--max_save=-1 keeps the checkpoint-<step> of each of the run's 24 validations: the free-space check counts
    them all (it counted one), and refuses before the run directory is made; --max_save=3 needs less and fits."""
    import shutil
    from collections import namedtuple

    from tests.helpers import TINY_MODEL_ARGS, make_copy_dataset, run_in_process

    data = make_copy_dataset(tmp_path / "copy")
    usage = namedtuple("usage", "total used free")
    free = {}
    real = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(2**40, 0, free.get("bytes", real(path).free)))
    args = [*TINY_MODEL_ARGS, f"--data_path={data}", f"--saved_dir={tmp_path / 'saved'}", "--filename=run",
            "--epochs=2", "--valid_strategy=step", "--valid_steps=1", "--max_save=-1", "--do_test=False"]
    free["bytes"] = 4 * 2**20  # the model's weights are 0.2 MiB: 24 checkpoint-<step> and the others need 6.6
    assert run_in_process(args, tmp_path) == 2
    err = capsys.readouterr().err  # the run's log, then the error
    assert [line for line in err.splitlines() if line.startswith("error: ")] and "Traceback" not in err, err
    assert "has 4.0 MiB free but this run's checkpoints need about 6.6 MiB" in err
    assert not (tmp_path / "saved" / "run").exists()
    assert run_in_process([*args, "--max_save=3"], tmp_path) == 0  # one checkpoint-<step> kept: 2.1 MiB
    assert [path.name for path in (tmp_path / "saved" / "run").glob("checkpoint-*")] == ["checkpoint-24"]


def test_a_full_disk_while_checkpointing_is_one_error_line_with_the_failed_mark_and_no_partial_copy(
        tmp_path: Path, capsys, monkeypatch):
    """Was: exit 1 with 9 tracebacks and a logging error, no error: line, no FAILED mark, .checkpoint_last.tmp left.
    Here the second save of checkpoint_last finds the disk full (half its files written); then a resume removes what
    a killed process left half-written, and finishes."""
    import errno
    import json

    from accelerate import Accelerator

    from tests.helpers import TINY_MODEL_ARGS, make_copy_dataset, run_in_process

    data = make_copy_dataset(tmp_path / "copy")
    run_dir = tmp_path / "saved" / "run"
    args = [*TINY_MODEL_ARGS, f"--data_path={data}", f"--saved_dir={tmp_path / 'saved'}", "--filename=run",
            "--epochs=1", "--valid_strategy=step", "--valid_steps=4", "--do_test=False"]
    saves = []
    save_state = Accelerator.save_state

    def fills_the_disk_the_second_time(self, output_dir=None, **kwargs):
        saves.append(output_dir)
        if len(saves) == 2:
            (Path(output_dir) / "model.safetensors").write_bytes(b"half")
            raise OSError(errno.ENOSPC, "No space left on device")
        return save_state(self, output_dir, **kwargs)

    monkeypatch.setattr(Accelerator, "save_state", fills_the_disk_the_second_time)
    assert run_in_process(args, tmp_path) == 1
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert errors == [f"error: no space left on the disk of {run_dir} while writing checkpoint_last "
                      f"({errors[0].split('(')[1].split(')')[0]}): free some space or choose another directory; the "
                      f"previous version, if any, is intact; once there is room, --resume=True continues from "
                      f"checkpoint_last"], err
    assert "Traceback" not in err and "Logging error" not in err
    assert "no space left on the disk of" in (run_dir / "FAILED").read_text()
    assert sorted(path.name for path in run_dir.iterdir() if path.name.startswith(".")) == []
    assert json.loads((run_dir / "checkpoint_last" / "train_state.json").read_text())["step"] == 4  # intact

    monkeypatch.setattr(Accelerator, "save_state", save_state)
    (run_dir / ".checkpoint_last.tmp").mkdir()  # what a killed process leaves: half a checkpoint_last, half a best
    (run_dir / ".checkpoint_last.tmp" / "optimizer.bin").write_bytes(b"half")
    (run_dir / ".checkpoint_best.partial-999999999-0123abcd").mkdir()
    assert run_in_process([*args, "--resume=True"], tmp_path) == 0, capsys.readouterr().err
    assert not [path.name for path in run_dir.iterdir() if path.name.startswith(".")]
    assert "removed what an interrupted process left unfinished" in (run_dir / "project.log").read_text()
    assert not (run_dir / "FAILED").exists()


def test_a_full_disk_while_writing_a_cache_is_one_error_line(tmp_path: Path, capsys, monkeypatch):
    """The tokenised splits are cached before the run directory exists: a full disk there is one error: line too
    (it was a traceback), and leaves no partial cache entry."""
    import errno

    from tests.helpers import TINY_MODEL_ARGS, make_copy_dataset, run_in_process
    from textbox.data import tokenize

    def full(path, *args, **kwargs):
        Path(path).write_bytes(b"half")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tokenize, "_write", full)
    data = make_copy_dataset(tmp_path / "copy")
    args = [*TINY_MODEL_ARGS, f"--data_path={data}", f"--saved_dir={tmp_path / 'saved'}", "--filename=run"]
    assert run_in_process(args, tmp_path) == 1
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith(f"error: no space left on the disk of {tmp_path / '.cache'}")
    assert "Traceback" not in err
    assert not list((tmp_path / ".cache").rglob(".*partial*"))
    assert not (tmp_path / "saved").exists()
