"""The synthetic vocabularies of seed 000.

0x0D (output): IDs 0..255 are single bytes (so 83 84 79 80 spell "STOP", 65 66 67
"ABC", 33 "!"), except that byte e2 lives at 401; 260 is a control token; 400 = "OK ",
402 = bytes 82 ac (so [401, 402] is "€"), 403 = "ST" (the alternate segmentation of
"STOP"). IDs nobody uses are filler pieces.

0x07 (input): byte-level BPE whose first merge (e2, 82) is ID 260 (a b c -> 256, 258 as
in "a | b | c": merges (a,b)=256, (b,c)=257, (ab,c)=258), so "€" = e2 82 ac encodes
as [260, 172] and the prefix e2 82 as [260].
"""

from __future__ import annotations

from typing import Any

EOT = "<|eot|>"


def output_vocab() -> Any:
    import tokenpact as tp

    ranks: list[bytes] = [bytes([b]) for b in range(256)]
    ranks[0xE2] = b"\x00filler-e2"
    ranks += [b"\x00filler-%d" % i for i in range(256, 404)]
    ranks[260] = EOT.encode()
    ranks[400] = b"OK "
    ranks[401] = b"\xe2"
    ranks[402] = b"\x82\xac"
    ranks[403] = b"ST"
    return tp.Tokenizer.from_ranks(ranks, pattern="gpt4", special_tokens={EOT: 260})


def input_vocab() -> Any:
    import tokenpact as tp

    return tp.Tokenizer.from_merges([(97, 98), (98, 99), (256, 99), (0, 1), (0xE2, 0x82)])
