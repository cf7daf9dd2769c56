"""Turn ``Split``s into token-id datasets (``input_ids``, ``labels``), cached on disk.

An input is ``prefix_prompt + source + suffix_prompt`` encoded as one text with the tokenizer's own
special tokens (<s>..</s>, ..</s>, [CLS]..[SEP]: whatever its post-processor adds), so an input that fits
is exactly what the tokenizer gives. When it does not fit ``src_len``, only source tokens are dropped
(from the end for truncate=tail, from the start for head): special tokens and the prompts are kept whole.
Prompt tokens are found by their character offsets, so prompts need a fast (``tokenizers``) tokenizer.
Targets (the first reference) keep their special tokens, the final eos included, within ``tgt_len``.
For a decoder-only model (textbox.model.causal_lm), which reads source and target as one sequence, a target is
its text tokens without special tokens (no <s> between source and target) followed by eos, within ``tgt_len``;
the source is encoded as for any other model, within ``src_len``.

The cache key covers everything the result depends on: the split's text, the tokenizer's saved files,
src_len, tgt_len, truncate, the prompts and the target layout (decoder-only or not). Entries are written
atomically, so several processes (or a killed one) never leave a partial entry behind.
"""
from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from textbox.config.errors import ConfigError
from textbox.config.families import is_decoder_only
from textbox.config.loader import Config
from textbox.data.split import Split
from textbox.utils.atomic import atomic_directory

if TYPE_CHECKING:
    import datasets

CACHE_LAYOUT_VERSION = 1  # bump when the tokenised layout changes, so that older entries stop matching
BATCH_SIZE = 1000


def tokenize_splits(config: Config, splits: dict[str, Split], tokenizer: Any,
                    log: Callable[[str], None] = print) -> dict[str, "datasets.Dataset"]:
    """Tokenise every split (example order kept), loading each from the cache when it is there."""
    import datasets

    tokenizer_digest = tokenizer_fingerprint(tokenizer)
    tokenized = {}
    for name, split in splits.items():
        path = Path(config.cache_dir) / "tokenized" / f"{name}-{cache_key(config, split, tokenizer_digest)}"
        if path.is_dir():
            log(f"loaded tokenized {name} from cache {path}")
        else:
            with atomic_directory(path) as staging:
                _tokenize(config, split, tokenizer, path.name).save_to_disk(str(staging))
            log(f"tokenized {name} ({len(split)} examples) into cache {path}")
        tokenized[name] = datasets.load_from_disk(str(path))
    return tokenized


def tokenizer_fingerprint(tokenizer: Any) -> str:
    """A digest of the files ``save_pretrained`` writes: vocabulary, merges, special tokens, settings.

    The truncation and padding entries of tokenizer.json are left out: every call of a fast tokenizer
    rewrites them, so they describe the last call, not the tokenizer.
    """
    hasher = hashlib.sha256()
    with tempfile.TemporaryDirectory() as directory:
        tokenizer.save_pretrained(directory)
        for file in sorted(Path(directory).rglob("*")):
            if not file.is_file():
                continue
            content = file.read_bytes()
            if file.name == "tokenizer.json":
                state = {k: v for k, v in json.loads(content).items() if k not in ("truncation", "padding")}
                content = json.dumps(state, sort_keys=True).encode("utf-8")
            hasher.update(file.name.encode("utf-8"))
            hasher.update(content)
    return hasher.hexdigest()


def cache_key(config: Config, split: Split, tokenizer_digest: str) -> str:
    """A digest of everything the tokenised split depends on (only the first reference is tokenised)."""
    recipe = {
        "layout": CACHE_LAYOUT_VERSION,
        "tokenizer": tokenizer_digest,
        "settings": [config.src_len, config.tgt_len, config.truncate, config.prefix_prompt, config.suffix_prompt],
        "sources": split.sources,
        "targets": [references[0] for references in split.targets],
    }
    if decoder_only(config):  # only then, so that the keys of encoder-decoder entries stay as they were
        recipe["target_layout"] = "text+eos"
    return hashlib.sha256(json.dumps(recipe, ensure_ascii=False).encode("utf-8")).hexdigest()[:32]


def _tokenize(config: Config, split: Split, tokenizer: Any, fingerprint: str) -> "datasets.Dataset":
    import datasets

    prefix, suffix = config.prefix_prompt or "", config.suffix_prompt or ""
    lm_targets = decoder_only(config)

    def encode(batch: dict[str, list[str]]) -> dict[str, list[list[int]]]:
        return {
            "input_ids": encode_within(tokenizer, batch["source"], config.src_len, config.truncate, "src_len",
                                       prefix, suffix),
            "labels": (encode_lm_targets(tokenizer, batch["target"], config.tgt_len) if lm_targets
                       else encode_within(tokenizer, batch["target"], config.tgt_len, "tail", "tgt_len")),
        }

    texts = datasets.Dataset.from_dict({"source": split.sources,
                                        "target": [references[0] for references in split.targets]})
    features = datasets.Features({"input_ids": datasets.List(datasets.Value("int32")),
                                  "labels": datasets.List(datasets.Value("int32"))})
    return texts.map(encode, batched=True, batch_size=BATCH_SIZE, remove_columns=["source", "target"],
                     features=features, new_fingerprint=fingerprint, desc=f"tokenizing {split.name}")


def decoder_only(config: Config) -> bool:
    """Whether the run's model reads source and target as one sequence (its targets are text + eos)."""
    return is_decoder_only(config.model)


def encode_lm_targets(tokenizer: Any, texts: list[str], limit: int) -> list[list[int]]:
    """Each text's tokens without special tokens, cut to ``limit - 1``, then eos: a decoder-only model's target."""
    if limit < 2:
        raise ConfigError([f"tgt_len={limit} leaves no room for target text besides the closing eos; raise --tgt_len"])
    eos = tokenizer.eos_token_id
    encoded = tokenizer(texts, add_special_tokens=False, return_attention_mask=False,
                        return_token_type_ids=False)["input_ids"]
    return [ids[:limit - 1] + [eos] for ids in encoded]


def encode_within(tokenizer: Any, texts: list[str], limit: int, truncate: str, limit_key: str,
                  prefix: str = "", suffix: str = "") -> list[list[int]]:
    """Encode ``prefix + text + suffix`` for each text with special tokens, dropping text tokens beyond ``limit``.

    ``truncate`` is "tail" (drop the last text tokens) or "head" (drop the first ones); ``limit_key`` names
    the config key that set ``limit``, for the error raised when not even one text token fits.
    """
    with_prompts = bool(prefix or suffix)
    encoding = tokenizer([prefix + text + suffix for text in texts], return_special_tokens_mask=True,
                         return_offsets_mapping=with_prompts, return_attention_mask=False,
                         return_token_type_ids=False)
    if with_prompts and "offset_mapping" not in encoding:
        raise ConfigError([f"prefix_prompt/suffix_prompt need a fast tokenizer that reports character offsets; "
                           f"{type(tokenizer).__name__} does not"])
    fitted = []
    for i, ids in enumerate(encoding["input_ids"]):
        if len(ids) <= limit:
            fitted.append(ids)
            continue
        keep = encoding["special_tokens_mask"][i]
        if with_prompts:
            prompt_end = len(prefix.rstrip())
            suffix_start = len(prefix) + len(texts[i]) + len(suffix) - len(suffix.lstrip())
            keep = [special or start < prompt_end or end > suffix_start
                    for special, (start, end) in zip(keep, encoding["offset_mapping"][i])]
        fitted.append(_drop_text_tokens(ids, keep, limit, truncate, limit_key))
    return fitted


def _drop_text_tokens(ids: list[int], keep: list[int | bool], limit: int, truncate: str,
                      limit_key: str) -> list[int]:
    """``ids`` shortened to ``limit`` by dropping droppable (not ``keep``) tokens from the tail or the head."""
    droppable = [position for position, kept in enumerate(keep) if not kept]
    excess = len(ids) - limit
    if excess >= len(droppable):
        raise ConfigError([f"{limit_key}={limit} leaves no room for text: {len(ids) - len(droppable)} tokens are "
                           f"special tokens or prompts, which are never cut; raise --{limit_key}"])
    dropped = set(droppable[-excess:] if truncate == "tail" else droppable[:excess])
    return [token for position, token in enumerate(ids) if position not in dropped]
