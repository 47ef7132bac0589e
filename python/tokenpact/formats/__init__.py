"""Tokenizer file formats: the native artifact and the formats of peer libraries."""
