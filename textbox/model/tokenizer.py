"""A byte-level BPE tokenizer trained on the training split, cached so that a rerun reuses it.

Byte-level BPE never needs <unk> (every byte is in the alphabet), so any text round-trips through
encode/decode; the special tokens follow BART's ids so a from-scratch model matches BART's conventions.
A cached tokenizer is checked when read against its files' sizes and checksums recorded when it was written
(textbox.utils.checksums): a damaged one is named in the log and trained again (the same corpus trains the same
tokenizer).
"""
from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Callable, Iterable, Sequence

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from textbox.model.built_model import TrainingTexts
from textbox.utils import checksums
from textbox.utils.atomic import atomic_directory

BOS, PAD, EOS, UNK, MASK = "<s>", "<pad>", "</s>", "<unk>", "<mask>"
SPECIAL_TOKENS = (BOS, PAD, EOS, UNK, MASK)  # ids 0..4, in this order
RECORD = "textbox_checksums.json"  # the cached tokenizer's files, their sizes and checksums (written last)


def training_sample(texts: Sequence[str], size: int | None, seed: int) -> list[str]:
    """At most ``size`` of ``texts``, drawn uniformly without replacement (seeded by ``seed``) and kept in corpus
    order; all of them when there are no more (or ``size`` is None).

    Why a sample: BPE merges settle on a corpus' frequent pairs long before millions of texts (sentencepiece's
    input_sentence_size, fairseq's), and training on all 6M texts of a 3M-pair set took minutes."""
    indices = sample_indices(len(texts), size, seed)
    return list(texts) if indices is None else [texts[index] for index in indices]


def sample_indices(count: int, size: int | None, seed: int) -> list[int] | None:
    """The positions ``training_sample`` draws from ``count`` texts, ascending (None: every one)."""
    if size is None or count <= size:
        return None
    return sorted(random.Random(seed).sample(range(count), size))


def split_tokenizer(train_split: TrainingTexts, vocab_size: int, min_frequency: int, cache_dir: str | Path,
                    log: Callable[[str], None], sample: int | None = None, seed: int = 0) -> PreTrainedTokenizerFast:
    """The BPE of ``train_split``'s texts (``train_bpe_tokenizer``). A streamed split (one with a ``digest``) gives
    the same texts drawn by position, read from its files as they are drawn, and its cache entry is named after its
    files' digest, the sample and the settings, so that a rerun loads it without reading a line."""
    if train_split.digest is None:
        return train_bpe_tokenizer(list(train_split.tokenizer_texts()), vocab_size, min_frequency, cache_dir, log,
                                   sample, seed)
    count = 2 * len(train_split)
    drawn = count if sample is None else min(sample, count)
    _log_sample(log, drawn, count, seed)
    name = hashlib.sha256(json.dumps([vocab_size, min_frequency, SPECIAL_TOKENS, "files", train_split.digest, count,
                                      None if drawn == count else [sample, seed]]).encode()).hexdigest()[:16]
    # the positions are drawn only to train (a cached rerun skips them: 1M positions held ~35 MB while drawn)
    return _cached_or_trained(Path(cache_dir) / "tokenizers" / name,
                              lambda: train_split.tokenizer_texts(sample_indices(count, sample, seed)), drawn,
                              vocab_size, min_frequency, log)


def train_bpe_tokenizer(texts: Sequence[str], vocab_size: int, min_frequency: int, cache_dir: str | Path,
                        log: Callable[[str], None], sample: int | None = None,
                        seed: int = 0) -> PreTrainedTokenizerFast:
    """Train (or load from ``cache_dir``/tokenizers/<digest>) a tokenizer whose ``encode`` adds <s> ... </s>, on
    ``training_sample(texts, sample, seed)``: the cache entry is named after the texts drawn, so a corpus no larger
    than ``sample`` keeps the entry it had before samples, and another sample size or seed that draws other texts
    trains its own."""
    corpus = training_sample(texts, sample, seed)
    _log_sample(log, len(corpus), len(texts), seed)
    return _cached_or_trained(Path(cache_dir) / "tokenizers" / _digest(corpus, vocab_size, min_frequency),
                              lambda: corpus, len(corpus), vocab_size, min_frequency, log)


def _log_sample(log: Callable[[str], None], drawn: int, count: int, seed: int) -> None:
    if drawn < count:
        log(f"training the tokenizer on {drawn} of the {count} texts (tokenizer_train_sample, drawn with "
            f"seed {seed})")


def _cached_or_trained(cached: Path, corpus: Callable[[], Iterable[str]], count: int, vocab_size: int,
                       min_frequency: int, log: Callable[[str], None]) -> PreTrainedTokenizerFast:
    """The tokenizer cached at ``cached`` when it is whole, else one trained on ``corpus()`` (``count`` texts)
    and cached there."""
    if cached.is_dir():
        damage = checksums.damage_of(cached, RECORD)
        if damage is None:
            try:
                loaded = AutoTokenizer.from_pretrained(cached)
            except (OSError, ValueError) as error:  # bytes as written that this release cannot read
                damage = f"{type(error).__name__}: {error}"
            else:
                log(f"loaded tokenizer from cache {cached}")
                return loaded
        log(f"the cached tokenizer {cached} is damaged ({damage}); training it again")
    tokenizer = _train(corpus(), vocab_size, min_frequency)
    with atomic_directory(cached) as tmp:
        tokenizer.save_pretrained(tmp)
        checksums.write_record(tmp, RECORD)
    log(f"trained a byte-level BPE tokenizer ({len(tokenizer)} tokens) on {count} texts; cached in {cached}")
    # The reloaded copy, so that this run and every later one (which loads the cache) use an identical
    # tokenizer: same behaviour and the same fingerprint for the tokenised-data cache.
    return AutoTokenizer.from_pretrained(cached)


def _digest(corpus: list[str], vocab_size: int, min_frequency: int) -> str:
    """Names the cache entry after everything the trained tokenizer depends on."""
    hasher = hashlib.sha256(json.dumps([vocab_size, min_frequency, SPECIAL_TOKENS]).encode())
    for text in corpus:
        hasher.update(text.encode("utf-8"))
        hasher.update(b"\0")  # a separator no text line contains, so ["ab"] and ["a", "b"] differ
    return hasher.hexdigest()[:16]


def _train(corpus: Iterable[str], vocab_size: int, min_frequency: int) -> PreTrainedTokenizerFast:
    backend = Tokenizer(models.BPE(unk_token=UNK))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                  special_tokens=list(SPECIAL_TOKENS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    backend.train_from_iterator(corpus, trainer)
    bos_id, eos_id = backend.token_to_id(BOS), backend.token_to_id(EOS)
    backend.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A {EOS}", pair=f"{BOS} $A {EOS} $B {EOS}", special_tokens=[(BOS, bos_id), (EOS, eos_id)])
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token=BOS, pad_token=PAD, eos_token=EOS,
                                   unk_token=UNK, mask_token=MASK)
