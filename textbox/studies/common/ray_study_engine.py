"""--engine=ray, what every study shares: the Ray session (a local instance or a joined cluster) and runs as Ray
tasks (the seed study). The search's Tune trials are in textbox/studies/search/tune_search.py.

Imported only when a study runs on Ray (it imports ray at the top). What is recorded (seeds.csv, trials.csv ...)
stays with the driver's own code: each run's Outcome is handed to the same recorder as on the local engine.

- Devices: a run gets the resources of --trial_resources; Ray sets its CUDA_VISIBLE_DEVICES (no gpu_id).
- A worker that dies makes its run a failed row (a task's max_retries=0): no hang.
- A driver that dies (even by ``kill -9``) takes every process of its local Ray instance with it.
"""
from __future__ import annotations

import contextlib
import os
import socket
from typing import Any, Callable, Iterator

import ray
from ray._private.services import canonicalize_bootstrap_address_or_die

from textbox.config import TextBoxUserError
from textbox.studies.common.study_engine import StudyEngine
from textbox.studies.common.runner import Job, JobKey, Outcome, Runner, execute
from textbox.utils.orphans import marked_descendants_end_with_this_process


@contextlib.contextmanager
def ray_session(engine: StudyEngine) -> Iterator[None]:
    """Start a local Ray instance (no --ray_address) or join a cluster, and always let go of it. Every process of
    a local instance ends with the driver, even one killed with ``kill -9`` (textbox.utils.orphans); a joined
    cluster is not ours to end (Ray stops the driver's tasks there itself)."""
    with contextlib.ExitStack() as stack:
        if not engine.address:
            stack.enter_context(marked_descendants_end_with_this_process())
        yield stack.enter_context(_ray_session(engine))


@contextlib.contextmanager
def _ray_session(engine: StudyEngine) -> Iterator[None]:
    os.environ.setdefault("RAY_CHDIR_TO_TRIAL_DIR", "0")  # trials keep the driver's directory: relative paths hold
    try:
        if engine.address:
            _check_answers(engine.address)
        # "local": a new instance even where an earlier `ray start` left its address behind (ray.init() with no
        # address would join that one, and wait without end when it is gone)
        ray.init(address=engine.address or "local", include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"RAY_CHDIR_TO_TRIAL_DIR": "0"}})
    except (ConnectionError, RuntimeError, ValueError) as error:
        where = f"the Ray cluster at --ray_address={engine.address}" if engine.address else "a local Ray instance"
        raise TextBoxUserError(f"cannot start or join {where}: {error}; check that `ray start --head` runs there "
                               f"(ray status; a cluster with token authentication, `ray start`'s default, also needs "
                               f"RAY_AUTH_MODE=token here), or leave --ray_address out for a local instance") from None
    try:
        yield
    finally:
        ray.shutdown()


ANSWER_SECONDS = 10.0


def _check_answers(address: str) -> None:
    """ray.init waits without end where nothing answers at a cluster's address (measured: still waiting after 10
    minutes on a closed port); one TCP connection first bounds the wait. 'auto' is the address of the cluster
    `ray start` left on this machine (ConnectionError when there is none)."""
    target = address.removeprefix("ray://")
    if target == "auto":
        target = canonicalize_bootstrap_address_or_die("auto")
    host, _, port = target.rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=ANSWER_SECONDS):
            pass
    except (OSError, ValueError) as error:
        raise ConnectionError(f"nothing answers at {target} within {ANSWER_SECONDS:.0f} s ({error})") from None


def _task_options(resources: dict[str, float]) -> dict[str, Any]:
    return {"num_cpus": resources.get("cpu", 0), "num_gpus": resources.get("gpu", 0)}


# --- seeds (and any list of independent runs): one Ray task each ---------------------------------------------

def run_jobs_on_ray(jobs: list[Job[JobKey]], on_outcome: Callable[[JobKey, Outcome], None],
                    resources: dict[str, float], runner: Runner) -> None:
    """Run every job as a Ray task holding ``resources``; hand each Outcome over as it finishes."""
    task = ray.remote(max_retries=0, **_task_options(resources))(execute)
    pending = {task.remote(job.overrides, runner): job.key for job in jobs}
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                key = pending.pop(ref)
                try:
                    outcome = ray.get(ref)
                except ray.exceptions.RayError as error:  # the worker died, or the run was stopped in it
                    outcome = Outcome(None, f"the Ray worker running it failed: {first_line(error)}", str(error), 0.0)
                on_outcome(key, outcome)
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"


def tune_resources(resources: dict[str, float]) -> dict[str, float]:
    """--trial_resources as Tune's with_resources takes them (no zero amounts)."""
    return {name: amount for name, amount in resources.items() if amount}
