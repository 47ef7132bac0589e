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
    pub unk_id: u32,
    /// ID of `<0x00>`; the 256 byte pieces are consecutive.
    pub byte_base: Option<u32>,
    trie: Trie,
    unk_logp: f64,
}

impl UnigramLattice {
    pub fn new(
        pieces: Vec<String>,
        logp: Vec<f64>,
        unk_id: u32,
        byte_base: Option<u32>,
    ) -> UnigramLattice {
        let scoring = |i: usize| logp[i] != f64::NEG_INFINITY;
        let trie = Trie::build(
            pieces
                .iter()
                .enumerate()
                .filter(|&(i, _)| scoring(i))
                .map(|(i, p)| (p.as_str(), i as u32)),
        );
        let min = logp
            .iter()
            .copied()
            .filter(|x| x.is_finite())
            .fold(0.0f64, f64::min);
        UnigramLattice {
            pieces,
            logp,
            unk_id,
            byte_base,
            trie,
            // SentencePiece's convention: unknown costs 10 nats more than the worst piece.
            unk_logp: min - 10.0,
        }
    }

    fn lattice(&self, chars: &[char], edges: &mut Vec<Edge>) {
        build_edges(&self.trie, &self.logp, self.unk_logp, chars, None, edges);
    }

    /// IDs for an unknown character: its UTF-8 bytes with byte fallback, else `unk_id`.
    fn push_unknown(&self, c: char, out: &mut Vec<u32>) {
        match self.byte_base {
            Some(base) => {
                let mut buf = [0u8; 4];
                for &b in c.encode_utf8(&mut buf).as_bytes() {
                    out.push(base + b as u32);
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

    /// Splits `text` into metaspace words and calls `f` with each word's characters.
    fn for_words(&self, text: &str, mut f: impl FnMut(&[char])) {
        let mut norm = String::new();
        metaspace_into(text, &mut norm);
        let chars: Vec<char> = norm.chars().collect();
        let mut start = 0;
        for i in 1..=chars.len() {
            if i == chars.len() || chars[i] == METASPACE {
                f(&chars[start..i]);
                start = i;
            }
        }
    }

    /// Viterbi segmentation of every word.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        let mut edges = Vec::new();
        self.for_words(text, |w| {
            self.lattice(w, &mut edges);
            let (path, _) = lattice::viterbi(&edges, w.len());
            self.emit(w, &edges, &path, &mut out);
        });
        out
    }

    /// Sum over words of log P(word) (the exact marginal, unknown edges included).
    pub fn log_likelihood(&self, text: &str) -> f64 {
        let mut edges = Vec::new();
        let mut total = 0.0;
        self.for_words(text, |w| {
            self.lattice(w, &mut edges);
            total += lattice::forward(&edges, w.len(), 1.0)[w.len()];
        });
        total
    }

    /// The `n` best segmentations of the whole text with their log scores.
    pub fn nbest(&self, text: &str, n: usize) -> Vec<(Vec<u32>, f64)> {
        let mut norm = String::new();
        metaspace_into(text, &mut norm);
        let chars: Vec<char> = norm.chars().collect();
        let mut edges = Vec::new();
        self.lattice(&chars, &mut edges);
        lattice::nbest(&edges, chars.len(), n)
            .into_iter()
            .map(|(path, score)| {
                let mut ids = Vec::new();
                self.emit(&chars, &edges, &path, &mut ids);
                (ids, score)
            })
            .collect()
    }

    /// One segmentation drawn from P(z)^alpha, keyed by (seed, epoch, sample, view).
    /// Words are sampled in text order; draws are numbered across the whole text.
    pub fn sample(&self, text: &str, alpha: f64, key: (u64, u64, u64, u64)) -> Vec<u32> {
        let stream = rng::stream_key(key.0, key.1, key.2, key.3);
        let mut out = Vec::new();
        let mut edges = Vec::new();
        let mut occurrence = 0u64;
        self.for_words(text, |w| {
            self.lattice(w, &mut edges);
            let (path, next) = lattice::sample(&edges, w.len(), alpha, stream, occurrence);
            occurrence = next;
            self.emit(w, &edges, &path, &mut out);
        });
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
