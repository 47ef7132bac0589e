//! Byte-level BPE: the model (merge map + vocabulary), the encoder and the trainer;
//! `hf_chars`: Hugging Face BPE over characters (non-byte-level `tokenizer.json`).

pub mod count;
pub mod count_table;
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
/// non-overlapping `(a, b)`, left to right, by `new_id` in place; adds the net pair-count
/// change (`-weight` per old adjacent pair, `+weight` per new one) to `delta`; indexes
/// `unit` under each new pair that contains `new_id`. Returns the new length and the
/// number of replacements (0 when the unit no longer holds the pair: a stale index entry).
///
/// Only the pairs around each replacement change, so only those are touched: a site
/// `p a b q` becomes `p N q`, removing `(p, a)`, `(a, b)`, `(b, q)` and adding `(p, N)`,
/// `(N, q)`, with `p` already rewritten and `q` not yet. Chaining the sites left to
/// right gives exactly (new pairs - old pairs); long units (unspaced CJK lines) no
/// longer pay for every pair on every merge.
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
    let Some(first) = syms.windows(2).position(|x| x[0] == a && x[1] == b) else {
        return (n, 0);
    };
    let (mut i, mut out, mut reps) = (first, first, 0u64);
    while i < n {
        if i + 1 < n && syms[i] == a && syms[i + 1] == b {
            *delta.entry(pair_key(a, b)).or_insert(0) -= weight;
            if out > 0 {
                let p = syms[out - 1];
                *delta.entry(pair_key(p, a)).or_insert(0) -= weight;
                *delta.entry(pair_key(p, new_id)).or_insert(0) += weight;
            }
            if i + 2 < n {
                let q = syms[i + 2];
                *delta.entry(pair_key(b, q)).or_insert(0) -= weight;
                *delta.entry(pair_key(new_id, q)).or_insert(0) += weight;
            }
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
        if x[0] == new_id || x[1] == new_id {
            let list = units_of.entry(pair_key(x[0], x[1])).or_default();
            if list.last() != Some(&unit) {
                list.push(unit);
            }
        }
    }
    (out, reps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::splitmix64;

    fn pairs(syms: &[u32]) -> FxHashMap<u64, i64> {
        let mut out = FxHashMap::default();
        for x in syms.windows(2) {
            *out.entry(pair_key(x[0], x[1])).or_insert(0) += 1;
        }
        out
    }

    /// The local delta equals (pairs after - pairs before) recomputed over the whole
    /// unit, including runs such as `a a a a` merged by `(a, a)` and chained sites.
    #[test]
    fn local_delta_equals_full_recount() {
        let mut state = 7u64;
        for _ in 0..5000 {
            state = splitmix64(state);
            let n = (state % 12) as usize;
            let syms: Vec<u32> = (0..n)
                .map(|i| (splitmix64(state ^ i as u64) % 3) as u32)
                .collect();
            let (a, b) = ((state >> 20) as u32 % 3, (state >> 30) as u32 % 3);
            let (mut delta, mut units_of) = (FxHashMap::default(), FxHashMap::default());
            let mut out = syms.clone();
            let (len, reps) =
                merge_pair_in_unit(&mut out, (a, b, 9), 2, 5, &mut delta, &mut units_of);
            let mut want = pairs(&out[..len]);
            for (k, c) in pairs(&syms) {
                *want.entry(k).or_insert(0) -= c;
            }
            want.retain(|_, c| *c != 0);
            delta.retain(|_, c| *c != 0);
            let want: FxHashMap<u64, i64> = want.into_iter().map(|(k, c)| (k, 2 * c)).collect();
            assert_eq!(delta, want, "{syms:?} merging ({a}, {b})");
            assert_eq!(reps as usize, syms.len() - len);
            for x in out[..len].windows(2) {
                if x[0] == 9 || x[1] == 9 {
                    assert_eq!(units_of[&pair_key(x[0], x[1])], vec![5]);
                }
            }
        }
    }
}
