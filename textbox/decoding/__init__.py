"""Efficient decoding on transformers 5's ``generate`` (the role FastSeq played for TextBox 2.0).

What transformers 5.23 already does, checked here (tests/unit/decoding): the encoder runs once per source under
beam search, and n-gram blocking is vectorised. What it does not do, and this package adds:

- cross_attention: cross-attention keys/values kept once per source, not copied for every beam at every step;
- ngram_blocking: n-gram blocking that writes only the banned scores instead of copying the whole score matrix;
- detokenize: detokenisation on a background thread while the next batch generates.

Length-sorted, token-budget batches with outputs back in dataset order come from textbox.data.batching and
textbox.evaluator.generate; bf16 inference is ``--mixed_precision=bf16`` (generate runs under the accelerator's
autocast). Every piece leaves the outputs unchanged: the tests compare them token for token with transformers'.

Compiled decoding (``--decode_compile``, a static cache with a compiled forward) was retired once CTranslate2
became the default engine: measured by benchmarks/decode_speed.py (docs/speedups.md: 320 examples, greedy), it
made transformers' decoding 1.7x faster after 343 s of compiling (paying only after ~41,000 examples), where
CTranslate2 decodes 3.0x faster without compiling. Cross-attention sharing stays, on the evidence of the
benchmark model (beam 4, 320 examples: 23.4 against 20.8 examples/s without it, 1.12x, outputs identical), though
on the shared machine its per-round ratios spread from 0.94x to 1.36x and on the d=512 6+6 model the medians were
1.12x in one run and 0.89x in another (docs/speedups.md): worth re-measuring on a quiet machine.
"""
