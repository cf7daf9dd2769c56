"""Small tokenizers of the kinds users run, built offline with the ``tokenizers`` library (no hub).

Each mimics the pipeline of a real family (pre-tokenizer, normaliser, post-processor, offsets trimmed or not),
trained on a few sentences; what matters for the tests is how they treat whitespace and character offsets.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from tokenizers import Tokenizer, decoders, implementations, models, normalizers, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

from textbox.model.tokenizer import train_bpe_tokenizer

CORPUS = ["Summarize: the cat sat on the mat.", "A dog ran in the park, then something happened.",
          "TL;DR: a short summary => German: ein Haus", "Translate English to German: the house is small.",
          "line one\nline two\n\nTL;DR: three", "Zwei Hunde spielen im Schnee. Ein Mann fährt Fahrrad!"] * 20


def _byte_level(post_processor: Callable[[Tokenizer], processors.PostProcessor]) -> PreTrainedTokenizerFast:
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.train_from_iterator(CORPUS, trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    backend.post_processor = post_processor(backend)
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                   unk_token="<unk>")


def framework_bpe(cache_dir: Path) -> PreTrainedTokenizerFast:
    """The tokenizer the framework trains for --model=transformer (byte-level BPE, <s> $A </s>, untrimmed offsets)."""
    return train_bpe_tokenizer(CORPUS, vocab_size=400, min_frequency=1, cache_dir=cache_dir, log=lambda _: None)


def bart_style(cache_dir: Path) -> PreTrainedTokenizerFast:
    """Byte-level BPE with BART's post-processor: <s> $A </s>, offsets trimmed of their whitespace."""
    return _byte_level(lambda backend: processors.RobertaProcessing(
        ("</s>", backend.token_to_id("</s>")), ("<s>", backend.token_to_id("<s>")), trim_offsets=True))


def gpt2_style(cache_dir: Path) -> PreTrainedTokenizerFast:
    """Byte-level BPE as GPT-2 ships it: no special tokens added, offsets not trimmed."""
    return _byte_level(lambda backend: processors.ByteLevel(trim_offsets=False))


def t5_style(cache_dir: Path) -> PreTrainedTokenizerFast:
    """A sentencepiece Unigram with T5's pipeline: NMT/NFKC normalisation (a newline becomes a space), Metaspace
    (a space becomes part of the next piece, '▁word'), $A </s>."""
    sentencepiece = implementations.SentencePieceUnigramTokenizer()
    sentencepiece.train_from_iterator(CORPUS, vocab_size=200, special_tokens=["<pad>", "</s>", "<unk>"],
                                      unk_token="<unk>", show_progress=False)
    backend = sentencepiece._tokenizer
    backend.post_processor = processors.TemplateProcessing(
        single="$A </s>", special_tokens=[("</s>", backend.token_to_id("</s>"))])
    return PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")


def bert_style(cache_dir: Path) -> PreTrainedTokenizerFast:
    """WordPiece with BERT's normaliser (lower case) and pre-tokenizer (whitespace is not kept), [CLS] $A [SEP]."""
    backend = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    backend.normalizer = normalizers.BertNormalizer(lowercase=True)
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    backend.decoder = decoders.WordPiece()
    backend.train_from_iterator(CORPUS, trainers.WordPieceTrainer(
        vocab_size=200, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], show_progress=False))
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[(token, backend.token_to_id(token)) for token in ("[CLS]", "[SEP]")])
    return PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="[PAD]", unk_token="[UNK]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")


TOKENIZER_KINDS: dict[str, Callable[[Path], PreTrainedTokenizerFast]] = {
    "framework-bpe": framework_bpe, "bart-style": bart_style, "gpt2-style": gpt2_style, "t5-style": t5_style,
    "bert-style": bert_style}
