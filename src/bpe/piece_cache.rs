//! Per-thread memo of encoded pieces.
//!
//! Nearly every pre-token is at most 15 bytes and encodes to at most 4 IDs, and their
//! frequencies are Zipfian: a few thousand pieces make up most of the text. Those live in
//! a 2-way set-associative table whose sets are one 64-byte cache line each, holding the
//! packed piece and its IDs inline, so a hit reads one line (no control bytes, no pointer
//! to the IDs, no probing) and a miss replaces the older entry of its set: no clearing,
//! no allocation once the table exists. Rarer pieces (longer, or more IDs) use hash maps.
//! The cache is exact: an entry holds the result the model computes for its piece.

use std::cell::RefCell;

use rustc_hash::FxHashMap;

use crate::thread_cache::{with_model_cache, ModelCache};

/// `log2` of the number of sets (2 entries each, 64 bytes per set: 2 MiB per model).
const SET_BITS: u32 = 17;
/// Entries of the hash-map part before it is cleared.
const MAP_MAX_ENTRIES: usize = 1 << 16;
/// Marks an unused ID slot of an entry (no model ID is `u32::MAX`).
const NO_ID: u32 = u32::MAX;
/// IDs stored inline in an entry.
pub const INLINE_IDS: usize = 4;

/// Packs a piece of at most 15 bytes with its length (in the top byte) into one integer,
/// so lookups of short pieces hash an integer and compare once, with no memcmp. Never 0
/// for a non-empty piece.
#[inline]
pub fn pack_short(piece: &[u8]) -> Option<u128> {
    let n = piece.len();
    if n > 15 {
        return None;
    }
    // Overlapping fixed-size loads instead of a variable-length copy (a memcpy call).
    let (lo, hi) = if n >= 8 {
        let lo = u64::from_le_bytes(piece[..8].try_into().unwrap_or_default());
        let tail = u64::from_le_bytes(piece[n - 8..].try_into().unwrap_or_default());
        // Bytes 8..n of the piece, moved to the low end (n == 8: none).
        let hi = tail.checked_shr(((16 - n) * 8) as u32).unwrap_or(0);
        (lo, hi)
    } else if n >= 4 {
        let head = u32::from_le_bytes(piece[..4].try_into().unwrap_or_default()) as u64;
        let tail = u32::from_le_bytes(piece[n - 4..].try_into().unwrap_or_default()) as u64;
        // The overlapping bytes are equal in both loads, so OR keeps them intact.
        (head | (tail << ((n - 4) * 8)), 0)
    } else {
        let mut lo = 0u64;
        for (k, &b) in piece.iter().enumerate() {
            lo |= (b as u64) << (8 * k);
        }
        (lo, 0)
    };
    Some(((hi | ((n as u64) << 56)) as u128) << 64 | lo as u128)
}

#[derive(Clone, Copy)]
#[repr(C)]
struct Entry {
    key: u128,
    ids: [u32; INLINE_IDS],
}

const EMPTY: Entry = Entry {
    key: 0,
    ids: [NO_ID; INLINE_IDS],
};

/// Two entries in one cache line; `ways[0]` is the more recently inserted.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Set {
    ways: [Entry; 2],
}

pub struct PieceCache {
    uid: u64,
    sets: Box<[Set]>,
    /// Short pieces with more than `INLINE_IDS` IDs.
    short: FxHashMap<u128, Box<[u32]>>,
    long: FxHashMap<Box<[u8]>, Box<[u32]>>,
}

#[inline]
fn set_index(key: u128) -> usize {
    let lo = key as u64;
    let hi = (key >> 64) as u64;
    let h = (lo ^ hi.rotate_left(29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> (64 - SET_BITS)) as usize
}

impl PieceCache {
    fn new(uid: u64) -> PieceCache {
        PieceCache {
            uid,
            sets: vec![Set { ways: [EMPTY; 2] }; 1 << SET_BITS].into_boxed_slice(),
            short: FxHashMap::default(),
            long: FxHashMap::default(),
        }
    }

    fn reset(&mut self, uid: u64) {
        self.uid = uid;
        self.sets.fill(Set { ways: [EMPTY; 2] });
        self.short.clear();
        self.long.clear();
    }

    /// Starts loading the line of `key`'s set into the CPU cache (a hint; no effect on
    /// results).
    #[inline]
    pub fn prefetch(&self, key: u128) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let line = &self.sets[set_index(key)] as *const Set as *const i8;
            // SAFETY: a prefetch never faults and reads nothing the program observes;
            // `line` points into `self.sets` anyway.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(line) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = key;
    }

    /// Appends the cached IDs of the piece packed as `key`; false when not cached.
    #[inline]
    pub fn get_short(&self, key: u128, out: &mut Vec<u32>) -> bool {
        let set = &self.sets[set_index(key)];
        for way in &set.ways {
            if way.key == key {
                let n = way.ids.iter().position(|&id| id == NO_ID);
                out.extend_from_slice(&way.ids[..n.unwrap_or(INLINE_IDS)]);
                return true;
            }
        }
        match self.short.get(&key) {
            Some(ids) => {
                out.extend_from_slice(ids);
                true
            }
            None => false,
        }
    }

    #[inline]
    pub fn put_short(&mut self, key: u128, ids: &[u32]) {
        if ids.len() > INLINE_IDS {
            if self.short.len() >= MAP_MAX_ENTRIES {
                self.short.clear();
            }
            self.short.insert(key, ids.into());
            return;
        }
        let mut entry = EMPTY;
        entry.key = key;
        entry.ids[..ids.len()].copy_from_slice(ids);
        let set = &mut self.sets[set_index(key)];
        set.ways[1] = set.ways[0];
        set.ways[0] = entry;
    }

    #[inline]
    pub fn get_long(&self, piece: &[u8], out: &mut Vec<u32>) -> bool {
        match self.long.get(piece) {
            Some(ids) => {
                out.extend_from_slice(ids);
                true
            }
            None => false,
        }
    }

    pub fn put_long(&mut self, piece: &[u8], ids: &[u32]) {
        if self.long.len() >= MAP_MAX_ENTRIES {
            self.long.clear();
        }
        self.long.insert(piece.into(), ids.into());
    }
}

thread_local! {
    static CACHES: RefCell<Vec<PieceCache>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` with this thread's cache for the model `uid` (most recently used first).
#[inline]
pub fn with_cache<R>(uid: u64, f: impl FnOnce(&mut PieceCache) -> R) -> R {
    with_model_cache(&CACHES, uid, f)
}

impl ModelCache for PieceCache {
    fn new_for(uid: u64) -> PieceCache {
        PieceCache::new(uid)
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

    fn pack_reference(piece: &[u8]) -> u128 {
        let mut buf = [0u8; 16];
        buf[..piece.len()].copy_from_slice(piece);
        buf[15] = piece.len() as u8;
        u128::from_le_bytes(buf)
    }

    #[test]
    fn pack_matches_byte_layout() {
        let bytes: Vec<u8> = (1..=16u8).map(|b| b.wrapping_mul(37)).collect();
        for n in 0..=15 {
            assert_eq!(
                pack_short(&bytes[..n]),
                Some(pack_reference(&bytes[..n])),
                "n={n}"
            );
        }
        assert_eq!(pack_short(&bytes), None);
        assert_ne!(pack_short(b"\0\0"), pack_short(b"\0"));
    }

    #[test]
    fn sets_keep_two_entries_and_spill_long_results() {
        let mut c = PieceCache::new(7);
        let (a, b) = (pack_short(b"ab").unwrap(), pack_short(b"cd").unwrap());
        c.put_short(a, &[1, 2]);
        c.put_short(b, &[3, 4, 5, 6, 7]);
        let mut out = vec![];
        assert!(c.get_short(a, &mut out) && c.get_short(b, &mut out));
        assert_eq!(out, vec![1, 2, 3, 4, 5, 6, 7]);
        assert!(!c.get_short(pack_short(b"zz").unwrap(), &mut out));
    }
}
