"""What a search keeps on disk so that an interrupted one resumes: settings.json, trials.json, engine.json.

trials.json holds every finished trial and is rewritten atomically after each one, so a kill at any
moment leaves the previous complete list. A trial that was running when the search stopped is not in
it: on the local engine a resumed search suggests it again under a new trial id (its directory is left as
it was). engine.json (Ray searches only) says that Tune's own record (tune/) continues the search, and with
which --max_evals and --early_stop it was started.
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from textbox.config import TextBoxUserError
from textbox.studies.common.directory import create_study_directory
from textbox.utils.atomic import remove_stale_staging, write_text_atomic

TRIAL_DIR = re.compile(r"trial-(\d+)$")


@dataclass(frozen=True)
class TrialRecord:
    """One finished trial. ``score`` is the selection score (higher is better); None when it failed."""

    tid: int
    params: dict[str, object]
    raw: dict[str, object]  # hyperopt's encoding of params, replayed into the algorithm on resume
    score: float | None
    valid: dict[str, float]
    seconds: float
    error: str | None
    run_dir: str
    stopped: bool = False  # stopped early by the scheduler (--early_stop): no score, its last figures in valid

    @property
    def status(self) -> str:
        return "stopped" if self.stopped else "failed" if self.score is None else "ok"


ENGINE_FILE = "engine.json"


def trial_name(tid: int) -> str:
    return f"trial-{tid:03d}"


class SearchStore:
    def __init__(self, directory: Path, records: list[TrialRecord]):
        self.directory = directory
        self.records = records

    @classmethod
    def open(cls, directory: Path, settings: dict[str, object], resume: bool) -> "SearchStore":
        """Start a search in an empty directory, or (resume) reload one started with the same settings."""
        settings = _normalise(settings)
        if not resume:
            create_study_directory(directory, "continue that search with --resume=True, or choose another "
                                              "--filename (or leave it unset for a timestamped directory)")
            write_text_atomic(directory / "settings.json", json.dumps(settings, indent=2) + "\n")
            return cls(directory, [])
        saved_path = directory / "settings.json"
        if not saved_path.is_file():
            raise TextBoxUserError(f"--resume=True: {directory} holds no search (no settings.json); give the "
                                   f"search directory with --saved_dir and --filename")
        saved = json.loads(saved_path.read_text(encoding="utf-8"))
        changed = [name for name in settings if saved.get(name) != settings[name]]
        if changed:
            details = "; ".join(f"{name}: was {saved.get(name)}, now {settings[name]}" for name in changed)
            raise TextBoxUserError(f"--resume=True: {directory} was searched with other settings ({details}); "
                                   f"resume with the same --space file, --algo and run keys, or start a new search")
        remove_stale_staging(directory)  # what the interrupted driver left half-written (a table, a figure)
        trials_path = directory / "trials.json"
        rows = json.loads(trials_path.read_text(encoding="utf-8")) if trials_path.is_file() else []
        return cls(directory, [TrialRecord(**row) for row in rows])

    def add(self, record: TrialRecord) -> None:
        """Keep ``record``; it replaces an earlier one of its trial id (a Ray trial that Tune's restore ran again
        because the driver stopped between recording it and saving Tune's own record)."""
        self.records = [kept for kept in self.records if kept.tid != record.tid] + [record]
        rows = [asdict(record) for record in self.records]
        write_text_atomic(self.directory / "trials.json", json.dumps(rows, indent=2, default=repr) + "\n")

    def next_tid(self) -> int:
        """After every trial id used so far, finished or not (an interrupted trial's directory stays)."""
        on_disk = [int(match.group(1)) for path in self.directory.iterdir()
                   if (match := TRIAL_DIR.match(path.name))]
        return max([*on_disk, *(record.tid for record in self.records)], default=-1) + 1

    def best(self) -> TrialRecord | None:
        finished = [record for record in self.records if record.score is not None]
        return max(finished, key=lambda record: record.score, default=None)

    def interrupted_trials(self) -> list[str]:
        """Trial directories that no finished trial accounts for (the search stopped while they ran)."""
        recorded = {trial_name(record.tid) for record in self.records}
        return sorted(path.name for path in self.directory.iterdir()
                      if TRIAL_DIR.match(path.name) and path.name not in recorded)


def _normalise(settings: dict[str, object]) -> dict[str, object]:
    """As JSON would give it back (tuples become lists), so that saved and current settings compare."""
    return json.loads(json.dumps(settings, default=repr))


def check_engine_record(directory: Path, record: dict[str, object], resume: bool) -> None:
    """A new Ray search writes ``record`` (engine, max_evals, early_stop) to engine.json; a resumed search must
    run on the engine it started on (Tune restores its own record; the local engine reads trials.json), and on
    Ray with the same max_evals and early_stop, which Tune's restored record keeps."""
    path = directory / ENGINE_FILE
    if not resume:
        if record["engine"] == "ray":
            write_text_atomic(path, json.dumps(record, indent=2) + "\n")
        return
    saved = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"engine": "local"}
    if saved["engine"] != record["engine"]:
        raise TextBoxUserError(f"--resume=True: {directory} was searched with --engine={saved['engine']}; resume it "
                               f"with --engine={saved['engine']} (the same engine continues its own record of the "
                               f"trials)")
    changed = [f"--{name}={saved.get(name)} (now {record[name]})" for name in record
               if saved["engine"] == "ray" and saved.get(name) != record[name]]
    if changed:
        raise TextBoxUserError(f"--resume=True: Ray Tune continues {directory} as it was started: give "
                               f"{' and '.join(changed)}")
