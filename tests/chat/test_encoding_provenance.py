"""A formatted conversation converts to an Encoding that names tokenizer and template."""

from __future__ import annotations

import pickle
from typing import Any

from tokenpact.chat import SequenceCompiler, SequenceGrammar, assistant, system, user

from .conftest import ChatModel

MESSAGES = [system("Be brief."), user("Wie spät ist es in Tōkyō?"), assistant("Es ist 9 Uhr.")]


def _check(conv: Any, tok: Any) -> None:
    enc = conv.to_encoding()
    enc.validate(tok.vocab_size)
    assert enc.ids == conv.input_ids
    assert enc.tokenizer_hash == tok.semantic_hash == conv.tokenizer_hash
    assert enc.template_hash == conv.template_hash is not None
    assert enc.special_tokens_mask == conv.special_tokens_mask
    assert [s is None for s in enc.sequence_ids] == [o == "control" for o in enc.origins]
    back = pickle.loads(pickle.dumps(enc))
    assert back == enc and back.template_hash == conv.template_hash


def test_grammar_conversation_to_encoding(seed_tok: Any) -> None:
    compiler = SequenceCompiler(seed_tok, SequenceGrammar())
    conv = compiler.format(MESSAGES, mode="training")
    _check(conv, seed_tok)
    other = SequenceCompiler(seed_tok, SequenceGrammar(stop_sequences=("STOP",)))
    assert other.format(MESSAGES, mode="training").to_encoding().template_hash != conv.template_hash


def test_hf_template_conversation_to_encoding(deepseek: ChatModel) -> None:
    conv = deepseek.template.format(MESSAGES, mode="training")
    _check(conv, deepseek.tok)
    enc = conv.to_encoding()
    assert conv.text is not None and enc.original_length == len(conv.text)
    content = [k for k, o in enumerate(enc.origins) if o == "content"]
    assert content
    start, end = enc.offsets[content[0]]
    assert conv.text[start:end] in "".join(m.content for m in MESSAGES)
    assert enc.tokens[content[0]] == deepseek.tok.id_to_token(enc.ids[content[0]])
