"""python -m textbox.analysis: N systems (runs, a seed study, a plain output file) against a baseline, the p-values
sacrebleu's paired tests give on the same files, the analysis's own directory, bounded intervals, exit codes."""
import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import PairedTest

from tests.helpers import offline_env
from tests.unit.analysis.fake_runs import write_dataset, write_run
from textbox.analysis.command import main

WORDS = "red green blue cat dog bird tree house river stone light dark".split()


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def snapshot(directory: Path) -> dict[str, bytes]:
    return {str(path): path.read_bytes() for path in sorted(directory.rglob("*")) if path.is_file()}


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> dict[str, Path]:
    """A 40-example reverse-the-words test set; runs a and b, a published system's file, and a seed study whose
    three seeds get next to nothing right (BLEU 0, 0 and one example right: near 0, where a plain t-interval goes
    below 0)."""
    root = tmp_path_factory.mktemp("analysis")
    rng = random.Random(0)
    sources = [" ".join(rng.choices(WORDS, k=rng.randint(3, 9))) for _ in range(40)]
    targets = [" ".join(reversed(source.split())) for source in sources]

    def noisy(keep: float) -> list[str]:
        return [" ".join(word if rng.random() < keep else "x" for word in line.split()) for line in targets]

    data = write_dataset(root / "data", sources, targets)
    paths = {"root": root, "data": data, "a": write_run(root / "saved" / "a", data, noisy(0.6)),
             "b": write_run(root / "saved" / "b", data, noisy(0.64)), "published": root / "published.txt",
             "study": root / "saved" / "study"}
    paths["published"].write_text("".join(f"{line}\n" for line in noisy(0.5)), encoding="utf-8")
    longest = max(range(len(targets)), key=lambda index: len(targets[index].split()))
    one_right = ["zzz" if index != longest else targets[index] for index in range(len(targets))]
    for seed, outputs in ((1, ["zzz"] * len(targets)), (2, ["zzz"] * len(targets)), (3, one_right)):
        write_run(paths["study"] / f"seed-{seed}", data, outputs)
    return paths


@pytest.fixture(scope="module")
def report(setup) -> dict:
    """One analysis of the baseline a against b, the published file and the seed study."""
    before = {name: snapshot(setup[name]) for name in ("a", "b", "study")}
    out = setup["root"] / "out"
    assert main([str(setup["a"]), str(setup["b"]), str(setup["published"]), str(setup["study"]),
                 f"--output_dir={out}", "--metrics=bleu,chrf", "--samples=200", "--ar_samples=300", "--seed=777",
                 "--examples=2"]) == 0
    assert {name: snapshot(setup[name]) for name in ("a", "b", "study")} == before  # nothing written into runs
    return json.loads((out / "analysis.json").read_text())


def result(report: dict, system: str, figure: str) -> dict:
    [found] = [row for row in report["results"] if row["system"] == system and row["figure"] == figure]
    return found


@pytest.mark.parametrize("test, samples", [("bs", 200), ("ar", 300)])
def test_p_values_of_a_run_and_a_plain_file_equal_sacrebleus_paired_tests(setup, report, monkeypatch, test, samples):
    monkeypatch.setenv("SACREBLEU_SEED", "777")
    systems = [("a", lines(setup["a"] / "generation.txt")), ("b", lines(setup["b"] / "generation.txt")),
               ("published", lines(setup["published"]))]
    _, scores = PairedTest(systems, {"bleu": BLEU(), "chrf": CHRF()}, [lines(setup["data"] / "test.tgt")],
                           test_type=test, n_samples=samples)()
    for figure, column in (("bleu", "BLEU"), ("chrf", "chrF2")):
        for row, system in enumerate(("b", "published"), start=1):
            ours = result(report, system, figure)
            [ran] = [entry for entry in ours["tests"] if entry["test"] == test]
            assert ran["p_value"] == scores[column][row].p_value
            assert (ran["samples"], ran["seed"]) == (samples, 777)
            assert ours["score"] == pytest.approx(scores[column][row].score)
        assert result(report, "a", figure)["tests"] == []  # the baseline


def test_the_report_holds_every_system_and_figure_in_its_own_directory(setup, report):
    out = setup["root"] / "out"
    assert [system["kind"] for system in report["systems"]] == ["run", "run", "file", "seed study"]
    assert report["baseline"] == "a" and report["samples"] == {"bs": 200, "ar": 300}
    assert len(report["results"]) == 2 * 4
    text = (out / "analysis.md").read_text()
    for heading in ("## bleu (higher is better)", "## chrf (higher is better)", "## By source length",
                    "## Lengths in words", "## Examples where the systems differ most"):
        assert heading in text
    assert "| published |" in text and text.count("### Line ") == 2
    for plot in ("analysis_buckets.png", "analysis_lengths.png", "analysis_bootstrap.png"):
        assert (out / plot).read_bytes().startswith(b"\x89PNG")


def test_intervals_stay_in_the_figures_range(report):
    for row in report["results"]:
        low, high = row["interval"]
        assert 0.0 <= low <= high <= 100.0
        if row["seed_scores"] is None:
            assert low <= row["score"] <= high
    study = result(report, "study", "bleu")
    assert study["interval"][0] == 0.0 and min(study["seed_scores"]) == 0.0  # the t-interval went below 0
    assert [entry["test"] for entry in study["tests"]] == ["one-sample t"]


def test_a_against_b_and_b_against_a_give_the_same_p(setup):
    from textbox.analysis.compute import analyze
    from textbox.analysis.systems import load_systems

    def p_values(baseline: str | None) -> list[float | None]:
        systems, test_set = load_systems([str(setup["a"]), str(setup["published"])], [], None, baseline)
        [bleu] = analyze(systems, test_set, ["bleu"], ["bs", "ar"], {"bs": 100, "ar": 100}, 0, 2).figures
        assert bleu.scores[0].system == (baseline or "a")
        return [test.p_value for test in bleu.scores[1].tests]

    assert p_values(None) == p_values("published")


def test_output_files_alone_are_scored_against_a_reference_file_in_a_default_directory(setup, tmp_path, monkeypatch,
                                                                                      capsys):
    monkeypatch.chdir(tmp_path)
    assert main([str(setup["published"]), str(setup["a"] / "generation.txt"), f"--ref={setup['data'] / 'test.tgt'}",
                 "--metrics=ter", "--tests=bs", "--samples=50"]) == 0
    [directory] = (tmp_path / "saved").glob("analysis-*")
    analysis = json.loads((directory / "analysis.json").read_text())
    assert [system["kind"] for system in analysis["systems"]] == ["file", "file"]
    assert [entry["test"] for entry in analysis["results"][1]["tests"]] == ["bs"]
    assert "## By source length" not in (directory / "analysis.md").read_text()  # no sources with --ref
    assert f"report: {Path('saved') / directory.name / 'analysis.md'}" in capsys.readouterr().out


@pytest.mark.parametrize("arguments, message", [
    (["{a}", "{short}"], "short.txt has 1 lines but the test set"),
    (["{a}", "{b}", "--metrics=bleu,blue"], "--metric=blue cannot be analysed per example"),
    (["{a}", "{missing}"], "system .*missing.txt does not exist"),
    (["{a}", "{b}", "--baseline=c"], "--baseline=c is none of the systems"),
    (["{a}", "{b}", "--output_dir={a}/analysis"], "inside .* a system's directory"),
    (["{published}"], "output files need references"),
])
def test_bad_input_is_one_error_line_and_exit_2(setup, tmp_path, capsys, arguments, message):
    short = tmp_path / "short.txt"
    short.write_text("one line\n")
    paths = {**{name: str(path) for name, path in setup.items()}, "short": short, "missing": tmp_path / "missing.txt"}
    assert main([argument.format(**paths) for argument in arguments]) == 2
    error = capsys.readouterr().err
    assert error.startswith("textbox.analysis: error: ") and len(error.strip().splitlines()) == 1
    assert re.search(message, error)
    assert not (setup["a"] / "analysis").exists()


def test_malformed_arguments_exit_with_usage_and_code_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["a", "--tests=bs,xx"])
    assert exit_info.value.code == 2
    assert "unknown test 'xx'" in capsys.readouterr().err


def test_the_module_exits_2_with_one_error_line_as_a_process(setup, tmp_path):
    finished = subprocess.run([sys.executable, "-m", "textbox.analysis", str(setup["a"]), "missing.txt"],
                              cwd=tmp_path, env=offline_env(), capture_output=True, text=True, timeout=120)
    assert finished.returncode == 2 and finished.stdout == ""
    assert finished.stderr == ("textbox.analysis: error: system missing.txt does not exist: give a run directory, a "
                               "seed-study directory or an output file\n")


def test_two_seed_studies_are_compared_by_welchs_t_test_on_their_seeds_figures(setup, tmp_path):
    from scipy import stats
    import sacrebleu

    from textbox.analysis.compute import analyze
    from textbox.analysis.systems import load_systems

    other = tmp_path / "other_study"
    for seed, run in ((5, "a"), (6, "b")):
        write_run(other / f"seed-{seed}", setup["data"], lines(setup[run] / "generation.txt"))
    systems, test_set = load_systems([str(setup["study"]), str(other)], [], None, None)
    [bleu] = analyze(systems, test_set, ["bleu"], ["bs"], {"bs": 20, "ar": 20}, 0, 2).figures
    references = [lines(setup["data"] / "test.tgt")]
    seeds = {name: [sacrebleu.corpus_bleu(lines(directory / f"seed-{seed}" / "generation.txt"), references).score
                    for seed in seeds] for name, directory, seeds in (("study", setup["study"], (1, 2, 3)),
                                                                      ("other", other, (5, 6)))}
    assert bleu.scores[1].seed_scores == pytest.approx(seeds["other"])
    [welch] = bleu.scores[1].tests
    assert welch.test == "welch"
    assert welch.p_value == pytest.approx(stats.ttest_ind(seeds["other"], seeds["study"], equal_var=False).pvalue)


def test_metric_options_beside_runs_rescore_them_on_their_own_test_set(setup):
    from textbox.analysis.systems import load_systems

    _, test_set = load_systems([str(setup["a"]), str(setup["published"])], ["--lower_evaluation=True"], None, None)
    assert test_set.options.lower_evaluation is True
    assert test_set.origin.startswith(f"the test split of run {setup['a']}")


def test_an_output_directory_inside_any_run_is_refused(setup, tmp_path, capsys):
    generation = setup["b"] / "generation.txt"
    assert main([str(setup["published"]), str(generation), f"--ref={setup['data'] / 'test.tgt'}",
                 f"--output_dir={setup['b'] / 'mine'}"]) == 2
    assert "a run directory (it holds config.yaml)" in capsys.readouterr().err
    assert not (setup["b"] / "mine").exists()
