"""run_multi_seed.py (the seed study): the same run under N seeds, to show how much of a result is chance.

The seeds are --seed, --seed+1, ..., --seed+N-1: the first run is the plain run, and any one of them is
reproduced alone by ``python run_textbox.py --seed=<s>`` with the same keys. Consecutive seeds share no random
stream (weights, dropout, data order: textbox.data.batching), so the spread is that of independent runs. The study
directory (saved_dir/multi_seed-<timestamp>, or saved_dir/filename) holds seed-<s>/ run directories, seeds.csv
(seed, status, every validation and test figure), summary.json, seeds.png and study.log.

Per figure: mean, sample standard deviation (n-1), min, max and the 95% t-interval of the mean,
mean ± t(0.975, n-1)·std/√n, with the t quantile from scipy (a declared dependency), cut to the figure's range
(BLEU in [0, 100], TER and the loss 0 and up: textbox.evaluator.metrics.figure_bounds): near a bound the symmetric
t-interval would otherwise claim impossible values.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from textbox.checks import load_checked_config
from textbox.config import TextBoxUserError
from textbox.config.schema import Key
from textbox.evaluator.metrics import figure_bounds
from textbox.studies.common.directory import create_study_directory, study_directory, study_logger
from textbox.studies.common.study_engine import ENGINE_OPTIONS, check_study_engine
from textbox.studies.common.tool_options import split_options, usage
from textbox.studies.common.spread import T_INTERVAL, Spread, spread
from textbox.studies.common.runner import Job, Outcome, Runner, run_jobs
from textbox.studies.common.tables import markdown_table, plot_distributions, write_csv
from textbox.utils.atomic import write_text_atomic

STUDY_OPTIONS = [
    Key("multi_seed", "int", None, "Number of seeds, each a full run: --seed, --seed+1, ...", "study"),
    Key("workers", "int", 1, "Runs at once, each in a worker process of its own.", "study"),
    *ENGINE_OPTIONS,
]
HELP = usage("usage: python run_multi_seed.py --multi_seed=N [--workers=N] [--engine=local|ray "
             "[--ray_address=auto|host:port] [--trial_resources=\"{'cpu': 1}\"]] [--key=value ...]", STUDY_OPTIONS)
SPLITS = ("valid", "test")


@dataclass(frozen=True)
class StudyResult:
    directory: Path
    figures: dict[str, list[float]]  # "test_bleu" -> one value per finished seed, in seed order
    spreads: dict[str, Spread]
    failed: dict[int, str]  # seed -> error
    table: str  # the printed summary

    def failure_message(self) -> str:
        return (f"{len(self.failed)} seed run(s) failed ({', '.join(map(str, self.failed))}); the summary covers "
                f"the others; errors are in {self.directory}/seeds.csv and seed-<s>/error.txt")


def derive_seeds(seed: int, count: int) -> list[int]:
    return [seed + offset for offset in range(count)]


def run_multi_seed(argv: list[str], runner: Runner | None = None) -> StudyResult:
    """Run every seed, write seeds.csv as they finish, then the summary (over the seeds that finished)."""
    if runner is None:
        from textbox.pipeline import run as runner
    options, run_keys = split_options(argv, STUDY_OPTIONS)
    engine = check_study_engine(options, run_keys)
    base = load_checked_config((), run_keys)
    if base.resume:
        raise TextBoxUserError("run_multi_seed starts every seed afresh; --resume=True continues one run: use python "
                               "run_textbox.py --resume=True --saved_dir=<study directory> --filename=seed-<s>")
    seeds = derive_seeds(base.seed, options["multi_seed"])
    directory = study_directory(base, "multi_seed")
    create_study_directory(directory, "choose another --filename (or leave it unset for a timestamped directory)")
    logger = study_logger(directory, "multi_seed")
    where = (f"workers={options['workers']}" if engine.name == "local" else
             f"engine=ray ({engine.address or 'local instance'}), {engine.resources} per run")
    logger.info(f"seed study in {directory}: seeds {seeds}, {where}")
    job_list = [Job(seed, {**run_keys, "seed": seed, "saved_dir": str(directory), "filename": f"seed-{seed}"})
                for seed in seeds]
    outcomes: dict[int, Outcome] = {}

    def finish(seed: int, outcome: Outcome) -> None:
        outcomes[seed] = outcome
        if outcome.error:
            write_text_atomic(directory / f"seed-{seed}" / "error.txt", outcome.traceback or outcome.error)
            logger.warning(f"seed {seed} failed after {outcome.seconds:.0f} s: {outcome.error}")
        else:
            logger.info(f"seed {seed} finished in {outcome.seconds:.0f} s ({len(outcomes)}/{len(seeds)})")
        _write_seeds_csv(directory, [seed for seed in seeds if seed in outcomes], outcomes)

    if engine.name == "ray":
        from textbox.studies.common.ray_study_engine import ray_session, run_jobs_on_ray

        with ray_session(engine):
            run_jobs_on_ray(job_list, finish, engine.resources, runner)
    else:
        jobs = iter(job_list)
        run_jobs(lambda: next(jobs, None), finish, options["workers"], runner)
    return _summarise(directory, seeds, outcomes)


def _figures(outcome: Outcome) -> dict[str, float]:
    results = outcome.results or {}
    return {f"{split}_{name}": value for split in SPLITS for name, value in results.get(split, {}).items()}


def _write_seeds_csv(directory: Path, seeds: list[int], outcomes: dict[int, Outcome]) -> None:
    names = list(dict.fromkeys(name for seed in seeds for name in _figures(outcomes[seed])))
    rows = [[seed, "failed" if outcomes[seed].error else "ok", *(_figures(outcomes[seed]).get(n) for n in names),
             round(outcomes[seed].seconds, 1), outcomes[seed].error] for seed in seeds]
    write_csv(directory / "seeds.csv", ["seed", "status", *names, "seconds", "error"], rows)


def _summarise(directory: Path, seeds: list[int], outcomes: dict[int, Outcome]) -> StudyResult:
    finished = [seed for seed in seeds if not outcomes[seed].error]
    failed = {seed: outcomes[seed].error for seed in seeds if outcomes[seed].error}
    figures: dict[str, list[float]] = {}
    for seed in finished:
        for name, value in _figures(outcomes[seed]).items():
            figures.setdefault(name, []).append(value)
    spreads = {name: spread(values, figure_bounds(name.split("_", 1)[1])) for name, values in figures.items()}
    summary: dict[str, object] = {
        "seeds": seeds, "finished": finished, "failed": failed,
        "interval": T_INTERVAL,
        "figures": {name: asdict(value) for name, value in spreads.items()},
    }
    write_text_atomic(directory / "summary.json", json.dumps(summary, indent=2) + "\n")
    if figures:
        plot_distributions(directory / "seeds.png", figures)
    table = markdown_table(["figure", "n", "mean", "std", "min", "max", "95% CI"],
                           [[name, s.n, s.mean, s.std, s.min, s.max, _interval(s)] for name, s in spreads.items()])
    header = f"seed study {directory}: {len(finished)} of {len(seeds)} seeds finished ({', '.join(map(str, seeds))})"
    return StudyResult(directory, figures, spreads, failed, f"{header}\n\n{table}")


def _interval(value: Spread) -> str | None:
    return None if value.ci95_low is None else f"[{value.ci95_low:.4g}, {value.ci95_high:.4g}]"
