"""checkpoint_best's model card: front matter a hub reads (figures that are numbers, NaN left out), and a failure
writing it costs the card alone (one error line), never the run."""
from __future__ import annotations

import logging
from pathlib import Path

import yaml

from textbox.pipeline.model_card import model_card, write_model_card

RESULTS = {"test": {"bleu": 12.5, "loss": float("nan")}, "valid": {"loss": 2.0},
           "metric_details": {"bleu": {"package": "sacrebleu", "version": "2.6.0", "signature": "nrefs:1|tok:13a"}},
           "versions": {"transformers": "5.0.0"}}


def test_the_front_matter_holds_the_numeric_test_figures(tiny_config, tmp_path: Path):
    config = tiny_config(model="bart", dataset="samsum", hub_name="knkarthick/samsum", data_format="hub")
    card = model_card(config, tmp_path / "run" / "checkpoint_best", RESULTS)
    front = yaml.safe_load(card.split("---\n")[1])
    assert (front["library_name"], front["pipeline_tag"], front["datasets"]) == (
        "transformers", "text2text-generation", ["knkarthick/samsum"])
    metrics = front["model-index"][0]["results"][0]["metrics"]
    assert metrics == [{"type": "bleu", "name": "bleu", "value": 12.5}]  # the NaN loss is left out
    assert "sacrebleu 2.6.0; signature nrefs:1|tok:13a" in card and "| valid | loss | 2.0000 |" in card


def test_a_card_that_cannot_be_written_costs_the_card_alone(tiny_config, tmp_path: Path, caplog):
    blocker = tmp_path / "not_a_directory"
    blocker.write_text("")
    with caplog.at_level(logging.ERROR):
        assert not write_model_card(tiny_config(), blocker / "checkpoint_best", RESULTS, logging.getLogger("t"))
    assert len(caplog.records) == 1 and caplog.records[0].getMessage().startswith("error: the model card")
