//! Unigram seed inventory: required characters by coverage, then the most valuable
//! substrings of the distinct words (weighted by word frequency).
//!
//! Substrings are counted by a 64-bit rolling hash in hash-sharded passes, so peak
//! memory is the largest shard's table rather than every distinct substring at once.
//! Keys are hashes, not strings: a collision (odds ~n^2 / 2^64) only merges two seed
//! counts, and the outcome is still deterministic.

use rayon::prelude::*;
use rustc_hash::FxHashMap;

pub struct Words {
    pub chars: Vec<Vec<char>>,
    pub freq: Vec<u64>,
}

/// Characters sorted by weighted count (descending, then by code point); the required
/// set is the shortest prefix whose mass reaches `coverage` of all characters.
pub fn required_chars(words: &Words, coverage: f64) -> (Vec<(char, u64)>, usize) {
    let mut counts: FxHashMap<char, u64> = FxHashMap::default();
    for (w, &f) in words.chars.iter().zip(&words.freq) {
        for &c in w {
            *counts.entry(c).or_insert(0) += f;
        }
    }
    let mut all: Vec<(char, u64)> = counts.into_iter().collect();
    all.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let total: u64 = all.iter().map(|x| x.1).sum();
    let mut acc = 0u64;
    let mut keep = 0;
    for (i, &(_, n)) in all.iter().enumerate() {
        if total > 0 && acc as f64 / total as f64 >= coverage {
            break;
        }
        acc += n;
        keep = i + 1;
    }
    (all, keep)
}

const SHARDS: u64 = 4;

#[inline]
fn roll(h: u64, c: char) -> u64 {
    (h.rotate_left(5) ^ c as u64).wrapping_mul(0x517c_c1b7_2722_0a95)
}

/// Multi-character candidates: (score = count * length, count, word, start, len) for the
/// `limit` highest-scoring substrings of at most `max_len` characters that occur at least
/// twice and use only allowed characters. Sorted by (score desc, string asc).
pub fn seed_substrings(
    words: &Words,
    allowed: &(dyn Fn(char) -> bool + Sync),
    max_len: usize,
    limit: usize,
) -> Vec<(String, u64)> {
    let mut best: Vec<(u64, String, u64)> = Vec::new();
    for shard in 0..SHARDS {
        // Threads count disjoint word ranges; tables are merged by addition.
        let chunk = words.chars.len().div_ceil(16).max(1);
        let table = words
            .chars
            .par_chunks(chunk)
            .enumerate()
            .map(|(ci, block)| {
                let mut t: FxHashMap<u64, (u64, u32, u16, u16)> = FxHashMap::default();
                for (k, w) in block.iter().enumerate() {
                    let wi = ci * chunk + k;
                    let f = words.freq[wi];
                    // Representatives store the start as u16; longer words seed from their head.
                    for i in 0..w.len().min(u16::MAX as usize) {
                        let mut h = 0u64;
                        for (l, &c) in w[i..w.len().min(i + max_len)].iter().enumerate() {
                            if !allowed(c) {
                                break;
                            }
                            h = roll(h, c);
                            if l == 0 || (h >> 60) % SHARDS != shard {
                                continue;
                            }
                            let e = t.entry(h).or_insert((0, wi as u32, i as u16, l as u16 + 1));
                            e.0 += f;
                        }
                    }
                }
                t
            })
            .reduce(FxHashMap::default, |a, b| {
                if a.len() >= b.len() {
                    merge_into(a, b)
                } else {
                    merge_into(b, a)
                }
            });
        let mut shard_best: Vec<(u64, String, u64)> = table
            .into_values()
            .filter(|v| v.0 >= 2)
            .map(|(count, wi, i, l)| {
                let w = &words.chars[wi as usize];
                let s: String = w[i as usize..i as usize + l as usize].iter().collect();
                (count * l as u64, s, count)
            })
            .collect();
        shard_best.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        shard_best.truncate(limit);
        best.extend(shard_best);
    }
    best.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    best.truncate(limit);
    best.into_iter().map(|(_, s, c)| (s, c)).collect()
}

fn merge_into(
    mut a: FxHashMap<u64, (u64, u32, u16, u16)>,
    b: FxHashMap<u64, (u64, u32, u16, u16)>,
) -> FxHashMap<u64, (u64, u32, u16, u16)> {
    for (k, v) in b {
        let e = a.entry(k).or_insert((0, v.1, v.2, v.3));
        e.0 += v.0;
        if (v.1, v.2) < (e.1, e.2) {
            (e.1, e.2) = (v.1, v.2);
        }
    }
    a
}
