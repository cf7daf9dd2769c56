"""The faults of test_fault_at_each_stage: install(stage, setattr) makes the function of that stage (the test's table
lists them) fail, through ``setattr`` (pytest's monkeypatch.setattr, which puts every function back after the test).
A fault that writes something first writes half of it into the staging copy the real code made, as a full or failing
disk does, so that the test sees what is left behind.

Run as a script, it is the worker of the two-processes test: run_textbox.py with the fault installed
(`TEXTBOX_FAULT_STAGE=<stage> [TEXTBOX_FAULT_RANK=<rank>] python fault_injector.py <run_textbox.py arguments>`;
under a launcher, which sets RANK, TEXTBOX_FAULT_RANK injects it on that process only).
"""
from __future__ import annotations

import errno
import pathlib
from pathlib import Path
from typing import Any, Callable

Setattr = Callable[[Any, str, Any], None]


def io_error(path: Path) -> OSError:
    return OSError(errno.EIO, "Input/output error (injected)", str(path))


def on_call(count: int, test: Callable[..., bool] = lambda *a, **k: True) -> Callable[..., bool]:
    """A predicate that is true on the ``count``-th call for which ``test`` is true."""
    seen = [0]

    def nth(*args: Any, **kwargs: Any) -> bool:
        if test(*args, **kwargs):
            seen[0] += 1
            return seen[0] == count
        return False

    return nth


def patcher(setattr_: Setattr) -> Callable[..., None]:
    def patch(owner: Any, name: str, fault: Callable[..., bool], raise_: Callable[..., BaseException]) -> None:
        """owner.name raises ``raise_(*args)`` when ``fault(*args)`` says so, and runs as before otherwise."""
        original = getattr(owner, name)

        def injected(*args: Any, **kwargs: Any) -> Any:
            if fault(*args, **kwargs):
                raise raise_(*args, **kwargs)
            return original(*args, **kwargs)

        setattr_(owner, name, injected)

    return patch


def half_written(into: Callable[..., Path], file: str) -> Callable[..., BaseException]:
    """Write half of ``file`` into the staging directory ``into(*args)`` names, then fail as a disk does."""
    def fail(*args: Any, **kwargs: Any) -> BaseException:
        directory = into(*args, **kwargs)
        (directory / file).write_bytes(b"half")
        return io_error(directory / file)

    return fail


def staging_is(name: str) -> Callable[[Path], bool]:
    """Whether a staging directory (``.<name>.partial-<pid>-<id>``, ``.<name>.tmp``) is one of ``name``'s."""
    return lambda staging: Path(staging).name.startswith(f".{name}.")


def install(stage: str, setattr_: Setattr) -> None:
    patch = patcher(setattr_)
    if stage == "reading":  # the train split's source file cannot be read (whole, or streamed: textbox.data.lines)
        denied = lambda self, *a, **k: PermissionError(errno.EACCES, "Permission denied (injected)", str(self))  # noqa: E731
        patch(pathlib.Path, "read_bytes", lambda self: self.name == "train.src", denied)
        patch(pathlib.Path, "open", lambda self, *a, **k: self.name == "train.src", denied)
    elif stage == "tokenising":  # the tokenised train split cannot be written to the cache
        from textbox.data import tokenize

        patch(tokenize, "_write", on_call(1), half_written(lambda path, *a, **k: Path(path).parent, "data.arrow"))
    elif stage == "building":  # the model cannot be built (a library's or the device's failure)
        from textbox.pipeline import recipe

        patch(recipe, "build_model", lambda *a, **k: True, lambda *a, **k: RuntimeError("injected fault while "
                                                                                       "building the model"))
    elif stage in ("checkpoint_best", "checkpoint-<step>"):  # the second write of that checkpoint fails half-way
        from textbox.trainer import checkpoint

        name = "checkpoint_best" if stage == "checkpoint_best" else "checkpoint-"
        patch(checkpoint, "save_model_files",
              on_call(2, lambda model, tmp, *a, **k: Path(tmp).name.startswith(f".{name}")),
              half_written(lambda model, tmp, *a, **k: Path(tmp), "model.safetensors"))
    elif stage == "checkpoint_last":  # the second save of checkpoint_last fails half-way
        from accelerate import Accelerator

        patch(Accelerator, "save_state", on_call(2),
              half_written(lambda self, output_dir=None, *a, **k: Path(output_dir), "model.safetensors"))
    elif stage == "validation":  # the second validation fails
        from textbox.evaluator.evaluator import Evaluator

        patch(Evaluator, "validate", on_call(2), lambda *a, **k: RuntimeError("injected fault while validating"))
    elif stage == "test decoding":  # decoding the test split fails
        from textbox.evaluator.evaluator import Evaluator

        patch(Evaluator, "generate", lambda self, model, loader, description: description == "test",
              lambda *a, **k: RuntimeError("injected fault while decoding the test split"))
    elif stage == "scoring":  # scoring the test split fails as a whole (not one metric: keep_going covers that)
        from textbox.evaluator import evaluator

        patch(evaluator, "compute_metrics", lambda *a, **k: True,
              lambda *a, **k: RuntimeError("injected fault while scoring"))
    elif stage == "results":  # results.json cannot be written (half of it is)
        def half_results(self: Path, data: str, *args: Any, **kwargs: Any) -> bool:
            if self.name.startswith(".results.json.partial"):
                original_write_text(self, data[:len(data) // 2], *args, **kwargs)
                return True
            return False

        original_write_text = pathlib.Path.write_text
        patch(pathlib.Path, "write_text", half_results, lambda self, *a, **k: io_error(self))
    else:
        raise ValueError(f"fault_injector: unknown stage {stage!r}")


if __name__ == "__main__":
    import os
    import runpy
    import sys

    on_rank = os.environ.get("TEXTBOX_FAULT_RANK")  # unset: every process
    if on_rank is None or os.environ.get("RANK", "0") == on_rank:
        install(os.environ["TEXTBOX_FAULT_STAGE"], setattr)
    sys.argv = [str(Path(__file__).resolve().parents[2] / "run_textbox.py"), *sys.argv[1:]]
    runpy.run_path(sys.argv[0], run_name="__main__")
