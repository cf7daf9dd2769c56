"""A plain training split read from its two files as it is needed, never held whole: what makes memory flat in
corpus size (a WMT-sized train.src/train.tgt).

A ``StreamedSplit`` knows its files, its example count (counted once, in chunks) and a digest of both files
(XXH3-128, textbox.utils.checksums, memoised by the files' stat so that it is hashed once per process); its
examples are read line by line, checked as textbox.data.readers checks an in-memory split (the same DataError texts
naming file:line: an empty source or target, bytes that are not UTF-8), with the first reference kept. The
tokenised cache and the trained tokenizer of a streamed split are named after that digest, not its text, so that a
cached rerun reads no line of it. Valid and test splits stay in memory: the metrics read their references.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from textbox.data.lines import (count_lines, dataset_file, empty_source, empty_target, parse_references,
                                same_line_counts, stream_lines)
from textbox.data.split import Split
from textbox.utils.checksums import file_checksum

Chunk = tuple[list[str], list[str]]  # sources, first references


@dataclass(frozen=True)
class StreamedSplit:
    """A plain split's examples, read from ``source_path`` and ``target_path`` (one example a line) when needed."""

    name: str
    source_path: Path
    target_path: Path
    count: int  # examples: lines of each file

    @classmethod
    def open(cls, directory: Path, name: str) -> StreamedSplit:
        """The split ``name`` of the plain dataset in ``directory``: both files there, not empty, with as many
        lines each (the errors textbox.data.readers gives an in-memory split)."""
        source_path, target_path = dataset_file(directory / f"{name}.src"), dataset_file(directory / f"{name}.tgt")
        sources, targets = count_lines(source_path), count_lines(target_path)
        same_line_counts(source_path, sources, target_path, targets)
        return cls(name, source_path, target_path, sources)

    def __len__(self) -> int:
        return self.count

    @property
    def digest(self) -> str:
        """Names the split's content: both files' checksums (their lines were checked when first read)."""
        files = [file_checksum(self.source_path), file_checksum(self.target_path)]
        return hashlib.sha256(json.dumps(files).encode("utf-8")).hexdigest()[:32]

    def examples(self) -> Iterator[tuple[str, str]]:
        """(source, first reference) of every example in file order, each checked as it is read."""
        source_path, target_path = self.source_path, self.target_path
        for number, (source, target) in enumerate(zip(stream_lines(source_path), stream_lines(target_path)), 1):
            if not source.strip():
                raise empty_source(source, f"{source_path}:{number}")
            found = parse_references(target)
            if not all(reference.strip() for reference in found):
                raise empty_target(target, f"{target_path}:{number}")
            yield source, found[0]

    def chunks(self, size: int) -> Iterator[Chunk]:
        """The examples ``size`` at a time (the last chunk smaller), as (sources, first references)."""
        sources: list[str] = []
        targets: list[str] = []
        for source, target in self.examples():
            sources.append(source)
            targets.append(target)
            if len(sources) == size:
                yield sources, targets
                sources, targets = [], []
        if sources:
            yield sources, targets

    def first(self, count: int) -> Split:
        """The first ``count`` examples, in memory."""
        sources: list[str] = []
        targets: list[list[str]] = []
        for source, target in self.examples():
            if len(sources) == count:
                break
            sources.append(source)
            targets.append([target])
        return Split(self.name, sources, targets)

    def materialised(self) -> Split:
        """Every example in memory: for the few readers that need every text at once (few-shot's demonstration
        pool), at the memory cost streaming avoids."""
        return self.first(self.count)

    def tokenizer_texts(self, indices: Sequence[int] | None = None) -> Iterator[str]:
        """What a new tokenizer trains on (textbox.model.built_model.TrainingTexts): position i < len is source i,
        len + i is target i's first reference; ``indices`` (ascending) picks some, None all. Read in two passes
        (sources, then targets), nothing held."""
        wanted = iter(range(2 * self.count) if indices is None else indices)
        position = next(wanted, None)
        for side in (0, 1):  # the sources' pass reads every example, so that every line is checked
            for number, example in enumerate(self.examples()):
                if position == side * self.count + number:
                    yield example[side]
                    position = next(wanted, None)
                elif side == 1 and position is None:
                    return


ReadSplit = Split | StreamedSplit  # what textbox.data.readers.read_splits may return for a split
