"""A tiny real checkpoint for every ``--model`` family of the name table (textbox.config.families), built offline.

Each checkpoint is a model of the family's own transformers class (d=16, one layer) saved with save_pretrained
beside a tokenizer of the kind its released checkpoints come with, as a hub download would hold them: the project's
byte-level BPE where the family's tokenizer is a BPE like BART's, sentencepiece Unigram tokenizers (T5, XLM-R), the
multilingual tokenizers of tests/multilingual_helpers.py (mBART, M2M100, NLLB, Marian), GPT-2 and Llama style
BPEs (tests/causal_helpers.py), a WordPiece for BERT. The vocabulary is the words of multilingual_helpers.CORPUS,
which every one of these tokenizers covers, so ``family_dataset`` is written in them.

The families that build their own model and tokenizer (transformer, rnn, gru, lstm) have no checkpoint: their runs
get the tiny sizes of ``FROM_SCRATCH`` instead.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests import multilingual_helpers as multilingual

# Tiny sizes shared by a model type and its relatives.
BART_SIZES = dict(d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                  decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64)
_T5 = dict(d_model=16, d_kv=8, d_ff=32, num_layers=1, num_decoder_layers=1, num_heads=2)
_GPT2 = dict(n_embd=16, n_layer=1, n_head=2, n_positions=64)
_BERT = dict(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
             max_position_embeddings=64)


@dataclass(frozen=True)
class Checkpoint:
    """A family's tiny checkpoint: its transformers model_type, sizes and tokenizer (see the module docstring);
    ``start`` names the token its decoder starts with ("eos", "bos", "pad"; decoder-only: none)."""

    model_type: str
    settings: dict[str, Any]
    tokenizer: str
    start: str | None = "eos"
    extra_args: tuple[str, ...] = field(default=())  # what its run needs besides --model_path
    decoder: bool = False  # an encoder_decoder pair: a different decoder checkpoint in <directory>/decoder


# --model name -> its checkpoint. seq2seq and causal_lm take any encoder-decoder / decoder-only LM: their rows
# use classes no named family covers (PLBART, Qwen2).
CHECKPOINTS: dict[str, Checkpoint] = {
    "bart": Checkpoint("bart", BART_SIZES, "bpe"),
    "chinese-bart": Checkpoint("bart", BART_SIZES, "bpe"),
    "mvp": Checkpoint("mvp", BART_SIZES, "bpe"),
    "seq2seq": Checkpoint("plbart", BART_SIZES, "bpe"),
    "blenderbot": Checkpoint("blenderbot", BART_SIZES, "bpe", start="bos"),
    "blenderbot-small": Checkpoint("blenderbot-small", BART_SIZES, "bpe", start="bos"),
    "led": Checkpoint("led", {**{k: v for k, v in BART_SIZES.items() if k != "max_position_embeddings"},
                              "max_encoder_position_embeddings": 64, "max_decoder_position_embeddings": 64,
                              "attention_window": 4}, "bpe"),
    "pegasus": Checkpoint("pegasus", BART_SIZES, "bpe", start="pad"),
    "chinese-pegasus": Checkpoint("pegasus", BART_SIZES, "bpe", start="pad"),
    "pegasus_x": Checkpoint("pegasus_x", {**BART_SIZES, "num_global_tokens": 4, "block_size": 8}, "bpe", start="pad"),
    "bigbird_pegasus": Checkpoint("bigbird_pegasus", {**BART_SIZES, "attention_type": "original_full"}, "bpe",
                                  start="pad"),
    # ProphetNet's WordPiece: [PAD] is 0, which its cached decoding assumes (transformers 5 checks the positions)
    "prophetnet": Checkpoint("prophetnet", dict(hidden_size=16, encoder_ffn_dim=32, decoder_ffn_dim=32,
                                                num_encoder_layers=1, num_decoder_layers=1,
                                                num_encoder_attention_heads=2, num_decoder_attention_heads=2,
                                                max_position_embeddings=64, ngram=2, num_buckets=8,
                                                relative_max_distance=16), "prophetnet"),
    "t5": Checkpoint("t5", _T5, "t5", start="pad"),
    "chinese-t5": Checkpoint("t5", _T5, "t5", start="pad"),
    "mt5": Checkpoint("mt5", _T5, "t5", start="pad"),
    "longt5": Checkpoint("longt5", {**_T5, "local_radius": 4}, "t5", start="pad"),
    "mbart": Checkpoint("mbart", BART_SIZES, "mbart", extra_args=("--src_lang=en_XX", "--tgt_lang=ro_RO")),
    "m2m_100": Checkpoint("m2m_100", BART_SIZES, "m2m100", extra_args=("--src_lang=en", "--tgt_lang=de")),
    "nllb": Checkpoint("m2m_100", BART_SIZES, "nllb", extra_args=("--src_lang=eng_Latn", "--tgt_lang=fra_Latn")),
    "marian": Checkpoint("marian", BART_SIZES, "marian", start="pad", extra_args=("--tgt_lang=fr",)),
    "gpt2": Checkpoint("gpt2", _GPT2, "gpt2", start=None),
    "chinese-gpt2": Checkpoint("gpt2", _GPT2, "gpt2", start=None),
    "cpm": Checkpoint("gpt2", _GPT2, "gpt2", start=None),
    "opt": Checkpoint("opt", dict(hidden_size=16, ffn_dim=32, num_hidden_layers=1, num_attention_heads=2,
                                  word_embed_proj_dim=16, max_position_embeddings=64), "gpt2", start=None),
    "llama": Checkpoint("llama", dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64),
                        "llama", start=None),
    "gpt_neo": Checkpoint("gpt_neo", dict(hidden_size=16, num_layers=1, num_heads=2,
                                          attention_types=[[["global"], 1]], max_position_embeddings=64),
                          "gpt2", start=None),
    "openai-gpt": Checkpoint("openai-gpt", _GPT2, "gpt2", start=None),
    "ctrl": Checkpoint("ctrl", {**_GPT2, "dff": 32}, "gpt2", start=None),
    "causal_lm": Checkpoint("qwen2", dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                          num_attention_heads=2, num_key_value_heads=1,
                                          max_position_embeddings=64), "llama", start=None),
    "bert2bert": Checkpoint("bert", _BERT, "bert", start=None),
    "encoder_decoder": Checkpoint("bert", _BERT, "bert", start=None, decoder=True),
    "xlm-roberta": Checkpoint("xlm-roberta", _BERT, "xlm-roberta", start=None),
}

# The families that build a new model and train their own BPE: tiny sizes for --config_kwargs / --tokenizer_kwargs.
_RNN = ("--config_kwargs={'embedding_size': 16, 'hidden_size': 16, 'num_layers': 1}",
        "--tokenizer_kwargs={'vocab_size': 300, 'min_frequency': 1}")
FROM_SCRATCH: dict[str, tuple[str, ...]] = {
    # init_std: as _sharpen draws the checkpoints' weights (a BART at std 0.02 writes nothing)
    "transformer": ("--config_kwargs={'d_model': 16, 'encoder_layers': 1, 'decoder_layers': 1, "
                    "'encoder_attention_heads': 2, 'decoder_attention_heads': 2, 'encoder_ffn_dim': 32, "
                    "'decoder_ffn_dim': 32, 'init_std': 1.0}",
                    "--tokenizer_kwargs={'vocab_size': 300, 'min_frequency': 1}"),
    "rnn": _RNN, "gru": _RNN, "lstm": _RNN,
}


def family_dataset(root: Path, sizes: dict[str, int], seed: int = 0) -> Path:
    """A reverse-the-words task in multilingual_helpers' words (line-per-example files)."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    for split, count in sizes.items():
        pairs = []
        for _ in range(count):
            words = rng.choices(multilingual.WORDS, k=rng.randint(2, 5))
            pairs.append((" ".join(words), " ".join(reversed(words))))
        (root / f"{split}.src").write_text("".join(f"{source}\n" for source, _ in pairs))
        (root / f"{split}.tgt").write_text("".join(f"{target}\n" for _, target in pairs))
    return root


def save_checkpoint(name: str, directory: Path, cache_dir: Path, seed: int = 0) -> Path:
    """``directory`` holding ``name``'s tiny checkpoint (config.json, weights, tokenizer files); an
    encoder_decoder's separate decoder checkpoint goes to ``directory``/decoder."""
    import torch
    import transformers

    entry = CHECKPOINTS[name]
    tokenizer = _save_tokenizer(entry.tokenizer, directory, cache_dir)
    eos = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else tokenizer.sep_token_id
    ids = {"pad_token_id": tokenizer.pad_token_id, "eos_token_id": eos, "bos_token_id": tokenizer.bos_token_id}
    if entry.start is not None:
        ids["decoder_start_token_id"] = ids[f"{entry.start}_token_id"]
    if transformers.AutoConfig.for_model(entry.model_type).to_dict().get("forced_eos_token_id") is not None:
        ids["forced_eos_token_id"] = eos  # the family ends every output with its end token (BART, Pegasus, ...)
    # M2M100 checkpoints keep room for their "madeup words" after the language tokens, OPT's round their
    # vocabulary up to a multiple of 8 (CTranslate2's converter counts both)
    vocabulary = max(tokenizer.get_vocab().values()) + 1 + getattr(tokenizer, "num_madeup_words", 0)
    if entry.model_type == "opt":
        vocabulary += -vocabulary % 8
    config = transformers.AutoConfig.for_model(entry.model_type, **entry.settings, vocab_size=vocabulary,
                                               **{key: value for key, value in ids.items() if value is not None})
    if entry.model_type == "marian":
        config.decoder_vocab_size = vocabulary
    torch.manual_seed(seed)
    if entry.tokenizer in ("bert", "xlm-roberta"):  # an encoder, warm-started into an EncoderDecoderModel
        model = transformers.AutoModel.from_config(config)
    elif entry.start is None:
        model = transformers.AutoModelForCausalLM.from_config(config)
    else:
        model = transformers.AutoModelForSeq2SeqLM.from_config(config)
    _sharpen(model, len(tokenizer))
    model.save_pretrained(directory)
    if entry.decoder:  # a BERT with other heads, as the decoder of the pair
        decoder = transformers.BertConfig(**{**_BERT, "num_attention_heads": 4}, vocab_size=vocabulary,
                                          is_decoder=True, pad_token_id=tokenizer.pad_token_id)
        transformers.BertLMHeadModel(decoder).save_pretrained(directory / "decoder")
    return directory


def run_args(name: str, directory: Path) -> list[str]:
    """The command-line keys that point a run of ``--model=name`` at its checkpoint in ``directory`` (or give a
    family that builds its own model its tiny sizes)."""
    if name in FROM_SCRATCH:
        return [f"--model={name}", *FROM_SCRATCH[name]]
    entry = CHECKPOINTS[name]
    decoder = [f"--decoder_model_path={directory / 'decoder'}"] if entry.decoder else []
    return [f"--model={name}", f"--model_path={directory}", *entry.extra_args, *decoder]


def _save_tokenizer(kind: str, directory: Path, cache_dir: Path) -> Any:
    """The tokenizer of ``kind`` saved into ``directory`` and loaded back as a run loads it."""
    from transformers import (AutoTokenizer, BertTokenizer, ProphetNetTokenizer, T5Tokenizer,
                              XLMRobertaTokenizer)

    texts = multilingual.CORPUS
    if kind == "bpe":
        from textbox.model.tokenizer import train_bpe_tokenizer

        train_bpe_tokenizer(texts, vocab_size=300, min_frequency=1, cache_dir=cache_dir,
                            log=lambda _: None).save_pretrained(directory)
    elif kind in ("gpt2", "llama"):
        from tests.causal_helpers import causal_tokenizer

        causal_tokenizer(texts, cache_dir, kind).save_pretrained(directory)
    elif kind in ("mbart", "m2m100", "nllb", "marian"):
        getattr(multilingual, f"{kind}_tokenizer")(directory)
    elif kind == "t5":
        T5Tokenizer(vocab=[("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("▁", -2.0),
                           *multilingual.unigram_vocabulary()], extra_ids=0).save_pretrained(directory)
    elif kind == "xlm-roberta":
        XLMRobertaTokenizer(vocab=[("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("▁", -2.0),
                                   *multilingual.unigram_vocabulary(), ("<mask>", 0.0)]).save_pretrained(directory)
    elif kind in ("bert", "prophetnet"):
        letters = multilingual.LETTERS
        pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *multilingual.WORDS, *letters,
                  *(f"##{letter}" for letter in letters)]
        if kind == "bert":
            BertTokenizer(vocab={piece: index for index, piece in enumerate(pieces)}).save_pretrained(directory)
        else:
            vocabulary = directory / "prophetnet.tokenizer"
            directory.mkdir(parents=True, exist_ok=True)
            vocabulary.write_text("".join(f"{piece}\n" for piece in [*pieces, "[X_SEP]"]))
            ProphetNetTokenizer(str(vocabulary)).save_pretrained(directory)
    else:
        raise ValueError(kind)
    return AutoTokenizer.from_pretrained(directory)


def _sharpen(model: Any, writable: int, std: float = 1.0) -> None:
    """Weights drawn wider than transformers' initialisation (std 0.02), so that a random model's next-token
    scores are far apart and depend on its source: its outputs differ from example to example, and an engine that
    decoded differently would show (at std 0.02 every score is nearly equal and most models write one fixed text or
    nothing). Padding rows stay zero, as the classes initialise them (Marian starts decoding from that row), and so
    do the rows past the ``writable`` ids the tokenizer has (M2M100's madeup words, OPT's rounding): their score
    0 lies far below the best ones (spread ~4 wide after a layer norm over d=16), so that the model never writes
    them, as a trained one never does (transformers and CTranslate2 detokenise them differently)."""
    import torch

    with torch.no_grad():
        for weight in model.parameters():  # each shared (tied) tensor once; fixed sinusoidal tables are kept
            if weight.dim() >= 2 and weight.requires_grad:
                weight.normal_(0.0, std)
        for module in (model.get_input_embeddings(), model.get_output_embeddings()):
            if module is None:
                continue
            module.weight[writable:].zero_()
            if getattr(module, "padding_idx", None) is not None:
                module.weight[module.padding_idx].zero_()
