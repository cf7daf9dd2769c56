"""The test examples shown when a run ends: the same ones for every run on a split, each output beside its
reference and its shortened source."""
from __future__ import annotations

from textbox.data.split import Split
from textbox.pipeline.results import SOURCE_CHARS, example_indices, format_examples, shorten


def test_indices_are_spread_evenly_and_do_not_depend_on_anything_else():
    assert example_indices(100, 4) == [12, 37, 62, 87]
    assert example_indices(781, 5) == example_indices(781, 5) == [78, 234, 390, 546, 702]
    assert example_indices(3, 5) == [0, 1, 2]
    assert example_indices(100, 0) == example_indices(0, 5) == []


def test_shorten_keeps_one_line_within_the_limit():
    assert shorten("def f(x): NEWLINE     return x") == "def f(x): NEWLINE return x"
    long = shorten("word " * 100)
    assert len(long) == SOURCE_CHARS and long.endswith("...")


def test_each_example_shows_source_reference_and_output():
    split = Split("test", [f"def f{i}(x):\n    return x + {i}" for i in range(10)],
                  [[f"Add {i} to x."] for i in range(9)] + [["First reference.", "Second one."]])
    outputs = [f"Return x plus {i}." for i in range(10)]
    text = format_examples(split, outputs, 2)
    assert text.splitlines() == [
        "2 of 10 test examples (--show_examples sets how many, 0 none):",
        "  [2] source:    def f2(x): return x + 2",
        "      reference: Add 2 to x.",
        "      output:    Return x plus 2.",
        "  [7] source:    def f7(x): return x + 7",
        "      reference: Add 7 to x.",
        "      output:    Return x plus 7.",
    ]
    several = format_examples(split, outputs, 10).splitlines()
    assert several[-2] == "      reference: First reference.  (+1 more reference)"
    assert format_examples(split, outputs, 0) == ""
