"""run_hyper.py's own options (the search's), told apart from the run keys every trial gets, and its --help."""
from __future__ import annotations

from textbox.config.schema import Key
from textbox.studies.search.algorithms import ALGORITHMS
from textbox.studies.common.study_engine import ENGINE_OPTIONS
from textbox.studies.common.tool_options import usage

SEARCH_OPTIONS = [
    Key("space", "str", None, "Search-space file, one '<label> <algorithm> <space>' per line "
                              "(e.g. configs/hyper/example.space).", "search"),
    Key("algo", "str", "exhaustive", "exhaustive (every point of a discrete grid once), random, tpe (or bayes), "
                                     "anneal, atpe (needs lightgbm and scikit-learn).", "search", tuple(ALGORITHMS)),
    Key("max_evals", "int|None", None, "Trials to run, failed ones included; default: the grid size for "
                                       "exhaustive (required for the other algorithms).", "search"),
    Key("workers", "int", 1, "Trials run at once, each in a worker process of its own.", "search"),
    Key("resume", "bool", False, "Continue the search in --saved_dir/--filename from its finished trials.", "search"),
    Key("early_stop", "str", "none", "--engine=ray: asha stops trials whose validation score falls behind at a "
                                     "rung (Tune's ASHAScheduler on the objective, time = validations done; "
                                     "grace 1 validation, reduction factor 4); stopped trials are 'stopped' rows.",
        "search", ("none", "asha")),
    *ENGINE_OPTIONS,
]
HELP = usage("usage: python run_hyper.py --space=<file> [--algo=exhaustive] [--max_evals=N] [--workers=N] "
             "[--resume=True] [--engine=local|ray [--ray_address=auto|host:port] [--trial_resources=\"{'cpu': 1}\"] "
             "[--early_stop=asha]] "
             "[--key=value ...]", SEARCH_OPTIONS)
