"""--src_lang / --tgt_lang: which languages a multilingual tokenizer encodes, where their codes go, and how a built
model is set to them (``apply_languages``).

The facts data/ (encoding sources and targets) and model/ (the language token generation starts with) both need,
kept in textbox.tokens, the layer between them and config, because they are siblings that never import each
other. Standard library only: the tokenizer and the model are read through the attributes transformers gives
them, never imported.

How transformers' tokenizers and models use the languages:
- mBART-50, M2M100 and NLLB tokenizers write ``src_code text </s>`` for a source and ``tgt_code text </s>`` for a
  target (``text_target=``); the decoder starts with ``</s>`` and generation forces the target code as the first
  token (``forced_bos_token_id``).
- mBART's own tokenizer (mbart-large-cc25, mbart-large-en-ro) writes ``text </s> code``: mBART's shift of the labels
  moves the target code to the decoder's start in training, so generation starts from it
  (``decoder_start_token_id``) and forces nothing.
- Marian checkpoints translate one pair, or (multi-target ones) into the language whose ``>>xx<<`` token, in their
  vocabulary, starts the source.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from textbox.config.errors import TextBoxUserError

LANGUAGE_KEYS = ("src_lang", "tgt_lang")
CODE_FIRST, CODE_LAST, MARIAN = "code first", "code last", "marian"
# ISO 639-3 codes of the languages NLLB writes as <code>_<Script> (eng_Latn), by their ISO 639-1 code (mBART's en_XX,
# M2M100's en): the WMT languages of the catalogue and other widely used ones.
_ISO3 = {"en": "eng", "de": "deu", "fr": "fra", "es": "spa", "ro": "ron", "cs": "ces", "ru": "rus", "zh": "zho",
         "ja": "jpn", "it": "ita", "pt": "por", "nl": "nld", "tr": "tur", "hi": "hin", "ko": "kor", "fi": "fin",
         "et": "est", "lt": "lit", "pl": "pol", "uk": "ukr", "kk": "kaz", "gu": "guj", "el": "ell", "he": "heb",
         "vi": "vie", "th": "tha", "id": "ind", "sv": "swe", "da": "dan", "hu": "hun", "bg": "bul"}
_ISO1 = {three: two for two, three in _ISO3.items()}


def requested(values: Mapping[str, Any]) -> dict[str, str]:
    """The languages asked for: --src_lang / --tgt_lang, or the same names in tokenizer_kwargs (where TextBox 2.0's
    yaml files also give them; ``problems`` refuses the two disagreeing)."""
    settings = values["tokenizer_kwargs"]
    found = {key: values[key] if values[key] is not None else settings.get(key) for key in LANGUAGE_KEYS}
    return {key: value for key, value in found.items() if value is not None}


def problems(values: Mapping[str, Any], where: Callable[[str], str]) -> list[str]:
    """A language given twice with two values (as a key and in tokenizer_kwargs)."""
    settings = values["tokenizer_kwargs"]
    return [f"{where(key)}={values[key]!r} but --tokenizer_kwargs gives {key}={settings[key]!r}: keep one"
            for key in LANGUAGE_KEYS
            if values[key] is not None and settings.get(key) is not None and settings[key] != values[key]]


def convention(tokenizer: Any) -> str | None:
    """How ``tokenizer`` encodes languages (CODE_FIRST, CODE_LAST, MARIAN), or None when it encodes none."""
    if is_marian(tokenizer):
        return MARIAN
    if not (hasattr(tokenizer, "src_lang") and hasattr(tokenizer, "_switch_to_target_mode")):
        return None
    code = code_id(tokenizer, tokenizer.src_lang)
    ids = tokenizer("a")["input_ids"]
    return CODE_FIRST if ids[0] == code else CODE_LAST if ids[-1] == code else None


def codes(tokenizer: Any) -> list[str]:
    """The language codes ``tokenizer`` knows (M2M100's plain 'en'; mBART's 'en_XX'; NLLB's 'eng_Latn'; Marian's
    multi-target 'fr' for >>fr<<)."""
    if is_marian(tokenizer):
        return [code[2:-2] for code in tokenizer.supported_language_codes]
    known = getattr(tokenizer, "lang_code_to_id", None)
    return list(known) if known else [str(token) for token in getattr(tokenizer, "extra_special_tokens", None) or []]


def code_id(tokenizer: Any, code: str) -> int:
    """The token id of language ``code`` (KeyError when the tokenizer does not know it)."""
    if is_marian(tokenizer):
        if f">>{code}<<" not in tokenizer.supported_language_codes:
            raise KeyError(code)
        return tokenizer.convert_tokens_to_ids(f">>{code}<<")
    known = getattr(tokenizer, "lang_code_to_id", None)
    if known:
        return known[code]
    found = tokenizer.convert_tokens_to_ids(code)
    if found is None or found == tokenizer.unk_token_id:
        raise KeyError(code)
    return found


def is_marian(tokenizer: Any) -> bool:
    """A Marian tokenizer (its multi-target checkpoints list their >>xx<< tokens; pair ones none)."""
    return hasattr(tokenizer, "supported_language_codes") and hasattr(tokenizer, "target_lang")


def source_head(tokenizer: Any, values: Mapping[str, Any]) -> list[int]:
    """Token ids every source starts with besides the tokenizer's own: a multi-target Marian checkpoint's target
    language token (>>fr<<); nothing for any other tokenizer (they write their codes themselves)."""
    target = requested(values).get("tgt_lang")
    if target is None or not is_marian(tokenizer) or not tokenizer.supported_language_codes:
        return []
    return [code_id(tokenizer, target.removeprefix(">>").removesuffix("<<"))]


# --- a built model -----------------------------------------------------------------------------------------------
# apply_languages is called by build_model for every model, so that a language given is honoured, refused, or said
# (in the log) to change nothing. Both engines read what is set here: ``generate`` the model's generation config,
# CTranslate2 the same config through its target prefix (textbox.decoding.ctranslate2_engine: the start token at
# the head, then the forced token); beam search with a forced first token decodes with transformers
# (textbox.decoding.ctranslate2_settings says why).
def apply_languages(config: Mapping[str, Any], model: Any, tokenizer: Any,
                    log: Callable[[str], None]) -> dict[str, str]:
    """Set the languages on ``tokenizer`` and the generation settings they imply on ``model``; log what was done.
    Returns the languages written in this tokenizer's codes where a yaml gave them in another's (the run's config
    takes them), as ``fitted_codes`` does."""
    asked = requested(config)
    kind = convention(tokenizer)
    name = type(tokenizer).__name__
    if kind is None:
        if asked:
            log(f"{_spelled(asked)} change nothing: the {name} encodes no language (they label the dataset, as "
                f"TextBox 2.0's overall.yaml does; the languages of mBART, M2M100, NLLB and Marian tokenizers are set)")
        return {}
    fitted = fitted_codes(config, asked, tokenizer, log)
    asked = {**asked, **fitted}
    if kind == MARIAN:
        _marian(asked, tokenizer, log, config)
        return fitted
    source = asked.get("src_lang") or _own(tokenizer, "src_lang")
    target = asked.get("tgt_lang") or _own(tokenizer, "tgt_lang")
    if source is None or target is None:
        raise TextBoxUserError(f"the {name} of --model_path={config['model_path']} encodes languages: give "
                               f"--src_lang and --tgt_lang (its codes: {_listed(codes(tokenizer))})")
    for key, code in (("src_lang", source), ("tgt_lang", target)):
        _check_code(tokenizer, key, code)
    tokenizer.src_lang, tokenizer.tgt_lang = source, target  # the src_lang setter rewrites the source template
    tokenizer.init_kwargs.update(src_lang=source, tgt_lang=target)  # saved with it, and in its cache fingerprint
    target_id = code_id(tokenizer, target)
    model_type = getattr(model.config, "model_type", "")
    if kind == CODE_LAST and model_type != "mbart":
        raise TextBoxUserError(f"the {name} writes the language code after the text, which only mBART's decoder reads "
                               f"first; this is a {model_type!r} model: drop legacy_behaviour from --tokenizer_kwargs")
    settings = {"decoder_start_token_id": target_id} if kind == CODE_LAST else {"forced_bos_token_id": target_id}
    _refuse_other_values(config, settings, target)
    if kind == CODE_LAST:
        model.config.decoder_start_token_id = target_id
    model.generation_config.update(**settings)
    where = "after the text" if kind == CODE_LAST else "first"
    how = ("the decoder starts from it (decoder_start_token_id, mBART's convention)" if kind == CODE_LAST
           else "generation forces it as the first token (forced_bos_token_id)")
    log(f"languages: src_lang={source!r}, tgt_lang={target!r} ({name}): sources carry {source} {where}, targets "
        f"{target} {where} (id {target_id}); {how}")
    return fitted


# --- languages a yaml gave in another tokenizer's codes --------------------------------------------------------------
# A catalogue entry names its languages in mBART's codes, as TextBox 2.0's did (wmt16-en-ro: en_XX, ro_RO). Like a
# length from a yaml (textbox.model.lengths), such a code is fitted to the tokenizer: written as its code of the
# same language (en for M2M100, eng_Latn for NLLB), with a log line. A code the user typed is used as typed.
def language_of(code: str) -> str | None:
    """The ISO 639-1 language of a code in any tokenizer's spelling (en_XX, eng_Latn, en, >>en<<), or None."""
    code = code.removeprefix(">>").removesuffix("<<")
    head = code.split("_")[0]
    if len(head) == 2:
        return head.lower()
    return _ISO1.get(head.lower()) if len(head) == 3 else None


def fitted_codes(config: Mapping[str, Any], asked: Mapping[str, str], tokenizer: Any,
                 log: Callable[[str], None]) -> dict[str, str]:
    """The languages a yaml gave in codes ``tokenizer`` does not know, written as its codes of the same languages
    (a language it knows once); typed codes and codes it knows are left as they are."""
    fitted = {}
    for key, code in asked.items():
        if _typed(config, key) or _knows(tokenizer, code):
            continue
        language = language_of(code)
        own = [candidate for candidate in codes(tokenizer)
               if language is not None and language_of(candidate) == language]
        if len(own) == 1:
            fitted[key] = own[0]
            log(f"{key}={code!r} (from {_source(config, key)}) is {own[0]!r} in the {type(tokenizer).__name__}'s "
                f"codes: the same language; give --{key} to choose another")
    return fitted


def _knows(tokenizer: Any, code: str) -> bool:
    if is_marian(tokenizer) and not tokenizer.supported_language_codes:
        return True  # a pair checkpoint's languages are compared with its records (_marian)
    try:
        code_id(tokenizer, code.removeprefix(">>").removesuffix("<<"))
        return True
    except KeyError:
        return False


def _source(config: Mapping[str, Any], key: str) -> str:
    """Which layer gave language ``key`` (a Config knows; a plain mapping does not)."""
    if config.get(key) is None and hasattr(config, "entry_sources"):
        return config.entry_sources("tokenizer_kwargs").get(key, "default")
    return config.source_of(key) if hasattr(config, "source_of") else "the settings"


def _typed(config: Mapping[str, Any], key: str) -> bool:
    """Whether the user gave language ``key`` (command line, --config_files), as Config.typed says of keys."""
    if not hasattr(config, "typed"):
        return True  # a plain mapping of settings: used as given
    if config.get(key) is not None:
        return config.typed(key)
    source = _source(config, key)
    return source == "command line" or source in config.get("config_files", ())


def _marian(asked: Mapping[str, str], tokenizer: Any, log: Callable[[str], None], config: Mapping[str, Any]) -> None:
    """A multi-target checkpoint needs its target language (its >>xx<< token starts every source: textbox.data);
    a pair checkpoint's languages are its own: the ones given must be those it records (a yaml's code may name
    the same language in another spelling)."""
    targets = codes(tokenizer)
    if targets:
        target = asked.get("tgt_lang")
        if target is None:
            raise TextBoxUserError(f"this Marian checkpoint translates into several languages: give --tgt_lang "
                                   f"(one of {_listed(targets)})")
        _check_code(tokenizer, "tgt_lang", target.removeprefix(">>").removesuffix("<<"))
        log(f"languages: tgt_lang={target!r} (MarianTokenizer): every source starts with its token "
            f">>{target.removeprefix('>>').removesuffix('<<')}<<")
        return
    recorded = {"src_lang": tokenizer.source_lang, "tgt_lang": tokenizer.target_lang}
    for key, value in asked.items():
        same = not _typed(config, key) and language_of(value) == language_of(recorded[key] or "")
        if recorded[key] is not None and recorded[key] != value and not same:
            raise TextBoxUserError(f"--{key}={value!r}: this Marian checkpoint translates {recorded['src_lang']} "
                                   f"into {recorded['tgt_lang']} (its tokenizer's source_lang/target_lang): choose "
                                   f"the checkpoint of the pair you want, or drop --{key}")
    if asked:
        log(f"languages: {_spelled(asked)}: this Marian checkpoint translates one pair, which these name; nothing "
            f"to set")


def _check_code(tokenizer: Any, key: str, code: str) -> None:
    try:
        code_id(tokenizer, code)
    except KeyError:
        raise TextBoxUserError(f"--{key}={code!r} is not a language of the {type(tokenizer).__name__}; its codes: "
                               f"{_listed(codes(tokenizer))}") from None


def _refuse_other_values(config: Mapping[str, Any], settings: Mapping[str, int], target: str) -> None:
    """generation_kwargs naming another first token than the target language's would undo it."""
    given = config["generation_kwargs"]
    for name, value in settings.items():
        if name in given and given[name] != value:
            raise TextBoxUserError(f"--generation_kwargs sets {name}={given[name]!r}, but tgt_lang={target!r} is "
                                   f"token {value} there: drop {name} from generation_kwargs (the language sets it)")


def _own(tokenizer: Any, key: str) -> str | None:
    """The language a saved tokenizer records (a checkpoint a run wrote with its languages)."""
    return tokenizer.init_kwargs.get(key)


def _spelled(asked: Mapping[str, str]) -> str:
    return ", ".join(f"{key}={value!r}" for key, value in asked.items())


def _listed(found: list[str]) -> str:
    return ", ".join(found[:12]) + (f", ... ({len(found)} in all)" if len(found) > 12 else "")
