"""The trackers as a researcher compares runs in them: one tiny trained run per tracker (a few steps, in-process),
its figures read back with the tracker's own reader: TensorBoard's EventAccumulator and hparams plugin, wandb's
offline run file, MLflow's file store. wandb and MLflow are the optional extra 'trackers': skipped without them."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
import torch

from textbox.config import load_config
from tests.helpers import TINY_MODEL_ARGS, make_copy_dataset

pytestmark = pytest.mark.slow

STEPS, VALID_EVERY = 4, 2


def _args(work: Path, tracker: str, *extra: str) -> list[str]:
    tiny = [arg for arg in TINY_MODEL_ARGS if not arg.startswith("--tracker=")]
    return [*tiny, f"--data_path={work / 'copy'}", "--dataset=copy", f"--max_steps={STEPS}", "--valid_strategy=step",
            f"--valid_steps={VALID_EVERY}", "--logging_steps=1", f"--saved_dir={work / 'saved'}",
            f"--cache_dir={work / 'cache'}", "--metrics=['bleu']", "--metrics_for_best_model=['bleu']",
            "--eval_batch_size=8", f"--tracker={tracker}", f"--filename={tracker}-run", *extra]


def _train(work: Path, tracker: str, *extra: str) -> tuple[Path, dict]:
    """One tiny run in this process: its run directory and results.json."""
    from accelerate.state import AcceleratorState, GradientState

    from textbox.pipeline import run

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: one thread is fastest, and robust on busy cores
    try:
        results = run(load_config(_args(work, tracker, *extra)))
    finally:
        torch.set_num_threads(threads)
        AcceleratorState._reset_state(reset_partial_state=True)
        GradientState._reset_state()
    return work / "saved" / f"{tracker}-run", results


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("trackers")
    make_copy_dataset(work / "copy", {"train": 32, "valid": 8, "test": 8})
    return work


@pytest.fixture(scope="module")
def tensorboard_run(work) -> tuple[Path, dict]:
    return _train(work, "tensorboard")


def _expected_final(results: dict) -> dict[str, float]:
    """The final figures results.json holds, under the trackers' tags."""
    return {**{f"test/{name}": value for name, value in results["test"].items()}, "best/step": results["best_step"],
            **{f"best/valid_{name}": value for name, value in results["valid"].items()}}


def test_tensorboard_holds_valid_and_test_figures_and_the_hparams_with_final_metrics(tensorboard_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import metadata, plugin_data_pb2

    run_dir, results = tensorboard_run
    events = EventAccumulator(str(run_dir / "textbox")).Reload()  # <run dir>/<project>, the default project
    scalars = events.Tags()["scalars"]
    assert [event.step for event in events.Scalars("valid/bleu")] == [2, 4]  # every validation, not only loss
    assert [event.step for event in events.Scalars("valid/loss")] == [2, 4]
    expected = _expected_final(results)
    assert {"test/bleu", "best/step", "best/valid_bleu"} <= set(expected)
    for tag, value in expected.items():
        assert tag in scalars, tag
        [event] = events.Scalars(tag)
        assert event.step == STEPS and event.value == pytest.approx(value, rel=1e-6), tag

    # the HPARAMS tab: one session in the run's own folder, the config as hparams, the final figures as metrics
    content = events.PluginTagToContent(metadata.PLUGIN_NAME)
    experiment = plugin_data_pb2.HParamsPluginData.FromString(content[metadata.EXPERIMENT_TAG]).experiment
    assert {info.name.tag for info in experiment.metric_infos} == set(expected)
    start = plugin_data_pb2.HParamsPluginData.FromString(content[metadata.SESSION_START_INFO_TAG]).session_start_info
    assert start.hparams["learning_rate"].number_value == pytest.approx(0.003)
    assert start.hparams["tracker_run_name"].string_value == "tensorboard-run"
    assert start.hparams["tracker_project"].string_value == "textbox"
    assert start.hparams["metrics_for_best_model"].string_value == "['bleu']"
    assert metadata.SESSION_END_INFO_TAG in content
    assert not list(run_dir.rglob("hparams.yml"))  # accelerate's metric-less hparams session is not written


def test_tensorboard_project_names_the_folder_and_the_log_says_where(tensorboard_run):
    run_dir, _ = tensorboard_run
    assert "tracker tensorboard: project 'textbox', run 'tensorboard-run'" in (run_dir / "project.log").read_text()


# --- wandb, offline ----------------------------------------------------------------------------------------------
def _wandb_records(run_file: Path):
    """The protobuf records of a wandb run file (.wandb): LevelDB's log format, 32 KiB blocks of checksummed
    chunks after a 7-byte header (':W&B', magic, version)."""
    from wandb.proto import wandb_internal_pb2

    data = run_file.read_bytes()
    assert data[:4] == b":W&B"
    block, header, position, pending = 32768, 7, 7, b""
    while position + header <= len(data):
        left = block - position % block
        if left < header:  # a block's tail too short for a chunk header is padding
            position += left
            continue
        _, length, kind = struct.unpack("<IHB", data[position:position + header])
        if length == 0 and kind == 0:
            position += left
            continue
        pending += data[position + header:position + header + length]
        position += header + length
        if kind in (1, 4):  # FULL or LAST: a whole record
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            pending = b""
            yield record


def test_wandb_offline_run_has_the_project_name_config_and_every_split(work, tmp_path, monkeypatch):
    wandb = pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    for quiet in ("WANDB_SILENT", "WANDB_X_DISABLE_STATS", "WANDB_DISABLE_GIT", "WANDB_DISABLE_CODE"):
        monkeypatch.setenv(quiet, "true")  # no system sampling, git or code capture: seconds less
    monkeypatch.setenv("WANDB_CONSOLE", "off")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_PROJECT", "from-the-environment")  # --tracker_project wins over it
    _, results = _train(work, "wandb", "--tracker_project=mypaper", "--tracker_run_name=lr-0.003")
    wandb.teardown()  # the run file is written by wandb's service process: wait until it has written everything
    [run_file] = tmp_path.glob("wandb/offline-run-*/run-*.wandb")
    records = list(_wandb_records(run_file))
    [run] = [record.run for record in records if record.WhichOneof("record_type") == "run"]
    assert (run.project, run.display_name) == ("mypaper", "lr-0.003")
    config = {item.key: json.loads(item.value_json) for record in records
              if record.WhichOneof("record_type") == "config" for item in record.config.update}
    assert config["learning_rate"] == 0.003 and config["tracker_project"] == "mypaper"
    logged: dict[str, list[tuple[int, float]]] = {}
    for record in records:
        if record.WhichOneof("record_type") == "history":
            items = {"/".join(item.nested_key) or item.key: json.loads(item.value_json) for item in record.history.item}
            for key, value in items.items():
                logged.setdefault(key, []).append((items["_step"], value))
    assert [step for step, _ in logged["valid/bleu"]] == [2, 4]
    assert logged["train/loss"][0][0] == 1
    for tag, value in _expected_final(results).items():
        assert logged[tag] == [(STEPS, pytest.approx(value))], tag


# --- MLflow, file store ------------------------------------------------------------------------------------------
def test_mlflow_file_store_has_the_run_name_params_and_test_metrics(work, monkeypatch):
    """No MLFLOW_TRACKING_URI: the file store saved_dir/mlruns, which MLflow 3 opens only when allowed."""
    mlflow = pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "mypaper")  # no --tracker_project: the environment's
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)  # the run allows the file store itself
    previous = mlflow.get_tracking_uri()
    try:
        _, results = _train(work, "mlflow")
    finally:
        mlflow.set_tracking_uri(previous)  # process-wide
    store = (work / "saved" / "mlruns").as_uri()
    client = MlflowClient(store)
    experiment = client.get_experiment_by_name("mypaper")
    [run] = client.search_runs([experiment.experiment_id])
    assert run.info.run_name == "mlflow-run" and run.info.status == "FINISHED"
    assert run.data.params["learning_rate"] == "0.003" and run.data.params["tracker_project"] == "mypaper"
    for tag, value in _expected_final(results).items():
        assert run.data.metrics[tag] == pytest.approx(value), tag
    assert [metric.step for metric in client.get_metric_history(run.info.run_id, "valid/bleu")] == [2, 4]
