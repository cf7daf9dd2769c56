"""What a model builder hands back: the model, its tokenizer, and the facts about them that later steps need.

Saving a checkpoint needs to know which parameter-efficient method the model carries (only its parameters are
saved, beside the base model's path); applying a method needs to know whether the model was just warm-started
from separate encoder/decoder checkpoints (its new cross-attention must train). These facts travel in the record,
never as attributes stuck on library objects. Builders fill ``model``, ``tokenizer`` and ``warm_started``;
textbox.model.build.build_model adds ``efficient`` (from an efficient checkpoint it loaded, or the method it
applied) and ``fitting`` (the lengths fitted to the model, textbox.model.lengths, and language codes a yaml gave in
another tokenizer's spelling, textbox.tokens.languages). Nothing heavy is imported here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Protocol, Sequence

from textbox.config import Config

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from textbox.model.quantization import Quantization


class TrainingTexts(Protocol):
    """What builders read from the training split (textbox.data.split.Split and textbox.data.streamed.StreamedSplit
    are ones; model/ does not import data/): models that train their own tokenizer train it on these texts. A
    streamed split is read from its files as its texts are drawn, and names its content by ``digest`` without
    reading it; an in-memory split has no digest (None: its texts name it)."""

    def __len__(self) -> int: ...

    def tokenizer_texts(self, indices: Sequence[int] | None = None) -> Iterable[str]:
        """Position i < len is source i, len + i is target i's first reference; ``indices`` (ascending) picks
        some, None all."""
        ...

    @property
    def digest(self) -> str | None: ...


@dataclass(frozen=True)
class EfficientRecord:
    """The parameter-efficient method a model carries: what checkpoint_best holds of it (textbox.model.efficient)."""

    method: str  # lora, prefix-tuning, prompt-tuning, p-tuning, ia3, bitfit ("adapter": a peft type we do not name)
    unfreeze: bool  # the whole model trains too, so the whole model is saved
    base_model_path: str | None  # where the base loads from again (absolute when local)
    quantization: Quantization | None = None  # of the base, kept beside the adapter


@dataclass(frozen=True)
class Fitting:
    """The run's config with its lengths fitted to the model (textbox.model.lengths), and what changed: key ->
    (before, after), and why."""

    config: Config
    changed: dict[str, tuple[int, int]] = field(default_factory=dict)
    why: str = ""

    def record(self) -> dict[str, object]:
        """results.json's ``fitted_lengths`` ({} when nothing changed)."""
        if not self.changed:
            return {}
        return {**{key: {"given": before, "fitted": after} for key, (before, after) in self.changed.items()},
                "why": self.why}

    def log_line(self) -> str:
        changes = ", ".join(f"{key} {before} -> {after}" for key, (before, after) in self.changed.items())
        return f"lengths fitted to the model: {changes}: {self.why}"


@dataclass(frozen=True)
class BuiltModel:
    """A built model and what is known about how it was built (see the module docstring)."""

    model: PreTrainedModel  # or a peft model wrapping one (textbox.model.efficient)
    tokenizer: PreTrainedTokenizerBase
    efficient: EfficientRecord | None = None
    warm_started: bool = False  # an EncoderDecoderModel from encoder/decoder checkpoints: new cross-attention
    fitting: Fitting | None = None  # the config with its lengths fitted to this model: what the run goes on with
