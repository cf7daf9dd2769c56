"""Space files: every hyperopt expression, comments, and bad lines reported with file, line and the forms."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hyperopt.pyll import stochastic

from tests.conftest import PROJECT_ROOT
from textbox.config.errors import TextBoxUserError
from textbox.config.schema import SCHEMA
from textbox.studies.search.space import ALGORITHMS, SpaceError, parse_space_file, parse_space_text

EVERY_EXPRESSION = """
# one line per hyperopt expression
a choice ['x', 'y#z', 3]        # a '#' inside a string is not a comment
b pchoice [(0.25, 'low'), (0.75, 'high')]
c randint (4)
d randint (10, 13)
e uniformint (1, 3)
f uniform (-1.5, 2)
g quniform (0, 1, 0.25)
h loguniform (-8, 0)
i qloguniform (0, 3, 2)
j normal (0, 2)
k qnormal (5, 1, 0.5)
l lognormal (0, 1)
m qlognormal (1, 0.5, 0.1)
"""


def sample_many(text: str, count: int = 300) -> dict[str, list]:
    space = {entry.label: entry.to_hyperopt() for entry in parse_space_text(text, "test.space")}
    rng = np.random.default_rng(0)
    draws = [stochastic.sample(space, rng=rng) for _ in range(count)]
    return {label: [draw[label] for draw in draws] for label in space}


def test_every_hyperopt_expression_parses_and_samples_in_its_support():
    entries = parse_space_text(EVERY_EXPRESSION, "test.space")
    assert {entry.algorithm for entry in entries} == set(ALGORITHMS)
    assert [entry.line for entry in entries][:2] == [3, 4]
    draws = sample_many(EVERY_EXPRESSION)
    assert set(draws["a"]) == {"x", "y#z", 3}
    assert set(draws["b"]) == {"low", "high"}
    assert set(draws["c"]) == {0, 1, 2, 3}
    assert set(draws["d"]) == {10, 11, 12}
    assert set(draws["e"]) == {1, 2, 3} and all(isinstance(v, int) for v in draws["e"])
    assert all(-1.5 <= v <= 2 for v in draws["f"])
    assert set(draws["g"]) == {0.0, 0.25, 0.5, 0.75, 1.0}
    assert all(math.exp(-8) <= v <= 1 for v in draws["h"])
    assert all(v % 2 == 0 and 0 <= v <= 20 for v in draws["i"])  # round(exp(u) / 2) * 2, u in [0, 3]
    assert 0.5 < np.std(draws["j"]) < 4
    assert all((v / 0.5).is_integer() for v in draws["k"])
    assert all(v > 0 for v in draws["l"])
    assert all(v >= 0 and math.isclose(v / 0.1, round(v / 0.1)) for v in draws["m"])


def test_bad_lines_are_all_reported_with_their_line_numbers_and_the_accepted_forms(tmp_path: Path):
    path = tmp_path / "bad.space"
    path.write_text("learning_rate choice [1e-3]  # a good line\n"
                    "warmup_ratio unifrom (0, 0.1)\n"
                    "# a comment\n"
                    "epochs choice []\n"
                    "seed\n"
                    "label_smoothing normal (0, 0)\n"
                    "learning_rate choice [1e-4]\n"
                    "weight_decay quniform (0, 1)\n"
                    "seed randint (1.5, 3)\n"
                    "train_batch_size pchoice [(0.5, 16)]\n"
                    "max_steps choice [1, 2\n"
                    "warmup_steps loguniform (0, -1)\n")
    with pytest.raises(SpaceError) as caught:
        parse_space_file(path)
    message = str(caught.value)
    assert message.startswith(f"search space {path}: 10 bad lines:")
    for expected in ("line 2: unknown algorithm 'unifrom'; did you mean 'uniform'?",
                     "line 4: choice expects a non-empty list [option, ...], got []",
                     "line 5: expected <label> <algorithm> <space>, got 'seed'",
                     "line 6: normal: sigma must be positive, got 0",
                     "line 7: 'learning_rate' is already defined on line 1",
                     "line 8: quniform expects (low, high, q), got (0, 1)",
                     "line 9: randint expects integers (upper) or (low, high), got (1.5, 3)",
                     "line 10: pchoice probabilities must sum to 1, they sum to 0.5",
                     "line 11: cannot read '[1, 2' as a Python literal",
                     "line 12: loguniform: the low bound 0 must be smaller than the high bound -1"):
        assert expected in message
    assert "line 1:" not in message and "line 3:" not in message
    assert "<label> qloguniform (log_low, log_high, q)" in message  # the accepted forms follow
    assert caught.value.exit_code == 2


def test_a_missing_or_empty_file_is_a_user_error(tmp_path: Path):
    with pytest.raises(TextBoxUserError, match="--space=.*nope.space: no such file"):
        parse_space_file(tmp_path / "nope.space")
    empty = tmp_path / "empty.space"
    empty.write_text("# only comments\n\n")
    with pytest.raises(TextBoxUserError, match="defines no parameter"):
        parse_space_file(empty)


def test_the_example_space_parses_and_names_config_keys():
    entries = parse_space_file(PROJECT_ROOT / "configs" / "hyper" / "example.space")
    assert [entry.label for entry in entries] == ["learning_rate", "train_batch_size"]
    assert all(entry.label in SCHEMA for entry in entries)


@pytest.mark.parametrize("first_line, labels", [
    ("learning_rate choice [3e-4, 1e-3]", ["learning_rate", "train_batch_size"]),
    ("# a comment first", ["train_batch_size"])])
def test_a_byte_order_mark_is_not_part_of_the_first_line(tmp_path: Path, first_line: str, labels: list[str]):
    """A space file saved with a UTF-8 byte-order mark: the mark is neither in the first label nor before a '#'."""
    path = tmp_path / "bom.space"
    path.write_text(f"{first_line}\ntrain_batch_size choice [16, 32]\n", encoding="utf-8-sig")
    assert [entry.label for entry in parse_space_file(path)] == labels
