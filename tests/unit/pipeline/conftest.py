"""The pipeline's tests build fresh CPU Accelerators as the trainer's do."""
from tests.unit.trainer.conftest import make_accelerator

__all__ = ["make_accelerator"]
