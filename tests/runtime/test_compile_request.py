"""compile_request: hashes against the checkpoint declaration (failing closed), IDs
against its rows, the prompt boundary, and the returned IDs, policy and cache keys."""

from __future__ import annotations

import pytest

from tokenpact.chat import assistant, user
from tokenpact.errors import ContractError, InvalidInputError
from tokenpact.runtime import CacheNamespace, StopPolicy, compile_request

from .seed_checkpoint import COMPILER, TOK
from .seed_checkpoint import checkpoint as _checkpoint

POLICY = StopPolicy(stop_token_ids=[260], stop_strings=["STOP"], max_new_tokens=64)


def _prefill():
    return COMPILER.compile(
        [user("Give the answer as JSON, ok?"), assistant('{answer:"')], mode="prefill"
    )


def test_compiles_a_conversation_with_cache_keys() -> None:
    conv = _prefill()
    ns = CacheNamespace(
        model="m@1",
        tokenizer_hash=TOK.semantic_hash,
        template_hash=COMPILER.template_hash,
        mode="conservative",
    )
    req = compile_request(conv, TOK, _checkpoint(), POLICY, namespace=ns, block_size=8)
    assert req.input_ids == tuple(conv.input_ids) and req.prompt_boundary == 60
    assert req.policy is POLICY and req.template_hash == COMPILER.template_hash
    assert req.cache is not None and len(req.cache.keys) == 7 and len(req.cache.tail) == 4
    # Messages with a compiler give the same request.
    again = compile_request(
        [user("Give the answer as JSON, ok?"), assistant('{answer:"')],
        TOK,
        _checkpoint(),
        POLICY,
        compiler=COMPILER,
        mode="prefill",
        namespace=ns,
        block_size=8,
    )
    assert again == req


def test_raw_ids_need_a_template_hash() -> None:
    ids = list(_prefill().input_ids)
    req = compile_request(ids, TOK, _checkpoint(), POLICY, template_hash=COMPILER.template_hash)
    assert req.prompt_boundary == len(ids) and req.cache is None
    with pytest.raises(ContractError, match="no template hash"):
        compile_request(ids, TOK, _checkpoint(), POLICY)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"tokenizer_hash": "sha256:" + "0" * 64}, "tokenizer hash"),
        ({"template_hash": "sha256:" + "0" * 64}, "template hash"),
        ({"tokenizer_hash": None}, "bind it"),
        ({"input_embedding_rows": 200}, "no row"),
        ({"output_vocab_rows": 259}, "can never be generated"),
    ],
)
def test_mismatches_fail_closed(change, message) -> None:
    with pytest.raises(ContractError, match=message):
        compile_request(_prefill(), TOK, _checkpoint(**change), POLICY)


def test_training_sequences_are_not_servable() -> None:
    done = COMPILER.compile([user("Q?"), assistant("A")], mode="training")
    with pytest.raises(ContractError, match="prompt boundary"):
        compile_request(done, TOK, _checkpoint(), POLICY)


def test_bad_sources() -> None:
    with pytest.raises(InvalidInputError):
        compile_request("text", TOK, _checkpoint(), POLICY, template_hash=COMPILER.template_hash)
    with pytest.raises(InvalidInputError):
        compile_request([], TOK, _checkpoint(), POLICY, template_hash=COMPILER.template_hash)


def test_conservative_namespace_must_name_the_checked_release() -> None:
    ns = CacheNamespace(
        model="m",
        tokenizer_hash="sha256:" + "5" * 64,
        template_hash=COMPILER.template_hash,
        mode="conservative",
    )
    with pytest.raises(ContractError, match="namespace"):
        compile_request(_prefill(), TOK, _checkpoint(), POLICY, namespace=ns)
