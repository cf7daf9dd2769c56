"""Multi-node DDP: two `accelerate launch` launchers (one per "machine", one process each, gloo) form one
2-process run with the same results as one launcher with --num_processes 2. Each launcher runs in its own working
directory with a relative --saved_dir and --cache_dir, as two machines that share no disk would."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT
from tests.helpers import TINY_MODEL_ARGS, free_port, make_copy_dataset, offline_env, run_two_processes

pytestmark = pytest.mark.slow


def _machine_launcher(rank: int, port: int) -> list[str]:
    """docs/distributed.md's command for machine ``rank`` of 2, with 127.0.0.1 for the first machine's address."""
    return [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_machines", "2",
            "--machine_rank", str(rank), "--main_process_ip", "127.0.0.1", "--main_process_port", str(port),
            "--num_processes", "2", "--mixed_precision", "no", "--dynamo_backend", "no"]


def weights_hash(checkpoint: Path) -> str:
    """sha256 of the saved tensors (names and values), independent of the file's metadata."""
    from safetensors.torch import load_file

    tensors = load_file(checkpoint / "model.safetensors")
    digest = hashlib.sha256()
    for name in sorted(tensors):
        digest.update(name.encode())
        digest.update(tensors[name].contiguous().numpy().tobytes())
    return digest.hexdigest()


def _two_machines(tmp_path: Path, args: list[str]) -> list[Path]:
    """One run of the two launchers, each in its own working directory (machine0/, machine1/)."""
    port = free_port()
    machines = [tmp_path / f"machine{rank}" for rank in (0, 1)]
    launched = []
    for rank, machine in enumerate(machines):
        machine.mkdir(exist_ok=True)
        launched.append(subprocess.Popen([*_machine_launcher(rank, port), str(PROJECT_ROOT / "run_textbox.py"),
                                          *args], cwd=machine, env=offline_env(ACCELERATE_USE_CPU="true"), stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True))
    try:
        outputs = [process.communicate(timeout=300) for process in launched]
    finally:  # a hung launcher must not outlive the test
        for process in launched:
            if process.poll() is None:
                process.kill()
                process.wait()
    for process, (_, stderr) in zip(launched, outputs):
        assert process.returncode == 0, stderr[-3000:]
    return machines


def test_two_launchers_equal_one_launcher_and_resume_on_their_own_disks(tmp_path: Path):
    """One launcher trains 12 steps straight; two launchers train 8, then --resume to 12, each machine from its own
    checkpoint_last: the same weights and test generations."""
    data = make_copy_dataset(tmp_path / "copy")
    args = [*TINY_MODEL_ARGS, f"--data_path={data}", "--dataset=copy", "--valid_steps=4", "--valid_strategy=step",
            "--seed=7", "--saved_dir=saved", "--cache_dir=cache", "--filename=run"]
    single_dir = tmp_path / "single"
    single_dir.mkdir()
    single = run_two_processes([*args, "--max_steps=12"], single_dir, timeout=300)
    assert single.returncode == 0, single.stderr[-3000:]

    machines = _two_machines(tmp_path, [*args, "--max_steps=8"])
    remote = machines[1] / "saved" / "run"
    # machine 1 keeps only what its processes read back (checkpoints, and config.yaml for --resume); the run's
    # records (results, logs, generations) are machine 0's alone
    assert sorted(path.name for path in remote.iterdir()) == ["checkpoint_best", "checkpoint_last", "config.yaml"]
    assert sorted(path.name for path in (remote / "checkpoint_last").glob("random_states_*")) == \
        ["random_states_1.pkl"]
    _two_machines(tmp_path, [*args, "--max_steps=12", "--resume=True"])

    one, two = single_dir / "saved" / "run", machines[0] / "saved" / "run"
    assert "resumed from saved/run/checkpoint_last: step 8" in (two / "project.log").read_text()
    assert "2 process(es)" in (two / "project.log").read_text()
    assert weights_hash(two / "checkpoint_best") == weights_hash(one / "checkpoint_best")
    assert weights_hash(remote / "checkpoint_best") == weights_hash(one / "checkpoint_best")
    assert (two / "generation.txt").read_text() == (one / "generation.txt").read_text()
    scores = [json.loads((run / "results.json").read_text())["test"] for run in (one, two)]
    assert scores[0] == scores[1]
    print("checkpoint_best weights sha256, one launcher:", weights_hash(one / "checkpoint_best"),
          "two launchers:", weights_hash(two / "checkpoint_best"))
