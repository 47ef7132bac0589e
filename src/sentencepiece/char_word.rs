//! SentencePiece's `char` and `word` models: no search, one lookup per segment.
//!
//! `char`: each character is a piece, except where a user-defined piece matches (the
//! longest one wins), as SentencePiece's `char_model.cc`. `word`: the text is cut right
//! before each `▁` (SentencePiece's `SplitIntoWords` with its defaults, as
//! `word_model.cc` calls it) and each word is one piece. A segment that is no piece gets
//! the unknown ID; the caller's post-pass then fuses unknown runs or splits them into byte
//! pieces, as for the other models.

use super::normalizer::{one_char_len, SPACE_SYMBOL};
use super::trie::PieceTrie;
use super::Piece;

/// Character segments: the longest user-defined piece at a position, else one character.
pub fn encode_char(
    normalized: &[u8],
    user: Option<&PieceTrie>,
    piece_to_id: impl Fn(&[u8]) -> u32,
    out: &mut Vec<Piece>,
) {
    let n = normalized.len();
    let mut pos = 0;
    while pos < n {
        let rest = &normalized[pos..];
        let user_len = user.map_or(0, |u| u.longest_prefix(rest));
        let len = if user_len > 0 {
            user_len
        } else {
            one_char_len(rest[0]).min(n - pos)
        };
        out.push((pos as u32, (pos + len) as u32, piece_to_id(&rest[..len])));
        pos += len;
    }
}

/// Word segments: a new word starts at the text's start and at every `▁`.
pub fn encode_word(normalized: &[u8], piece_to_id: impl Fn(&[u8]) -> u32, out: &mut Vec<Piece>) {
    let n = normalized.len();
    let mut start = 0;
    let mut pos = 0;
    while pos < n {
        let len = one_char_len(normalized[pos]).min(n - pos);
        if pos > start && normalized[pos..].starts_with(SPACE_SYMBOL) {
            out.push((
                start as u32,
                pos as u32,
                piece_to_id(&normalized[start..pos]),
            ));
            start = pos;
        }
        pos += len;
    }
    if start < n {
        out.push((start as u32, n as u32, piece_to_id(&normalized[start..n])));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids_of(pieces: &[Piece]) -> Vec<(u32, u32)> {
        pieces.iter().map(|&(s, e, _)| (s, e)).collect()
    }

    #[test]
    fn words_start_at_each_space_symbol() {
        let text = "▁ab▁▁c".as_bytes();
        let mut out = Vec::new();
        encode_word(text, |_| 0, &mut out);
        // "▁ab", "▁", "▁c"
        assert_eq!(ids_of(&out), vec![(0, 5), (5, 8), (8, 12)]);
    }

    #[test]
    fn characters_are_whole_utf8_sequences() {
        let text = "▁é".as_bytes();
        let mut out = Vec::new();
        encode_char(text, None, |_| 0, &mut out);
        assert_eq!(ids_of(&out), vec![(0, 3), (3, 5)]);
    }
}
