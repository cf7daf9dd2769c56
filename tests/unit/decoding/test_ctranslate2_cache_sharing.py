"""Processes sharing one CTranslate2 conversion cache never remove or replace each other's entries: validation
conversions another process holds stay, the ones nobody holds go (the cache stays bounded), and a complete
conversion another process published first is kept as it is. (tests/integration/test_seed_study_shared_cache.py
runs a 2-worker seed study on one cache.)"""
from __future__ import annotations

import copy
import os

import torch

from textbox.decoding.ctranslate2_cache import converted_model, damage_of
from textbox.utils import leases


def _variant(model, number: int):
    """A copy of ``model`` with other weights (another content key): validation's weights after another step."""
    changed = copy.deepcopy(model)
    with torch.no_grad():
        changed.model.shared.weight[0, 0] += number + 1
    return changed


def test_validation_conversions_another_process_holds_are_never_removed(trained, tmp_path):
    """Another process is played by a lease taken here on its entry: a flock on a file opened anew conflicts with
    this process's own locks as another process's would. Before, each validation conversion emptied validation/
    first, whoever was converting or about to load there."""
    import ctranslate2

    model, tokenizer = trained
    cache = tmp_path / "cache"
    root = cache / "ctranslate2" / "validation"
    theirs, _ = converted_model(_variant(model, 0), tokenizer, cache, "float32", latest_only=True)
    other_process = leases.hold(root / f"{theirs.name}.lock")  # it found the entry and is about to load it
    crashed = root / f".converting-{'0' * 32}-x"  # a conversion whose process was killed: nobody holds it
    crashed.mkdir()
    (crashed / "model.bin").write_bytes(b"partial")
    unleased = root / ("1" * 32)  # an entry from before leases existed
    unleased.mkdir()

    ours, _ = converted_model(_variant(model, 1), tokenizer, cache, "float32", latest_only=True)
    assert damage_of(theirs) is None
    ctranslate2.Translator(str(theirs))  # the other process loads it
    assert not crashed.exists() and not unleased.exists()

    other_process.release()  # it moved on (its next validation, or it ended)
    latest, _ = converted_model(_variant(model, 2), tokenizer, cache, "float32", latest_only=True)
    assert sorted(path.name for path in root.iterdir()) == [latest.name, f"{latest.name}.lock"]
    assert not theirs.exists() and not ours.exists()


def test_a_conversion_another_process_published_first_is_kept(trained, tmp_path):
    """Two processes converting the same content at once (two runs testing one checkpoint): the second to finish
    keeps the first's entry, which the first may be loading, instead of renaming it away under it."""
    from textbox.decoding.ctranslate2_cache import _publish

    model, tokenizer = trained
    first, _ = converted_model(model, tokenizer, tmp_path / "cache", "float32")
    published = os.stat(first / "model.bin").st_ino
    second = tmp_path / "second"  # the other process's complete copy of the same conversion
    second.mkdir()
    for path in first.iterdir():
        (second / path.name).write_bytes(path.read_bytes())
    _publish(second, first)
    assert os.stat(first / "model.bin").st_ino == published and damage_of(first) is None


def test_saving_a_model_leaves_its_conversion_key_alone(tiny_bart, tokenizer, tmp_path):
    """save_pretrained sets config.architectures and config.dtype on the model it saves. On two processes only the
    main one saves checkpoint_best, so the other's key differed at every later validation and it converted the same
    weights again (and held a conversion of its own)."""
    from textbox.decoding.ctranslate2_cache import content_key

    model = copy.deepcopy(tiny_bart)
    before = content_key(model, tokenizer, "float32")
    model.save_pretrained(tmp_path / "checkpoint")
    assert model.config.architectures and content_key(model, tokenizer, "float32") == before
