"""Studies: many pipeline runs under one plan. search/ (run_hyper.py) and seeds.py (run_multi_seed.py) build each
run's overrides and call the same ``pipeline.run``; common/ is what they share (the study directory and log, the
tool options, running the runs locally or on Ray, the tables and plots)."""
