"""Trainers. Each trainer validates its config in Python and runs in the Rust engine."""

from .bpe import train_bpe

__all__ = ["train_bpe"]
