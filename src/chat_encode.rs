//! The tokenization half of chat rendering, for many rendered texts at once.
//!
//! A rendered template is encoded once with control tokens recognized only outside its
//! content spans (the trust rule), and each content span is mapped to the tokens that
//! overlap it. `ChatTemplate.render` does the same steps in Python around one
//! `Engine.encode_with_offsets` call; `render_batch` hands whole chunks of rendered
//! texts here so that they are encoded on worker threads while Python renders the next
//! chunk. The steps mirror the Python ones exactly (same span conversion, same binary
//! searches), so both paths own every token identically.

use crate::engine::Engine;
use crate::error::CoreResult;
use crate::special::{SpecialMatcher, Untrusted};

/// One rendered text, encoded and owned.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RenderedEncoding {
    pub ids: Vec<u32>,
    /// UTF-8 byte offsets of each token.
    pub starts: Vec<u32>,
    pub ends: Vec<u32>,
    /// The content spans in UTF-8 bytes, flat: `[start0, end0, start1, end1, ...]`.
    pub span_bytes: Vec<usize>,
    /// Tokens `[span_lo[k], span_hi[k])` overlap content span `k`.
    pub span_lo: Vec<usize>,
    pub span_hi: Vec<usize>,
}

/// UTF-8 byte offsets of codepoint `positions` in `text` (a position past the end maps
/// to the end, as Python slicing clamps). Sorted positions take one forward walk; a
/// smaller position restarts the walk from the beginning.
pub fn codepoints_to_bytes(text: &str, positions: &[usize]) -> Vec<usize> {
    if text.is_ascii() {
        return positions.iter().map(|&p| p.min(text.len())).collect();
    }
    let mut out = Vec::with_capacity(positions.len());
    let mut chars = text.char_indices();
    let (mut char_pos, mut byte_pos) = (0usize, 0usize);
    for &p in positions {
        if p < char_pos {
            chars = text.char_indices();
            char_pos = 0;
            byte_pos = 0;
        }
        while char_pos < p {
            match chars.next() {
                Some((at, c)) => {
                    byte_pos = at + c.len_utf8();
                    char_pos += 1;
                }
                None => break,
            }
        }
        out.push(byte_pos);
    }
    out
}

/// Kind code of a control ID outside content and of other template text (the order of
/// `tokenpact.chat.conversation.KINDS`).
pub const CONTROL: u8 = 0;
pub const TEMPLATE: u8 = 1;

/// The kind code of each token, as `Tokens.trusted_columns` classifies it: a token
/// overlapping content span `k` has `span_kinds[k]` (a token straddling two spans
/// belongs to the first), any other is `CONTROL` when `is_control[id]`, else `TEMPLATE`.
pub fn token_kinds(
    ids: &[u32],
    span_lo: &[usize],
    span_hi: &[usize],
    span_kinds: &[u8],
    is_control: &[bool],
) -> Vec<u8> {
    let mut kinds: Vec<u8> = ids
        .iter()
        .map(|&i| {
            if is_control.get(i as usize).copied().unwrap_or(false) {
                CONTROL
            } else {
                TEMPLATE
            }
        })
        .collect();
    let mut pos = 0usize;
    for ((&lo, &hi), &kind) in span_lo.iter().zip(span_hi).zip(span_kinds) {
        let lo = lo.max(pos);
        if lo < hi {
            let hi = hi.min(kinds.len());
            if lo < hi {
                kinds[lo..hi].fill(kind);
            }
            pos = hi;
        }
    }
    kinds
}

/// Python's `bisect.bisect_right(values, x)`, step for step (also on unsorted input).
fn bisect_right(values: &[u32], x: usize) -> usize {
    let (mut lo, mut hi) = (0usize, values.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        if x < values[mid] as usize {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// Python's `bisect.bisect_left(values, x)`, step for step.
fn bisect_left(values: &[u32], x: usize) -> usize {
    let (mut lo, mut hi) = (0usize, values.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        if (values[mid] as usize) < x {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Encodes `text` with `allowed` control spellings recognized outside the codepoint
/// spans `flat_spans` (`[start0, end0, ...]`), and owns each span's tokens.
pub fn encode_rendered(
    engine: &Engine,
    text: &str,
    allowed: Option<&SpecialMatcher>,
    flat_spans: &[usize],
) -> CoreResult<RenderedEncoding> {
    encode_rendered_bytes(engine, text, allowed, codepoints_to_bytes(text, flat_spans))
}

/// [`encode_rendered`] with the spans already in UTF-8 bytes (`[start0, end0, ...]`, each
/// on a char boundary of `text`): the native template engine reports them so.
pub fn encode_rendered_bytes(
    engine: &Engine,
    text: &str,
    allowed: Option<&SpecialMatcher>,
    span_bytes: Vec<usize>,
) -> CoreResult<RenderedEncoding> {
    let untrusted = if span_bytes.is_empty() {
        Untrusted::none()
    } else {
        Untrusted::new(span_bytes.chunks(2).map(|p| (p[0], p[1])).collect())?
    };
    let (mut ids, mut offsets) = (Vec::new(), Vec::new());
    engine.encode_with_offsets(text, allowed, &untrusted, &mut ids, &mut offsets)?;
    let (starts, ends): (Vec<u32>, Vec<u32>) = offsets.into_iter().unzip();
    let span_lo = span_bytes
        .iter()
        .step_by(2)
        .map(|&a| bisect_right(&ends, a))
        .collect();
    let span_hi = span_bytes
        .iter()
        .skip(1)
        .step_by(2)
        .map(|&b| bisect_left(&starts, b))
        .collect();
    Ok(RenderedEncoding {
        ids,
        starts,
        ends,
        span_bytes,
        span_lo,
        span_hi,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codepoints_map_to_utf8_bytes() {
        let text = "añb€c";
        assert_eq!(
            codepoints_to_bytes(text, &[0, 1, 2, 3, 4, 5]),
            [0, 1, 3, 4, 7, 8]
        );
        assert_eq!(codepoints_to_bytes(text, &[4, 2, 9]), [7, 3, 8]);
        assert_eq!(codepoints_to_bytes("abc", &[1, 7]), [1, 3]);
    }

    #[test]
    fn content_runs_override_control_ids() {
        let control = [false, true, false];
        // Tokens 0..4; span 0 covers tokens 1..3, span 1 (overlapping) 2..4.
        let kinds = token_kinds(&[1, 1, 0, 2], &[1, 2], &[3, 4], &[2, 4], &control);
        assert_eq!(kinds, [CONTROL, 2, 2, 4]);
        assert_eq!(
            token_kinds(&[1, 7], &[], &[], &[], &control),
            [CONTROL, TEMPLATE]
        );
    }

    #[test]
    fn bisects_match_python() {
        let v = [2u32, 4, 4, 9];
        assert_eq!(bisect_right(&v, 4), 3);
        assert_eq!(bisect_left(&v, 4), 1);
        assert_eq!(bisect_right(&v, 0), 0);
        assert_eq!(bisect_left(&v, 10), 4);
    }
}
