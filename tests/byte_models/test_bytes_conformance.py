"""ByT5 and CANINE input IDs equal Hugging Face's ByT5Tokenizer and CanineTokenizer."""

from __future__ import annotations

import pytest

from conformance.peer_data import edge_case_texts
from tokenpact.bytes import ByT5Config, CanineConfig

transformers = pytest.importorskip("transformers")

TEXTS = ["A naïve cat.\n", "", "x", *edge_case_texts(seed=3, mixtures=60)]


def _has_special_spelling(text: str) -> bool:
    # HF's slow tokenizers split special-token spellings out of the text; we read raw text.
    return any(s in text for s in ("<pad>", "</s>", "<unk>", "[CLS]", "[SEP]", "[MASK]"))


@pytest.mark.parametrize("add_eos", [True, False])
def test_byt5_ids_match_hf(add_eos: bool) -> None:
    hf = transformers.ByT5Tokenizer()
    ours = ByT5Config(add_eos=add_eos)
    for text in TEXTS:
        if _has_special_spelling(text):
            continue
        expected = hf(text, add_special_tokens=add_eos)["input_ids"]
        assert ours.ids(text) == expected, text
        assert ours.account(text).n_global == len(expected)


def test_canine_ids_match_hf() -> None:
    hf = transformers.CanineTokenizer()
    ours = CanineConfig(stride=4, add_cls_sep=True)
    for text in TEXTS:
        if _has_special_spelling(text):
            continue
        expected = hf(text)["input_ids"]
        assert ours.ids(text) == expected, text
        assert ours.account(text).n_global == -(-len(expected) // 4)
