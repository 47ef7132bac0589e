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

/// Whose each content owner is, for the assistant mask of a plain record: the message
/// index of each owner, and whether each message is an assistant's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MessageOwners {
    pub owner_message: Vec<usize>,
    pub assistant: Vec<bool>,
}

/// The assistant messages' token ranges and the prompt boundary of a record without
/// `{% generation %}` spans or post-processor markers, from its encoding (`span_owner`:
/// the owner of each content span; `span_lo`/`span_hi`: the tokens overlapping it).
/// `tokenpact.chat.ownership.plain_ranges_and_boundary` is the reference: a message's
/// range runs from the first to the last token of its non-empty spans (in the order the
/// messages first appear), then over each stop token right after it that no later span
/// holds; the boundary is, in training, where the last message's range starts when that
/// message is an assistant's (the length when it has no range), else the length. None
/// when a span's owner is not in `owners`.
pub fn plain_ranges(
    span_owner: impl IntoIterator<Item = i32>,
    owners: &MessageOwners,
    ids: &[u32],
    span_lo: &[usize],
    span_hi: &[usize],
    stops: &[u32],
    training: bool,
) -> Option<(Vec<(usize, usize)>, usize)> {
    // Per message, its region's index; regions hold [first token, end token, last span].
    let mut region_of: Vec<Option<usize>> = vec![None; owners.assistant.len()];
    let mut regions: Vec<(usize, usize, usize)> = Vec::new();
    for (k, ((owner, &lo), &hi)) in span_owner.into_iter().zip(span_lo).zip(span_hi).enumerate() {
        if lo >= hi {
            continue;
        }
        let message = *owners.owner_message.get(usize::try_from(owner).ok()?)?;
        if !owners.assistant.get(message).copied().unwrap_or(false) {
            continue;
        }
        match region_of[message] {
            None => {
                region_of[message] = Some(regions.len());
                regions.push((lo, hi, k));
            }
            Some(r) => {
                let region = &mut regions[r];
                *region = (region.0.min(lo), region.1.max(hi), k);
            }
        }
    }
    let n = ids.len();
    let ranges = regions
        .iter()
        .map(|&(lo, mut hi, k)| {
            // A token at or after the end of span k overlaps none of the spans up to k
            // (sorted and disjoint, their token ends never decrease).
            while hi < n && stops.contains(&ids[hi]) && !in_spans(span_lo, span_hi, hi, k + 1) {
                hi += 1;
            }
            (lo, hi)
        })
        .collect();
    let last = owners.assistant.len().checked_sub(1);
    let boundary = match last {
        Some(m) if training && owners.assistant[m] => region_of[m].map_or(n, |r| regions[r].0),
        _ => n,
    };
    Some((ranges, boundary))
}

/// Whether `token` overlaps one of the token ranges from span `first` on (sorted by
/// their first token).
fn in_spans(span_lo: &[usize], span_hi: &[usize], token: usize, first: usize) -> bool {
    for (&lo, &hi) in span_lo.iter().zip(span_hi).skip(first) {
        if lo > token {
            return false;
        }
        if token < hi {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_ranges_cover_assistant_messages_and_their_stops() {
        // Messages: 0 user, 1 assistant, 2 user, 3 assistant; one owner per message.
        let owners = MessageOwners {
            owner_message: vec![0, 1, 2, 3],
            assistant: vec![false, true, false, true],
        };
        // Tokens: 0 header, 1-2 user, 3 header, 4-5 assistant, 6 stop, 7 header,
        // 8 user, 9 header, 10 assistant, 11 stop.
        let ids = [9, 1, 1, 9, 2, 2, 7, 9, 1, 9, 2, 7];
        let (lo, hi) = ([1, 4, 8, 10], [3, 6, 9, 11]);
        let got = plain_ranges([0, 1, 2, 3], &owners, &ids, &lo, &hi, &[7], true);
        assert_eq!(got, Some((vec![(4, 7), (10, 12)], 10)));
        // A stop token inside a later span stays outside the range; generation: length.
        let later = [1, 4, 6, 10];
        let got = plain_ranges([0, 1, 2, 3], &owners, &ids, &later, &hi, &[7], false);
        assert_eq!(got, Some((vec![(4, 6), (10, 12)], 12)));
        // An owner the table lacks: no answer (Python computes it).
        assert_eq!(
            plain_ranges([5], &owners, &ids, &[0], &[1], &[], true),
            None
        );
    }

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
