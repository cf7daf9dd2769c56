"""Analysis of finished runs' test generations (``python -m textbox.analysis``): per-example statistics,
source-length buckets, bootstrap tests and the markdown report with its plots."""
