"""The raw form of a dataset split, shared by readers, tokenisation and evaluation."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

Message = dict[str, str]  # one chat turn: {"role": "system" | "user" | "assistant", "content": text}


@dataclass
class Split:
    """Examples of one split, in file order. ``targets[i]`` holds one or more references of example i;
    training and the validation loss use the first one, metrics use all of them.

    ``contexts`` (messages data only, textbox.data.instructions): example i's turns before its last assistant turn,
    whose content is ``targets[i][0]``; ``sources[i]`` is then its last user turn, what logs and result files show.
    """

    name: str
    sources: list[str]
    targets: list[list[str]]
    contexts: list[list[Message]] | None = None

    def __len__(self) -> int:
        return len(self.sources)

    @property
    def digest(self) -> None:
        """None: an in-memory split is named by its texts (a streamed one, textbox.data.streamed, by its files')."""
        return None

    def tokenizer_texts(self, indices: Sequence[int] | None = None) -> list[str]:
        """What a new tokenizer trains on: every source, then every target's first reference (position i < len is
        source i, len + i target i); ``indices`` (ascending) picks some, None all."""
        texts = [*self.sources, *(references[0] for references in self.targets)]
        return texts if indices is None else [texts[index] for index in indices]

    def first(self, count: int) -> Split:
        """The first ``count`` examples."""
        return Split(self.name, self.sources[:count], self.targets[:count],
                     None if self.contexts is None else self.contexts[:count])
