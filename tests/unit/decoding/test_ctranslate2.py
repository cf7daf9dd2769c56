"""CTranslate2 decoding (textbox/decoding/ctranslate2_engine.py) against transformers' generate on a tiny BART
trained for a few seconds to reverse words: same outputs, each mapped setting changing them alike, fallbacks
and refusals with their messages, and a conversion cache that converts once and never touches the checkpoint."""
from __future__ import annotations

import hashlib
import logging
import random
from pathlib import Path

import pytest
import torch

from textbox.config import TextBoxUserError
from textbox.config.loader import Config
from textbox.config.schema import DEFAULTS
from textbox.data.collate import Seq2SeqCollator
from textbox.decoding.ctranslate2_engine import converted_model
from textbox.decoding.detokenize import one_line
from textbox.decoding.engine import DecodingOptions, choose_engine
from textbox.evaluator.generate import generate_sequences, generate_texts
from tests.helpers import _WORDS

EXAMPLES = 120


@pytest.fixture(scope="module")
def pairs():
    rng = random.Random(0)
    out = []
    for _ in range(200):
        words = rng.choices(_WORDS, k=rng.randint(2, 6))
        out.append((" ".join(words), " ".join(reversed(words))))
    return out


@pytest.fixture(scope="module")
def trained(pairs, tmp_path_factory):
    """(model, tokenizer): a d=32 BART with BART's conventions (decoder start = forced end = </s>), 150 steps."""
    from transformers import BartConfig, BartForConditionalGeneration

    from textbox.model.tokenizer import train_bpe_tokenizer

    tokenizer = train_bpe_tokenizer([source for source, _ in pairs], vocab_size=300, min_frequency=1,
                                    cache_dir=tmp_path_factory.mktemp("tok"), log=lambda message: None)
    torch.manual_seed(0)
    config = BartConfig(vocab_size=len(tokenizer), d_model=32, encoder_layers=2, decoder_layers=2,
                        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
                        max_position_embeddings=64, pad_token_id=tokenizer.pad_token_id,
                        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                        forced_eos_token_id=tokenizer.eos_token_id, decoder_start_token_id=tokenizer.eos_token_id,
                        dropout=0.0)
    model = BartForConditionalGeneration(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for step in range(150):
        batch = pairs[(step * 16) % 200:(step * 16) % 200 + 16]
        inputs = tokenizer([source for source, _ in batch], return_tensors="pt", padding=True)
        labels = tokenizer([target for _, target in batch], return_tensors="pt", padding=True)["input_ids"]
        labels[labels == tokenizer.pad_token_id] = -100
        model(**inputs, labels=labels).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return model.eval(), tokenizer


@pytest.fixture
def options(tmp_path):
    """CTranslate2 options for the test (cache in tmp_path)."""
    return DecodingOptions("ctranslate2", "float32", str(tmp_path / "cache"), 0)


def _evaluator(tokenizer):
    from accelerate import Accelerator

    from textbox.evaluator.evaluator import Evaluator

    config = Config({**DEFAULTS, "eval_batch_size": 32})
    return Evaluator(config, Accelerator(cpu=True), tokenizer, Seq2SeqCollator(tokenizer.pad_token_id))


def _decode(trained, pairs, tmp_path, settings, backend):
    model, tokenizer = trained
    evaluator = _evaluator(tokenizer)
    inputs = tokenizer([source for source, _ in pairs[:EXAMPLES]])["input_ids"]
    loader = evaluator.loader([{"input_ids": ids, "labels": []} for ids in inputs])
    return generate_texts(evaluator.accelerator, model, tokenizer, loader, dict(settings), "test",
                          DecodingOptions(backend, "float32", str(tmp_path / "cache"), 0))


def _decode_all(trained, pairs, tmp_path, settings, backend):
    """Every returned sequence, example after example (num_return_sequences per example)."""
    model, tokenizer = trained
    evaluator = _evaluator(tokenizer)
    inputs = tokenizer([source for source, _ in pairs[:EXAMPLES]])["input_ids"]
    loader = evaluator.loader([{"input_ids": ids, "labels": []} for ids in inputs])
    sequences = generate_sequences(evaluator.accelerator, model, tokenizer, loader, dict(settings), "test",
                                   DecodingOptions(backend, "float32", str(tmp_path / "cache"), 0))
    return [text for texts in sequences for text in texts]


def _reference(trained, pairs, tmp_path, settings):
    """transformers' generate through the same loader (tests/unit/decoding/test_eval_loop.py shows that path
    gives model.generate's outputs token for token)."""
    return _decode(trained, pairs, tmp_path, settings, "transformers")


@pytest.mark.parametrize("settings", [
    {"num_beams": 1},
    {"num_beams": 4, "early_stopping": True},
    {"num_beams": 4, "early_stopping": "never"},
    {"num_beams": 4, "early_stopping": True, "length_penalty": 2.0},
    {"num_beams": 4, "early_stopping": "never", "length_penalty": 0.5},
    {"num_beams": 4, "early_stopping": False, "length_penalty": -0.5},  # its heuristic bound is exact there
    {"num_beams": 4, "length_penalty": 0.0},
], ids=lambda settings: "-".join(f"{key}={value}" for key, value in settings.items()))
def test_outputs_equal_transformers(trained, pairs, tmp_path, options, settings):
    """The same search on both engines: every output identical, including the searches cut at the length bound
    (max_new_tokens=10 cuts many here, under BART's forced end token)."""
    settings = {**settings, "max_new_tokens": 10}
    ours = _decode(trained, pairs, tmp_path, settings, "ctranslate2")
    reference = _reference(trained, pairs, tmp_path, settings)
    assert len(ours) == EXAMPLES and any(ours)
    assert ours == reference


def test_unset_early_stopping_searches_as_early_stopping_true_and_says_so(trained, pairs, tmp_path):
    """transformers' default heuristic (early_stopping=False) has no CTranslate2 equal: a beam search that leaves
    early_stopping unset runs as early_stopping=True does, and the engine's log line (its reason) says so."""
    settings = {"num_beams": 4, "max_new_tokens": 10}
    ours = _decode(trained, pairs, tmp_path, settings, "ctranslate2")
    assert ours == _reference(trained, pairs, tmp_path, {**settings, "early_stopping": True})
    heuristic = _reference(trained, pairs, tmp_path, settings)
    print(f"unset early_stopping: {sum(a != b for a, b in zip(ours, heuristic))}/{EXAMPLES} outputs differ from "
          f"transformers' default heuristic")
    reason = choose_engine(trained[0], settings, "test", DecodingOptions("auto")).reason
    assert "beam search stops once num_beams hypotheses have ended (early_stopping=True)" in reason
    assert "early_stopping" not in choose_engine(trained[0], {**settings, "early_stopping": True}, "test",
                                                 DecodingOptions("auto")).reason


def test_num_return_sequences_gives_that_many_per_example_in_order(trained, pairs, tmp_path, options):
    settings = {"num_beams": 4, "num_return_sequences": 2, "max_new_tokens": 10, "early_stopping": True}
    ours = _decode_all(trained, pairs, tmp_path, settings, "ctranslate2")
    model, tokenizer = trained
    with torch.no_grad():  # model.generate itself: its rows are num_return_sequences per example, in order
        ids = model.generate(**tokenizer([source for source, _ in pairs[:EXAMPLES]], return_tensors="pt",
                                         padding=True), **settings)
    reference = [one_line(text) for text in tokenizer.batch_decode(ids, skip_special_tokens=True)]
    assert len(ours) == len(reference) == 2 * EXAMPLES
    assert ours == reference


def test_sampling_uses_the_seed_and_top_k_1_is_greedy(trained, pairs, tmp_path, options):
    sampled = {"do_sample": True, "top_k": 0, "temperature": 2.0, "max_new_tokens": 10}
    first = _decode(trained, pairs, tmp_path, sampled, "ctranslate2")
    again = _decode(trained, pairs, tmp_path, sampled, "ctranslate2")
    greedy = _decode(trained, pairs, tmp_path, {"max_new_tokens": 10}, "ctranslate2")
    assert first == again and first != greedy
    assert _decode(trained, pairs, tmp_path, {**sampled, "top_k": 1}, "ctranslate2") == greedy


def test_auto_falls_back_with_a_log_line_and_explicit_ctranslate2_refuses(trained, caplog):
    model, _ = trained
    auto = DecodingOptions("auto")
    with caplog.at_level(logging.INFO):
        choice = choose_engine(model, {"repetition_penalty": 1.3}, "test", auto)
    assert choice.name == "transformers" and "repetition_penalty=1.3" in choice.reason
    assert "decoding with transformers" in caplog.text and "repetition_penalty" in caplog.text
    with pytest.raises(TextBoxUserError, match="--decoding_backend=ctranslate2: .*no_repeat_ngram_size=2 with "
                                                "num_beams=4"):
        choose_engine(model, {"num_beams": 4, "no_repeat_ngram_size": 2}, "test", DecodingOptions("ctranslate2"))
    with pytest.raises(TextBoxUserError, match="output_scores|logits_processor"):
        choose_engine(model, {"logits_processor": []}, "test", DecodingOptions("ctranslate2"))
    assert choose_engine(model, {"num_beams": 4}, "test", auto).name == "ctranslate2"
    rnn = torch.nn.GRU(4, 4)
    assert choose_engine(rnn, {}, "test", auto).name == "transformers"


def test_weights_split_by_the_launcher_decode_with_transformers_under_auto(trained, monkeypatch):
    """FSDP (or DeepSpeed ZeRO-3) leaves no process with the whole model to convert: auto decodes with transformers
    and says why (an explicit ctranslate2 is refused at config time: tests/unit/config/test_launcher.py)."""
    from textbox.config.schema import DEFAULTS

    monkeypatch.setenv("ACCELERATE_USE_FSDP", "true")
    options = DecodingOptions.from_values(DEFAULTS)
    assert options.sharded == "FSDP"
    choice = choose_engine(trained[0], {"num_beams": 4}, "test", options)
    assert choice.name == "transformers"
    assert choice.reason == ("--decoding_backend=auto: the weights are split over the processes (FSDP), and "
                             "CTranslate2 converts a whole model")
    monkeypatch.delenv("ACCELERATE_USE_FSDP")
    assert choose_engine(trained[0], {"num_beams": 4}, "test", DecodingOptions.from_values(DEFAULTS)).name == \
        "ctranslate2"


@pytest.mark.parametrize("settings, why", [
    ({"num_beams": 4, "early_stopping": False}, "early_stopping=False with length_penalty=1.0: transformers' "
                                                "heuristic stop"),
    ({"num_beams": 4, "min_new_tokens": 3}, "a minimum length with num_beams=4: CTranslate2 bans the end token "
                                            "before normalising"),
    ({"num_beams": 4, "length_penalty": 0.0, "early_stopping": True}, "early_stopping=True with length_penalty=0"),
    ({"num_beams": 4, "length_penalty": 0.0, "num_return_sequences": 2}, "num_return_sequences=2 with "
                                                                         "length_penalty=0"),
])
def test_beam_searches_ctranslate2_cannot_run_alike_fall_back(trained, pairs, tmp_path, settings, why):
    """Each of these decodes differently on CTranslate2 (measured here before it was refused): auto falls back
    to transformers and names why, an explicit ctranslate2 is refused."""
    model, _ = trained
    choice = choose_engine(model, settings, "test", DecodingOptions("auto"))
    assert choice.name == "transformers" and why in choice.reason
    with pytest.raises(TextBoxUserError, match="--decoding_backend=ctranslate2: "):
        choose_engine(model, settings, "test", DecodingOptions("ctranslate2"))


def test_prompt_adapters_fall_back_and_lora_is_merged(trained, pairs, tmp_path, options):
    import copy

    from peft import LoraConfig, PromptTuningConfig, TaskType, get_peft_model

    model, tokenizer = trained
    prompt = get_peft_model(copy.deepcopy(model), PromptTuningConfig(task_type=TaskType.SEQ_2_SEQ_LM,
                                                                      num_virtual_tokens=2))
    choice = choose_engine(prompt, {}, "test", DecodingOptions("auto"))
    assert choice.name == "transformers" and "prompt-tuning adapter" in choice.reason
    lora_config = LoraConfig(task_type=TaskType.SEQ_2_SEQ_LM, r=2, target_modules=["q_proj", "v_proj"],
                             init_lora_weights=False)  # random adapters: they change the outputs
    lora = get_peft_model(copy.deepcopy(model), lora_config)
    lora.eval()
    settings = {"num_beams": 1, "max_new_tokens": 10}
    ours = _decode((lora, tokenizer), pairs, tmp_path, settings, "ctranslate2")
    reference = _reference((lora, tokenizer), pairs, tmp_path, settings)
    assert ours == reference and ours != _reference(trained, pairs, tmp_path, settings)  # the adapter counts
    assert not any("lora" in name for name, _ in model.named_parameters())  # the original is untouched


def test_conversion_is_cached_by_content_and_the_checkpoint_is_untouched(trained, tmp_path):
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    model, tokenizer = trained
    checkpoint = tmp_path / "checkpoint"
    model.save_pretrained(checkpoint)
    tokenizer.save_pretrained(checkpoint)
    before = {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in checkpoint.iterdir()}
    loaded = AutoModelForSeq2SeqLM.from_pretrained(checkpoint)
    loaded_tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    first, converted = converted_model(loaded, loaded_tokenizer, tmp_path / "cache", "float32")
    again, converted_again = converted_model(model, tokenizer, tmp_path / "cache", "float32")  # same content
    assert converted and not converted_again and first == again
    weights = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    int8, converted_int8 = converted_model(model, tokenizer, tmp_path / "cache", "int8")
    assert converted_int8 and int8 != first
    assert all(torch.equal(tensor, weights[name]) for name, tensor in model.state_dict().items())  # not quantised
    after = {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in checkpoint.iterdir()}
    assert after == before
    assert not hasattr(model.config, "normalize_before")  # supplied to the converter's copy only
