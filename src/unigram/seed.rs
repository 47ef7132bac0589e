//! Unigram seed inventory: required characters by coverage, then the most valuable
//! substrings of the distinct words (weighted by word frequency).
//!
//! Substrings are counted by a 64-bit rolling hash in passes sharded by the hash of
//! their first two characters, so peak memory is the largest shard's table rather than
//! every distinct substring at once.
//! Keys are hashes, not strings: a collision (odds ~n^2 / 2^64) only merges two seed
//! counts, and the outcome is still deterministic.

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::script::ScriptRun;

pub struct Words {
    pub chars: Vec<Vec<char>>,
    pub freq: Vec<u64>,
}

/// Characters sorted by weighted count (descending, then by code point); the required
/// set is the shortest prefix whose mass reaches `coverage` of all characters.
pub fn required_chars(words: &Words, coverage: f64) -> (Vec<(char, u64)>, usize) {
    // Integer counts: the parallel merge order cannot change them.
    let counts: FxHashMap<char, u64> = words
        .chars
        .par_iter()
        .zip(&words.freq)
        .fold(FxHashMap::default, |mut counts, (w, &f)| {
            for &c in w {
                *counts.entry(c).or_insert(0) += f;
            }
            counts
        })
        .reduce(FxHashMap::default, |mut a, b| {
            for (c, n) in b {
                *a.entry(c).or_insert(0) += n;
            }
            a
        });
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

const SHARDS: u64 = 32;

#[inline]
fn roll(h: u64, c: char) -> u64 {
    (h.rotate_left(5) ^ c as u64).wrapping_mul(0x517c_c1b7_2722_0a95)
}

/// Multi-character candidates: (string, count) for the `limit` highest-scoring (count x
/// length) substrings of at most `max_len` characters that occur at least twice, are
/// right-branching (not always followed by the same character; ending a word counts as
/// branching), use only allowed characters and, with `split_by_script`, keep to one
/// Unicode script (`super::script`). Sorted by (score desc, string asc).
pub fn seed_substrings(
    words: &Words,
    allowed: &(dyn Fn(char) -> bool + Sync),
    max_len: usize,
    limit: usize,
    split_by_script: bool,
) -> Vec<(String, u64)> {
    // One table per shard, shards in parallel: peak memory is (threads / SHARDS) of all
    // distinct substrings; each shard re-walks the words (cheap rolling hashes).
    let per_shard: Vec<Vec<Row>> = (0..SHARDS)
        .into_par_iter()
        .map(|shard| {
            let mut table: FxHashMap<u64, Entry> = FxHashMap::default();
            let mut reach: Vec<usize> = Vec::new();
            for (wi, w) in words.chars.iter().enumerate() {
                let f = words.freq[wi];
                // How far a substring may reach from each character: allowed characters
                // ahead, capped at `max_len`. One `allowed` lookup per character instead
                // of one per substring (the same substrings as breaking at the first
                // disallowed one); a per-word buffer, as storing it for all words would
                // cost more memory than the words.
                reach.clear();
                reach.resize(w.len(), 0);
                let mut run = 0usize;
                for i in (0..w.len()).rev() {
                    run = if allowed(w[i]) { run + 1 } else { 0 };
                    reach[i] = run.min(max_len);
                }
                // Representatives store the start as u16; longer words seed from their head.
                for i in 0..w.len().min(u16::MAX as usize) {
                    if reach[i] < 2 {
                        continue; // single characters are seeded separately
                    }
                    // A substring's shard is that of its first two characters, so equal
                    // substrings meet in one shard and each pass hashes only the
                    // substrings it owns (not all of them, once per shard).
                    let two = roll(roll(0, w[i]), w[i + 1]);
                    if (two >> 58) % SHARDS != shard {
                        continue;
                    }
                    let mut h = 0u64;
                    let mut run = ScriptRun::default();
                    for (l, &c) in w[i..i + reach[i]].iter().enumerate() {
                        // The script rule is prefix-closed: once a piece mixes two
                        // scripts every extension does too.
                        if split_by_script && !run.push(c) {
                            break;
                        }
                        h = roll(h, c);
                        if l == 0 {
                            continue;
                        }
                        // The character after this occurrence (any character, allowed
                        // or not), or the end of the word.
                        let next = w.get(i + l + 1).map_or(WORD_END, |&n| n as u32);
                        let e = table.entry(h).or_insert(Entry {
                            count: 0,
                            word: wi as u32,
                            start: i as u16,
                            len: l as u16 + 1,
                            next,
                            branching: false,
                        });
                        e.count += f;
                        e.branching |= e.next != next || next == WORD_END;
                    }
                }
            }
            // Compact (score, count, word, start, len) rows; strings are built only for
            // the survivors. Rows tied with the cut-off score are all kept so the final
            // (score, string) order decides ties exactly.
            // Only right-branching substrings (SentencePiece's seeds are the internal
            // nodes of a suffix tree over the text): a substring always followed by the
            // same character scores below its extension and would only crowd the seed
            // budget. A word end counts as branching: in the running text the next
            // word follows, which varies. (Measured on the issue-12 corpora: held-out
            // tokens/byte 1-2% better than no filter on the multilingual mix, and than
            // treating the word end as one fixed character on bench-mixed.)
            let rows: Vec<Row> = table
                .into_values()
                .filter(|e| e.count >= 2 && e.branching)
                .map(|e| (e.count * e.len as u64, e.count, e.word, e.start, e.len))
                .collect();
            top_rows(rows, limit)
        })
        .collect();
    let rows = top_rows(per_shard.into_iter().flatten().collect(), limit);
    let mut best: Vec<(u64, String, u64)> = rows
        .into_iter()
        .map(|(score, count, wi, i, l)| {
            let w = &words.chars[wi as usize];
            (
                score,
                w[i as usize..i as usize + l as usize].iter().collect(),
                count,
            )
        })
        .collect();
    best.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    best.truncate(limit);
    best.into_iter().map(|(_, s, c)| (s, c)).collect()
}

type Row = (u64, u64, u32, u16, u16);

/// `next` of a substring occurrence that ends its word.
const WORD_END: u32 = u32::MAX;

/// One distinct substring: weighted count, a representative occurrence (word, start,
/// length), the character after its first occurrence, and whether a later occurrence
/// was followed by a different one.
struct Entry {
    count: u64,
    word: u32,
    start: u16,
    len: u16,
    next: u32,
    branching: bool,
}

/// Rows whose score is at least the `limit`-th best score (ties at the cut kept).
fn top_rows(mut rows: Vec<Row>, limit: usize) -> Vec<Row> {
    if rows.len() <= limit || limit == 0 {
        if limit == 0 {
            rows.clear();
        }
        return rows;
    }
    rows.select_nth_unstable_by(limit - 1, |a, b| b.0.cmp(&a.0));
    let cut = rows[limit - 1].0;
    rows.retain(|r| r.0 >= cut);
    rows
}
