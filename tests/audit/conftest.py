"""Fixtures of the audit tests: real harvested text with slices, small trained tokenizers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tokenpact.audit.corpus import AuditCorpus

SHARED_CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus"


@pytest.fixture(scope="session")
def docs_corpus() -> AuditCorpus:
    """~300 kB of the built-in corpus (stdlib code, prose, gettext catalogs) with slices."""
    from tokenpact.corpus import builtin_corpus

    docs = builtin_corpus(max_bytes=300_000)
    if len(docs) < 10:
        pytest.skip("the built-in corpus harvested fewer than 10 documents here")
    return AuditCorpus.from_records(
        ({"text": d.text, "slice": d.slice, "source": d.source} for d in docs), name="builtin"
    )


@pytest.fixture(scope="session")
def small_tok(tp: Any, docs_corpus: AuditCorpus) -> Any:
    return tp.train_bpe(docs_corpus.texts, vocab_size=700, special_tokens=["<|endoftext|>"])


def shared_corpus_file(name: str) -> Path:
    path = SHARED_CORPUS / name
    if not path.is_file():
        pytest.skip(f"{name} is not at {path} (the shared corpus sits beside the checkout)")
    return path


FALLBACK_PARALLEL = [
    {
        "en": "Open file",
        "de": "Datei öffnen",
        "fr": "Ouvrir le fichier",
        "ru": "Открыть файл",
        "ja": "ファイルを開く",
        "hi": "फ़ाइल खोलें",
    },
    {
        "en": "Save changes?",
        "de": "Änderungen speichern?",
        "fr": "Enregistrer les modifications ?",
        "ru": "Сохранить изменения?",
        "ja": "変更を保存しますか?",
        "hi": "परिवर्तन सहेजें?",
    },
    {
        "en": "Permission denied",
        "de": "Zugriff verweigert",
        "fr": "Permission refusée",
        "ru": "Доступ запрещён",
        "ja": "許可がありません",
        "hi": "अनुमति अस्वीकृत",
    },
    {"en": "Search", "de": "Suchen", "fr": "Rechercher", "ru": "Поиск", "ja": "検索", "hi": "खोजें"},
]


def gettext_parallel_items(
    domain: str = "iso_3166-1.mo", languages: int = 30
) -> list[dict[str, str]]:
    """Parallel items harvested from the system's gettext catalogs of one domain.

    Each msgid (English) with its translations: real multi-script parallel text that
    every Debian machine carries. Deterministic: sorted locales and msgids.
    """
    import gettext
    import glob

    paths = sorted(glob.glob(f"/usr/share/locale/*/LC_MESSAGES/{domain}"))[:languages]
    items: dict[str, dict[str, str]] = {}
    for path in paths:
        lang = path.split("/")[-3]
        try:
            with open(path, "rb") as handle:
                catalog = getattr(gettext.GNUTranslations(handle), "_catalog", {})
        except (OSError, ValueError, LookupError, UnicodeDecodeError):
            continue
        for msgid, text in catalog.items():
            if isinstance(msgid, str) and msgid and text and text != msgid:
                items.setdefault(msgid, {"en": msgid})[lang] = text
    out = [items[k] for k in sorted(items) if len(items[k]) >= 3]
    # Without system catalogs (a minimal image) the report still needs parallel text:
    # a few common UI strings keep the premium chart and the browser test meaningful.
    return out if len(out) >= 20 else FALLBACK_PARALLEL
