"""checkpoint_best's model card (README.md in the Hugging Face style: YAML front matter, then prose): the dataset,
the main settings, the figures with how each was scored (results.json's metric_details), the software versions.

Written after results.json, when the figures are known, atomically; a failure writing it costs the card alone
(one error line; the run, its checkpoint and results.json stand). The card is what --push_to_hub uploads beside
the weights, so a checkpoint shared alone still says what it is and how its figures were made.
"""
from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Mapping

import yaml

from textbox.config import Config
from textbox.config.families import is_decoder_only
from textbox.decoding.generate import generation_settings
from textbox.utils.atomic import write_text_atomic

CARD = "README.md"
ADAPTER_CONFIG = "adapter_config.json"  # peft's: checkpoint_best then holds only the adapter
# The settings a reader needs to reproduce or judge the run, in the card's order.
_SETTINGS = ("model", "model_path", "src_len", "tgt_len", "prefix_prompt", "suffix_prompt", "epochs", "max_steps",
             "train_batch_size", "accumulation_steps", "learning_rate", "scheduler", "warmup_steps", "optimizer",
             "seed", "efficient_methods", "quantization", "metrics_for_best_model")


def write_model_card(config: Config, checkpoint: Path, results: Mapping[str, object], logger: logging.Logger) -> bool:
    """README.md in ``checkpoint`` (checkpoint_best); False, with one error line, when it could not be written."""
    try:
        write_text_atomic(checkpoint / CARD, model_card(config, checkpoint, results))
    except Exception as error:  # the card alone is lost: the checkpoint and results.json are written
        logger.error(f"error: the model card {checkpoint / CARD} was not written ({type(error).__name__}: {error}); "
                     f"the checkpoint and results.json are complete")
        return False
    return True


def model_card(config: Config, checkpoint: Path, results: Mapping[str, object]) -> str:
    """The card's text: front matter (library_name, tags, datasets, metrics, model-index with the test figures),
    then the dataset, settings, figures, scoring, use and versions."""
    decoder_only = is_decoder_only(config.model)
    task = "text-generation" if decoder_only else "text2text-generation"
    adapter = (checkpoint / ADAPTER_CONFIG).is_file()
    dataset = _dataset(config)
    figures = {split: _finite(results.get(split)) for split in ("test", "valid")}
    details = results.get("metric_details")
    details = details if isinstance(details, dict) else {}
    front: dict[str, object] = {
        "library_name": "peft" if adapter else "transformers",
        "pipeline_tag": task,
        "tags": ["textbox", task, config.model],
        "datasets": [dataset],
        "metrics": sorted(details) or sorted(config.metrics),
    }
    if figures["test"]:
        front["model-index"] = [{"name": config.hub_model_id or checkpoint.parent.name, "results": [{
            "task": {"type": task},
            "dataset": {"name": dataset, "type": dataset, "split": "test"},
            "metrics": [{"type": name.split("-")[0], "name": name, "value": value}
                        for name, value in figures["test"].items()]}]}]
    lines = ["---", yaml.safe_dump(front, sort_keys=False, allow_unicode=True).rstrip(), "---", "",
             f"# {config.hub_model_id or checkpoint.parent.name}", "",
             f"A `{config.model}` model trained with TextBox on `{dataset}` (run directory "
             f"`{checkpoint.parent.name}`; the figures below are its test split's, scored as written under "
             f"*How the figures were scored*).", "", "## Settings", "", "| setting | value |", "|---|---|"]
    lines += [f"| {name} | `{_shown(config[name])}` |" for name in _SETTINGS if name in config
              and config[name] not in (None, [], {}, "")]
    settings = generation_settings(config.generation_kwargs, config.tgt_len)
    lines += ["", "Generation (written into this checkpoint's `generation_config.json`, so a plain `generate()` "
              f"decodes as the run did): `{json.dumps(settings, sort_keys=True)}`", "", "## Results", ""]
    rows = [(split, name, value) for split, found in figures.items() for name, value in found.items()]
    if rows:
        lines += ["| split | figure | value |", "|---|---|---|"]
        lines += [f"| {split} | {name} | {value:.4f} |" for split, name, value in rows]
    else:
        lines.append("No figures: the run neither validated nor tested by generation.")
    lines += ["", "## How the figures were scored", ""]
    lines += [f"- {metric}: {fields.get('package')} {fields.get('version')}; "
              + "; ".join(f"{key} {value}" for key, value in fields.items() if key not in ("package", "version"))
              for metric, fields in details.items() if isinstance(fields, dict)] or ["- (no metric details)"]
    lines += ["", "## Use", "", "```python", *_use(decoder_only, adapter), "```", "", "## Versions", "",
              "| software | version |", "|---|---|"]
    versions = results.get("versions")
    lines += [f"| {name} | {value} |" for name, value in (versions.items() if isinstance(versions, dict) else [])]
    return "\n".join(lines) + "\n"


def _dataset(config: Config) -> str:
    """The hub dataset the run read, when it read one; its name otherwise."""
    catalogue = config.catalogue if isinstance(config.catalogue, dict) else {}
    return str(config.hub_name or catalogue.get("repo") or config.dataset)


def _finite(figures: object) -> dict[str, float]:
    """A split's figures that are numbers (NaN/inf are null in results.json and left out here)."""
    if not isinstance(figures, dict):
        return {}
    return {str(name): float(value) for name, value in figures.items()
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)}


def _shown(value: object) -> str:
    return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


def _use(decoder_only: bool, adapter: bool) -> list[str]:
    if adapter:
        auto = "AutoPeftModelForCausalLM" if decoder_only else "AutoPeftModelForSeq2SeqLM"
        head = [f"from peft import {auto}", "from transformers import AutoTokenizer", "",
                f'model = {auto}.from_pretrained("<this repository>")']
    else:
        auto = "AutoModelForCausalLM" if decoder_only else "AutoModelForSeq2SeqLM"
        head = [f"from transformers import {auto}, AutoTokenizer", "",
                f'model = {auto}.from_pretrained("<this repository>")']
    return [*head, 'tokenizer = AutoTokenizer.from_pretrained("<this repository>")',
            'inputs = tokenizer("a source text", return_tensors="pt")',
            "print(tokenizer.decode(model.generate(**inputs)[0], skip_special_tokens=True))"]
