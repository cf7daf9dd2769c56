"""Shared test set-up: offline, quiet, deterministic; paths to the project and ../shared; the fixtures every
directory may use (the toy dataset, the tiny tokenizer, the tiny from-scratch transformer and its saved copy, a
fresh accelerate state). Plain helpers live in tests/helpers.py; docs/testing.md."""
from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pytest

if TYPE_CHECKING:  # annotations only: torch and the framework load when a fixture needs them
    import torch

    from textbox.config import Config
    from textbox.data.split import Split

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# One thread (unless the caller sets another count): the tests' models are tiny, and on a busy 2-core machine two
# threads spin-wait on each other (a session fixture's 150 training steps took 120 s with 2 threads, 2.3 s with 1).
# Set before torch is imported, which reads it once; run_script gives its subprocesses the same.
os.environ.setdefault("OMP_NUM_THREADS", "1")

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATASETS = PROJECT_ROOT.parent / "shared" / "datasets"


def pytest_configure(config):
    # slow is declared in pyproject.toml; cuda here, beside the tests' other set-up
    config.addinivalue_line("markers", "cuda: needs a CUDA GPU (skipped, with the reason, where there is none or "
                                       "too few); benchmarks/gpu_check.sh runs them")


def pytest_runtest_setup(item):
    """A test marked cuda skips, saying why, where no CUDA device is visible: torch is asked only when such a test
    is about to run, so collecting them costs nothing (a test that needs more, e.g. 2 GPUs, adds its own skipif)."""
    if item.get_closest_marker("cuda") is not None and (reason := _no_cuda_reason()):
        pytest.skip(reason)


def _no_cuda_reason() -> str | None:
    import torch

    if torch.version.cuda is None:
        return f"needs CUDA: this torch ({torch.__version__}) is a CPU-only build"
    if not torch.cuda.is_available():
        return "needs CUDA: no CUDA device is visible"
    return None


@pytest.fixture
def shared_dataset():
    """Path to a dataset in ../shared/datasets; the test is skipped when ../shared is absent."""

    def locate(name: str) -> Path:
        path = SHARED_DATASETS / name
        if not (path / "train.src").is_file():
            pytest.skip(f"../shared/datasets/{name} is not available")
        return path

    return locate


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """The toy dataset in tmp_path/toy: one example ("a b" -> "c d") per split, enough for the dataset check."""
    from tests.helpers import make_toy_dataset

    return make_toy_dataset(tmp_path / "toy")


@pytest.fixture(scope="session")
def tiny_tokenizer(tmp_path_factory):
    """The tiny BPE tokenizer of the reverse-the-words examples (tests.helpers.reverse_words_tokenizer), trained
    once per session."""
    from tests.helpers import reverse_words_tokenizer

    return reverse_words_tokenizer(tmp_path_factory.mktemp("tiny-tokenizer"))


@pytest.fixture
def fresh_accelerate_state():
    """accelerate's process-wide state reset around a test that builds its own Accelerator(s)."""
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()
    yield
    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()


# --- the tiny from-scratch transformer (--model=transformer, BART-shaped) -----------------------------------------

# The tiny model's settings (config_kwargs and tokenizer_kwargs of --model=transformer) for tiny_config.
TINY_TRANSFORMER = {"d_model": 32, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 2,
                    "decoder_attention_heads": 2, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64}
TINY_VOCAB = 300

_SUBJECTS = ["a dog", "the cat", "my friend", "a child", "the teacher", "an old man"]
_VERBS = ["reads", "paints", "finds", "carries", "watches", "cleans"]
_OBJECTS = ["a red book", "the small boat", "two apples", "a wooden chair", "the garden gate", "some café menus"]


def _tiny_config(cache_dir: Path, **changes) -> Config:
    from textbox.config.loader import Config
    from textbox.config.schema import DEFAULTS

    values = {**DEFAULTS, "cache_dir": str(cache_dir), "config_kwargs": TINY_TRANSFORMER,
              "tokenizer_kwargs": {"vocab_size": TINY_VOCAB}, "src_len": 24, "tgt_len": 8}
    return Config({**values, **changes})


@pytest.fixture
def tiny_config(tmp_path) -> Callable[..., Config]:
    """Builds a Config for a tiny model, caching under this test's tmp_path; keyword arguments override keys."""
    return lambda **changes: _tiny_config(tmp_path / "cache", **changes)


@pytest.fixture(scope="session")
def train_split() -> Split:
    """216 sentences (targets) with their long words as sources: CommonGen-like, made up here."""
    from textbox.data.split import Split

    sentences = [f"{s} {v} {o}." for s, v, o in itertools.product(_SUBJECTS, _VERBS, _OBJECTS)]
    sources = [" ".join(word for word in sentence.rstrip(".").split() if len(word) > 3) for sentence in sentences]
    return Split("train", sources, [[sentence] for sentence in sentences])


@pytest.fixture(scope="session")
def corpus(train_split) -> list[str]:
    return [*train_split.sources, *(references[0] for references in train_split.targets)]


@pytest.fixture(scope="session")
def tiny_transformer(tmp_path_factory, train_split):
    """(model, tokenizer) of the from-scratch builder, shared because training the tokenizer takes time. Its weights
    are seeded: the same whichever test asks first (the order differs under pytest -n), and no other test's random
    numbers change."""
    import torch

    from textbox.model import transformer

    with torch.random.fork_rng():
        torch.manual_seed(0)
        built = transformer.build(_tiny_config(tmp_path_factory.mktemp("cache")), train_split)
    return built.model, built.tokenizer


@pytest.fixture(scope="session")
def saved_bart(tmp_path_factory, tiny_transformer) -> Path:
    """A directory as a run's checkpoint_best holds it: model and tokenizer side by side."""
    model, tokenizer = tiny_transformer
    path = tmp_path_factory.mktemp("bart")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def greedy() -> Callable[..., torch.Tensor]:
    """greedy(model, tokenizer): token ids for two sources, forced to full length so that an untrained
    model's output is more than a lone </s> and a reload that changed anything would show."""

    def generate(model, tokenizer) -> torch.Tensor:
        import torch

        model.eval()
        batch = tokenizer(["friend paints small boat", "teacher watches garden gate"], return_tensors="pt",
                          padding=True)
        with torch.no_grad():
            return model.generate(**batch, do_sample=False, num_beams=1,
                                  min_new_tokens=model.generation_config.max_new_tokens)

    return generate
