"""BERTScore (Zhang et al. 2020) without idf weighting: greedy cosine matching of contextual token embeddings.

Written on transformers + torch because the bert-score package (0.3.13) calls a tokenizer method that
transformers 5 removed, so it fails on empty hypotheses. It reproduces that package's figures: every
non-special hypothesis token takes its best cosine against any reference token (precision) and vice versa
(recall); an empty text scores 0; with several references P, R and F1 are each the best over them.
"""
from __future__ import annotations

from dataclasses import dataclass
from statistics import mean
from typing import TYPE_CHECKING

from textbox.config.errors import TextBoxUserError
from textbox.evaluator.metrics.base import MetricInputs, MetricOptions, MetricResult, package_details

if TYPE_CHECKING:
    import torch

_BATCH_SIZE = 32  # sentences per forward pass: fast on CPU, small enough for any GPU


@dataclass(frozen=True)
class _Embedded:
    vectors: "torch.Tensor"  # one unit-length row per token, special tokens included
    content: "torch.Tensor"  # True for the tokens that are scored (not [CLS], [SEP], ...)


def bert_score(inputs: MetricInputs, options: MetricOptions) -> MetricResult:
    """bert_score-precision, -recall and -f1: means over examples, in percent."""
    import torch

    path = options["bert_score_model_path"]
    if path is None:  # option_problems refuses this before any metric runs
        raise TextBoxUserError("bert_score_model_path is not set: metric bert_score needs a local model directory")
    tokenizer, model = _load(path)
    num_layers = options["bert_score_num_layers"] or model.config.num_hidden_layers
    if num_layers > model.config.num_hidden_layers:
        raise TextBoxUserError(f"bert_score_num_layers={num_layers} but the model at {path} has only "
                               f"{model.config.num_hidden_layers} layers")
    texts = [*inputs.hypotheses, *(reference for references in inputs.references for reference in references)]
    embedded = _embed(texts, tokenizer, model, num_layers)
    triples = []
    for hypothesis, references in zip(inputs.hypotheses, inputs.references):
        per_reference = torch.tensor([_match(embedded[hypothesis], embedded[ref]) for ref in references])
        triples.append(per_reference.max(dim=0).values.tolist())
    precision, recall, f1 = (100 * mean(column) for column in zip(*triples))
    scores = {"bert_score-precision": precision, "bert_score-recall": recall, "bert_score-f1": f1}
    details = package_details("transformers", model_path=str(path), num_layers=num_layers, idf=False,
                              baseline_rescaling=False)
    return MetricResult(scores, details)


def _load(path: str):
    from transformers import AutoModel, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModel.from_pretrained(path)
    except (OSError, ValueError) as error:
        raise TextBoxUserError(f"bert_score_model_path={path}: cannot load a tokenizer and model there "
                               f"({error})") from error
    return tokenizer, model.eval()


def _embed(texts: list[str], tokenizer, model, num_layers: int) -> dict[str, _Embedded]:
    """Each distinct text embedded once, in batches of similar length to keep padding small."""
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model.to(device)
    max_length = min(tokenizer.model_max_length, getattr(model.config, "max_position_embeddings", 512))
    distinct_texts = sorted(set(texts), key=len)
    embedded: dict[str, _Embedded] = {}
    with torch.inference_mode():
        for start in range(0, len(distinct_texts), _BATCH_SIZE):
            batch = distinct_texts[start:start + _BATCH_SIZE]
            encoded = tokenizer(batch, padding=True, truncation=True, max_length=max_length,
                                return_special_tokens_mask=True, return_tensors="pt")
            special = encoded.pop("special_tokens_mask").bool()
            hidden = model(**encoded.to(device), output_hidden_states=True).hidden_states[num_layers]
            hidden = torch.nn.functional.normalize(hidden.float(), dim=-1).cpu()
            for row, text in enumerate(batch):
                size = int(encoded["attention_mask"][row].sum())
                embedded[text] = _Embedded(hidden[row, :size], ~special[row, :size])
    return embedded


def _match(hypothesis: _Embedded, reference: _Embedded) -> tuple[float, float, float]:
    """Greedy matching: precision, recall and their harmonic mean, on the 0-1 scale; 0 if either text is empty."""
    if not (hypothesis.content.any() and reference.content.any()):
        return 0.0, 0.0, 0.0
    similarity = hypothesis.vectors @ reference.vectors.T
    precision = float(similarity.max(dim=1).values[hypothesis.content].mean())
    recall = float(similarity.max(dim=0).values[reference.content].mean())
    return precision, recall, 2 * precision * recall / (precision + recall)
