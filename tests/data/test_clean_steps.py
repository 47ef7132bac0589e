"""Each cleaning step on its own: extraction of pages the test writes, ftfy repair,
quality rules, personal data, script detection; configuration identity and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tokenpact.data import Document, read_documents
from tokenpact.data.cleaning import (
    CleaningPipeline,
    DecontamConfig,
    ExtractConfig,
    LangIdConfig,
    PiiConfig,
    QualityConfig,
    RepairConfig,
    clean,
    iban_valid,
    luhn_valid,
    script_shares,
    writing_systems,
)
from tokenpact.data.cleaning.scripts import is_mixed
from tokenpact.errors import ConfigError, InvalidInputError

pytest.importorskip("trafilatura")
pytest.importorskip("ftfy")
pytest.importorskip("py3langid")

ARTICLE = (
    "Domestic cats sleep for most of the day, often twelve to sixteen hours, and they "
    "wake at dusk and dawn to hunt, which is when their prey is most active. Their "
    "wild relatives keep the same rhythm: resting through the heat of the day saves "
    "the energy that a short and fast chase needs. Owners who see a cat asleep on a "
    "sunny windowsill are watching a habit that is much older than the house."
)
ARTICLE_DE = (
    "Hauskatzen schlafen den größten Teil des Tages, oft zwölf bis sechzehn Stunden, und "
    "sie werden in der Dämmerung wach, um zu jagen, denn dann ist ihre Beute am "
    "aktivsten. Ihre wilden Verwandten haben denselben Rhythmus und ruhen in der Hitze "
    "des Tages, damit sie Kraft für eine kurze und schnelle Jagd behalten."
)
ARTICLE_JA = (
    "猫は一日の大半を眠って過ごし、夕暮れと夜明けに目を覚まして狩りをします。"
    "獲物が最も活発になるのがその時間だからです。野生の仲間も同じリズムで暮らし、"
    "昼の暑さの中では体を休めて、短く速い追跡のための力を蓄えています。"
)


def page(title: str, body: str, url: str, lang: str = "en") -> str:
    menu = "".join(f'<li><a href="/{w}">{w.title()}</a></li>' for w in ("home", "shop", "login"))
    paragraphs = "".join(f"<p>{p}</p>" for p in body.split("\n"))
    return (
        f'<!DOCTYPE html><html lang="{lang}"><head><title>{title}</title>'
        f'<link rel="canonical" href="{url}"></head><body>'
        f'<nav><ul class="menu">{menu}</ul></nav><div class="ad">Buy cheap widgets now</div>'
        f"<main><article><h1>{title}</h1>{paragraphs}</article></main>"
        "<footer><p>Copyright 2024 Example Media. All rights reserved.</p>"
        '<a href="/imprint">Imprint</a></footer></body></html>'
    )


def test_extract_html_pages_keeps_main_text_and_url(tmp_path: Path) -> None:
    pages = {
        "cats-en.html": page("Why cats sleep", ARTICLE, "https://example.org/en/cats"),
        "cats-de.html": page("Warum Katzen schlafen", ARTICLE_DE, "https://example.org/de/k", "de"),
        "cats-ja.html": page("猫はなぜ眠る", ARTICLE_JA, "https://example.org/ja/neko", "ja"),
    }
    for name, html in pages.items():
        (tmp_path / name).write_text(html, encoding="utf-8")
    docs = list(read_documents(sorted(tmp_path.glob("*.html")), format="text"))
    docs.append(Document("plain", ARTICLE))
    result = clean(docs, steps=[ExtractConfig()])
    by_id = {d.doc_id: d for d in result.documents}
    for name, article in (("cats-en.html", ARTICLE), ("cats-de.html", ARTICLE_DE)):
        text = by_id[name].text or ""
        assert article.split(",")[0] in text
        for boilerplate in ("Copyright 2024", "Buy cheap widgets", "Login", "Imprint"):
            assert boilerplate not in text
    assert "夕暮れと夜明け" in (by_id["cats-ja.html"].text or "")
    assert by_id["cats-en.html"].meta["url"] == "https://example.org/en/cats"
    assert by_id["cats-en.html"].meta["format"] == "html"
    assert by_id["plain"].text == ARTICLE and by_id["plain"].meta["format"] == "text"
    record = result.step_records()[0]
    assert record["counts"] == {"html": 3, "passed_through": 1}
    assert record["modified"] == 3 and record["bytes_out"] < record["bytes_in"]


def test_extract_drops_pages_without_main_text() -> None:
    empty = "<html><head><title>t</title></head><body><script>var a = 1;</script></body></html>"
    result = clean([Document("empty", empty)], steps=[ExtractConfig()])
    assert result.documents[0].dropped_by == "extract"
    assert result.rejected_records()[0]["reasons"] == ["extract.no_main_text"]


def test_repair_fixes_mojibake_only_when_named() -> None:
    broken = "The cafÃ© on the corner serves crÃ¨me brÃ»lÃ©e &amp; tea."
    docs = [Document("broken", broken), Document("fine", ARTICLE)]
    result = clean(docs, steps=[RepairConfig()])
    assert result.documents[0].text == "The café on the corner serves crème brûlée & tea."
    assert result.documents[1].text == ARTICLE
    record = result.step_records()[0]
    assert record["library"] == "ftfy" and record["modified"] == 1
    # Not named, not run: the same text survives a pipeline without the repair step.
    assert clean(docs, steps=[PiiConfig()]).documents[0].text == broken
    assert RepairConfig().config_hash != RepairConfig(uncurl_quotes=True).config_hash


def test_script_detection_and_mixed_text() -> None:
    assert writing_systems(script_shares(ARTICLE_JA)) == {"JAPANESE": 1.0}
    assert not is_mixed(script_shares(ARTICLE_JA), threshold=0.2)
    mixed = "Привет, как дела? Hello, how are you doing today, my friend?"
    shares = script_shares(mixed)
    assert set(shares) == {"CYRILLIC", "LATIN"}
    assert is_mixed(shares, threshold=0.2)
    assert script_shares("1234 !!") == {}
    result = clean([Document("m", mixed)], steps=[LangIdConfig(drop_mixed=True)])
    assert result.documents[0].reasons["langid"] == ["langid.mixed_script"]


def test_langid_annotates_and_filters() -> None:
    docs = [Document("en", ARTICLE), Document("de", ARTICLE_DE), Document("ja", ARTICLE_JA)]
    result = clean(docs, steps=[LangIdConfig(keep=("en", "ja"))])
    langs = {d.doc_id: d.meta["language"] for d in result.documents}
    assert langs == {"en": "en", "de": "de", "ja": "ja"}
    assert all(d.meta["language_confidence"] > 0.9 for d in result.documents)
    assert [d.doc_id for d in result.kept] == ["en", "ja"]
    assert result.step_records()[0]["reasons"] == {"langid.language:de": 1}


def _doc_with_lines(lines: list[str]) -> str:
    return "\n".join(lines)


def test_quality_rules_fire_by_name() -> None:
    cases = {
        "gopher.word_count": "Too short to be a page of the web.",
        "gopher.dup_lines": _doc_with_lines(
            [ARTICLE] + ["Click here to subscribe to the list."] * 8
        ),
        "gopher.bullet_lines": _doc_with_lines(
            [f"• item {i} of the list we have" for i in range(60)]
        ),
        "gopher.ellipsis_lines": _doc_with_lines([f"and then the {i} thing..." for i in range(40)]),
        "gopher.symbol_word_ratio": ARTICLE + " #tag" * 30,
        "gopher.stop_words": " ".join(f"word{i} alpha beta gamma" for i in range(30)),
        "c4.lorem_ipsum": ARTICLE + " Lorem ipsum dolor sit amet.",
        "gopher.top_2gram_chars": ARTICLE + " buy now" * 80,
    }
    worker = QualityConfig().prepare()
    for rule, text in cases.items():
        outcome = worker(text, {"language": "en"})
        assert rule in outcome.reasons, (rule, outcome.reasons)
    assert worker(ARTICLE, {"language": "en"}).text == ARTICLE
    # A page that repeats itself with one word changed is Gopher's duplicate n-gram case.
    echo = worker(ARTICLE + " " + ARTICLE.replace("cats", "dogs"), {"language": "en"})
    assert "gopher.dup_5gram_chars" in echo.reasons and echo.text is None
    code = ARTICLE + " def f(x) { return x; }"
    assert QualityConfig().prepare()(code, {"language": "en"}).text is not None
    assert "c4.curly_bracket" in QualityConfig(c4_curly_bracket=True).prepare()(code, {}).reasons


def test_quality_report_names_thresholds_and_counts() -> None:
    docs = [Document("short", "A few words."), Document("ok", ARTICLE + " " + ARTICLE_DE)]
    result = clean(docs, steps=[QualityConfig(min_words=20)])
    record = result.step_records()[0]
    rules = {r["rule"]: r for r in record["rules"]}
    assert rules["gopher.word_count"]["threshold"] == 20
    assert rules["gopher.dup_5gram_chars"]["threshold"] == "0.15"
    assert record["reasons"]["gopher.word_count"] == 1
    assert [r["id"] for r in result.rejected_records()] == ["short"]


def test_datatrove_mode_lists_the_rules_it_applies(real_docs: list[Document]) -> None:
    """In mode "datatrove" the rule table is datatrove's rules, named by the reasons the
    mode reports, with the thresholds the configuration gives them."""
    texts = [d.text for d in real_docs[:150]] + ["", "lorem ipsum dolor sit amet."]
    for c4 in (False, True):
        config = QualityConfig.datatrove(c4=c4)
        names = [r["rule"] for r in config.rules()]
        assert names and all(n.startswith("datatrove.") for n in names)
        assert any(n.startswith("datatrove.c4_quality.") for n in names) == c4
        reasons = {r for o in config.prepare().batch(texts, [{}] * len(texts)) for r in o.reasons}
        assert len(reasons) > 2 and reasons <= set(names)
        record = clean([Document("d", texts[0])], steps=[config]).step_records()[0]
        assert [r["rule"] for r in record["rules"]] == names
    rules = {r["rule"]: r for r in QualityConfig(mode="datatrove", min_words=20).rules()}
    assert rules["datatrove.gopher_quality.gopher_short_doc"]["threshold"] == 20
    off = QualityConfig(mode="datatrove", min_stop_words=None).rules()
    assert "datatrove.gopher_quality.gopher_enough_stop_words" not in {r["rule"] for r in off}


def test_c4_line_filter_removes_lines_and_counts_them() -> None:
    text = _doc_with_lines(
        [
            ARTICLE,
            "Home | Shop | Login",
            "Please enable JavaScript to view the comments powered by a widget.",
            "This site uses cookies to give you a better experience on the web.",
            "Short line.",
        ]
    )
    outcome = QualityConfig.c4().prepare()(text, {"language": "en"})
    assert outcome.counts == {
        "c4.line_terminal_punctuation": 1,
        "c4.line_javascript": 1,
        "c4.line_policy": 1,
        "c4.line_min_words": 1,
    }
    assert outcome.text is None or outcome.text == ARTICLE


def test_pii_replaces_typed_placeholders() -> None:
    text = (
        "Write to jane.doe@example.com or call +44 20 7946 0958 or (555) 123-4567. "
        "Server 192.168.10.5 and 2001:db8:85a3::8a2e:370:7334 logged card 4111 1111 1111 1111; "
        "card 4111 1111 1111 1112 fails Luhn. Version 1.2.3.4.5 and date 2021-03-04 "
        "at 12:30:45 are not personal. IBAN GB82 WEST 1234 5698 7654 32."
    )
    worker = PiiConfig(types=("EMAIL", "IPV4", "IPV6", "CREDIT_CARD", "IBAN", "PHONE")).prepare()
    outcome = worker(text, {})
    assert outcome.text is not None
    for placeholder in ("<EMAIL>", "<IPV4>", "<IPV6>", "<CREDIT_CARD>", "<IBAN>", "<PHONE>"):
        assert placeholder in outcome.text
    assert dict(outcome.counts) == {
        "EMAIL": 1,
        "IPV4": 1,
        "IPV6": 1,
        "CREDIT_CARD": 1,
        "IBAN": 1,
        "PHONE": 2,
    }
    for kept in ("4111 1111 1111 1112", "1.2.3.4.5", "2021-03-04", "12:30:45"):
        assert kept in outcome.text
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")
    assert iban_valid("GB82WEST12345698765432") and not iban_valid("GB82WEST12345698765433")


def test_pii_policy_is_configuration() -> None:
    text = ARTICLE + " Contact: ops@example.net."
    flagged = PiiConfig(policy="flag").prepare()(text, {})
    assert flagged.text == text and flagged.reasons == ("pii.EMAIL",)
    assert PiiConfig(policy="drop").prepare()(text, {}).text is None
    custom = PiiConfig(placeholder="[{type}]").prepare()(text, {})
    assert custom.text is not None and custom.text.endswith("[EMAIL].")
    hashes = {PiiConfig().config_hash, PiiConfig(policy="flag").config_hash}
    hashes.add(PiiConfig(placeholder="[{type}]").config_hash)
    assert len(hashes) == 3


def test_pii_on_real_text_keeps_code_and_prose(real_docs: list[Document]) -> None:
    result = clean(real_docs, steps=[PiiConfig()])
    record = result.step_records()[0]
    assert record["documents_out"] == len(real_docs)
    # The built-in corpus (stdlib docs and code) holds no phone or card numbers; what is
    # replaced must be an address-like string, never a version or a plain number.
    assert set(record["counts"]) <= {"EMAIL", "IPV4", "IPV6"}


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (lambda: QualityConfig(max_dup_lines=1.5), "max_dup_lines"),
        (lambda: QualityConfig.from_json({"min_word": 3}), "unknown quality option"),
        (lambda: QualityConfig(max_dup_ngram_chars=((5, "x"),)), "pairs"),
        (lambda: LangIdConfig(keep=("english",)), "not py3langid labels"),
        (lambda: PiiConfig(types=("SSN",)), "unknown personal-data types"),
        (lambda: PiiConfig(placeholder="<PII>"), "{type}"),
        (lambda: DecontamConfig(), "needs eval_sets"),
        (lambda: ExtractConfig(input="pdf"), "extract input"),
        (lambda: RepairConfig(normalization="NFX"), "normalization"),
        (lambda: CleaningPipeline.from_config({"dedupe": {}}), "unknown cleaning steps"),
        (lambda: CleaningPipeline.from_config({}, steps=["quality", "quality"]), "once"),
        (lambda: CleaningPipeline.from_config({"pii": {}}, steps=["quality"]), "not in the step"),
        (lambda: CleaningPipeline.from_config({"quality": []}), "JSON object"),
        (lambda: CleaningPipeline.from_config([1, 2]), "JSON object of step options"),  # type: ignore[arg-type]
    ],
)
def test_invalid_configuration_is_a_config_error(factory: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        factory()  # type: ignore[operator]


def test_bad_input_gives_typed_errors(tmp_path: Path) -> None:
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("Grüße aus Köln".encode("latin-1"))
    with pytest.raises(InvalidInputError, match="not UTF-8"):
        clean(read_documents(latin1), steps=["pii"])
    with pytest.raises(InvalidInputError, match="does not exist"):
        clean(read_documents(tmp_path / "missing.jsonl"), steps=["pii"])
    with pytest.raises(InvalidInputError, match="cannot be read"):
        DecontamConfig(eval_sets=(str(tmp_path / "missing-eval.jsonl"),)).prepare()
    with pytest.raises(InvalidInputError, match="not a Document"):
        clean(["plain string"], steps=["pii"])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match="occurs twice"):
        clean([Document("a", "x"), Document("a", "y")], steps=["pii"])
    bad_config = tmp_path / "config.json"
    bad_config.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid UTF-8 JSON"):
        CleaningPipeline.from_file(bad_config)
    bad_config.write_text(json.dumps({"quality": {"min_words": -1}}), encoding="utf-8")
    with pytest.raises(ConfigError, match="min_words"):
        CleaningPipeline.from_file(bad_config)
