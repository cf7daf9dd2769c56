"""Hyper-parameter search (run_hyper.py): a space file, a hyperopt algorithm, one pipeline run per trial.

The search only builds per-trial overrides and calls the same ``pipeline.run`` as run_textbox.py; running the
trials (a process pool or Ray Tune), the study directory and the tables come from textbox/studies/common/.
"""
