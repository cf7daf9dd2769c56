"""Efficient decoding on transformers 5's ``generate`` (the role FastSeq played for TextBox 2.0).

What transformers 5.23 already does, checked here (tests/unit/decoding): the encoder runs once per source under
beam search, and n-gram blocking is vectorised. What the transformers path adds:

- ngram_blocking: n-gram blocking that writes only the banned scores instead of copying the whole score matrix,
  and leaves a decoder-only model's left padding out of the n-grams (an output no longer depends on its batch);
- detokenize: detokenisation on a background thread while the next batch generates.

Length-sorted, token-budget batches with outputs back in dataset order come from textbox.data.batching and
textbox.decoding.generate; bf16 inference is ``--mixed_precision=bf16`` (generate runs under the accelerator's
autocast). Every piece leaves the outputs unchanged: the tests compare them token for token with transformers'
(with decoder-only n-gram blocking, with ``model.generate`` on each example alone).

What was tried and retired (compiled decoding, cross-attention shared across beams), with its figures:
docs/speedups.md.
"""
