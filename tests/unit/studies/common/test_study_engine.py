"""--engine, --ray_address and --trial_resources: checked before anything starts (without importing ray:
tests/unit/test_light_imports.py)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import run_hyper
import run_multi_seed
from textbox.config import ConfigError
from textbox.studies.common.study_engine import DEFAULT_RESOURCES, check_study_engine

LOCAL = {"engine": "local", "ray_address": None, "trial_resources": None, "workers": 1}
RAY = {**LOCAL, "engine": "ray"}


def problems(options: dict, run_keys: dict | None = None) -> str:
    with pytest.raises(ConfigError) as caught:
        check_study_engine(options, run_keys or {})
    return str(caught.value)


def test_the_default_is_the_local_engine_and_ray_defaults_to_one_cpu_per_run(monkeypatch):
    assert check_study_engine(LOCAL, {}).name == "local"
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    engine = check_study_engine({**RAY, "ray_address": "127.0.0.1:6379"}, {})
    assert (engine.name, engine.address, engine.resources) == ("ray", "127.0.0.1:6379", DEFAULT_RESOURCES)
    assert check_study_engine({**RAY, "trial_resources": {"cpu": 2, "gpu": 1}}, {}).resources == {"cpu": 2, "gpu": 1}


def test_ray_options_with_the_local_engine_are_errors():
    message = problems({**LOCAL, "ray_address": "auto", "trial_resources": {"cpu": 2}})
    assert "--ray_address is for --engine=ray" in message and "--trial_resources is for --engine=ray" in message


def test_ray_missing_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert 'pip install -e ".[ray]"' in problems(RAY)


@pytest.mark.parametrize("options, run_keys, expected", [
    ({**RAY, "workers": 2}, {}, "--workers=2 is for --engine=local"),
    (RAY, {"gpu_id": 0}, "--gpu_id with --engine=ray: Ray gives each run its GPUs"),
    ({**RAY, "trial_resources": {"cpus": 2}}, {}, "unknown resource 'cpus'"),
    ({**RAY, "trial_resources": {"cpu": -1}}, {}, "'cpu' must be a number of at least 0, got -1"),
    ({**RAY, "trial_resources": {"cpu": "two"}}, {}, "'cpu' must be a number of at least 0"),
    ({**RAY, "trial_resources": {"cpu": 0}}, {}, "holds nothing"),
    ({**RAY, "ray_address": " "}, {}, "--ray_address is empty"),
])
def test_options_that_do_not_fit_ray(monkeypatch, options, run_keys, expected):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    assert expected in problems(options, run_keys)


@pytest.mark.parametrize("main", [run_hyper.main, run_multi_seed.main])
def test_the_command_lines_exit_2_and_write_nothing(main, tmp_path: Path, capsys):
    args = ["--space=none.space", "--multi_seed=2", f"--saved_dir={tmp_path / 'saved'}", "--ray_address=auto"]
    args = [arg for arg in args if not arg.startswith("--space" if main is run_multi_seed.main else "--multi_seed")]
    assert main(args) == 2
    assert "--ray_address is for --engine=ray; add --engine=ray" in capsys.readouterr().err
    assert not (tmp_path / "saved").exists()


def test_help_and_option_errors(capsys):
    """(That they do not import ray: tests/unit/test_light_imports.py.)"""
    run_hyper.main(["--help"])
    run_multi_seed.main(["--help"])
    run_hyper.main(["--space=x", "--engine=ray", "--workers=2"])
    out, err = capsys.readouterr()
    assert "--engine: str (local|ray) = 'local'" in out and "--trial_resources" in out
    assert "--workers=2 is for --engine=local" in err


@pytest.mark.slow
def test_a_study_started_by_a_launcher_is_refused_once_before_anything_starts(tmp_path: Path):
    """`accelerate launch run_hyper.py` would run one whole search per process into the same directory."""
    from tests.helpers import run_two_processes

    (tmp_path / "lr.space").write_text("learning_rate choice [1e-3, 3e-3]\n")
    done = run_two_processes(["--space=lr.space", "--algo=exhaustive", "--saved_dir=saved"], tmp_path,
                             script="run_hyper.py", timeout=300)
    assert done.returncode != 0
    assert done.stderr.count("this study was started as 2 processes (accelerate launch or torchrun)") == 1
    assert "--workers=N or --engine=ray" in done.stderr  # (accelerate's launcher adds its own ChildFailedError)
    assert not (tmp_path / "saved").exists()


def test_a_ray_address_where_nothing_answers_is_refused_in_bounded_time():
    """ray.init waited without end (over 10 minutes measured) on an address where no cluster answers."""
    import socket
    import time

    from textbox.config import TextBoxUserError
    from textbox.studies.common.study_engine import StudyEngine
    from textbox.studies.common.ray_study_engine import ray_session

    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(TextBoxUserError, match=f"--ray_address=127.0.0.1:{port}: nothing answers at "
                                               f"127.0.0.1:{port} within 10 s"):
        with ray_session(StudyEngine("ray", f"127.0.0.1:{port}", DEFAULT_RESOURCES)):
            pass
    assert time.monotonic() - started < 30
