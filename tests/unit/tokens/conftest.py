"""The model tests' tiny saved BART (and the fixtures it is made from), for the tokenizer without languages."""
from tests.unit.model.conftest import saved_bart, tiny_transformer, train_split  # noqa: F401
