"""ROUGE-N, ROUGE-L and ROUGE-Lsum F-measures from rouge-score (ROUGE-W: rouge_w.py), averaged over examples, 0-100.

rouge-score compares one reference at a time; ``multiref_strategy`` says how several are combined.

ROUGE-L of a text of several sentences has two definitions. rouge-score's rougeL is one longest common subsequence
over the whole text; ROUGE-1.5.5 (files2rouge, pyrouge: the figure most papers and TextBox 2.0 report as ROUGE-L)
and rouge-score's rougeLsum take the union of the LCS of every reference sentence with the output's sentences.
``rouge_sentence_split`` chooses: "none" keeps rouge-score's rougeL as rouge-l (rouge-lsum then splits at line
breaks only, rouge-score's rule: one-line outputs make it equal rouge-l); any other rule makes rouge-l and
rouge-lsum the summary-level ROUGE-L over the sentences that rule finds (textbox/evaluator/metrics/tokens.py).
"period" is TextBox 2.0's files2rouge, which was given NLTK-tokenised texts: every rouge figure is then computed on
those tokens, as it was.
"""
from __future__ import annotations

from importlib.metadata import version
from statistics import mean

from textbox.evaluator.metrics.base import MetricInputs, MetricOptions, MetricResult, package_details
from textbox.evaluator.metrics.rouge_w import WEIGHT, rouge_w
from textbox.evaluator.metrics.tokens import missing_punkt, sentences

SPLIT_MEANING = {
    "none": "rouge-l: one LCS over the whole text (rouge-score's rougeL); rouge-lsum: sentences at line breaks",
    "newline": "rouge-l = rouge-lsum: summary-level LCS (ROUGE-1.5.5's ROUGE-L), sentences at line breaks",
    "period": "rouge-l = rouge-lsum: summary-level LCS (ROUGE-1.5.5's ROUGE-L), on NLTK word tokens, sentences "
              "ending at ' . ' (TextBox 2.0's files2rouge)",
    "punkt": "rouge-l = rouge-lsum: summary-level LCS (ROUGE-1.5.5's ROUGE-L), sentences by NLTK's Punkt "
             "(rouge-score's split_summaries, Hugging Face's run_summarization)",
}


def rouge_figures(max_order: int) -> dict[str, str]:
    """Our figure name -> rouge-score's rouge type."""
    figures = {f"rouge-{order}": f"rouge{order}" for order in range(1, max_order + 1)}
    return {**figures, "rouge-l": "rougeL", "rouge-lsum": "rougeLsum", "rouge-w": "rougeW"}


def missing_resources(options: MetricOptions) -> str | None:
    """What the sentence split needs and lacks here (NLTK's Punkt data), or None."""
    return missing_punkt() if options["rouge_sentence_split"] == "punkt" else None


def combine_references(fmeasures: list[float], strategy: str) -> float:
    """One example's score from its per-reference F-measures.

    leave_one_out (jackknifing) makes scores with K references comparable to human scores computed with K-1.
    """
    if strategy == "max" or len(fmeasures) == 1:
        return max(fmeasures)
    return mean(max(fmeasures[:k] + fmeasures[k + 1:]) for k in range(len(fmeasures)))


def prepared(text: str, split: str) -> str:
    """The text rouge-score is given: its sentences one per line (TextBox's tokens for "period")."""
    if split == "none":
        return text
    return "\n".join(sentences(text, split))


def rouge(inputs: MetricInputs, options: MetricOptions) -> MetricResult:
    """rouge-1..rouge-N, rouge-l and rouge-lsum, each the mean of per-example F-measures."""
    from rouge_score.rouge_scorer import RougeScorer
    from rouge_score.tokenizers import DefaultTokenizer

    figures = rouge_figures(options["rouge_max_ngrams"])
    strategy, split = options["multiref_strategy"], options["rouge_sentence_split"]
    if split != "none":  # rouge-l is the summary-level figure too
        figures["rouge-l"] = "rougeLsum"
    scored = {name: rouge_type for name, rouge_type in figures.items() if name != "rouge-w"}
    scorer = RougeScorer(sorted(set(scored.values())), use_stemmer=options["rouge_use_stemmer"])
    tokenizer = DefaultTokenizer(use_stemmer=options["rouge_use_stemmer"])  # rouge-score's tokens for ROUGE-W
    per_example: dict[str, list[float]] = {name: [] for name in figures}
    for hypothesis, references in zip(inputs.hypotheses, inputs.references):
        hypothesis = prepared(hypothesis, split)
        references = [prepared(reference, split) for reference in references]
        pair_scores = [scorer.score(reference, hypothesis) for reference in references]
        for name, rouge_type in scored.items():
            fmeasures = [scores[rouge_type].fmeasure for scores in pair_scores]
            per_example[name].append(combine_references(fmeasures, strategy))
        tokens = tokenizer.tokenize(hypothesis)
        per_example["rouge-w"].append(combine_references(
            [rouge_w(tokenizer.tokenize(reference), tokens) for reference in references], strategy))
    scores = {name: 100 * mean(values) for name, values in per_example.items()}
    details = package_details("rouge-score", use_stemmer=options["rouge_use_stemmer"],
                              multiref_strategy=strategy, aggregate="mean of per-example F-measures",
                              sentence_split=split, rouge_l=SPLIT_MEANING[split],
                              rouge_w=f"rouge-metric {version('rouge-metric')}, weight {WEIGHT}, on rouge-score's "
                                      f"tokens")
    return MetricResult(scores, details)
