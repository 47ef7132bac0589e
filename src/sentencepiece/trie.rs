//! Byte tries for SentencePiece: a reader of the Darts-clone double arrays stored in
//! precompiled charsmaps, and a double-array trie over vocabulary pieces built here.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::error::{CoreError, CoreResult};

/// A Darts-clone double array as SentencePiece serializes it (little-endian u32 units).
pub struct DartsArray {
    units: Vec<u32>,
}

impl DartsArray {
    pub fn from_bytes(blob: &[u8]) -> CoreResult<DartsArray> {
        if !blob.len().is_multiple_of(4) || blob.is_empty() {
            return Err(CoreError::Artifact(format!(
                "precompiled_charsmap: the double-array trie has {} bytes, not a positive \
                 multiple of 4; the charsmap is damaged, re-export the model",
                blob.len()
            )));
        }
        let units = blob
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Ok(DartsArray { units })
    }

    #[inline]
    fn offset(unit: u32) -> usize {
        ((unit >> 10) << ((unit & (1 << 9)) >> 6)) as usize
    }

    /// Whether some key starts with `prefix`.
    pub fn has_prefix(&self, prefix: &[u8]) -> bool {
        let mut pos = Self::offset(self.units[0]);
        for &b in prefix {
            pos ^= b as usize;
            match self.units.get(pos) {
                Some(&u) if u & ((1 << 31) | 0xFF) == b as u32 => pos ^= Self::offset(u),
                _ => return false,
            }
        }
        true
    }

    /// Value of the shortest key that is a prefix of `key` (the first result of
    /// Darts-clone's commonPrefixSearch, which stops at a NUL byte): what Hugging Face's
    /// `Precompiled` normalizer uses.
    pub fn first_prefix(&self, key: &[u8]) -> Option<u32> {
        let units = &self.units;
        let mut pos = Self::offset(*units.first()?);
        for &b in key {
            if b == 0 {
                return None;
            }
            pos ^= b as usize;
            let unit = *units.get(pos)?;
            if unit & ((1 << 31) | 0xFF) != b as u32 {
                return None;
            }
            pos ^= Self::offset(unit);
            if (unit >> 8) & 1 == 1 {
                return Some(*units.get(pos)? & ((1 << 31) - 1));
            }
        }
        None
    }

    /// Length of the longest key, or None when the array is deeper than `cap` bytes or
    /// has more than `max_nodes` nodes (a damaged blob could loop). Streaming encoders use
    /// it to bound how far one normalizer step reads ahead.
    pub fn max_key_len(&self, cap: usize, max_nodes: usize) -> Option<usize> {
        let units = &self.units;
        let mut stack = vec![(Self::offset(*units.first()?), 0usize)];
        let (mut longest, mut visited) = (0usize, 0usize);
        while let Some((pos, depth)) = stack.pop() {
            visited += 1;
            if depth > cap || visited > max_nodes {
                return None;
            }
            longest = longest.max(depth);
            // Keys are C strings: no child is labelled NUL (that slot holds the value).
            for b in 1..=255u8 {
                let child = pos ^ b as usize;
                if let Some(&u) = units.get(child) {
                    if u & ((1 << 31) | 0xFF) == b as u32 {
                        stack.push((child ^ Self::offset(u), depth + 1));
                    }
                }
            }
        }
        Some(longest)
    }

    /// The value of every key, or None when the array has more than `max_nodes` nodes
    /// (a damaged blob could loop). Streaming encoders check the outputs they point to.
    pub fn values(&self, max_nodes: usize) -> Option<Vec<u32>> {
        let units = &self.units;
        let mut stack = vec![Self::offset(*units.first()?)];
        let (mut values, mut visited) = (Vec::new(), 0usize);
        while let Some(pos) = stack.pop() {
            visited += 1;
            if visited > max_nodes {
                return None;
            }
            for b in 1..=255u8 {
                let child = pos ^ b as usize;
                if let Some(&u) = units.get(child) {
                    if u & ((1 << 31) | 0xFF) == b as u32 {
                        let next = child ^ Self::offset(u);
                        if (u >> 8) & 1 == 1 {
                            values.push(*units.get(next)? & ((1 << 31) - 1));
                        }
                        stack.push(next);
                    }
                }
            }
        }
        Some(values)
    }

    /// Longest key that is a prefix of `key`: (length, value). Darts-clone's
    /// commonPrefixSearch keeping the longest result, which is all SentencePiece uses.
    pub fn longest_prefix(&self, key: &[u8]) -> Option<(usize, u32)> {
        let units = &self.units;
        let mut pos = Self::offset(units[0]);
        let mut found = None;
        for (i, &b) in key.iter().enumerate() {
            pos ^= b as usize;
            let unit = *units.get(pos)?;
            // label(): the byte stored in the unit plus the leaf flag bit 31.
            if unit & ((1 << 31) | 0xFF) != b as u32 {
                return found;
            }
            pos ^= Self::offset(unit);
            if (unit >> 8) & 1 == 1 {
                let leaf = *units.get(pos)?;
                found = Some((i + 1, leaf & ((1 << 31) - 1)));
            }
        }
        found
    }
}

// Unit layout: bits 0-7 the label (the byte that leads here), bit 8 "in use", bit 9 "a
// key ends here", bits 10-31 the base of the node's children. Bases are unique, so a
// matching label proves the parent (as in Darts-clone): 4 bytes per node keep the hot
// part of a 32k vocabulary in cache.
const USED: u32 = 1 << 8;
const TERMINAL: u32 = 1 << 9;
const BASE_SHIFT: u32 = 10;
const WINDOW: usize = 16 * 256;

/// A double-array trie over byte strings with an (i32 value, f32 score) per key: one
/// array read and one compare per input byte, the shape SentencePiece's Darts trie has.
pub struct PieceTrie {
    /// Layout bits: 4 bytes per node keep a 32k vocabulary's trie (about 100k nodes)
    /// inside a core's L2 cache; the walk is a chain of dependent loads, so its size
    /// decides Viterbi's speed.
    units: Vec<u32>,
    /// Score per unit, read only where a key ends.
    scores: Vec<f32>,
    /// Value per unit, read only where a key ends.
    values: Vec<i32>,
}

/// Slots in use as a bitset: the next free slot is found 64 slots per step, so bases are
/// placed quickly even where the array is dense.
struct Slots {
    bits: Vec<u64>,
}

impl Slots {
    fn is_used(&self, i: usize) -> bool {
        self.bits
            .get(i / 64)
            .is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    fn set(&mut self, i: usize) {
        if self.bits.len() <= i / 64 {
            self.bits.resize(i / 64 + 1, 0);
        }
        self.bits[i / 64] |= 1 << (i % 64);
    }

    /// Smallest free slot at or after `i`.
    fn next_free(&self, i: usize) -> usize {
        let mut w = i / 64;
        let mut word = match self.bits.get(w) {
            Some(&x) => x | ((1u64 << (i % 64)) - 1),
            None => return i,
        };
        loop {
            if word != u64::MAX {
                return w * 64 + (!word).trailing_zeros() as usize;
            }
            w += 1;
            match self.bits.get(w) {
                Some(&x) => word = x,
                None => return w * 64,
            }
        }
    }
}

/// A trie node waiting to have its children placed (see `PieceTrie::with_scores`).
struct Pending {
    score: f32,
    seq: usize,
    slot: usize,
    lo: usize,
    hi: usize,
    depth: usize,
}

impl Pending {
    fn key(&self) -> (f32, usize) {
        (self.score, self.seq)
    }
}

impl Ord for Pending {
    fn cmp(&self, other: &Self) -> Ordering {
        let ((a, i), (b, j)) = (self.key(), other.key());
        a.total_cmp(&b).then(i.cmp(&j))
    }
}

impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Pending {}

impl PieceTrie {
    pub fn new(keys: &[(&[u8], i32)]) -> PieceTrie {
        let scored: Vec<(&[u8], i32, f32)> = keys.iter().map(|&(k, v)| (k, v, 0.0)).collect();
        PieceTrie::build(&scored, false)
    }

    /// A trie over keys whose scores are ignored (placed depth first, as `new`).
    pub fn unscored(keys: &[(&[u8], i32, f32)]) -> PieceTrie {
        PieceTrie::build(keys, false)
    }

    pub fn with_scores(keys: &[(&[u8], i32, f32)]) -> PieceTrie {
        PieceTrie::build(keys, true)
    }

    /// `hot_first`: place high-scoring subtrees first (see below); otherwise depth first.
    fn build(keys: &[(&[u8], i32, f32)], hot_first: bool) -> PieceTrie {
        // Nodes are ranges of the sorted keys sharing a prefix: no pointer trie needed.
        let mut sorted: Vec<&(&[u8], i32, f32)> = keys.iter().collect();
        // Callers with a million keys (Unigram training) pass them sorted already.
        if !sorted.is_sorted_by(|a, b| a.0 <= b.0) {
            sorted.sort_by(|a, b| a.0.cmp(b.0));
        }
        sorted.dedup_by(|a, b| a.0 == b.0); // keep the first of equal keys
        let mut units: Vec<u32> = vec![USED];
        let mut scores = vec![0.0f32];
        let mut vals = vec![-1];
        let mut slots = Slots { bits: vec![1] };
        let mut base_used = Slots { bits: vec![1] };
        // Nodes are placed in the order they are popped, and the array fills roughly in
        // that order. Popping the node whose subtree holds the best-scoring key first
        // packs the pieces Viterbi meets most (high scores are frequent pieces) into a
        // small, cache-resident prefix of the array; among equal scores (plain tries,
        // all 0) the last pushed wins, which is depth first: a node's subtree follows it.
        // Heap entries: (best score in subtree, push sequence, slot, lo, hi, depth), the
        // node at `slot` owning sorted[lo..hi], whose keys share their first `depth` bytes.
        let best_in = |lo: usize, hi: usize| {
            if !hot_first {
                return 0.0;
            }
            sorted[lo..hi]
                .iter()
                .map(|k| k.2)
                .max_by(f32::total_cmp)
                .unwrap_or(f32::MIN)
        };
        let mut seq = 0usize;
        let mut heap = BinaryHeap::new();
        heap.push(Pending {
            score: best_in(0, sorted.len()),
            seq,
            slot: 0,
            lo: 0,
            hi: sorted.len(),
            depth: 0,
        });
        let mut kids: Vec<(u8, usize, usize)> = Vec::new();
        while let Some(Pending {
            slot,
            mut lo,
            hi,
            depth,
            ..
        }) = heap.pop()
        {
            if lo < hi && sorted[lo].0.len() == depth {
                units[slot] |= TERMINAL;
                scores[slot] = sorted[lo].2;
                vals[slot] = sorted[lo].1;
                lo += 1;
            }
            kids.clear();
            while lo < hi {
                let b = sorted[lo].0[depth];
                let mut end = lo + 1;
                while end < hi && sorted[end].0[depth] == b {
                    end += 1;
                }
                kids.push((b, lo, end));
                lo = end;
            }
            if kids.is_empty() {
                continue;
            }
            let low = kids[0].0 as usize;
            // As in Darts-clone, only the last blocks are searched: holes further left
            // that never fit would otherwise be rescanned for every node.
            let mut p = slots.next_free((low + 1).max(units.len().saturating_sub(WINDOW)));
            let base = loop {
                let base = p - low;
                if !base_used.is_used(base)
                    && kids
                        .iter()
                        .all(|&(b, _, _)| !slots.is_used(base + b as usize))
                {
                    break base;
                }
                p = slots.next_free(p + 1);
            };
            base_used.set(base);
            if units.len() < base + 256 {
                units.resize(base + 256, 0);
                scores.resize(base + 256, 0.0);
                vals.resize(base + 256, -1);
            }
            units[slot] |= (base as u32) << BASE_SHIFT;
            for &(b, klo, khi) in kids.iter().rev() {
                let s = base + b as usize;
                units[s] = USED | b as u32;
                slots.set(s);
                seq += 1;
                heap.push(Pending {
                    score: best_in(klo, khi),
                    seq,
                    slot: s,
                    lo: klo,
                    hi: khi,
                    depth: depth + 1,
                });
            }
        }
        // Every base + byte stays in bounds (leaves have base 0), which `step` relies on.
        if units.len() < 256 {
            units.resize(256, 0);
            scores.resize(256, 0.0);
            vals.resize(256, -1);
        }
        PieceTrie {
            units,
            scores,
            values: vals,
        }
    }

    /// The node reached from `node` by byte `b`, if any.
    #[inline(always)]
    pub fn step(&self, node: usize, b: u8) -> Option<usize> {
        let next = (self.units[node] >> BASE_SHIFT) as usize + b as usize;
        debug_assert!(next < self.units.len());
        // SAFETY: the builder sizes `units` to at least base + 256 for every base it
        // assigns, and to 256 for leaves (base 0), so base + byte is always in bounds.
        // This read is the hot loop of Viterbi.
        let u = unsafe { *self.units.get_unchecked(next) };
        (u & (USED | 0xFF) == USED | b as u32 && next != 0).then_some(next)
    }

    /// The root's unit, where a walk with `child` starts.
    #[inline(always)]
    pub fn root(&self) -> u32 {
        self.units[0]
    }

    /// The child of the node whose unit is `unit` by byte `b`: (node, its unit). Viterbi
    /// walks with units kept in registers instead of reloading them per byte.
    #[inline(always)]
    pub fn child(&self, unit: u32, b: u8) -> Option<(usize, u32)> {
        let next = (unit >> BASE_SHIFT) as usize + b as usize;
        // SAFETY: as in `step`, base + byte is always within `units`.
        let u = unsafe { *self.units.get_unchecked(next) };
        (u & (USED | 0xFF) == USED | b as u32 && next != 0).then_some((next, u))
    }

    /// The score of the key ending at the node `(node, unit)`, if one does.
    #[inline(always)]
    pub fn unit_score(&self, node: usize, unit: u32) -> Option<f32> {
        debug_assert!(node < self.scores.len());
        // SAFETY: `scores` has one entry per unit and `node` came from `child`.
        (unit & TERMINAL != 0).then(|| unsafe { *self.scores.get_unchecked(node) })
    }

    /// The value stored at `node` (-1 when no key ends there).
    #[inline(always)]
    pub fn value(&self, node: usize) -> i32 {
        if self.units[node] & TERMINAL == 0 {
            return -1;
        }
        self.values[node]
    }

    /// Length of the longest key that is a prefix of `text` (0 when none).
    pub fn longest_prefix(&self, text: &[u8]) -> usize {
        let (mut node, mut best) = (0, 0);
        for (i, &b) in text.iter().enumerate() {
            match self.step(node, b) {
                Some(n) => node = n,
                None => break,
            }
            if self.value(node) >= 0 {
                best = i + 1;
            }
        }
        best
    }

    /// Value of exactly `key`, if it is a key.
    pub fn get(&self, key: &[u8]) -> Option<i32> {
        let mut node = 0;
        for &b in key {
            node = self.step(node, b)?;
        }
        let v = self.value(node);
        (v >= 0).then_some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trie_finds_keys_and_prefixes() {
        let keys: Vec<(&[u8], i32)> =
            vec![(b"a", 0), (b"ab", 1), (b"abc", 2), (b"b", 3), (b"\xff", 4)];
        let t = PieceTrie::new(&keys);
        for (k, v) in &keys {
            assert_eq!(t.get(k), Some(*v));
        }
        assert_eq!(t.get(b"abd"), None);
        assert_eq!(t.get(b""), None);
        assert_eq!(t.longest_prefix(b"abcd"), 3);
        assert_eq!(t.longest_prefix(b"abx"), 2);
        assert_eq!(t.longest_prefix(b"x"), 0);
    }
}
