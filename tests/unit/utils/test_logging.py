"""Run logging: console lines never share a progress bar's line; library chatter goes to project.log only; lines
logged before the run directory exists reach project.log; a study's runs are silent on the console."""
from __future__ import annotations

import io
import logging
import re
import sys
import warnings

import pytest
from tqdm import tqdm

from textbox.utils import logging as run_logging

BAR = re.compile(r"\d+%\|")  # tqdm's "40%|████" part
LOG_LINE = re.compile(r"\d\d:\d\d:\d\d (INFO|WARNING|ERROR) ")


def visible_lines(text: str) -> list[str]:
    """What a terminal shows: each '\\r' returns to the line's start, and later characters overwrite earlier ones."""
    shown = []
    for raw in text.split("\n"):
        line: list[str] = []
        for part in raw.split("\r"):
            line[:len(part)] = part
        shown.append("".join(line).rstrip())
    return shown


def mixed_lines(text: str) -> list[str]:
    return [line for line in visible_lines(text) if BAR.search(line) and LOG_LINE.search(line)]


@pytest.fixture(autouse=True)
def restore_logging():
    """These tests reconfigure process-wide loggers and warning capture: put them back afterwards."""
    names = [run_logging.LOGGER_NAME, *run_logging.LIBRARY_LOGGERS]
    saved = {name: (list(logging.getLogger(name).handlers), logging.getLogger(name).propagate) for name in names}
    yield
    logging.captureWarnings(False)
    for name, (handlers, propagate) in saved.items():
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
            handler.close()
        for handler in handlers:
            logger.addHandler(handler)
        logger.propagate = propagate


def test_the_terminal_emulation_sees_a_log_line_written_after_a_bar():
    """The check below can fail: a plain stream handler puts the line right after the bar."""
    stream = io.StringIO()
    bar = tqdm(total=10, file=stream, mininterval=0)
    bar.update(4)
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S"))
    handler.emit(logging.LogRecord("textbox", logging.INFO, __file__, 1, "step 4", None, None))
    bar.close()
    assert mixed_lines(stream.getvalue())


def test_a_console_line_never_lands_on_a_progress_bar_line():
    stream = io.StringIO()
    handler = run_logging.console_handler()
    handler.setStream(stream)
    bar = tqdm(total=10, file=stream, mininterval=0)
    for step in range(10):
        bar.update(1)
        handler.emit(logging.LogRecord("textbox", logging.INFO, __file__, 1, f"step {step}", None, None))
    bar.close()
    lines = visible_lines(stream.getvalue())
    assert not mixed_lines(stream.getvalue())
    assert sum(bool(LOG_LINE.search(line)) for line in lines) == 10
    assert any(BAR.search(line) for line in lines)  # the bar is still drawn


def test_library_warnings_go_to_project_log_only(tmp_path, capsys):
    logger = run_logging.start_logging(is_main_process=True)
    logger.info("reading the data")
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # the project's pytest settings ignore FutureWarning; python shows it
        warnings.warn("peft says this will change", FutureWarning)
    logging.getLogger("transformers.modeling_utils").warning("Some weights of X were not initialized")
    logging.getLogger("accelerate.accelerator").warning("an accelerate notice")
    run_logging.attach_log_file(tmp_path)
    logging.getLogger("datasets.builder").warning("a datasets notice")
    logger.info("training")
    console = capsys.readouterr().err
    log = (tmp_path / "project.log").read_text()
    for chatter in ("peft says this will change", "Some weights of X", "an accelerate notice", "a datasets notice"):
        assert chatter in log and chatter not in console
    assert "FutureWarning" in log
    for ours in ("reading the data", "training"):  # ours: on the console and, earlier lines included, in the log
        assert ours in console and ours in log
    assert log.index("reading the data") < log.index("Some weights of X") < log.index("training")


def test_project_log_holds_plain_text_without_terminal_colours(tmp_path):
    """transformers titles its load report in bold (ESC[1m ... ESC[0m): project.log keeps the words only."""
    run_logging.start_logging(is_main_process=True)
    logging.getLogger("transformers.modeling_utils").warning("\x1b[1mBertLMHeadModel LOAD REPORT\x1b[0m from: x")
    run_logging.attach_log_file(tmp_path)
    log = (tmp_path / "project.log").read_text()
    assert "BertLMHeadModel LOAD REPORT from: x" in log and "\x1b" not in log


def test_a_library_line_logged_on_every_call_reaches_the_log_once(tmp_path, capsys):
    """bitsandbytes' int8 layers log that they cast their inputs on every forward."""
    run_logging.start_logging(is_main_process=True)
    run_logging.attach_log_file(tmp_path)
    cast = logging.getLogger("bitsandbytes.autograd._functions")
    for _ in range(3):
        cast.warning("MatMul8bitLt: inputs will be cast from %s to float16 during quantization", "torch.float32")
    logging.getLogger("bitsandbytes.backends.cpu.ops").warning("another notice")
    for _ in range(2):
        logging.getLogger("transformers.generation").warning("a repeated transformers line")
    log = (tmp_path / "project.log").read_text()
    assert log.count("MatMul8bitLt: inputs will be cast") == 1 and "another notice" in log
    assert log.count("a repeated transformers line") == 2  # other libraries' lines are all kept
    assert "MatMul8bitLt" not in capsys.readouterr().err


def test_file_only_lines_stay_off_the_console(tmp_path, capsys):
    run_logging.setup_logging(tmp_path, is_main_process=True)
    run_logging.log_to_file(logging.ERROR, "Traceback (most recent call last): ...")
    assert "Traceback" not in capsys.readouterr().err
    assert "Traceback" in (tmp_path / "project.log").read_text()
    assert run_logging.log_file_path() == tmp_path / "project.log"


def test_other_processes_write_no_file_and_only_warnings(capsys):
    logger = run_logging.start_logging(is_main_process=False)
    logger.info("an info line")
    logger.warning("a warning")
    assert capsys.readouterr().err.count("\n") == 1
    assert run_logging.log_file_path() is None


def test_a_silenced_console_shows_nothing_and_the_log_keeps_everything(tmp_path, capsys):
    with run_logging.silenced_console():
        logger = run_logging.setup_logging(tmp_path, is_main_process=True)
        logger.info("a run inside a study")
        bar = tqdm(total=3)  # file=None: the bar writes to sys.stderr, silenced here
        bar.update(3)
        bar.close()
        print("library output", file=sys.stderr)
    assert capsys.readouterr().err == ""
    assert "a run inside a study" in (tmp_path / "project.log").read_text()
    logger = run_logging.setup_logging(tmp_path, is_main_process=True)  # outside: the console is back
    logger.info("after the study")
    assert "after the study" in capsys.readouterr().err


def test_after_a_run_its_log_file_is_closed_and_left_alone(tmp_path):
    logger = run_logging.setup_logging(tmp_path, is_main_process=True)
    logger.info("during the run")
    run_logging.release_log_file()
    logging.getLogger("transformers.modeling_utils").warning("after the run")
    logger.info("after the run too")
    log = (tmp_path / "project.log").read_text()
    assert "during the run" in log and "after the run" not in log
    assert run_logging.log_file_path() is None


def test_progress_bars_follow_tqdm_disable_and_the_terminal(monkeypatch):
    """TQDM_DISABLE was ignored: we pass tqdm's disable ourselves, which overrides tqdm's own reading of it."""
    import io

    from tqdm.auto import tqdm

    from textbox.utils.progress import bar_disabled

    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    assert bar_disabled(False) is True and bar_disabled(True) is None
    written = io.StringIO()  # not a terminal: tqdm draws nothing when disable is None
    for _ in tqdm(range(3), file=written, disable=bar_disabled(True)):
        pass
    assert written.getvalue() == ""
    monkeypatch.setenv("TQDM_DISABLE", "1")
    assert bar_disabled(True) is True
    monkeypatch.setenv("TQDM_DISABLE", "0")
    assert bar_disabled(True) is False
