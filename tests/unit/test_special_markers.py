"""Control-marker roles (document, role, tool, modality) and the literal-text policy.

The contract names BOS, EOS, PAD, document, role, tool and modality IDs with stable
spellings, and declares what literal marker text becomes: ordinary, escaped, allowed or
rejected. The trust rule holds under every policy: untrusted text never yields a control.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import tokenpact as tp
from tokenpact.errors import ConfigError, SpecialTokenError

MARKERS = tp.marker_tokens(
    roles=("system", "user", "assistant"), tools=("call", "result"), modalities=("image",)
)
TEXT = "say <|role:user|> and <|eot|> then \\<|eot|> <|modality:image|>"


@pytest.fixture(scope="module")
def tok() -> tp.Tokenizer:
    corpus = ["hello world, say hi to the user and the assistant"] * 8
    return tp.train_bpe(
        corpus, vocab_size=300, special_tokens=(*tp.DEFAULT_SPECIAL_TOKENS, *MARKERS)
    )


def test_marker_spellings_are_a_function_of_role_and_name() -> None:
    assert tp.marker("role", "user") == tp.SpecialToken("<|role:user|>", "role")
    assert tp.marker("document").content == "<|document|>"
    assert [t.content for t in MARKERS[:2]] == ["<|document:start|>", "<|document:end|>"]
    assert [t.role for t in MARKERS] == ["document"] * 2 + ["role"] * 3 + ["tool"] * 2 + [
        "modality"
    ]
    with pytest.raises(ConfigError, match="marker role"):
        tp.marker("eos", "x")
    with pytest.raises(ConfigError, match="lowercase"):
        tp.marker("tool", "Call!")
    with pytest.raises(ConfigError, match="declared twice"):
        tp.marker_tokens(roles=("user", "user"))


def test_single_roles_stay_unique_marker_roles_are_shared() -> None:
    with pytest.raises(ConfigError, match="two special tokens have role 'eos'"):
        tp.train_bpe(["ab"], vocab_size=260, special_tokens=[("<a>", "eos"), ("<b>", "eos")])
    with pytest.raises(ConfigError, match="unknown role"):
        tp.SpecialToken("<x>", "speaker")


def test_marker_ids_are_stable_and_in_the_manifest(tok: tp.Tokenizer, tmp_path: Path) -> None:
    # IDs follow the declaration order, after the learned pieces, and retraining from
    # the same corpus and declaration gives the same IDs.
    again = tp.train_bpe(
        ["hello world, say hi to the user and the assistant"] * 8,
        vocab_size=300,
        special_tokens=(*tp.DEFAULT_SPECIAL_TOKENS, *MARKERS),
    )
    assert again.special_tokens == tok.special_tokens
    first = min(tok.special_tokens.values())
    assert list(tok.special_tokens.values()) == list(range(first, first + 13))
    ids = tok.manifest["special_tokens"]["ids"]
    assert ids["document"] == [first + 5, first + 6]
    assert ids["role"] == [first + 7, first + 8, first + 9]
    assert ids["tool"] == [first + 10, first + 11]
    assert ids["modality"] == [first + 12]
    assert ids["eos"] == tok.special_tokens["<|eos|>"]
    # The roles survive save and load, and the manifest still verifies.
    back = tp.Tokenizer.load(tok.save(tmp_path / "art"))
    assert back.special_token_roles == tok.special_token_roles
    assert back.manifest["special_tokens"]["ids"] == ids


def test_a_manifest_without_markers_keeps_its_shape() -> None:
    plain = tp.train_bpe(["ab ab"], vocab_size=262)
    assert set(plain.manifest["special_tokens"]["ids"]) == {"bos", "eos", "pad", "unk", "eot"}


def test_ordinary_policy_never_yields_a_control(tok: tp.Tokenizer) -> None:
    policy = tp.LiteralTextPolicy("ordinary")
    controls = set(tok.special_tokens.values())
    for trusted in (False, True):
        ids = policy.encode(tok, TEXT, trusted=trusted)
        assert not controls & set(ids)
        assert tok.decode(ids) == TEXT


def test_escaped_policy_round_trips_and_never_yields_a_control(tok: tp.Tokenizer) -> None:
    policy = tp.LiteralTextPolicy("escaped")
    escaped = policy.escape_text(tok, TEXT)
    assert escaped == ("say \\<|role:user|> and \\<|eot|> then \\\\<|eot|> \\<|modality:image|>")
    ids = policy.encode(tok, TEXT)
    assert not set(tok.special_tokens.values()) & set(ids)
    assert tok.decode(ids) == escaped
    assert policy.unescape_text(tok, tok.decode(ids)) == TEXT
    # The escape is reversible for text that already holds escapes and markers.
    for text in ["\\\\<|eot|>", "<|eot|><|eot|>", "\\", "<|role:user|", "x\\<|bos|>\\"]:
        assert policy.unescape_text(tok, policy.escape_text(tok, text)) == text
    with pytest.raises(ConfigError, match="occurs in the control spelling"):
        tp.LiteralTextPolicy("escaped", escape="|").escape_text(tok, TEXT)


def test_allowed_policy_obeys_the_trust_rule(tok: tp.Tokenizer) -> None:
    policy = tp.LiteralTextPolicy("allowed")
    untrusted = policy.encode(tok, TEXT)
    assert not set(tok.special_tokens.values()) & set(untrusted)
    trusted = policy.encode(tok, TEXT, trusted=True)
    sp = tok.special_tokens
    assert [i for i in trusted if i in sp.values()] == [
        sp["<|role:user|>"],
        sp["<|eot|>"],
        sp["<|eot|>"],
        sp["<|modality:image|>"],
    ]


def test_rejected_policy_raises_on_literal_markers(tok: tp.Tokenizer) -> None:
    policy = tp.LiteralTextPolicy("rejected")
    with pytest.raises(SpecialTokenError, match="<\\|role:user\\|>"):
        policy.encode(tok, TEXT)
    assert policy.encode(tok, "no markers here") == tok.encode("no markers here")


def test_unknown_policy_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="not one of ordinary, escaped, allowed, rejected"):
        tp.LiteralTextPolicy("sometimes")


def test_special_matcher_is_the_public_matcher_of_a_call(tok: tp.Tokenizer) -> None:
    """``Tokenizer.special_matcher``: the matcher engine calls take (what chat encodes
    with) and, with ``find_only``, a finder of the spellings as written."""
    text = "a <|role:user|> b <|eot|>"
    allowed = tok.special_matcher(["<|role:user|>"])
    assert allowed is tok.special_matcher({"<|role:user|>"})  # cached per set
    ids, _, _ = tok.engine.encode_with_offsets(text, allowed, None)
    assert ids.tolist() == tok.encode(text, allowed_special={"<|role:user|>"})
    finder = tok.special_matcher(["<|eot|>"], find_only=True)
    assert finder.find_first(text) == (text.index("<|eot|>"), "<|eot|>")
    assert finder.find_first("a <|role:user|> b") is None
    with pytest.raises(tp.errors.UnknownTokenError, match="<nope>"):
        tok.special_matcher(["<nope>"])


def test_the_spelling_pattern_is_compiled_once_per_spelling_set(
    tok: tp.Tokenizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Escaping and unescaping many texts must not recompile the control-spelling regex
    # on every call: the compiled pattern is shared by every call with the same spellings.
    from tokenpact.core import literal_text

    compiled: list[str] = []
    real_compile = literal_text.re.compile

    def counting_compile(pattern: str, *args: object) -> object:
        if "eot" in str(pattern):
            compiled.append(pattern)
        return real_compile(pattern, *args)

    monkeypatch.setattr(literal_text.re, "compile", counting_compile)
    policy = tp.LiteralTextPolicy("escaped")
    other = tp.LiteralTextPolicy("escaped", escape="~")
    for _ in range(5):
        assert policy.unescape_text(tok, policy.escape_text(tok, TEXT)) == TEXT
        assert other.unescape_text(tok, other.escape_text(tok, TEXT)) == TEXT
    assert len(compiled) <= 1
