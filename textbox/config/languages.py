"""--src_lang / --tgt_lang: which languages a multilingual tokenizer encodes, and where their codes go.

The facts data/ (encoding sources and targets) and model/ (the language token generation starts with) both need,
kept here because they are siblings that never import each other (as textbox.config.families). Standard library
only: the tokenizer is read through the attributes transformers gives it, never imported.

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

LANGUAGE_KEYS = ("src_lang", "tgt_lang")
CODE_FIRST, CODE_LAST, MARIAN = "code first", "code last", "marian"


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
