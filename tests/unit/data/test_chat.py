"""Examples rendered through a chat template (textbox.data.chat) and instruction data (textbox.data.instructions):
the training text is what ``apply_chat_template`` gives, the loss is on the assistant turns alone, and the prompt
ends with the template's generation prompt. Tiny tokenizers with Qwen2's ChatML and Llama 3's templates."""
from __future__ import annotations

import json

import pytest

from textbox.config.errors import ConfigError, DataError
from textbox.config.loader import Config
from textbox.config.schema import DEFAULTS
from textbox.data.chat import Layout, encode_conversation, encode_examples, encode_prompts
from textbox.data.collate import CausalLMCollator
from textbox.data.readers import key_problems, read_splits
from textbox.data.tokenize import tokenize_splits
from textbox.tokens import chat
from textbox.utils.labels import IGNORE_INDEX
from tests.chat_helpers import STYLES, chat_tokenizer

TEXTS = ["what is the capital of france", "paris is the capital", "name a red fruit", "an apple", "thanks a lot"]
CONVERSATION = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "name a red fruit"},
                {"role": "assistant", "content": "an apple"}, {"role": "user", "content": "thanks a lot"},
                {"role": "assistant", "content": "paris is the capital"}]
GENERATION_PROMPTS = {"qwen2": "<|im_start|>assistant\n", "llama3": "<|start_header_id|>assistant<|end_header_id|>\n\n"}


@pytest.fixture(scope="module", params=sorted(STYLES))
def styled(request, tmp_path_factory):
    """(style, tokenizer)."""
    return request.param, chat_tokenizer(TEXTS, tmp_path_factory.mktemp("tokenizer"), request.param)


def _template_ids(tokenizer, turns, generation_prompt):
    ids = tokenizer.apply_chat_template(turns, tokenize=True, add_generation_prompt=generation_prompt)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


def test_a_source_and_target_are_the_user_and_assistant_turns_of_the_template(styled):
    style, tokenizer = styled
    encoded = encode_examples(tokenizer, ["what is the capital of france"], ["paris is the capital"], None,
                              Layout(system_prompt="be brief"), 200, 50, "tail")
    turns = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "what is the capital of france"}]
    prompt, labels = encoded["input_ids"][0], encoded["labels"][0]
    assert prompt == _template_ids(tokenizer, turns, True)
    full = _template_ids(tokenizer, [*turns, {"role": "assistant", "content": "paris is the capital"}], False)
    assert prompt + labels == full[:len(prompt) + len(labels)]
    assert tokenizer.decode(full[len(prompt) + len(labels):]).strip() == ""  # ChatML's line break after <|im_end|>
    assert tokenizer.decode(labels) == "paris is the capital" + STYLES[style]["eos"]
    assert encoded["prompt_labels"][0] == [IGNORE_INDEX] * len(prompt)
    assert tokenizer.decode(prompt).endswith(GENERATION_PROMPTS[style])


def test_every_assistant_turn_of_a_conversation_is_labelled_and_nothing_else(styled):
    style, tokenizer = styled
    encoded = encode_conversation(tokenizer, CONVERSATION)
    ids = encoded["input_ids"] + encoded["labels"]
    labels = encoded["prompt_labels"] + encoded["labels"]
    assert ids == _template_ids(tokenizer, CONVERSATION, False)[:len(ids)]
    eos = STYLES[style]["eos"]
    labelled = [position for position, label in enumerate(labels) if label != IGNORE_INDEX]
    assert all(labels[position] == ids[position] for position in labelled)
    # two runs of labels: each assistant turn's content and the eos that ends it
    runs = tokenizer.decode([ids[position] for position in labelled])
    assert runs == f"an apple{eos}paris is the capital{eos}"
    first_end = labelled.index(next(p for p in labelled if ids[p] == tokenizer.eos_token_id))
    assert labelled[first_end + 1] > labelled[first_end] + 1  # the user turn between them is not labelled
    assert tokenizer.decode(encoded["input_ids"]).endswith(GENERATION_PROMPTS[style])


def test_a_long_prompt_loses_old_exchanges_then_user_text_never_the_template(styled):
    style, tokenizer = styled
    long_turns = [*CONVERSATION[:4], {"role": "user", "content": "name a red fruit " * 20}]
    encoded = encode_examples(tokenizer, ["unused"], ["an apple"], [long_turns], Layout(), 40, 50, "tail")
    prompt = encoded["input_ids"][0]
    text = tokenizer.decode(prompt)
    assert len(prompt) <= 40 and text.endswith(GENERATION_PROMPTS[style])
    assert "be brief" in text and "thanks" not in text and "an apple" not in text and "name a" in text  # system kept,
    # the old exchange gone, the last user turn cut
    assert all(label == IGNORE_INDEX for label in encoded["prompt_labels"][0])
    cut = encode_examples(tokenizer, ["what is the capital of france " * 10], ["an apple " * 30], None, Layout(),
                          40, 8, "head")
    assert len(cut["labels"][0]) == 8 and cut["labels"][0][-1] == tokenizer.eos_token_id
    assert len(cut["input_ids"][0]) <= 40
    with pytest.raises(ConfigError, match="src_len=5 leaves no room"):
        encode_examples(tokenizer, ["what is the capital"], ["x"], None, Layout(system_prompt="be brief"), 5, 8,
                        "tail")


def test_prompts_of_input_lines_end_with_the_generation_prompt_and_keep_the_prompts(styled):
    style, tokenizer = styled
    (prompt,) = encode_prompts(tokenizer, ["name a red fruit"], Layout("be brief", "Q: ", " A?"), 100, "tail")
    assert prompt == _template_ids(tokenizer, [{"role": "system", "content": "be brief"},
                                               {"role": "user", "content": "Q: name a red fruit A?"}], True)


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


@pytest.fixture(scope="module")
def instruction_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("instructions")
    alpaca, messages = root / "alpaca", root / "messages"
    alpaca.mkdir()
    messages.mkdir()
    rows = [{"instruction": "name a red fruit", "input": "", "output": "an apple"},
            {"instruction": "translate", "input": "bonjour", "output": "hello"}]
    (alpaca / "train.json").write_text(json.dumps(rows))
    _write_jsonl(alpaca / "test.jsonl", [{"instruction": "translate", "input": "merci",
                                          "output": ["thanks", "thank you"]}])
    _write_jsonl(messages / "train.jsonl", [{"messages": CONVERSATION}, {"messages": CONVERSATION[1:3]}])
    return root


def test_alpaca_rows_are_instruction_and_input_to_output(instruction_data, tmp_path):
    config = Config({**DEFAULTS, "data_path": str(instruction_data / "alpaca"), "data_format": "alpaca",
                     "cache_dir": str(tmp_path)})
    splits = read_splits(config, ["train", "test"], log=lambda _: None)
    assert splits["train"].sources == ["name a red fruit", "translate\n\nbonjour"]
    assert splits["train"].targets == [["an apple"], ["hello"]]
    assert splits["test"].targets == [["thanks", "thank you"]] and splits["train"].contexts is None
    (instruction_data / "broken").mkdir()
    _write_jsonl(instruction_data / "broken" / "train.jsonl", [{"instruction": "x", "output": ""}])
    with pytest.raises(DataError, match=r"train.jsonl row 1: 'output' is empty"):
        read_splits(config.replace(data_path=str(instruction_data / "broken")), ["train"], log=lambda _: None)
    (problem,) = key_problems(config.replace(src_field="question"))
    assert problem.endswith("names a column, but data_format=alpaca reads its fixed fields (instruction, input and "
                            "output): remove src_field")


def test_messages_rows_train_on_every_assistant_turn_through_the_collator(instruction_data, styled, tmp_path):
    style, tokenizer = styled
    config = Config({**DEFAULTS, "model": "llama", "data_path": str(instruction_data / "messages"),
                     "data_format": "messages", "cache_dir": str(tmp_path), "src_len": 200, "tgt_len": 40})
    split = read_splits(config, ["train"], log=lambda _: None)["train"]
    assert split.sources == ["thanks a lot", "name a red fruit"]
    assert split.targets == [["paris is the capital"], ["an apple"]] and split.contexts[1] == CONVERSATION[1:2]
    data = tokenize_splits(config, {"train": split}, tokenizer, log=lambda _: None)["train"]
    assert data.column_names == ["input_ids", "labels", "prompt_labels"]
    batch = CausalLMCollator(tokenizer, templated=True)([data[0], data[1]])
    eos = STYLES[style]["eos"]
    for row, expected in ((0, f"an apple{eos}paris is the capital{eos}"), (1, f"an apple{eos}")):
        labels = batch["labels"][row]
        assert tokenizer.decode(labels[labels != IGNORE_INDEX]) == expected
        length = int(batch["attention_mask"][row].sum())
        assert batch["input_ids"][row, :length].tolist() == \
            _template_ids(tokenizer, CONVERSATION if row == 0 else CONVERSATION[1:3], False)[:length]
        prompt = batch["prompt_ids"][row][batch["prompt_attention_mask"][row] == 1]
        assert tokenizer.decode(prompt).endswith(GENERATION_PROMPTS[style])
    # the cache entry (three columns) is read back as it was written
    again = tokenize_splits(config, {"train": split}, tokenizer, log=lambda _: None)["train"]
    assert again[0] == data[0]


def test_chat_keys_are_checked_before_anything_is_built(tmp_path, styled):
    _, tokenizer = styled
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "tokenizer_config.json").write_text("{}")
    templated = tmp_path / "templated"
    tokenizer.save_pretrained(templated)
    values = {**DEFAULTS, "model": "llama", "model_path": str(plain)}
    where = lambda key: f"--{key}"  # noqa: E731
    assert chat.saved_template(str(templated)) is True and chat.saved_template(str(plain)) is False
    assert chat.problems({**values, "use_chat_template": True}, True, where) == [
        f"--use_chat_template=True needs a chat template, but the tokenizer of --model_path={plain} has none: "
        f"give one with --chat_template=<file or template>"]
    assert chat.problems({**values, "data_format": "messages"}, True, where)[0].startswith("--data_format=messages")
    assert chat.problems({**values, "use_chat_template": True, "chat_template": "{{ x }}"}, True, where) == []
    assert chat.problems({**values, "model_path": str(templated), "system_prompt": "hi"}, True, where) == []
    assert "=False renders none" in chat.problems({**values, "use_chat_template": False, "system_prompt": "hi"},
                                                  True, where)[0]
    assert "neither a file nor a Jinja template" in chat.problems({**values, "chat_template": "nofile.jinja"},
                                                                  True, where)[0]
    assert "only a decoder-only model" in chat.problems({**values, "data_format": "messages"}, False, where)[0]


def test_a_command_line_asking_for_a_template_the_checkpoint_lacks_is_one_problem(tmp_path):
    """Checked with the rest of the configuration, before anything is built; an encoder-decoder refuses the keys."""
    from textbox.checks import load_checked_config
    from tests.chat_helpers import tiny_chat_model

    tokenizer = chat_tokenizer(TEXTS, tmp_path / "tok", "llama3")
    plain = tmp_path / "plain-llama"
    tiny_chat_model("llama3", tokenizer).save_pretrained(plain)
    tokenizer.chat_template = None  # a base model's tokenizer
    tokenizer.save_pretrained(plain)
    with pytest.raises(ConfigError) as refused:
        load_checked_config([f"--model_path={plain}", "--model=llama", "--use_chat_template=True"])
    assert refused.value.problems == [
        f"--use_chat_template=True needs a chat template, but the tokenizer of --model_path={plain} has none: give "
        f"one with --chat_template=<file or template>"]
    (tmp_path / "chatml.jinja").write_text("{{ messages }}")
    config = load_checked_config([f"--model_path={plain}", "--model=llama", "--use_chat_template=True",
                                  f"--chat_template={tmp_path / 'chatml.jinja'}"])
    assert config.use_chat_template is True
    with pytest.raises(ConfigError) as refused:
        load_checked_config(["--model=transformer", "--system_prompt=be brief"])
    assert [problem.split(" renders")[0] for problem in refused.value.problems] == ["--system_prompt"]


def test_a_template_that_refuses_a_turn_is_one_problem_naming_it(styled):
    _, tokenizer = styled
    refusing = "{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('no system role') }}" \
               "{% endif %}{{ m['content'] }}{% endfor %}"
    template, tokenizer.chat_template = tokenizer.chat_template, refusing
    try:
        with pytest.raises(ConfigError, match="turns system, user: no system role; give another"):
            encode_examples(tokenizer, ["hi"], ["yo"], None, Layout(system_prompt="be brief"), 50, 8, "tail")
    finally:
        tokenizer.chat_template = template
