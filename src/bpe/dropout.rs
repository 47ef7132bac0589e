//! BPE-dropout under the replay contract (seed 000, 0x08): every random decision is a
//! counter-based draw on (seed, epoch, sample, view, occurrence), see `crate::rng`.
//!
//! Policy, identical to the Python reference `tokenpact.stochastic.bpe_dropout_piece`:
//! at each step the eligible occurrences (adjacent pairs with a merge rank) are ordered
//! by (rank, position); each gets one draw in that order and is dropped when the draw is
//! below `p`; the first survivor is merged and the step repeats. When every eligible
//! occurrence is dropped the pre-token is final. Draws are numbered across the whole
//! text, pre-tokens in text order. So p = 0 is deterministic BPE (lowest rank, leftmost)
//! and p = 1 leaves the bytes.

use std::collections::BTreeSet;

use rustc_hash::FxHashMap;

use crate::error::{CoreError, CoreResult};
use crate::pretok::Pretokenizer;
use crate::rng::uniform;

/// The merge table of a byte-level BPE whose merge `r` makes token `256 + r`.
pub struct DropoutBpe {
    /// (left, right) -> (rank, merged ID). A pair listed twice keeps its last rank, as
    /// the reference's dict does.
    ranks: FxHashMap<(u32, u32), (u32, u32)>,
}

/// Pre-tokens longer than this take the ordered-set path (`piece_long`): rescanning
/// every pair after each merge is quadratic, and one pre-token can be a whole line.
const SHORT_PIECE: usize = 64;
const NONE: usize = usize::MAX;

/// Reusable buffers for one thread.
#[derive(Default)]
pub struct DropoutScratch {
    ids: Vec<u32>,
    eligible: Vec<(u32, u32)>,
}

impl DropoutBpe {
    pub fn new(merges: &[(u32, u32)]) -> CoreResult<DropoutBpe> {
        if merges.len() > (u32::MAX - 256) as usize {
            return Err(CoreError::Config(format!(
                "BPE-dropout: {} merges exceed the 32-bit token ID space",
                merges.len()
            )));
        }
        let mut ranks = FxHashMap::default();
        for (rank, &pair) in merges.iter().enumerate() {
            ranks.insert(pair, (rank as u32, 256 + rank as u32));
        }
        Ok(DropoutBpe { ranks })
    }

    /// BPE-dropout on one pre-token whose symbols are in `ids` (rewritten in place);
    /// `occurrence` is the next unused draw and is advanced past the draws made.
    pub fn piece(
        &self,
        ids: &mut Vec<u32>,
        p: f64,
        stream: u64,
        occurrence: &mut u64,
        eligible: &mut Vec<(u32, u32)>,
    ) {
        if ids.len() > SHORT_PIECE {
            return self.piece_long(ids, p, stream, occurrence);
        }
        loop {
            eligible.clear();
            for (i, w) in ids.windows(2).enumerate() {
                if let Some(&(rank, _)) = self.ranks.get(&(w[0], w[1])) {
                    eligible.push((rank, i as u32));
                }
            }
            // Positions are distinct, so the order is total and an unstable sort is exact.
            eligible.sort_unstable();
            let mut chosen = None;
            for &(_, i) in eligible.iter() {
                let u = uniform(stream, *occurrence);
                *occurrence += 1;
                if u >= p {
                    chosen = Some(i as usize);
                    break;
                }
            }
            let Some(i) = chosen else {
                return;
            };
            // The pair was found in `ranks` just above.
            let merged = self.ranks[&(ids[i], ids[i + 1])].1;
            ids[i] = merged;
            ids.remove(i + 1);
        }
    }

    /// `piece` for long pre-tokens, the same draws in the same order: the eligible
    /// occurrences live in an ordered set keyed by (rank, original position of the left
    /// symbol), which orders them as (rank, current position) does, and a merge updates
    /// only its neighbours. Symbols are a linked list over original positions.
    fn piece_long(&self, ids: &mut Vec<u32>, p: f64, stream: u64, occurrence: &mut u64) {
        let n = ids.len();
        let rank = |a: u32, b: u32| self.ranks.get(&(a, b)).map(|r| r.0);
        let mut next: Vec<usize> = (1..=n).collect();
        let mut prev: Vec<usize> = (0..n).map(|i| i.checked_sub(1).unwrap_or(NONE)).collect();
        let mut eligible: BTreeSet<(u32, usize)> = (0..n - 1)
            .filter_map(|i| rank(ids[i], ids[i + 1]).map(|r| (r, i)))
            .collect();
        loop {
            let mut chosen = None;
            for &(r, i) in eligible.iter() {
                let u = uniform(stream, *occurrence);
                *occurrence += 1;
                if u >= p {
                    chosen = Some((r, i));
                    break;
                }
            }
            let Some((r, i)) = chosen else {
                break;
            };
            let (j, before) = (next[i], prev[i]);
            let after = if j < n { next[j] } else { n };
            // The pairs this merge destroys, then the ones it creates.
            eligible.remove(&(r, i));
            if before != NONE {
                if let Some(rb) = rank(ids[before], ids[i]) {
                    eligible.remove(&(rb, before));
                }
            }
            if after < n {
                if let Some(ra) = rank(ids[j], ids[after]) {
                    eligible.remove(&(ra, j));
                }
            }
            ids[i] = self.ranks[&(ids[i], ids[j])].1;
            next[i] = after;
            if after < n {
                prev[after] = i;
            }
            if before != NONE {
                if let Some(rb) = rank(ids[before], ids[i]) {
                    eligible.insert((rb, before));
                }
            }
            if after < n {
                if let Some(ra) = rank(ids[i], ids[after]) {
                    eligible.insert((ra, i));
                }
            }
        }
        // Position 0 is never the right half of a merge, so the list starts there.
        let mut out = Vec::with_capacity(n);
        let mut i = 0;
        while i < n {
            out.push(ids[i]);
            i = next[i];
        }
        *ids = out;
    }

    /// BPE-dropout on a whole text: pre-tokens in text order, each starting from its
    /// UTF-8 bytes (token IDs 0..=255), draws numbered across the text.
    pub fn encode(
        &self,
        pretok: &Pretokenizer,
        text: &str,
        p: f64,
        stream: u64,
        scratch: &mut DropoutScratch,
    ) -> CoreResult<Vec<u32>> {
        let mut out = Vec::with_capacity(text.len() / 2 + 1);
        let mut occurrence = 0u64;
        let bytes = text.as_bytes();
        let DropoutScratch { ids, eligible } = scratch;
        pretok.split(text, |s, e| {
            ids.clear();
            ids.extend(bytes[s..e].iter().map(|&b| b as u32));
            self.piece(ids, p, stream, &mut occurrence, eligible);
            out.extend_from_slice(ids);
        })?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merges() -> Vec<(u32, u32)> {
        // "ab" -> 256, "abc" -> 257 (256 + 'c'), "bc" -> 258
        vec![(97, 98), (256, 99), (98, 99)]
    }

    #[test]
    fn extremes_are_bpe_and_bytes() {
        let m = DropoutBpe::new(&merges()).unwrap();
        let (mut occ, mut el) = (0, Vec::new());
        let mut ids = vec![97, 98, 99];
        m.piece(&mut ids, 0.0, 5, &mut occ, &mut el);
        assert_eq!(ids, vec![257]);
        // Two merges, one draw each (the first eligible always survives at p = 0).
        assert_eq!(occ, 2);
        let mut ids = vec![97, 98, 99];
        m.piece(&mut ids, 1.0, 5, &mut occ, &mut el);
        assert_eq!(ids, vec![97, 98, 99]);
        // Both eligible pairs drawn once, then the pre-token is final.
        assert_eq!(occ, 4);
    }
}
