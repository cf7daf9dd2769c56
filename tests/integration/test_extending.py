"""textbox.run (the Python API), --user_dir with the example metric package, and what --max_save and
--save_optimizer leave on disk, on two tiny runs shared by the module's tests (a few seconds each)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT
from tests.helpers import TINY_MODEL_ARGS, make_copy_dataset, run_in_process

EXAMPLE = PROJECT_ROOT / "examples" / "user_metric"


def tiny_keys() -> dict[str, object]:
    """TINY_MODEL_ARGS as Python values (textbox.run's form of them)."""
    from textbox.config.argv import parse_argv

    keys, problems = parse_argv(TINY_MODEL_ARGS)
    assert not problems
    return keys


@pytest.fixture(scope="module")
def api_run(tmp_path_factory):
    """One run through textbox.run: the example metric, no optimiser state, the default --max_save=2."""
    import torch
    from accelerate.state import AcceleratorState, GradientState

    import textbox
    from textbox.evaluator.metrics import registry

    metrics = dict(registry._METRICS)  # the example's metric leaves with this module's tests (process-wide registry)
    root = tmp_path_factory.mktemp("api")
    data = make_copy_dataset(root / "copy", {"train": 32, "valid": 8, "test": 8})
    for split in ("train", "valid", "test"):  # every target is "cat", and every source holds it: learnt in a few
        sources = (data / f"{split}.src").read_text().splitlines()  # steps, so keyword_coverage is above 0
        (data / f"{split}.src").write_text("".join(f"{source} cat\n" for source in sources))
        (data / f"{split}.tgt").write_text("cat\n" * len(sources))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        results = textbox.run({**tiny_keys(), "data_path": str(data), "saved_dir": str(root / "saved")},
                              filename="run", epochs=4, valid_steps=4, learning_rate=0.01, user_dir=str(EXAMPLE), save_optimizer=False,
                              metrics=["bleu", "keyword_coverage"], metrics_for_best_model=["keyword_coverage"])
    finally:
        torch.set_num_threads(threads)
        AcceleratorState._reset_state(reset_partial_state=True)
        GradientState._reset_state()
    yield results, root / "saved" / "run", data
    registry._METRICS.clear()
    registry._METRICS.update(metrics)
    sys.modules.pop("user_metric", None)


def test_the_python_api_returns_what_results_json_holds(api_run):
    results, run_dir, _ = api_run
    written = json.loads((run_dir / "results.json").read_text())
    assert results["test"] == written["test"] and Path(str(results["run_dir"])) == run_dir
    assert results["steps"] == 16  # 32 examples, batches of 8, four epochs


def test_the_user_metric_is_in_results_json_and_equals_its_definition(api_run):
    """keyword_coverage, recomputed here from generation.txt and the test sources."""
    results, run_dir, data = api_run
    outputs = (run_dir / "generation.txt").read_text().splitlines()
    sources = (data / "test.src").read_text().splitlines()
    pairs = [(source.split(), set(output.replace(".", " ").split()))  # lower-case already
             for source, output in zip(sources, outputs, strict=True)]
    expected = 100 * sum(word in words for keywords, words in pairs for word in keywords) / \
        sum(len(keywords) for keywords, _ in pairs)
    written = json.loads((run_dir / "results.json").read_text())
    assert 0 < written["test"]["keyword_coverage"] == pytest.approx(expected)
    assert "bleu" in written["test"]


def test_a_run_saved_without_optimiser_state_has_no_optimizer_file_and_resume_refuses_it(api_run):
    from textbox.checks import load_checked_config
    from textbox.config import ConfigError

    _, run_dir, _ = api_run
    saved = {path.name for path in (run_dir / "checkpoint_last").iterdir()}
    assert "optimizer.bin" not in saved and {"model.safetensors", "train_state.json"} <= saved
    assert (run_dir / "checkpoint_best" / "model.safetensors").is_file()
    with pytest.raises(ConfigError, match="holds no optimiser state, so it cannot continue exactly"):
        load_checked_config(["--resume=True", f"--saved_dir={run_dir.parent}", "--filename=run"])


def test_the_python_api_raises_instead_of_exiting(tmp_path):
    import textbox
    from textbox.config import ConfigError

    with pytest.raises(ConfigError, match="max_save must be -1"):
        textbox.run(data_path=str(make_copy_dataset(tmp_path / "copy")), max_save=-2)


@pytest.mark.parametrize("max_save, kept", [(0, []), (1, ["checkpoint_best"])])
def test_max_save_0_and_1_leave_what_textbox_2_left(tmp_path, capsys, max_save, kept):
    """0: nothing once the run has tested (checkpoint_best was tested, then removed); 1: checkpoint_best alone."""
    data = make_copy_dataset(tmp_path / "copy", {"train": 16, "valid": 8, "test": 8})
    args = [*TINY_MODEL_ARGS, f"--data_path={data}", f"--saved_dir={tmp_path / 'saved'}", "--filename=run",
            "--epochs=1", "--valid_strategy=step", "--valid_steps=1", "--metrics=['bleu']", f"--max_save={max_save}"]
    assert run_in_process(args, tmp_path) == 0, capsys.readouterr().err
    run_dir = tmp_path / "saved" / "run"
    assert sorted(path.name for path in run_dir.iterdir() if path.name.startswith("checkpoint")) == kept
    assert "bleu" in json.loads((run_dir / "results.json").read_text())["test"]


@pytest.mark.parametrize("user_dir, message", [
    ("no/such/module.py", "--user_dir=no/such/module.py does not exist; give a .py file or a package directory"),
    ("broken.py", "--user_dir=broken.py: importing it raised NameError: name 'undefined_name' is not defined"),
])
def test_a_bad_user_dir_is_one_error_line_and_exit_2(tmp_path, capsys, user_dir, message):
    (tmp_path / "broken.py").write_text("import textbox\n\nundefined_name\n")
    assert run_in_process([f"--user_dir={user_dir}"], tmp_path) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines
