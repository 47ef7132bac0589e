//! Unigram segmentation: Viterbi over the lattice of vocabulary pieces, exactly as
//! SentencePiece's `EncodeOptimized` computes it (in float, with its tie order).

use super::normalizer::one_char_len;
use super::trie::PieceTrie;
use super::{Piece, PieceType};

/// Penalty below the lowest piece score given to an unknown character.
const UNK_PENALTY: f32 = 10.0;

pub struct Unigram {
    min_score: f32,
    max_score: f32,
}

#[derive(Clone, Copy)]
struct Best {
    score: f32,
    start: i32,
    id: u32,
}

impl Unigram {
    pub fn new(types: &[PieceType], scores: &[f32]) -> Unigram {
        // SentencePiece starts from FLT_MAX / FLT_MIN (the smallest positive float, not
        // the most negative one), over NORMAL pieces only.
        let (mut min_score, mut max_score) = (f32::MAX, f32::MIN_POSITIVE);
        for (t, &s) in types.iter().zip(scores) {
            if *t == PieceType::Normal {
                min_score = min_score.min(s);
                max_score = max_score.max(s);
            }
        }
        Unigram {
            min_score,
            max_score,
        }
    }

    /// Best segmentation of `s` (normalized bytes) as pieces (start, end, id); unknown
    /// characters come out as single-character pieces with `unk_id`.
    pub fn encode(
        &self,
        trie: &PieceTrie,
        types: &[PieceType],
        scores: &[f32],
        unk_id: u32,
        s: &[u8],
        out: &mut Vec<Piece>,
    ) {
        let n = s.len();
        if n == 0 {
            return;
        }
        let unk_score = self.min_score - UNK_PENALTY;
        let mut best = vec![
            Best {
                score: 0.0,
                start: -1,
                id: 0,
            };
            n + 1
        ];
        let mut start = 0usize;
        while start < n {
            let here = best[start].score;
            let mblen = one_char_len(s[start]).min(n - start);
            let mut has_single = false;
            let mut node = 0usize;
            for (k, &b) in s[start..].iter().enumerate() {
                match trie.step(node, b) {
                    Some(next) => node = next,
                    None => break,
                }
                let id = trie.value(node);
                if id < 0 {
                    continue;
                }
                let kind = types[id as usize];
                if kind == PieceType::Unused {
                    continue;
                }
                let len = k + 1;
                // Float arithmetic throughout, as sentencepiece 0.2.3 computes it: ties
                // between equal-scoring splits are decided by f32 rounding, so a wider
                // type would pick different (equally good) paths.
                let score = if kind == PieceType::UserDefined {
                    (len as f32) * self.max_score - 0.1
                } else {
                    scores[id as usize]
                };
                let cand = score + here;
                let target = &mut best[start + len];
                if target.start == -1 || cand > target.score {
                    *target = Best {
                        score: cand,
                        start: start as i32,
                        id: id as u32,
                    };
                }
                if len == mblen {
                    has_single = true;
                }
            }
            if !has_single {
                let cand = unk_score + here;
                let target = &mut best[start + mblen];
                if target.start == -1 || cand > target.score {
                    *target = Best {
                        score: cand,
                        start: start as i32,
                        id: unk_id,
                    };
                }
            }
            start += mblen;
        }
        let first = out.len();
        let mut end = n;
        while end > 0 {
            let b = best[end];
            let begin = b.start.max(0) as usize;
            out.push((begin as u32, end as u32, b.id));
            if begin >= end {
                break; // unreachable for valid lattices; never loop forever
            }
            end = begin;
        }
        out[first..].reverse();
    }
}
