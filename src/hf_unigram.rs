//! Hugging Face's `Unigram` model (`tokenizer.json` `"model": {"type": "Unigram"}`).
//!
//! The semantics are those of `tokenizers` (`Unigram::encode_optimized` and
//! `Model::tokenize`), which differ from SentencePiece's own engine
//! (`crate::sentencepiece::unigram`): scores are f64, every piece takes part (no piece
//! types, no user-defined bonus), the unknown-character score is `min_score - 10` over
//! *all* pieces, consecutive unknown characters are fused into one token, and a fused
//! unknown string that spells a piece (or, with `byte_fallback`, whose bytes all have
//! `<0xXX>` pieces) becomes that piece. Ties keep the first candidate: shorter pieces
//! before longer ones at a start position, the unknown edge last.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::{CoreError, CoreResult};
use crate::sentencepiece::trie::PieceTrie;
use crate::unigram::{UnigramLattice, NO_UNK};
use std::sync::OnceLock;

/// Score below the lowest piece score given to an unknown character (`K_UNK_PENALTY`).
const UNK_PENALTY: f64 = 10.0;

pub struct HfUnigram {
    /// Piece of every ID (UTF-8).
    pub vocab: Vec<Vec<u8>>,
    scores: Vec<f64>,
    /// Every non-empty piece, valued by its ID.
    trie: PieceTrie,
    min_score: f64,
    unk_id: Option<u32>,
    /// IDs of `<0x00>` ... `<0xFF>` when `byte_fallback` is on (None: piece missing).
    bytes: Option<Box<[Option<u32>; 256]>>,
    /// IDs `forbid` took out of the lattice.
    forbidden: FxHashSet<u32>,
    /// The full lattice for n-best lists, samples and likelihoods (`lattice`).
    lattice: OnceLock<UnigramLattice>,
}

#[derive(Clone, Copy)]
struct Best {
    score: f64,
    /// Start of the best path's last token (`usize::MAX`: not reached yet).
    start: usize,
    id: u32,
}

impl HfUnigram {
    /// Whether uncovered characters become `<0xXX>` byte pieces.
    pub fn byte_fallback(&self) -> bool {
        self.bytes.is_some()
    }

    /// `vocab[id]` and `scores[id]` from the file's `[[piece, score], ...]`.
    pub fn new(
        vocab: Vec<Vec<u8>>,
        scores: Vec<f64>,
        unk_id: Option<u32>,
        byte_fallback: bool,
    ) -> CoreResult<HfUnigram> {
        if vocab.len() != scores.len() {
            return Err(CoreError::Artifact(format!(
                "model.vocab: {} pieces but {} scores; give every piece a score",
                vocab.len(),
                scores.len()
            )));
        }
        if let Some(unk) = unk_id {
            if unk as usize >= vocab.len() {
                return Err(CoreError::Artifact(format!(
                    "model.unk_id: {unk} is not an ID of the vocabulary (0..{}); point it at \
                     the unknown piece",
                    vocab.len()
                )));
            }
        }
        let mut ids: FxHashMap<&[u8], u32> = FxHashMap::default();
        for (id, piece) in vocab.iter().enumerate() {
            if std::str::from_utf8(piece).is_err() {
                return Err(CoreError::Artifact(format!(
                    "model.vocab[{id}]: the piece is not UTF-8"
                )));
            }
            if let Some(first) = ids.insert(piece, id as u32) {
                return Err(CoreError::Artifact(format!(
                    "model.vocab: piece {:?} appears twice (IDs {first} and {id}); give each \
                     piece one entry",
                    String::from_utf8_lossy(piece)
                )));
            }
        }
        let min_score = scores.iter().copied().fold(f64::INFINITY, f64::min);
        let keys: Vec<(&[u8], i32)> = vocab
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.is_empty())
            .map(|(id, p)| (p.as_slice(), id as i32))
            .collect();
        let trie = PieceTrie::new(&keys);
        let bytes = byte_fallback.then(|| {
            let mut table = Box::new([None; 256]);
            for (b, slot) in table.iter_mut().enumerate() {
                *slot = ids.get(format!("<0x{b:02X}>").as_bytes()).copied();
            }
            table
        });
        Ok(HfUnigram {
            vocab,
            scores,
            trie,
            min_score,
            unk_id,
            bytes,
            forbidden: FxHashSet::default(),
            lattice: OnceLock::new(),
        })
    }

    /// The model's full lattice over one pre-token: every piece with its score except
    /// the forbidden controls, the unknown character at `min_score - 10`, byte pieces
    /// for uncovered characters when all 256 exist. Its n-best lists, samples and
    /// marginals are over the segmentations `encode_spans` chooses the best of.
    pub fn lattice(&self) -> &UnigramLattice {
        self.lattice.get_or_init(|| {
            let logp = self
                .scores
                .iter()
                .enumerate()
                .map(|(id, &s)| {
                    if self.forbidden.contains(&(id as u32)) || self.vocab[id].is_empty() {
                        f64::NEG_INFINITY
                    } else {
                        s
                    }
                })
                .collect();
            let pieces = self
                .vocab
                .iter()
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .collect();
            let bytes = self.bytes.as_ref().and_then(|table| {
                let mut ids = Box::new([0u32; 256]);
                for (slot, id) in ids.iter_mut().zip(table.iter()) {
                    *slot = (*id)?;
                }
                Some(ids)
            });
            UnigramLattice::with_unknown(
                pieces,
                logp,
                self.unk_id.unwrap_or(NO_UNK),
                bytes,
                self.min_score - UNK_PENALTY,
            )
        })
    }

    /// Makes the IDs in `controls` unreachable from text (`Model::forbid`): they leave
    /// the lattice's trie, as SentencePiece keeps control and unknown pieces out of its
    /// own; scores (and so the unknown penalty) are unchanged.
    pub fn forbid(&mut self, controls: &FxHashSet<u32>) {
        let keys: Vec<(&[u8], i32)> = self
            .vocab
            .iter()
            .enumerate()
            .filter(|(id, p)| !p.is_empty() && !controls.contains(&(*id as u32)))
            .map(|(id, p)| (p.as_slice(), id as i32))
            .collect();
        self.trie = PieceTrie::new(&keys);
        self.forbidden.extend(controls.iter().copied());
    }

    /// IDs of one pre-token (UTF-8 bytes) with each token's byte span inside it.
    pub fn encode_spans(
        &self,
        piece: &[u8],
        ids: &mut Vec<u32>,
        spans: &mut Vec<(u32, u32)>,
    ) -> CoreResult<()> {
        let n = piece.len();
        if n == 0 {
            return Ok(());
        }
        let unk_score = self.min_score - UNK_PENALTY;
        let mut best = vec![
            Best {
                score: 0.0,
                start: usize::MAX,
                id: 0,
            };
            n + 1
        ];
        let mut start = 0usize;
        while start < n {
            let here = best[start].score;
            let mblen = utf8_len(piece[start]).min(n - start);
            let mut has_single = false;
            let mut node = 0usize;
            for (k, &b) in piece[start..].iter().enumerate() {
                match self.trie.step(node, b) {
                    Some(next) => node = next,
                    None => break,
                }
                let id = self.trie.value(node);
                if id < 0 {
                    continue;
                }
                let len = k + 1;
                let cand = self.scores[id as usize] + here;
                let target = &mut best[start + len];
                if target.start == usize::MAX || cand > target.score {
                    *target = Best {
                        score: cand,
                        start,
                        id: id as u32,
                    };
                }
                has_single |= len == mblen;
            }
            if !has_single {
                let target = &mut best[start + mblen];
                let cand = unk_score + here;
                if target.start == usize::MAX || cand > target.score {
                    let Some(unk) = self.unk_id else {
                        return Err(CoreError::InvalidInput(format!(
                            "no piece covers the character at byte {start} of {:?} and the \
                             Unigram model has no unk_id",
                            String::from_utf8_lossy(piece)
                        )));
                    };
                    *target = Best {
                        score: cand,
                        start,
                        id: unk,
                    };
                }
            }
            start += mblen;
        }
        // Backtrack: (start, end, Some(id)) for a piece, None for a fused unknown run.
        let mut path: Vec<(usize, usize, Option<u32>)> = Vec::new();
        let mut end = n;
        while end > 0 {
            let node = best[end];
            let begin = node.start.min(end - 1);
            let fuse = Some(node.id) == self.unk_id;
            match path.last_mut() {
                Some(last) if fuse && last.2.is_none() => last.0 = begin,
                _ => path.push((begin, end, if fuse { None } else { Some(node.id) })),
            }
            end = begin;
        }
        for &(a, b, id) in path.iter().rev() {
            let span = (a as u32, b as u32);
            let id = match id {
                Some(id) => id,
                None => match self.fused(&piece[a..b], ids, spans, span) {
                    Some(id) => id,
                    None => continue,
                },
            };
            ids.push(id);
            spans.push(span);
        }
        Ok(())
    }

    /// The ID of a fused unknown run: the piece it spells, else (with byte fallback, when
    /// every byte has a piece) its byte pieces, pushed here (returns None), else `unk`.
    fn fused(
        &self,
        text: &[u8],
        ids: &mut Vec<u32>,
        spans: &mut Vec<(u32, u32)>,
        span: (u32, u32),
    ) -> Option<u32> {
        if let Some(id) = self.trie.get(text) {
            return Some(id as u32);
        }
        if let Some(table) = &self.bytes {
            if text.iter().all(|&b| table[b as usize].is_some()) {
                for &b in text {
                    ids.push(table[b as usize].unwrap_or(0));
                    // HF gives every byte token the span of the whole run.
                    spans.push(span);
                }
                return None;
            }
        }
        self.unk_id
    }
}

#[inline]
fn utf8_len(b: u8) -> usize {
    match b {
        0x00..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xFF => 4,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(pieces: &[(&str, f64)], unk: Option<u32>, fallback: bool) -> HfUnigram {
        HfUnigram::new(
            pieces.iter().map(|p| p.0.as_bytes().to_vec()).collect(),
            pieces.iter().map(|p| p.1).collect(),
            unk,
            fallback,
        )
        .unwrap()
    }

    fn encode(m: &HfUnigram, s: &str) -> (Vec<u32>, Vec<(u32, u32)>) {
        let (mut ids, mut spans) = (Vec::new(), Vec::new());
        m.encode_spans(s.as_bytes(), &mut ids, &mut spans).unwrap();
        (ids, spans)
    }

    #[test]
    fn viterbi_picks_the_best_path_and_fuses_unknowns() {
        // The example of tokenizers' `Unigram::encode` documentation.
        let m = model(
            &[
                ("<unk>", 0.0),
                ("a", 0.0),
                ("b", 0.0),
                ("c", 0.0),
                ("d", 0.0),
                ("cd", 1.0),
                ("ab", 2.0),
                ("abc", 5.0),
                ("abcd", 10.0),
            ],
            Some(0),
            false,
        );
        let (ids, spans) = encode(&m, "abcdacdxx");
        assert_eq!(ids, vec![8, 1, 5, 0]);
        assert_eq!(spans, vec![(0, 4), (4, 5), (5, 7), (7, 9)]);
    }

    #[test]
    fn byte_fallback_needs_every_byte() {
        let m = model(
            &[
                ("<unk>", 0.0),
                ("a", -1.0),
                ("<0xC3>", -1.0),
                ("<0xA9>", -1.0),
            ],
            Some(0),
            true,
        );
        assert_eq!(encode(&m, "é").0, vec![2, 3]);
        assert_eq!(encode(&m, "ü").0, vec![0]);
    }

    #[test]
    fn bad_vocabularies_are_artifact_errors() {
        let dup = HfUnigram::new(
            vec![b"a".to_vec(), b"a".to_vec()],
            vec![0.0, 0.0],
            None,
            false,
        );
        assert!(matches!(dup, Err(CoreError::Artifact(_))));
        let unk = HfUnigram::new(vec![b"a".to_vec()], vec![0.0], Some(1), false);
        assert!(matches!(unk, Err(CoreError::Artifact(_))));
        let m = model(&[("a", 0.0)], None, false);
        let mut ids = Vec::new();
        assert!(m.encode_spans(b"b", &mut ids, &mut Vec::new()).is_err());
    }
}
