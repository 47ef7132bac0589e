"""The ``tokenpact`` command group."""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

import click

from ._common import TokenpactGroup
from .chat_cmd import chat
from .contract_cmds import hash_cmd, reconcile_cmd, verify_cmd
from .convert_cmd import convert
from .data_cmds import data, encode_dataset_cmd
from .decode_cmd import decode
from .encode_cmd import encode
from .inspect_cmd import inspect
from .quickstart_cmd import quickstart
from .train_cmd import train


def _version() -> str:
    try:
        return version("tokenpact")
    except PackageNotFoundError:
        return "unknown (not installed)"


@click.group(
    "tokenpact", cls=TokenpactGroup, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.version_option(_version(), prog_name="tokenpact")
def cli() -> None:
    """tokenpact: tokenizers as versioned contracts.

    Exit codes: 0 success, 1 a tokenpact error (message on stderr), 2 a usage error.
    Start with `tokenpact quickstart`.
    """


for _command in (
    quickstart,
    train,
    encode,
    decode,
    inspect,
    convert,
    chat,
    hash_cmd,
    verify_cmd,
    reconcile_cmd,
    encode_dataset_cmd,
    data,
):
    cli.add_command(_command)


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point (``tokenpact``)."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="tokenpact")
