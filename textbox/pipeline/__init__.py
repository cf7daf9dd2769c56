"""One run from config to results.json (recipe.run), and what it needs above the trainer and the evaluator: devices,
building, the validation hook, --input_file generation, failures shared between processes."""
from textbox.pipeline.recipe import run

__all__ = ["run"]
