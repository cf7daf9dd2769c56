"""What must stay light, in one table: every module whose docstring promises the standard library only (or nothing
heavy at import), and the command paths that run before anything is built (--help, config checks). One fresh
interpreter runs the rows in order and records the modules each row loaded; a row fails when it loaded what its rule
forbids.

Rows share the interpreter, so a row is checked against what the rows above it had not loaded yet: every row here is
light, so the first one that pulls in something heavy is the one that fails. The row that is allowed everything but
one package (the study commands) comes last.
"""
from __future__ import annotations

import json
import sys
from typing import NamedTuple

import pytest

from tests.conftest import PROJECT_ROOT
from tests.helpers import fresh_python


class Rule(NamedTuple):
    only: tuple[str, ...] | None = None  # nothing outside the standard library but these top-level packages
    none_of: tuple[str, ...] = ()  # none of these modules (or their submodules)


def only(*packages: str) -> Rule:
    return Rule(only=packages)


def none_of(*modules: str) -> Rule:
    return Rule(none_of=modules)


HEAVY = ("torch", "transformers", "accelerate", "datasets", "ctranslate2", "peft", "tokenizers", "safetensors",
         "huggingface_hub", "numpy", "sacrebleu", "rouge_score", "nltk", "ray")
CONFIG = "yaml"  # textbox.config's __init__ imports the loader, which reads yaml: every config module comes with it
REGISTRIES = ("textbox.model", "textbox.data", "textbox.evaluator", "textbox.decoding", "textbox.trainer",
              "textbox.checks")

# (what the interpreter runs, what it may load, where the promise is written)
ROWS = [
    ("import textbox.utils.suggest", only(), "textbox/utils/suggest.py: standard library only"),
    ("import textbox.utils.yaml_numbers", only("yaml"), "textbox/utils/yaml_numbers.py: standard library and PyYAML"),
    ("import textbox.tokens", only(CONFIG), "textbox/tokens/__init__.py: standard library only"),
    ("import textbox.tokens.languages", only(CONFIG), "textbox/tokens/languages.py: standard library only"),
    ("import textbox.config.families", only(CONFIG), "textbox/config/families.py: standard library only"),
    ("import textbox.config.schema", only(CONFIG), "textbox/config/schema.py: only the standard library"),
    ("import textbox.config.checkpoint_family", only(CONFIG),
     "textbox/config/checkpoint_family.py: standard library only"),
    ("import textbox.config.family_keys", only(CONFIG), "textbox/config/family_keys.py: standard library and yaml"),
    ("import textbox.config.run_config", only(CONFIG), "textbox/config/run_config.py: standard library and yaml"),
    ("import textbox.config.layers", only(CONFIG), "textbox/config/layers.py: standard library and yaml"),
    ("import textbox.config.textbox2.names", only(CONFIG), "textbox/config/textbox2/names.py: standard library only"),
    ("import textbox.config.textbox2.values", only(CONFIG),
     "textbox/config/textbox2/values.py: standard library only"),
    ("import textbox.config.textbox2.translate", only(CONFIG),
     "textbox/config/textbox2/translate.py: standard library only"),
    ("import textbox.config.launcher", only(CONFIG), "textbox/config/launcher.py: no torch"),
    ("from textbox.config import load_config; load_config(['--dataset=pydoc', '--metrics=[\"bleu\"]'])",
     Rule(only=(CONFIG,), none_of=REGISTRIES), "textbox/config/__init__.py: the config package imports no registry"),
    ("import textbox.decoding.generation_config", only(CONFIG),
     "textbox/decoding/generation_config.py: standard library only"),
    ("import textbox.model.files", only(CONFIG), "textbox/model/files.py: standard library only"),
    ("import textbox.evaluator.metrics.base", only(CONFIG),
     "textbox/evaluator/metrics/base.py: standard library only"),
    ("import textbox.trainer.schedules", only(CONFIG), "textbox/trainer/schedules.py: standard library at import"),
    ("import textbox.model.efficient", none_of(*HEAVY), "textbox/model/efficient.py: nothing heavy at module level"),
    ("import textbox.model.quantization", none_of(*HEAVY),
     "textbox/model/quantization.py: nothing heavy at module level"),
    ("import textbox.model.built_model", none_of(*HEAVY), "textbox/model/built_model.py: nothing heavy"),
    ("import textbox.model.checks", none_of(*HEAVY), "textbox/model/checks.py: nothing heavy"),
    ("import textbox.evaluator.metrics.registry", none_of(*HEAVY),
     "textbox/evaluator/metrics/registry.py: no scoring package"),
    ("import textbox.decoding.engine", none_of(*HEAVY), "textbox/decoding/engine.py: nothing heavy at module level"),
    ("import textbox.decoding.ctranslate2_settings", none_of(*HEAVY),
     "textbox/decoding/ctranslate2_settings.py: nothing heavy at module level"),
    ("import textbox.data.builtin", none_of(*HEAVY), "textbox/data/builtin.py: free of heavy imports"),
    ("import textbox.checks", none_of(*HEAVY), "textbox/checks.py: nothing heavy"),
    ("from textbox.checks import load_checked_config; load_checked_config(['--dataset=pydoc'])", none_of(*HEAVY),
     "textbox/checks.py: no transformers unless --generation_kwargs needs its check"),
    ("from textbox.checks import load_checked_config; load_checked_config([])", none_of(*HEAVY),
     "textbox/model/kwargs_types.py: the default run's config check (the shipped yamls' config_kwargs) imports no "
     "transformers"),
    ("import run_textbox; run_textbox.main(['--help'])", none_of(*HEAVY), "textbox/cli.py: help imports no registry"),
    ("import run_analysis; run_analysis.main(['--help'])", none_of(*HEAVY),
     "run_analysis.py: its --help imports no torch"),
    ("import run_hyper, run_multi_seed; run_hyper.main(['--help']); run_multi_seed.main(['--help']); "
     "run_hyper.main(['--space=x', '--engine=ray', '--workers=2'])", none_of("ray"),
     "textbox/studies/common/study_engine.py: ray only for --engine=ray"),
]

_CHILD = """
import contextlib, io, json, sys
loaded = []
for code in json.loads(sys.argv[1]):
    before = set(sys.modules)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            exec(code, {})
        except SystemExit:
            pass
    loaded.append(sorted(set(sys.modules) - before))
print(json.dumps(loaded))
"""


@pytest.fixture(scope="module")
def loaded() -> list[list[str]]:
    """The modules each row loaded, in one fresh interpreter."""
    # a bare environment: nothing the caller's shell sets may load a module for the rows
    done = fresh_python(_CHILD, json.dumps([code for code, _, _ in ROWS]), timeout=300,
                        env={"PYTHONPATH": str(PROJECT_ROOT), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def offenders(modules: list[str], rule: Rule) -> list[str]:
    found = [name for name in modules if any(name == bad or name.startswith(bad + ".") for bad in rule.none_of)]
    if rule.only is not None:
        allowed = {*sys.stdlib_module_names, "textbox", *rule.only}
        # Cython's runtime bookkeeping modules come with any Cython extension (PyYAML's loader is one)
        found += [name for name in modules if name.split(".")[0] not in allowed
                  and not name.startswith(("_cython", "cython_runtime")) and not name.startswith("run_")]
    return sorted(set(found))


@pytest.mark.parametrize("row", range(len(ROWS)), ids=[code[:60] for code, _, _ in ROWS])
def test_light_paths_load_nothing_heavy(loaded, row):
    code, rule, promise = ROWS[row]
    found = offenders(loaded[row], rule)
    assert not found, f"{code!r} loaded {found[:12]}: the promise of {promise}"
