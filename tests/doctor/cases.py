"""The triggering and clean fixture of every doctor detector, keyed by detector code."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from tokenizers import normalizers

import tokenpact as tp

from .fixtures import (
    CHAT,
    EOS,
    OTHER_HASH,
    PAD,
    Builder,
    Built,
    _write_json,
    batch_file,
    byte_bpe_artifact,
    checkpoint,
    dataset,
    declaration,
    hf_bpe,
    hf_unigram,
    hf_unigram_control,
    hf_wordpiece,
    packed,
    padded,
)

TRIGGER: dict[str, Builder] = {}
CLEAN: dict[str, Builder] = {}


def case(code: str, table: dict[str, Builder]):  # type: ignore[no-untyped-def]
    def register(builder: Builder) -> Builder:
        table[code] = builder
        return builder

    return register


# ----------------------------------------------------------------------------- tokenizer
def _collide(tmp: Path, *, clash: bool) -> Built:
    folder = hf_bpe(tmp / "tok")
    doc = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = doc["model"]["vocab"]
    new_id = vocab["e"] if clash else max(vocab.values()) + 1
    doc["added_tokens"].append(
        {"id": new_id, "content": "<|eot|>", "single_word": False, "lstrip": False,
         "rstrip": False, "normalized": False, "special": True}
    )  # fmt: skip
    _write_json(folder / "tokenizer.json", doc)
    return [folder], {}


case("special-id-collision", TRIGGER)(lambda t: _collide(t, clash=True))
case("special-id-collision", CLEAN)(lambda t: _collide(t, clash=False))
case("control-spelled-by-vocabulary", TRIGGER)(
    lambda t: ([hf_unigram_control(t, reachable=True)], {})
)
case("control-spelled-by-vocabulary", CLEAN)(
    lambda t: ([hf_unigram_control(t, reachable=False)], {})
)
case("pad-equals-eos", TRIGGER)(lambda t: ([hf_bpe(t, config={"pad_token": "</s>"})], {}))
case("pad-equals-eos", CLEAN)(lambda t: ([hf_bpe(t)], {}))
case("whitespace-collapse", TRIGGER)(lambda t: ([hf_wordpiece(t)], {}))
case("whitespace-collapse", CLEAN)(lambda t: ([byte_bpe_artifact(t / "a")], {}))
case("decode-not-normalized", TRIGGER)(lambda t: ([hf_wordpiece(t)], {}))
case("decode-not-normalized", CLEAN)(lambda t: ([byte_bpe_artifact(t / "a")], {}))
DIGIT_MERGES = [(49, 50), (256, 51), (52, 53), (258, 54)]  # 12, 123, 45, 456
case("digit-grouping", TRIGGER)(lambda t: ([byte_bpe_artifact(t / "a", merges=DIGIT_MERGES)], {}))
case("digit-grouping", CLEAN)(lambda t: ([byte_bpe_artifact(t / "a")], {}))
case("normalization-changes-offsets", TRIGGER)(
    lambda t: ([hf_bpe(t, normalizer=normalizers.NFKC())], {})
)
case("normalization-changes-offsets", CLEAN)(lambda t: ([hf_bpe(t)], {}))
case("partial-utf8-tokens", TRIGGER)(lambda t: ([byte_bpe_artifact(t / "a")], {}))
case("partial-utf8-tokens", CLEAN)(lambda t: ([hf_wordpiece(t)], {}))
case("wordpiece-continuation-lost", TRIGGER)(lambda t: ([hf_wordpiece(t, decoder=None)], {}))
case("wordpiece-continuation-lost", CLEAN)(lambda t: ([hf_wordpiece(t)], {}))
case("unigram-scores-missing", TRIGGER)(lambda t: ([hf_unigram(t, flat=True)], {}))
case("unigram-scores-missing", CLEAN)(lambda t: ([hf_unigram(t, flat=False)], {}))
URL_CHARS = "zq7"  # the probe's characters after BERT's lowercasing
case("long-span-lost", TRIGGER)(lambda t: ([hf_wordpiece(t, chars=URL_CHARS)], {}))
case("long-span-lost", CLEAN)(lambda t: ([byte_bpe_artifact(t / "a")], {}))


# ----------------------------------------------------------------------------- templates
def _chat(
    tmp: Path,
    template: str,
    *,
    specials: bool = True,
    bos_post: bool = False,
    config: dict[str, object] | None = None,
) -> Built:
    names = ("<s>", "</s>", "<pad>", "<|im_start|>", "<|im_end|>") if specials else ("<s>",)
    folder = hf_bpe(tmp / "chat", specials=names, bos_post=bos_post)
    _write_json(
        folder / "tokenizer_config.json",
        {"bos_token": "<s>", "eos_token": "</s>", "chat_template": template, **(config or {})},
    )
    return [folder], {}


IM = CHAT.replace("{MARK}", "<|im_start|>").replace("{END}", "<|im_end|>")
case("template-render-failed", TRIGGER)(lambda t: _chat(t, "{{ raise_exception('no') }}"))
case("template-render-failed", CLEAN)(lambda t: _chat(t, IM))
case("template-markers-as-text", TRIGGER)(lambda t: _chat(t, IM, specials=False))
case("template-markers-as-text", CLEAN)(lambda t: _chat(t, IM))
case("boundary-twice", TRIGGER)(lambda t: _chat(t, "{{ bos_token }}" + IM, bos_post=True))
case("boundary-twice", CLEAN)(lambda t: _chat(t, IM, bos_post=True))
BOS_IM = "{{ bos_token }}" + IM
case("boundary-flag-twice", TRIGGER)(lambda t: _chat(t, BOS_IM, config={"add_bos_token": True}))
case("boundary-flag-twice", CLEAN)(lambda t: _chat(t, BOS_IM, config={"add_bos_token": False}))


def _turn_batch(tmp: Path, *, drop_end: bool) -> Built:
    """A chat batch with tokenpact's supervision (clean), or with the end-of-turn token of
    the assistant turn left out of the labels (the trigger)."""
    (folder,), _ = _chat(tmp, IM)
    tok = tp.Tokenizer.load(folder)
    template = tp.chat.ChatTemplate.from_hf(folder, tok)
    messages = [{"role": "user", "content": "the cat"}, {"role": "assistant", "content": "a cat"}]
    conv = template.render(messages)
    ids = np.asarray(conv.input_ids)
    mask = np.asarray(conv.assistant_mask, dtype=bool)
    if drop_end:
        mask[np.flatnonzero(mask)[-1]] = False  # <|im_end|>
    labels = np.full(ids.shape, -100)
    labels[:-1] = np.where(mask[1:], ids[1:], -100)  # pre-shifted
    return [folder, batch_file(tmp, {"input_ids": ids[None], "labels": labels[None]})], {}


case("assistant-turn-unsupervised", TRIGGER)(lambda t: _turn_batch(t, drop_end=True))
case("assistant-turn-unsupervised", CLEAN)(lambda t: _turn_batch(t, drop_end=False))


# ----------------------------------------------------------------------------- batches
def _batch(arrays: dict[str, np.ndarray], **options: object):  # type: ignore[no-untyped-def]
    return lambda t: ([batch_file(t, arrays)], dict(options))


def _with_tokenizer(arrays: dict[str, np.ndarray], hash_of_tok: bool = False):  # type: ignore[no-untyped-def]
    def build(tmp: Path) -> Built:
        folder = byte_bpe_artifact(tmp / "tok")
        if hash_of_tok:
            arrays["tokenizer_hash"] = np.asarray(tp.Tokenizer.load(folder).semantic_hash)
        return [folder, batch_file(tmp, arrays)], {}

    return build


P = padded()
negative = P["input_ids"].copy()
negative[P["attention_mask"] == 0] = -1
case("negative-input-id", TRIGGER)(_batch(padded(input_ids=negative)))
case("negative-input-id", CLEAN)(_batch(padded()))
too_big = P["input_ids"].copy()
too_big[0, 0] = 10_000
case("id-out-of-vocab", TRIGGER)(_with_tokenizer(padded(input_ids=too_big)))
case("id-out-of-vocab", CLEAN)(_with_tokenizer(padded()))
big_labels = P["labels"].copy()
big_labels[0, 1] = 10_000  # a supervised label beyond the vocabulary (-100 stays allowed)
case("label-out-of-vocab", TRIGGER)(_with_tokenizer(padded(labels=big_labels)))
case("label-out-of-vocab", CLEAN)(_with_tokenizer(padded()))
pad_labels = P["labels"].copy()
pad_labels[P["attention_mask"] == 0] = PAD
case("pad-in-labels", TRIGGER)(_batch(padded(labels=pad_labels)))
case("pad-in-labels", CLEAN)(_batch(padded()))
holes = P["attention_mask"].copy()
holes[2, 1] = 0
case("attention-mask-mismatch", TRIGGER)(_batch(padded(attention_mask=holes)))
case("attention-mask-mismatch", CLEAN)(_batch(padded()))
# PAD == EOS: pad with EOS, then mask labels "where input_ids == pad": EOS targets vanish.
eos_padded = np.where(P["attention_mask"] == 1, P["input_ids"], EOS)
eos_masked = np.where(np.roll(eos_padded, -1, axis=1) == EOS, -100, P["labels"])
case("pad-eos-masking", TRIGGER)(
    _batch(padded(input_ids=eos_padded, labels=eos_masked), eos_id=EOS)
)
case("pad-eos-masking", CLEAN)(_batch(padded(input_ids=eos_padded), eos_id=EOS))
full = P["input_ids"].copy()
full[2] = [10, 11, 12, 13, 14]  # the longest row was cut before its EOS
case("eos-lost-to-truncation", TRIGGER)(_batch(padded(input_ids=full)))
case("eos-lost-to-truncation", CLEAN)(_batch(padded()))
K = packed()
crossing = np.where(K["labels"] == -100, np.append(K["input_ids"][1:], -100), K["labels"])
crossing[-1] = -100
case("label-crosses-boundary", TRIGGER)(_batch(packed(labels=crossing)))
case("label-crosses-boundary", CLEAN)(_batch(packed()))
case("positions-not-reset", TRIGGER)(_batch(packed(position_ids=np.arange(K["input_ids"].size))))
case("positions-not-reset", CLEAN)(_batch(packed()))
bad_cu = K["cu_seqlens"].copy()
bad_cu[1] += 1
case("cu-seqlens-inconsistent", TRIGGER)(_batch(packed(cu_seqlens=bad_cu)))
case("cu-seqlens-inconsistent", CLEAN)(_batch(packed()))
case("sample-ids-dropped", TRIGGER)(_batch(packed(seq_idx=np.zeros(12, dtype=np.int32))))
case("sample-ids-dropped", CLEAN)(_batch(packed()))
case("batch-without-identity", TRIGGER)(_batch(padded()))
case("batch-without-identity", CLEAN)(_batch(padded(tokenizer_hash=np.asarray(OTHER_HASH))))
case("batch-tokenizer-mismatch", TRIGGER)(
    _with_tokenizer(padded(tokenizer_hash=np.asarray(OTHER_HASH)))
)
case("batch-tokenizer-mismatch", CLEAN)(_with_tokenizer(padded(), hash_of_tok=True))


# ----------------------------------------------------------------------------- checkpoints
def _ckpt(rows_delta: int = 0, out_delta: int | None = None, config=None):  # type: ignore[no-untyped-def]
    def build(tmp: Path) -> Built:
        folder = byte_bpe_artifact(tmp / "tok")
        size = tp.Tokenizer.load(folder).vocab_size
        out = None if out_delta is None else size + out_delta
        return [folder, checkpoint(tmp, rows=size + rows_delta, out_rows=out, config=config)], {}

    return build


def _decl(matching: bool):  # type: ignore[no-untyped-def]
    def build(tmp: Path) -> Built:
        folder = byte_bpe_artifact(tmp / "tok")
        tok = tp.Tokenizer.load(folder)
        hash_ = tok.semantic_hash if matching else OTHER_HASH
        return [folder, declaration(tmp, tokenizer_hash=hash_, rows=tok.vocab_size)], {}

    return build


case("embedding-rows-short", TRIGGER)(_ckpt(rows_delta=-10))
case("embedding-rows-short", CLEAN)(_ckpt())
case("output-head-not-resized", TRIGGER)(_ckpt(out_delta=-10))
case("output-head-not-resized", CLEAN)(_ckpt(out_delta=0))
case("checkpoint-tokenizer-mismatch", TRIGGER)(_decl(matching=False))
case("checkpoint-tokenizer-mismatch", CLEAN)(_decl(matching=True))
EOT = 256  # the artifact's one special token, <|endoftext|>, after 256 byte IDs
case("special-id-config-mismatch", TRIGGER)(_ckpt(config={"eos_token_id": 7}))
case("special-id-config-mismatch", CLEAN)(_ckpt(config={"eos_token_id": EOT}))
case("pad-id-negative", TRIGGER)(_ckpt(config={"pad_token_id": -1}))
case("pad-id-negative", CLEAN)(_ckpt(config={"pad_token_id": EOT}))


# ----------------------------------------------------------------------------- manifests
def _key(tmp: Path, *, complete: bool) -> Built:
    key = {"model": "m-1", "prompt_sha256": "ab" * 32}
    if complete:
        key |= {"tokenizer_hash": OTHER_HASH, "template_hash": OTHER_HASH}
    return [_write_json(tmp / "cache.json", {"cache_key": key})], {}


def _dataset(matching: bool):  # type: ignore[no-untyped-def]
    def build(tmp: Path) -> Built:
        folder = byte_bpe_artifact(tmp / "tok")
        tok = tp.Tokenizer.load(folder)
        hash_ = tok.semantic_hash if matching else OTHER_HASH
        return [folder, dataset(tmp, tokenizer_hash=hash_, max_token_id=100)], {}

    return build


case("cache-key-without-identity", TRIGGER)(lambda t: _key(t, complete=False))
case("cache-key-without-identity", CLEAN)(lambda t: _key(t, complete=True))
case("manifest-tokenizer-mismatch", TRIGGER)(_dataset(matching=False))
case("manifest-tokenizer-mismatch", CLEAN)(_dataset(matching=True))


# ------------------------------------------------------------------------ encoded datasets
def _encoded(tmp: Path, *, fmt: str, append_eod: bool) -> Path:
    folder = byte_bpe_artifact(tmp / "tok")
    tok = tp.Tokenizer.load(folder)
    docs = [tp.data.Document(f"d{i}", f"record {i} of the encoded set") for i in range(6)]
    out = tmp / "shards"
    tp.data.encode_dataset(docs, tok, out, format=fmt, append_eod=append_eod)
    return out


def _flipped(tmp: Path, *, flip: bool) -> Built:
    out = _encoded(tmp, fmt="megatron", append_eod=True)
    if flip:
        data = bytearray((out / "shard-00000.bin").read_bytes())
        data[0] ^= 1
        (out / "shard-00000.bin").write_bytes(bytes(data))
    return [out], {}


def _boundaries(tmp: Path, *, eod: bool) -> Built:
    return [_encoded(tmp, fmt="megatron", append_eod=eod)], {}


case("dataset-shards-changed", TRIGGER)(lambda t: _flipped(t, flip=True))
case("dataset-shards-changed", CLEAN)(lambda t: _flipped(t, flip=False))
case("dataset-boundary-policy", TRIGGER)(lambda t: _boundaries(t, eod=False))
case("dataset-boundary-policy", CLEAN)(lambda t: _boundaries(t, eod=True))


def _loader_state(tmp: Path, *, changed: bool) -> Built:
    out = _encoded(tmp, fmt="megatron", append_eod=True)
    loader = tp.data.TokenLoader([out], seq_len=4, batch_size=1, seed=1)
    state = tmp / "loader.json"
    state.write_text(json.dumps(loader.state_dict()))
    if changed:  # the dataset re-encoded under the saved state: other data, same path
        docs = [tp.data.Document("x", "another record entirely")]
        tp.data.encode_dataset(docs, tp.Tokenizer.load(tmp / "tok"), out, overwrite=True)
    return [state], {}


case("loader-state-mismatch", TRIGGER)(lambda t: _loader_state(t, changed=True))
case("loader-state-mismatch", CLEAN)(lambda t: _loader_state(t, changed=False))
