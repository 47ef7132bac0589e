"""Shared test setup: hypothesis profiles, the engine fixture and real-text corpora.

Hypothesis profiles (select with ``HYPOTHESIS_PROFILE=<name>``; ``ci`` is the default):
``ci`` a moderate number of examples and no deadline (CI machines stall); ``dev`` a
quick pass while editing; ``thorough`` for an occasional long run.
"""

from __future__ import annotations

import gettext
import glob
import os
import sysconfig
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import settings

settings.register_profile("ci", max_examples=80, deadline=None, print_blob=True)
settings.register_profile("dev", max_examples=15, deadline=None)
settings.register_profile("thorough", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# How many stdlib files / gettext catalogs the real-text tests read. Fixed counts and a
# sorted, evenly strided pick keep the selection deterministic on a given interpreter.
STDLIB_FILES = 200
GETTEXT_CATALOGS = 100
LOCALE_GLOB = "/usr/share/locale/*/LC_MESSAGES/*.mo"


# Peers that the test extras install (pinned in pyproject.toml). Under CI=true a test
# that skips because one of them cannot be imported fails instead: a conformance claim
# must never pass by skipping. Other optional modules (torch) may still skip.
REQUIRED_PEERS_IN_CI = frozenset(
    {
        "tiktoken",
        "tiktoken.load",
        "tokenizers",
        "transformers",
        "transformers.convert_slow_tokenizer",
        "sentencepiece",
        "google.protobuf",
        "jinja2",
        "hypothesis",
        "regex",
    }
)


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    if not (report.skipped and _in_ci()) or not isinstance(report.longrepr, tuple):
        return
    reason = str(report.longrepr[2])
    for peer in REQUIRED_PEERS_IN_CI:
        if f"could not import '{peer}'" in reason:
            report.outcome = "failed"
            report.longrepr = f"{reason} (CI=true: required peer {peer!r} is missing)"
            return


@pytest.fixture(scope="session")
def tp() -> ModuleType:
    """The ``tokenpact`` package with its native engine.

    A missing engine is an error, never a silent skip; set ``TOKENPACT_REFERENCE_ONLY=1``
    to skip engine tests while only the pure-Python reference exists.
    """
    try:
        import tokenpact

        tokenpact.train_bpe  # noqa: B018 - the attribute access is the check
    except (ImportError, AttributeError) as exc:
        if os.environ.get("TOKENPACT_REFERENCE_ONLY") == "1":
            pytest.skip(f"engine not available ({exc}); TOKENPACT_REFERENCE_ONLY=1")
        raise
    return tokenpact


def _strided(items: list[Path], count: int) -> list[Path]:
    step = max(1, len(items) // count)
    return items[::step][:count]


@pytest.fixture(scope="session")
def stdlib_sources() -> list[tuple[str, str]]:
    """``(relative path, text)`` for ~200 ``.py`` files of the running interpreter's stdlib."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(
        (p for p in root.rglob("*.py") if "site-packages" not in p.parts),
        key=lambda p: p.relative_to(root).as_posix(),
    )
    out: list[tuple[str, str]] = []
    for path in _strided(files, STDLIB_FILES):
        try:
            out.append((path.relative_to(root).as_posix(), path.read_bytes().decode("utf-8")))
        except (OSError, UnicodeDecodeError):
            continue  # a few test fixtures use legacy encodings on purpose
    if not out:
        pytest.skip(f"no readable stdlib sources under {root}")
    return out


def _catalog_text(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            translations = gettext.GNUTranslations(handle)
    except (OSError, UnicodeDecodeError, ValueError, LookupError):
        return None
    # GNUTranslations has no public iterator over messages; _catalog is the parsed table.
    # Keys are msgids or (msgid, plural index); values are the translated strings.
    catalog: dict[object, str] = getattr(translations, "_catalog", {})
    parts: list[str] = []
    for key in sorted(catalog, key=repr):
        msgid = key[0] if isinstance(key, tuple) else key
        parts.append(f"{msgid}\n{catalog[key]}")
    return "\n\n".join(parts)


@pytest.fixture(scope="session")
def gettext_catalogs() -> list[tuple[str, str]]:
    """``(path, messages)`` of up to 100 system gettext catalogs; skip if there are none."""
    paths = [Path(p) for p in sorted(glob.glob(LOCALE_GLOB))]
    out: list[tuple[str, str]] = []
    for path in _strided(paths, GETTEXT_CATALOGS):
        text = _catalog_text(str(path))
        if text:
            out.append((str(path), text))
    if not out:
        pytest.skip(f"no readable gettext catalogs matching {LOCALE_GLOB}")
    return out
