//! Token ownership of a rendered chat template: which tokens overlap content, and the
//! per-token columns of a conversation (control flag, kind, message, owner).
//!
//! The rendered text is encoded once; content spans (untrusted text, in UTF-8 bytes)
//! are mapped to token ranges by binary search over the token offsets, and a token that
//! straddles two spans belongs to the first. Tokens outside content are control tokens
//! when their ID is a control ID, else template text. `tokenpact/chat/ownership.py`
//! holds the Python reference of the same rules; the tests check the two agree.

use crate::error::{CoreError, CoreResult};

/// Kind codes, as in `tokenpact.chat.conversation` (`KINDS`).
pub const CONTROL: u8 = 0;
pub const TEMPLATE: u8 = 1;

/// Token range `[lo, hi)` overlapping each byte span `[a, b)`: `lo` is the first token
/// ending after `a`, `hi` the first token starting at or after `b` (tokens are sorted
/// and contiguous, as the encoder returns them).
pub fn span_token_ranges(
    starts: &[u32],
    ends: &[u32],
    spans: &[(u32, u32)],
) -> Vec<(usize, usize)> {
    spans
        .iter()
        .map(|&(a, b)| {
            (
                ends.partition_point(|&e| e <= a),
                starts.partition_point(|&s| s < b),
            )
        })
        .collect()
}

/// The per-token columns of a conversation.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Columns {
    /// 1 where the token is a trusted control token.
    pub special: Vec<u8>,
    /// Kind code: CONTROL, TEMPLATE or the owner's kind.
    pub kind: Vec<u8>,
    /// The owner's message index, or -1.
    pub message: Vec<i64>,
    /// The content owner, or -1.
    pub owner: Vec<i64>,
}

/// Columns of `ids` given each span's token range and owner (spans sorted by start).
///
/// `owner_kind[o]` and `owner_message[o]` describe owner `o`; `is_control(id)` says
/// whether an ID is a control ID. A content token keeps its owner's kind even when its
/// ID is a control ID: content never yields trusted control tokens.
pub fn columns(
    ids: &[u32],
    ranges: &[(usize, usize)],
    span_owner: &[i64],
    owner_kind: &[u8],
    owner_message: &[i64],
    is_control: impl Fn(u32) -> bool,
) -> CoreResult<Columns> {
    if ranges.len() != span_owner.len() || owner_kind.len() != owner_message.len() {
        return Err(CoreError::InvalidInput(
            "chat columns: spans and owners must have matching lengths".into(),
        ));
    }
    let n = ids.len();
    let mut out = Columns {
        special: Vec::with_capacity(n),
        kind: Vec::with_capacity(n),
        message: Vec::with_capacity(n),
        owner: Vec::with_capacity(n),
    };
    let template = |out: &mut Columns, from: usize, to: usize| {
        for &id in &ids[from..to] {
            let control = is_control(id);
            out.special.push(u8::from(control));
            out.kind.push(if control { CONTROL } else { TEMPLATE });
        }
        out.message.resize(to, -1);
        out.owner.resize(to, -1);
    };
    let mut pos = 0;
    for (&(lo, hi), &o) in ranges.iter().zip(span_owner) {
        let (lo, hi) = (lo.max(pos).min(n), hi.min(n));
        if lo >= hi {
            continue;
        }
        let index = usize::try_from(o)
            .ok()
            .filter(|&i| i < owner_kind.len())
            .ok_or_else(|| {
                CoreError::InvalidInput(format!(
                    "chat columns: span owner {o} is not one of the {} owners",
                    owner_kind.len()
                ))
            })?;
        template(&mut out, pos, lo);
        out.special.resize(hi, 0);
        out.kind.resize(hi, owner_kind[index]);
        out.message.resize(hi, owner_message[index]);
        out.owner.resize(hi, o);
        pos = hi;
    }
    template(&mut out, pos, n);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_follow_searchsorted() {
        // tokens: [0,3) [3,5) [5,9) [9,10)
        let (starts, ends) = ([0, 3, 5, 9], [3, 5, 9, 10]);
        assert_eq!(
            span_token_ranges(&starts, &ends, &[(3, 5), (4, 6), (10, 10)]),
            vec![(1, 2), (1, 3), (4, 4)]
        );
    }

    #[test]
    fn straddling_token_goes_to_the_first_span() {
        let ids = [100, 7, 8, 9, 101];
        // span 0 covers tokens 1..3, span 1 covers 2..4: token 2 stays with owner 0.
        let cols = columns(&ids, &[(1, 3), (2, 4)], &[0, 1], &[2, 3], &[0, 1], |id| {
            id >= 100
        })
        .unwrap();
        assert_eq!(cols.special, vec![1, 0, 0, 0, 1]);
        assert_eq!(cols.kind, vec![CONTROL, 2, 2, 3, CONTROL]);
        assert_eq!(cols.message, vec![-1, 0, 0, 1, -1]);
        assert_eq!(cols.owner, vec![-1, 0, 0, 1, -1]);
    }

    #[test]
    fn content_control_ids_stay_content() {
        let cols = columns(&[100, 100], &[(1, 2)], &[0], &[2], &[4], |id| id >= 100).unwrap();
        assert_eq!(cols.special, vec![1, 0]);
        assert_eq!(cols.kind, vec![CONTROL, 2]);
    }

    #[test]
    fn bad_owner_is_an_error() {
        assert!(columns(&[1], &[(0, 1)], &[5], &[2], &[0], |_| false).is_err());
        assert!(columns(&[1], &[(0, 1)], &[0, 1], &[2], &[0], |_| false).is_err());
    }
}
