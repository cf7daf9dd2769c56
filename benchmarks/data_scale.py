"""The data path at scale (issue 34): run_textbox.py ("ours") against what a researcher would otherwise write
("peer", benchmarks/data_scale_peer.py) on corpora of N pairs, first run and cached rerun, each measured as a whole
process tree: wall time, CPU time, peak RSS and the wall time to the end of the first optimiser step.

Corpora: multi30k's training pairs (--data) repeated in blocks, each block shuffled (seeded), written as plain
train/valid/test.src/.tgt under --workdir (never in the repository; valid and test are the dataset's own) and reused
by later invocations. Ours: `python run_textbox.py` on that directory with the from-scratch transformer at d_model
32 (2+2 layers, ffn 128: the data path is what costs), --max_steps=20, no validation or test, --logging_steps=1; the
first run gets a fresh --cache_dir per size, the rerun the same one; --ours_args are appended (later wins). Both
systems' torch runs on --threads threads (default 1: the steps stay cheap and steady on a shared machine). Peer: a
byte-level BPE trained by `tokenizers` on every text, `datasets.load_dataset('text')` + `.map(batched=True,
num_proc=2)`, 20 steps of the same model shape in a plain torch loop; its rerun reuses the saved tokenizer and
datasets' cache.

Each measurement is its own subprocess (benchmarks/process_tree.py: CPU time of the tree as the kernel sums it for
reaped processes, peak RSS as the largest sampled sum over the live tree every 0.2 s). The first step's end is read
from the run itself: ours' `step 1/` line in project.log (millisecond timestamps), the peer's `first_step_end` line;
both are measured from the subprocess' start. Every measurement is appended as one JSON line to --results with the
date, git revision, os.getloadavg() before and after, this exact command and the child's. --write_docs renders the
results file into docs/speedups.md (one table per invocation; ratios ours/peer only between rows of one
invocation).

--memory_limit=1.5G adds the "larger than RAM" row: ours' first run under a memory cgroup (cgroup v1, a child of this
process's own) limited to that size, on a corpus of --memory_limit_pairs pairs (default: enough that its text and
tokens, estimated, exceed the limit): did it reach its first step, and the cgroup's peak usage (page cache
included). Where no cgroup can be made the row is skipped with one line saying why.

    python benchmarks/data_scale.py [--sizes=30000,300000,3000000] [--systems=ours,peer] [--runs=first,rerun]
        [--workdir=/tmp/textbox_data_scale] [--ours_args='--num_proc=1'] [--memory_limit=1.5G] [--write_docs]
"""
from __future__ import annotations

import os

START_ENV = dict(os.environ)  # what the children get: common.py's own settings (TOKENIZERS_PARALLELISM) stay here

import argparse  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
import shlex  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from datetime import datetime, timezone  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from common import DEFAULT_DATA, REPO, print_json_line, write_doc_block  # noqa: E402
from process_tree import CgroupUnavailable, Measured, measure  # noqa: E402

DOC = REPO / "docs" / "speedups.md"
BEGIN, END = "<!-- data scale: written by benchmarks/data_scale.py -->", "<!-- end of data scale -->"
RESULTS = REPO / "benchmarks" / "results" / "data_scale.jsonl"
PEER = REPO / "benchmarks" / "data_scale_peer.py"
STEPS = 20
MODEL = {"d_model": 32, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 4,
         "decoder_attention_heads": 4, "encoder_ffn_dim": 128, "decoder_ffn_dim": 128}
SYSTEMS, RUNS = ("ours", "peer"), ("first", "rerun")
UNITS = {"": 1, "K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30, "T": 2 ** 40}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the plain-text dataset repeated")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/textbox_data_scale"),
                        help="corpora, caches, runs and logs (outside the repository)")
    parser.add_argument("--sizes", type=sizes, default=[30_000, 300_000, 3_000_000],
                        help="pairs per corpus, comma-separated; '' runs none (--write_docs alone)")
    parser.add_argument("--systems", type=choices(SYSTEMS), default=list(SYSTEMS))
    parser.add_argument("--runs", type=choices(RUNS), default=list(RUNS),
                        help="first (an empty cache) and/or rerun (the cache the first run of that size left)")
    parser.add_argument("--ours_args", default="", help="more run_textbox.py keys, e.g. '--num_proc=1'")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch's threads in both systems (OMP_NUM_THREADS; 0 leaves torch's default, a thread "
                             "per core): on a loaded 2-core machine 2 threads ran the 20 d=32 steps 10x slower than "
                             "one (36.5 s against 3.7 s), drowning the data path's figures")
    parser.add_argument("--peer_num_proc", type=int, default=2, help="the peer's .map(num_proc=...)")
    parser.add_argument("--memory_limit", type=byte_size, default=None,
                        help="add the larger-than-RAM row: ours under a memory cgroup of this size (e.g. 1.5G)")
    parser.add_argument("--memory_limit_pairs", type=int, default=None,
                        help="its corpus size (default: text plus tokens estimated to exceed the limit)")
    parser.add_argument("--results", type=Path, default=RESULTS, help="the JSON-lines file results are appended to")
    parser.add_argument("--write_docs", action="store_true",
                        help=f"render --results into {DOC.relative_to(REPO)} between its data-scale markers")
    parser.add_argument("--seed", type=int, default=2020, help="the corpora's shuffling")
    return parser.parse_args()


def sizes(text: str) -> list[int]:
    try:
        counts = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError:
        counts = [0]
    if any(count < 1 for count in counts):
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of pair counts (each at least 1)")
    return counts


def choices(allowed: tuple[str, ...]) -> Any:
    def parse(text: str) -> list[str]:
        chosen = [part.strip() for part in text.split(",") if part.strip()]
        unknown = [part for part in chosen if part not in allowed]
        if unknown or not chosen:
            raise argparse.ArgumentTypeError(f"{text!r}: choose from {','.join(allowed)}")
        return [name for name in allowed if name in chosen]  # in their own order: a rerun after its first run
    return parse


def byte_size(text: str) -> int:
    match = re.fullmatch(r"\s*([0-9.]+)\s*([KMGT]?)i?B?\s*", text, re.IGNORECASE)
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size such as 1.5G or 800M")
    return int(float(match.group(1)) * UNITS[match.group(2).upper()])


# ---------------------------------------------------------------------------------------------------- corpora


def corpus(data: Path, workdir: Path, pairs: int, seed: int) -> Path:
    """``pairs`` training pairs of ``data`` (blocks of all its pairs, each block shuffled with its own seed) and its
    valid/test, under ``workdir``/corpora; built once (its DONE file, written last, says what from), reused by any
    later invocation asking the same."""
    target = workdir / "corpora" / f"pairs_{pairs}"
    made_of = f"{pairs} pairs of {data.resolve()}, seed {seed}\n"
    if read(target / "DONE") == made_of:
        return target
    sources = (data / "train.src").read_text(encoding="utf-8").splitlines()
    targets = (data / "train.tgt").read_text(encoding="utf-8").splitlines()
    base = list(zip(sources, targets))
    building = target.with_name(target.name + ".building")
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    with open(building / "train.src", "w", encoding="utf-8") as src, \
            open(building / "train.tgt", "w", encoding="utf-8") as tgt:
        written, block = 0, 0
        while written < pairs:  # a block at a time: a corpus larger than memory is written in constant memory
            shuffled = base[:]
            random.Random(seed * 1_000_003 + block).shuffle(shuffled)
            for source, target_text in shuffled[:pairs - written]:
                src.write(source + "\n")
                tgt.write(target_text + "\n")
            written += min(len(shuffled), pairs - written)
            block += 1
    for split in ("valid", "test"):
        for side in ("src", "tgt"):
            shutil.copyfile(data / f"{split}.{side}", building / f"{split}.{side}")
    (building / "DONE").write_text(made_of)
    shutil.rmtree(target, ignore_errors=True)
    building.rename(target)
    return target


def pairs_beyond(data: Path, limit: int) -> int:
    """Pairs whose text plus tokens exceed ``limit`` bytes by a quarter: text bytes measured on ``data``, tokens
    taken as one 4-byte id per 4 bytes of text (byte-level BPE on this text: ~4 bytes a token)."""
    text = (data / "train.src").stat().st_size + (data / "train.tgt").stat().st_size
    lines = sum(1 for _ in open(data / "train.src", encoding="utf-8"))
    per_pair = 2 * text / lines
    return int(1.25 * limit / per_pair) + 1


# --------------------------------------------------------------------------------------------------- commands


def ours_command(corpus_dir: Path, cache: Path, saved: Path, name: str, extra: list[str]) -> list[str]:
    return [sys.executable, str(REPO / "run_textbox.py"), "--model=transformer", f"--data_path={corpus_dir}",
            f"--config_kwargs={MODEL!r}", f"--max_steps={STEPS}", "--do_valid=False", "--do_test=False",
            "--logging_steps=1", "--tracker=none", f"--cache_dir={cache}", f"--saved_dir={saved}",
            f"--filename={name}", *extra]


def peer_command(corpus_dir: Path, cache: Path, num_proc: int) -> list[str]:
    return [sys.executable, str(PEER), f"--data={corpus_dir}", f"--cache={cache}", f"--steps={STEPS}",
            f"--num_proc={num_proc}", f"--d_model={MODEL['d_model']}", f"--ffn_dim={MODEL['encoder_ffn_dim']}",
            f"--layers={MODEL['encoder_layers']}", f"--heads={MODEL['encoder_attention_heads']}"]


def first_step_end(system: str, output: Path, run_dir: Path) -> float | None:
    """Unix time at which the first optimiser step had finished, as the run itself wrote it; None if it never
    did. Ours: project.log's `step 1/` line (its timestamps have milliseconds; the console's only seconds)."""
    if system == "peer":
        found = re.search(r"^first_step_end ([0-9.]+)$", read(output), re.MULTILINE)
        return float(found.group(1)) if found else None
    found = re.search(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) INFO step 1/", read(run_dir / "project.log"),
                      re.MULTILINE)
    return datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp() if found else None


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""


# ---------------------------------------------------------------------------------------------------- running


class Bench:
    """One invocation: where it works, what every row records about it, and the results file rows go to."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.invocation = f"{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-{os.getpid()}"
        self.command = shlex.join(["python", "benchmarks/data_scale.py", *sys.argv[1:]])
        self.revision = git_revision()
        self.extra = shlex.split(args.ours_args)
        self.env = {**START_ENV, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TQDM_DISABLE": "1"}
        if args.threads:
            self.env["OMP_NUM_THREADS"] = str(args.threads)
        for folder in ("logs", "saved", "cache"):
            (args.workdir / folder).mkdir(parents=True, exist_ok=True)

    def run(self, system: str, pairs: int, run: str, corpus_dir: Path, memory_limit: int | None = None) -> None:
        workdir = self.args.workdir
        label = f"{system}-{pairs}" + ("-limited" if memory_limit else "")
        cache, run_dir = workdir / "cache" / label, workdir / "saved" / f"{label}-{run}"
        if run == "first":
            shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(run_dir, ignore_errors=True)
        command = (ours_command(corpus_dir, cache, workdir / "saved", run_dir.name, self.extra) if system == "ours"
                   else peer_command(corpus_dir, cache, self.args.peer_num_proc))
        output = workdir / "logs" / f"{label}-{run}.out"
        print(f"{label} {run}: {shlex.join(command)}", flush=True)
        load_before = os.getloadavg()
        try:
            measured = measure(command, self.env, output, memory_limit=memory_limit)
        except CgroupUnavailable as why:
            print(f"skipping the memory-limit row: {why}", flush=True)
            return
        row = self.row(system, pairs, run, command, measured, load_before, first_step_end(system, output, run_dir))
        row["output"] = str(output)
        if memory_limit:
            row["estimated_text_and_tokens_bytes"] = estimated_bytes(corpus_dir)
        elif measured.returncode != 0:
            print(f"error: {label} {run} exited with {measured.returncode}; its output, {output}, ends:\n"
                  f"{read(output)[-2000:]}", file=sys.stderr)
        self.append(row)
        print(summary(row), flush=True)

    def row(self, system: str, pairs: int, run: str, command: list[str], measured: Measured,
            load_before: tuple[float, float, float], first_step: float | None) -> dict[str, Any]:
        return {"invocation": self.invocation, "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "revision": self.revision, "command": self.command, "child_command": shlex.join(command),
                "system": system, "pairs": pairs, "run": run, "ours_args": self.args.ours_args,
                "torch_threads": self.args.threads or "default",
                "returncode": measured.returncode, "wall_s": round(measured.wall_s, 2),
                "cpu_s": round(measured.cpu_s, 2), "peak_rss_bytes": measured.peak_rss_bytes,
                "peak_processes": measured.peak_processes,
                "first_step_s": None if first_step is None else round(first_step - measured.started, 2),
                "peak_rss_to_first_step_bytes": (None if first_step is None else
                                                 measured.peak_before(first_step - measured.started)),
                "peak_anonymous_bytes": measured.peak_before(None, anonymous=True),
                "load_before": list(load_before), "load_after": list(os.getloadavg()),
                **({"cgroup": measured.cgroup} if measured.cgroup else {})}

    def append(self, row: dict[str, Any]) -> None:
        self.args.results.parent.mkdir(parents=True, exist_ok=True)
        with open(self.args.results, "a", encoding="utf-8") as results:
            results.write(json.dumps(row, sort_keys=True) + "\n")


def estimated_bytes(corpus_dir: Path) -> int:
    """Text bytes of the training files, twice (their tokens: ~one 4-byte id per 4 bytes of text)."""
    return 2 * sum((corpus_dir / f"train.{side}").stat().st_size for side in ("src", "tgt"))


def git_revision() -> str:
    try:
        revision = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                                  text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return revision + ("+changes" if dirty else "")


def summary(row: dict[str, Any]) -> str:
    first = "never" if row["first_step_s"] is None else f"{row['first_step_s']:.1f} s"
    text = (f"  exit {row['returncode']}, wall {row['wall_s']:.1f} s, CPU {row['cpu_s']:.1f} s, peak RSS "
            f"{gb(row['peak_rss_bytes'])} ({row['peak_processes']} processes at the peak), first step at {first}, "
            f"load {row['load_before'][0]:.1f} -> {row['load_after'][0]:.1f}")
    if "cgroup" in row:
        cgroup = row["cgroup"]
        text += (f"; cgroup limit {gb(cgroup['limit_bytes'])}, max usage {gb(cgroup['max_usage_bytes'])}, "
                 f"limit hit {cgroup['failcnt']} times, OOM kills {cgroup['oom_kills']}")
    return text


def gb(value: float) -> str:
    return f"{value / 1e9:.2f} GB"


# ------------------------------------------------------------------------------------------------------- docs


def render(rows: list[dict[str, Any]]) -> str:
    """One table per invocation (oldest first), ratios ours/peer between rows of that invocation only."""
    lines = [BEGIN, "", "## The data path at scale", "",
             "Written by `python benchmarks/data_scale.py --write_docs` from its results file "
             f"(`{RESULTS.relative_to(REPO)}`): `python run_textbox.py` (ours: the from-scratch transformer at "
             f"d_model 32, {STEPS} steps, no validation or test) against a researcher's own script "
             "(peer, `benchmarks/data_scale_peer.py`: `tokenizers` BPE on every text, `datasets.load_dataset('text')` "
             "+ `.map(batched=True, num_proc=2)`, a plain torch loop) on multi30k's pairs repeated and shuffled. "
             "Wall and CPU time (user + system of the whole process tree), peak RSS (the largest sum over the live "
             "tree, sampled every 0.2 s; processes at that peak in brackets), RSS to first step (the same, over the "
             "samples before the first step ended), anonymous peak (RSS less file-backed and shared pages: the "
             "memory-mapped cache's pages a run reads count in RSS as clean page cache, not as memory the run "
             "holds), first step: wall time from the "
             "process' start to the end of its first optimiser step as the run logged it. Load: the 1-minute "
             "load average before and after the row (the machine may be shared: read the ratios).", ""]
    invocations: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        invocations.setdefault(row["invocation"], []).append(row)
    for invocation_rows in invocations.values():
        lines += invocation_table(invocation_rows)
    lines.append(END)
    return "\n".join(lines)


def invocation_table(rows: list[dict[str, Any]]) -> list[str]:
    head = rows[0]
    lines = [f"`{head['command']}` at {head['revision']}, {head['date']}, torch threads: {head['torch_threads']}"
             + (f", ours with `{head['ours_args']}`" if head["ours_args"] else "") + ":", ""]
    measured = [row for row in rows if "cgroup" not in row]
    if measured:
        lines += ["| pairs | run | system | wall | CPU | peak RSS | RSS to first step | anonymous peak | first step | "
                  "load | ours/peer wall, CPU, RSS, first step |", "|---:|---|---|---:|---:|---:|---:|---:|---:|---|---|"]
        for row in measured:
            lines.append(f"| {row['pairs']:,} | {row['run']} | {row['system']} | {cell(row, 'wall_s')} | "
                         f"{cell(row, 'cpu_s')} | {gb(row['peak_rss_bytes'])} ({row['peak_processes']}) | "
                         f"{optional_gb(row, 'peak_rss_to_first_step_bytes')} | "
                         f"{optional_gb(row, 'peak_anonymous_bytes')} | {cell(row, 'first_step_s')} | {row['load_before'][0]:.1f}-{row['load_after'][0]:.1f} | "
                         f"{ratios(row, measured)} |")
        lines.append("")
    for row in rows:
        if "cgroup" in row:
            cgroup = row["cgroup"]
            reached = "reached its first step" if row["first_step_s"] is not None else "did not reach its first step"
            ended = "finished" if row["returncode"] == 0 else (
                "was killed (SIGKILL)" if row["returncode"] == -9 else f"exited with {row['returncode']}")
            lines += [f"Larger than RAM: ours on {row['pairs']:,} pairs (text and tokens estimated at "
                      f"{gb(row['estimated_text_and_tokens_bytes'])}) under a {gb(cgroup['limit_bytes'])} memory "
                      f"cgroup {reached} and {ended} after {row['wall_s']:.0f} s; the cgroup's peak usage "
                      f"{gb(cgroup['max_usage_bytes'])} (page cache included), the limit hit {cgroup['failcnt']} "
                      f"times, {cgroup['oom_kills']} process(es) killed by its OOM killer; peak RSS of the tree "
                      f"{gb(row['peak_rss_bytes'])} (RSS also counts library pages the page cache held before, "
                      f"charged to other cgroups); load {row['load_before'][0]:.1f}-{row['load_after'][0]:.1f}.",
                      ""]
    return lines


def optional_gb(row: dict[str, Any], key: str) -> str:
    """A memory figure that rows from before it was measured lack."""
    return "–" if row.get(key) is None else gb(row[key])


def cell(row: dict[str, Any], key: str) -> str:
    value = row[key]
    failed = "" if row["returncode"] == 0 else f" (exit {row['returncode']})"
    return ("–" if value is None else f"{value:,.1f} s") + (failed if key == "wall_s" else "")


def ratios(row: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """ours/peer on the ours row, when the peer ran the same size and run in the same invocation."""
    if row["system"] != "ours":
        return ""
    peers = [other for other in rows if other["system"] == "peer" and other["pairs"] == row["pairs"]
             and other["run"] == row["run"]]
    if not peers or row["returncode"] != 0 or peers[0]["returncode"] != 0:
        return "–"
    peer = peers[0]
    parts = [row["wall_s"] / peer["wall_s"], row["cpu_s"] / peer["cpu_s"],
             row["peak_rss_bytes"] / peer["peak_rss_bytes"]]
    text = ", ".join(f"{value:.2f}" for value in parts)
    if row["first_step_s"] and peer["first_step_s"]:
        text += f", {row['first_step_s'] / peer['first_step_s']:.2f}"
    return text


# ------------------------------------------------------------------------------------------------------- main


def main() -> int:
    args = parse_args()
    if REPO in args.workdir.resolve().parents or args.workdir.resolve() == REPO:
        print(f"error: --workdir={args.workdir} is inside the repository; give a directory outside it "
              "(default /tmp/textbox_data_scale)", file=sys.stderr)
        return 2
    if not (args.data / "train.src").is_file() or not (args.data / "train.tgt").is_file():
        print(f"error: --data={args.data} has no train.src and train.tgt; give a plain-text dataset directory",
              file=sys.stderr)
        return 2
    try:
        shlex.split(args.ours_args)
    except ValueError as error:
        print(f"error: --ours_args={args.ours_args!r} cannot be split as a shell would ({error}); check its quotes",
              file=sys.stderr)
        return 2
    missing = [f"{system}-{pairs}" for system in args.systems for pairs in args.sizes
               if "first" not in args.runs and not (args.workdir / "cache" / f"{system}-{pairs}").is_dir()]
    if missing:
        print(f"error: --runs=rerun needs the cache a first run left in {args.workdir}/cache, and "
              f"{', '.join(missing)} has none; add first to --runs", file=sys.stderr)
        return 2
    bench = Bench(args)
    for pairs in args.sizes:
        corpus_dir = corpus(args.data, args.workdir, pairs, args.seed)
        for run in args.runs:
            for system in args.systems:
                bench.run(system, pairs, run, corpus_dir)
    if args.memory_limit is not None:
        pairs = args.memory_limit_pairs or pairs_beyond(args.data, args.memory_limit)
        bench.run("ours", pairs, "first", corpus(args.data, args.workdir, pairs, args.seed), args.memory_limit)
    if args.write_docs:
        rows = [json.loads(line) for line in read(args.results).splitlines() if line.strip()]
        write_doc_block(DOC, BEGIN, END, render(rows))
        print(f"wrote {DOC.relative_to(REPO)} from {len(rows)} rows of {args.results}")
    mine = [json.loads(line) for line in read(args.results).splitlines() if bench.invocation in line]
    failed = sum(1 for row in mine if row["returncode"] != 0 and "cgroup" not in row)
    print_json_line({"invocation": bench.invocation, "rows": len(mine), "failed": failed})
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
