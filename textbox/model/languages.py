"""--src_lang / --tgt_lang applied to a built model: the tokenizer's languages, and the language token generation
starts with (textbox.config.languages says how each tokenizer family writes them). Called by build_model for
every model, so that a language given is honoured, refused, or said (in the log) to change nothing.

Both engines read what is set here: ``generate`` the model's generation config, CTranslate2 the same config
through its target prefix (textbox.decoding.ctranslate2_engine: the start token at the head, then the forced
token); beam search with a forced first token decodes with transformers (textbox.decoding.ctranslate2_settings
says why).
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from textbox.config.errors import TextBoxUserError
from textbox.config.languages import CODE_FIRST, CODE_LAST, MARIAN, code_id, codes, convention, requested


def apply_languages(config: Mapping[str, Any], model: Any, tokenizer: Any, log: Callable[[str], None]) -> None:
    """Set the languages on ``tokenizer`` and the generation settings they imply on ``model``; log what was done."""
    asked = requested(config)
    kind = convention(tokenizer)
    name = type(tokenizer).__name__
    if kind is None:
        if asked:
            log(f"{_spelled(asked)} change nothing: the {name} encodes no language (they label the dataset, as "
                f"TextBox 2.0's overall.yaml does; the languages of mBART, M2M100, NLLB and Marian tokenizers are set)")
        return
    if kind == MARIAN:
        _marian(asked, tokenizer, log)
        return
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


def _marian(asked: Mapping[str, str], tokenizer: Any, log: Callable[[str], None]) -> None:
    """A multi-target checkpoint needs its target language (its >>xx<< token starts every source: textbox.data);
    a pair checkpoint's languages are its own: the ones given must be those it records."""
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
        if recorded[key] is not None and recorded[key] != value:
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
