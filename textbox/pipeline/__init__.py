"""One run from config to results.json (recipe.run, read top to bottom), and what it needs above the trainer and the
evaluator: the run's context, devices, the run directory, the validation hook, --input_file generation, results,
failures shared between processes."""
from textbox.pipeline.recipe import run

__all__ = ["run"]
