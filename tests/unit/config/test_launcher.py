"""The launcher's settings (ACCELERATE_* environment variables) against the config, checked before anything runs."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT
from textbox.config import TextBoxUserError, load_config
from textbox.config.launcher import (Launch, agreed_launch, agreed_mixed_precision, gpu_id_list, launcher_problems,
                                     sharded_training)
from textbox.utils.suggest import where as _where
from textbox.config.schema import DEFAULTS

ACCELERATE_CONFIGS = sorted((PROJECT_ROOT / "configs" / "accelerate").glob("*.yaml"))


def problems(environ: dict[str, str], **set_keys) -> list[str]:
    values = {**DEFAULTS, **set_keys}
    sources = {key: "command line" for key in set_keys}
    return launcher_problems(values, sources, lambda name: _where(name, sources), environ)


def deepspeed_file(tmp_path: Path, settings: dict) -> dict[str, str]:
    path = tmp_path / "ds.json"
    path.write_text(json.dumps(settings))
    return {"ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_DEEPSPEED_CONFIG_FILE": str(path)}


def launcher_environment(config_file: Path) -> dict[str, str]:
    """The environment `accelerate launch --config_file <file> script.py` gives each process."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils.launch import prepare_deepspeed_cmd_env, prepare_multi_gpu_env

    args = launch_command_parser().parse_args(["--config_file", str(config_file), "script.py"])
    args, defaults, precision_from_file = _validate_launch_command(args)
    if args.use_deepspeed:  # as accelerate's launch_command does before it
        fields = list(defaults.deepspeed_config.keys()) if defaults else []
        args.deepspeed_fields_from_accelerate_config = ",".join(fields + ["mixed_precision"] * precision_from_file)
        return prepare_deepspeed_cmd_env(args)[1]
    return prepare_multi_gpu_env(args)


@pytest.mark.parametrize("config_file", ACCELERATE_CONFIGS, ids=lambda path: path.name)
def test_every_accelerate_config_is_valid_for_accelerate_and_agrees_with_the_defaults(config_file: Path):
    from accelerate.commands.config.config_args import ClusterConfig

    settings = ClusterConfig.from_yaml_file(str(config_file))  # unknown keys or bad values raise
    assert settings.distributed_type.value in ("FSDP", "DEEPSPEED")
    environ = launcher_environment(config_file)
    assert environ.get("ACCELERATE_USE_FSDP") == "true" or environ.get("ACCELERATE_USE_DEEPSPEED") == "true"
    assert problems(environ) == []  # decoding_backend=auto decodes with transformers where the weights are split
    whole_weights = config_file.name == "deepspeed_zero2.yaml"  # ZeRO-2 keeps every parameter on every process
    assert (problems(environ, decoding_backend="ctranslate2") == []) is whole_weights
    assert (sharded_training(environ) is None) is whole_weights


def test_the_shipped_configs_are_the_three_the_docs_name():
    assert [path.name for path in ACCELERATE_CONFIGS] == ["deepspeed_zero2.yaml", "deepspeed_zero3.yaml",
                                                          "fsdp.yaml"]
    zero3 = launcher_environment(PROJECT_ROOT / "configs" / "accelerate" / "deepspeed_zero3.yaml")
    assert zero3["ACCELERATE_DEEPSPEED_ZERO_STAGE"] == "3"
    assert zero3["ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL"] == "true"  # consolidated checkpoint_best
    fsdp = launcher_environment(PROJECT_ROOT / "configs" / "accelerate" / "fsdp.yaml")
    assert (fsdp["FSDP_VERSION"], fsdp["FSDP_STATE_DICT_TYPE"]) == ("2", "FULL_STATE_DICT")


def test_deepspeed_accumulation_against_ours_names_both(tmp_path: Path):
    found = problems(deepspeed_file(tmp_path, {"gradient_accumulation_steps": 4}))
    assert len(found) == 1 and "accumulation_steps (default)=1" in found[0]
    assert "gradient_accumulation_steps=4 in DeepSpeed config" in found[0]
    assert problems(deepspeed_file(tmp_path, {"gradient_accumulation_steps": "auto"})) == []
    assert "--accumulation_steps=2" in problems(deepspeed_file(tmp_path, {}), accumulation_steps=2)[0]


def test_our_optimizer_and_scheduler_against_the_engines(tmp_path: Path):
    environ = deepspeed_file(tmp_path, {"optimizer": {"type": "AdamW", "params": {"lr": 0.001}},
                                        "scheduler": {"type": "WarmupLR"}})
    assert problems(environ) == []  # nothing of ours set: the engine's are used
    found = problems(environ, optimizer="sgd", learning_rate=0.01, scheduler="linear")
    assert any("--optimizer='sgd' and the optimizer of DeepSpeed config" in p and "(AdamW)" in p for p in found)
    assert any("--learning_rate=0.01 and lr=0.001" in p for p in found)
    assert any("--scheduler='linear' and the scheduler of DeepSpeed config" in p for p in found)


def test_mixed_precision_mismatch(tmp_path: Path):
    environ = deepspeed_file(tmp_path, {"fp16": {"enabled": True}})
    assert "--mixed_precision=bf16 and fp16.enabled=true" in problems(environ, mixed_precision="bf16")[0]
    assert problems(environ, mixed_precision="fp16") == []
    launcher_bf16 = {**environ, "ACCELERATE_MIXED_PRECISION": "bf16"}
    assert "mixed_precision (default)=bf16 and fp16.enabled=true" in problems(launcher_bf16)[0]
    assert problems(deepspeed_file(tmp_path, {"bf16": {"enabled": "auto"}}), mixed_precision="bf16") == []


def test_clipping_and_micro_batch(tmp_path: Path):
    environ = deepspeed_file(tmp_path, {"gradient_clipping": 0.5, "train_micro_batch_size_per_gpu": 4})
    assert problems(environ) == []  # our defaults give way
    found = problems(environ, grad_clip=2.0, train_batch_size=8)
    assert any("--grad_clip=2.0 and gradient_clipping=0.5" in p for p in found)
    assert any("--train_batch_size=8 and train_micro_batch_size_per_gpu=4" in p for p in found)
    inline = {"ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_GRADIENT_CLIPPING": "0.5"}
    assert "gradient_clipping=0.5 in the launcher's DeepSpeed settings" in problems(inline, grad_clip=2.0)[0]


def test_a_bad_deepspeed_file_is_named(tmp_path: Path):
    bad = tmp_path / "ds.json"
    bad.write_text("{'no': json")
    found = problems({"ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_DEEPSPEED_CONFIG_FILE": str(bad)})
    assert found == [f"the launcher's DeepSpeed config file {bad} is not valid JSON (line 1: Expecting property "
                     f"name enclosed in double quotes)"]
    missing = problems({"ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_DEEPSPEED_CONFIG_FILE": str(tmp_path / "x")})
    assert "cannot be read" in missing[0]


def test_the_launchers_gradient_accumulation_is_refused_for_ours():
    found = problems({"ACCELERATE_GRADIENT_ACCUMULATION_STEPS": "4"})
    assert len(found) == 1 and "use --accumulation_steps=4" in found[0]
    assert problems({"ACCELERATE_GRADIENT_ACCUMULATION_STEPS": "1"}) == []


def test_sharded_training_refuses_efficient_methods():
    found = problems({"ACCELERATE_USE_FSDP": "true"}, efficient_methods=["lora"], decoding_backend="transformers")
    assert len(found) == 1 and "with FSDP" in found[0]


def test_a_gpu_id_list_shorter_than_the_local_processes_is_refused():
    assert problems({"LOCAL_WORLD_SIZE": "2"}, gpu_id=[0, 1]) == []
    assert problems({"LOCAL_WORLD_SIZE": "2"}, gpu_id="0,1,2") == []
    found = problems({"LOCAL_WORLD_SIZE": "4"}, gpu_id="0,1")
    assert found == ["--gpu_id=0,1 names 2 device(s) for the 4 processes the launcher starts on this machine; give "
                     "one id per process (e.g. --gpu_id=0,1,2,3) or start fewer (--num_processes)"]
    assert problems({}, gpu_id=3) == []  # one process


def test_ctranslate2_is_refused_where_the_weights_are_sharded(tmp_path: Path):
    found = problems({"ACCELERATE_USE_FSDP": "true"}, decoding_backend="ctranslate2")
    assert found == ["--decoding_backend=ctranslate2 with FSDP: CTranslate2 converts the whole model's weights, "
                     "which are split over the processes here; use --decoding_backend=auto or transformers "
                     "(generate runs on the sharded model)"]
    assert problems({"ACCELERATE_USE_FSDP": "true"}) == []  # auto: transformers decodes (textbox.decoding.engine)
    zero3 = deepspeed_file(tmp_path, {"zero_optimization": {"stage": 3}})
    assert "with DeepSpeed ZeRO-3" in problems(zero3, decoding_backend="ctranslate2")[0]
    assert sharded_training(zero3) == "DeepSpeed ZeRO-3"
    zero2 = deepspeed_file(tmp_path, {"zero_optimization": {"stage": 2}})
    assert problems(zero2, decoding_backend="ctranslate2") == [] and sharded_training(zero2) is None


def _agreed(config) -> str:
    return agreed_mixed_precision(config)


@pytest.mark.parametrize("launcher, arguments, chosen", [
    (None, ["--mixed_precision=bf16"], "bf16"),  # plain python: the config decides
    ("bf16", [], "bf16"),  # accelerate launch --mixed_precision bf16, config left at its default
    ("no", ["--mixed_precision=bf16"], "bf16"),  # launch without the flag exports 'no': the config decides
    ("bf16", ["--mixed_precision=bf16"], "bf16"),  # both say the same
])
def test_precision_comes_from_whichever_of_launcher_and_config_set_it(monkeypatch, launcher, arguments, chosen):
    if launcher is None:
        monkeypatch.delenv("ACCELERATE_MIXED_PRECISION", raising=False)
    else:
        monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", launcher)
    assert _agreed(load_config(arguments)) == chosen


@pytest.mark.parametrize("launcher, configured", [("bf16", "no"), ("fp16", "bf16")])
def test_launcher_and_config_disagreeing_is_an_error(monkeypatch, launcher, configured):
    monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", launcher)
    with pytest.raises(TextBoxUserError, match=f"--mixed_precision={configured} disagrees with the launcher's "
                                               f"--mixed_precision={launcher}"):
        _agreed(load_config([f"--mixed_precision={configured}"]))


@pytest.mark.parametrize("value, ids", [(1, ["1"]), ("0,1", ["0", "1"]), ([2, 3], ["2", "3"]), (" 4 ", ["4"])])
def test_gpu_id_forms_name_the_devices(value, ids):
    assert gpu_id_list(value) == ids


def test_the_launch_names_the_sharded_training_the_launcher_asks_for():
    config = load_config(["--gpu_id=0,1"])
    assert agreed_launch(config, {"ACCELERATE_USE_FSDP": "true"}).gpu_only.startswith("FSDP")
    assert agreed_launch(config, {"ACCELERATE_USE_DEEPSPEED": "true"}).gpu_only.startswith("DeepSpeed")
    assert agreed_launch(config, {}) == Launch(["0", "1"], "no", None)
    assert agreed_launch(load_config([]), {}).gpu_ids is None
