"""What ``generate`` would use: a model's generation config with a run's settings applied. Both engines start
from it (transformers_engine.py decodes with it, ctranslate2_settings.py maps it to CTranslate2's arguments), so it
belongs to neither. Standard library only."""
from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:
    from transformers import GenerationConfig


def effective_config(generation_config: GenerationConfig, settings: Mapping[str, object]) -> GenerationConfig:
    """The model's generation config with ``settings`` applied (what ``generate`` would use)."""
    effective = copy.deepcopy(generation_config)
    effective.update(**settings)
    return effective
