"""--tokenizer_add_tokens (TextBox 2.0's multiwoz.yaml adds 48 delexicalisation tokens): each added token is one
token of the run's tokenizer and the model's embeddings hold it, on a checkpoint and on a new model."""
from __future__ import annotations

import pytest
import torch

from textbox.checks import load_checked_config
from textbox.config import ConfigError, TextBoxUserError
from textbox.model.build import build_model

TOKENS = ["[value_name]", "[db_0]"]


class Log(list):
    def info(self, message: str) -> None:
        self.append(message)


def _check(built, before: int) -> None:
    tokenizer, model = built.tokenizer, built.model
    ids = tokenizer("a [value_name] at [db_0]", add_special_tokens=False)["input_ids"]
    assert tokenizer.convert_tokens_to_ids(TOKENS) == [before, before + 1]
    assert set(tokenizer.convert_tokens_to_ids(TOKENS)) <= set(ids)
    assert model.get_input_embeddings().weight.shape[0] == len(tokenizer) == before + 2
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids]), labels=torch.tensor([ids])).logits
    assert logits.shape[-1] == before + 2


def test_a_checkpoint_gets_the_tokens_and_its_embeddings_grow(saved_bart, tiny_config, tiny_transformer):
    log = Log()
    before = len(tiny_transformer[1])
    built = build_model(tiny_config(model="bart", model_path=str(saved_bart), tokenizer_kwargs={}, config_kwargs={},
                                    tokenizer_add_tokens=TOKENS), None, log)
    _check(built, before)
    assert any("2 of 2 tokens added" in message for message in log)


def test_a_new_model_gets_the_tokens(tiny_config, train_split):
    built = build_model(tiny_config(tokenizer_add_tokens=TOKENS), train_split, Log())
    _check(built, len(built.tokenizer) - 2)


def test_new_embeddings_under_a_frozen_model_are_refused(saved_bart, tmp_path):
    from tests.helpers import make_copy_dataset

    data_dir = make_copy_dataset(tmp_path / "data")
    with pytest.raises(ConfigError, match="tokenizer_add_tokens: the added tokens' embeddings are new"):
        load_checked_config([f"--model_path={saved_bart}", "--efficient_methods=['lora']", f"--data_path={data_dir}",
                             "--tokenizer_add_tokens=['[x]']"])


def test_tokenizer_kwargs_special_tokens_are_one_token_each_and_embedded(saved_bart, tiny_config, tiny_transformer):
    """TextBox 2.0's tokenizer_kwargs={'additional_special_tokens': ['<sep>']} (its model.md; paranmt's separator):
    transformers 5 makes each one token, and the model's embeddings grow to hold it; a misspelt setting is refused."""
    log, before = Log(), len(tiny_transformer[1])
    built = build_model(tiny_config(model="bart", model_path=str(saved_bart), config_kwargs={},
                                    tokenizer_kwargs={"additional_special_tokens": ["<sep>"]}), None, log)
    tokenizer, model = built.tokenizer, built.model
    ids = tokenizer("red <sep> blue", add_special_tokens=False)["input_ids"]
    assert tokenizer.convert_tokens_to_ids("<sep>") == before and before in ids
    assert model.get_input_embeddings().weight.shape[0] == len(tokenizer) == before + 1
    with torch.no_grad():
        assert model(input_ids=torch.tensor([ids]), labels=torch.tensor([ids])).logits.shape[-1] == before + 1
    assert any(f"embeddings {before} -> {before + 1} rows" in message for message in log)
    with pytest.raises(TextBoxUserError, match="additonal_special_tokens is not a setting .*did you mean "
                                               "'additional_special_tokens'"):
        build_model(tiny_config(model="bart", model_path=str(saved_bart), config_kwargs={},
                                tokenizer_kwargs={"additonal_special_tokens": ["<sep>"]}), None, log)
    with pytest.raises(TextBoxUserError, match=r"adds 1 token\(s\) whose embeddings are new and would stay untrained "
                                               r"under --efficient_methods=\['lora'\]"):
        build_model(tiny_config(model="bart", model_path=str(saved_bart), config_kwargs={},
                                tokenizer_kwargs={"additional_special_tokens": ["<sep>"]},
                                efficient_methods=["lora"]), None, log)
