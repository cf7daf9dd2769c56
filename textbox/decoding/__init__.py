"""Efficient decoding (the FastSeq role): cross-attention caching checks and background detokenisation."""
