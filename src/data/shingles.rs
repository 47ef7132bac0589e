//! Word and character shingles of a document, as the Python reference defines them.
//!
//! A word shingle is `n` consecutive words of Python's `str.split()` joined by one space;
//! a character shingle is `n` consecutive code points. A document shorter than `n` units
//! is one shingle; an empty one has none.
//!
//! Word boundaries are found 64 bytes at a time: a bit mask of separator bytes (SSE2 on
//! x86_64, a byte loop elsewhere) whose 0->1 and 1->0 edges are the word ends and starts.
//! Non-ASCII separators (U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F,
//! U+205F, U+3000) all start with one of the bytes C2, E1, E2 or E3, so only those bytes
//! are decoded; everything else is a letter of some word.

use crate::error::{CoreError, CoreResult};

/// How a document is cut into shingles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShingleKind {
    /// `n` consecutive whitespace-separated words joined by one space.
    Word,
    /// `n` consecutive Unicode code points.
    Char,
}

impl ShingleKind {
    pub fn parse(s: &str) -> CoreResult<ShingleKind> {
        match s {
            "word" => Ok(ShingleKind::Word),
            "char" => Ok(ShingleKind::Char),
            _ => Err(CoreError::Config(format!(
                "unknown shingle kind {s:?}; use \"word\" or \"char\""
            ))),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shingling {
    pub kind: ShingleKind,
    pub n: usize,
}

/// Python's `str.split()` whitespace: Unicode White_Space plus the four ASCII
/// information separators (U+001C..U+001F) that Python also splits on.
#[inline]
fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Per 64-byte chunk: bit j of `.0` is set when byte j is an ASCII separator (or lies
/// past the end of the text), bit j of `.1` when it is C2 or E1..E3 (the lead bytes of
/// every non-ASCII separator).
#[cfg(target_arch = "x86_64")]
#[inline]
fn chunk_masks(chunk: &[u8; 64]) -> (u64, u64) {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is part of the x86_64 baseline; loads are unaligned and in bounds.
    unsafe {
        let mut space = 0u64;
        let mut lead = 0u64;
        for part in 0..4 {
            let x = _mm_loadu_si128(chunk.as_ptr().add(part * 16) as *const __m128i);
            // Unsigned "x - lo <= width" as min(x - lo, width) == x - lo.
            let in_range = |lo: i8, width: i8| {
                let d = _mm_sub_epi8(x, _mm_set1_epi8(lo));
                _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(width)), d)
            };
            let sp = _mm_or_si128(
                _mm_cmpeq_epi8(x, _mm_set1_epi8(0x20)),
                _mm_or_si128(in_range(0x09, 4), in_range(0x1c, 3)),
            );
            let ld = _mm_or_si128(
                _mm_cmpeq_epi8(x, _mm_set1_epi8(0xc2u8 as i8)),
                in_range(0xe1u8 as i8, 2),
            );
            space |= (_mm_movemask_epi8(sp) as u16 as u64) << (part * 16);
            lead |= (_mm_movemask_epi8(ld) as u16 as u64) << (part * 16);
        }
        (space, lead)
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn chunk_masks(chunk: &[u8; 64]) -> (u64, u64) {
    let mut space = 0u64;
    let mut lead = 0u64;
    for (j, &b) in chunk.iter().enumerate() {
        let sp = matches!(b, b'\t'..=b'\r' | 0x1c..=0x20);
        let ld = matches!(b, 0xc2 | 0xe1..=0xe3);
        space |= u64::from(sp) << j;
        lead |= u64::from(ld) << j;
    }
    (space, lead)
}

/// Word byte spans of `text` as Python's `str.split()` finds them, into `starts` and
/// `ends` (cleared first; equal lengths on return).
pub fn word_spans(text: &str, starts: &mut Vec<usize>, ends: &mut Vec<usize>) {
    starts.clear();
    ends.clear();
    let bytes = text.as_bytes();
    let len = bytes.len();
    // Separator bits of the next chunk already known (a multi-byte space crossing the
    // chunk edge), and whether the byte before the current chunk was a separator.
    let mut spill = 0u64;
    let mut prev_space = 1u64;
    let mut base = 0usize;
    while base < len {
        let (mut space, mut lead) = match bytes[base..].first_chunk::<64>() {
            Some(chunk) => chunk_masks(chunk),
            None => {
                // The tail, padded with spaces (which end a word and start none).
                let mut chunk = [b' '; 64];
                chunk[..len - base].copy_from_slice(&bytes[base..]);
                chunk_masks(&chunk)
            }
        };
        space |= spill;
        spill = 0;
        while lead != 0 {
            let j = lead.trailing_zeros() as usize;
            lead &= lead - 1;
            let i = base + j;
            // `i` holds a lead byte, so it is a char boundary of `text`.
            if let Some(c) = text[i..].chars().next() {
                if is_py_space(c) {
                    let w = c.len_utf8();
                    let bits = (1u128 << w) - 1;
                    let wide = bits << j;
                    space |= wide as u64;
                    spill |= (wide >> 64) as u64;
                }
            }
        }
        let before = (space << 1) | prev_space;
        let mut s = !space & before;
        let mut e = space & !before;
        while s != 0 {
            starts.push(base + s.trailing_zeros() as usize);
            s &= s - 1;
        }
        while e != 0 {
            ends.push(base + e.trailing_zeros() as usize);
            e &= e - 1;
        }
        prev_space = space >> 63;
        base += 64;
    }
    // Padding bytes are spaces, so only a text whose length is a multiple of 64 can end
    // inside a word here.
    if starts.len() > ends.len() {
        ends.push(len);
    }
    ends.truncate(starts.len());
}

/// Bytes after the last shingle of a [`Prepared`] buffer, so that a reader may always
/// load 64 bytes from a shingle's start.
pub const PAD: usize = 64;

/// Reusable buffers for shingling one document after another.
#[derive(Default)]
pub struct ShingleScratch {
    starts: Vec<usize>,
    ends: Vec<usize>,
    buf: Vec<u8>,
    spans: Vec<(usize, usize)>,
}

/// A document's shingles as spans of one buffer: the words joined by single spaces
/// (word shingles) or the text itself (character shingles), followed by [`PAD`] zero
/// bytes. Every shingle is then one contiguous slice, with no per-shingle copy.
pub struct Prepared<'a> {
    pub buf: &'a [u8],
    pub spans: &'a [(usize, usize)],
}

impl Prepared<'_> {
    #[inline]
    pub fn shingle(&self, span: (usize, usize)) -> &[u8] {
        &self.buf[span.0..span.1]
    }
}

impl Shingling {
    pub fn new(kind: ShingleKind, n: usize) -> CoreResult<Shingling> {
        if n == 0 {
            return Err(CoreError::Config(
                "shingle size n must be >= 1; use n=5 for word shingles".into(),
            ));
        }
        Ok(Shingling { kind, n })
    }

    /// Calls `f` with the UTF-8 bytes of every shingle of `text`, in document order
    /// (repeats included).
    pub fn for_each(&self, text: &str, mut f: impl FnMut(&[u8])) {
        let mut scratch = ShingleScratch::default();
        let prepared = self.prepare(text, &mut scratch);
        for &span in prepared.spans {
            f(prepared.shingle(span));
        }
    }

    /// The shingles of `text` in document order (repeats included), in `scratch`.
    pub fn prepare<'a>(&self, text: &str, scratch: &'a mut ShingleScratch) -> Prepared<'a> {
        let ShingleScratch {
            starts,
            ends,
            buf,
            spans,
        } = scratch;
        buf.clear();
        spans.clear();
        let bytes = text.as_bytes();
        match self.kind {
            ShingleKind::Word => {
                word_spans(text, starts, ends);
                let words = starts.len();
                // Join the words with single spaces, copying runs of words that are
                // already single-space separated in one go; `starts`/`ends` are
                // rewritten to positions in `buf`.
                let mut run = 0usize;
                for k in 0..=words {
                    let run_ends = k == words
                        || (k > 0 && (starts[k] - ends[k - 1] != 1 || bytes[ends[k - 1]] != b' '));
                    if !run_ends || k == 0 {
                        continue;
                    }
                    if run > 0 {
                        buf.push(b' ');
                    }
                    let (from, to) = (starts[run], ends[k - 1]);
                    // Joining only removes bytes, so words move towards the start.
                    let shift = from - buf.len();
                    buf.extend_from_slice(&bytes[from..to]);
                    for w in run..k {
                        starts[w] -= shift;
                        ends[w] -= shift;
                    }
                    run = k;
                }
                if words > 0 {
                    let windows = words.saturating_sub(self.n) + 1;
                    spans.extend(
                        (0..windows).map(|s| (starts[s], ends[(s + self.n).min(words) - 1])),
                    );
                }
            }
            ShingleKind::Char => {
                buf.extend_from_slice(bytes);
                if !text.is_empty() {
                    // Code point boundaries: every byte that is not a continuation byte.
                    starts.clear();
                    starts.extend(
                        bytes
                            .iter()
                            .enumerate()
                            .filter(|&(_, &b)| (b as i8) >= -0x40)
                            .map(|(i, _)| i),
                    );
                    starts.push(bytes.len());
                    let chars = starts.len() - 1;
                    let windows = chars.saturating_sub(self.n) + 1;
                    spans
                        .extend((0..windows).map(|s| (starts[s], starts[(s + self.n).min(chars)])));
                }
            }
        }
        buf.resize(buf.len() + PAD, 0);
        Prepared { buf, spans }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `str.split()` written the plain way: the definition the fast scan must match.
    fn reference_words(text: &str) -> Vec<&str> {
        text.split(is_py_space).filter(|w| !w.is_empty()).collect()
    }

    fn fast_words(text: &str) -> Vec<&str> {
        let (mut s, mut e) = (Vec::new(), Vec::new());
        word_spans(text, &mut s, &mut e);
        s.iter().zip(&e).map(|(&a, &b)| &text[a..b]).collect()
    }

    fn words(text: &str, n: usize) -> Vec<String> {
        let s = Shingling::new(ShingleKind::Word, n).unwrap();
        let mut out = Vec::new();
        s.for_each(text, |b| out.push(String::from_utf8(b.to_vec()).unwrap()));
        out
    }

    #[test]
    fn seed_example_shingles() {
        assert_eq!(words("The cat sleeps.", 2), vec!["The cat", "cat sleeps."]);
    }

    #[test]
    fn short_documents_are_one_shingle() {
        assert_eq!(words("one\u{1f}two", 5), vec!["one two"]);
        assert!(words(" \t ", 2).is_empty());
    }

    /// Shingles from the joined buffer equal the words of `str.split()` joined by one
    /// space, window by window, whatever the gaps between the words were.
    #[test]
    fn joined_shingles_match_the_plain_definition() {
        let texts = [
            "a b c d e f g",
            "a  b\nc\u{3000}d \te f",
            "  lead and trail  ",
            "x\u{85}y\u{a0}z w v u t s",
            "one",
            "",
        ];
        for text in texts {
            for n in 1..=4 {
                let words = reference_words(text);
                let mut want: Vec<String> = Vec::new();
                if !words.is_empty() {
                    for start in 0..words.len().saturating_sub(n) + 1 {
                        want.push(words[start..(start + n).min(words.len())].join(" "));
                    }
                }
                let shingling = Shingling::new(ShingleKind::Word, n).unwrap();
                let mut got = Vec::new();
                shingling.for_each(text, |b| got.push(String::from_utf8(b.to_vec()).unwrap()));
                assert_eq!(got, want, "{text:?} n={n}");
            }
        }
        let chars = Shingling::new(ShingleKind::Char, 2).unwrap();
        let mut got = Vec::new();
        chars.for_each("aé日", |b| {
            got.push(String::from_utf8(b.to_vec()).unwrap())
        });
        assert_eq!(got, vec!["aé", "é日"]);
    }

    #[test]
    fn fast_word_scan_matches_python_split() {
        let pieces = [
            "a",
            "bc",
            " ",
            "  ",
            "\t",
            "\n",
            "\u{1c}",
            "\u{1f}",
            "\u{85}",
            "\u{a0}",
            "\u{1680}",
            "\u{2003}",
            "\u{200a}",
            "\u{200b}",
            "\u{2028}",
            "\u{202f}",
            "\u{205f}",
            "\u{3000}",
            "\u{3001}",
            "é",
            "日本",
            "\u{a9}",
            "\u{2014}",
            "\u{3042}",
            "x\u{2029}y",
        ];
        // Deterministic pseudo-random texts of every length around the 64-byte edges.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for round in 0..3000 {
            let mut text = String::new();
            let target = round % 200;
            while text.len() < target {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                text.push_str(pieces[(state % pieces.len() as u64) as usize]);
            }
            assert_eq!(fast_words(&text), reference_words(&text), "{text:?}");
        }
    }
}
