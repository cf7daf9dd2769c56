"""Denoising pre-training (``--pretrain_task=denoising``): BART's sentence permutation and text infilling,
applied on the fly to every batch; the target is the original text.

Data. ``read_source_only_splits`` (textbox.data.readers) reads train.src (valid.src for validation by loss, test.src
for a test loss) and nothing else: each source is its own target. Tokenisation is the usual one (tokenize.py), so an
example holds the clean source as ``input_ids`` (within src_len) and as ``labels`` (within tgt_len).

Noise (``DenoisingCollator``), on *words* (whitespace-separated pieces of the text, not BPE tokens: a masked
span never cuts a word, and mask_ratio means the same whatever the tokenizer), for each example:

1. sentence permutation: the text is split after ``.``, ``!`` or ``?`` followed by whitespace;
   ceil(permute_sentence_ratio x sentences) of them, chosen at random, are shuffled among their own positions
   (1.0 shuffles all of them; the multiset of sentences is unchanged);
2. text infilling: m = mask_ratio x words (rounded up or down at random so that its mean is exact) words are
   masked in spans whose lengths are drawn from Poisson(poisson_lambda) until they cover m (the last one cut to
   fit). Each span becomes ONE mask token; a span of length 0 inserts a mask token. Spans never overlap or touch
   (they sit in distinct gaps between the unmasked words), so exactly m words are masked and every span keeps
   its own mask.

The noisy text is tokenised again within src_len (a mask token is written against the preceding word, so that a
byte-level BPE does not spend a lone space token before it); labels stay the clean text. A text is decoded from
its ``input_ids`` first (byte-level BPE round-trips exactly), so prompts, if any, are noised like the text.

Randomness: a fresh numpy generator per example, seeded by the config's ``seed`` and
- for evaluation batches (their examples carry ``index``): the example's index, so every validation and the
  test score the same noisy inputs whatever the batching and the number of processes;
- for training batches: a digest of the batch's token ids in order and the example's position in the batch.
  Training batches are reshuffled every epoch, so an example gets new noise each epoch (unless a batch repeats
  exactly, e.g. with train_batch_size=1). The noise does not depend on when the batch is built: accelerate
  builds the next batch before the current step, so noise drawn from the global RNG would come out different
  after ``--resume`` (tests/integration/test_denoising_e2e.py fails that way); this way an interrupted and
  resumed run sees the same noise, worker processes (num_workers) and DDP processes included, and the same
  seed always gives the same noise.
"""
from __future__ import annotations

import hashlib
import math
import re
from typing import TYPE_CHECKING, Sequence

import numpy as np

from textbox.config.errors import TextBoxUserError
from textbox.data.tokenize import encode_within

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from textbox.config import Config
    from textbox.data.examples import Batch, Collator, Example

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_TRAIN, _EVAL = 0, 1  # keep training and evaluation seeds apart


# --- noise -----------------------------------------------------------------------------------------------------
def split_sentences(text: str) -> list[str]:
    """The text's sentences, each ending at ., ! or ? followed by whitespace (the last one at the text's end)."""
    return [sentence for sentence in SENTENCE_END.split(text.strip()) if sentence]


def permute_sentences(sentences: list[str], ratio: float, rng: np.random.Generator) -> list[str]:
    """ceil(ratio x n) sentences chosen at random, shuffled among their own positions (BART's permutation)."""
    count = len(sentences)
    chosen_count = min(count, math.ceil(count * ratio))
    if count < 2 or chosen_count < 2:
        return list(sentences)
    chosen = rng.permutation(count)[:chosen_count]
    order = np.arange(count)
    order[chosen] = chosen[rng.permutation(chosen_count)]
    return [sentences[i] for i in order]


def span_lengths(total: int, poisson_lambda: float, rng: np.random.Generator) -> list[int]:
    """Poisson(poisson_lambda) lengths drawn until they sum to at least ``total``, the last cut so that they sum
    to exactly ``total``; zero lengths (insertions) are kept. No spans at all when ``total`` is 0."""
    lengths: list[int] = []
    covered = 0
    while covered < total:
        draws = rng.poisson(poisson_lambda, size=max(4, int(2 * (total - covered) / poisson_lambda) + 1))
        for length in draws.tolist():
            lengths.append(min(length, total - covered))
            covered += lengths[-1]
            if covered >= total:
                break
    return lengths


def words_to_mask(count: int, mask_ratio: float, rng: np.random.Generator) -> int:
    """mask_ratio x count, rounded down or up at random so that its expectation is exactly mask_ratio x count."""
    exact = count * mask_ratio
    whole = math.floor(exact)
    return min(count, whole + int(rng.random() < exact - whole))


def infill(words: list[str], mask_ratio: float, poisson_lambda: float, rng: np.random.Generator,
           mask: str) -> tuple[list[str], int]:
    """``words`` with spans replaced by one ``mask`` each (see the module docstring), and how many were masked."""
    total = words_to_mask(len(words), mask_ratio, rng)
    if total == 0:
        return list(words), 0
    lengths = span_lengths(total, poisson_lambda, rng)
    gaps = len(words) - total + 1  # places between (and around) the unmasked words
    while len(lengths) > gaps:  # more spans than places: merge the extra ones (only when nearly all is masked)
        extra = lengths.pop()
        lengths[-1] += extra
    chosen = rng.choice(gaps, size=len(lengths), replace=False)
    span_at = dict(zip(chosen.tolist(), lengths))
    noisy: list[str] = []
    position = 0
    for gap in range(gaps):
        if gap in span_at:
            noisy.append(mask)
            position += span_at[gap]
        if gap < gaps - 1:
            noisy.append(words[position])
            position += 1
    return noisy, total


def noise_text(text: str, rng: np.random.Generator, mask: str, mask_ratio: float, poisson_lambda: float,
               permute_sentence_ratio: float) -> str:
    """Sentence permutation, then text infilling; a mask is written against the word before it."""
    sentences = permute_sentences(split_sentences(text), permute_sentence_ratio, rng)
    words = " ".join(sentences).split()
    noisy, _ = infill(words, mask_ratio, poisson_lambda, rng, mask)
    return " ".join(noisy).replace(" " + mask, mask)


# --- batches ---------------------------------------------------------------------------------------------------
class DenoisingCollator:
    """Noises each example's source (decoded from ``input_ids``) and pads the batch with ``pad`` (an
    encoder-decoder's collator: textbox.data.collate); the labels (the clean source) are kept as tokenised."""

    def __init__(self, config: Config, tokenizer: PreTrainedTokenizerBase, pad: Collator):
        if getattr(tokenizer, "mask_token", None) is None or tokenizer.mask_token_id is None:
            raise TextBoxUserError(f"--pretrain_task=denoising replaces spans with a mask token, and the tokenizer "
                                   f"of model {config.model!r} ({type(tokenizer).__name__}) has none; use a model "
                                   f"whose tokenizer has one (transformer, rnn, gru, lstm, BART-like checkpoints)")
        self.tokenizer = tokenizer
        self.seed = int(config.seed) % 2**32  # numpy seeds are non-negative
        self.mask_ratio = float(config.mask_ratio)
        self.poisson_lambda = float(config.poisson_lambda)
        self.permute_sentence_ratio = float(config.permute_sentence_ratio)
        self.src_len = config.src_len
        self.truncate = config.truncate
        self.pad = pad

    def __call__(self, examples: Sequence[Example]) -> Batch:
        texts = self.tokenizer.batch_decode([list(example["input_ids"]) for example in examples],
                                            skip_special_tokens=True, clean_up_tokenization_spaces=False)
        noisy = [noise_text(text, rng, self.tokenizer.mask_token, self.mask_ratio, self.poisson_lambda,
                            self.permute_sentence_ratio) for text, rng in zip(texts, self.generators(examples))]
        input_ids = encode_within(self.tokenizer, noisy, self.src_len, self.truncate, "src_len")
        return self.pad([{**example, "input_ids": ids} for example, ids in zip(examples, input_ids)])

    def generators(self, examples: Sequence[Example]) -> list[np.random.Generator]:
        """One generator per example: from its index (evaluation) or from the batch's content (training)."""
        if "index" in examples[0]:
            return [np.random.default_rng([self.seed, _EVAL, int(example["index"]) % 2**63]) for example in examples]
        digest = hashlib.blake2b(digest_size=16)
        for example in examples:
            ids = np.asarray(example["input_ids"], dtype=np.int64)
            digest.update(len(ids).to_bytes(8, "little"))
            digest.update(ids.tobytes())
        words = np.frombuffer(digest.digest(), dtype=np.uint32).tolist()
        return [np.random.default_rng([self.seed, _TRAIN, *words, position]) for position in range(len(examples))]
