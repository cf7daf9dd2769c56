"""What data/ and model/ both need to know about a tokenizer's tokens and a model's use of them (they are siblings
that never import each other): the languages of a multilingual tokenizer (languages.py). Standard library only;
tokenizers and models are read through the attributes transformers gives them, never imported. Above config,
below model, data and decoding."""
