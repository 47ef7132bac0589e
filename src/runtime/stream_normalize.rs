//! The `normalized` streaming cut: byte-level BPE behind a Unicode normalizer (NFC,
//! NFKC, NFD, NFKD) and a split a built-in scanner proves. The Python reference is
//! `tokenpact/runtime/stream_normalize.py`; the steps are the same.
//!
//! A character with canonical combining class 0 whose quick-check value is Yes for the
//! form (UAX #15's stable code points) starts a normalization segment whatever
//! surrounds it: nothing composes with what precedes it and no mark reorders across it,
//! so `N(a + b) == N(a) + N(b)` when `b` starts with one. The text up to the last such
//! character before the limit normalizes to a prefix of the normalized text for every
//! continuation; the scanner proves which of its pre-tokens are final; the raw position
//! where they end is committed when a stable character starts there and the raw prefix
//! normalizes exactly to those pre-tokens (checked, not assumed).
//!
//! The properties come from the `unicode-normalization` crate's tables (the engine's
//! normalizer composes and decomposes a subset of them, gated to Hugging Face's older
//! Unicode data, and takes its combining classes from the same crate).

use std::iter::once;

use unicode_normalization::char::canonical_combining_class;
use unicode_normalization::IsNormalized;
use unicode_normalization::{is_nfc_quick, is_nfd_quick, is_nfkc_quick, is_nfkd_quick};

use crate::normalize::unicode::{normalize_items, Form};
use crate::pretok::builtin::Builtin;

/// Whether a normalization segment starts at `c` under `form` whatever surrounds it.
pub fn stable_starter(c: char, form: Form) -> bool {
    if c.is_ascii() {
        return true;
    }
    if canonical_combining_class(c) != 0 {
        return false;
    }
    let quick = match form {
        Form::Nfc => is_nfc_quick(once(c)),
        Form::Nfkc => is_nfkc_quick(once(c)),
        Form::Nfd => is_nfd_quick(once(c)),
        Form::Nfkd => is_nfkd_quick(once(c)),
    };
    quick == IsNormalized::Yes
}

/// The engine's normalization of `text` under `form` (`Normalizer::Unicode`'s text).
fn normalize(text: &str, form: Form) -> String {
    if text.is_ascii() {
        return text.to_owned();
    }
    normalize_items(text, form)
        .into_iter()
        .map(|(c, _)| c)
        .collect()
}

/// The byte length of the longest prefix of `buf[..limit]` whose IDs no continuation
/// can change, 0 when none is proven now. `limit` is a char boundary of `buf` (where a
/// special spelling may start, or the end).
pub fn normalized_cut(buf: &str, limit: usize, form: Form, proof: Builtin) -> usize {
    // The last stable character at or before the limit that has arrived (the character
    // after the buffer may be a combining mark).
    let stable_at = |at: usize| {
        buf[at..]
            .chars()
            .next()
            .is_some_and(|c| stable_starter(c, form))
    };
    let mut end = if limit < buf.len() {
        limit
    } else {
        buf.char_indices().next_back().map_or(0, |(i, _)| i)
    };
    while end > 0 && !stable_at(end) {
        end = buf[..end].char_indices().next_back().map_or(0, |(i, _)| i);
    }
    if end == 0 {
        return 0;
    }
    let settled = normalize(&buf[..end], form);
    let cut = proof.final_prefix(&settled);
    if cut == 0 {
        return 0;
    }
    if cut == settled.len() {
        return end;
    }
    // Walk back over the segments (each starts at a stable character; the buffer's
    // start too: the previous commit ended at one) until the normalized length before a
    // segment start is the cut.
    let (mut length, mut after) = (settled.len(), end);
    for (at, c) in buf[..end].char_indices().rev() {
        if at > 0 && !stable_starter(c, form) {
            continue;
        }
        let Some(rest) = length.checked_sub(normalize(&buf[at..after], form).len()) else {
            return 0;
        };
        length = rest;
        after = at;
        if length == cut {
            // Checked, not assumed: the raw prefix normalizes to the final pre-tokens.
            return if normalize(&buf[..at], form) == settled[..cut] {
                at
            } else {
                0
            };
        }
        if length < cut {
            return 0; // the final pre-tokens end inside a segment: wait for more text
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_characters() {
        for c in ['a', 'é', '가', 'ᄀ', '中', ' '] {
            assert!(stable_starter(c, Form::Nfc), "{c:?}");
        }
        for c in ['\u{301}', '\u{1161}', '\u{11a8}', '\u{323}'] {
            assert!(!stable_starter(c, Form::Nfc), "{c:?}");
        }
        assert!(stable_starter('\u{fb01}', Form::Nfc));
        assert!(!stable_starter('\u{fb01}', Form::Nfkc));
    }

    #[test]
    fn a_mark_or_jamo_still_to_come_holds_the_character_before_it() {
        // "cafe" is not final: a U+0301 may still compose with its "e".
        let cut = normalized_cut("hello cafe", 10, Form::Nfc, Builtin::Llama3);
        assert_eq!(cut, "hello".len());
        let text = "ab \u{1100}\u{1161}";
        let cut = normalized_cut(text, text.len(), Form::Nfc, Builtin::Llama3);
        assert_eq!(cut, "ab".len());
    }
}
