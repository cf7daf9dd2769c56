"""TextBox-style text generation framework: config-driven training, evaluation and search."""
__version__ = "0.1.0"
