"""Tokenizers and chat templates pickle: what ``datasets.map(num_proc=N)``, a spawn-started
``multiprocessing`` pool, a DataLoader's workers and Ray task arguments need.

Each kind of tokenizer users build or load round-trips through pickle (in this process
and in a spawn-started worker, which shares nothing with this one) with the same IDs,
offsets, decoding, semantic hash, release hash and source record. A pickle whose
rebuilt tokenizer behaves differently is refused with a typed error.
"""

from __future__ import annotations

import copy
import multiprocessing
import os
import pickle
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import tokenpact as tp
import tokenpact.chat  # noqa: F401 - until tokenpact/__init__ exports it
from conformance import peer_data
from conformance.peer_data import edge_case_texts
from tokenpact.core import pickling
from tokenpact.errors import ContractError

TEXTS = [
    "The cat sleeps. The dog barks, 123 times!",
    "Кошка спит, собака лает 123 раза.",
    "猫が寝ている。犬が123回吠える。",
    "def f(x):\n    return x * 2  # twice\n",
] * 20
PROBES = [*TEXTS[:4], "", " ", "naïve café ☕ 🚀🚀", "<|endoftext|> after a special"]


def _bpe() -> Any:
    return tp.train_bpe(TEXTS, vocab_size=400)


def _unigram() -> Any:
    return tp.train_unigram(TEXTS * 3, vocab_size=120)


def _char_bpe() -> Any:
    return tp.train_char_bpe(TEXTS, num_merges=60)


def _wordpiece() -> Any:
    return tp.train_wordpiece(TEXTS, vocab_size=200)


def _llama3_hf() -> Any:
    return tp.Tokenizer.load(peer_data.llama3_hf_json())


def _deepseek_v3_hf() -> Any:
    return tp.Tokenizer.load(peer_data.deepseek_v3_files()[0])


def _bert_hf() -> Any:
    return tp.Tokenizer.load(peer_data.minilm_tokenizer_json())


def _cl100k() -> Any:
    return tp.Tokenizer.from_tiktoken(peer_data.cl100k_tiktoken(), pattern="cl100k")


def _sentencepiece() -> Any:
    return tp.Tokenizer.load(peer_data.mistral_models()[0])


def _tekken() -> Any:
    return tp.Tokenizer.load(peer_data.mistral_tekken_files()[0])


def _saved_and_loaded(tmp_path: Path) -> Any:
    _bpe().save(tmp_path / "art")
    return tp.Tokenizer.load(tmp_path / "art")


BUILDERS: dict[str, Callable[..., Any]] = {
    "trained-bpe": _bpe,
    "trained-unigram": _unigram,
    "trained-char-bpe": _char_bpe,
    "trained-wordpiece": _wordpiece,
    "hf-llama-3": _llama3_hf,
    "hf-deepseek-v3": _deepseek_v3_hf,
    "hf-bert-wordpiece": _bert_hf,
    "tiktoken-cl100k": _cl100k,
    "sentencepiece-mistral": _sentencepiece,
    "tekken": _tekken,
}


def _release_hash(tok: Any) -> str:
    """The release hash, or the error saying why there is none (the same on both sides:
    a Tekken file loaded by tokenpact has no native artifact to hash)."""
    try:
        return str(tok.release_hash)
    except tp.TokenpactError as exc:
        return f"{type(exc).__name__}: {exc}"


def _fingerprint(tok: Any, texts: list[str]) -> dict[str, Any]:
    """Everything a worker's output depends on."""
    encoded = [tok.encode(t, allowed_special="all") for t in texts]
    return {
        "class": type(tok).__name__,
        "ids": encoded,
        "offsets": [list(tok.encode_structured(t).offsets) for t in texts],
        "decoded": [tok.decode(ids) for ids in encoded],
        "semantic_hash": tok.semantic_hash,
        "release_hash": _release_hash(tok),
        "source": tok.source,
        "special_tokens": tok.special_tokens,
        "vocab_size": tok.vocab_size,
    }


def _worker_fingerprint(blob: bytes, texts: list[str]) -> dict[str, Any]:
    return _fingerprint(pickle.loads(blob), texts)


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_pickle_round_trip_keeps_behaviour_and_identity(kind: str) -> None:
    tok = BUILDERS[kind]()
    texts = PROBES + edge_case_texts(seed=3, mixtures=20)
    back = pickle.loads(pickle.dumps(tok))
    assert back is not tok
    assert type(back) is type(tok)
    assert _fingerprint(back, texts) == _fingerprint(tok, texts)
    assert back.provenance.files == tok.provenance.files  # the exact source bytes
    assert back.training == tok.training


def test_saved_artifact_pickles_with_its_files(tmp_path: Path) -> None:
    tok = _saved_and_loaded(tmp_path)
    back = pickle.loads(pickle.dumps(tok))
    assert back.release_hash == tok.release_hash
    back.save(tmp_path / "again")  # save keeps working on the other side
    assert tp.Tokenizer.load(tmp_path / "again").semantic_hash == tok.semantic_hash


def test_unigram_sampling_and_char_bpe_pieces_survive() -> None:
    uni = _unigram()
    back = pickle.loads(pickle.dumps(uni))
    assert back.nbest(TEXTS[0], 3) == uni.nbest(TEXTS[0], 3)
    char = _char_bpe()
    back_char = pickle.loads(pickle.dumps(char))
    assert back_char.char_pieces == char.char_pieces
    assert back_char.char_merges == char.char_merges


def test_spawned_worker_encodes_like_this_process() -> None:
    """A spawn-started process imports tokenpact afresh: nothing is inherited."""
    toks = [_bpe(), _llama3_hf()]
    texts = PROBES + edge_case_texts(seed=5, mixtures=10)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        remote = [pool.submit(_worker_fingerprint, pickle.dumps(t), texts) for t in toks]
        for tok, future in zip(toks, remote, strict=True):
            assert future.result(timeout=300) == _fingerprint(tok, texts)


def test_a_pickle_whose_behaviour_changed_is_refused() -> None:
    """Another tokenpact version on the receiving side (simulated: a sender's hash that
    this side cannot reproduce) is a typed error, not a worker encoding other IDs."""
    tok = _bpe()
    rebuild, (cls, state, expected) = tok.__reduce__()
    assert rebuild(cls, state, expected).encode(PROBES[0]) == tok.encode(PROBES[0])
    with pytest.raises(ContractError, match="semantic hash"):
        rebuild(cls, state, "sha256:" + "0" * 64)
    # A spec changed in transit (one merge dropped) is caught the same way.
    spec, engine, provenance, kwargs = pickle.loads(state)
    dropped = spec.replace(model=type(spec.model)(spec.model.merges[:-1]))
    altered = pickle.dumps((dropped, engine, provenance, kwargs))
    with pytest.raises(ContractError, match="differs from the sender"):
        pickling.rebuild_tokenizer(cls, altered, expected)


def test_pickling_again_reuses_the_state() -> None:
    """The state is pickled once per tokenizer: datasets pickles the map function (the
    tokenizer with it) on every map call to fingerprint it."""
    tok = _llama3_hf()
    first = pickle.dumps(tok)
    assert pickle.dumps(tok) == first
    assert tok.__reduce__()[1][1] is tok.__reduce__()[1][1]


def test_copies_are_the_same_immutable_tokenizer() -> None:
    tok = _bpe()
    assert copy.copy(tok) is tok
    assert copy.deepcopy({"t": tok})["t"] is tok


def test_a_callers_engine_travels_as_itself() -> None:
    class Unpicklable:
        def __reduce__(self) -> Any:
            raise TypeError("this engine cannot be pickled")

    tok = _bpe()
    wrapped = tp.Tokenizer(tok.spec, engine=tok.engine, provenance=tok.provenance)
    with pytest.raises(TypeError):  # the native engine is not picklable: said plainly
        pickle.dumps(wrapped)
    custom = tp.Tokenizer(tok.spec, engine=Unpicklable(), provenance=tok.provenance)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(custom)


def test_chat_template_pickles_with_its_tokenizer() -> None:
    from chat.chat_data import model_dir

    directory = model_dir("llama-3.1")
    tok = tp.Tokenizer.load(directory)
    template = tp.chat.ChatTemplate.from_hf(directory, tok)
    back = pickle.loads(pickle.dumps(template))
    assert back.template_hash == template.template_hash
    assert back.special_tokens == template.special_tokens
    assert back.limits == template.limits
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Say <|eot_id|> please."},  # content, never control
        {"role": "assistant", "content": "Done."},
    ]
    a, b = template.render(messages), back.render(messages)
    assert a.input_ids == b.input_ids
    assert a.origin == b.origin
    assert a.assistant_mask == b.assistant_mask
    assert a.to_json() == b.to_json()


def test_datasets_map_with_worker_processes(tmp_path: Path) -> None:
    """The most common preprocessing path: ``Dataset.map(num_proc=2)`` pickles the
    function (the tokenizer with it) with dill into worker processes, and fingerprints
    it for its cache; an unpicklable tokenizer failed the first and randomized the second."""
    import datasets

    tok = _llama3_hf()

    def encode(batch: dict[str, list[str]]) -> dict[str, list[list[int]]]:
        return {"ids": tok.encode_batch(batch["text"])}

    texts = PROBES + edge_case_texts(seed=7, mixtures=30)
    data = datasets.Dataset.from_dict({"text": texts})
    mapped = data.map(encode, batched=True, batch_size=8, num_proc=2)
    assert mapped["ids"] == [tok.encode(t) for t in texts]
    again = data.map(encode, batched=True, batch_size=8, num_proc=2)
    assert again._fingerprint == mapped._fingerprint  # a stable hash: the cache works


_DIGESTS = """
import hashlib, pickle, sys
sys.path.insert(0, sys.argv[1])
import test_pickling as t
for kind in ("trained-bpe", "trained-unigram", "hf-llama-3"):
    print(kind, hashlib.sha256(pickle.dumps(t.BUILDERS[kind]())).hexdigest())
"""


def test_pickles_are_byte_identical_across_processes() -> None:
    """``datasets`` caches a map by the function's pickled bytes: a tokenizer that pickles
    differently in every process (a set in string-hash order, a timestamp) would miss
    the cache on every run. Two processes with different hash seeds agree."""
    import subprocess
    import sys

    here = str(Path(__file__).parent)
    tests = str(Path(__file__).parent.parent)
    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [tests, env.get("PYTHONPATH")]))
        run = subprocess.run(
            [sys.executable, "-c", _DIGESTS, here],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            check=False,
        )
        assert run.returncode == 0, run.stderr
        outputs.append(run.stdout)
    assert outputs[0] == outputs[1]
    assert len(outputs[0].splitlines()) == 3
