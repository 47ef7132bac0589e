//! Unigram language-model training: lattice algorithms, seed inventory, trainer, and the
//! lattice of a trained model for what the SentencePiece engine does not offer (exact
//! log-likelihoods, n-best lists, sampling; per metaspace word, optional byte fallback).
//!
//! Trained models are encoded and decoded by the SentencePiece engine
//! (`crate::sentencepiece`) on the `.model` the trainer writes; `UnigramLattice::encode`
//! is the lattice's own Viterbi path, kept for the tests that pin the two together.

pub mod lattice;
pub mod script;
pub mod seed;
pub mod train;

use lattice::{build_edges, Edge, Trie, UNK};

use crate::rng;
use crate::words::{metaspace_into, METASPACE};

pub struct LatticeStats {
    pub log_marginal: f64,
    pub expected: Vec<f64>,
    pub viterbi: Vec<u32>,
    pub nbest: Vec<(Vec<u32>, f64)>,
}

pub struct UnigramLattice {
    pub pieces: Vec<String>,
    /// Log probability per ID; `-inf` for IDs outside the lattice (specials, bytes).
    pub logp: Vec<f64>,
    /// ID of an unknown character without byte fallback (`NO_UNK`: the model has none,
    /// and a sample of a text it cannot cover contains `NO_UNK`; callers refuse it).
    pub unk_id: u32,
    /// ID of `<0xNN>` for every byte when the model falls back to bytes.
    pub bytes: Option<Box<[u32; 256]>>,
    trie: Trie,
    unk_logp: f64,
}

/// `UnigramLattice::unk_id` of a model without an unknown piece.
pub const NO_UNK: u32 = u32::MAX;

/// Where the uniform draws of a sample come from.
pub enum Draws {
    /// The counter-based stream of a `SampleKey` (`rng::stream_key`): one draw per step
    /// of forward-filtering backward-sampling, from the end of each segment backwards,
    /// numbered across the whole text (the replay contract).
    Counter { stream: u64, occurrence: u64 },
    /// The sequential `lcg64_v1` generator: one draw per segment, read as an exact
    /// inverse CDF over the segment's segmentations in lexicographic ID-path order.
    Lcg64(rng::Lcg64),
}

impl Draws {
    fn next(&mut self) -> f64 {
        match self {
            Draws::Counter { stream, occurrence } => {
                let u = rng::uniform(*stream, *occurrence);
                *occurrence += 1;
                u
            }
            Draws::Lcg64(g) => g.uniform(),
        }
    }
}

impl UnigramLattice {
    pub fn new(
        pieces: Vec<String>,
        logp: Vec<f64>,
        unk_id: u32,
        byte_base: Option<u32>,
    ) -> UnigramLattice {
        let min = logp
            .iter()
            .copied()
            .filter(|x| x.is_finite())
            .fold(0.0f64, f64::min);
        let bytes = byte_base.map(|base| Box::new(std::array::from_fn(|b| base + b as u32)));
        // SentencePiece's convention: unknown costs 10 nats more than the worst piece.
        UnigramLattice::with_unknown(pieces, logp, unk_id, bytes, min - 10.0)
    }

    /// A lattice whose unknown-character edge scores `unk_logp` (each engine states its
    /// own rule) and whose byte pieces are `bytes` (any IDs, not necessarily adjacent).
    pub fn with_unknown(
        pieces: Vec<String>,
        logp: Vec<f64>,
        unk_id: u32,
        bytes: Option<Box<[u32; 256]>>,
        unk_logp: f64,
    ) -> UnigramLattice {
        let scoring = |i: usize| logp[i] != f64::NEG_INFINITY;
        let trie = Trie::build(
            pieces
                .iter()
                .enumerate()
                .filter(|&(i, _)| scoring(i))
                .map(|(i, p)| (p.as_str(), i as u32)),
        );
        UnigramLattice {
            pieces,
            logp,
            unk_id,
            bytes,
            trie,
            unk_logp,
        }
    }

    fn lattice(&self, chars: &[char], edges: &mut Vec<Edge>) {
        build_edges(&self.trie, &self.logp, self.unk_logp, chars, None, edges);
    }

    /// IDs for an unknown character: its UTF-8 bytes with byte fallback, else `unk_id`.
    fn push_unknown(&self, c: char, out: &mut Vec<u32>) {
        match &self.bytes {
            Some(table) => {
                let mut buf = [0u8; 4];
                for &b in c.encode_utf8(&mut buf).as_bytes() {
                    out.push(table[b as usize]);
                }
            }
            None => {
                // Consecutive unknown characters collapse into one unknown ID.
                if out.last() != Some(&self.unk_id) {
                    out.push(self.unk_id);
                }
            }
        }
    }

    fn emit(&self, chars: &[char], edges: &[Edge], path: &[usize], out: &mut Vec<u32>) {
        for &k in path {
            let e = edges[k];
            if e.id == UNK {
                self.push_unknown(chars[e.start as usize], out);
            } else {
                out.push(e.id);
            }
        }
    }

    /// The metaspace words of `text` (spaces written as `▁`, one `▁` prepended), each
    /// starting at a `▁`: the segments the trainer's lattice methods work on.
    pub fn metaspace_words(text: &str) -> Vec<Vec<char>> {
        let mut norm = String::new();
        metaspace_into(text, &mut norm);
        let chars: Vec<char> = norm.chars().collect();
        Self::split_words(&chars)
    }

    /// `chars` cut before every `▁` (after the first character).
    pub fn split_words(chars: &[char]) -> Vec<Vec<char>> {
        let mut words = Vec::new();
        let mut start = 0;
        for i in 1..=chars.len() {
            if i == chars.len() || chars[i] == METASPACE {
                words.push(chars[start..i].to_vec());
                start = i;
            }
        }
        words
    }

    /// Viterbi segmentation of every word.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        let mut edges = Vec::new();
        for w in Self::metaspace_words(text) {
            self.lattice(&w, &mut edges);
            let (path, _) = lattice::viterbi(&edges, w.len());
            self.emit(&w, &edges, &path, &mut out);
        }
        out
    }

    /// Sum over words of log P(word) (the exact marginal, unknown edges included).
    pub fn log_likelihood(&self, text: &str) -> f64 {
        self.log_likelihood_segments(&Self::metaspace_words(text))
    }

    /// Sum over `segments` (independent lattices) of log P(segment).
    pub fn log_likelihood_segments(&self, segments: &[Vec<char>]) -> f64 {
        let mut edges = Vec::new();
        let mut total = 0.0;
        for w in segments {
            self.lattice(w, &mut edges);
            total += lattice::forward(&edges, w.len(), 1.0)[w.len()];
        }
        total
    }

    /// The `n` best segmentations of the whole text with their log scores.
    pub fn nbest(&self, text: &str, n: usize) -> Vec<(Vec<u32>, f64)> {
        let mut norm = String::new();
        metaspace_into(text, &mut norm);
        self.nbest_segments(&[norm.chars().collect()], n)
    }

    /// The `n` best segmentations of the concatenation of `segments` (independent
    /// lattices: the best combinations of each segment's `n` best), best first; among
    /// equal scores the combination found first wins (segment by segment, rank order).
    pub fn nbest_segments(&self, segments: &[Vec<char>], n: usize) -> Vec<(Vec<u32>, f64)> {
        if n == 0 {
            return Vec::new();
        }
        let mut best: Vec<(Vec<u32>, f64)> = vec![(Vec::new(), 0.0)];
        let mut edges = Vec::new();
        for chars in segments {
            self.lattice(chars, &mut edges);
            let paths: Vec<(Vec<u32>, f64)> = lattice::nbest(&edges, chars.len(), n)
                .into_iter()
                .map(|(path, score)| {
                    let mut ids = Vec::new();
                    self.emit(chars, &edges, &path, &mut ids);
                    (ids, score)
                })
                .collect();
            if chars.is_empty() {
                continue;
            }
            let mut combined: Vec<(usize, usize, f64)> = Vec::new();
            for (i, (_, a)) in best.iter().enumerate() {
                for (j, (_, b)) in paths.iter().enumerate() {
                    combined.push((i, j, a + b));
                }
            }
            combined.sort_by(|x, y| y.2.total_cmp(&x.2).then(x.0.cmp(&y.0)).then(x.1.cmp(&y.1)));
            combined.truncate(n);
            best = combined
                .into_iter()
                .map(|(i, j, s)| {
                    let mut ids = best[i].0.clone();
                    ids.extend_from_slice(&paths[j].0);
                    (ids, s)
                })
                .collect();
        }
        best
    }

    /// One segmentation drawn from P(z)^alpha, keyed by (seed, epoch, sample, view).
    /// Words are sampled in text order; draws are numbered across the whole text.
    pub fn sample(&self, text: &str, alpha: f64, key: (u64, u64, u64, u64)) -> Vec<u32> {
        let stream = rng::stream_key(key.0, key.1, key.2, key.3);
        let mut draws = Draws::Counter {
            stream,
            occurrence: 0,
        };
        self.sample_segments(&Self::metaspace_words(text), alpha, &mut draws)
    }

    /// One segmentation of every segment, in order, drawn from P(z)^alpha with `draws`.
    pub fn sample_segments(
        &self,
        segments: &[Vec<char>],
        alpha: f64,
        draws: &mut Draws,
    ) -> Vec<u32> {
        let mut out = Vec::new();
        let mut edges = Vec::new();
        for w in segments {
            self.lattice(w, &mut edges);
            let path = match draws {
                Draws::Counter { stream, occurrence } => {
                    let (path, next) =
                        lattice::sample(&edges, w.len(), alpha, *stream, *occurrence);
                    *occurrence = next;
                    path
                }
                Draws::Lcg64(_) => {
                    if w.is_empty() {
                        continue;
                    }
                    let u = draws.next();
                    lattice::sample_lexicographic(&edges, w.len(), alpha, u)
                }
            };
            self.emit(w, &edges, &path, &mut out);
        }
        out
    }

    /// Exact lattice quantities of `text` taken as one raw string (no metaspace): log
    /// P(x), the expected count of every ID, the Viterbi IDs and the `n` best paths.
    /// Used by the tests that pin the engine to the reference.
    pub fn lattice_stats(&self, text: &str, n: usize) -> LatticeStats {
        let chars: Vec<char> = text.chars().collect();
        let mut edges = Vec::new();
        self.lattice(&chars, &mut edges);
        let mut expected = vec![0.0; self.pieces.len()];
        let log_marginal = lattice::accumulate_posteriors(&edges, chars.len(), 1.0, &mut expected);
        let ids = |path: &[usize]| path.iter().map(|&k| edges[k].id).collect::<Vec<u32>>();
        let (best, _) = lattice::viterbi(&edges, chars.len());
        let nbest = lattice::nbest(&edges, chars.len(), n)
            .into_iter()
            .map(|(p, s)| (ids(&p), s))
            .collect();
        LatticeStats {
            log_marginal,
            expected,
            viterbi: ids(&best),
            nbest,
        }
    }

    /// A sample of `text` taken as one raw string (no metaspace); see `sample`.
    pub fn sample_raw(&self, text: &str, alpha: f64, key: (u64, u64, u64, u64)) -> Vec<u32> {
        let chars: Vec<char> = text.chars().collect();
        let mut edges = Vec::new();
        self.lattice(&chars, &mut edges);
        let stream = rng::stream_key(key.0, key.1, key.2, key.3);
        let (path, _) = lattice::sample(&edges, chars.len(), alpha, stream, 0);
        path.iter().map(|&k| edges[k].id).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use train::{train, MStep, UnigramConfig};

    #[test]
    fn trains_and_round_trips() {
        let words = vec![
            ("\u{2581}low".to_string(), 5),
            ("\u{2581}lower".to_string(), 2),
            ("\u{2581}newest".to_string(), 6),
            ("\u{2581}widest".to_string(), 3),
        ];
        let cfg = UnigramConfig {
            vocab_size: 20,
            max_piece_length: 8,
            seed_size: 1000,
            character_coverage: 1.0,
            shrinking_factor: 0.75,
            em_sub_iterations: 2,
            m_step: MStep::Simple,
            split_by_script: true,
        };
        let r = train(words, &cfg).unwrap();
        assert!(r.pieces.len() <= 20);
        let mut pieces = vec!["<unk>".to_string()];
        let mut logp = vec![f64::NEG_INFINITY];
        for (p, s) in r.pieces {
            pieces.push(p);
            logp.push(s);
        }
        let m = UnigramLattice::new(pieces, logp, 0, None);
        let ids = m.encode("low newest");
        let text: String = ids.iter().map(|&i| m.pieces[i as usize].as_str()).collect();
        assert_eq!(text, "\u{2581}low\u{2581}newest");
    }
}
