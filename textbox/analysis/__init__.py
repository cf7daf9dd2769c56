"""N systems (runs, seed studies, output files) compared against a baseline (``python -m textbox.analysis``):
per-example statistics, two-sided paired tests, seed-study t-tests, source-length buckets, the report and plots."""
