"""DistributedDataParallel failures whose fix is a TextBox key: reported as that fix, not as a torch traceback."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from textbox.config import TextBoxUserError

_UNUSED_PARAMETERS = "Expected to have finished reduction in the prior iteration"


def explain_ddp_error(error: RuntimeError) -> TextBoxUserError | None:
    """The user-facing error for a DDP failure with a known fix, or None for any other error."""
    if _UNUSED_PARAMETERS not in str(error):
        return None
    return TextBoxUserError("some model parameters received no gradient, which DistributedDataParallel does not "
                            "allow by default; rerun with --find_unused_parameters=True (torch said: "
                            f"{str(error).splitlines()[0]})")


@contextmanager
def explain_ddp_errors() -> Iterator[None]:
    """Re-raise DDP errors that explain_ddp_error knows as that TextBoxUserError; anything else unchanged."""
    try:
        yield
    except RuntimeError as error:
        explained = explain_ddp_error(error)
        if explained is None:
            raise
        raise explained from error
