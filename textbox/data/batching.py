"""Length-aware batches of example indices: token-budget training batches and length-sorted evaluation batches.

Padding is wasted compute: a batch costs ``examples x (longest source + longest target)`` tokens whatever its
examples' real lengths. Sorting by length before cutting batches keeps that waste small; shuffling examples of
equal lengths and the order of the batches keeps training random. Every sampler yields whole batches, and
``accelerate.prepare`` deals whole batches round-robin to the processes.

Each process must get as many batches as the others (DDP steps together). accelerate would even them out by training
the first batches (or examples) of the epoch twice; the samplers here round an epoch up with fillers instead:
position ``len(data) + i`` is example i with every target token ignored (``filler``), which trains and scores
nothing, so that every example counts exactly once on any number of processes.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Literal, Sequence

import numpy as np
from torch.utils.data import Sampler

from textbox.config.errors import ConfigError
from textbox.utils.labels import IGNORE_INDEX

if TYPE_CHECKING:
    from textbox.data.examples import Example, Examples


def column_lengths(data: Examples, column: Literal["input_ids", "labels"]) -> np.ndarray:
    """Token count of ``column`` in every example of a ``datasets.Dataset`` (read from Arrow, no Python lists)
    or of any sequence of dicts."""
    if hasattr(data, "with_format") and hasattr(data, "column_names"):
        import pyarrow.compute as pc

        return pc.list_value_length(data.with_format("arrow")[column]).to_numpy(zero_copy_only=False)
    return np.array([len(example[column]) for example in data], dtype=np.int64)


def padded_cost(source_lengths: np.ndarray, target_lengths: np.ndarray) -> int:
    """Tokens a batch of these examples occupies once padded: examples x (longest source + longest target)."""
    return len(source_lengths) * int(source_lengths.max() + target_lengths.max())


def padding_fraction(batches: Sequence[Sequence[int]], source_lengths: np.ndarray,
                     target_lengths: np.ndarray) -> float:
    """Share of the padded source and target tokens of ``batches`` that are padding."""
    padded = sum(padded_cost(source_lengths[batch], target_lengths[batch]) for batch in batches)
    real = sum(int(source_lengths[batch].sum() + target_lengths[batch].sum()) for batch in batches)
    return 1.0 - real / max(padded, 1)


def _cut_by_budget(source_lengths: np.ndarray, target_lengths: np.ndarray, max_tokens: int,
                   key: str) -> list[tuple[int, int]]:
    """[start, end) spans of consecutive examples, each as long as fits ``max_tokens`` padded tokens."""
    _refuse_too_long(source_lengths, target_lengths, max_tokens, key)
    if len(source_lengths) == 0:
        return []
    # Runs of consecutive examples of equal lengths: a sorted sequence has few of them.
    changes = np.flatnonzero((np.diff(source_lengths) != 0) | (np.diff(target_lengths) != 0)) + 1
    firsts = np.concatenate(([0], changes))
    counts = np.diff(np.concatenate((firsts, [len(source_lengths)])))
    bounds, _ = _cut_runs(source_lengths[firsts], target_lengths[firsts], counts, max_tokens)
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))


def _refuse_too_long(source_lengths: np.ndarray, target_lengths: np.ndarray, max_tokens: int, key: str) -> None:
    """A ConfigError naming the first example (in this order) that no batch of ``max_tokens`` tokens can hold."""
    too_long = np.flatnonzero(source_lengths.astype(np.int64) + target_lengths > max_tokens)
    if len(too_long):
        source, target = int(source_lengths[too_long[0]]), int(target_lengths[too_long[0]])
        raise ConfigError([f"--{key}={max_tokens} is smaller than one example of {source} source + {target} "
                           f"target tokens; raise --{key} to at least src_len + tgt_len"])


def _cut_runs(sources: np.ndarray, targets: np.ndarray, counts: np.ndarray,
              max_tokens: int) -> tuple[np.ndarray, int]:
    """The greedy budget cut of a sequence given as runs (``counts[i]`` examples of lengths ``sources[i]``,
    ``targets[i]``; each fits ``max_tokens``): every batch takes consecutive examples while examples x (longest
    source + longest target) fits. Returns the batch boundaries (batch i is positions bounds[i]:bounds[i + 1])
    and the padded tokens of all batches.

    The same batches as a walk over every example, at a cost in the number of runs and batches, not examples: a
    run of equal lengths fills the open batch as far as it fits, then cuts batches of max_tokens // its width."""
    if len(counts) == 0:
        return np.zeros(1, dtype=np.int64), 0
    starts: list[np.ndarray] = [np.zeros(1, dtype=np.int64)]
    position = size = longest_source = longest_target = padded = 0
    chunk = 1 << 16  # runs converted to Python ints a chunk at a time: no list as long as the data
    for offset in range(0, len(counts), chunk):
        piece = slice(offset, offset + chunk)
        for source, target, count in zip(sources[piece].tolist(), targets[piece].tolist(), counts[piece].tolist()):
            grown_source, grown_target = max(longest_source, source), max(longest_target, target)
            room = count if grown_source + grown_target == 0 else max_tokens // (grown_source + grown_target) - size
            taken = min(count, max(room, 0))
            if taken:
                size, longest_source, longest_target = size + taken, grown_source, grown_target
            if taken == count:
                position += count
                continue
            padded += size * (longest_source + longest_target)  # the open batch is full: the rest start anew
            position, count = position + taken, count - taken
            per_batch = count if source + target == 0 else max_tokens // (source + target)
            full = (count - 1) // per_batch  # batches of per_batch examples, then one open batch of the rest
            starts.append(position + per_batch * np.arange(full + 1, dtype=np.int64))
            padded += full * per_batch * (source + target)
            size, longest_source, longest_target = count - full * per_batch, source, target
            position += count
    padded += size * (longest_source + longest_target)
    return np.concatenate(starts + [np.array([position], dtype=np.int64)]), padded


# Widths of the source-length buckets tried; the one that pads least is kept (see _sort_keys).
BUCKET_WIDTHS = (1, 2, 3, 4, 6, 8, 12, 16)


def _sort_keys(source_lengths: np.ndarray, target_lengths: np.ndarray,
               width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """np.lexsort keys (last = primary) of a "snake" walk through (source, target) lengths: source lengths in
    buckets of ``width``; in a bucket, target lengths rise in even buckets and fall in odd ones, and source lengths
    alternate likewise, so that neighbours in the walk (and the ends of adjacent buckets) have similar lengths.

    A batch then covers a small block of lengths instead of a long run of target lengths at one source length:
    wider buckets pay off when there are few examples per (source, target) length, and cost nothing when there
    are many (docs/speedups.md, "Figures behind the code's choices")."""
    bucket = source_lengths // width
    target = np.where(bucket % 2 == 0, target_lengths, -target_lengths)
    source = np.where((bucket + target) % 2 == 0, source_lengths, -source_lengths)
    return source, target, bucket


def filler(example: Example) -> Example:
    """``example`` with every target token ignored: a batch member that adds nothing to the loss."""
    ignored: Example = {**example, "labels": [IGNORE_INDEX] * len(example["labels"])}
    if "prompt_labels" in example:  # a chat example's earlier assistant turns (textbox.data.chat)
        ignored["prompt_labels"] = [IGNORE_INDEX] * len(example["prompt_labels"])
    return ignored


def _rounded_up(batches: Iterator[list[int]], total: int, count: int, num_processes: int) -> Iterator[list[int]]:
    """``batches`` (``total`` of them) followed by filler copies of the first ones (positions count + i), up to a
    multiple of ``num_processes``: equal shares for the processes without training any example twice.

    Batches are made as they are drawn, from the epoch's order held as one numpy array: Python lists of every
    index (~36 bytes an index, 130 MB at 3M examples) were the one part of the data that grew with the corpus."""
    wanted = -total % num_processes
    first: list[list[int]] = []
    for batch in batches:
        if len(first) < wanted:
            first.append(batch)
        yield batch
    for k in range(wanted):
        yield [count + index for index in first[k % len(first)]]


class EpochOrder(Sampler[int]):
    """The examples in a random order of their own for every (seed, epoch): identical on every process and on
    resume, and independent across seeds (seed 7's epoch 1 is not seed 8's epoch 0)."""

    def __init__(self, count: int, seed: int):
        self.count, self.seed, self.epoch = count, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def rng(self) -> np.random.Generator:
        return np.random.default_rng((self.seed, self.epoch))

    def __iter__(self) -> Iterator[int]:
        return iter(self.rng().permutation(self.count).tolist())

    def __len__(self) -> int:
        return self.count


class ShuffledBatchSampler:
    """Training batches of ``size`` examples in a random order per (seed, epoch), the last one smaller, rounded up
    to a multiple of ``num_processes`` with fillers. (No ``batch_size`` attribute: accelerate would then pad the
    last batch with repeated examples; the order lives in ``self.sampler``, where accelerate forwards set_epoch.)"""

    def __init__(self, count: int, size: int, seed: int, num_processes: int = 1):
        self.sampler, self.size, self.num_processes = EpochOrder(count, seed), size, num_processes

    def set_epoch(self, epoch: int) -> None:
        self.sampler.set_epoch(epoch)

    def batches(self) -> list[list[int]]:
        return list(self)

    def __iter__(self) -> Iterator[list[int]]:
        count = self.sampler.count  # EpochOrder's order, as int32 (the same permutation as of range(count))
        order = self.sampler.rng().permutation(np.arange(count, dtype=np.int32))
        batches = (order[start:start + self.size].tolist() for start in range(0, count, self.size))
        return _rounded_up(batches, -(-count // self.size), count, self.num_processes)

    def __len__(self) -> int:
        batches = -(-self.sampler.count // self.size)
        return batches + (-batches % self.num_processes)


class TrainExamples:
    """The training split as its loader reads it: position ``len(data) + i`` is example i as a filler."""

    def __init__(self, data: Examples):
        self.data = data

    def __getitems__(self, positions: list[int]) -> list[Example]:
        count = len(self.data)
        examples = _read(self.data, [position % count for position in positions])
        return [example if position < count else filler(example) for position, example in zip(positions, examples)]

    def __getitem__(self, position: int) -> Example:
        return self.__getitems__([position])[0]

    def __len__(self) -> int:
        return len(self.data)


class LengthSortedOrder(Sampler[int]):
    """Example indices in _sort_keys order (bucket ``width``); examples of equal lengths are shuffled anew for every
    (seed, epoch). The sequence of lengths, hence the batch boundaries, is the same every epoch.

    ``places[i]`` is the place of example i's (source, target) lengths in the walk (see _walk_places): a stable
    sort of the shuffled examples by it is the lexsort of their lengths' keys, without three keys per example."""

    def __init__(self, places: np.ndarray, seed: int, width: int):
        self.places, self.seed, self.width, self.epoch = places, seed, width, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def rng(self) -> np.random.Generator:
        """The random stream of the current epoch: identical on every process and on resume."""
        return np.random.default_rng((self.seed, self.epoch))

    def sorted_indices(self, rng: np.random.Generator) -> np.ndarray:
        # The permutation of an int32 range is rng.permutation(count)'s, in half the memory.
        shuffled = rng.permutation(np.arange(len(self.places), dtype=np.int32))
        # A stable sort: within one (source, target) length the shuffled order survives.
        return shuffled[np.argsort(self.places[shuffled], kind="stable")]

    def __iter__(self) -> Iterator[int]:
        return iter(self.sorted_indices(self.rng()).tolist())

    def __len__(self) -> int:
        return len(self.places)


class TokenBudgetBatchSampler:
    """Training batches of at most ``max_tokens`` padded source + target tokens, in random order.

    Examples are sorted by length (ties shuffled) and cut into batches; the batches are then shuffled. Both
    shuffles depend only on (seed, epoch), so every process computes the same batches and a resumed run
    skips exactly the batches it had trained on. The order lives in ``self.sampler`` because accelerate's
    per-process wrapper forwards ``set_epoch`` to ``batch_sampler.sampler``.

    The cut is made once, on the distinct (source, target) lengths and their counts: every epoch's order has the
    same sequence of lengths, so the batches are the same positions of it (``bounds``). Beyond the lengths
    themselves it keeps 8 bytes a batch; each epoch's order is one numpy array, its batches made as drawn.
    """

    def __init__(self, source_lengths: np.ndarray, target_lengths: np.ndarray, max_tokens: int, seed: int,
                 num_processes: int = 1):
        source_lengths, target_lengths = np.asarray(source_lengths), np.asarray(target_lengths)
        self.num_processes = num_processes
        sources, targets, counts = _length_counts(source_lengths, target_lengths)
        least_padded = None
        for width in BUCKET_WIDTHS:
            walk = np.lexsort(_sort_keys(sources, targets, width))  # the runs of lengths in this width's order
            _refuse_too_long(sources[walk], targets[walk], max_tokens, "max_tokens")
            bounds, padded = _cut_runs(sources[walk], targets[walk], counts[walk], max_tokens)
            if least_padded is None or padded < least_padded:
                least_padded, self.bounds, chosen, chosen_walk = padded, bounds, width, walk
        self.padded_tokens = least_padded or 0
        self.real_tokens = int(np.sum(counts * (sources.astype(np.int64) + targets)))
        places = _walk_places(source_lengths, target_lengths, sources, targets, chosen_walk)
        self.sampler = LengthSortedOrder(places, seed, chosen)

    @property
    def real_batches(self) -> int:
        """Batches per epoch before the fillers that round them up to a multiple of num_processes."""
        return len(self.bounds) - 1

    def padding_fraction(self) -> float:
        """Share of the padded tokens of an epoch's batches (fillers aside) that are padding: the same in every
        epoch, and equal to ``padding_fraction(self.batches()[:self.real_batches], ...)`` without making them."""
        return 1.0 - self.real_tokens / max(self.padded_tokens, 1)

    def set_epoch(self, epoch: int) -> None:
        self.sampler.set_epoch(epoch)

    def batches(self) -> list[list[int]]:
        """This epoch's batches, in the order they are trained on (fillers last)."""
        return list(self)

    def __iter__(self) -> Iterator[list[int]]:
        rng = self.sampler.rng()
        order = self.sampler.sorted_indices(rng)
        bounds = self.bounds
        batches = (order[bounds[i]:bounds[i + 1]].tolist() for i in rng.permutation(self.real_batches))
        return _rounded_up(batches, self.real_batches, len(self.sampler), self.num_processes)

    def __len__(self) -> int:
        return self.real_batches + (-self.real_batches % self.num_processes)


def _length_counts(source_lengths: np.ndarray,
                   target_lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (source, target) lengths, sorted by source then target, and how many examples have each: a few
    thousand pairs, usually, for millions of examples. Counted in a table a chunk of examples at a time (no
    per-example array), unless the lengths span too many possible pairs for one."""
    if len(source_lengths) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    columns = int(target_lengths.max()) + 1
    cells = (int(source_lengths.max()) + 1) * columns
    if cells > max(1 << 20, len(source_lengths)):  # too many possible pairs for a table: count the ones there are
        pairs, counts = np.unique(_pair_codes(source_lengths, target_lengths, columns), return_counts=True)
    else:
        table = np.zeros(cells, dtype=np.int64)
        chunk = 1 << 18
        for start in range(0, len(source_lengths), chunk):
            piece = slice(start, start + chunk)
            table += np.bincount(_pair_codes(source_lengths[piece], target_lengths[piece], columns), minlength=cells)
        pairs = np.flatnonzero(table)
        counts = table[pairs]
    return pairs // columns, pairs % columns, counts


def _walk_places(source_lengths: np.ndarray, target_lengths: np.ndarray, sources: np.ndarray, targets: np.ndarray,
                 walk: np.ndarray) -> np.ndarray:
    """For every example, the place of its lengths in ``walk`` (an order of the distinct lengths ``sources``,
    ``targets`` of _length_counts, which come sorted by source then target): 2 bytes an example below 32768
    distinct lengths. Made a chunk of examples at a time."""
    place_of_pair = np.empty(len(walk), dtype=np.int16 if len(walk) < 1 << 15 else np.int32)
    place_of_pair[walk] = np.arange(len(walk))
    columns = int(targets.max()) + 1 if len(targets) else 1
    pairs = _pair_codes(sources, targets, columns)
    places = np.empty(len(source_lengths), dtype=place_of_pair.dtype)
    chunk = 1 << 18
    for start in range(0, len(source_lengths), chunk):
        piece = slice(start, start + chunk)
        places[piece] = place_of_pair[np.searchsorted(pairs, _pair_codes(source_lengths[piece], target_lengths[piece],
                                                                         columns))]
    return places


def _pair_codes(source_lengths: np.ndarray, target_lengths: np.ndarray, columns: int) -> np.ndarray:
    """One int64 per (source, target) length, ordered as the pairs (target lengths below ``columns``)."""
    return source_lengths.astype(np.int64) * columns + target_lengths


class LengthSortedBatchSampler:
    """Evaluation batches, longest sources first (a memory error shows up at once), each holding either
    ``batch_size`` examples or as many as fit ``max_tokens`` padded tokens.

    With several processes, accelerate deals batch i to process i % num_processes and gathers one batch from
    every process at a time, so each round of num_processes batches must hold equally many examples. The batches
    are made a multiple of num_processes (by halving the largest ones), and the smaller batches of a round are
    topped up with fillers (see EvalExamples), never with repeated examples: every example counts exactly once.
    """

    def __init__(self, source_lengths: np.ndarray, target_lengths: np.ndarray, batch_size: int,
                 max_tokens: int | None = None, num_processes: int = 1):
        source_lengths, target_lengths = np.asarray(source_lengths), np.asarray(target_lengths)
        self.count = len(source_lengths)
        order = np.lexsort((-target_lengths, -source_lengths))
        if max_tokens is None:
            spans = [(start, min(start + batch_size, len(order))) for start in range(0, len(order), batch_size)]
        else:
            spans = _cut_by_budget(source_lengths[order], target_lengths[order], max_tokens, "eval_max_tokens")
        self.batches = [order[start:end].tolist() for start, end in spans]
        self._split_to_multiple_of(num_processes)
        self._even_out_rounds(num_processes)

    def _split_to_multiple_of(self, num_processes: int) -> None:
        while len(self.batches) % num_processes and any(len(batch) > 1 for batch in self.batches):
            largest = max(range(len(self.batches)), key=lambda i: len(self.batches[i]))
            batch = self.batches[largest]
            self.batches[largest:largest + 1] = [batch[:len(batch) // 2], batch[len(batch) // 2:]]
        while len(self.batches) % num_processes:  # fewer examples than processes
            self.batches.append([self.count + self.batches[-1][0]])

    def _even_out_rounds(self, num_processes: int) -> None:
        for start in range(0, len(self.batches), num_processes):
            round_of_batches = self.batches[start:start + num_processes]
            size = max(len(batch) for batch in round_of_batches)
            for batch in round_of_batches:
                batch.extend([self.count + batch[0]] * (size - len(batch)))

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.batches)

    def __len__(self) -> int:
        return len(self.batches)


FILLER_INDEX = -1


class EvalExamples:
    """A dataset as evaluation reads it: every example carries its position as ``index``, so that outputs
    computed in length-sorted batches (and on several processes) go back to dataset order.

    Position ``len(data) + i`` is a filler that evens out batch sizes across processes: example i with every
    target token ignored (it adds nothing to the loss) and index FILLER_INDEX (its generation is dropped).
    """

    def __init__(self, data: Examples):
        self.data = data

    def __getitems__(self, positions: list[int]) -> list[Example]:
        """A batch read at once (torch's DataLoader calls this when it exists): a ``datasets.Dataset`` slices its
        table once for the batch instead of once per example, several times faster (docs/speedups.md, "Figures
        behind the code's choices")."""
        examples = _read(self.data, [position % len(self.data) for position in positions])
        return [{**example, "index": position} if position < len(self.data) else
                {**filler(example), "index": FILLER_INDEX} for position, example in zip(positions, examples)]

    def __getitem__(self, position: int) -> Example:
        return self.__getitems__([position])[0]

    def __len__(self) -> int:
        return len(self.data)


def _read(data: Examples, indices: list[int]) -> list[Example]:
    """``data``'s examples at ``indices``: in one read where the dataset reads batches (``__getitems__``)."""
    getitems = getattr(data, "__getitems__", None)
    return getitems(indices) if getitems is not None else [data[index] for index in indices]
