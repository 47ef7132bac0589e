//! Packed training rows cut from one token stream: each row is the `n + 1` tokens from
//! `sample * n`, copied out of the mapped shard, with the documents it crosses.
//!
//! The reference is `TokenLoader._collate` in `python/tokenpact/data/loader.py` (the
//! numpy path every other dataset layout takes); this is its single-mapping fast path,
//! one call per batch instead of some forty numpy calls.

use crate::error::{CoreError, CoreResult};

/// The documents a batch of rows crosses, as `tp.batch` and the loader define them.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct RowBounds {
    /// Per row: the document its first token belongs to.
    pub first_docs: Vec<i64>,
    /// Every document start inside a row (offset in `(0, n]`), row by row, in order.
    pub cut_rows: Vec<i64>,
    pub cuts: Vec<i64>,
    /// The flattened batch's segment bounds: 0, every document start and every row end,
    /// ascending and without repeats (int32, as `astype(np.int32)` casts).
    pub cu_seqlens: Vec<i32>,
}

/// The last document whose start is `<= token` (empty documents share a start; the
/// last of them holds the token).
fn holding(starts: &[i64], token: i64) -> i64 {
    starts.partition_point(|&s| s <= token) as i64 - 1
}

/// Row bounds for rows starting at `samples[r] * n`; `starts` are the documents' start
/// offsets, ascending, with the stream's end last (`starts[0] == 0`).
pub fn row_bounds(starts: &[i64], samples: &[i64], n: i64, stream: i64) -> CoreResult<RowBounds> {
    if n < 1 || starts.first() != Some(&0) {
        return Err(CoreError::InvalidInput(
            "packed rows need seq_len >= 1 and document starts from 0".into(),
        ));
    }
    let rows = samples.len();
    let mut out = RowBounds {
        first_docs: Vec::with_capacity(rows),
        cu_seqlens: Vec::with_capacity(2 * rows + 1),
        ..RowBounds::default()
    };
    out.cu_seqlens.push(0);
    let mut last: i64 = 0;
    for (r, &sample) in samples.iter().enumerate() {
        let begin = sample.checked_mul(n).filter(|&b| b >= 0 && b + n < stream);
        let Some(begin) = begin else {
            return Err(CoreError::InvalidInput(format!(
                "sample {sample} of seq_len {n} is outside the stream's {stream} tokens"
            )));
        };
        let lo = holding(starts, begin);
        let hi = holding(starts, begin + n);
        let row_base = r as i64 * n;
        out.first_docs.push(lo);
        for doc in (lo + 1)..=hi {
            let cut = starts[doc as usize] - begin;
            out.cut_rows.push(r as i64);
            out.cuts.push(cut);
            if row_base + cut != last {
                last = row_base + cut;
                out.cu_seqlens.push(last as i32);
            }
        }
        if row_base + n != last {
            last = row_base + n;
            out.cu_seqlens.push(last as i32);
        }
    }
    Ok(out)
}

/// Copies row `r` = `stream[samples[r] * n .. + n + 1]` into `out` (rows back to back),
/// all in bytes of `item` each. `row_bounds` has checked every sample against the stream.
pub fn gather_rows(
    stream: &[u8],
    samples: &[i64],
    n: usize,
    item: usize,
    out: &mut [u8],
) -> CoreResult<()> {
    let row = (n + 1) * item;
    if out.len() != samples.len() * row {
        return Err(CoreError::InvalidInput(format!(
            "the batch buffer holds {} bytes, not {} rows of {row}",
            out.len(),
            samples.len()
        )));
    }
    for (dst, &sample) in out.chunks_exact_mut(row).zip(samples) {
        let from = (sample as usize) * n * item;
        let src = stream.get(from..from + row).ok_or_else(|| {
            CoreError::InvalidInput(format!("sample {sample} is outside the mapped stream"))
        })?;
        dst.copy_from_slice(src);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_cover_cuts_empty_documents_and_row_ends() {
        // Documents of lengths 3, 0, 5, 2 (starts 0 3 3 8, end 10); n = 4.
        let starts = [0, 3, 3, 8, 10];
        let b = row_bounds(&starts, &[0, 1], 4, 10).unwrap();
        assert_eq!(b.first_docs, vec![0, 2]);
        // Row 0 = tokens 0..=4: the empty document and doc 2 start at offset 3. Row 1 =
        // tokens 4..=8: doc 3 starts at 8, offset 4 (the last target).
        assert_eq!(b.cut_rows, vec![0, 0, 1]);
        assert_eq!(b.cuts, vec![3, 3, 4]);
        // Repeated cuts and a cut at a row end fold into one bound.
        assert_eq!(b.cu_seqlens, vec![0, 3, 4, 8]);
    }

    #[test]
    fn samples_outside_the_stream_are_errors() {
        let starts = [0, 10];
        assert!(row_bounds(&starts, &[2], 4, 10).is_err()); // needs token 12
        assert!(row_bounds(&starts, &[-1], 4, 10).is_err());
        assert!(row_bounds(&starts, &[i64::MAX], 4, 10).is_err());
        let mut out = [0u8; 5];
        assert!(gather_rows(&[0; 8], &[1], 4, 1, &mut out).is_err());
    }

    #[test]
    fn gather_copies_overlapping_windows() {
        let stream: Vec<u8> = (0..10).collect();
        let mut out = [0u8; 10];
        gather_rows(&stream, &[1, 0], 4, 1, &mut out).unwrap();
        assert_eq!(out, [4, 5, 6, 7, 8, 0, 1, 2, 3, 4]);
    }
}
