"""Turn ``Split``s into token-id datasets (``input_ids``, ``labels``), cached on disk.

An input is ``prefix_prompt + source + suffix_prompt`` encoded as one text with the tokenizer's own
special tokens (<s>..</s>, ..</s>, [CLS]..[SEP]: whatever its post-processor adds), so an input that fits
is exactly what the tokenizer gives. When it does not fit ``src_len``, only source text goes (from the end for
truncate=tail, from the start for head): special tokens and the prompts are kept whole. With prompts the source
text is shortened at a token boundary and the input encoded again, so that the prompts, whitespace included, read
as for a source that fits (source tokens are found by their character offsets, so prompts need a fast
(``tokenizers``) tokenizer); without prompts the source tokens beyond ``src_len`` are dropped.
Targets (the first reference) are encoded as targets (``text_target=``: a multilingual tokenizer puts the target
language's code where the source has its own, Marian switches to its target vocabulary; other tokenizers encode them
as any text) and keep their special tokens, the final eos included, within ``tgt_len``.
For a decoder-only model (textbox.model.causal_lm), which reads source and target as one sequence, a target is
its text tokens without special tokens (no <s> between source and target) followed by eos, within ``tgt_len``;
the source is encoded as for any other model, within ``src_len``. With a chat template (textbox.tokens.chat says
when) a decoder-only model's example is rendered through it instead (textbox.data.chat), and has a third column,
``prompt_labels``.

The cache key covers everything the result depends on: the split's text (a streamed train split's: its files'
digest, textbox.data.streamed), the tokenizer's saved files and the
releases of tokenizers and transformers that apply them, src_len, tgt_len, truncate, the prompts and the target
layout (decoder-only or not); not the number of processes that tokenise (``num_proc``, textbox.data.parallel),
which give the ids of one process. Entries are written atomically, so several processes (or a killed one) never
leave a partial entry behind, and checked when read against the sizes and checksums of their files recorded when written
(textbox.utils.checksums): a damaged one (a file cut short, missing or overwritten in place, no record) is named in
the log and tokenised again. An entry is one Arrow IPC stream file, written batch by batch as examples are encoded
and memory-mapped when read, so that neither tokenising nor loading holds a split's ids in memory.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Literal, Mapping, Sequence, overload

from textbox.config.errors import ConfigError
from textbox.config.families import is_decoder_only
from textbox.config.loader import Config
from textbox.data.chat import Layout, encode_examples
from textbox.data.parallel import encode_in_order, resolve_processes
from textbox.data.streamed import Chunk, ReadSplit, StreamedSplit
from textbox.tokens.chat import templating
from textbox.tokens.languages import source_head
from textbox.utils import checksums
from textbox.utils.atomic import atomic_directory

if TYPE_CHECKING:
    import datasets
    import pyarrow
    from transformers import PreTrainedTokenizerBase

CACHE_LAYOUT_VERSION = 4  # 4: one Arrow IPC stream file, written batch by batch; bump when the tokenised layout changes, so that older entries stop matching
BATCH_SIZE = 1000
WRITE_ROWS = 32 * BATCH_SIZE  # rows of an entry's record batches (_write)
COLUMNS = ("input_ids", "labels")
CHAT_COLUMNS = ("input_ids", "labels", "prompt_labels")  # prompt_labels: earlier assistant turns' (textbox.data.chat)
DATA_FILE = "data.arrow"  # an entry's rows: an Arrow IPC stream, memory-mapped when read
RECORD = "textbox_checksums.json"  # an entry's files, their sizes and checksums: written last (textbox.utils.checksums)


def tokenize_splits(config: Config, splits: Mapping[str, ReadSplit], tokenizer: PreTrainedTokenizerBase,
                    log: Callable[[str], None] = print) -> dict[str, "datasets.Dataset"]:
    """Tokenise every split (example order kept), loading each from the cache when it is there; an entry is
    memory-mapped, never read whole."""
    tokenizer_digest = tokenizer_fingerprint(tokenizer)
    head = source_head(tokenizer, config)  # a Marian target language token, or nothing
    templated = uses_chat_template(config, tokenizer)
    if templated and splits:
        log("chat template: sources are user turns, targets assistant turns (the loss on the assistant's tokens)")
    tokenized = {}
    for name, split in splits.items():
        key = cache_key(config, split, tokenizer_digest, head, templated)
        path = Path(config.cache_dir) / "tokenized" / f"{name}-{key}"
        cached = _cached(path, split, log, templated)
        if cached is None:
            with atomic_directory(path) as staging:
                _write(staging / DATA_FILE, *_tokenize(config, split, tokenizer, head, templated))
                checksums.write_record(staging, RECORD)
            log(f"tokenized {name} ({len(split)} examples) into cache {path}")
            cached = _load(path)
        tokenized[name] = cached
    return tokenized


def uses_chat_template(config: Config, tokenizer: PreTrainedTokenizerBase) -> bool:
    """Whether this run's examples are rendered through the chat template (decoder-only models only)."""
    return decoder_only(config) and templating(config, tokenizer)


def _cached(path: Path, split: ReadSplit, log: Callable[[str], None],
            templated: bool = False) -> "datasets.Dataset | None":
    """The cache entry at ``path`` when it is there and whole: its files hold the bytes written, it loads, with its
    two columns and one row per example. A damaged one (a truncated, missing or overwritten file, as a failing disk
    or a partial copy leaves it) is reported and None returned, so that it is rebuilt instead of failing every later
    run or training on other token ids."""
    if not path.is_dir():
        return None
    damage = checksums.damage_of(path, RECORD)
    if damage is not None:
        log(f"the tokenized cache entry {path} is damaged ({damage}); tokenizing again")
        return None
    try:
        data = _load(path)
    except (OSError, ValueError) as error:  # what pyarrow and datasets raise for missing or unreadable files
        log(f"the tokenized cache entry {path} is damaged ({type(error).__name__}: {error}); tokenizing again")
        return None
    expected = list(CHAT_COLUMNS if templated else COLUMNS)
    if data.column_names != expected or data.num_rows != len(split):
        log(f"the tokenized cache entry {path} is damaged ({data.num_rows} rows of {data.column_names}, expected "
            f"{len(split)} of {', '.join(expected)}); tokenizing again")
        return None
    log(f"loaded tokenized {split.name} from cache {path}")
    return data


def _load(path: Path) -> "datasets.Dataset":
    """The entry at ``path``, memory-mapped: its rows are read from the page cache as batches draw them."""
    import datasets

    return datasets.Dataset.from_file(str(path / DATA_FILE))


def _write(path: Path, schema: "pyarrow.Schema", batches: Iterable["pyarrow.RecordBatch"]) -> None:
    """``batches`` into an Arrow IPC stream file at ``path``, written WRITE_ROWS rows at a time as they come (never
    all held).

    Why not each batch as it comes: reading a stream file visits every record batch's header, and each visit maps
    the pages around it (the kernel's fault-around, ~64 kB): with 1,000-row batches a 3M-example entry put 235 MB of
    its file in the process's resident memory when loaded, with 32,000-row ones a few MB."""
    import pyarrow

    pending: list[pyarrow.RecordBatch] = []
    with pyarrow.OSFile(str(path), "wb") as sink, pyarrow.ipc.new_stream(sink, schema) as writer:
        for batch in batches:
            pending.append(batch)
            if sum(len(held) for held in pending) >= WRITE_ROWS:
                writer.write_table(pyarrow.Table.from_batches(pending, schema).combine_chunks())
                pending = []
        if pending:
            writer.write_table(pyarrow.Table.from_batches(pending, schema).combine_chunks())


def tokenizer_fingerprint(tokenizer: PreTrainedTokenizerBase) -> str:
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


def cache_key(config: Config, split: ReadSplit, tokenizer_digest: str, head: Sequence[int] = (),
              templated: bool = False) -> str:
    """A digest of everything the tokenised split depends on (only the first reference is tokenised); ``head``:
    the ids every source starts with (textbox.tokens.languages.source_head). A streamed split is named by its
    files' digest (its text is not read), an in-memory one by its text."""
    recipe: dict[str, object] = {
        "layout": CACHE_LAYOUT_VERSION,
        "tokenizer": tokenizer_digest,
        "libraries": library_versions(),
        "settings": [config.src_len, config.tgt_len, config.truncate, config.prefix_prompt, config.suffix_prompt],
    }
    if isinstance(split, StreamedSplit):
        recipe["files"] = split.digest
    else:
        recipe.update(sources=split.sources, targets=[references[0] for references in split.targets])
    if decoder_only(config):  # only then, so that the keys of encoder-decoder entries stay as they were
        recipe["target_layout"] = "text+eos"
    if templated:  # the template itself is in the tokenizer's files (tokenizer_digest)
        recipe["chat"] = {"system_prompt": config.system_prompt,
                          "contexts": None if isinstance(split, StreamedSplit) else split.contexts}
    if head:  # a Marian target language token (the others' languages are in the tokenizer's files)
        recipe["source_head"] = list(head)
    return hashlib.sha256(json.dumps(recipe, ensure_ascii=False).encode("utf-8")).hexdigest()[:32]


def library_versions() -> list[str]:
    """The releases of the libraries that turn a tokenizer's files into token ids: another release may encode
    the same files differently, so its entries are its own."""
    return [f"{name} {importlib.metadata.version(name)}" for name in ("tokenizers", "transformers")]


def _tokenize(config: Config, split: ReadSplit, tokenizer: PreTrainedTokenizerBase, head: list[int],
              templated: bool = False) -> tuple["pyarrow.Schema", Iterator["pyarrow.RecordBatch"]]:
    """The split's columns as a schema and its record batches, encoded BATCH_SIZE examples at a time as they are
    read (on ``num_proc`` processes, textbox.data.parallel: the same ids whatever their number), with a progress
    bar."""
    import datasets

    names = CHAT_COLUMNS if templated else COLUMNS
    schema = datasets.Features({name: datasets.List(datasets.Value("int32")) for name in names}).arrow_schema
    if templated:
        return schema, _chat_batches(config, split, tokenizer, schema)
    encode = ChunkEncoder(tokenizer, config.src_len, config.tgt_len, config.truncate, config.prefix_prompt or "",
                          config.suffix_prompt or "", head, decoder_only(config), schema)
    return schema, encode_in_order(encode, _chunks(split), resolve_processes(config.num_proc, len(split)),
                                   len(split), f"tokenizing {split.name}")


@dataclass(frozen=True)
class ChunkEncoder:
    """``input_ids`` and ``labels`` of a chunk (sources, first references) as one Arrow record batch. A class, not a
    closure, so that it is pickled into the worker processes that tokenise (textbox.data.parallel)."""

    tokenizer: PreTrainedTokenizerBase
    src_len: int
    tgt_len: int
    truncate: str
    prefix: str
    suffix: str
    head: list[int]
    lm_targets: bool  # a decoder-only model's targets: text + eos (encode_lm_targets)
    schema: "pyarrow.Schema"

    def __call__(self, chunk: Chunk) -> "pyarrow.RecordBatch":
        import pyarrow

        sources, targets = chunk
        input_ids = encode_within(self.tokenizer, sources, self.src_len, self.truncate, "src_len", self.prefix,
                                  self.suffix, head=self.head)
        labels = (encode_lm_targets(self.tokenizer, targets, self.tgt_len) if self.lm_targets
                  else encode_within(self.tokenizer, targets, self.tgt_len, "tail", "tgt_len", target=True))
        return pyarrow.RecordBatch.from_pydict({"input_ids": input_ids, "labels": labels}, schema=self.schema)


def _chunks(split: ReadSplit) -> Iterator[Chunk]:
    """(sources, first references) of BATCH_SIZE examples at a time, in order."""
    if isinstance(split, StreamedSplit):
        yield from split.chunks(BATCH_SIZE)
        return
    for start in range(0, len(split), BATCH_SIZE):
        yield (split.sources[start:start + BATCH_SIZE],
               [references[0] for references in split.targets[start:start + BATCH_SIZE]])


def _chat_batches(config: Config, split: ReadSplit, tokenizer: PreTrainedTokenizerBase,
                  schema: "pyarrow.Schema") -> Iterator["pyarrow.RecordBatch"]:
    """input_ids, labels and prompt_labels of examples rendered through the chat template (textbox.data.chat), in
    one process."""
    import pyarrow

    layout = Layout(config.system_prompt, config.prefix_prompt or "", config.suffix_prompt or "")
    contexts = None if isinstance(split, StreamedSplit) else split.contexts
    for start, (sources, targets) in zip(range(0, len(split), BATCH_SIZE), _chunks(split)):
        columns = encode_examples(tokenizer, sources, targets,
                                  None if contexts is None else contexts[start:start + BATCH_SIZE], layout,
                                  config.src_len, config.tgt_len, config.truncate)
        yield pyarrow.RecordBatch.from_pydict(columns, schema=schema)


def decoder_only(config: Config) -> bool:
    """Whether the run's model reads source and target as one sequence (its targets are text + eos)."""
    return is_decoder_only(config.model)


def encode_lm_targets(tokenizer: PreTrainedTokenizerBase, texts: list[str], limit: int) -> list[list[int]]:
    """Each text's tokens without special tokens, cut to ``limit - 1``, then eos: a decoder-only model's target."""
    if limit < 2:
        raise ConfigError([f"tgt_len={limit} leaves no room for target text besides the closing eos; raise --tgt_len"])
    eos = tokenizer.eos_token_id
    encoded = tokenizer(texts, add_special_tokens=False, return_attention_mask=False,
                        return_token_type_ids=False)["input_ids"]
    return [ids[:limit - 1] + [eos] for ids in encoded]


def encode_within(tokenizer: PreTrainedTokenizerBase, texts: list[str], limit: int, truncate: str, limit_key: str,
                  prefix: str = "", suffix: str = "", target: bool = False,
                  head: list[int] | None = None) -> list[list[int]]:
    """Encode ``prefix + text + suffix`` for each text with special tokens, within ``limit`` tokens.

    ``truncate`` is "tail" (the last text tokens go) or "head" (the first ones go); ``limit_key`` names the
    config key that set ``limit``, for the error raised when not even one text token fits. Without prompts the
    text tokens beyond ``limit`` are dropped; with prompts the text is shortened and encoded again
    (``_encode_with_prompts``). ``target``: the texts are targets (``text_target=``; targets take no prompts).
    ``head``: ids put before every encoding, within ``limit`` and never cut (a Marian target language token,
    textbox.tokens.languages.source_head).
    """
    if head:
        return [[*head, *ids] for ids in encode_within(tokenizer, texts, limit - len(head), truncate, limit_key,
                                                       prefix, suffix, target)]
    if prefix or suffix:
        return _encode_with_prompts(tokenizer, texts, limit, truncate, limit_key, prefix, suffix)
    encoded = _encode(tokenizer, texts, target, special_tokens_mask=False)
    too_long = [i for i, ids in enumerate(encoded) if len(ids) > limit]
    if too_long:  # only these need the special tokens' mask (asking for it for every text cost ~15% of encoding)
        masks = _encode(tokenizer, [texts[i] for i in too_long], target, special_tokens_mask=True)
        for i, (ids, keep) in zip(too_long, zip(masks["input_ids"], masks["special_tokens_mask"])):
            encoded[i] = _drop_text_tokens(ids, keep, limit, truncate, limit_key)
    return encoded


@overload
def _encode(tokenizer: PreTrainedTokenizerBase, texts: list[str], target: bool,
            special_tokens_mask: Literal[False]) -> list[list[int]]: ...


@overload
def _encode(tokenizer: PreTrainedTokenizerBase, texts: list[str], target: bool,
            special_tokens_mask: Literal[True]) -> dict[str, list[list[int]]]: ...


def _encode(tokenizer: PreTrainedTokenizerBase, texts: list[str], target: bool,
            special_tokens_mask: bool) -> list[list[int]] | dict[str, list[list[int]]]:
    """``texts`` encoded with special tokens, as targets (``text_target=``) or sources: their ids, or (with
    ``special_tokens_mask``) their ids and which of them are special tokens."""
    options = {"return_special_tokens_mask": special_tokens_mask, "return_attention_mask": False,
               "return_token_type_ids": False}
    encoding = tokenizer(text_target=texts, **options) if target else tokenizer(texts, **options)
    if special_tokens_mask:
        return {"input_ids": encoding["input_ids"], "special_tokens_mask": encoding["special_tokens_mask"]}
    return list(encoding["input_ids"])


def _encode_with_prompts(tokenizer: PreTrainedTokenizerBase, texts: list[str], limit: int, truncate: str,
                         limit_key: str, prefix: str, suffix: str) -> list[list[int]]:
    """Encode ``prefix + text + suffix``; a text too long is cut at a token boundary and encoded again, until it fits.

    Why not drop tokens from the encoding, as without prompts: a token may hold a prompt's whitespace ("\\n" of
    "\\nTL;DR:", the space of " => German:" as a lone 'Ġ' or '▁'), or carry it in front of a word of the text
    ('Ġword', '▁word', whose offsets may be trimmed of it). Dropping it changed the prompt, so long sources got
    another prompt format than short ones. Encoding the shortened text with the prompts around it gives every input
    exactly what the tokenizer gives for its text, prompts as written; an input may then end a token or two under
    ``limit`` where the tokenizer merges across the cut.
    """
    bodies = list(texts)
    fitted: list[list[int]] = [[] for _ in texts]
    pending = list(range(len(texts)))
    while pending:
        encoding = tokenizer([prefix + bodies[i] + suffix for i in pending], return_offsets_mapping=True,
                             return_special_tokens_mask=True, return_attention_mask=False,
                             return_token_type_ids=False)
        if "offset_mapping" not in encoding:
            raise ConfigError([f"prefix_prompt/suffix_prompt need a fast tokenizer that reports character offsets; "
                               f"{type(tokenizer).__name__} does not"])
        too_long = []
        for i, ids, offsets, special in zip(pending, encoding["input_ids"], encoding["offset_mapping"],
                                            encoding["special_tokens_mask"]):
            fitted[i] = ids
            if len(ids) > limit:
                spans = _text_spans(offsets, special, len(prefix), len(prefix) + len(bodies[i]))
                bodies[i] = _shorten(bodies[i], len(ids) - limit, spans, len(ids), truncate, limit, limit_key)
                too_long.append(i)
        pending = too_long
    return fitted


def _text_spans(offsets: list[tuple[int, int]], special: list[int], start: int, end: int) -> list[tuple[int, int]]:
    """Where each token holding characters of the text (``start``..``end`` of the input) lies in the text, in order.

    A token with an empty span is whitespace whose offsets were trimmed (a lone 'Ġ' of a BART tokenizer): it
    holds the character just before its position, which belongs to the text or to a prompt.
    """
    spans = []
    for (first, last), is_special in zip(offsets, special):
        if first == last and not is_special:
            first -= 1
        if not is_special and max(first, start) < min(last, end):
            spans.append((max(first, start) - start, min(last, end) - start))
    return spans


def _shorten(text: str, excess: int, spans: list[tuple[int, int]], length: int, truncate: str, limit: int,
             limit_key: str) -> str:
    """``text`` without the characters of its last (tail) or first (head) ``excess`` tokens (``spans``: where its
    tokens lie). The cut is placed at a token's end: offsets may be trimmed of a token's leading whitespace
    ('Ġword'), never of the characters that end it."""
    if excess < len(spans):
        shortened = (text[:max(last for _, last in spans[:-excess])] if truncate == "tail"
                     else text[max(last for _, last in spans[:excess]):])
        if shortened.strip():
            return shortened
    raise ConfigError([f"{limit_key}={limit} leaves no room for text: {length - len(spans)} tokens are "
                       f"special tokens or prompts, which are never cut; raise --{limit_key}"])


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
