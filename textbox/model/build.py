"""Build the run's model: the one call the pipeline (and the benchmarks) make, returning a BuiltModel record.

Order: transformers learns the RNN checkpoint type first (an explicit, idempotent registration, so that whichever
builder meets an RNN checkpoint reads its config, whatever was imported before); the family's builder loads or
creates the model and tokenizer; the lengths that were not typed are fitted to them (textbox.model.lengths: the
returned record's ``fitting.config`` is the config the run goes on with); a loaded efficient checkpoint is recorded
(saving must write only what it trains); --tokenizer_add_tokens are added (embeddings grown); the languages
(--src_lang/--tgt_lang) are set on the tokenizer and the generation config; a requested efficient method is applied;
the record notes how the base was quantised (saved beside the adapter); gradient checkpointing is switched on last.
Nothing here decides numerics: the builders do.

The builders (``BUILDERS``): the family's kind (textbox.config.families' table says which names exist and what each
one is) picks its builder, imported on first use so that config validation imports nothing heavy. A builder is
``build(config, train_split) -> BuiltModel`` (textbox.model.built_model); ``train_split`` is the raw training split
(its texts train the tokenizer of models that train their own) or None when only testing. A family a --user_dir
module registered (textbox.register_model) has its own builder (textbox.model.user_models), and goes through the
rest as the built-in ones do.
"""
from __future__ import annotations

import dataclasses
import importlib
from typing import TYPE_CHECKING, Any, Callable, Sequence

from textbox.config import TextBoxUserError
from textbox.config.families import CAUSAL_LM, ENCODER_DECODER, FAMILIES, KINDS, RNN, SEQ2SEQ, TRANSFORMER, family
from textbox.model.adapter_files import checkpoint_record, inner_model
from textbox.model.attention import check_packing, chosen, set_attention
from textbox.model.efficient import apply_efficient_methods
from textbox.model.gradient_checkpointing import enable_gradient_checkpointing
from textbox.model.lengths import fit_lengths
from textbox.model.loading import set_generation_length
from textbox.model.quantization import is_quantized, of_config
from textbox.model.run_generation import restore_run_generation
from textbox.model.built_model import BuiltModel, TrainingTexts
from textbox.model.user_models import registered_builder
from textbox.tokens.languages import apply_languages
from textbox.utils.logging import get_logger
from textbox.utils.suggest import suggest

if TYPE_CHECKING:
    import logging

    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from textbox.config import Config

# kind (textbox.config.families) -> its builder, "module.path:function", imported on first use
BUILDERS = {
    TRANSFORMER: "textbox.model.transformer:build",
    SEQ2SEQ: "textbox.model.hf_seq2seq:build",
    ENCODER_DECODER: "textbox.model.bert2bert:build",
    CAUSAL_LM: "textbox.model.causal_lm:build",
    RNN: "textbox.model.rnn:build",
}
if set(BUILDERS) != set(KINDS):  # a kind added to the table without its builder is a programming error
    raise ValueError(f"kinds without a builder: {sorted(set(KINDS) - set(BUILDERS))}; builders of no kind: "
                     f"{sorted(set(BUILDERS) - set(KINDS))}")


def build_model(config: Config, train_split: TrainingTexts | None, logger: logging.Logger | None = None) -> BuiltModel:
    """The model and tokenizer of ``config.model`` with what is known about them (see the module docstring).
    ``train_split`` (None when only testing) trains the tokenizer of models that train their own; ``logger``
    (textbox's by default) hears about the efficient method applied, the quantisation and checkpointing."""
    from textbox.model.rnn_model import register_auto_classes

    log = get_logger() if logger is None else logger
    register_auto_classes()
    built = get_builder(config.model)(config, train_split)
    restore_run_generation(inner_model(built.model), config.model_path)  # a run's checkpoint: its model's settings
    fitting = fit_lengths(config, built.model, built.tokenizer)  # before anything reads the lengths further
    if fitting.changed:
        config = fitting.config
        log.info(fitting.log_line())
        set_generation_length(built.model, config.tgt_len)
    built = dataclasses.replace(built, fitting=fitting)
    attention = chosen(config)
    if attention is not None and set_attention(built.model, attention):
        log.info(f"attention: {attention}" + (" (auto: bf16 on a CPU)" if config.attn_implementation == "auto" else ""))
    if config.packing:
        check_packing(built.model)
    if not config.from_scratch:  # weights loaded from an adapter / BitFit checkpoint carry its method
        built = dataclasses.replace(built, efficient=built.efficient or checkpoint_record(config.model_path))
    check_new_tokens_train(config, embed_every_id(built.model, built.tokenizer, log.info))
    add_tokens(config.tokenizer_add_tokens, built.model, built.tokenizer, log.info)
    languages = apply_languages(config, built.model, built.tokenizer, log.info)
    if languages:  # a yaml's codes written in this tokenizer's: what tokenises the data and config.yaml records
        config = config.replace(**languages)
        built = dataclasses.replace(built, fitting=dataclasses.replace(built.fitting, config=config))
    if config.efficient_methods:
        built = apply_efficient_methods(config, built, log)
    used = of_config(config) if is_quantized(built.model) else None  # the keys, or the loaded checkpoint's record
    if used is not None:
        log.info(f"quantised base weights: {used.describe()}; frozen")
    if built.efficient is not None:  # saved beside the adapter, so that checkpoint_best reloads alike
        built = dataclasses.replace(built, efficient=dataclasses.replace(built.efficient, quantization=used))
    if config.gradient_checkpointing:
        enable_gradient_checkpointing(built.model)
        log.info("gradient checkpointing: every layer's activations are recomputed in the backward pass "
                 "(non-reentrant)")
    return built


def get_builder(name: str) -> Callable[..., Any]:
    """The build function of ``--model=<name>`` (any case); KeyError naming the known models otherwise."""
    registered = registered_builder(name)  # a --user_dir module's (textbox.register_model)
    if registered is not None:
        return registered
    try:
        kind = family(name).kind.name
    except KeyError:
        key = name.lower()
        raise KeyError(f"unknown model {name!r}{suggest(key, FAMILIES)}; available: "
                       f"{', '.join(sorted(FAMILIES))}") from None
    module_name, function_name = BUILDERS[kind].split(":")
    return getattr(importlib.import_module(module_name), function_name)


# --- added tokens -----------------------------------------------------------------------------------------------------
# --tokenizer_add_tokens: tokens added to the run's tokenizer (TextBox 2.0's multiwoz.yaml adds its 48
# delexicalisation tokens, [value_name], [db_0], ...), each then read as one token, with the model's embeddings
# grown to hold them (new rows initialised as transformers' resize does: the mean and covariance of the others).
#
# Added as ordinary tokens (``add_tokens``, as TextBox 2.0 did): generated ones stay in the output text, which is what
# a delexicalised reference holds. A checkpoint a run saved has them already: nothing is added again.
def add_tokens(tokens: Sequence[str], model: PreTrainedModel, tokenizer: Any, log: Callable[[str], None]) -> None:
    """Add ``tokens`` that ``tokenizer`` lacks and grow ``model``'s embeddings to every id it can now write."""
    if not tokens:
        return
    added = tokenizer.add_tokens(list(tokens))
    needed = max(len(tokenizer), max(tokenizer.convert_tokens_to_ids(list(tokens))) + 1)
    rows, grown = grow_embeddings(model, needed, "--tokenizer_add_tokens")
    log(f"tokenizer_add_tokens: {added} of {len(tokens)} tokens added to the tokenizer (the others it had); "
        f"embeddings {rows} -> {grown} rows")


def embed_every_id(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, log: Callable[[str], None]) -> int:
    """A tokenizer that writes more ids than the model embeds (tokens added by --tokenizer_kwargs, e.g. TextBox
    2.0's additional_special_tokens=['<sep>'], each one token in transformers 5) gets the embeddings grown to them.
    Returns the number of rows added."""
    added = tokenizer.get_added_vocab().values() if hasattr(tokenizer, "get_added_vocab") else ()
    needed = max(len(tokenizer), max(added, default=-1) + 1)
    rows, grown = grow_embeddings(model, needed, "--tokenizer_kwargs")
    if grown != rows:
        log(f"the tokenizer writes {needed} ids (its added tokens included) and the model embedded {rows}: "
            f"embeddings {rows} -> {grown} rows (the new rows start untrained)")
    return grown - rows


def check_new_tokens_train(config: Config, new_rows: int) -> None:
    """Tokens --tokenizer_kwargs adds (additional_special_tokens, a pad_token, ...) get new embedding rows, which an
    efficient method that freezes the model would leave untrained: refused before anything is written (as
    textbox.model.checks refuses --tokenizer_add_tokens with one)."""
    adding = [key for key in config.tokenizer_kwargs if key.endswith(("_token", "_tokens"))]
    if new_rows and adding and config.efficient_methods and not config.efficient_unfreeze_model:
        raise TextBoxUserError(f"--tokenizer_kwargs ({', '.join(adding)}) adds {new_rows} token(s) whose embeddings "
                               f"are new and would stay untrained under --efficient_methods="
                               f"{list(config.efficient_methods)}: add --efficient_unfreeze_model=True, or drop them")


def grow_embeddings(model: Any, needed: int, named: str) -> tuple[int, int]:
    """The model's embedding rows before and after growing them to ``needed`` (an EncoderDecoderModel's halves
    each, as transformers asks); a TextBoxUserError naming ``named`` when the model cannot grow them."""
    rows = model.get_input_embeddings().weight.shape[0]
    if needed <= rows:
        return rows, rows
    try:
        try:
            model.resize_token_embeddings(needed)
        except NotImplementedError:  # EncoderDecoderModel: "use the respective methods of the wrapped objects"
            halves = [getattr(model, "encoder", None), getattr(model, "decoder", None)]
            if any(half is None or not hasattr(half, "resize_token_embeddings") for half in halves):
                raise
            for half in halves:
                half.resize_token_embeddings(needed)
            model.config.encoder.vocab_size = model.config.decoder.vocab_size = needed
    except (NotImplementedError, AttributeError) as error:
        raise TextBoxUserError(f"{named}: the {type(model).__name__} cannot grow its embeddings to the {needed} ids "
                               f"its tokenizer now writes ({error}); drop the added tokens") from error
    grown = model.get_input_embeddings().weight.shape[0]
    model.config.vocab_size = grown
    return rows, grown
