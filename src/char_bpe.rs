//! Character BPE with an end-of-word marker (Sennrich et al.; seed 000 0x06 "Where
//! merges are allowed"): every word is its characters plus the marker symbol, so no
//! merge crosses a word. Training uses the shared pair-merge engine with count scores.
//! Trained models run on the pipeline's BPE over characters (`bpe::hf_chars`), built
//! from the spec Python lowers from the trainer's pieces and merges: no encoder here.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::pair_merge::{MergeConfig, MergeEngine, Scoring, Ties};

pub fn engine(
    words: &[(String, u64)],
    eow: &str,
    max_merges: usize,
    min_frequency: u64,
    ties: Ties,
) -> MergeEngine {
    // Number the characters (and the marker) directly: a string per character
    // occurrence was most of the set-up time. The alphabet is sorted by string, as
    // `MergeEngine::new` sorts it; a marker that is itself a character shares its ID.
    let mut distinct: FxHashSet<char> = FxHashSet::default();
    for (w, _) in words {
        distinct.extend(w.chars());
    }
    let mut spelled: Vec<String> = distinct.iter().map(|c| c.to_string()).collect();
    spelled.push(eow.to_string());
    spelled.sort_unstable();
    spelled.dedup();
    let alphabet: Vec<&str> = spelled.iter().map(String::as_str).collect();
    let id_of = |s: &str| alphabet.binary_search(&s).expect("in the alphabet") as u32;
    let char_ids: FxHashMap<char, u32> = distinct
        .iter()
        .map(|&c| (c, id_of(c.encode_utf8(&mut [0; 4]))))
        .collect();
    let eow_id = id_of(eow);
    let units = words
        .iter()
        .map(|(w, f)| {
            let mut s: Vec<u32> = w.chars().map(|c| char_ids[&c]).collect();
            s.push(eow_id);
            (s, *f)
        })
        .collect();
    MergeEngine::from_ids(
        &alphabet,
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
