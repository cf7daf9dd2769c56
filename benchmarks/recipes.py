"""Writes docs/recipes.md: each recipe of configs/recipes/ run whole on this machine (training with its validations,
then the test pass, exactly as a user runs it), its figures beside the published ones, with the command, the
sacrebleu signature, the wall and CPU time and the machine's load while it ran.

    python benchmarks/recipes.py [--recipes=multi30k_en_de,commongen] [--threads=2] [--data_root=DIR]
    python benchmarks/recipes.py --stop_after_minutes=90    # stop a run that has not finished by then
    python benchmarks/recipes.py --resume                   # continue stopped runs from their checkpoint_last
    python benchmarks/recipes.py --report_only              # the doc again from the runs already made

A recipe is a benchmark, not a test (tests/integration/test_recipes.py checks that each loads and runs a few steps).
The project's 2-core machine is shared: the load average is sampled every 30 s while a recipe runs, and the doc gives
the training throughput and the CPU time used, so that the time on a quiet machine can be judged.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from common import REPO, print_json_line, write_doc_block
from recipe_doc import INTRO, INTRO_BEGIN, INTRO_END, score_published, section
from recipe_notes import RECIPES, Recipe

DOC = REPO / "docs" / "recipes.md"
WORK = REPO / "saved" / "recipes"
RECIPE_DIR = REPO / "configs" / "recipes"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipes", default=",".join(RECIPES), help="comma-separated recipe names")
    parser.add_argument("--data_root", type=Path, default=REPO.parent / "shared" / "datasets",
                        help="directory holding each recipe's dataset directory")
    parser.add_argument("--threads", type=int, default=2, help="OMP/torch threads of the run")
    parser.add_argument("--saved_dir", type=Path, default=WORK, help="where the recipes' run directories go")
    parser.add_argument("--report_only", action="store_true", help="write the doc from runs already made")
    parser.add_argument("--stop_after_minutes", type=float, default=None,
                        help="stop a run still going after this many minutes (it saves checkpoint_last; the doc "
                             "gives its last validation figures and says it did not finish)")
    parser.add_argument("--resume", action="store_true",
                        help="continue each recipe's stopped run from its checkpoint_last (--resume=True)")
    parser.add_argument("--baseline_outputs", type=Path, default=None,
                        help="directory holding published systems' test outputs (recipe_notes.py names the files): "
                             "scored by the recipe's metrics on its test split, kept in <saved_dir>/<recipe>."
                             "published.json")
    return parser.parse_args()


def load_average() -> float:
    return os.getloadavg()[0]


class LoadSampler:
    """The 1-minute load average every ``every`` seconds while a run goes on (other work shares the machine)."""

    def __init__(self, every: float = 30.0):
        self.every = every
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(self.every):
            self.samples.append(load_average())

    def __enter__(self) -> "LoadSampler":
        self.samples.append(load_average())
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.append(load_average())


def command_of(recipe: Recipe, data_root: Path, saved_dir: Path, resume: bool) -> list[str]:
    """The command a user types, run from the repository root."""
    return ["python", "run_textbox.py", f"--config_files=configs/recipes/{recipe.name}.yaml",
            f"--data_path={data_root / recipe.data}", f"--saved_dir={saved_dir}", f"--filename={recipe.name}",
            *(["--resume=True"] if resume else [])]


def wait_or_stop(process: subprocess.Popen, stop_after: float | None) -> str:
    """Wait for the run; past ``stop_after`` seconds send it SIGTERM (it finishes its step, saves checkpoint_last
    and exits) and say so."""
    try:
        process.wait(timeout=stop_after)
        return "finished" if process.returncode == 0 else f"failed (exit {process.returncode})"
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGTERM)
        process.wait()
        return f"stopped after {stop_after / 60:.0f} min"


def run_recipe(recipe: Recipe, args: argparse.Namespace) -> Path:
    """Run (or continue) one recipe and add this part's command, wall time, CPU time and load to benchmark.json
    beside the run's results."""
    run_dir = args.saved_dir / recipe.name
    bench_file = run_dir / "benchmark.json"
    if args.resume and not bench_file.exists():
        raise SystemExit(f"--resume: {bench_file} does not exist (no earlier part of {recipe.name} to continue)")
    command = command_of(recipe, args.data_root, args.saved_dir, args.resume)
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                   "OMP_NUM_THREADS": str(args.threads)}
    print(f"running {recipe.name}: {shlex.join(command)}", flush=True)
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.time()
    stop_after = args.stop_after_minutes * 60 if args.stop_after_minutes else None
    with LoadSampler() as load, open(args.saved_dir / f"{recipe.name}.stderr", "w") as stderr:
        process = subprocess.Popen([sys.executable, *command[1:]], cwd=REPO, env=environment,
                                   stdout=subprocess.DEVNULL, stderr=stderr)
        how_it_ended = wait_or_stop(process, stop_after)
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if how_it_ended.startswith("failed"):
        raise SystemExit(f"recipe {recipe.name} {how_it_ended}: see {args.saved_dir / f'{recipe.name}.stderr'}")
    part = {
        "command": shlex.join(command), "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started)),
        "wall_seconds": round(time.time() - started, 1), "how_it_ended": how_it_ended,
        "cpu_seconds": round((cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime), 1),
        "load_1min": [round(value, 2) for value in load.samples],
    }
    bench = json.loads(bench_file.read_text()) if args.resume else {
        "command": shlex.join(command_of(recipe, args.data_root, args.saved_dir, False)), "threads": args.threads,
        "cores": os.cpu_count(), "processor": platform.processor() or platform.machine(), "parts": []}
    bench["parts"].append(part)
    bench_file.write_text(json.dumps(bench, indent=2) + "\n", encoding="utf-8")
    return run_dir


def main() -> None:
    args = parse_args()
    names = [name.strip() for name in args.recipes.split(",") if name.strip()]
    unknown = [name for name in names if name not in RECIPES]
    if unknown:
        raise SystemExit(f"unknown recipe(s) {', '.join(unknown)}; known: {', '.join(RECIPES)}")
    args.saved_dir = args.saved_dir.resolve()
    args.saved_dir.mkdir(parents=True, exist_ok=True)
    write_doc_block(DOC, INTRO_BEGIN, INTRO_END, f"{INTRO_BEGIN}\n{INTRO}\n{INTRO_END}", at_start=True)
    summary: dict[str, Any] = {}
    for name in names:
        recipe, recipe_yaml = RECIPES[name], RECIPE_DIR / f"{name}.yaml"
        run_dir, data_dir = args.saved_dir / name, args.data_root / recipe.data
        needs_data = not args.report_only or args.baseline_outputs is not None
        if needs_data and not data_dir.is_dir():
            raise SystemExit(f"{data_dir} does not exist: give --data_root=<the directory holding {recipe.data}/>")
        if not args.report_only:
            run_recipe(recipe, args)
        published_file = args.saved_dir / f"{name}.published.json"
        if args.baseline_outputs is not None and any(p.outputs for p in recipe.published):
            scored = score_published(recipe, recipe_yaml, data_dir, args.baseline_outputs)
            published_file.write_text(json.dumps(scored, indent=2) + "\n", encoding="utf-8")
        published = json.loads(published_file.read_text()) if published_file.exists() else {}
        begin, end = f"<!-- recipe {name}: written by benchmarks/recipes.py -->", f"<!-- end of recipe {name} -->"
        write_doc_block(DOC, begin, end, f"{begin}\n{section(recipe, recipe_yaml, run_dir, published).rstrip()}\n{end}")
        results_file = run_dir / "results.json"
        summary[name] = ({k: round(v, 2) for k, v in json.loads(results_file.read_text())["test"].items()
                          if k in recipe.figures} if results_file.exists() else "no test results")
    print_json_line({"doc": str(DOC.relative_to(REPO)), "recipes": summary})


if __name__ == "__main__":
    main()
