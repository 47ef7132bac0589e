//! BPE training (seed 000, 0x06) over weighted pre-tokens.
//!
//! State: every distinct pre-token is a unit with a frequency and a symbol sequence in
//! one arena. Pair scores are weighted counts of overlapping adjacent windows inside a
//! unit; a merge rewrites non-overlapping occurrences left to right. After a merge only
//! the units that contained the pair are recounted (via a pair -> units index), and the
//! changed scores are pushed to a max-heap whose stale entries are skipped on pop.
//! The heap order is total — (score, tie-break key) — so the merge sequence does not
//! depend on thread count, hash-map order or document order.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::count::PretokenCounts;
use super::{merge_pair_in_unit, pair_key, unpack};
use crate::error::{CoreError, CoreResult};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TieBreak {
    /// Among equal scores, the smallest (left_id, right_id) wins (the seed's rule).
    LowestPairIds,
    /// subword-nmt: the lexicographically largest (left bytes, right bytes) wins.
    SubwordNmt,
}

impl TieBreak {
    pub fn parse(s: &str) -> CoreResult<TieBreak> {
        match s {
            "lowest_pair_ids" => Ok(TieBreak::LowestPairIds),
            "subword_nmt" => Ok(TieBreak::SubwordNmt),
            _ => Err(CoreError::Config(format!(
                "unknown tie_break {s:?}; use \"lowest_pair_ids\" or \"subword_nmt\""
            ))),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    VocabSizeReached,
    BelowMinFrequency,
    NoPairsLeft,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::VocabSizeReached => "vocab_size_reached",
            StopReason::BelowMinFrequency => "below_min_frequency",
            StopReason::NoPairsLeft => "no_pairs_left",
        }
    }
}

pub struct TrainConfig {
    pub max_merges: usize,
    pub min_frequency: u64,
    pub max_token_length: Option<usize>,
    pub tie_break: TieBreak,
}

/// subword-nmt heap entry: score, then the larger (left bytes, right bytes) wins.
#[derive(PartialEq, Eq)]
struct BytesEntry {
    score: u64,
    bytes: (Arc<[u8]>, Arc<[u8]>),
    pair: u64,
}

impl Ord for BytesEntry {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .cmp(&other.score)
            .then_with(|| self.bytes.cmp(&other.bytes))
            .then_with(|| other.pair.cmp(&self.pair))
    }
}

impl PartialOrd for BytesEntry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Max-heap of (score, pair) under the configured tie-break. The default rule needs no
/// bytes, so its entries are 16 bytes: the heap is the trainer's largest structure.
enum PairHeap {
    Ids(BinaryHeap<(u64, Reverse<u64>)>),
    Bytes(BinaryHeap<BytesEntry>),
}

impl PairHeap {
    fn pop(&mut self) -> Option<(u64, u64)> {
        match self {
            PairHeap::Ids(h) => h.pop().map(|(s, Reverse(p))| (s, p)),
            PairHeap::Bytes(h) => h.pop().map(|e| (e.score, e.pair)),
        }
    }
}

pub struct Trainer {
    cfg: TrainConfig,
    syms: Vec<u32>,
    start: Vec<usize>,
    len: Vec<u32>,
    freq: Vec<u64>,
    scores: FxHashMap<u64, i64>,
    units_of: FxHashMap<u64, Vec<u32>>,
    heap: PairHeap,
    pieces: Vec<Arc<[u8]>>,
    delta: FxHashMap<u64, i64>,
    pub merges: Vec<(u32, u32)>,
    pub merge_scores: Vec<u64>,
    pub merge_replacements: Vec<u64>,
    pub initial_length: u64,
    pub units: usize,
    pub stop: Option<StopReason>,
}

impl Trainer {
    pub fn new(counts: PretokenCounts, cfg: TrainConfig) -> Trainer {
        let n_units = counts.counts.len();
        let total: usize = counts.counts.keys().map(|k| k.len()).sum();
        let tie_break = cfg.tie_break;
        let mut t = Trainer {
            cfg,
            syms: Vec::with_capacity(total),
            start: Vec::with_capacity(n_units),
            len: Vec::with_capacity(n_units),
            freq: Vec::with_capacity(n_units),
            scores: FxHashMap::default(),
            units_of: FxHashMap::default(),
            heap: match tie_break {
                TieBreak::LowestPairIds => PairHeap::Ids(BinaryHeap::new()),
                TieBreak::SubwordNmt => PairHeap::Bytes(BinaryHeap::new()),
            },
            pieces: (0..=255u8).map(|b| Arc::from(vec![b])).collect(),
            delta: FxHashMap::default(),
            merges: Vec::new(),
            merge_scores: Vec::new(),
            merge_replacements: Vec::new(),
            initial_length: 0,
            units: n_units,
            stop: None,
        };
        // Units in byte order: the index layout is then independent of hash order.
        let mut entries: Vec<(Vec<u8>, u64)> = counts.counts.into_iter().collect();
        entries.sort_unstable();
        for (w, (piece, f)) in entries.into_iter().enumerate() {
            t.start.push(t.syms.len());
            t.len.push(piece.len() as u32);
            t.freq.push(f);
            t.initial_length += f * piece.len() as u64;
            t.syms.extend(piece.iter().map(|&b| b as u32));
            for win in piece.windows(2) {
                let key = pair_key(win[0] as u32, win[1] as u32);
                *t.scores.entry(key).or_insert(0) += f as i64;
                let list = t.units_of.entry(key).or_default();
                if list.last() != Some(&(w as u32)) {
                    list.push(w as u32);
                }
            }
        }
        let keys: Vec<(u64, i64)> = t.scores.iter().map(|(&k, &v)| (k, v)).collect();
        for (k, v) in keys {
            t.push(k, v as u64);
        }
        t
    }

    fn push(&mut self, pair: u64, score: u64) {
        match &mut self.heap {
            PairHeap::Ids(h) => h.push((score, Reverse(pair))),
            PairHeap::Bytes(h) => {
                let (l, r) = unpack(pair);
                let bytes = (
                    self.pieces[l as usize].clone(),
                    self.pieces[r as usize].clone(),
                );
                h.push(BytesEntry { score, bytes, pair });
            }
        }
    }

    fn merged_len(&self, pair: u64) -> usize {
        let (l, r) = unpack(pair);
        self.pieces[l as usize].len() + self.pieces[r as usize].len()
    }

    /// Runs up to `steps` merges; returns the stop reason once training has finished.
    pub fn step(&mut self, steps: usize) -> Option<StopReason> {
        for _ in 0..steps {
            if self.stop.is_some() {
                break;
            }
            self.stop = self.merge_once();
        }
        self.stop
    }

    fn merge_once(&mut self) -> Option<StopReason> {
        if self.merges.len() >= self.cfg.max_merges {
            return Some(StopReason::VocabSizeReached);
        }
        // Scores that went down were not re-pushed (most changes are decreases), so an
        // entry may hold a score above the current one: re-push it with the current
        // score. An entry below the current score is a leftover: when the score rose,
        // a fresh entry was pushed.
        let (pair, score) = loop {
            let Some((top_score, top_pair)) = self.heap.pop() else {
                return Some(StopReason::NoPairsLeft);
            };
            let current = self.scores.get(&top_pair).copied().unwrap_or(0);
            if current <= 0 {
                continue;
            }
            let current = current as u64;
            if current < top_score {
                self.push(top_pair, current);
                continue;
            }
            if current > top_score {
                continue;
            }
            if let Some(max) = self.cfg.max_token_length {
                if self.merged_len(top_pair) > max {
                    continue; // never eligible
                }
            }
            break (top_pair, current);
        };
        if score < self.cfg.min_frequency {
            return Some(StopReason::BelowMinFrequency);
        }
        let (a, b) = unpack(pair);
        self.apply_merge(a, b, score);
        None
    }

    /// Continues from an existing tokenizer (vocabulary extension): applies `merges`,
    /// in rank order, as if training had chosen them, so later merges are learned on the
    /// old segmentation and get the IDs after them. Call before the first `step`.
    pub fn replay(&mut self, merges: &[(u32, u32)]) -> CoreResult<()> {
        if !self.merges.is_empty() {
            return Err(CoreError::Config(
                "replay the existing merges before training any new one".into(),
            ));
        }
        for (rank, &(a, b)) in merges.iter().enumerate() {
            let next = 256 + self.merges.len() as u32;
            if a >= next || b >= next {
                return Err(CoreError::Config(format!(
                    "merge {rank} uses ID {} before it exists (IDs < {next} are defined here)",
                    a.max(b)
                )));
            }
            let score = self
                .scores
                .get(&pair_key(a, b))
                .copied()
                .unwrap_or(0)
                .max(0);
            self.apply_merge(a, b, score as u64);
        }
        Ok(())
    }

    /// Creates ID `256 + merges.len()` from `(a, b)` and rewrites every unit holding it.
    fn apply_merge(&mut self, a: u32, b: u32, score: u64) {
        let pair = pair_key(a, b);
        let new_id = 256 + self.merges.len() as u32;
        let mut piece = self.pieces[a as usize].to_vec();
        piece.extend_from_slice(&self.pieces[b as usize]);
        self.pieces.push(Arc::from(piece));
        let mut units = self.units_of.remove(&pair).unwrap_or_default();
        units.sort_unstable();
        units.dedup();
        let mut replaced = 0u64;
        for &w in &units {
            replaced += self.rewrite_unit(w, a, b, new_id);
        }
        let mut changed: Vec<(u64, i64)> = self.delta.drain().filter(|&(_, d)| d != 0).collect();
        changed.sort_unstable();
        for (p, d) in changed {
            let s = self.scores.entry(p).or_insert(0);
            *s += d;
            let s = *s;
            if s <= 0 {
                self.scores.remove(&p);
            } else if d > 0 {
                self.push(p, s as u64);
            }
        }
        self.merges.push((a, b));
        self.merge_scores.push(score);
        self.merge_replacements.push(replaced);
    }

    /// Rewrites unit `w`, records score deltas; returns weighted replacements.
    fn rewrite_unit(&mut self, w: u32, a: u32, b: u32, new_id: u32) -> u64 {
        let wu = w as usize;
        let (s, n, f) = (self.start[wu], self.len[wu] as usize, self.freq[wu]);
        let (len, reps) = merge_pair_in_unit(
            &mut self.syms[s..s + n],
            (a, b, new_id),
            f as i64,
            w,
            &mut self.delta,
            &mut self.units_of,
        );
        self.len[wu] = len as u32;
        reps * f
    }
}
