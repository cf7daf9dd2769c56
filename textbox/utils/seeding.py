"""Seeds derived from the run's ``--seed`` for one purpose each, so that nearby seeds never share a stream.

Why: samplers and engines that seed themselves with ``seed + k`` (accelerate's seedable sampler seeds epoch e with
``seed + e``; a per-process seed ``seed + rank``) make seed 7's second stream seed 8's first. A seed study runs
seeds s, s+1, ..., so its runs would share data orders and understate their spread. A hash of (seed, purpose)
keeps every (seed, purpose) pair apart; ``+ k`` on top of it then stays within its own seed's range.
"""
from __future__ import annotations

import hashlib

DATA_ORDER = "data-order"  # the training sampler's shuffles (epoch e: derived_seed(seed, DATA_ORDER) + e)
SAMPLING = "sampling"  # CTranslate2's random sampling in decoding (one stream per process)


def derived_seed(seed: int, purpose: str, *parts: int) -> int:
    """A 62-bit seed for ``purpose`` (and e.g. a process index) under the run's ``seed``: the same inputs give the
    same seed on every machine; different inputs give unrelated ones (room left for ``+ epoch``)."""
    text = ":".join([str(int(seed)), purpose, *(str(int(part)) for part in parts)])
    return int.from_bytes(hashlib.sha256(text.encode("ascii")).digest()[:8], "little") >> 2
