"""One run from config to results.json (recipe.run, read top to bottom), and what it needs above the trainer and the
evaluator: the run's context, devices, the run directory, the validation hook, --input_file generation, results,
failures shared between processes."""
# CTranslate2 before torch (~40 ms): torch puts its OpenMP runtime in the process's global symbol scope, and a
# CTranslate2 loaded after it binds its own OpenMP calls there; its threads then share torch's thread pool and a
# sampled decode on 2 threads ran 4-7x slower than with its own runtime (docs/speedups.md, "Threads").
import ctranslate2  # noqa: F401  (imported for that alone)

from textbox.pipeline.recipe import run  # noqa: E402

__all__ = ["run"]
