"""--src_lang / --tgt_lang on tiny multilingual checkpoints built offline (mBART cc25 and 50, NLLB, M2M100, Marian):
the tokenizer's languages on sources and targets, the token generation starts with, on both decoding engines."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests import multilingual_helpers as helpers
from textbox.config import TextBoxUserError
from textbox.config.loader import Config
from textbox.config.schema import DEFAULTS
from textbox.data.split import Split
from textbox.data.tokenize import tokenize_splits
from textbox.model.build import build_model

SOURCES = ["the cat sat on a mat", "a red dog ran", "the dog sat"]
TARGETS = ["le chat est sur le tapis", "un chien rouge court", "le chien"]
# family -> (tokenizer builder, model family, src, tgt, whether generation forces the code or starts from it, seed)
# Seeds whose random models write text (not only special tokens) from every source; a random M2M100 may also
# write one of its 8 "madeup words" past the vocabulary, which transformers decodes as the text <unk> and
# CTranslate2 as nothing: a trained model never writes them.
CASES = {
    "mbart-cc25": (helpers.mbart_tokenizer, "mbart", "en_XX", "ro_RO", "start", 1),
    "mbart-50": (lambda path: helpers.mbart_tokenizer(path, fifty=True), "mbart", "en_XX", "ro_RO", "forced", 1),
    "nllb": (helpers.nllb_tokenizer, "m2m_100", "eng_Latn", "fra_Latn", "forced", 0),
    "m2m100": (helpers.m2m100_tokenizer, "m2m_100", "en", "de", "forced", 0),
}


class Log(list):
    def info(self, message: str) -> None:
        self.append(message)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("multilingual")
    return {name: helpers.tiny_model(family, build(root / f"{name}-tokenizer"), root / name, seed=seed)
            for name, (build, family, *_, seed) in CASES.items()}


def config(path: Path, tmp_path: Path, **changes) -> Config:
    return Config({**DEFAULTS, "model": "seq2seq", "model_path": str(path), "cache_dir": str(tmp_path / "cache"),
                   "src_len": 16, "tgt_len": 8, **changes})


def built_and_tokenized(case: str, checkpoints, tmp_path, **changes):
    _, _, source, target, *_ = CASES[case]
    run = config(checkpoints[case], tmp_path, src_lang=source, tgt_lang=target, **changes)
    log = Log()
    built = build_model(run, None, log)
    split = Split("train", SOURCES, [[text] for text in TARGETS])
    return built, tokenize_splits(run, {"train": split}, built.tokenizer, log=print)["train"], log


def code(tokenizer, language: str) -> int:
    return tokenizer.get_lang_id(language) if hasattr(tokenizer, "get_lang_id") else \
        tokenizer.convert_tokens_to_ids(language)


@pytest.mark.parametrize("case", CASES)
def test_sources_and_targets_carry_their_languages_and_generation_starts_with_the_target(case, checkpoints,
                                                                                         tmp_path):
    """Targets were encoded as sources (tokenizer(texts)): mBART and NLLB targets carried the source language's
    code, M2M100's too; and nothing made generation start with the target language."""
    built, tokenized, log = built_and_tokenized(case, checkpoints, tmp_path)
    _, _, source, target, how, _ = CASES[case]
    tokenizer, model = built.tokenizer, built.model
    source_id, target_id = code(tokenizer, source), code(tokenizer, target)
    position = -1 if case == "mbart-cc25" else 0
    assert all(ids[position] == source_id for ids in tokenized["input_ids"])
    assert all(ids[position] == target_id and source_id not in ids for ids in tokenized["labels"])
    assert any(f"src_lang={source!r}, tgt_lang={target!r}" in message for message in log)
    inputs = tokenizer(SOURCES, return_tensors="pt", padding=True)
    with torch.no_grad():
        generated = model.generate(**inputs, max_new_tokens=5)
    if how == "forced":
        assert model.generation_config.forced_bos_token_id == target_id
        assert generated[:, 1].tolist() == [target_id] * len(SOURCES)  # after the decoder start token </s>
    else:  # mBART-cc25: the decoder starts from the target code, as mBART's shift of the labels puts it in training
        assert model.config.decoder_start_token_id == model.generation_config.decoder_start_token_id == target_id
        assert model.generation_config.forced_bos_token_id is None
        assert generated[:, 0].tolist() == [target_id] * len(SOURCES)
        decoder_inputs = model.prepare_decoder_input_ids_from_labels(labels=torch.tensor([tokenized["labels"][0]]))
        assert decoder_inputs[0, 0].item() == target_id


@pytest.mark.parametrize("case", CASES)
def test_both_engines_decode_the_languages_alike(case, checkpoints, tmp_path):
    """CTranslate2 reads the same settings through its target prefix (mBART-cc25's start token at its head)."""
    from tests.unit.decoding.engines import decode
    from textbox.decoding.engine import DecodingOptions, choose_engine

    built, _, _ = built_and_tokenized(case, checkpoints, tmp_path)
    settings = {"max_new_tokens": 6, "min_new_tokens": 6}
    assert choose_engine(built.model, settings, "test", DecodingOptions("auto")).name == "ctranslate2"
    expected = decode(built.model, built.tokenizer, SOURCES, settings, "transformers", tmp_path)
    assert decode(built.model, built.tokenizer, SOURCES, settings, "ctranslate2", tmp_path) == expected
    assert all(expected)


def test_beam_search_with_the_forced_language_decodes_with_transformers(checkpoints, tmp_path):
    from textbox.decoding.engine import DecodingOptions, choose_engine

    built, _, _ = built_and_tokenized("nllb", checkpoints, tmp_path)
    choice = choose_engine(built.model, {"num_beams": 3}, "test", DecodingOptions("auto"))
    assert choice.name == "transformers" and "forced_bos_token_id" in choice.reason


def test_a_multilingual_tokenizer_without_languages_is_refused_with_its_codes(checkpoints, tmp_path):
    with pytest.raises(TextBoxUserError, match=r"encodes languages: give --src_lang and --tgt_lang \(its codes: "
                                               r"en, ha, is"):
        build_model(config(checkpoints["m2m100"], tmp_path), None, Log())
    with pytest.raises(TextBoxUserError, match=r"--tgt_lang='xx_YY' is not a language of the MBart50Tokenizer"):
        build_model(config(checkpoints["mbart-50"], tmp_path, src_lang="en_XX", tgt_lang="xx_YY"), None, Log())


def test_tokenizer_kwargs_languages_are_the_same_setting(checkpoints, tmp_path):
    """TextBox 2.0's yaml files give them as tokenizer_kwargs: the forced token follows them too."""
    run = config(checkpoints["nllb"], tmp_path, tokenizer_kwargs={"src_lang": "eng_Latn", "tgt_lang": "fra_Latn"})
    built = build_model(run, None, Log())
    assert built.model.generation_config.forced_bos_token_id == code(built.tokenizer, "fra_Latn")


def test_generation_kwargs_forcing_another_token_are_refused(checkpoints, tmp_path):
    with pytest.raises(TextBoxUserError, match="drop forced_bos_token_id from generation_kwargs"):
        built_and_tokenized("nllb", checkpoints, tmp_path, generation_kwargs={"forced_bos_token_id": 5})


def test_a_saved_checkpoint_keeps_its_languages(checkpoints, tmp_path):
    """A run's checkpoint holds the tokenizer with its languages: tested again without the keys, it decodes alike."""
    built, _, _ = built_and_tokenized("mbart-50", checkpoints, tmp_path)
    saved = tmp_path / "checkpoint_best"
    built.model.save_pretrained(saved)
    built.tokenizer.save_pretrained(saved)
    again = build_model(config(saved, tmp_path), None, Log())
    assert (again.tokenizer.src_lang, again.tokenizer.tgt_lang) == ("en_XX", "ro_RO")
    assert again.model.generation_config.forced_bos_token_id == code(again.tokenizer, "ro_RO")


def test_a_tokenizer_without_languages_is_unchanged_and_the_log_says_so(saved_bart, tmp_path):
    """TextBox 2.0's overall.yaml gives tgt_lang: en to every run."""
    log = Log()
    built = build_model(config(saved_bart, tmp_path, tgt_lang="en"), None, log)
    assert built.model.generation_config.forced_bos_token_id is None
    assert any("tgt_lang='en' change nothing" in message for message in log)


def test_a_multi_target_marian_source_starts_with_the_target_token(tmp_path):
    path = helpers.tiny_model("marian", helpers.marian_tokenizer(tmp_path / "tokenizer"), tmp_path / "marian")
    run = config(path, tmp_path, tgt_lang="de", src_len=6)
    built = build_model(run, None, Log())
    split = Split("train", ["the cat sat on a mat"], [["die katze"]])
    [ids] = tokenize_splits(run, {"train": split}, built.tokenizer, log=print)["train"]["input_ids"]
    assert built.tokenizer.convert_ids_to_tokens(ids)[0] == ">>de<<" and len(ids) == 6 and ids[-1] == 0  # </s>
    with pytest.raises(TextBoxUserError, match="translates into several languages: give --tgt_lang"):
        build_model(config(path, tmp_path), None, Log())


def test_a_pair_marian_checkpoint_refuses_other_languages(tmp_path):
    tokenizer = helpers.marian_tokenizer(tmp_path / "tokenizer", multi_target=False, target_lang="fr")
    path = helpers.tiny_model("marian", tokenizer, tmp_path / "marian")
    build_model(config(path, tmp_path, src_lang="en", tgt_lang="fr"), None, Log())
    with pytest.raises(TextBoxUserError, match="this Marian checkpoint translates en into fr"):
        build_model(config(path, tmp_path, tgt_lang="de"), None, Log())


@pytest.mark.parametrize("case, source, target", [("m2m100", "en", "de"), ("nllb", "eng_Latn", "deu_Latn")])
def test_a_yamls_language_codes_are_written_in_the_tokenizers_own_and_typed_ones_kept(case, source, target,
                                                                                      checkpoints, tmp_path):
    """The WMT catalogue entries give mBART's codes (TextBox 2.0's): with M2M100 or NLLB they name the same
    languages in another spelling, so they are fitted as a yaml's lengths are; typed codes are refused as before."""
    values = {**DEFAULTS, "model": "seq2seq", "model_path": str(checkpoints[case]),
              "cache_dir": str(tmp_path / "cache"), "src_len": 16, "tgt_len": 8, "src_lang": "en_XX",
              "tgt_lang": "de_DE"}
    yaml = "configs/dataset/wmt16-en-de.yaml"
    log = Log()
    built = build_model(Config(values, sources={"src_lang": yaml, "tgt_lang": yaml}), None, log)
    assert (built.tokenizer.src_lang, built.tokenizer.tgt_lang) == (source, target)
    assert built.fitting.config.src_lang == source and built.fitting.config.tgt_lang == target  # config.yaml's
    assert built.model.generation_config.forced_bos_token_id == code(built.tokenizer, target)
    assert any(f"src_lang='en_XX' (from {yaml}) is {source!r}" in line for line in log)
    with pytest.raises(TextBoxUserError, match=r"--src_lang='en_XX' is not a language of the"):
        build_model(Config(values, sources={"src_lang": "command line", "tgt_lang": yaml}), None, Log())


def test_a_pair_marian_checkpoint_takes_a_yamls_codes_of_its_own_languages(tmp_path):
    tokenizer = helpers.marian_tokenizer(tmp_path / "tokenizer", multi_target=False, target_lang="fr")
    path = helpers.tiny_model("marian", tokenizer, tmp_path / "marian")
    values = {**DEFAULTS, "model": "seq2seq", "model_path": str(path), "cache_dir": str(tmp_path / "cache"),
              "src_len": 16, "tgt_len": 8, "src_lang": "en_XX", "tgt_lang": "fr_XX"}
    yaml = "configs/dataset/wmt14-en-fr.yaml"
    build_model(Config(values, sources={"src_lang": yaml, "tgt_lang": yaml}), None, Log())  # en and fr: its own
    with pytest.raises(TextBoxUserError, match="this Marian checkpoint translates en into fr"):
        build_model(Config({**values, "tgt_lang": "de_DE"}, sources={"src_lang": yaml, "tgt_lang": yaml}), None,
                    Log())
