//! Pair-merge training over weighted symbol sequences, shared by character BPE (score =
//! pair count) and WordPiece (score = f(ab) / (f(a) f(b)), seed 000 0x08, or the
//! count-weighted likelihood gain f(ab) ln(N f(ab) / (f(a) f(b))) with N the initial
//! number of symbols).
//!
//! Same bookkeeping as the byte-level trainer: an arena of units, weighted pair counts,
//! a pair -> units index, and a lazy max-heap whose stale entries are checked on pop.
//! Under the likelihood ratio a merge of (a, b) lowers f(a) and f(b), which *raises* the
//! score of every other pair containing a or b; those pairs are re-pushed, so every
//! score increase has a fresh heap entry and the lazy check stays exact.
//! Symbols are interned by string: two merge paths that spell the same piece share an
//! ID. Ties: higher pair count, then the smallest (or largest) (left, right) strings.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::bpe::{merge_pair_in_unit, pair_key as key};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scoring {
    Count,
    LikelihoodRatio,
    LikelihoodGain,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ties {
    Smallest,
    Largest,
}

pub struct MergeConfig {
    /// Stop after this many new pieces (or merges, with `count_merges`).
    pub max_new: usize,
    pub count_merges: bool,
    pub min_frequency: u64,
    pub scoring: Scoring,
    pub ties: Ties,
    /// WordPiece: stripped from the right piece when joining ("a" + "##b" -> "ab").
    pub strip_prefix: Option<String>,
}

struct Entry {
    score: f64,
    count: i64,
    left: Arc<str>,
    right: Arc<str>,
    pair: u64,
    smallest: bool,
}

impl Ord for Entry {
    fn cmp(&self, o: &Self) -> Ordering {
        // The string comparison runs only on a tie of score and count: most heap
        // comparisons are decided by the numbers, and comparing strings is the cost.
        self.score
            .total_cmp(&o.score)
            .then(self.count.cmp(&o.count))
            .then_with(|| {
                if self.pair == o.pair {
                    return Ordering::Equal; // same pair, same strings
                }
                let strings = (&self.left, &self.right).cmp(&(&o.left, &o.right));
                if self.smallest {
                    strings.reverse()
                } else {
                    strings
                }
            })
            .then(o.pair.cmp(&self.pair))
    }
}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Entry {}

pub struct MergeEngine {
    cfg: MergeConfig,
    syms: Vec<u32>,
    start: Vec<usize>,
    len: Vec<u32>,
    freq: Vec<u64>,
    pub pieces: Vec<Arc<str>>,
    ids: FxHashMap<Arc<str>, u32>,
    pair_count: FxHashMap<u64, i64>,
    sym_count: Vec<i64>,
    units_of: FxHashMap<u64, Vec<u32>>,
    pairs_of: Vec<Vec<u64>>,
    heap: BinaryHeap<Entry>,
    delta: FxHashMap<u64, i64>,
    /// ln of the initial number of symbols (the N of the likelihood gain; fixed, so a
    /// merge only changes the scores of pairs that share a symbol with it).
    ln_total: f64,
    /// Number of alphabet symbols (IDs below this are initial).
    pub alphabet: usize,
    /// (left, right, result) in merge order.
    pub merges: Vec<(u32, u32, u32)>,
    pub merge_counts: Vec<u64>,
    pub new_pieces: usize,
    pub stop: Option<&'static str>,
}

impl MergeEngine {
    /// `units`: symbol sequences with weights, in a caller-fixed (sorted) order.
    pub fn new(units: Vec<(Vec<String>, u64)>, cfg: MergeConfig) -> MergeEngine {
        // Distinct symbols first (a hash set), then sort only those: sorting every
        // symbol occurrence cost more than the merges on large corpora.
        let distinct: rustc_hash::FxHashSet<&str> = units
            .iter()
            .flat_map(|u| u.0.iter().map(String::as_str))
            .collect();
        let mut alphabet: Vec<&str> = distinct.into_iter().collect();
        alphabet.sort_unstable();
        let ids: FxHashMap<&str, u32> = alphabet
            .iter()
            .enumerate()
            .map(|(i, &p)| (p, i as u32))
            .collect();
        let coded = units
            .iter()
            .map(|(symbols, f)| (symbols.iter().map(|s| ids[s.as_str()]).collect(), *f))
            .collect();
        MergeEngine::from_ids(&alphabet, coded, cfg)
    }

    /// Like [`MergeEngine::new`] with the symbols already numbered: `alphabet` is sorted
    /// and distinct, and symbol `i` of a unit is `alphabet[i]`. Callers that can number
    /// symbols cheaply (characters) skip a string per symbol occurrence.
    pub fn from_ids(
        alphabet: &[&str],
        units: Vec<(Vec<u32>, u64)>,
        cfg: MergeConfig,
    ) -> MergeEngine {
        let pieces: Vec<Arc<str>> = alphabet.iter().map(|&s| Arc::from(s)).collect();
        let ids: FxHashMap<Arc<str>, u32> = pieces
            .iter()
            .enumerate()
            .map(|(i, p)| (p.clone(), i as u32))
            .collect();
        let mut e = MergeEngine {
            cfg,
            syms: Vec::new(),
            start: Vec::new(),
            len: Vec::new(),
            freq: Vec::new(),
            sym_count: vec![0; pieces.len()],
            pairs_of: vec![Vec::new(); pieces.len()],
            alphabet: pieces.len(),
            pieces,
            ids,
            pair_count: FxHashMap::default(),
            units_of: FxHashMap::default(),
            heap: BinaryHeap::new(),
            delta: FxHashMap::default(),
            ln_total: 0.0,
            merges: Vec::new(),
            merge_counts: Vec::new(),
            new_pieces: 0,
            stop: None,
        };
        for (w, (symbols, f)) in units.into_iter().enumerate() {
            e.start.push(e.syms.len());
            e.len.push(symbols.len() as u32);
            e.freq.push(f);
            let first = e.syms.len();
            for &id in &symbols {
                e.syms.push(id);
                e.sym_count[id as usize] += f as i64;
            }
            for i in first + 1..e.syms.len() {
                let k = key(e.syms[i - 1], e.syms[i]);
                *e.pair_count.entry(k).or_insert(0) += f as i64;
                let list = e.units_of.entry(k).or_default();
                if list.last() != Some(&(w as u32)) {
                    list.push(w as u32);
                }
            }
        }
        let total: i64 = e.sym_count.iter().sum();
        e.ln_total = (total.max(1) as f64).ln();
        let mut all: Vec<u64> = e.pair_count.keys().copied().collect();
        all.sort_unstable();
        for k in all {
            e.register(k);
            e.push(k);
        }
        e
    }

    /// Sets the budget once the alphabet size is known (vocabulary-size targets).
    pub fn set_budget(&mut self, max_new: usize, count_merges: bool) {
        self.cfg.max_new = max_new;
        self.cfg.count_merges = count_merges;
    }

    /// Scores that depend on f(a) and f(b) need the pairs of each symbol.
    fn symbol_scored(&self) -> bool {
        self.cfg.scoring != Scoring::Count
    }

    fn register(&mut self, k: u64) {
        if self.symbol_scored() {
            let (l, r) = ((k >> 32) as usize, k as u32 as usize);
            self.pairs_of[l].push(k);
            if r != l {
                self.pairs_of[r].push(k);
            }
        }
    }

    fn score(&self, k: u64) -> (f64, i64) {
        let c = self.pair_count.get(&k).copied().unwrap_or(0);
        match self.cfg.scoring {
            Scoring::Count => (c as f64, c),
            Scoring::LikelihoodRatio => {
                let (l, r) = ((k >> 32) as usize, k as u32 as usize);
                let d = self.sym_count[l] as f64 * self.sym_count[r] as f64;
                (if d > 0.0 { c as f64 / d } else { 0.0 }, c)
            }
            Scoring::LikelihoodGain => {
                let (l, r) = ((k >> 32) as usize, k as u32 as usize);
                let (fa, fb) = (self.sym_count[l] as f64, self.sym_count[r] as f64);
                if c <= 0 || fa <= 0.0 || fb <= 0.0 {
                    return (0.0, c);
                }
                let cf = c as f64;
                // Same operation order as the Python reference (bitwise-equal floats).
                (cf * (cf.ln() + self.ln_total - fa.ln() - fb.ln()), c)
            }
        }
    }

    fn push(&mut self, k: u64) {
        let (score, count) = self.score(k);
        if count <= 0 {
            return;
        }
        let (l, r) = ((k >> 32) as usize, k as u32 as usize);
        self.heap.push(Entry {
            score,
            count,
            left: self.pieces[l].clone(),
            right: self.pieces[r].clone(),
            pair: k,
            smallest: self.cfg.ties == Ties::Smallest,
        });
    }

    /// Runs up to `steps` merges; returns the stop reason once training has finished.
    pub fn step(&mut self, steps: usize) -> Option<&'static str> {
        for _ in 0..steps {
            if self.stop.is_some() {
                break;
            }
            self.stop = self.merge_once();
        }
        self.stop
    }

    fn pick(&mut self) -> Result<u64, &'static str> {
        while let Some(top) = self.heap.pop() {
            let (score, count) = self.score(top.pair);
            if count <= 0 {
                continue;
            }
            if score != top.score || count != top.count {
                if (score, count) < (top.score, top.count) {
                    self.push(top.pair);
                }
                continue; // a higher score always has its own fresher entry
            }
            if (count as u64) < self.cfg.min_frequency {
                if self.cfg.scoring == Scoring::Count {
                    return Err("below_min_frequency"); // every other pair is rarer still
                }
                continue; // stays ineligible unless its count rises (then re-pushed)
            }
            return Ok(top.pair);
        }
        // Pairs with a positive count that never surfaced were all below min_frequency.
        Err(if self.pair_count.is_empty() {
            "no_pairs_left"
        } else {
            "below_min_frequency"
        })
    }

    fn merge_once(&mut self) -> Option<&'static str> {
        let done = if self.cfg.count_merges {
            self.merges.len()
        } else {
            self.new_pieces
        };
        if done >= self.cfg.max_new {
            return Some("vocab_size_reached");
        }
        let pair = match self.pick() {
            Ok(p) => p,
            Err(reason) => return Some(reason),
        };
        let (a, b) = ((pair >> 32) as u32, pair as u32);
        let right = &self.pieces[b as usize];
        let right = match &self.cfg.strip_prefix {
            Some(p) => right.strip_prefix(p.as_str()).unwrap_or(right),
            None => right,
        };
        let merged = format!("{}{}", self.pieces[a as usize], right);
        let new_id = match self.ids.get(merged.as_str()) {
            Some(&id) => id,
            None => {
                let id = self.pieces.len() as u32;
                let s: Arc<str> = Arc::from(merged.as_str());
                self.pieces.push(s.clone());
                self.ids.insert(s, id);
                self.sym_count.push(0);
                self.pairs_of.push(Vec::new());
                self.new_pieces += 1;
                id
            }
        };
        let count = self.pair_count.get(&pair).copied().unwrap_or(0) as u64;
        let mut units = self.units_of.remove(&pair).unwrap_or_default();
        units.sort_unstable();
        units.dedup();
        for &w in &units {
            self.rewrite_unit(w, a, b, new_id);
        }
        // No sort: the heap's order is total (equal entries are the same pair with the
        // same score), so the order of pushes cannot change which pair is popped.
        let changed: Vec<(u64, i64)> = self.delta.drain().filter(|&(_, d)| d != 0).collect();
        for (k, d) in changed {
            let c = self.pair_count.entry(k).or_insert(0);
            let fresh = *c <= 0 && d > 0;
            *c += d;
            if *c <= 0 {
                self.pair_count.remove(&k);
            } else if d > 0 || self.cfg.scoring == Scoring::LikelihoodGain {
                // The gain can rise when a count falls (c ln(c/..) is not monotone in c
                // below c = f(a) f(b) / (e N)): every change gets a fresh heap entry.
                if fresh {
                    self.register(k);
                }
                self.push(k);
            }
        }
        if self.symbol_scored() {
            for s in [a, b] {
                let mut list = std::mem::take(&mut self.pairs_of[s as usize]);
                list.sort_unstable();
                list.dedup();
                list.retain(|k| self.pair_count.contains_key(k));
                for &k in &list {
                    self.push(k);
                }
                self.pairs_of[s as usize] = list;
            }
        }
        self.merges.push((a, b, new_id));
        self.merge_counts.push(count);
        self.compact_heap();
        None
    }

    /// Rebuilds the heap from the live pairs once stale entries outnumber them 3 to 1
    /// (symbol-dependent scores re-push many pairs per merge): every live pair gets one
    /// exact entry, which is all the lazy check needs, and memory stays bounded.
    fn compact_heap(&mut self) {
        if self.heap.len() <= 4 * self.pair_count.len() + 64 {
            return;
        }
        self.heap.clear();
        let mut live: Vec<u64> = self.pair_count.keys().copied().collect();
        live.sort_unstable();
        for k in live {
            self.push(k);
        }
    }

    fn rewrite_unit(&mut self, w: u32, a: u32, b: u32, new_id: u32) {
        let wu = w as usize;
        let (s, n, f) = (self.start[wu], self.len[wu] as usize, self.freq[wu] as i64);
        let (len, reps) = merge_pair_in_unit(
            &mut self.syms[s..s + n],
            (a, b, new_id),
            f,
            w,
            &mut self.delta,
            &mut self.units_of,
        );
        self.len[wu] = len as u32;
        let moved = reps as i64 * f;
        self.sym_count[a as usize] -= moved;
        self.sym_count[b as usize] -= moved;
        self.sym_count[new_id as usize] += moved;
    }
}
