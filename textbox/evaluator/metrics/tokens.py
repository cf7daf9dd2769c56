"""How the metrics that depend on a word tokenisation or a sentence split get them, each as its reference does.

- TextBox 2.0's words (``textbox_words``): before scoring, TextBox 2.0 ran NLTK's ``word_tokenize`` on every text
  (Punkt sentences, then NLTK's Treebank-style word tokenizer, punctuation kept as tokens). Punkt's English model is
  NLTK data that cannot be fetched offline, so sentence ends are found here by rule: a word ending in ``.``, ``?``
  or ``!`` ends a sentence when another word follows it, unless it is an initial or an acronym (``j.``, ``u.s.``).
  The tokens are Punkt's except after an abbreviation such as ``mr.`` inside a line.
- coco-caption's words (``ptb_words``): the MS-COCO caption evaluation (and CommonGen's, and TextBox 2.0's SPICE)
  tokenises with Stanford's PTBTokenizer, lower-cased, then drops punctuation tokens. That tokenizer is Java: the
  jar pycocoevalcap ships is run here as pycocoevalcap runs it, so the tokens are the same.
- sentences for summary-level ROUGE-L (``sentences``): at line breaks (rouge-score's rule), at a full stop as
  TextBox 2.0's files2rouge split its tokenised texts (`` . ``), or by NLTK's Punkt model (rouge-score's
  ``split_summaries`` and Hugging Face's run_summarization), which needs NLTK's punkt_tab data.
"""
from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

from textbox.config.errors import TextBoxUserError

# coco-caption's tokenizer/ptbtokenizer.py: the tokens it drops after tokenising (lower-casing turns -LRB- into
# -lrb-, which it keeps: so does this).
COCO_PUNCTUATION = frozenset({"''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-", ".", "?", "!", ",", ":",
                              "-", "--", "...", ";"})
_PTB_CLASS = "edu.stanford.nlp.process.PTBTokenizer"
_SENTENCE_END = re.compile(r"[.?!]$")
_ACRONYM = re.compile(r"^(?:\w\.)+$")  # j. / u.s. / e.g.: a period inside or a single letter


@lru_cache(maxsize=1)
def _word_tokenizer():
    from nltk.tokenize import NLTKWordTokenizer

    return NLTKWordTokenizer()


def textbox_words(text: str) -> list[str]:
    """NLTK's word tokens of ``text`` as TextBox 2.0's ``word_tokenize`` gave them (sentence ends by rule)."""
    tokens: list[str] = []
    for sentence in _rule_sentences(text):
        tokens.extend(_word_tokenizer().tokenize(sentence))
    return tokens


def _rule_sentences(text: str) -> list[str]:
    """``text`` cut after each word that ends a sentence (see the module docstring), whitespace kept inside."""
    words = text.split()
    sentences, current = [], []
    for index, word in enumerate(words):
        current.append(word)
        last = index == len(words) - 1
        if not last and _SENTENCE_END.search(word) and not _ACRONYM.match(word):
            sentences.append(" ".join(current))
            current = []
    if current:
        sentences.append(" ".join(current))
    return sentences


def sentences(text: str, rule: str) -> list[str]:
    """The sentences of ``text`` under ``rule`` (rouge_sentence_split's choices; "none" keeps the text whole)."""
    if rule == "none":
        return [text]
    if rule == "newline":
        return [line for line in text.split("\n") if line.strip()] or [text]
    if rule == "period":  # files2rouge: the tokenised text cut at " . ", each piece keeping its full stop
        pieces = " ".join(textbox_words(text)).split(" . ")
        return [piece if index == len(pieces) - 1 else f"{piece} ." for index, piece in enumerate(pieces)]
    if rule == "punkt":
        import nltk

        return nltk.sent_tokenize(text)
    raise ValueError(f"unknown sentence split {rule!r}")


def missing_punkt() -> str | None:
    """Why the punkt split cannot run here (NLTK's punkt_tab data is not where NLTK looks), or None."""
    import nltk

    try:
        nltk.data.find("tokenizers/punkt_tab/english/")
        return None
    except LookupError:
        return ("rouge_sentence_split='punkt' needs NLTK's punkt_tab data, which is not installed (NLTK looks in: "
                f"{', '.join(map(str, nltk.data.path))}). On a machine with internet run: python -m nltk.downloader "
                "-d <dir> punkt_tab, copy <dir> here and set NLTK_DATA=<dir>; or give --rouge_sentence_split=period "
                "(sentences cut at full stops, as TextBox 2.0's files2rouge did) or newline")


def ptb_jar() -> Path | None:
    """The Stanford CoreNLP jar pycocoevalcap ships for its PTBTokenizer, or None without pycocoevalcap."""
    spec = importlib.util.find_spec("pycocoevalcap")
    if spec is None or spec.submodule_search_locations is None:  # not installed, or a module, not a package
        return None
    folder = Path(list(spec.submodule_search_locations)[0]) / "tokenizer"  # a namespace package: no origin
    jars = sorted(folder.glob("stanford-corenlp-*.jar"))
    return jars[0] if jars else None


def missing_ptb() -> str | None:
    """Why coco-caption's PTB tokenisation cannot run here (pycocoevalcap's jar, Java), or None."""
    if ptb_jar() is None:
        return "it needs pycocoevalcap's PTB tokenizer: pip install pycocoevalcap (or pip install -e '.[coco]')"
    if shutil.which("java") is None:
        return ("it tokenises with coco-caption's Stanford PTBTokenizer, a Java program: install a Java runtime "
                "(e.g. OpenJDK 17)")
    return None


def ptb_words(texts: list[str]) -> list[list[str]]:
    """Each text's coco-caption tokens: Stanford's PTBTokenizer (lower-cased, one line per text), punctuation
    dropped. One Java process for all the texts."""
    missing = missing_ptb()
    if missing:
        raise TextBoxUserError(f"coco-caption tokenisation: {missing}")
    with tempfile.TemporaryDirectory(prefix="textbox-ptb-") as work:
        path = Path(work) / "texts.txt"
        path.write_text("\n".join(text.replace("\n", " ") for text in texts), encoding="utf-8")
        completed = subprocess.run(["java", "-cp", str(ptb_jar()), _PTB_CLASS, "-preserveLines", "-lowerCase",
                                    str(path)], capture_output=True, check=False)
    if completed.returncode != 0:
        raise TextBoxUserError(f"coco-caption's PTBTokenizer (Java) failed with exit code {completed.returncode}: "
                               f"{completed.stderr.decode(errors='replace').strip()[:300]}")
    lines = completed.stdout.decode("utf-8").split("\n")
    return [[token for token in lines[index].rstrip().split(" ") if token and token not in COCO_PUNCTUATION]
            if index < len(lines) else [] for index in range(len(texts))]
