"""A damaged input file stops a run with one line naming it (exit 2, no traceback, nothing written)."""
from __future__ import annotations

from pathlib import Path

import pandas

from tests.helpers import TINY_MODEL_ARGS, run_script_in_process


def test_a_parquet_split_cut_short_is_one_error_line_naming_it(tmp_path: Path):
    """A train.parquet cut short (a copy interrupted, a full disk) stopped the run with pyarrow's ArrowInvalid
    ("Parquet magic bytes not found in footer") as a traceback, exit 1."""
    data = tmp_path / "data"
    data.mkdir()
    for split in ("train", "valid", "test"):
        pandas.DataFrame([{"src": "a b c", "tgt": ["c b a"]}] * 20).to_parquet(data / f"{split}.parquet")
    train = data / "train.parquet"
    train.write_bytes(train.read_bytes()[:train.stat().st_size // 2])
    done = run_script_in_process([*TINY_MODEL_ARGS, f"--data_path={data}", "--data_format=parquet", "--dataset=cut",
                                  f"--cache_dir={tmp_path / 'cache'}", f"--saved_dir={tmp_path / 'saved'}"],
                                 cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert line.startswith(f"error: {train} cannot be read as parquet (") and "write it again" in line
    assert not (tmp_path / "saved").exists()
