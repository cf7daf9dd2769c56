"""run_textbox.py end to end on chat data: --model_path alone of a tiny Qwen2 instruct-like checkpoint (ChatML
template in its tokenizer files), messages jsonl data, a system prompt. The test outputs are what model.generate
gives on the rendered prompts, and the saved checkpoint keeps its template."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.chat_helpers import save_tiny_chat_model
from tests.helpers import _WORDS, run_in_process

pytestmark = pytest.mark.slow

SYSTEM = "repeat the words"


def _conversations(count: int, rng: random.Random) -> list[dict]:
    rows = []
    for _ in range(count):
        turns = []
        for _ in range(rng.randint(1, 2)):
            words = " ".join(rng.choices(_WORDS, k=rng.randint(1, 3)))
            turns += [{"role": "user", "content": words}, {"role": "assistant", "content": words}]
        rows.append({"messages": turns})
    return rows


@pytest.fixture(scope="module")
def chat_run(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("chat")
    rng = random.Random(0)
    data = work / "data"
    data.mkdir()
    splits = {name: _conversations(count, rng) for name, count in (("train", 64), ("valid", 8), ("test", 8))}
    for name, rows in splits.items():
        (data / f"{name}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    texts = [turn["content"] for row in splits["train"] for turn in row["messages"]]
    base = save_tiny_chat_model(work / "tiny-qwen2", texts, "qwen2", work / "tokenizer-cache")
    args = [f"--model_path={base}", f"--data_path={data}", "--data_format=messages", f"--system_prompt={SYSTEM}",
            "--epochs=6", "--train_batch_size=8", "--eval_batch_size=8", "--src_len=96", "--tgt_len=12",
            "--learning_rate=0.01", "--scheduler=constant", "--warmup_steps=0", "--tracker=none", "--filename=run"]
    assert run_in_process(args, cwd=work) == 0
    return work


def test_outputs_equal_generate_on_the_rendered_prompts_and_the_template_is_saved(chat_run: Path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    run = chat_run / "saved" / "run"
    best = run / "checkpoint_best"
    tokenizer = AutoTokenizer.from_pretrained(best)
    model = AutoModelForCausalLM.from_pretrained(best).eval()
    assert tokenizer.chat_template == AutoTokenizer.from_pretrained(chat_run / "tiny-qwen2").chat_template
    expected = []
    for line in (chat_run / "data" / "test.jsonl").read_text().splitlines():
        turns = [{"role": "system", "content": SYSTEM}, *json.loads(line)["messages"][:-1]]
        prompt = tokenizer.apply_chat_template(turns, add_generation_prompt=True, return_tensors="pt",
                                               return_dict=True)
        assert tokenizer.decode(prompt["input_ids"][0]).endswith("<|im_start|>assistant\n")
        with torch.no_grad():
            output = model.generate(**prompt, max_new_tokens=12, do_sample=False)
        expected.append(tokenizer.decode(output[0, prompt["input_ids"].shape[1]:], skip_special_tokens=True).strip())
    assert (run / "generation.txt").read_text().splitlines() == expected
    assert len(set(expected)) > 1  # outputs that depend on the prompt: a wrong prompt would show
    log = (run / "project.log").read_text()
    assert "chat template: sources are user turns" in log and "decoding with ctranslate2" in log
    losses = [row["loss"] for row in map(json.loads, (run / "metrics.jsonl").read_text().splitlines())
              if row["split"] == "valid"]
    assert len(losses) == 6 and losses[-1] < losses[0] - 1  # it learns from the assistant turns


def test_checkpoint_best_alone_keeps_its_template_and_system_prompt_for_input_lines(chat_run: Path):
    """--model_path=<run>/checkpoint_best alone (no --chat_template, no --system_prompt): the tokenizer saved its
    template and the run's config.yaml its system prompt, so a line of --input_file decodes as the test example whose
    conversation is that line alone."""
    run = chat_run / "saved" / "run"
    tests = [json.loads(line)["messages"] for line in (chat_run / "data" / "test.jsonl").read_text().splitlines()]
    outputs = (run / "generation.txt").read_text().splitlines()
    single = [(turns[0]["content"], output) for turns, output in zip(tests, outputs) if len(turns) == 2]
    assert single
    (chat_run / "lines.txt").write_text("".join(f"{source}\n" for source, _ in single))
    args = [f"--model_path={run / 'checkpoint_best'}", "--do_train=False", f"--input_file={chat_run / 'lines.txt'}",
            f"--output_file={chat_run / 'out.txt'}", "--tracker=none", "--filename=lines"]
    assert run_in_process(args, cwd=chat_run) == 0
    assert (chat_run / "out.txt").read_text().splitlines() == [output for _, output in single]
