"""run_hyper.py and run_multi_seed.py end to end on a tiny from-scratch Transformer (real pipeline, CPU)."""
from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest

from tests.helpers import run_script

TINY_RUN = [
    "--model=transformer",
    "--config_kwargs={'d_model':32,'encoder_layers':1,'decoder_layers':1,'encoder_attention_heads':2,"
    "'decoder_attention_heads':2,'encoder_ffn_dim':64,'decoder_ffn_dim':64}",
    "--tokenizer_kwargs={'vocab_size':300}", "--epochs=1", "--valid_strategy=step", "--valid_steps=2",
    "--train_batch_size=16", "--eval_batch_size=32",
    "--src_len=32", "--tgt_len=16", "--metrics=['bleu']",
]


@pytest.fixture
def reversal_data(tmp_path: Path) -> Path:
    """Synthetic task: the target is the source's words reversed (64 training pairs)."""
    rng = random.Random(0)
    words = "red blue green small big dog cat runs sits eats the a on in".split()
    path = tmp_path / "reverse"
    path.mkdir()
    for split, count in (("train", 64), ("valid", 16), ("test", 16)):
        sources = [" ".join(rng.choices(words, k=rng.randint(3, 7))) for _ in range(count)]
        (path / f"{split}.src").write_text("".join(s + "\n" for s in sources))
        (path / f"{split}.tgt").write_text("".join(" ".join(reversed(s.split())) + "\n" for s in sources))
    return path


@pytest.mark.slow
def test_a_tiny_search_and_seed_study_through_the_command_line(reversal_data: Path, tmp_path: Path):
    space = tmp_path / "lr.space"
    space.write_text("learning_rate choice [1e-3, 3e-3]\n")
    common = [*TINY_RUN, f"--data_path={reversal_data}", f"--cache_dir={tmp_path / 'cache'}",
              f"--saved_dir={tmp_path / 'saved'}"]

    search = run_script([f"--space={space}", "--algo=exhaustive", "--filename=search", *common], tmp_path,
                        script="run_hyper.py")
    assert search.returncode == 0, search.stderr[-3000:]
    directory = tmp_path / "saved" / "search"
    with open(directory / "trials.csv", newline="") as handle:
        trials = list(csv.DictReader(handle))
    assert [(row["trial"], row["status"], row["learning_rate"]) for row in trials] == [
        ("trial-000", "ok", "0.001"), ("trial-001", "ok", "0.003")]
    best = json.loads((directory / "best.json").read_text())
    losses = {row["trial"]: float(row["valid_loss"]) for row in trials}
    assert best["trial"] == min(losses, key=losses.get) and best["valid"]["loss"] == min(losses.values())
    assert set(best["test"]) >= {"loss", "bleu"}
    assert (directory / f"test-{best['trial']}" / "generation.txt").is_file()
    assert not any((directory / row["trial"] / "generation.txt").exists() for row in trials)  # trials never test
    assert "loaded tokenizer from cache" in (directory / "trial-001" / "project.log").read_text()
    assert f"## Best: {best['trial']}" in search.stdout
    assert (directory / "search.png").is_file() and (directory / "summary.md").is_file()
    # the console: a line per trial (no bars, no step lines); stdout the summary alone; each trial logs in full
    from tests.unit.utils.test_logging import BAR

    assert search.stdout.strip() == (directory / "summary.md").read_text().strip()
    study_lines = search.stderr.strip().splitlines()
    assert len(study_lines) <= 4 + 2 * 2, search.stderr
    assert sum("finished in" in line for line in study_lines) == 2
    assert not any(BAR.search(line) or "step " in line for line in study_lines)
    for trial in ("trial-000", "trial-001"):  # 64 examples in batches of 16, one epoch
        log = (directory / trial / "project.log").read_text()
        assert "training: 64 examples" in log and "step 4/4" in log and "run directory" in log
    assert "trial-000 starts" in (directory / "study.log").read_text()

    study = run_script(["--multi_seed=2", "--workers=2", "--filename=seeds", *common], tmp_path,
                       script="run_multi_seed.py")
    assert study.returncode == 0, study.stderr[-3000:]
    directory = tmp_path / "saved" / "seeds"
    with open(directory / "seeds.csv", newline="") as handle:
        seeds = list(csv.DictReader(handle))
    assert [(row["seed"], row["status"]) for row in seeds] == [("2020", "ok"), ("2021", "ok")]
    summary = json.loads((directory / "summary.json").read_text())
    bleu = [float(row["test_bleu"]) for row in seeds]
    assert summary["figures"]["test_bleu"]["mean"] == pytest.approx(sum(bleu) / 2)
    assert "| test_bleu" in study.stdout and "95% CI" in study.stdout
    assert (directory / "seeds.png").is_file()
    assert "loaded tokenized train from cache" in (directory / "seed-2020" / "project.log").read_text()
