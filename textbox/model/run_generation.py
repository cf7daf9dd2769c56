"""A checkpoint that decodes as its run did: the run's generation settings (generation_kwargs, max_new_tokens =
tgt_len by default: textbox.decoding.generate.generation_settings) written into the model's generation config, so
that every checkpoint's generation_config.json carries them and a plain ``model.generate()`` on a shared
checkpoint_best decodes as the run's figures were made.

The values they replaced are kept beside them (``textbox_replaced``, ignored by ``generate``): a later run that
loads the checkpoint (a test with other generation_kwargs, a fine-tuning) first puts them back, so that its own
settings apply over the model's as before (a given generation_kwargs replaces the tested run's whole).
"""
from __future__ import annotations

import copy
from typing import Any, Callable, Mapping

REPLACED = "textbox_replaced"


def restore_model_generation(model: Any) -> None:
    """Undo what an earlier run of ours wrote into a loaded checkpoint's generation config."""
    config = getattr(model, "generation_config", None)
    replaced = getattr(config, REPLACED, None)
    if config is None or replaced is None:
        return
    for key, value in dict(replaced).items():
        setattr(config, key, value)
    delattr(config, REPLACED)


def record_run_generation(model: Any, settings: Mapping[str, object], log: Callable[[str], None]) -> None:
    """Write ``settings`` into the model's generation config (what its checkpoints save), unless transformers would
    refuse to save the result (then the checkpoint keeps the model's own settings, and the log says so)."""
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
            f"save them: {str(error).splitlines()[0]}): a plain generate() on checkpoint_best decodes with the "
            f"model's own settings, not the run's")
        return
    before = {key: copy.deepcopy(getattr(config, key)) for key in known}
    config.update(**known)
    setattr(config, REPLACED, before)
