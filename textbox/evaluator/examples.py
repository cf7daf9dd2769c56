"""A few test examples, each output beside its reference and its (shortened) source: what a researcher reads first
when a run ends, before opening generation.txt.

The examples are spread evenly over the test split, so every run on the same split shows the same examples
whatever its seed or model: two runs' closing logs compare side by side.
"""
from __future__ import annotations

from textbox.data.split import Split

SOURCE_CHARS = 120  # a source is shown up to this many characters: enough to recognise the input


def example_indices(total: int, count: int) -> list[int]:
    """``count`` indices spread evenly over ``total`` examples, from the middle of each of ``count`` equal
    stretches; every index when there are no more than ``count``."""
    if count <= 0 or total <= 0:
        return []
    if count >= total:
        return list(range(total))
    return [(2 * k + 1) * total // (2 * count) for k in range(count)]


def shorten(text: str, limit: int = SOURCE_CHARS) -> str:
    """``text`` on one line (runs of whitespace become one space), cut to ``limit`` characters with '...'."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit - 3].rstrip() + "..."


def format_examples(split: Split, outputs: list[str], count: int) -> str:
    """``count`` examples of ``split`` with their outputs (one per example, in dataset order), as lines for the
    log; an empty string when ``count`` is 0 or there is nothing to show."""
    indices = example_indices(min(len(split), len(outputs)), count)
    if not indices:
        return ""
    lines = [f"{len(indices)} of {len(split)} {split.name} examples (--show_examples sets how many, 0 none):"]
    for index in indices:
        references = split.targets[index]
        others = len(references) - 1
        more = f"  (+{others} more reference{'s' * (others > 1)})" if others else ""
        lines += [f"  [{index}] source:    {shorten(split.sources[index])}",
                  f"  {' ' * (len(str(index)) + 2)} reference: {shorten(references[0], 10 * SOURCE_CHARS)}{more}",
                  f"  {' ' * (len(str(index)) + 2)} output:    {shorten(outputs[index], 10 * SOURCE_CHARS)}"]
    return "\n".join(lines)
