"""Tiny multilingual tokenizers and models built offline (no hub): mBART (cc25 convention), mBART-50, NLLB, M2M100
and Marian tokenizers from small vocabularies with their language codes, saved with save_pretrained as a checkpoint
directory would hold them; tiny encoder-decoder models (d=32) whose vocabulary covers every language code."""
from __future__ import annotations

import io
import json
from pathlib import Path

CORPUS = ["the cat sat on a mat", "a red dog ran to the house", "le chat est sur le tapis", "un chien rouge court",
          "die katze sitzt auf der matte", "ein roter hund rennt"]
WORDS = sorted({word for line in CORPUS for word in line.split()})
LETTERS = sorted({letter for line in CORPUS for letter in line.replace(" ", "")})
M2M100_CODES = ("en", "ha", "is", "ja", "cs", "ru", "zh", "de")  # language_codes="wmt21"; tokens __en__, ...
MARIAN_TARGETS = (">>fr<<", ">>de<<")


def unigram_vocabulary() -> list[tuple[str, float]]:
    """Whole words first (the Unigram model prefers them), single letters so that nothing is unknown."""
    return [("▁" + word, -1.0) for word in WORDS] + [(letter, -5.0) for letter in LETTERS]


def mbart_tokenizer(directory: Path, fifty: bool = False) -> Path:
    """MBartTokenizer (mBART-cc25: codes after the text) or MBart50Tokenizer (codes before it)."""
    from transformers import MBart50Tokenizer, MBartTokenizer

    specials = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("▁", -2.0)]
    if fifty:
        # as a sentencepiece model lists them (<unk> <s> </s> first, which MBart50Tokenizer replaces by its own);
        # bos_token as released checkpoints' special_tokens_map.json gives it
        tokenizer = MBart50Tokenizer(vocab=[("<unk>", 0.0), ("<s>", 0.0), ("</s>", 0.0), ("▁", -2.0),
                                            *unigram_vocabulary()], bos_token="<s>")
    else:
        tokenizer = MBartTokenizer(vocab=[*specials, *unigram_vocabulary()])
    tokenizer.save_pretrained(directory)
    return directory


def nllb_tokenizer(directory: Path) -> Path:
    """NllbTokenizer (codes such as eng_Latn before the text); a BPE of letters merged into the corpus' words."""
    from transformers import NllbTokenizer

    vocabulary = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "▁": 4}
    merges = []
    for letter in LETTERS:
        vocabulary.setdefault(letter, len(vocabulary))
    for word in WORDS:  # "▁" + letters, merged left to right
        piece = "▁"
        for letter in word:
            merges.append((piece, letter))
            piece += letter
            vocabulary.setdefault(piece, len(vocabulary))
    NllbTokenizer(vocab=vocabulary, merges=list(dict.fromkeys(merges))).save_pretrained(directory)
    return directory


def _sentencepiece_model(directory: Path) -> Path:
    import sentencepiece

    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(CORPUS * 10), model_writer=model, vocab_size=60, model_type="unigram",
        character_coverage=1.0, pad_id=-1, bos_id=-1, eos_id=-1, unk_id=0, hard_vocab_limit=False, minloglevel=2)
    path = directory / "spm.model"
    path.write_bytes(model.getvalue())
    return path


def _pieces(model: Path) -> list[str]:
    import sentencepiece

    processor = sentencepiece.SentencePieceProcessor(model_file=str(model))
    return [processor.id_to_piece(i) for i in range(processor.get_piece_size())]


def m2m100_tokenizer(directory: Path) -> Path:
    """M2M100Tokenizer (a sentencepiece model and vocab.json; its language tokens __en__ ... follow the vocabulary,
    all listed as special tokens in their order, as in a released checkpoint's tokenizer_config.json)."""
    from transformers import M2M100Tokenizer

    build = directory / "build"
    build.mkdir(parents=True, exist_ok=True)
    model = _sentencepiece_model(build)
    vocabulary = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for piece in _pieces(model):
        vocabulary.setdefault(piece, len(vocabulary))
    (build / "vocab.json").write_text(json.dumps(vocabulary))
    languages = [f"__{code}__" for code in M2M100_CODES]
    tokenizer = M2M100Tokenizer(str(build / "vocab.json"), str(model), language_codes="wmt21",
                                additional_special_tokens=languages)
    tokenizer.save_pretrained(directory)
    return directory


def marian_tokenizer(directory: Path, multi_target: bool = True, source_lang: str = "en",
                     target_lang: str | None = None) -> Path:
    """MarianTokenizer; ``multi_target``: its vocabulary has >>fr<< and >>de<< (a multi-target checkpoint's)."""
    from transformers import MarianTokenizer

    build = directory / "build"
    build.mkdir(parents=True, exist_ok=True)
    model = _sentencepiece_model(build)
    vocabulary = {"</s>": 0, "<unk>": 1}
    for piece in [*(MARIAN_TARGETS if multi_target else ()), *_pieces(model), "<pad>"]:  # <pad> last, as released
        vocabulary.setdefault(piece, len(vocabulary))  # checkpoints have it (CTranslate2's converter drops it)
    (build / "vocab.json").write_text(json.dumps(vocabulary))
    MarianTokenizer(str(model), str(model), str(build / "vocab.json"), source_lang=source_lang,
                    target_lang=target_lang).save_pretrained(directory)
    return directory


def tiny_model(family: str, tokenizer_dir: Path, directory: Path, seed: int = 0, **config: object) -> Path:
    """A d=32 model of ``family`` (mbart, m2m_100, marian) saved beside the tokenizer in ``directory``."""
    import shutil

    import torch
    import transformers

    if tokenizer_dir != directory:
        shutil.copytree(tokenizer_dir, directory, dirs_exist_ok=True)
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    # M2M100 checkpoints keep room for their "madeup words" after the language tokens (CTranslate2 counts them)
    vocabulary = max(tokenizer.get_vocab().values()) + 1 + getattr(tokenizer, "num_madeup_words", 0)
    sizes = dict(vocab_size=vocabulary, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                 decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64,
                 pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                 decoder_start_token_id=tokenizer.eos_token_id, forced_eos_token_id=tokenizer.eos_token_id,
                 bos_token_id=tokenizer.bos_token_id, tie_word_embeddings=False, **config)
    torch.manual_seed(seed)
    classes = {"mbart": ("MBartConfig", "MBartForConditionalGeneration"),
               "m2m_100": ("M2M100Config", "M2M100ForConditionalGeneration"),
               "marian": ("MarianConfig", "MarianMTModel")}[family]
    if family == "marian":
        sizes.update(decoder_start_token_id=tokenizer.pad_token_id, decoder_vocab_size=vocabulary, bos_token_id=None)
    model = getattr(transformers, classes[1])(getattr(transformers, classes[0])(**sizes)).eval()
    model.save_pretrained(directory)
    return directory
