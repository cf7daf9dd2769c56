"""textbox.register_model: the example family (examples/user_model) named with --user_dir is checked, built,
trained, tested and decoded like a built-in one, on one tiny run shared by the module's tests (a few seconds)."""
from __future__ import annotations

import json
import sys

import pytest

from tests.conftest import PROJECT_ROOT
from tests.helpers import TINY_MODEL_ARGS, make_copy_dataset

EXAMPLE = PROJECT_ROOT / "examples" / "user_model"
TINY = [arg.replace("--model=transformer", "--model=vaswani") for arg in TINY_MODEL_ARGS]


@pytest.fixture(scope="module")
def registry():
    """The process-wide tables as they were: what this module's registrations add leaves with its tests."""
    from textbox.config.families import FAMILIES
    from textbox.model import user_models

    families, builders = dict(FAMILIES), dict(user_models._BUILDERS)
    yield
    FAMILIES.clear()
    FAMILIES.update(families)
    user_models._BUILDERS.clear()
    user_models._BUILDERS.update(builders)
    sys.modules.pop("user_model", None)


def test_without_user_dir_the_name_is_an_unknown_model_with_did_you_mean(registry):
    from textbox.checks import load_checked_config
    from textbox.config import ConfigError

    assert "user_model" not in sys.modules  # runs before the module's run registers it
    with pytest.raises(ConfigError) as caught:
        load_checked_config(["--model=vaswani"])
    assert any(problem.startswith("--model: unknown model 'vaswani'; available: bart,") and
               "--user_dir module may register more" in problem for problem in caught.value.problems)


@pytest.fixture(scope="module")
def vaswani_run(registry, tmp_path_factory):
    """One training run of --model=vaswani (its decodes with CTranslate2), then a test-only run of its
    checkpoint_best decoded with transformers."""
    from tests.helpers import run_in_process

    root = tmp_path_factory.mktemp("user_model")
    data = make_copy_dataset(root / "copy", {"train": 16, "valid": 8, "test": 8})
    common = [*TINY, f"--user_dir={EXAMPLE}", f"--data_path={data}", f"--saved_dir={root / 'saved'}",
              "--metrics=['bleu']"]
    trained = run_in_process([*common, "--filename=train", "--epochs=2", "--valid_strategy=epoch",
                              "--decoding_backend=ctranslate2"], root)
    tested = run_in_process([  # the checkpoint's own sizes and BPE: no --config_kwargs, --tokenizer_kwargs
        "--model=vaswani", f"--user_dir={EXAMPLE}", f"--data_path={data}", f"--saved_dir={root / 'saved'}",
        "--metrics=['bleu']", "--src_len=24", "--tgt_len=16", "--eval_batch_size=16", "--tracker=none",
        "--filename=test", "--do_train=False", "--decoding_backend=transformers",
        f"--model_path={root / 'saved' / 'train' / 'checkpoint_best'}"], root)
    return trained, tested, root / "saved"


def test_the_registered_model_trains_tests_and_decodes_with_ctranslate2(vaswani_run):
    trained, _, saved = vaswani_run
    assert trained == 0
    run_dir = saved / "train"
    model_config = json.loads((run_dir / "checkpoint_best" / "config.json").read_text())
    assert model_config["model_type"] == "bart"  # its twist, which the built-in transformer does not have:
    assert model_config["activation_function"] == "relu" and model_config["scale_embedding"] is True
    assert model_config["d_model"] == 32  # --config_kwargs honoured beside it
    assert "bleu" in json.loads((run_dir / "results.json").read_text())["test"]
    assert len((run_dir / "generation.txt").read_text().splitlines()) == 8
    log = (run_dir / "project.log").read_text()
    assert "decoding with ctranslate2" in log and "decoding with transformers" not in log
    assert "model: vaswani" in (run_dir / "config.yaml").read_text()


def test_its_checkpoint_reloads_under_its_name_and_decodes_the_same_with_transformers(vaswani_run):
    _, tested, saved = vaswani_run
    assert tested == 0
    log = (saved / "test" / "project.log").read_text()
    assert "decoding with transformers" in log
    reference = (saved / "train" / "generation.txt").read_text()  # greedy: the two engines agree on a tiny model
    assert (saved / "test" / "generation.txt").read_text() == reference


def test_keys_its_kind_refuses_are_refused_for_it_and_a_misspelt_name_gets_did_you_mean(vaswani_run):
    from textbox.checks import load_checked_config
    from textbox.config import ConfigError

    with pytest.raises(ConfigError, match="unknown model 'vaswanii'; did you mean 'vaswani'"):
        load_checked_config([*TINY, f"--user_dir={EXAMPLE}", "--model=vaswanii"])

    with pytest.raises(ConfigError, match=r"--quantization quantises the weights of a pretrained checkpoint, "
                                          r"and a new --model=vaswani has random ones"):
        load_checked_config([*TINY, f"--user_dir={EXAMPLE}", "--quantization=nf4"])
