"""What a search keeps on disk so that an interrupted one resumes: settings.json and trials.json.

trials.json holds every finished trial and is rewritten atomically after each one, so a kill at any
moment leaves the previous complete list. A trial that was running when the search stopped is not in
it: a resumed search suggests it again under a new trial id (its directory is left as it was).
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from textbox.config import TextBoxUserError
from textbox.study.directory import create_study_directory
from textbox.utils.atomic import write_text_atomic

TRIAL_DIR = re.compile(r"trial-(\d+)$")


@dataclass(frozen=True)
class TrialRecord:
    """One finished trial. ``score`` is the selection score (higher is better); None when it failed."""

    tid: int
    params: dict[str, Any]
    raw: dict[str, Any]  # hyperopt's encoding of params, replayed into the algorithm on resume
    score: float | None
    valid: dict[str, float]
    seconds: float
    error: str | None
    run_dir: str

    @property
    def status(self) -> str:
        return "failed" if self.score is None else "ok"


def trial_name(tid: int) -> str:
    return f"trial-{tid:03d}"


class SearchStore:
    def __init__(self, directory: Path, records: list[TrialRecord]):
        self.directory = directory
        self.records = records

    @classmethod
    def open(cls, directory: Path, settings: dict[str, Any], resume: bool) -> "SearchStore":
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
        trials_path = directory / "trials.json"
        rows = json.loads(trials_path.read_text(encoding="utf-8")) if trials_path.is_file() else []
        return cls(directory, [TrialRecord(**row) for row in rows])

    def add(self, record: TrialRecord) -> None:
        self.records.append(record)
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


def _normalise(settings: dict[str, Any]) -> dict[str, Any]:
    """As JSON would give it back (tuples become lists), so that saved and current settings compare."""
    return json.loads(json.dumps(settings, default=repr))
