"""Few-shot evaluation (textbox.data.shots): a 3-shot test of a tiny GPT-2 records its demonstrations, and its outputs
are model.generate's on the prompts written as docs/evaluation.md lays them out, on CTranslate2 (auto's pick for
GPT-2) and on transformers; nearest picks the overlapping example; shots are refused for encoder-decoders and
dropped when a prompt is too long."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.causal_helpers import causal_tokenizer, tiny_model
from tests.helpers import make_copy_dataset, run_in_process
from textbox.data import shots
from textbox.data.split import Split

# min_new_tokens: a random model's first choice is often eos, and empty outputs would compare nothing
LENGTHS = ["--src_len=54", "--tgt_len=8", "--eval_batch_size=4", "--tracker=none",
           "--generation_kwargs={'min_new_tokens': 4}"]


@pytest.fixture(scope="module")
def shot_runs(tmp_path_factory) -> dict[str, Path]:
    """Two 3-shot test passes of one tiny random GPT-2: seed 1 decoded by auto (CTranslate2), seed 2 by transformers."""
    work = tmp_path_factory.mktemp("shots")
    data = _two_word_data(work / "copy")
    texts = [*(data / "train.src").read_text().split("\n"), *(data / "train.tgt").read_text().split("\n")]
    model = _prompt_sensitive_gpt2(work / "tiny-gpt2", texts, work / "tokenizer-cache")
    runs = {}
    for name, extra in (("auto", ["--seed=1"]), ("transformers", ["--seed=2", "--decoding_backend=transformers"])):
        args = ["--model=gpt2", f"--model_path={model}", f"--data_path={data}", "--dataset=copy", "--do_train=False",
                "--num_shots=3", f"--filename={name}", *LENGTHS, *extra]
        assert run_in_process(args, cwd=work) == 0
        runs[name] = work / "saved" / name
    runs["model"] = model
    return runs


SCALE = 8.0


def _prompt_sensitive_gpt2(path: Path, texts: list[str], cache: Path) -> Path:
    """A tiny random GPT-2 with weights scaled up: at the default scale its greedy output is one token repeated
    whatever the prompt, which would not tell prompts apart."""
    import torch

    tokenizer = causal_tokenizer(texts, cache, "gpt2")
    model = tiny_model("gpt2", tokenizer)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.mul_(SCALE)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def _two_word_data(root: Path) -> Path:
    """Reverse two words: short enough that three demonstrations fit the tiny model's 64 positions."""
    words = ["red", "dog", "cat", "sun", "big", "old", "tree", "blue"]
    root.mkdir(parents=True)
    for split, count, offset in (("train", 24, 0), ("test", 5, 3)):
        pairs = [(words[(i + offset) % 8], words[(3 * i + offset + 1) % 8]) for i in range(count)]
        (root / f"{split}.src").write_text("".join(f"{a} {b}\n" for a, b in pairs))
        (root / f"{split}.tgt").write_text("".join(f"{b} {a}\n" for a, b in pairs))
    return root


def _records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / shots.RECORD).read_text().splitlines()]


def test_demonstrations_recorded_and_drawn_by_the_seed(shot_runs):
    first, second = _records(shot_runs["auto"]), _records(shot_runs["transformers"])
    assert len(first) == len(second) == 5
    for rows in (first, second):
        for row in rows:
            assert len(row["demonstrations"]) + row["dropped"] == 3
        kept = [[d["train_index"] for d in row["demonstrations"]] for row in rows]
        draw = max(kept, key=len)
        assert len(draw) == 3  # random: one draw before every source, its first ones dropped where too long
        assert all(indices == draw[len(draw) - len(indices):] for indices in kept)
    train = Path(shot_runs["model"]).parent / "copy" / "train.src"
    assert first[0]["demonstrations"][0]["source"] == train.read_text().split("\n")[
        first[0]["demonstrations"][0]["train_index"]]
    config = SimpleNamespace(num_shots=3, shot_selection="random", seed=1)
    split = Split("train", [f"s{i}" for i in range(24)], [[f"t{i}"] for i in range(24)])
    test = Split("test", ["a", "b"], [["x"], ["y"]])
    assert shots.choose(config, split, test) == shots.choose(config, split, test)  # same seed, same draw
    assert shots.choose(config, split, test) != shots.choose(SimpleNamespace(**{**vars(config), "seed": 2}),
                                                             split, test)
    log = (shot_runs["auto"] / "project.log").read_text()
    assert "ctranslate2" in log.lower() and shots.RECORD in log


@pytest.mark.parametrize("run", ["auto", "transformers"])
def test_outputs_equal_model_generate_on_the_written_prompts(shot_runs, run):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(shot_runs["model"]).eval()
    tokenizer = AutoTokenizer.from_pretrained(shot_runs["model"])
    expected = []
    for row in _records(shot_runs[run]):
        text = "".join(f"{d['source']} {d['target']}\n\n" for d in row["demonstrations"]) + row["source"]
        ids = [*tokenizer(text)["input_ids"], tokenizer.eos_token_id]  # GPT-2 adds no special tokens; the separator
        assert len(ids) <= 55  # src_len=54, plus the separator
        with torch.no_grad():
            output = model.generate(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                    max_new_tokens=8, min_new_tokens=4, do_sample=False, num_beams=1, pad_token_id=tokenizer.eos_token_id)
        expected.append(" ".join(tokenizer.decode(output[0, len(ids):], skip_special_tokens=True).split()))
    assert (shot_runs[run] / "generation.txt").read_text().split("\n")[:-1] == expected


def test_nearest_puts_the_overlapping_example_last():
    train = Split("train", ["the cat sat on the mat", "stock prices fell sharply today", "a recipe for lemon cake",
                            "rain is expected over the weekend"], [["1"], ["2"], ["3"], ["4"]])
    test = Split("test", ["shares and stock prices dropped today", "will it rain this weekend"], [["x"], ["y"]])
    chosen = shots.choose(SimpleNamespace(num_shots=2, shot_selection="nearest", seed=0), train, test)
    assert [indices[-1] for indices in chosen] == [1, 3]  # most similar last, next to the test source
    assert all(len(indices) == 2 for indices in chosen)


def test_shots_refused_for_an_encoder_decoder_and_without_a_train_split(tmp_path):
    from textbox.checks import load_checked_config
    from textbox.config import ConfigError

    data = make_copy_dataset(tmp_path / "copy", {"test": 3})
    with pytest.raises(ConfigError) as refused:
        load_checked_config(["--model=transformer", f"--data_path={data}", "--num_shots=2", "--do_train=False"])
    message = str(refused.value)
    assert "--num_shots" in message and "encoder-decoder" in message
    assert f"{data / 'train.src'} does not exist" in message
    with pytest.raises(ConfigError) as refused:  # a key that would change nothing is refused, not ignored
        load_checked_config(["--model=transformer", f"--data_path={data}", "--shot_selection=nearest",
                             "--num_shots=0"])
    assert "--num_shots=0 writes none" in str(refused.value)


def test_demonstrations_dropped_first_when_the_prompt_is_too_long(shot_runs):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(shot_runs["model"])
    train = Split("train", ["alpha beta gamma delta"] * 4, [["delta gamma beta alpha"]] * 4)
    test = Split("test", ["beta alpha"], [["alpha beta"]])
    single = len(tokenizer(shots.plain_prompt([(train.sources[0], train.targets[0][0])], "beta alpha",
                                              shots.Layout()))["input_ids"])
    config = SimpleNamespace(num_shots=3, shot_selection="random", seed=0, src_len=single, system_prompt=None,
                             prefix_prompt=None, suffix_prompt=None)
    logged: list[str] = []
    prompted = shots.with_demonstrations(config, tokenizer, train, test, False, logged.append)
    assert prompted.dropped == [2] and len(prompted.chosen[0]) == 1  # the fewest dropped: one still fits
    assert prompted.split.sources[0].endswith("\n\nbeta alpha")  # the test source whole
    assert logged and "2 dropped" in logged[0]
    config.src_len = 3  # not even one fits: zero-shot, left to the ordinary truncation
    assert shots.with_demonstrations(config, tokenizer, train, test, False, logged.append).split.sources == ["beta alpha"]


def test_chat_template_demonstrations_are_earlier_turns(tmp_path):
    from tests.chat_helpers import chat_tokenizer
    from textbox.data.chat import encode_examples

    tokenizer = chat_tokenizer(["dog big", "big dog", "sun cat", "cat sun"], tmp_path, "qwen2")
    train = Split("train", ["dog big", "sun cat"], [["big dog"], ["cat sun"]])
    test = Split("test", ["red old"], [["old red"]])
    config = SimpleNamespace(num_shots=2, shot_selection="random", seed=0, src_len=256, system_prompt="Reverse.",
                             prefix_prompt="Q: ", suffix_prompt=None)
    prompted = shots.with_demonstrations(config, tokenizer, train, test, True, print)
    order = prompted.chosen[0]
    messages = [{"role": "system", "content": "Reverse."}]
    for i in order:
        messages += [{"role": "user", "content": f"Q: {train.sources[i]}"},
                     {"role": "assistant", "content": train.targets[i][0]}]
    messages.append({"role": "user", "content": "Q: red old"})
    expected = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    encoded = encode_examples(tokenizer, prompted.split.sources, ["old red"], prompted.split.contexts,
                              shots.Layout("Reverse.", "Q: ", ""), 256, 8, "tail")
    assert tokenizer.decode(encoded["input_ids"][0]) == expected
    assert sorted(order) == [0, 1] and prompted.split.sources == ["red old"]
