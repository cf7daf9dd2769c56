"""One run from config to results.json (recipe.run, read top to bottom), and what it needs above the trainer and the
evaluator: the run's context, devices, the run directory, the validation hook, --input_file generation, results,
failures shared between processes."""
# CTranslate2 before torch (a light import): torch puts its OpenMP runtime in the process's global symbol scope,
# and a CTranslate2 loaded after it binds its own OpenMP calls there; a worker splitting its matrix products over
# several threads then runs slower than on one (docs/speedups.md, "Threads").
import ctranslate2  # noqa: F401  (imported for that alone)

from textbox.pipeline.recipe import run  # noqa: E402

__all__ = ["run"]
