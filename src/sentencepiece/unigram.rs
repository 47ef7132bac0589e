//! Unigram segmentation: Viterbi over the lattice of vocabulary pieces, exactly as
//! SentencePiece's `EncodeOptimized` computes it (in float, with its tie order).

use super::normalizer::one_char_len;
use super::trie::PieceTrie;
use super::{Piece, PieceType};

/// Penalty below the lowest piece score given to an unknown character.
const UNK_PENALTY: f32 = 10.0;
/// |path score| beyond which sentencepiece re-centres the Viterbi scores.
const SCORE_RESET: f32 = 100_000.0;
/// `Best::id` of an unknown character (other entries hold the piece's trie node).
const UNK_NODE: u32 = u32::MAX;

pub struct Unigram {
    min_score: f32,
    /// The pieces Viterbi may use (UNUSED ones left out), each with its effective score.
    trie: PieceTrie,
    /// Bytes a lattice edge can span at most (the longest piece, or a 4-byte character).
    reach: usize,
}

#[derive(Clone, Copy)]
pub struct Best {
    score: f32,
    start: i32,
    /// The trie node of the piece ending here, or UNK_NODE.
    id: u32,
}

impl Unigram {
    pub fn new(pieces: &[Vec<u8>], types: &[PieceType], scores: &[f32]) -> Unigram {
        // SentencePiece starts from FLT_MAX / FLT_MIN (the smallest positive float, not
        // the most negative one), over NORMAL pieces only.
        let (mut min_score, mut max_score) = (f32::MAX, f32::MIN_POSITIVE);
        for (t, &s) in types.iter().zip(scores) {
            if *t == PieceType::Normal {
                min_score = min_score.min(s);
                max_score = max_score.max(s);
            }
        }
        let mut keys: Vec<(&[u8], i32, f32)> = Vec::new();
        for (id, (piece, t)) in pieces.iter().zip(types).enumerate() {
            let score = match t {
                PieceType::Normal => scores[id],
                // The bonus that makes a user-defined piece always win, in float.
                PieceType::UserDefined => (piece.len() as f32) * max_score - 0.1,
                _ => continue,
            };
            keys.push((piece, id as i32, score));
        }
        let reach = keys.iter().map(|k| k.0.len()).max().unwrap_or(0).max(4);
        Unigram {
            min_score,
            reach,
            trie: PieceTrie::with_scores(&keys),
        }
    }

    /// Best segmentation of `s` (normalized bytes) as pieces (start, end, id); unknown
    /// characters come out as single-character pieces with `unk_id`.
    pub fn encode(&self, unk_id: u32, s: &[u8], best: &mut Vec<Best>, out: &mut Vec<Piece>) {
        let n = s.len();
        if n == 0 {
            return;
        }
        let unk_score = self.min_score - UNK_PENALTY;
        let trie = &self.trie;
        best.clear();
        best.resize(
            n + 1,
            Best {
                score: 0.0,
                start: -1,
                id: 0,
            },
        );
        let mut start = 0usize;
        while start < n {
            let mut here = best[start].score;
            if !(-SCORE_RESET..=SCORE_RESET).contains(&here) {
                // sentencepiece re-centres long paths so float precision does not erode
                // tie-breaking: every reached node from here on is shifted by the same
                // offset. Reproduced exactly, since it decides ties in long documents.
                // Nodes reached so far end before start + the longest piece (or an
                // unknown character), which bounds sentencepiece's frontier.
                let offset = here;
                let last = (start + self.reach).min(n);
                best[start].score -= offset;
                for b in &mut best[start + 1..=last] {
                    if b.start != -1 {
                        b.score -= offset;
                    }
                }
                here = 0.0;
            }
            let mblen = one_char_len(s[start]).min(n - start);
            let mut has_single = false;
            let mut unit = trie.root();
            // best[start + len] for the piece of `len` bytes: zipping the bytes with the
            // targets keeps bounds checks out of the hot loop (a piece never ends past n).
            let targets = &mut best[start + 1..=n];
            for (k, (&b, target)) in s[start..n].iter().zip(targets).enumerate() {
                let Some((node, u)) = trie.child(unit, b) else {
                    break;
                };
                unit = u;
                if let Some(score) = trie.unit_score(node, u) {
                    let cand = score + here;
                    // The trie node stands for the piece: its ID is read only for the
                    // nodes on the final path, not for every winning candidate.
                    if target.start == -1 || cand > target.score {
                        *target = Best {
                            score: cand,
                            start: start as i32,
                            id: node as u32,
                        };
                    }
                    has_single |= k + 1 == mblen;
                }
            }
            if !has_single {
                update(&mut best[start + mblen], unk_score + here, start, UNK_NODE);
            }
            start += mblen;
        }
        let first = out.len();
        let mut end = n;
        while end > 0 {
            let b = best[end];
            let begin = b.start.max(0) as usize;
            let id = if b.id == UNK_NODE {
                unk_id
            } else {
                trie.value(b.id as usize) as u32
            };
            out.push((begin as u32, end as u32, id));
            if begin >= end {
                break; // unreachable for valid lattices; never loop forever
            }
            end = begin;
        }
        out[first..].reverse();
    }
}

/// SentencePiece's update rule. Float arithmetic throughout, as sentencepiece 0.2.3
/// computes it: ties between equal-scoring splits are decided by f32 rounding, so a
/// wider type would pick different (equally good) paths; the first candidate wins ties.
#[inline(always)]
fn update(target: &mut Best, cand: f32, start: usize, id: u32) {
    if target.start == -1 || cand > target.score {
        *target = Best {
            score: cand,
            start: start as i32,
            id,
        };
    }
}
