"""Decoding: the model's outputs for validation, test and --input_file, on one of two engines (the role FastSeq
played for TextBox 2.0).

- generate.py: the one door; every caller decodes through ``generate_sequences`` / ``generate_texts``;
- engine.py: which engine decodes (CTranslate2 where the model converts and every setting maps, transformers'
  ``generate`` otherwise), checked before the run starts and said in one log line;
- ctranslate2_engine.py (with ctranslate2_cache, ctranslate2_calls, ctranslate2_settings): the converted model,
  one call per shard, ``generate``'s settings mapped to the engine's arguments;
- transformers_engine.py (with ngram_blocking): ``model.generate`` over length-sorted batches;
- generation_config.py, lengths.py and detokenize.py: what both engines share (the settings ``generate`` would
  use, its length bounds, ids to text in dataset order).

Both engines give ``generate``'s outputs for the settings they run (tests/unit/decoding compares them token for
token); speed and what was tried and retired: docs/speedups.md.
"""
