"""User-facing errors: a message that names the key, file or line and what to do, and exit code 2."""
from __future__ import annotations

USAGE_EXIT_CODE = 2


class TextBoxError(Exception):
    """A run that cannot go on for a reason the message fully explains: printed without a traceback."""

    exit_code = 1


class TextBoxUserError(TextBoxError):
    """A problem with the user's input (config, data files, paths). Printed without a traceback."""

    exit_code = USAGE_EXIT_CODE


class RunInterrupted(TextBoxError):
    """SIGINT/SIGTERM: checkpoint_last was saved; exit with the conventional 128 + signal number."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code


class EvaluationInterrupted(RunInterrupted):
    """SIGINT/SIGTERM during the test pass (or --input_file generation): what training computed is kept, the run
    is marked FAILED with the message, which says how to finish it."""


class ConfigError(TextBoxUserError):
    """Every problem found in a configuration, reported together."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        count = len(self.problems)
        header = f"{count} configuration problem{'s' if count != 1 else ''}:"
        super().__init__("\n".join([header, *(f"  - {p}" for p in self.problems)]))

    def __reduce__(self) -> tuple[type, tuple[list[str]]]:
        """Pickled by its problems (a worker process's error, textbox.data.parallel), not by its message."""
        return type(self), (self.problems,)


class DataError(TextBoxUserError):
    """A dataset file that cannot be used: missing, empty, mismatched or undecodable."""
