//! Per-thread memo of Unigram segmentations of whitespace-delimited segments.
//!
//! When no vocabulary piece holds `▁` past its first character, every `▁` of the
//! normalized text cuts the Viterbi lattice: the best path is the concatenation of the
//! best paths of the segments between cuts (see `Unigram::segment_cut_proof`). The same
//! few thousand words make up most text, so their segmentations are memoized here.
//!
//! A segmentation is only reused where it provably equals what float Viterbi computes at
//! this point of the text. SentencePiece scores paths in f32 and carries the running
//! score across segments, so the rounding (and thus the winner of a near tie) depends on
//! the score the segment starts from. Each entry therefore holds `max_base`: the largest
//! |starting score| at which its decisions cannot change (derived from the gaps between
//! winners and runners-up computed exactly, see `Unigram::certify`), and the piece scores
//! so the running score is carried on with the same f32 additions Viterbi does.
//!
//! Layout, as the BPE piece cache: 2-way sets, each way one 64-byte line holding the
//! packed segment (at most 15 bytes) and its result inline. Fixed size, no growth: a
//! miss replaces the older way of its set, so no input can make the cache grow.

use std::cell::RefCell;

use crate::thread_cache::{with_model_cache, ModelCache};

/// `log2` of the number of sets (2 ways of 64 bytes each: 4 MiB per model and thread).
const SET_BITS: u32 = 15;
/// Pieces an entry holds inline; segments that need more are not cached.
pub const MAX_PIECES: usize = 4;

/// The certified segmentation of one segment.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub struct Entry {
    /// `pack_short` of the segment; 0 marks an empty way.
    key: u128,
    /// Piece IDs in text order.
    pub ids: [u32; MAX_PIECES],
    /// Each piece's f32 score (the edge score Viterbi adds).
    pub scores: [f32; MAX_PIECES],
    /// The segmentation holds while |starting score| < `max_base`; -1 marks a segment
    /// whose segmentation must always be computed (a tie, or too many pieces).
    pub max_base: f32,
    /// End of each piece, in bytes from the segment's start.
    pub ends: [u8; MAX_PIECES],
    /// Number of pieces.
    pub len: u8,
}

impl Entry {
    /// An entry that sends every occurrence of its segment to Viterbi.
    pub const UNCACHEABLE: Entry = Entry {
        key: 0,
        ids: [0; MAX_PIECES],
        scores: [0.0; MAX_PIECES],
        max_base: -1.0,
        ends: [0; MAX_PIECES],
        len: 0,
    };
}

/// Two ways, a segmented LRU in miniature: a new entry goes to the probation way
/// (`ways[1]`), replacing the one there, and moves to the protected way (`ways[0]`) on
/// its first hit. Segments seen once (most distinct segments) thus never evict one that
/// recurs.
#[derive(Clone, Copy)]
#[repr(C, align(128))]
struct Set {
    ways: [Entry; 2],
}

pub struct SegmentCache {
    uid: u64,
    sets: Box<[Set]>,
}

#[inline]
fn set_index(key: u128) -> usize {
    let lo = key as u64;
    let hi = (key >> 64) as u64;
    let h = (lo ^ hi.rotate_left(29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> (64 - SET_BITS)) as usize
}

impl SegmentCache {
    fn new(uid: u64) -> SegmentCache {
        SegmentCache {
            uid,
            sets: vec![
                Set {
                    ways: [Entry::UNCACHEABLE; 2]
                };
                1 << SET_BITS
            ]
            .into_boxed_slice(),
        }
    }

    fn reset(&mut self, uid: u64) {
        self.uid = uid;
        self.sets.fill(Set {
            ways: [Entry::UNCACHEABLE; 2],
        });
    }

    /// Starts loading `key`'s set into the CPU cache (a hint; no effect on results).
    #[inline]
    pub fn prefetch(&self, key: u128) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let set = &self.sets[set_index(key)];
            // Both ways: a set spans two cache lines.
            for way in &set.ways {
                let line = way as *const Entry as *const i8;
                // SAFETY: a prefetch never faults and reads nothing the program observes.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(line) };
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = key;
    }

    /// The entry of the segment packed as `key` (never 0), if cached. A hit in the
    /// probation way promotes the entry to the protected way.
    #[inline]
    pub fn get(&mut self, key: u128) -> Option<&Entry> {
        let set = &mut self.sets[set_index(key)];
        if set.ways[0].key == key {
            return Some(&set.ways[0]);
        }
        if set.ways[1].key == key {
            set.ways.swap(0, 1);
            return Some(&set.ways[0]);
        }
        None
    }

    /// Stores `entry` for `key` in its set's probation way and returns it.
    #[inline]
    pub fn put(&mut self, key: u128, mut entry: Entry) -> &Entry {
        entry.key = key;
        let set = &mut self.sets[set_index(key)];
        set.ways[1] = entry;
        &set.ways[1]
    }
}

thread_local! {
    static CACHES: RefCell<Vec<SegmentCache>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` with this thread's cache for the model `uid` (most recently used first).
#[inline]
pub fn with_cache<R>(uid: u64, f: impl FnOnce(&mut SegmentCache) -> R) -> R {
    with_model_cache(&CACHES, uid, f)
}

impl ModelCache for SegmentCache {
    fn new_for(uid: u64) -> SegmentCache {
        SegmentCache::new(uid)
    }

    fn reset_for(&mut self, uid: u64) {
        self.reset(uid)
    }

    fn model_uid(&self) -> u64 {
        self.uid
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_fill_one_line_and_sets_keep_two() {
        assert_eq!(std::mem::size_of::<Entry>(), 64);
        let mut c = SegmentCache::new(1);
        let mut e = Entry::UNCACHEABLE;
        e.len = 1;
        e.ids[0] = 7;
        c.put(5, e);
        c.put(9, Entry::UNCACHEABLE);
        assert_eq!(c.get(5).map(|e| e.ids[0]), Some(7));
        assert_eq!(c.get(9).map(|e| e.max_base), Some(-1.0));
        assert!(c.get(11).is_none());
    }
}
