//! Applying merge ranks to one pre-token: repeatedly merge the adjacent pair with the
//! smallest `(rank, left_position)` until no pair has a rank (seed 000, 0x07).
//!
//! Short pieces use a rescan over a small array (fast in practice: pieces are a few
//! bytes). Long pieces use a min-heap over a linked list with stale-entry validation,
//! O((n + m) log n), so hostile inputs like a million repeated letters stay fast and
//! never recurse.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

use super::model::BpeModel;
use super::piece_cache::{pack_short, with_cache, PieceCache};

const SMALL: usize = 64;
const NONE: u32 = u32::MAX;
const CACHE_MAX_PIECE: usize = 48;

impl BpeModel {
    /// Appends the IDs of one pre-token's bytes to `out`.
    #[inline]
    pub fn encode_piece(&self, piece: &[u8], out: &mut Vec<u32>) {
        if piece.len() < 2 || piece.len() > CACHE_MAX_PIECE {
            self.encode_with(None, piece, None, out);
            return;
        }
        with_cache(self.uid, |cache| {
            self.encode_with(Some(cache), piece, pack_short(piece), out)
        });
    }

    /// Runs `f` with a [`PieceStream`] over this thread's piece cache: encoding all the
    /// pieces of a text through one stream takes the cache once and overlaps the memory
    /// latency of each piece's cache line with the work on the piece before it.
    pub fn encode_stream<'t, R>(&self, f: impl FnOnce(&mut PieceStream<'_, 't>) -> R) -> R {
        with_cache(self.uid, |cache| {
            f(&mut PieceStream {
                model: self,
                cache,
                queue: [(&[], None, 0); LOOKAHEAD],
                head: 0,
                len: 0,
            })
        })
    }

    /// One piece; `key` is `pack_short(piece)`, `cache` is this thread's cache for this
    /// model (None only for pieces the cache does not hold).
    #[inline]
    fn encode_with(
        &self,
        cache: Option<&mut PieceCache>,
        piece: &[u8],
        key: Option<u128>,
        out: &mut Vec<u32>,
    ) {
        match (piece.len(), cache) {
            (0, _) => {}
            (1, _) => out.push(self.byte_ids[piece[0] as usize]),
            (2..=CACHE_MAX_PIECE, Some(cache)) => {
                let hit = match key {
                    Some(k) => cache.get_short(k, out),
                    None => cache.get_long(piece, out),
                };
                if hit {
                    return;
                }
                // The cache also holds whole-piece results: a hot piece costs one line.
                let start = out.len();
                match self.whole_piece.as_ref().and_then(|w| w.get(piece)) {
                    Some(id) => out.push(id),
                    None => self.merge_small(piece, out),
                }
                match key {
                    Some(k) => cache.put_short(k, &out[start..]),
                    None => cache.put_long(piece, &out[start..]),
                }
            }
            _ => match self.whole_piece.as_ref().and_then(|w| w.get(piece)) {
                Some(id) => out.push(id),
                None => self.merge_large(piece, out),
            },
        }
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

    /// Long pieces: a linked list of nodes and a queue of candidate merges.
    ///
    /// For a proper merge table (a merge's rank is above the ranks of the merges that made
    /// its parts) ranks leave the queue in non-decreasing order, so candidates are kept in
    /// one position list per rank and each list is processed in position order: the same
    /// `min (rank, position)` order as a heap, with sequential memory access. If a merge
    /// ever exposes a lower rank (an improper table, seed 0x07), the remaining candidates
    /// move to a binary heap and the exact dynamic order continues there.
    fn merge_large(&self, piece: &[u8], out: &mut Vec<u32>) {
        let mut st = LinkedPiece::new(self, piece);
        let mut buckets: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
        let mut ranks: BinaryHeap<Reverse<u32>> = BinaryHeap::new();
        for i in 0..st.vals.len() - 1 {
            if let Some((r, _)) = self.merge_of(st.vals[i], st.vals[i + 1]) {
                let list = buckets.entry(r).or_insert_with(|| {
                    ranks.push(Reverse(r));
                    Vec::new()
                });
                list.push(i as u32);
            }
        }
        let mut fresh: Vec<(u32, u32)> = Vec::with_capacity(2);
        while let Some(Reverse(rank)) = ranks.pop() {
            let mut positions = buckets.remove(&rank).unwrap_or_default();
            if !positions.is_sorted() {
                positions.sort_unstable();
            }
            for (k, &p) in positions.iter().enumerate() {
                fresh.clear();
                if !st.try_merge(self, rank, p, &mut fresh) {
                    continue;
                }
                if fresh.iter().any(|&(r, _)| r <= rank) {
                    // Improper table: continue with a heap holding every pending candidate.
                    let mut heap: BinaryHeap<Reverse<u64>> = positions[k + 1..]
                        .iter()
                        .map(|&q| Reverse(pack(rank, q)))
                        .chain(fresh.iter().map(|&(r, q)| Reverse(pack(r, q))))
                        .chain(
                            buckets
                                .iter()
                                .flat_map(|(&r, qs)| qs.iter().map(move |&q| Reverse(pack(r, q)))),
                        )
                        .collect();
                    st.run_heap(self, &mut heap);
                    st.emit(out);
                    return;
                }
                for &(r, q) in &fresh {
                    buckets
                        .entry(r)
                        .or_insert_with(|| {
                            ranks.push(Reverse(r));
                            Vec::new()
                        })
                        .push(q);
                }
            }
        }
        st.emit(out);
    }
}

/// Pieces a [`PieceStream`] holds back: enough to cover a memory access with the work on
/// the pieces queued before it (a power of two).
const LOOKAHEAD: usize = 4;

/// Encodes the pieces of one text in order, `LOOKAHEAD` pieces behind: when a piece is
/// pushed its cache line is prefetched, and the oldest queued piece is encoded (the IDs
/// of a stream are exactly those of `encode_piece` on each piece, in order). Call
/// `finish` until it returns None at the end.
pub struct PieceStream<'a, 't> {
    model: &'a BpeModel,
    cache: &'a mut PieceCache,
    /// Ring of queued `(piece, pack_short key, tag)`.
    queue: [(&'t [u8], Option<u128>, usize); LOOKAHEAD],
    head: usize,
    len: usize,
}

impl<'t> PieceStream<'_, 't> {
    /// Queues `piece` (with a caller's `tag`, e.g. its offset); when the queue is full,
    /// encodes the oldest queued piece and returns it, its tag and where its IDs start
    /// in `out`.
    #[inline]
    pub fn push(
        &mut self,
        piece: &'t [u8],
        tag: usize,
        out: &mut Vec<u32>,
    ) -> Option<(&'t [u8], usize, usize)> {
        let key = if piece.len() >= 2 {
            pack_short(piece)
        } else {
            None
        };
        if let Some(k) = key {
            self.cache.prefetch(k);
        }
        let done = if self.len == LOOKAHEAD {
            self.pop(out)
        } else {
            None
        };
        self.queue[(self.head + self.len) % LOOKAHEAD] = (piece, key, tag);
        self.len += 1;
        done
    }

    /// Encodes the oldest queued piece, if any (same result as `push`).
    #[inline]
    pub fn finish(&mut self, out: &mut Vec<u32>) -> Option<(&'t [u8], usize, usize)> {
        self.pop(out)
    }

    #[inline]
    fn pop(&mut self, out: &mut Vec<u32>) -> Option<(&'t [u8], usize, usize)> {
        if self.len == 0 {
            return None;
        }
        let (piece, key, tag) = self.queue[self.head];
        self.head = (self.head + 1) % LOOKAHEAD;
        self.len -= 1;
        let first = out.len();
        self.model
            .encode_with(Some(&mut *self.cache), piece, key, out);
        Some((piece, tag, first))
    }
}

#[inline]
fn pack(rank: u32, pos: u32) -> u64 {
    ((rank as u64) << 32) | pos as u64
}

/// Nodes of a piece being merged: current ID per node and neighbour links.
struct LinkedPiece {
    vals: Vec<u32>,
    next: Vec<u32>,
    prev: Vec<u32>,
}

impl LinkedPiece {
    fn new(model: &BpeModel, piece: &[u8]) -> LinkedPiece {
        let n = piece.len();
        let vals: Vec<u32> = piece.iter().map(|&b| model.byte_ids[b as usize]).collect();
        let mut next: Vec<u32> = (1..=n as u32).collect();
        next[n - 1] = NONE;
        let mut prev: Vec<u32> = (0..n as u32).map(|i| i.wrapping_sub(1)).collect();
        prev[0] = NONE;
        LinkedPiece { vals, next, prev }
    }

    /// Merges the pair starting at node `l` if it still has rank `rank`; records the
    /// new candidate pairs `(rank, left node)` around the merged node in `fresh`.
    #[inline]
    fn try_merge(
        &mut self,
        model: &BpeModel,
        rank: u32,
        l: u32,
        fresh: &mut Vec<(u32, u32)>,
    ) -> bool {
        let lu = l as usize;
        let r = self.next[lu];
        if self.vals[lu] == NONE || r == NONE {
            return false;
        }
        let ru = r as usize;
        let new_id = match model.merge_of(self.vals[lu], self.vals[ru]) {
            Some((cur, new_id)) if cur == rank => new_id,
            _ => return false, // stale: this pair changed since it was queued
        };
        self.vals[lu] = new_id;
        self.vals[ru] = NONE;
        let after = self.next[ru];
        self.next[lu] = after;
        if after != NONE {
            self.prev[after as usize] = l;
            if let Some((rk, _)) = model.merge_of(new_id, self.vals[after as usize]) {
                fresh.push((rk, l));
            }
        }
        let before = self.prev[lu];
        if before != NONE {
            if let Some((rk, _)) = model.merge_of(self.vals[before as usize], new_id) {
                fresh.push((rk, before));
            }
        }
        true
    }

    /// The exact dynamic order for any table: pop the minimum `(rank, position)`.
    fn run_heap(&mut self, model: &BpeModel, heap: &mut BinaryHeap<Reverse<u64>>) {
        let mut fresh = Vec::with_capacity(2);
        while let Some(Reverse(entry)) = heap.pop() {
            fresh.clear();
            if self.try_merge(model, (entry >> 32) as u32, entry as u32, &mut fresh) {
                heap.extend(fresh.iter().map(|&(r, q)| Reverse(pack(r, q))));
            }
        }
    }

    fn emit(&self, out: &mut Vec<u32>) {
        let mut i = 0u32;
        while i != NONE {
            out.push(self.vals[i as usize]);
            i = self.next[i as usize];
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
    fn improper_table_falls_back_to_exact_order() {
        // Seed 0x07: rank 0 (256, a) -> 257 needs rank 1 (a, a) -> 256.
        let mut vocab: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        vocab.push(b"aa".to_vec());
        vocab.push(b"aaa".to_vec());
        let m = BpeModel::from_records(vocab, &[(256, 97, 257), (97, 97, 256)], false).unwrap();
        let (mut small, mut large) = (vec![], vec![]);
        let text = [b'a'; 100];
        m.merge_small(&text[..4], &mut small);
        assert_eq!(small, vec![257, 97]);
        small.clear();
        m.merge_small(&text[..64], &mut small);
        m.merge_large(&text[..64], &mut large);
        assert_eq!(small, large);
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
