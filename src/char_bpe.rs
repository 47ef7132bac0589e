//! Character BPE with an end-of-word marker (Sennrich et al.; seed 000 0x06 "Where
//! merges are allowed"): every word is its characters plus the marker symbol, so no
//! merge crosses a word. Training uses the shared pair-merge engine with count scores.
//! Trained models run on the pipeline's BPE over characters (`bpe::hf_chars`), built
//! from the spec Python lowers from the trainer's pieces and merges: no encoder here.

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
