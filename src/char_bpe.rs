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
    // IDs are alphabet positions, read off in one pass (every character and the marker
    // are in the alphabet by construction, so no lookup can miss).
    let mut char_ids: FxHashMap<char, u32> = FxHashMap::default();
    let mut eow_id = 0u32;
    for (id, symbol) in alphabet.iter().enumerate() {
        let mut chars = symbol.chars();
        if let (Some(c), None) = (chars.next(), chars.next()) {
            if distinct.contains(&c) {
                char_ids.insert(c, id as u32);
            }
        }
        if *symbol == eow {
            eow_id = id as u32;
        }
    }
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
