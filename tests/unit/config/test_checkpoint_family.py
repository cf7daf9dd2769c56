"""The model family read from a checkpoint's small files (config.json, an adapter's base, a hub id's config)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from textbox.config import checkpoint_family as families
from textbox.config.checkpoint_family import Detected, FamilyError, accepts, compatible, detect, family_of_model_config
from textbox.config.families import FAMILIES


def write_config(directory: Path, **fields) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(fields))
    return directory


@pytest.mark.parametrize("fields, family", [
    ({"model_type": "bart", "architectures": ["BartModel"], "is_encoder_decoder": True}, "bart"),
    ({"model_type": "mt5", "architectures": ["MT5ForConditionalGeneration"]}, "t5"),
    ({"model_type": "t5"}, "t5"),
    ({"model_type": "mbart"}, "mbart"), ({"model_type": "pegasus"}, "pegasus"), ({"model_type": "marian"}, "marian"),
    ({"model_type": "led"}, "led"), ({"model_type": "blenderbot-small"}, "blenderbot"),
    ({"model_type": "prophetnet"}, "prophetnet"),
    ({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]}, "gpt2"), ({"model_type": "opt"}, "opt"),
    ({"model_type": "llama"}, "llama"),
    ({"model_type": "mistral", "architectures": ["MistralForCausalLM"]}, "causal_lm"),
    ({"model_type": "fsmt", "architectures": ["FSMTForConditionalGeneration"], "is_encoder_decoder": True}, "seq2seq"),
    ({"model_type": "bert", "architectures": ["BertForMaskedLM"]}, "bert2bert"),
    ({"model_type": "some-new-encoder", "architectures": ["NewForMaskedLM"]}, "bert2bert"),
    ({"model_type": "encoder-decoder", "is_encoder_decoder": True}, "encoder_decoder"),
    ({"model_type": "textbox_rnn", "cell": "lstm", "is_encoder_decoder": True}, "lstm"),
    ({"model_type": "mystery", "architectures": ["MysteryModel"]}, None),
])
def test_the_table_maps_model_types_to_registry_names(fields, family):
    assert family_of_model_config(fields) == family
    assert family is None or family in FAMILIES


def test_the_generic_rules_agree_with_transformers_own_model_mappings():
    """A model type outside the table is placed as transformers places it: its config.json's is_encoder_decoder
    (written by every encoder-decoder config) or its architecture's causal-LM head."""
    from transformers.models.auto.modeling_auto import (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
                                                        MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES)

    causal, seq2seq = dict(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES), dict(MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES)
    checked = 0
    for mapping, kind in ((causal, families.DECODER_ONLY_FAMILIES), (seq2seq, families.SEQ2SEQ_FAMILIES)):
        other = seq2seq if mapping is causal else causal
        for model_type, classes in mapping.items():
            if model_type in other or model_type in families.FAMILY_OF_MODEL_TYPE:
                continue
            for name in [classes] if isinstance(classes, str) else classes:
                fields = {"model_type": model_type, "architectures": [name]}
                if mapping is seq2seq:
                    fields["is_encoder_decoder"] = True
                found = family_of_model_config(fields)
                # A multimodal ...ForConditionalGeneration that loads as a causal LM is undecidable from its name:
                # no family (the user is asked for --model), never a wrong one.
                undecidable = found is None and mapping is causal and name.endswith("ForConditionalGeneration")
                assert found in kind or undecidable, (model_type, name)
                checked += 1
    assert checked > 50
    for model_type, family in families.FAMILY_OF_MODEL_TYPE.items():  # the table's own entries, by kind
        if model_type in seq2seq and model_type not in causal:
            assert family in families.SEQ2SEQ_FAMILIES or family == "encoder_decoder", model_type


@pytest.mark.parametrize("model, family, expected", [
    ("bart", "bart", True), ("t5", "bart", False), ("seq2seq", "pegasus", True), ("seq2seq", "gpt2", False),
    ("causal_lm", "llama", True), ("causal_lm", "bart", False), ("gpt2", "opt", False),
    ("transformer", "bart", True), ("transformer", "t5", False), ("bart", "transformer", True),
    ("bert2bert", "encoder_decoder", True), ("encoder_decoder", "bert2bert", True), ("bert2bert", "bart", False),
    ("gru", "lstm", False), ("lstm", "lstm", True),
])
def test_explicit_model_accepts_its_own_kind_only(model, family, expected):
    assert accepts(model, family) is expected


def test_a_run_checkpoint_is_compatible_with_its_architecture_too():
    detected = Detected("transformer", "run config x/config.yaml", architecture="bart")
    assert compatible("bart", detected) and compatible("seq2seq", detected) and not compatible("t5", detected)


def test_local_directory_adapter_and_bitfit_point_at_their_base(tmp_path):
    base = write_config(tmp_path / "base", model_type="gpt2", architectures=["GPT2LMHeadModel"])
    found = detect(str(base))
    assert (found.family, found.origin) == ("gpt2", f"checkpoint {base / 'config.json'}")
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": str(base)}))
    assert detect(str(adapter)).family == "gpt2"
    assert detect(str(adapter)).origin.startswith(f"{adapter / 'adapter_config.json'} -> checkpoint")
    bitfit = tmp_path / "bitfit"
    bitfit.mkdir()
    (bitfit / "bitfit_config.json").write_text(json.dumps({"method": "bitfit", "base_model_name_or_path": str(base),
                                                           "parameters": []}))
    assert detect(str(bitfit)).family == "gpt2"


def test_unreadable_or_silent_checkpoints_say_to_give_model(tmp_path):
    with pytest.raises(FamilyError, match="holds no config.json.*--model=<name>"):
        detect(str(tmp_path))
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(FamilyError, match="not a readable JSON file"):
        detect(str(tmp_path))
    write_config(tmp_path, model_type="mystery")
    with pytest.raises(FamilyError, match="does not say which model family.*--model=seq2seq"):
        detect(str(tmp_path))


def test_a_hub_id_offline_and_not_cached_says_to_give_model(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(FamilyError, match="HF_HUB_OFFLINE is set.*give --model=<family>.*or a local directory"):
        detect("someone/unknown-model")


def test_a_hub_id_reads_its_config_through_huggingface_hub(monkeypatch, tmp_path):
    import huggingface_hub

    config = write_config(tmp_path / "download", model_type="t5") / "config.json"
    asked = []
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", lambda repo, name: asked.append((repo, name)) or config)
    found = detect("google/t5-small")
    assert (found.family, found.origin) == ("t5", "checkpoint google/t5-small/config.json")
    assert asked == [("google/t5-small", "config.json")]
