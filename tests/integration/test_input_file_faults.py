"""--input_file's stage of issue 36's contract: a bad input file is an input error found before the first step
(exit 2, the file and line named, nothing written); a fault while decoding the inputs or writing --output_file is
one error line, exit 1, the run marked FAILED, and no half-written output (an earlier one kept whole).

In-process runs (run_in_process) of the session's saved tiny model (saved_bart); the faults are injected with
monkeypatch."""
from __future__ import annotations

import errno
import pathlib
import re
from pathlib import Path

import pytest

from tests.helpers import make_copy_dataset, run_in_process

STAGING = re.compile(r"^\..+\.(partial-\d+-[0-9a-f]{8}|tmp|old)$")


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return make_copy_dataset(tmp_path_factory.mktemp("input_file") / "copy", {"train": 8, "valid": 2, "test": 2})


def trained(saved_bart: Path) -> list[str]:
    return [f"--model_path={saved_bart}", "--do_train=False", "--src_len=24", "--tgt_len=16", "--tracker=none",
            "--decoding_backend=transformers"]


def run(tmp_path: Path, data: Path, capsys, *model: str) -> tuple[int, list[str], str]:
    """The exit code, the console's error: lines, and the console's whole stderr."""
    inputs = tmp_path / "inputs.txt"
    if not inputs.exists():
        inputs.write_text("red cat\nblue dog\n")
    code = run_in_process([*model, f"--data_path={data}", "--dataset=copy", f"--input_file={inputs}",
                           f"--output_file={tmp_path / 'out.txt'}", f"--saved_dir={tmp_path / 'saved'}",
                           "--filename=run"], tmp_path)
    stderr = capsys.readouterr().err
    return code, [line for line in stderr.splitlines() if line.startswith("error:")], stderr


def leftovers(directory: Path) -> list[str]:
    return sorted(str(path.relative_to(directory)) for path in directory.rglob(".*") if STAGING.match(path.name))


def test_an_undecodable_input_line_is_an_input_error_before_the_first_step(tmp_path, data, capsys, saved_bart):
    (tmp_path / "inputs.txt").write_bytes(b"red cat\nblue \xff dog\n")
    training = [*trained(saved_bart), "--do_train=True", "--max_steps=2"]  # asked for; it never starts
    code, errors, stderr = run(tmp_path, data, capsys, *training)
    assert code == 2 and len(errors) == 1, stderr[-3000:]
    assert f"{tmp_path / 'inputs.txt'}:2: bytes b'\\xff' are not UTF-8" in errors[0]
    assert "Traceback" not in stderr
    assert not (tmp_path / "saved").exists() and not (tmp_path / "out.txt").exists()  # nothing written


def test_a_fault_while_decoding_the_inputs_leaves_no_output_file(tmp_path, data, capsys, monkeypatch, saved_bart):
    from textbox.evaluator.evaluator import Evaluator

    def fail(self, model, loader, description):
        raise RuntimeError("injected fault while decoding the inputs")

    monkeypatch.setattr(Evaluator, "generate", fail)
    code, errors, stderr = run(tmp_path, data, capsys, *trained(saved_bart))
    assert code == 1 and len(errors) == 1 and "injected fault while decoding the inputs" in errors[0], stderr[-3000:]
    assert "Traceback" not in stderr
    assert "injected fault while decoding the inputs" in (tmp_path / "saved" / "run" / "FAILED").read_text()
    assert not (tmp_path / "out.txt").exists() and leftovers(tmp_path) == []


def test_a_fault_while_writing_the_output_file_keeps_the_earlier_one_whole(tmp_path, data, capsys, monkeypatch,
                                                                          saved_bart):
    (tmp_path / "out.txt").write_text("an earlier output\n")
    original = pathlib.Path.write_text

    def half_then_fail(self, text, *args, **kwargs):
        if self.name.startswith(".out.txt."):  # the staging copy of --output_file: half of it, then the disk fails
            original(self, text[:len(text) // 2], *args, **kwargs)
            raise OSError(errno.EIO, "Input/output error (injected)", str(self))
        return original(self, text, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "write_text", half_then_fail)
    code, errors, stderr = run(tmp_path, data, capsys, *trained(saved_bart))
    assert code == 1 and len(errors) == 1, stderr[-3000:]
    assert "out.txt" in errors[0] and "Input/output error" in errors[0], errors
    assert "Traceback" not in stderr
    assert (tmp_path / "out.txt").read_text() == "an earlier output\n"
    assert leftovers(tmp_path) == []
    assert "out.txt" in (tmp_path / "saved" / "run" / "FAILED").read_text()
