//! Byte-level BPE: the model (merge map + vocabulary), the encoder and the trainer;
//! `hf_chars`: Hugging Face BPE over characters (non-byte-level `tokenizer.json`).

pub mod count;
pub mod dropout;
pub mod encode;
pub mod hf;
pub mod hf_chars;
pub mod model;
pub mod piece_cache;
pub mod train;

use rustc_hash::FxHashMap;

#[inline]
pub(crate) fn pair_key(left: u32, right: u32) -> u64 {
    ((left as u64) << 32) | right as u64
}

#[inline]
pub(crate) fn unpack(key: u64) -> (u32, u32) {
    ((key >> 32) as u32, key as u32)
}

/// One merge step inside one training unit (a weighted symbol sequence), shared by the
/// byte-level trainer and the WordPiece / character-BPE engine: replaces each
/// non-overlapping `(a, b)`, left to right, by `new_id` in place; adds `-weight` to the
/// pair-count delta of every old adjacent pair and `+weight` to every new one; indexes
/// `unit` under each new pair that contains `new_id`. Returns the new length and the
/// number of replacements (0 when the unit no longer holds the pair: a stale index entry).
#[inline]
pub(crate) fn merge_pair_in_unit(
    syms: &mut [u32],
    (a, b, new_id): (u32, u32, u32),
    weight: i64,
    unit: u32,
    delta: &mut FxHashMap<u64, i64>,
    units_of: &mut FxHashMap<u64, Vec<u32>>,
) -> (usize, u64) {
    let n = syms.len();
    if !syms.windows(2).any(|x| x[0] == a && x[1] == b) {
        return (n, 0);
    }
    for x in syms.windows(2) {
        *delta.entry(pair_key(x[0], x[1])).or_insert(0) -= weight;
    }
    let (mut i, mut out, mut reps) = (0usize, 0usize, 0u64);
    while i < n {
        if i + 1 < n && syms[i] == a && syms[i + 1] == b {
            syms[out] = new_id;
            i += 2;
            reps += 1;
        } else {
            syms[out] = syms[i];
            i += 1;
        }
        out += 1;
    }
    for x in syms[..out].windows(2) {
        let key = pair_key(x[0], x[1]);
        *delta.entry(key).or_insert(0) += weight;
        if x[0] == new_id || x[1] == new_id {
            let list = units_of.entry(key).or_default();
            if list.last() != Some(&unit) {
                list.push(unit);
            }
        }
    }
    (out, reps)
}
