//! Where a SentencePiece Unigram lattice provably splits: the cuts that let the encoder
//! segment a text piece by piece (`Unigram::encode_segments`) with results identical to
//! Viterbi over the whole text.
//!
//! A position c of the normalized text is a cut when no lattice edge starts before c
//! and ends after it. Every path then passes through c, nothing past c is reached before
//! Viterbi starts from c, and what Viterbi computes from c on depends on the text before
//! c only through the best score at c (its re-centring at c, if any, only zeroes that
//! score, since nothing past c is reached yet). Backtracking from the end walks back
//! through every cut, so the best path is the concatenation of each segment's best path
//! from the score carried to its start.
//!
//! Edges start where Viterbi's walk over characters goes (`one_char_len` steps from the
//! text's start). Unknown-character edges span one step. Piece edges are vocabulary
//! pieces, here required to be well-formed UTF-8: a piece matching the text at a walk
//! position is a run of well-formed characters there, so the walk steps through its
//! character boundaries, and a piece crossing c holds, side by side, the character
//! ending at c and the one starting at c. Two kinds of cuts follow:
//!
//! - `▁` (U+2581): when no piece holds `▁` past its first character, every `▁` the walk
//!   reaches is a cut (the piece would hold that `▁` at an inner position);
//! - a boundary between characters of classes (a, b) such that no piece holds a
//!   character of class a followed by one of class b (`Cuts::joinable`). Classes are
//!   coarse (an ASCII byte, `▁`, else the lead byte of the character): the vocabulary
//!   decides which pairs join, so no script table has to agree with the trainer's.
//!
//! `▁` positions are found by a byte search, so the encoder checks that the walk of
//! each segment ends exactly at the next cut (it always does in well-formed UTF-8).

use super::normalizer::one_char_len;

/// U+2581, SentencePiece's escaped space.
pub const SPACE: &[u8] = "\u{2581}".as_bytes();
/// Pieces whose |score| exceeds this disable the cuts: the segment cache's error bounds
/// assume scores of log-probability size (no trained model comes near).
const MAX_SCORE: f32 = 1.0e6;
/// The class of `▁`: 0xC0 never starts a character of well-formed UTF-8.
const SPACE_CLASS: u8 = 0xC0;

/// The cut rules a vocabulary allows (see the module documentation).
pub struct Cuts {
    /// Bit (b % 64) of row a's word b / 64: some piece holds a class-a character
    /// followed by a class-b character.
    joinable: Box<[[u64; 4]; 256]>,
}

/// The class of the character starting at `s[i]` and its length (Viterbi's step).
#[inline(always)]
fn char_class(s: &[u8], i: usize) -> (u8, usize) {
    let b = s[i];
    if b < 0x80 {
        return (b, 1);
    }
    if b == SPACE[0] && s.get(i + 1..i + 3) == Some(&SPACE[1..]) {
        return (SPACE_CLASS, 3);
    }
    (b, one_char_len(b))
}

impl Cuts {
    /// The cuts proven for a Viterbi vocabulary of (piece, id, score) with this score
    /// of unknown characters; None when `▁` does not cut (a piece holds it past its
    /// start, or a piece is not well-formed UTF-8) or a score is out of range.
    pub fn prove(keys: &[(&[u8], i32, f32)], unk_score: f32) -> Option<Cuts> {
        let small = |s: f32| s.is_finite() && s.abs() <= MAX_SCORE;
        let mut joinable = Box::new([[0u64; 4]; 256]);
        if !small(unk_score) {
            return None;
        }
        for &(piece, _, score) in keys {
            if !small(score) || std::str::from_utf8(piece).is_err() {
                return None;
            }
            let mut prev = None;
            let mut i = 0;
            while i < piece.len() {
                let (class, len) = char_class(piece, i);
                if class == SPACE_CLASS && i > 0 {
                    return None;
                }
                if let Some(a) = prev {
                    joinable[a as usize][class as usize / 64] |= 1 << (class % 64);
                }
                prev = Some(class);
                i += len;
            }
        }
        Some(Cuts { joinable })
    }

    #[inline(always)]
    fn joins(&self, a: u8, b: u8) -> bool {
        self.joinable[a as usize][b as usize / 64] >> (b % 64) & 1 == 1
    }

    /// The first class cut after `p` (a walk position) and before `limit`, or `limit`.
    /// Walks characters from `p` as Viterbi does.
    #[inline]
    pub fn next_class_cut(&self, s: &[u8], p: usize, limit: usize) -> usize {
        let (mut prev, len) = char_class(s, p);
        let mut i = p + len;
        while i < limit {
            let (class, len) = char_class(s, i);
            if !self.joins(prev, class) {
                return i;
            }
            prev = class;
            i += len;
        }
        limit
    }
}

/// The next `▁` after `p`, or the end of `s`.
#[inline]
pub fn next_space(s: &[u8], p: usize) -> usize {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let lead = LO * SPACE[0] as u64;
    let mut i = p + 1;
    // Eight bytes at a time: words without the lead byte 0xE2 are skipped whole. The
    // lowest flagged byte is the first 0xE2 (borrows only flag bytes above it).
    while i + 8 <= s.len() {
        let w = u64::from_le_bytes(s[i..i + 8].try_into().unwrap_or_default()) ^ lead;
        let zero = w.wrapping_sub(LO) & !w & HI;
        if zero == 0 {
            i += 8;
            continue;
        }
        let at = i + (zero.trailing_zeros() / 8) as usize;
        if s.get(at + 1..at + 3) == Some(&SPACE[1..]) {
            return at;
        }
        i = at + 1;
    }
    while i + 2 < s.len() {
        if s[i..i + 3] == *SPACE {
            return i;
        }
        i += 1;
    }
    s.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_next_space(s: &[u8], p: usize) -> usize {
        (p + 1..s.len())
            .find(|&i| s[i..].starts_with(SPACE))
            .unwrap_or(s.len())
    }

    #[test]
    fn next_space_finds_every_space_symbol() {
        let text = "▁a▁bc—d▁▁éé…▁日本語\u{2580}▁x▁".as_bytes();
        for p in 0..text.len() {
            assert_eq!(next_space(text, p), naive_next_space(text, p), "p={p}");
        }
        let long = "abcdefghijk\u{2014}lmnopqrstu▁vwxyz0123456789▁".repeat(3);
        for p in 0..long.len() {
            assert_eq!(
                next_space(long.as_bytes(), p),
                naive_next_space(long.as_bytes(), p)
            );
        }
    }

    #[test]
    fn proof_rejects_inner_spaces_bad_utf8_and_wild_scores() {
        let ok: Vec<(&[u8], i32, f32)> = vec![("▁ab".as_bytes(), 0, -1.0), (b"a", 1, -2.0)];
        assert!(Cuts::prove(&ok, -12.0).is_some());
        assert!(Cuts::prove(&[("a▁".as_bytes(), 0, -1.0)], -12.0).is_none());
        assert!(Cuts::prove(&[(b"\xe2\x96", 0, -1.0)], -12.0).is_none());
        assert!(Cuts::prove(&[(b"a", 0, f32::NAN)], -12.0).is_none());
        assert!(Cuts::prove(&ok, -1.0e7).is_none());
    }

    #[test]
    fn class_cuts_follow_the_vocabulary() {
        let keys: Vec<(&[u8], i32, f32)> = vec![
            (b"ab", 0, -1.0),
            (b"b.", 1, -1.0),
            ("▁(".as_bytes(), 2, -1.0),
            ("éa".as_bytes(), 3, -1.0),
        ];
        let cuts = Cuts::prove(&keys, -12.0).expect("provable");
        let s = "▁(ab.a(ébb".as_bytes();
        let mut at = vec![];
        let mut p = 0;
        while p < s.len() {
            p = cuts.next_class_cut(s, p, s.len());
            at.push(p);
        }
        // ▁( joins, ( a does not, a b and b . join, . a does not, a ( does not,
        // ( é does not, é b does not (é joins a only), nor does b b.
        let text = |i: usize| std::str::from_utf8(&s[..i]).unwrap().to_string();
        let cut_texts: Vec<String> = at.iter().map(|&i| text(i)).collect();
        assert_eq!(
            cut_texts,
            [
                "▁(",
                "▁(ab.",
                "▁(ab.a",
                "▁(ab.a(",
                "▁(ab.a(é",
                "▁(ab.a(éb",
                "▁(ab.a(ébb"
            ]
        );
    }
}
