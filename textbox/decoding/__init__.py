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

Retired once CTranslate2 became the default engine, each on benchmarks/decode_speed.py's side-by-side figures:
- compiled decoding (``--decode_compile``, a static cache with a compiled forward): greedy decoding of the
  benchmark model 1.7x faster than eager transformers after 343 s of compiling on a loaded machine (paying only
  after ~41,000 examples), and no faster on a quiet one (196.8 against 198.0 examples/s, docs/speedups.md), where
  CTranslate2 decodes 1.7x (quiet) to 3.0x (loaded) faster than eager without compiling;
- cross-attention keys/values kept once per source instead of once per beam (a Cache subclass and an attention
  function registered with transformers): 1.12x under load, but on a quiet machine (2 threads, medians of 3-7
  alternating rounds) shared/unshared beam-4 throughput was 1.015, 0.968, 0.978 and 1.027 on the benchmark model
  (320 examples) and 1.045 on the d=512 6+6 model (64 examples): no gain beyond noise for 96 lines hooked into
  transformers' cache and attention internals.
"""
