//! Applying merge ranks to one pre-token: repeatedly merge the adjacent pair with the
//! smallest `(rank, left_position)` until no pair has a rank (seed 000, 0x07).
//!
//! Short pieces use a rescan over a small array (fast in practice: pieces are a few
//! bytes). Long pieces use a min-heap over a linked list with stale-entry validation,
//! O((n + m) log n), so hostile inputs like a million repeated letters stay fast and
//! never recurse.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

use super::model::BpeModel;

const SMALL: usize = 64;
const NONE: u32 = u32::MAX;
const CACHE_MAX_PIECE: usize = 48;
const CACHE_MAX_ENTRIES: usize = 1 << 17;

struct PieceCache {
    uid: u64,
    map: FxHashMap<Box<[u8]>, Box<[u32]>>,
}

thread_local! {
    static CACHE: RefCell<PieceCache> = RefCell::new(PieceCache { uid: 0, map: FxHashMap::default() });
}

impl BpeModel {
    /// Appends the IDs of one pre-token's bytes to `out`.
    pub fn encode_piece(&self, piece: &[u8], out: &mut Vec<u32>) {
        match piece.len() {
            0 => return,
            1 => {
                out.push(self.byte_ids[piece[0] as usize]);
                return;
            }
            _ => {}
        }
        if let Some(whole) = &self.whole_piece {
            if let Some(&id) = whole.get(piece) {
                out.push(id);
                return;
            }
        }
        if piece.len() > CACHE_MAX_PIECE {
            self.merge_large(piece, out);
            return;
        }
        CACHE.with(|cell| {
            let mut cache = cell.borrow_mut();
            if cache.uid != self.uid {
                cache.uid = self.uid;
                cache.map.clear();
            }
            if let Some(ids) = cache.map.get(piece) {
                out.extend_from_slice(ids);
                return;
            }
            let start = out.len();
            self.merge_small(piece, out);
            if cache.map.len() >= CACHE_MAX_ENTRIES {
                cache.map.clear();
            }
            cache.map.insert(piece.into(), out[start..].into());
        });
    }

    /// The rescan algorithm for pieces of at most `SMALL` bytes.
    fn merge_small(&self, piece: &[u8], out: &mut Vec<u32>) {
        if piece.len() > SMALL {
            self.merge_large(piece, out);
            return;
        }
        let mut syms = [0u32; SMALL];
        // (rank << 32 | new_id) of the pair starting at each position, u64::MAX if none.
        let mut ranks = [u64::MAX; SMALL];
        let mut n = piece.len();
        for (i, &b) in piece.iter().enumerate() {
            syms[i] = self.byte_ids[b as usize];
        }
        let rank_at = |syms: &[u32; SMALL], i: usize| -> u64 {
            self.merges
                .get(&super::pair_key(syms[i], syms[i + 1]))
                .copied()
                .unwrap_or(u64::MAX)
        };
        for (i, slot) in ranks.iter_mut().enumerate().take(n - 1) {
            *slot = rank_at(&syms, i);
        }
        loop {
            let mut best = u64::MAX;
            let mut at = 0;
            for (i, &r) in ranks[..n - 1].iter().enumerate() {
                // Compare ranks only (high 32 bits); strict < keeps the leftmost minimum.
                if (r >> 32) < (best >> 32) {
                    best = r;
                    at = i;
                }
            }
            if best == u64::MAX {
                break;
            }
            syms[at] = best as u32;
            syms.copy_within(at + 2..n, at + 1);
            ranks.copy_within(at + 2..n, at + 1);
            n -= 1;
            if at + 1 < n {
                ranks[at] = rank_at(&syms, at);
            } else {
                ranks[at] = u64::MAX;
            }
            if at > 0 {
                ranks[at - 1] = rank_at(&syms, at - 1);
            }
            if n == 1 {
                break;
            }
        }
        out.extend_from_slice(&syms[..n]);
    }

    /// Heap + linked list for long pieces.
    ///
    /// Heap entries are packed `(rank << 32) | left_position` (8 bytes, one compare), so
    /// large inputs stay cache-friendly. A popped entry is valid when its left node is
    /// alive, has a right neighbour, and that pair's rank is still the popped rank; if
    /// so, merging it is exactly what the current state requires, whichever push made it.
    fn merge_large(&self, piece: &[u8], out: &mut Vec<u32>) {
        let n = piece.len();
        let mut vals: Vec<u32> = piece.iter().map(|&b| self.byte_ids[b as usize]).collect();
        let mut next: Vec<u32> = (1..=n as u32).collect();
        next[n - 1] = NONE;
        let mut prev: Vec<u32> = (0..n as u32).map(|i| i.wrapping_sub(1)).collect();
        prev[0] = NONE;
        let key = |rank: u32, pos: u32| Reverse(((rank as u64) << 32) | pos as u64);
        let initial: Vec<Reverse<u64>> = (0..n - 1)
            .filter_map(|i| {
                self.merge_of(vals[i], vals[i + 1])
                    .map(|(r, _)| key(r, i as u32))
            })
            .collect();
        let mut heap = BinaryHeap::from(initial);
        while let Some(Reverse(entry)) = heap.pop() {
            let (rank, l) = ((entry >> 32) as u32, entry as u32);
            let lu = l as usize;
            let r = next[lu];
            if vals[lu] == NONE || r == NONE {
                continue;
            }
            let ru = r as usize;
            let new_id = match self.merge_of(vals[lu], vals[ru]) {
                Some((cur, new_id)) if cur == rank => new_id,
                _ => continue, // stale
            };
            vals[lu] = new_id;
            vals[ru] = NONE;
            let after = next[ru];
            next[lu] = after;
            if after != NONE {
                prev[after as usize] = l;
                if let Some((rk, _)) = self.merge_of(new_id, vals[after as usize]) {
                    heap.push(key(rk, l));
                }
            }
            let before = prev[lu];
            if before != NONE {
                if let Some((rk, _)) = self.merge_of(vals[before as usize], new_id) {
                    heap.push(key(rk, before));
                }
            }
        }
        let mut i = 0u32;
        while i != NONE {
            out.push(vals[i as usize]);
            i = next[i as usize];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> BpeModel {
        BpeModel::from_merges(&[(97, 98), (98, 99), (256, 99), (256, 256)]).unwrap()
    }

    #[test]
    fn seed_abc_abab() {
        let m = model();
        let mut out = vec![];
        m.encode_piece(b"abc", &mut out);
        assert_eq!(out, vec![258]);
        out.clear();
        m.encode_piece(b"abab", &mut out);
        assert_eq!(out, vec![259]);
    }

    #[test]
    fn large_equals_small() {
        let m = model();
        let text: Vec<u8> = b"abcabababcbcbcaabbcc"
            .iter()
            .cycle()
            .take(60)
            .copied()
            .collect();
        let (mut a, mut b) = (vec![], vec![]);
        m.merge_small(&text, &mut a);
        m.merge_large(&text, &mut b);
        assert_eq!(a, b);
    }
}
