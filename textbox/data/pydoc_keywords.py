"""The built-in ``pydoc_keywords`` dataset, the embedded default: the key words of a Python function's summary
line -> the summary line.

CommonGen's task (a set of concepts -> one sentence that uses them all) on the docstrings the ``pydoc`` set reads
(textbox/data/pydoc.py: the standard library and the pinned torch, so a fresh checkout builds it offline and every
machine with the same Python builds the same set). A model trained from scratch for minutes learns it: it must
order the words, inflect them and add the words between them, and its outputs follow their input (README: Quick
start). The harder ``pydoc`` task, code -> summary, gives such a model BLEU 2-3; retrieving the training summary of
the most similar function scores 9 there.

- Targets are pydoc's summaries (the docstring's first sentence, markup off) made of plain words: letters, spaces,
  ``, ; : ' -`` and an optional final period. A summary with code in it (``SiLU backward pass: computes
  d_silu(x) * dout``) asks for code a bag of words cannot hold.
- Each target is kept once in the whole set, compared lower-cased without its final period (the first in pydoc's
  order): no test sentence is also a training sentence.
- Sources are the target's words, lower-cased, without function words (``FUNCTION_WORDS``: articles,
  prepositions, conjunctions, pronouns, auxiliary verbs) and without repeats, sorted: the sentence's order is the
  model's to find. Negations and quantifiers (not, no, all, each, any) carry meaning and stay.
- Splits are pydoc's (by class: ``pydoc.split_of``).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Sequence

from textbox.data import pydoc

BUILD_VERSION = 1  # raise it whenever the rules above change: an older built set is then rebuilt
FUNCTION_WORDS = frozenset("""
    a an the
    of to in into onto on at by for from with within without via per as than about over under between through
    and or nor but if then else when while whether so because
    it its this that these those which who whom whose what there their they them we our you your he she his her
    is are was were be been being am has have had do does did can could may might must shall should will would
""".split())
_PLAIN_WORDS = re.compile(r"[A-Za-z][A-Za-z ,;:'\-]*\.?")
_WORD = re.compile(r"[A-Za-z]+(?:['\-][A-Za-z]+)*")


def signature() -> str:
    """This builder's rules and everything pydoc's set depends on (a set built under another one is rebuilt)."""
    return f"pydoc_keywords {BUILD_VERSION}; {pydoc.signature()}"


def build(directory: Path, log: Callable[[str], None], roots: Sequence[pydoc.Root] | None = None) -> None:
    """Write {train,valid,test}.{src,tgt} and README.txt into ``directory`` (an empty staging directory)."""
    roots = pydoc.default_roots() if roots is None else list(roots)
    pairs, unparsable = collect_pairs(roots)
    counts = pydoc.write_splits(directory, pairs)
    read = "; ".join(f"{root.package or 'stdlib'} {root.path}" for root in roots)
    (directory / "README.txt").write_text(
        f"pydoc_keywords: the key words of a Python function's summary line -> the summary line.\n"
        f"Built by textbox.data.pydoc_keywords ({signature()}) from: {read}.\n"
        f"Pairs: {counts}. Files that did not parse and were skipped: {unparsable}.\n"
        f"The rules are in the module docstring.\n", encoding="utf-8")
    log(f"pydoc_keywords: {counts} pairs from {pydoc.read_from(roots)} ({unparsable} files that do not parse "
        f"were skipped)")


def collect_pairs(roots: Sequence[pydoc.Root]) -> tuple[list[pydoc.Pair], int]:
    """Every usable pair under ``roots`` in pydoc's order, each summary once; also the number of files that failed
    to parse."""
    pairs: list[pydoc.Pair] = []
    seen: set[str] = set()
    modules = pydoc.ParsedModules(roots)
    for module, tree in modules:
        for owner, _, target in pydoc.summarised_functions(tree):
            once = target.lower().removesuffix(".")
            if once in seen or not _PLAIN_WORDS.fullmatch(target):
                continue
            seen.add(once)
            pairs.append(pydoc.Pair(f"{module}:{owner}", keywords(target), target))
    return pairs, modules.unparsable


def keywords(sentence: str) -> str:
    """The sentence's words that are not function words, lower-cased, each once, sorted."""
    words = {word.lower() for word in _WORD.findall(sentence)}
    return " ".join(sorted(words - FUNCTION_WORDS)) or " ".join(sorted(words))
