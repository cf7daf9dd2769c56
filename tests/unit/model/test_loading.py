from __future__ import annotations

import pytest
import torch
from transformers import AutoConfig, AutoModelForSeq2SeqLM

from textbox.config import TextBoxUserError
from textbox.model.loading import count_parameters, from_pretrained, load_config, set_special_token_ids


def test_count_parameters_counts_tied_weights_once_and_frozen_ones_as_untrainable():
    embedding = torch.nn.Embedding(10, 4)  # 40
    head = torch.nn.Linear(4, 10, bias=False)
    head.weight = embedding.weight  # tied: still 40
    frozen = torch.nn.Linear(2, 3)  # 9
    frozen.requires_grad_(False)
    assert count_parameters(torch.nn.ModuleList([embedding, head, frozen])) == (40, 49)


def test_directory_without_config_json_is_named(tmp_path):
    with pytest.raises(TextBoxUserError, match=f"--model_path={tmp_path} has no config.json.*save_pretrained"):
        from_pretrained(AutoConfig.from_pretrained, str(tmp_path))


def test_unreadable_local_checkpoint_is_a_user_error(saved_bart, tmp_path):
    broken = tmp_path / "checkpoint_best"
    broken.mkdir()
    (broken / "config.json").write_text((saved_bart / "config.json").read_text())
    with pytest.raises(TextBoxUserError, match=f"--model_path={broken}: cannot load it"):
        from_pretrained(AutoModelForSeq2SeqLM.from_pretrained, str(broken))


def test_missing_local_directory_is_named(tmp_path):
    with pytest.raises(TextBoxUserError, match=f"--model_path={tmp_path}/missing: directory .* does not exist"):
        from_pretrained(AutoConfig.from_pretrained, str(tmp_path / "missing"))


def test_load_config_applies_known_overrides_and_names_unknown_ones(saved_bart):
    assert load_config(str(saved_bart), {"dropout": 0.25, "encoder_layers": 1}).encoder_layers == 1
    with pytest.raises(TextBoxUserError, match="--config_kwargs: d_modle, dropuot are not settings of a 'bart'"):
        load_config(str(saved_bart), {"dropuot": 0.25, "d_modle": 8})


def test_special_token_ids_reach_both_configs_and_survive_saving(saved_bart, tmp_path):
    model = AutoModelForSeq2SeqLM.from_pretrained(saved_bart)
    set_special_token_ids(model, decoder_start_token_id=0, pad_token_id=3)
    model.save_pretrained(tmp_path)
    reloaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path)
    for settings in (reloaded.config, reloaded.generation_config):
        assert (settings.decoder_start_token_id, settings.pad_token_id) == (0, 3)
