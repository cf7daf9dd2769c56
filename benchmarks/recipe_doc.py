"""docs/recipes.md's part for one recipe, from what benchmarks/recipes.py left in the recipe's run directory
(results.json of a finished run, metrics.jsonl and project.log of a stopped one, benchmark.json: command, time, load)
and from published systems' figures or outputs scored here."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from common import load_checked_config
from recipe_notes import Recipe

INTRO_BEGIN, INTRO_END = "<!-- recipes intro: written by benchmarks/recipes.py -->", "<!-- end of recipes intro -->"
INTRO = """# Recipes that reach published quality

Written by `python benchmarks/recipes.py` (do not edit by hand): each recipe under `configs/recipes/` is run whole
on this machine (2 CPU cores, shared with other work), exactly as the command shown, and its test figures stand
beside the figures published for the task. A recipe is a yaml file of ordinary keys, loaded with `--config_files`;
its header says how to run it. tests/integration/test_recipes.py checks that each loads and runs a few steps.

On a machine shared with other work a recipe may not finish in the time there is: `--stop_after_minutes` stops it
(the run saves checkpoint_last, as on Ctrl-C) and the doc then gives its last validation figures, marked as such;
`--resume` continues it later and adds the time of each part.

What makes a recipe good lives in the framework, as keys any run can use:

- `--average_checkpoints=N`: after training, the mean of the weights of the last N validations' checkpoints is
  validated and becomes `checkpoint_best` when it does better than every single checkpoint (results.json's
  `averaged` says how it fared; `--max_save` must keep the N checkpoints). Off (1) by default: it costs one more
  validation and N checkpoints on disk, and a run must validate several times for it to have anything to average.
- Shared source/target vocabulary and tied embeddings: `--model=transformer` trains one byte-level BPE on the
  sources and targets of the training split, and its BART architecture ties the encoder and decoder input
  embeddings and the output layer (one matrix).
- Length-normalised beam search: `generation_kwargs` `num_beams` and `length_penalty` (scores divided by
  length^length_penalty, transformers' and CTranslate2's convention), decoded by CTranslate2.
- Token-budget batches (`--max_tokens`), label smoothing, warm-up and decay schedules (`--scheduler`), dropout and
  sizes (`--config_kwargs`), as the recipes below set them."""


def recipe_test_split(recipe_yaml: Path, data_dir: Path, **changes: Any) -> tuple[Any, Any]:
    """A recipe's config (with ``changes``) and its test split as a run reads it (references grouped)."""
    from textbox.data import read_splits

    config = load_checked_config([f"--config_files={recipe_yaml}", f"--data_path={data_dir}"], changes)
    return config, read_splits(config, ["test"], log=lambda message: None)["test"]


def score(config: Any, test: Any, hypotheses: list[str]) -> dict[str, float]:
    from textbox.evaluator.metrics import compute_metrics

    return compute_metrics(config.metrics, hypotheses, test.targets, sources=test.sources, options=config).scores


def published_outputs(path: Path, data_dir: Path) -> list[str]:
    """A published system's test outputs, one line per line of test.src (several lines per source when the
    references are listed one per line): the first output of each source, as the CommonGen evaluation takes it."""
    sources = (data_dir / "test.src").read_text(encoding="utf-8").splitlines()
    outputs = path.read_text(encoding="utf-8").split("\n")[:len(sources)]
    firsts: list[str] = []
    for index, (source, output) in enumerate(zip(sources, outputs)):
        if index == 0 or source != sources[index - 1]:
            firsts.append(" ".join(output.split()))
    return firsts


def score_published(recipe: Recipe, recipe_yaml: Path, data_dir: Path, outputs_dir: Path) -> dict[str, Any]:
    """Each published system with released outputs, scored by the recipe's metrics on its test split, cased and
    (for ``recipe.lowercase_figures``) lower-cased."""
    config, test = recipe_test_split(recipe_yaml, data_dir)
    lower_config, _ = recipe_test_split(recipe_yaml, data_dir, lower_evaluation=True)
    scored: dict[str, Any] = {}
    for published in recipe.published:
        if published.outputs is None:
            continue
        hypotheses = published_outputs(outputs_dir / published.outputs, data_dir)
        if len(hypotheses) != len(test.targets):
            raise SystemExit(f"{outputs_dir / published.outputs}: {len(hypotheses)} outputs for "
                             f"{len(test.targets)} test examples")
        lowered = score(lower_config, test, hypotheses) if recipe.lowercase_figures else {}
        scored[published.outputs] = {"cased": score(config, test, hypotheses),
                                     "lower": {name: lowered[name] for name in recipe.lowercase_figures}}
    return scored


def lowercased_figures(recipe: Recipe, recipe_yaml: Path, run_dir: Path) -> dict[str, float]:
    """The run's test generations scored again lower-cased (as most published figures of these tasks were)."""
    if not recipe.lowercase_figures:
        return {}
    config = load_checked_config([f"--config_files={run_dir / 'config.yaml'}"], {})
    config, test = recipe_test_split(recipe_yaml, Path(config.data_path), lower_evaluation=True)
    scores = score(config, test, (run_dir / "generation.txt").read_text(encoding="utf-8").splitlines())
    return {name: scores[name] for name in recipe.lowercase_figures}


def metric_rows(run_dir: Path, split: str) -> list[dict[str, Any]]:
    path = run_dir / "metrics.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [row for row in rows if row["split"] == split]


def planned_steps(run_dir: Path) -> int | None:
    """The run's optimiser steps in all, from its log's 'training: ...' line."""
    found = re.findall(r"(\d+) steps in all", (run_dir / "project.log").read_text(encoding="utf-8"))
    return int(found[-1]) if found else None


def _cells(figures: dict[str, float], names: tuple[str, ...]) -> str:
    return " | ".join(f"{figures[name]:.2f}" if name in figures else "-" for name in names)


def _figures(figures: dict[str, float]) -> str:
    return ", ".join(f"{name} {value:.2f}" for name, value in figures.items() if name != "loss")


def published_rows(recipe: Recipe, published_scores: dict[str, Any]) -> list[str]:
    rows = []
    for published in recipe.published:
        if published.outputs is None:
            rows.append(f"| {published.source} | {_cells(published.figures, recipe.figures)} | {published.note} |")
        elif published.outputs in published_scores:
            scored = published_scores[published.outputs]
            rows.append(f"| {published.source} | {_cells(scored['cased'], recipe.figures)} | {published.note} |")
            if scored["lower"]:
                rows.append(f"| {published.source}, lower-cased | {_cells(scored['lower'], recipe.figures)} | "
                            "the same outputs and references, lower-cased before scoring |")
    return rows


def time_and_load(bench: dict[str, Any], run_dir: Path) -> str:
    """Wall and CPU time of every part of the run, the training throughput and the machine's load."""
    parts = bench["parts"]
    wall = sum(part["wall_seconds"] for part in parts) / 60
    cpu = sum(part["cpu_seconds"] for part in parts) / 60
    loads = [value for part in parts for value in part["load_1min"]]
    speeds = [row["tokens_per_s"] for row in metric_rows(run_dir, "train")]
    mean_load = sum(loads) / len(loads)
    each = "; ".join(f"{part['started']}, {part['wall_seconds'] / 60:.1f} min, {part['how_it_ended']}" for part in parts)
    return (f"Wall time {wall:.1f} min in {len(parts)} part(s) ({each}), {bench['threads']} thread(s), "
            f"{cpu:.1f} CPU-minutes used (user + system time of the run's process, as /usr/bin/time counts it), "
            + (f"{sum(speeds) / len(speeds):.0f} target tokens/s in training on average. " if speeds else "")
            + f"The machine's 1-minute load average, sampled every 30 s: mean {mean_load:.1f}, max {max(loads):.1f} "
            f"on {bench['cores']} cores"
            + (" (other work shared the cores: a quiet machine is faster)." if mean_load > bench["cores"] + 0.5
               else " (about quiet)."))


def section(recipe: Recipe, recipe_yaml: Path, run_dir: Path, published_scores: dict[str, Any]) -> str:
    """The doc's part for one recipe: what it is, its figures beside the published ones, how long it took; for a
    run that was stopped, its last validation figures and how far it got."""
    bench_path, results_path = run_dir / "benchmark.json", run_dir / "results.json"
    bench = json.loads(bench_path.read_text()) if bench_path.exists() else None
    lines = [f"## {recipe.title}", "", recipe.about.strip(), ""]
    header = ["| | " + " | ".join(recipe.figures) + " | |", "|---|" + "---:|" * len(recipe.figures) + "---|"]
    if bench is None:
        lines += ["Not run yet: `python benchmarks/recipes.py --recipes=" + recipe.name + "` runs it.", "",
                  *header, *published_rows(recipe, published_scores)]
        return "\n".join(lines + ["", recipe.levers.strip()]) + "\n"
    lines += [f"`configs/recipes/{recipe.name}.yaml`, run by `python benchmarks/recipes.py --recipes={recipe.name}`:",
              "", "```bash", f"OMP_NUM_THREADS={bench['threads']} {bench['command']}", "```", ""]
    if results_path.exists():
        results = json.loads(results_path.read_text())
        test, averaged = results["test"], results.get("averaged") or {}
        lines += [*header, f"| **this recipe** (test) | {_cells(test, recipe.figures)} | {recipe.test_note} |"]
        lowercased = lowercased_figures(recipe, recipe_yaml, run_dir)
        if lowercased:
            lines.append(f"| **this recipe**, lower-cased (test) | {_cells(lowercased, recipe.figures)} | the same "
                         "outputs and references, lower-cased before scoring |")
        chosen = ("the average of the checkpoints of steps " + ", ".join(map(str, averaged["steps"]))
                  if averaged.get("chosen") else f"the checkpoint of step {results['best_step']}")
        signature = results.get("metric_details", {}).get("bleu", {}).get("signature", "")
        lines += [*published_rows(recipe, published_scores), "",
                  f"Test figures of {chosen}, chosen on the validation set (valid: {_figures(results['valid'])})."
                  + (f" The average of the last checkpoints scored {_figures(averaged['valid'])} on validation."
                     if averaged.get("valid") else ""), ""]
        if signature:
            lines += [f"BLEU signature: `{signature}`.", ""]
        lines.append(f"{results['steps']} optimiser steps; training {results['train_seconds'] / 60:.1f} min with its "
                     f"validations, test {results['test_seconds']:.0f} s. " + time_and_load(bench, run_dir))
    else:
        validations = metric_rows(run_dir, "valid")
        reached = (metric_rows(run_dir, "train") or [{"step": 0}])[-1]["step"]
        last = (f"its last validation, at step {validations[-1]['step']}, scored {_figures(validations[-1])} "
                f"(best {max(row[recipe.figures[0]] for row in validations):.2f} {recipe.figures[0]})"
                if validations else "it had not validated yet")
        lines += ["**Did not finish**: the run was stopped (`--stop_after_minutes`) at about step "
                  f"{reached} of {planned_steps(run_dir)}, so it has no test figures; {last}. "
                  "`python benchmarks/recipes.py --recipes=" + recipe.name + " --resume` continues it.", "",
                  *header, *published_rows(recipe, published_scores), "", time_and_load(bench, run_dir)]
    return "\n".join(lines + ["", recipe.levers.strip()]) + "\n"
