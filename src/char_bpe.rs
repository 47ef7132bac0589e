//! Character BPE with an end-of-word marker (Sennrich et al.; seed 000 0x06 "Where
//! merges are allowed"): every word is its characters plus the marker symbol, so no
//! merge crosses a word. Training uses the shared pair-merge engine with count scores.

use rustc_hash::FxHashMap;

use crate::pair_merge::{MergeConfig, MergeEngine, Scoring, Ties};

pub fn engine(
    words: &[(String, u64)],
    eow: &str,
    max_merges: usize,
    min_frequency: u64,
    ties: Ties,
) -> MergeEngine {
    let units = words
        .iter()
        .map(|(w, f)| {
            let mut s: Vec<String> = w.chars().map(String::from).collect();
            s.push(eow.to_string());
            (s, *f)
        })
        .collect();
    MergeEngine::new(
        units,
        MergeConfig {
            max_new: max_merges,
            count_merges: true,
            min_frequency,
            scoring: Scoring::Count,
            ties,
            strip_prefix: None,
        },
    )
}

pub struct CharBpeModel {
    pub pieces: Vec<String>,
    ids: FxHashMap<String, u32>,
    ranks: FxHashMap<(u32, u32), (u32, u32)>,
    pub unk_id: u32,
    pub eow: String,
}

impl CharBpeModel {
    /// `merges`: (left, right, result) IDs in rank order.
    pub fn new(pieces: Vec<String>, merges: &[(u32, u32, u32)], unk_id: u32, eow: String) -> Self {
        let ids = pieces
            .iter()
            .enumerate()
            .map(|(i, s)| (s.clone(), i as u32))
            .collect();
        let ranks = merges
            .iter()
            .enumerate()
            .map(|(r, &(a, b, c))| ((a, b), (r as u32, c)))
            .collect();
        CharBpeModel {
            pieces,
            ids,
            ranks,
            unk_id,
            eow,
        }
    }

    /// Repeatedly merges every occurrence of the lowest-ranked pair present, which is the
    /// same as applying the merges in rank order (a pair containing a piece always ranks
    /// after the merge that created it). Unknown characters become `unk_id`.
    pub fn encode_word(&self, word: &str, out: &mut Vec<u32>) {
        let mut buf = [0u8; 4];
        let mut syms: Vec<u32> = word
            .chars()
            .map(|c| {
                *self
                    .ids
                    .get(c.encode_utf8(&mut buf) as &str)
                    .unwrap_or(&self.unk_id)
            })
            .collect();
        syms.push(*self.ids.get(self.eow.as_str()).unwrap_or(&self.unk_id));
        loop {
            let best = syms
                .windows(2)
                .filter_map(|x| {
                    self.ranks
                        .get(&(x[0], x[1]))
                        .map(|&(r, c)| (r, x[0], x[1], c))
                })
                .min();
            let Some((_, a, b, c)) = best else { break };
            let mut next = Vec::with_capacity(syms.len());
            let mut i = 0;
            while i < syms.len() {
                if i + 1 < syms.len() && syms[i] == a && syms[i + 1] == b {
                    next.push(c);
                    i += 2;
                } else {
                    next.push(syms[i]);
                    i += 1;
                }
            }
            syms = next;
        }
        out.extend(syms);
    }

    /// Concatenates pieces; the marker becomes a word separator; unknown IDs are skipped.
    pub fn decode(&self, ids: &[u32]) -> Option<String> {
        let mut s = String::new();
        for &id in ids {
            if id == self.unk_id {
                continue;
            }
            s.push_str(self.pieces.get(id as usize)?);
        }
        let s = s.replace(self.eow.as_str(), " ");
        Some(s.trim_end_matches(' ').to_string())
    }
}
