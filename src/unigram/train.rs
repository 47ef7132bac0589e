//! Unigram training (seed 000, 0x08): seed inventory, EM with exact forward-backward
//! marginals in log space, and pruning by estimated loss increase.
//!
//! Loop: `em_sub_iterations` EM steps; stop when the inventory is within 10% of the
//! target (as SentencePiece); otherwise drop pieces that Viterbi never uses and the
//! cheapest pieces by estimated loss, keeping `max(target, shrinking_factor * size)`.
//! Finally the required characters plus the best-scoring pieces fill `vocab_size`.
//!
//! Determinism: words are sorted by string and split into a fixed number of chunks;
//! each chunk accumulates sequentially and chunk results are added in chunk order, so
//! the floating-point sums (and hence the vocabulary) do not depend on thread count.

use rayon::prelude::*;
use rustc_hash::FxHashSet;

use super::lattice::{accumulate_posteriors, build_edges, viterbi, Edge, Trie, UNK};
use super::seed::{required_chars, seed_substrings, Words};
use crate::error::{CoreError, CoreResult};

const CHUNKS: usize = 8;
/// SentencePiece's margin: prune to 110% of the target, then pick the best pieces.
const EXTRA_RATIO: f64 = 1.1;
/// Digamma M-step: pieces expected less than this often are dropped (SentencePiece).
const MIN_EXPECTED: f64 = 0.5;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MStep {
    /// p(z) = c(z) / sum c: the maximum-likelihood update; EM never lowers the likelihood.
    Simple,
    /// log p(z) = digamma(c(z)) - digamma(sum c), dropping c(z) < 0.5: SentencePiece's
    /// Bayesian-flavoured update, which pushes rare pieces down faster.
    Digamma,
}

pub struct UnigramConfig {
    /// Pieces to learn, required characters included (specials and bytes excluded).
    pub vocab_size: usize,
    pub max_piece_length: usize,
    pub seed_size: usize,
    pub character_coverage: f64,
    pub shrinking_factor: f64,
    pub em_sub_iterations: usize,
    pub m_step: MStep,
    /// SentencePiece's `split_by_unicode_script`: no piece mixes scripts (`super::script`).
    pub split_by_script: bool,
}

pub struct UnigramResult {
    /// Final pieces with log probabilities, best first (ties by string).
    pub pieces: Vec<(String, f64)>,
    pub required_chars: usize,
    pub dropped_chars: usize,
    pub seed_pieces: usize,
    pub rounds: usize,
    /// (round, corpus log-likelihood before each M-step).
    pub em_trace: Vec<(usize, f64)>,
    pub stop_reason: &'static str,
}

struct State {
    pieces: Vec<String>,
    logp: Vec<f64>,
    required: Vec<bool>,
}

impl State {
    fn trie(&self) -> Trie {
        Trie::build(
            self.pieces
                .iter()
                .enumerate()
                .map(|(i, p)| (p.as_str(), i as u32)),
        )
    }

    /// SentencePiece's unknown score: 10 nats below the worst *live* piece. Dropped
    /// pieces hold `-inf`; letting them into the minimum made every word with a character
    /// outside the coverage set impossible (no path), so whole CJK sentences contributed
    /// nothing to the E-step or to pruning.
    fn unk_logp(&self) -> f64 {
        self.logp
            .iter()
            .copied()
            .filter(|x| x.is_finite())
            .fold(0.0f64, f64::min)
            - 10.0
    }
}

/// Runs `f(chunk_words, chunk_freqs, acc)` over fixed chunks in parallel and adds the
/// accumulators in chunk order.
fn over_chunks<F>(words: &Words, width: usize, width2: usize, f: F) -> (Vec<f64>, Vec<f64>, f64)
where
    F: Fn(&[Vec<char>], &[u64], &mut [f64], &mut [f64]) -> f64 + Sync,
{
    let size = words.chars.len().div_ceil(CHUNKS).max(1);
    let parts: Vec<(Vec<f64>, Vec<f64>, f64)> = words
        .chars
        .par_chunks(size)
        .zip(words.freq.par_chunks(size))
        .map(|(w, fr)| {
            let (mut a, mut b) = (vec![0.0; width], vec![0.0; width2]);
            let s = f(w, fr, &mut a, &mut b);
            (a, b, s)
        })
        .collect();
    let (mut a, mut b, mut s) = (vec![0.0; width], vec![0.0; width2], 0.0);
    for (pa, pb, ps) in parts {
        a.iter_mut().zip(pa).for_each(|(x, y)| *x += y);
        b.iter_mut().zip(pb).for_each(|(x, y)| *x += y);
        s += ps;
    }
    (a, b, s)
}

fn e_step(words: &Words, st: &State, trie: &Trie) -> (Vec<f64>, f64) {
    let unk = st.unk_logp();
    let (expected, _, ll) = over_chunks(words, st.pieces.len(), 0, |ws, fs, acc, _| {
        let mut edges: Vec<Edge> = Vec::new();
        let mut ll = 0.0;
        for (w, &f) in ws.iter().zip(fs) {
            build_edges(trie, &st.logp, unk, w, None, &mut edges);
            ll += f as f64 * accumulate_posteriors(&edges, w.len(), f as f64, acc);
        }
        ll
    });
    (expected, ll)
}

pub fn digamma(mut x: f64) -> f64 {
    let mut r = 0.0;
    while x < 6.0 {
        r -= 1.0 / x;
        x += 1.0;
    }
    let inv = 1.0 / x;
    let inv2 = inv * inv;
    r + x.ln() - 0.5 * inv - inv2 * (1.0 / 12.0 - inv2 * (1.0 / 120.0 - inv2 / 252.0))
}

/// Re-estimates probabilities in place. Dropped pieces get `-inf` (skipped by the
/// lattice) rather than being removed, so IDs and the trie stay valid until pruning
/// compacts the inventory.
#[allow(clippy::needless_range_loop)] // `alive` needs the index and the whole state
fn m_step(st: &mut State, expected: &[f64], mode: MStep) {
    let floor = if mode == MStep::Digamma {
        MIN_EXPECTED
    } else {
        0.0
    };
    let alive = |i: usize, st: &State| {
        st.logp[i] != f64::NEG_INFINITY && (st.required[i] || expected[i] > floor)
    };
    let total: f64 = (0..st.pieces.len())
        .filter(|&i| alive(i, st))
        .map(|i| expected[i])
        .sum();
    for i in 0..st.pieces.len() {
        if !alive(i, st) {
            st.logp[i] = f64::NEG_INFINITY;
            continue;
        }
        let c = expected[i];
        // A required character the E-step (almost) never used keeps the score of the
        // rarest surviving piece, so it stays in the lattice (coverage beats
        // likelihood) without a huge digamma penalty (digamma(x) ~ -1/x near 0).
        st.logp[i] = match mode {
            // Exact maximum likelihood (EM stays monotone); a positive floor only for a
            // required character with no posterior mass at all.
            MStep::Simple => c.max(f64::MIN_POSITIVE).ln() - total.ln(),
            MStep::Digamma => digamma(c.max(MIN_EXPECTED)) - digamma(total),
        };
    }
}

fn compact(st: State) -> State {
    let mut next = State {
        pieces: Vec::new(),
        logp: Vec::new(),
        required: Vec::new(),
    };
    for (i, piece) in st.pieces.into_iter().enumerate() {
        if st.logp[i] != f64::NEG_INFINITY {
            next.pieces.push(piece);
            next.logp.push(st.logp[i]);
            next.required.push(st.required[i]);
        }
    }
    next
}

fn live(st: &State) -> usize {
    st.logp.iter().filter(|x| **x != f64::NEG_INFINITY).count()
}

/// Keeps the required pieces and the `target - required` most valuable others.
fn prune(words: &Words, st: State, trie: &Trie, target: usize) -> State {
    let unk = st.unk_logp();
    let n = st.pieces.len();
    // Each piece's best segmentation without itself: its alternative if it vanished.
    let alternatives: Vec<Option<Vec<u32>>> = (0..n)
        .into_par_iter()
        .map(|i| {
            if st.required[i] {
                return None;
            }
            let chars: Vec<char> = st.pieces[i].chars().collect();
            let mut edges = Vec::new();
            build_edges(
                trie,
                &st.logp,
                unk,
                &chars,
                Some((0, chars.len(), i as u32)),
                &mut edges,
            );
            let (path, score) = viterbi(&edges, chars.len());
            if path.is_empty() {
                return None;
            }
            if score > st.logp[i] {
                // Never its own best segmentation, so Viterbi never emits it: free to drop.
                return Some(Vec::new());
            }
            Some(path.iter().map(|&k| edges[k].id).collect())
        })
        .collect();
    let (freq, containing, _) = over_chunks(words, n, n, |ws, fs, freq, containing| {
        let mut edges = Vec::new();
        for (w, &f) in ws.iter().zip(fs) {
            build_edges(trie, &st.logp, unk, w, None, &mut edges);
            for k in viterbi(&edges, w.len()).0 {
                let id = edges[k].id;
                if id != UNK {
                    freq[id as usize] += f as f64;
                    containing[id as usize] += f as f64;
                }
            }
        }
        0.0
    });
    let sum: f64 = freq.iter().sum();
    let total_words: f64 = words.freq.iter().map(|&f| f as f64).sum();
    let mut keep = vec![false; n];
    let mut kept = 0usize;
    let mut candidates: Vec<(f64, usize)> = Vec::new();
    for i in 0..n {
        if st.required[i] {
            keep[i] = true;
            kept += 1;
            continue;
        }
        if st.logp[i] == f64::NEG_INFINITY {
            continue; // dropped by the M-step
        }
        match &alternatives[i] {
            Some(alt) if alt.is_empty() => {}
            _ if freq[i] == 0.0 => {}
            None => {
                keep[i] = true;
                kept += 1;
            }
            Some(alt) => {
                // SentencePiece's estimate: the words using z re-segment into z's
                // alternative, whose pieces absorb z's frequency.
                let f = containing[i] / total_words;
                let logprob = freq[i].ln() - sum.ln();
                let logsum_alt = (sum + freq[i] * (alt.len() as f64 - 1.0)).ln();
                let logprob_alt: f64 = alt
                    .iter()
                    .map(|&a| {
                        let fa = if a == UNK { 0.0 } else { freq[a as usize] };
                        (fa + freq[i]).ln() - logsum_alt
                    })
                    .sum();
                candidates.push((f * (logprob - logprob_alt), i));
            }
        }
    }
    candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    for (_, i) in candidates {
        if kept >= target {
            break;
        }
        keep[i] = true;
        kept += 1;
    }
    let mut next = State {
        pieces: Vec::new(),
        logp: Vec::new(),
        required: Vec::new(),
    };
    for (i, piece) in st.pieces.into_iter().enumerate() {
        if keep[i] {
            next.pieces.push(piece);
            next.logp.push(st.logp[i]);
            next.required.push(st.required[i]);
        }
    }
    next
}

pub fn train(words: Vec<(String, u64)>, cfg: &UnigramConfig) -> CoreResult<UnigramResult> {
    if cfg.vocab_size == 0 {
        return Err(CoreError::Config(
            "vocab_size leaves no room for pieces".into(),
        ));
    }
    if !(0.0 < cfg.shrinking_factor && cfg.shrinking_factor < 1.0) {
        return Err(CoreError::Config(format!(
            "shrinking_factor must be in (0, 1), got {}",
            cfg.shrinking_factor
        )));
    }
    // TOKENPACT_TRACE=1 prints phase timings to stderr (benchmark tuning only).
    let trace = std::env::var_os("TOKENPACT_TRACE").is_some();
    let clock = std::time::Instant::now();
    let note = |what: &str, n: usize| {
        if trace {
            // Peak RSS so far (Linux), to see which phase sets the peak.
            let peak = std::fs::read_to_string("/proc/self/status")
                .ok()
                .and_then(|s| {
                    s.lines()
                        .find(|l| l.starts_with("VmHWM"))
                        .map(str::to_owned)
                })
                .unwrap_or_default();
            let t = clock.elapsed().as_secs_f64();
            eprintln!("unigram {t:>8.2}s {what} {n} {peak}");
        }
    };
    let words = Words {
        chars: words.par_iter().map(|(w, _)| w.chars().collect()).collect(),
        freq: words.iter().map(|(_, f)| *f).collect(),
    };
    note("words", words.chars.len());
    let (chars, keep) = required_chars(&words, cfg.character_coverage);
    note("required chars", keep);
    let allowed: FxHashSet<char> = chars[..keep].iter().map(|x| x.0).collect();
    let mut seeds: Vec<(String, u64)> = chars[..keep]
        .iter()
        .map(|&(c, n)| (c.to_string(), n))
        .collect();
    let limit = cfg.seed_size.saturating_sub(keep);
    let subs = seed_substrings(
        &words,
        &|c| allowed.contains(&c),
        cfg.max_piece_length,
        limit,
        cfg.split_by_script,
    );
    let seed_pieces = keep + subs.len();
    note("seeded", seed_pieces);
    let total: f64 = seeds
        .iter()
        .map(|(_, n)| *n as f64)
        .chain(
            subs.iter()
                .map(|(s, n)| *n as f64 * s.chars().count() as f64),
        )
        .sum();
    let mut required = vec![true; keep];
    let mut logp: Vec<f64> = seeds
        .iter()
        .map(|(_, n)| (*n as f64).ln() - total.ln())
        .collect();
    for (s, n) in &subs {
        logp.push((*n as f64 * s.chars().count() as f64).ln() - total.ln());
        required.push(false);
    }
    seeds.extend(subs);
    let mut st = State {
        pieces: seeds.into_iter().map(|(s, _)| s).collect(),
        logp,
        required,
    };
    let desired = ((cfg.vocab_size as f64 * EXTRA_RATIO) as usize).max(cfg.vocab_size);
    let mut em_trace = Vec::new();
    let mut rounds = 0;
    loop {
        let trie = st.trie();
        note("trie", st.pieces.len());
        for _ in 0..cfg.em_sub_iterations.max(1) {
            let (expected, ll) = e_step(&words, &st, &trie);
            em_trace.push((rounds, ll));
            m_step(&mut st, &expected, cfg.m_step);
            note("em", live(&st));
        }
        let size = live(&st);
        if size <= desired {
            break;
        }
        let target = ((size as f64 * cfg.shrinking_factor) as usize).max(desired);
        let before = size;
        // Compact first: after the first round most seeds are dead, and pruning walks
        // every live piece and the whole corpus with this trie.
        drop(trie);
        st = compact(st);
        let trie = st.trie();
        note("trie", st.pieces.len());
        st = prune(&words, st, &trie, target);
        note("pruned", st.pieces.len());
        rounds += 1;
        if st.pieces.len() == before {
            break; // nothing removable is left
        }
    }
    let mut order: Vec<usize> = (0..st.pieces.len())
        .filter(|&i| st.logp[i] != f64::NEG_INFINITY)
        .collect();
    order.sort_by(|&a, &b| {
        (!st.required[a])
            .cmp(&!st.required[b])
            .then(st.logp[b].total_cmp(&st.logp[a]))
            .then(st.pieces[a].cmp(&st.pieces[b]))
    });
    let take = cfg.vocab_size.max(keep);
    let stop_reason = if order.len() >= cfg.vocab_size {
        "vocab_size_reached"
    } else {
        "candidates_exhausted"
    };
    order.truncate(take);
    let mut pieces: Vec<(String, f64)> = order
        .into_iter()
        .map(|i| (st.pieces[i].clone(), st.logp[i]))
        .collect();
    pieces.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(UnigramResult {
        pieces,
        required_chars: keep,
        dropped_chars: chars.len() - keep,
        seed_pieces,
        rounds,
        em_trace,
        stop_reason,
    })
}
