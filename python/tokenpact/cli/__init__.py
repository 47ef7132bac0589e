"""The ``tokenpact`` command line: one module per command, wired up in :mod:`.main`."""

from .main import cli, main

__all__ = ["cli", "main"]
