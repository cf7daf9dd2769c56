"""A checkpoint that decodes as its run did: the run's generation settings (generation_kwargs, max_new_tokens =
tgt_len by default: textbox.decoding.generate.generation_settings) written into the model's generation config, so
that checkpoint_best's and every checkpoint-<step>'s generation_config.json carry them, and a plain
``model.generate(**inputs)`` on a shared checkpoint_best decodes as the run's figures were made.

Only GenerationConfig's own fields are written there: both engines read that file (transformers' generate, and
textbox.decoding.ctranslate2_settings, which names every field it cannot map), so nothing of ours goes into it.
What the run's settings replaced is kept beside it, in ``textbox_generation.json``: a later run that loads a run's
checkpoint (``<run>/checkpoint_best``: testing it, fine-tuning it) puts those values back first, because it takes
the run's generation_kwargs from the run's config.yaml unless it gives its own, and a generation_kwargs given
replaces the run's whole (docs/invariants.md). A checkpoint copied out of its run directory (shared, pushed to the
hub) has no config.yaml beside it: its generation_config.json is then the model's own settings, as any hub model's,
and a run's generation_kwargs apply over it key by key.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Callable, Mapping

from textbox.config.errors import TextBoxUserError
from textbox.config.run_config import run_of_checkpoint

RUN_GENERATION_FILE = "textbox_generation.json"  # {"replaced": {field: the model's value before the run's}}
_REPLACED = "_textbox_replaced_generation"  # on the model object (never saved by transformers)
# Set by every builder from the run's own tgt_len (textbox.model.loading.set_generation_length): never put back.
_BUILDER_SET = ("max_new_tokens",)


def record_run_generation(model: Any, settings: Mapping[str, object], log: Callable[[str], None]) -> None:
    """Write ``settings`` into the (inner, transformers) model's generation config, which its checkpoints save,
    and remember what they replaced (``save_run_generation``). Settings transformers would refuse to save (e.g.
    early_stopping with one beam) leave the model's own settings, and the log says so."""
    config = getattr(model, "generation_config", None)
    if config is None:
        return
    known = {key: value for key, value in settings.items() if hasattr(config, key)}
    trial = copy.deepcopy(config)
    try:
        trial.update(**known)
        trial.validate(strict=True)
    except ValueError as error:
        log(f"generation_kwargs are not written into the checkpoints' generation_config.json (transformers would not "
            f"save them: {str(error).strip().splitlines()[0]}): a plain generate() on checkpoint_best decodes with "
            f"the model's own settings, not the run's")
        return
    before = {key: copy.deepcopy(getattr(config, key)) for key in known if getattr(config, key) != known[key]}
    before.update(getattr(model, _REPLACED, {}))  # recorded twice (a second build): the first values stay
    config.update(**known)
    setattr(model, _REPLACED, before)


def save_run_generation(model: Any, directory: Path) -> None:
    """``textbox_generation.json`` beside the saved model: what the run's settings replaced in its generation config
    (nothing written when the run replaced nothing)."""
    before = getattr(model, _REPLACED, None)
    if before:
        (Path(directory) / RUN_GENERATION_FILE).write_text(json.dumps({"replaced": before}, indent=2, sort_keys=True)
                                                           + "\n", encoding="utf-8")


def restore_run_generation(model: Any, model_path: str | None) -> bool:
    """Put back what the run that wrote ``model_path`` replaced in the loaded model's generation config, when that
    path is a checkpoint in its run directory (see the module docstring); True when something was put back."""
    config = getattr(model, "generation_config", None)
    if config is None or model_path is None or run_of_checkpoint(model_path) is None:
        return False
    file = Path(model_path).expanduser() / RUN_GENERATION_FILE
    if not file.is_file():
        return False
    try:
        replaced = json.loads(file.read_text(encoding="utf-8"))["replaced"]
        if not isinstance(replaced, dict):
            raise TypeError("not a mapping")
    except (ValueError, KeyError, TypeError) as error:
        raise TextBoxUserError(f"{file}: not a generation record textbox wrote ({error}); delete it to load the "
                               f"checkpoint with the settings of its generation_config.json") from None
    for key, value in replaced.items():
        if key not in _BUILDER_SET and hasattr(config, key):
            setattr(config, key, value)
    return True
