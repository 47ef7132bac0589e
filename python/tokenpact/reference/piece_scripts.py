"""SentencePiece's script rule for Unigram pieces (``split_by_unicode_script``), as a spec.

A piece never mixes Unicode scripts. Hiragana, Katakana and U+30FC (the prolonged sound
mark) count as Han; an Inherited character (a combining mark: Arabic harakat, Devanagari
nukta, ZWJ/ZWNJ) takes the script of the character before it; ``▁`` is outside the rule.
Common (punctuation, symbols, ASCII digits, the Arabic comma U+060C and tatweel U+0640)
is a script of its own, so ``%s``, ``(word`` and ``word،`` are not pieces while ``%%`` and
``10`` are. Code points in none of ``SCRIPT_NAMES`` are Common, as in SentencePiece.

The Rust engine reads the same rule from src/unigram/scripts.bin, which
scripts/gen_script_table.py builds from ``SCRIPT_NAMES`` and the ``regex`` module; this
module asks ``regex`` character by character, so the two are independent.
"""

from __future__ import annotations

from functools import cache

import regex

METASPACE = "\u2581"
# Unicode script names (Scripts.txt), Common and Unknown excepted.
SCRIPT_NAMES = """
    Adlam Ahom Anatolian_Hieroglyphs Arabic Armenian Avestan Balinese Bamum Bassa_Vah
    Batak Bengali Beria_Erfe Bhaiksuki Bopomofo Brahmi Braille Buginese Buhid
    Canadian_Aboriginal Carian Caucasian_Albanian Chakma Cham Cherokee Chorasmian Coptic
    Cuneiform Cypriot Cypro_Minoan Cyrillic Deseret Devanagari Dives_Akuru Dogra
    Duployan Egyptian_Hieroglyphs Elbasan Elymaic Ethiopic Garay Georgian Glagolitic
    Gothic Grantha Greek Gujarati Gunjala_Gondi Gurmukhi Gurung_Khema Han Hangul
    Hanifi_Rohingya Hanunoo Hatran Hebrew Hiragana Imperial_Aramaic Inherited
    Inscriptional_Pahlavi Inscriptional_Parthian Javanese Jurchen Kaithi Kannada
    Katakana Katakana_Or_Hiragana Kawi Kayah_Li Kharoshthi Khitan_Small_Script Khmer
    Khojki Khudawadi Kirat_Rai Lao Latin Lepcha Limbu Linear_A Linear_B Lisu Lycian
    Lydian Mahajani Makasar Malayalam Mandaic Manichaean Marchen Masaram_Gondi
    Medefaidrin Meetei_Mayek Mende_Kikakui Meroitic_Cursive Meroitic_Hieroglyphs Miao
    Modi Mongolian Mro Multani Myanmar Nabataean Nag_Mundari Nandinagari New_Tai_Lue
    Newa Nko Nushu Nyiakeng_Puachue_Hmong Ogham Ol_Chiki Ol_Onal Old_Hungarian
    Old_Italic Old_North_Arabian Old_Permic Old_Persian Old_Sogdian Old_South_Arabian
    Old_Turkic Old_Uyghur Oriya Osage Osmanya Pahawh_Hmong Palmyrene Pau_Cin_Hau
    Phags_Pa Phoenician Proto_Cuneiform Psalter_Pahlavi Rejang Runic Samaritan
    Saurashtra Seal Sharada Shavian Siddham Sidetic SignWriting Sinhala Sogdian
    Sora_Sompeng Soyombo Sundanese Sunuwar Syloti_Nagri Syriac Tagalog Tagbanwa Tai_Le
    Tai_Tham Tai_Viet Tai_Yo Takri Tamil Tangsa Tangut Telugu Thaana Thai Tibetan
    Tifinagh Tirhuta Todhri Tolong_Siki Toto Tulu_Tigalari Ugaritic Vai Vithkuqi Wancho
    Warang_Citi Yezidi Yi Zanabazar_Square
""".split()
KANA_AS_HAN = ("Hiragana", "Katakana")


@cache
def _patterns() -> list[tuple[str, regex.Pattern[str]]]:
    found = []
    for name in SCRIPT_NAMES:
        try:
            found.append((name, regex.compile(rf"\p{{Script={name}}}")))
        except regex.error:
            continue  # newer than the installed regex's Unicode database
    return found


@cache
def script_of(char: str) -> str:
    """The script class of one character under the rule (kana and U+30FC as ``Han``)."""
    if char == "\u30fc":
        return "Han"
    for name, pattern in _patterns():
        if pattern.match(char):
            return "Han" if name in KANA_AS_HAN else name
    return "Common"


def single_script(piece: str) -> bool:
    """Whether ``piece`` keeps to one script (SentencePiece's ``IsValidSentencePiece``)."""
    current: str | None = None
    for char in piece:
        if char == METASPACE:
            continue
        script = script_of(char)
        if script == "Inherited":
            if current is None:
                continue  # a leading mark has no script yet
            script = current
        if current is not None and script != current:
            return False
        current = script
    return True
