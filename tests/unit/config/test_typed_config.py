"""The schema's dataclasses are the one declaration of the keys: their fields give SCHEMA, DEFAULTS, the type
checks and `--help`; textbox.config.layers.LAYERS is the one statement of the layer order."""
from __future__ import annotations

import re
from dataclasses import fields
from typing import get_type_hints

from textbox.cli import USAGE
from textbox.config.layers import LAYERS
from textbox.config.schema import DEFAULTS, GROUPS, SCHEMA, Key, Keys, spelling


def test_every_key_is_a_field_of_keys_in_declaration_order():
    assert [item.name for item in fields(Keys)] == list(SCHEMA) == list(DEFAULTS)
    hints = get_type_hints(Keys)
    assert hints["src_len"] is int and hints["model_path"] == str | None and hints["metrics"] == list[str]
    for name, declared in SCHEMA.items():
        assert declared.annotation == hints[name] and declared.type == spelling(hints[name])


def test_groups_keep_their_names_and_help_order():
    assert [group for group, _ in GROUPS] == ["run", "hardware", "data", "model", "train", "valid", "eval", "train",
                                              "eval", "metrics"]
    assert SCHEMA["max_tokens"].group == "train" and SCHEMA["decoding_backend"].group == "eval"


def test_type_errors_spell_the_annotation_as_before():
    assert SCHEMA["max_steps"].type_error("x") == "expects int|None, got str 'x'"
    assert SCHEMA["gpu_id"].type_error(1.5) == "expects int|str|list[int]|None, got float 1.5"
    assert SCHEMA["config_kwargs"].type_error([]) == "expects dict, got list []"
    assert SCHEMA["metrics"].type_error(["bleu", 3]) == "expects list[str], got list ['bleu', 3]"
    assert SCHEMA["epochs"].type_error(True) == "expects int, got bool True"
    assert SCHEMA["learning_rate"].type_error(1) is None  # an int is a float
    assert SCHEMA["mixed_precision"].type_error("FP16") is None
    assert SCHEMA["mixed_precision"].type_error("fp8") == "must be one of 'no', 'fp16', 'bf16', got 'fp8'"


def test_a_key_declared_by_its_spelling_checks_like_a_field():
    spelled = Key("max_steps", "int|None", None, "doc", "train")
    assert spelled.annotation == int | None and spelled.kinds == (int, type(None))
    for value in (None, 3, "x", True, 2.0, [1]):
        assert spelled.type_error(value) == SCHEMA["max_steps"].type_error(value)


def test_mutable_defaults_are_fresh_per_instance():
    first, second = Keys(), Keys()
    assert first.metrics == second.metrics == DEFAULTS["metrics"] and first.metrics is not second.metrics
    assert {item.name: getattr(first, item.name) for item in fields(Keys)} == DEFAULTS


def test_help_prints_the_one_layer_order():
    text = " ".join(USAGE.split())
    positions = [text.find(layer) for layer in LAYERS]
    assert -1 not in positions and positions == sorted(positions)
    assert re.search(r"the run's config\.yaml .* < --config_files", text)
