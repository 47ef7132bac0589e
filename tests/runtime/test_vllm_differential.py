"""Differential tests against vLLM's own code (``vllm_oracle``: the pinned release's
detokenizer, stop checker and block hashing, executed from its wheel).

Under vLLM-compatible settings (``skip_special_tokens=True``, the prompt primed,
``stop_string_ties="first_listed"``) the streamed text, the matched stop and the finish
reason are identical to vLLM's on every shipped ``tokenizer.json``. The deliberate
differences (docs/RUNTIME.md, "vLLM compatibility") each have a test of their own here:
tokenpact holds back only a live stop prefix (vLLM a fixed ``max_len - 1`` characters),
and it flushes an incomplete character at the end of a stream as U+FFFD (vLLM's
``DecodeStream`` never emits it).
"""

from __future__ import annotations

import random

import pytest

from tokenpact.runtime import (
    IncrementalDecoder,
    OutputStream,
    StopPolicy,
    vllm_block_hashes,
    vllm_none_hash,
)

try:
    from conformance.shipped_files import shipped_tokenizer_jsons
except ImportError:  # pragma: no cover - imported as tests.runtime
    from tests.conformance.shipped_files import shipped_tokenizer_jsons  # type: ignore[no-redef]
from . import vllm_oracle
from .families import family, texts


def _shipped() -> list[str]:
    try:
        return sorted(shipped_tokenizer_jsons())
    except Exception:  # no network: the test itself skips (or fails under CI)
        return ["llama-3.2"]


SHIPPED = _shipped()


def _pair(name: str):
    import tokenizers

    import tokenpact as tp

    path = shipped_tokenizer_jsons()[name]
    return tp.Tokenizer.load(path), tokenizers.Tokenizer.from_file(str(path))


def _tp_stream(tok, prompt, completion, policy, *, skip=True, hold="live_prefix"):
    out = OutputStream(tok, policy, prompt_ids=prompt, skip_special_tokens=skip, hold=hold)
    deltas = []
    for token_id in completion:
        deltas.append(out.push(token_id).text)
        if out.finished:
            break
    if not out.finished:
        deltas.append(out.finish().text)
    return out, deltas


def _cases(tok, hf, rng: random.Random, n_texts: int = 4):
    """(prompt IDs, completion IDs) from real text split at random points; some
    completions carry a non-stop special ID in the middle."""
    corpus = texts()
    specials = sorted(tok.special_tokens.values())
    for _ in range(n_texts):
        text = corpus[rng.randrange(len(corpus))][: rng.randint(20, 400)]
        ids = hf.encode(text, add_special_tokens=False).ids
        if len(ids) < 2:
            continue
        # Cut between characters (a prompt ending inside one is a deliberate
        # difference, tested on its own).
        cuts = [k for k in range(1, len(ids)) if not _inside(hf, ids[:k])]
        for _ in range(3 if cuts else 0):
            k = rng.choice(cuts)
            completion = list(ids[k:])
            if specials and rng.random() < 0.3:
                at = rng.choice([c - k for c in cuts if c >= k] + [len(completion)])
                completion.insert(at, rng.choice(specials))
            yield list(ids[:k]), completion


def _inside(hf, ids: list[int]) -> bool:
    return hf.decode(ids, skip_special_tokens=False).endswith("\ufffd")


@pytest.mark.parametrize("name", SHIPPED)
def test_streamed_text_equals_vllm(name: str) -> None:
    """Prompt-primed streaming, special tokens skipped, stop strings (vLLM's tie rule),
    budget: identical final text, matched stop and finish reason; with
    ``hold="fixed_window"`` also the text of every step (what vLLM holds back)."""
    tok, hf = _pair(name)
    rng = random.Random(name)
    checked = 0
    for prompt, completion in _cases(tok, hf, rng):
        decoded = hf.decode(completion)
        stops: list[str] = []
        if decoded and rng.random() < 0.7:
            for _ in range(rng.randint(1, 3)):
                at = rng.randrange(len(decoded))
                stops.append(decoded[at : at + rng.randint(1, 6)])
        include = rng.random() < 0.3
        # vLLM streams HF's decode: tokenpact's is the same on every ID, added tokens
        # included (DeepSeek LLM's and Janus' added ``ø`` is the byte 0xF8, U+FFFD).
        whole = prompt + completion
        assert tok.decode(whole, errors="replace", skip_special_tokens=True) == hf.decode(
            whole, skip_special_tokens=True
        )
        want_text, want_stop, want_deltas = vllm_oracle.stream(
            hf, prompt, completion, stop=stops or None, include_stop_str_in_output=include
        )
        policy = StopPolicy(
            stop_strings=stops,
            include_stop_in_output=include,
            max_new_tokens=len(completion),
            stop_string_ties="first_listed",
        )
        out, _ = _tp_stream(tok, prompt, completion, policy)
        assert out.visible_text == want_text, (prompt, completion, stops)
        assert out.matched_stop == want_stop
        assert out.finish_reason == ("stop" if want_stop is not None else "length")
        fixed, deltas = _tp_stream(tok, prompt, completion, policy, hold="fixed_window")
        assert deltas == want_deltas, (prompt, completion, stops)
        assert (fixed.visible_text, fixed.matched_stop) == (want_text, want_stop)
        checked += 1
    assert checked > 0


def primed_text(tok, prompt: list[int], completion: list[int], skip: bool = True) -> str:
    """The definition: ``decode(prompt + completion)`` after its common prefix with
    ``decode(prompt)``; that is ``[len(decode(prompt)):]`` whenever the prompt's text is a
    prefix (it is not only when the prompt ends inside a character)."""
    whole = tok.decode(prompt + completion, errors="replace", skip_special_tokens=skip)
    alone = tok.decode(prompt, errors="replace", skip_special_tokens=skip)
    if whole.startswith(alone):
        return whole[len(alone) :]
    common = next(
        (i for i, (a, b) in enumerate(zip(whole, alone, strict=False)) if a != b), len(alone)
    )
    return whole[common:]


@pytest.mark.parametrize("name", SHIPPED)
def test_prompt_primed_decode_is_the_definition(name: str) -> None:
    """The primed stream at every split point of a text, for IncrementalDecoder and
    OutputStream, equals the definition and vLLM's text (where the prompt's text is a
    prefix of the whole; see the test below for the other case)."""
    tok, hf = _pair(name)
    rng = random.Random(f"split-{name}")
    corpus = texts()
    text = corpus[rng.randrange(len(corpus))][:160] + " naïve 日本 🙂"
    ids = hf.encode(text, add_special_tokens=False).ids
    for k in range(1, len(ids)):
        prompt, completion = ids[:k], ids[k:]
        want = primed_text(tok, prompt, completion)
        dec = IncrementalDecoder(tok, prompt_ids=prompt, skip_special_tokens=True)
        got = "".join(dec.push(i) for i in completion) + dec.finish()
        assert got == want, k
        out, _ = _tp_stream(tok, prompt, completion, StopPolicy())
        assert out.visible_text == want, k
        raw = IncrementalDecoder(tok, prompt_ids=prompt)
        got = "".join(raw.push(i) for i in completion) + raw.finish()
        assert got == primed_text(tok, prompt, completion, skip=False), k
        if not _inside(hf, prompt):
            assert vllm_oracle.stream(hf, prompt, completion)[0] == want, k


def test_prompt_ending_inside_a_character() -> None:
    """Deliberate difference: a prompt that ends inside a character (byte-level BPE).
    The completed character is the completion's first text; vLLM's DecodeStream finds
    its prompt text is no prefix, resets, and streams the prompt again."""
    tok, hf = _pair("llama-3.2")
    ids = hf.encode("ab 🙂🙂 x", add_special_tokens=False).ids
    k = next(k for k in range(1, len(ids)) if tok.decode(ids[:k], errors="replace")[-1] == "\ufffd")
    dec = IncrementalDecoder(tok, prompt_ids=ids[:k])
    assert "".join(dec.push(i) for i in ids[k:]) + dec.finish() == "🙂 x"
    assert primed_text(tok, ids[:k], ids[k:]) == "🙂 x"
    assert vllm_oracle.stream(hf, ids[:k], ids[k:])[0].startswith("ab")


@pytest.mark.parametrize("name", ["llama-3.2", "qwen-3"] if "qwen-3" in SHIPPED else SHIPPED[:1])
def test_hold_back_is_live_prefix_only(name: str) -> None:
    """Deliberate difference: vLLM holds back the last ``max(len(stop)) - 1``
    characters whatever they are; tokenpact only a suffix that can still start a stop.
    Everything vLLM has streamed after each step, tokenpact has too (never less), and
    the final texts agree."""
    tok, hf = _pair(name)
    ids = hf.encode("The quick brown fox jumps over the lazy dog. " * 3).ids
    stops = ["lazy cat", "###"]
    _, _, want_deltas = vllm_oracle.stream(hf, ids[:2], ids[2:], stop=stops)
    policy = StopPolicy(stop_strings=stops, max_new_tokens=len(ids) - 2)
    out, deltas = _tp_stream(tok, ids[:2], ids[2:], policy)
    ahead = 0
    for step in range(len(want_deltas)):
        mine, theirs = "".join(deltas[: step + 1]), "".join(want_deltas[: step + 1])
        assert mine.startswith(theirs)
        ahead = max(ahead, len(mine) - len(theirs))
    assert "".join(deltas) == "".join(want_deltas)
    assert ahead > 0  # tokenpact streamed text vLLM was still holding


def test_stop_token_text_follows_vllm() -> None:
    """Regression (include_stop_in_output with a stop ID): the stop ID decodes like any
    generated ID, so a special one adds no text while special tokens are skipped."""
    if "qwen-3" not in SHIPPED:
        pytest.skip("Qwen 3 is not among the shipped tokenizers")
    tok, hf = _pair("qwen-3")
    im_end = tok.token_id("<|im_end|>")
    ids = hf.encode("Hello world").ids + [im_end]
    for skip in (True, False):
        want, _, _ = vllm_oracle.stream(
            hf,
            [9707],
            ids,
            stop_terminated=True,
            include_stop_str_in_output=True,
            skip_special_tokens=skip,
        )
        policy = StopPolicy(stop_token_ids=[im_end], include_stop_in_output=True)
        out, _ = _tp_stream(tok, [9707], ids, policy, skip=skip)
        assert out.visible_text == want
        assert out.finish_reason == "stop" and out.matched_stop == im_end
    assert want.endswith("<|im_end|>")  # skip_special_tokens=False prints it


def test_incomplete_character_at_the_end_is_flushed() -> None:
    """Deliberate difference: the stream ends inside a character (a byte-level model cut
    mid-UTF-8). tokenpact keeps ``decode(ids)`` exact (U+FFFD, as ``tok.decode`` gives);
    vLLM's DecodeStream never emits the held bytes."""
    tok, hf = _pair("llama-3.2")
    ids = hf.encode("ab 🙂🙂 x", add_special_tokens=False).ids
    cut = next(k for k in range(1, len(ids)) if "\ufffd" in hf.decode(ids[:k]))
    completion = ids[1:cut]
    want_vllm, _, _ = vllm_oracle.stream(hf, ids[:1], completion)
    out, _ = _tp_stream(tok, ids[:1], completion, StopPolicy())
    assert out.visible_text.endswith("\ufffd")
    assert out.visible_text.rstrip("\ufffd") == want_vllm
    assert out.visible_text == tok.decode(ids[:cut], errors="replace")[len(tok.decode(ids[:1])) :]


@pytest.mark.parametrize("algo", ["sha256", "sha256_cbor"])
@pytest.mark.parametrize("seed", [None, "0"])
@pytest.mark.parametrize(
    "lora, salt",
    [(None, None), (("adapter-a", "/adapters/a"), None), (None, "tenant-7"), (("b", "/b"), "s")],
)
def test_block_hashes_equal_vllm(algo, seed, lora, salt) -> None:
    """Plain, LoRA and cache-salt requests, both hash algorithms, PYTHONHASHSEED unset
    (vLLM's fixed seed) or set: identical keys on every block."""
    rng = random.Random(f"{algo}{seed}{lora}{salt}")
    ids = [rng.choice([rng.randrange(300), rng.randrange(2**32)]) for _ in range(6 * 16 + 5)]
    want = vllm_oracle.block_hashes(
        ids, block_size=16, hash_algo=algo, lora=lora, cache_salt=salt, python_hash_seed=seed
    )
    got = vllm_block_hashes(
        ids,
        block_size=16,
        none_hash=None if seed is None else vllm_none_hash(seed, hash_algo=algo),
        lora_name=lora[0] if lora else None,
        lora_path=lora[1] if lora else None,
        cache_salt=salt,
        hash_algo=algo,
    )
    assert len(want) == 6
    assert list(got.keys) == want


def test_mistral_sentencepiece_prompt_regression() -> None:
    """Regression: Mistral v3 ``[23325 ▁Hello, 2294 ▁world]`` after the prompt
    ``[23325]`` streams ``" world"`` (vLLM's text), not ``"world"``."""
    tok = family("mistral-sp-v3")
    assert tok.decode([23325, 2294]) == "Hello world"
    dec = IncrementalDecoder(tok, prompt_ids=[23325])
    assert dec.push([2294]) + dec.finish() == " world"
    out = OutputStream(tok, StopPolicy(), prompt_boundary=1)
    assert out.push([23325, 2294]).text + out.finish().text == " world"
    out = OutputStream(tok, StopPolicy(), prompt_ids=[23325])
    assert out.push([2294]).text + out.finish().text == " world"
    # Unprimed, the stream starts a text: the leading space is dropped, as decode([2294]).
    plain = IncrementalDecoder(tok)
    assert plain.push([2294]) + plain.finish() == tok.decode([2294]) == "world"


SP_FAMILIES = [
    "mistral-sp-v1",
    "mistral-sp-v3",
    "mistral-sp-v7",
    "mistral-hf-bytefallback",
    "unigram-metaspace",
    "unigram-metaspace-never",
    "unigram-llama-bytefallback",
    "unigram-fuse-then-steps",
    "unigram-bpe-suffix",
    "unigram-strip-per-token",
    "unigram-wordpiece",
]


@pytest.mark.parametrize("name", SP_FAMILIES)
def test_prompt_priming_every_split_other_families(name: str) -> None:
    """SentencePiece ``.model`` files (which vLLM serves through mistral-common, not run
    here) and the HF decoder chains: the primed stream equals the definition at every
    split point of real texts, pushing one ID at a time, and with a one-token prompt
    tail for the per-token decoders."""
    tok = family(name)
    rng = random.Random(f"sp-{name}")
    corpus = texts()
    for _ in range(3):
        text = corpus[rng.randrange(len(corpus))][:120] + " naïve 日本 🙂 end"
        ids = tok.encode(text)
        for k in range(1, len(ids)):
            prompt, completion = ids[:k], ids[k:]
            want = primed_text(tok, prompt, completion, skip=False)
            dec = IncrementalDecoder(tok, prompt_ids=prompt)
            got = "".join(dec.push(i) for i in completion) + dec.finish()
            assert got == want, (k, text)
            if name.startswith("mistral-sp"):
                tail = IncrementalDecoder(tok, prompt_ids=prompt[-1:])
                got = "".join(tail.push(i) for i in completion) + tail.finish()
                assert got == primed_text(tok, prompt[-1:], completion, skip=False)
