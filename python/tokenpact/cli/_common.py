"""Shared CLI pieces: options, text input, error-to-exit-code mapping, small printers.

Exit codes scripts can rely on: 0 success, 1 a tokenpact error (``error: <message>``
on stderr, no traceback; a missing or unreadable file is always one), 2 a usage error
(click's own handling).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from ..errors import ArtifactError, InvalidInputError, TokenpactError

if TYPE_CHECKING:
    from ..core import Tokenizer

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


# Library errors name the Python keyword that fixes them; a CLI user typed flags, so the
# message is respelled with the flag (``text_field=`` -> ``--text-field``).
_PARAMETERS = (
    "text_field", "id_field", "source_field", "group_field", "duplicate_ids", "overwrite",
    "max_length", "append_eod", "add_bos", "allowed_special", "records_per_shard",
    "allow_drop", "drop",
)  # fmt: skip
_PARAMETER = re.compile(
    r"\b(" + "|".join(_PARAMETERS) + r")\s*=(?:\s*(?:True\b|'([^']*)'|\"([^\"]*)\"))?"
)


def _flag(match: re.Match[str]) -> str:
    flag = "--" + match.group(1).replace("_", "-")
    value = match.group(2) if match.group(2) is not None else match.group(3)
    return f"{flag} {value}" if value else flag


def cli_spelling(message: str) -> str:
    """``message`` with Python keyword spellings replaced by the CLI flags that set them."""
    return _PARAMETER.sub(_flag, message)


class TokenpactGroup(click.Group):
    """A click group that turns a :class:`TokenpactError` into ``error: ...`` and exit 1."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # No shell can pass a NUL byte; a program that does gets a usage error, not the
        # ValueError every OS call would raise on such a path.
        if any("\x00" in arg for arg in args):
            raise click.UsageError("an argument contains a NUL character", ctx)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except TokenpactError as exc:
            click.echo(f"error: {cli_spelling(str(exc))}", err=True)
            ctx.exit(EXIT_ERROR)
        except UnicodeDecodeError as exc:
            # Bytes read from an input file that are not UTF-8 (an argument never decodes
            # here: argv arrives as str with surrogate escapes, caught just below).
            click.echo(
                f"error: an input is not UTF-8 text ({exc.reason} at byte {exc.start}); "
                "convert it first (e.g. iconv -f latin1 -t utf-8)",
                err=True,
            )
            ctx.exit(EXIT_ERROR)
        except UnicodeError as exc:
            # A lone surrogate in an argument (undecodable bytes in argv or a file name).
            click.echo(
                f"error: an argument is not valid Unicode text ({exc}); rename the file "
                "or pass the text with --file",
                err=True,
            )
            ctx.exit(EXIT_ERROR)
        except OSError as exc:
            # A bad output path, a full disk, a name too long: a clean message, exit 1.
            where = f" {exc.filename}" if exc.filename else ""
            click.echo(
                f"error: cannot access{where}: {exc.strerror or exc}; check the path, its "
                "permissions and the free space",
                err=True,
            )
            ctx.exit(EXIT_ERROR)


class InputPath(click.Path):
    """``click.Path(exists=True)`` whose missing file is a tokenpact error (exit 1, like
    every other missing or unreadable input), not a usage error (exit 2)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            missing = self.exists and not Path(os.fsdecode(value)).exists()
        except (OSError, ValueError):
            missing = True
        if missing:
            raise ArtifactError(f"{os.fsdecode(value)} does not exist; check the path")
        return super().convert(value, param, ctx)


def fail(message: str) -> NoReturn:
    """Print ``error: message`` to stderr and exit 1 (for failures that are not exceptions)."""
    click.echo(f"error: {message}", err=True)
    raise click.exceptions.Exit(EXIT_ERROR)


# ----------------------------------------------------------------------------- options


def tokenizer_option(func: F) -> F:
    return click.option(
        "--tokenizer",
        "-t",
        "tokenizer_path",
        required=True,
        type=click.Path(path_type=Path),
        help="Artifact directory written by `tokenpact train` / tok.save(), a tokenpact.json, "
        "or another file tp.Tokenizer.load reads.",
    )(func)


def threads_option(func: F) -> F:
    return click.option(
        "--threads",
        type=click.IntRange(min=1),
        default=None,
        help="Worker threads (default: all cores). Results never depend on it.",
    )(func)


def progress_option(func: F) -> F:
    return click.option(
        "--progress/--no-progress",
        default=None,
        help="Show progress bars on stderr (default: only when stderr is a terminal).",
    )(func)


def text_input_options(func: F) -> F:
    """``[TEXT]`` and ``--file``; with neither, the text is read from stdin."""
    func = click.option(
        "--file",
        "-f",
        "file",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Read the text from this UTF-8 file (bytes kept exactly, CRLF included).",
    )(func)
    return click.argument("text", required=False)(func)


def special_options(func: F) -> F:
    func = click.option(
        "--add-special-tokens",
        is_flag=True,
        help="Apply the tokenizer's post-processor (for example prepend BOS).",
    )(func)
    return click.option(
        "--allowed-special",
        "allowed_special",
        multiple=True,
        metavar="all|SPELLING",
        help="Let these special-token spellings in the text become control IDs "
        "(repeatable; 'all' for every special). By default they are ordinary text.",
    )(func)


def resolve_progress(flag: bool | None) -> bool:
    """An explicit --progress/--no-progress wins; otherwise only on a terminal."""
    return sys.stderr.isatty() if flag is None else flag


def resolve_allowed_special(values: Sequence[str]) -> str | frozenset[str]:
    """Map the repeatable option to the ``allowed_special`` argument of ``encode``."""
    if "all" in values:
        return "all"
    return frozenset(values)


# ----------------------------------------------------------------------------- input


def read_text(text: str | None, file: Path | None) -> str:
    """The text to process: the argument, the file, or stdin (decoded as UTF-8)."""
    if text is not None and file is not None:
        raise click.UsageError("pass the text as an argument or with --file, not both")
    if text is not None:
        return text
    if file is not None:
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise InvalidInputError(
                f"cannot read {file}: {exc.strerror or exc}; check the path"
            ) from exc
        return decode_utf8(data, str(file))
    return decode_utf8(sys.stdin.buffer.read(), "stdin")


def decode_utf8(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"{source} is not valid UTF-8 (byte {exc.start}); re-encode it as UTF-8"
        ) from exc


def suggest_tokenizer(path: Path) -> str:
    """``"did you mean X? "`` for the tokenizer file or directory nearest to a missing
    ``path`` in its parent directory (empty when none is close)."""
    import difflib

    parent = path.parent if str(path.parent) else Path(".")
    try:
        names = [p.name for p in parent.iterdir()]
    except OSError:
        return ""
    close = difflib.get_close_matches(path.name, names, n=1, cutoff=0.6)
    return f"did you mean {parent / close[0]}? " if close else ""


def load_tokenizer(path: Path) -> Tokenizer:
    """Load a tokenizer, turning a missing path into a clear :class:`ArtifactError`."""
    if not path.exists():
        raise ArtifactError(
            f"tokenizer path {path} does not exist; {suggest_tokenizer(path)}pass the "
            "directory written by `tokenpact train --output DIR` (or tok.save(DIR)) to "
            "--tokenizer/-t"
        )
    import tokenpact as tp

    ctx = click.get_current_context(silent=True)
    settings = ctx.find_root().obj if ctx is not None else None
    verify = settings.get("verify", True) if isinstance(settings, dict) else True
    return tp.Tokenizer.load(path, verify=verify)


def progress_bar(
    items: Iterable[T], *, total: int | None, desc: str, enabled: bool, unit: str = "doc"
) -> Iterator[T]:
    """A tqdm bar on stderr, or the plain iterable when disabled."""
    if not enabled:
        return iter(items)
    from tqdm import tqdm

    return iter(tqdm(items, total=total, desc=desc, unit=unit, file=sys.stderr, leave=False))


# ----------------------------------------------------------------------------- output


def echo_rows(rows: Sequence[tuple[str, str]], indent: str = "  ", width: int = 0) -> None:
    """Print ``label  value`` rows with the labels aligned (to at least ``width``)."""
    width = max([width, *(len(label) for label, _ in rows)])
    for label, value in rows:
        click.echo(f"{indent}{label.ljust(width)}  {value}")


def escape_piece(piece: bytes) -> str:
    """Readable form of a token's bytes: printable text as is, anything else escaped.

    Bytes that are not valid UTF-8 on their own (half of a multi-byte character) show
    as ``\\xNN``, so a split character is visible instead of a replacement character.
    """
    out = []
    for char in piece.decode("utf-8", "surrogateescape"):
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif char == "\\":
            out.append("\\\\")
        elif char.isprintable():
            out.append(char)
        else:
            out.append(repr(char)[1:-1])
    return "".join(out)


def fmt_bytes(n: int) -> str:
    """Human-readable size in decimal units (matches the MB/s figures)."""
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f} MB"
    if n >= 1_000:
        return f"{n / 1_000:.1f} kB"
    return f"{n} B"


def fmt_seconds(seconds: float) -> str:
    return f"{seconds:.2f} s"
