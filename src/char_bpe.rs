//! Character BPE with an end-of-word marker (Sennrich et al.; seed 000 0x06 "Where
//! merges are allowed"): every word is its characters plus the marker symbol, so no
//! merge crosses a word. Training uses the shared pair-merge engine with count scores.
//! Trained models run on the pipeline's BPE over characters (`bpe::hf_chars`), built
//! from the spec Python lowers from the trainer's pieces and merges: no encoder here.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::pair_merge::{MergeConfig, MergeEngine, Scoring, Ties};

/// Which characters the alphabet keeps (Hugging Face `BpeTrainer`'s `initial_alphabet`
/// and `limit_alphabet`): `initial` characters are always candidates, even when the
/// corpus lacks them, and rank above every counted character; with `limit`, only the
/// `limit` characters of highest word-weighted count are kept (ties at the cut keep the
/// smaller code point, so the result is deterministic where Hugging Face's is not).
pub struct AlphabetRule<'a> {
    pub initial: &'a [char],
    pub limit: Option<usize>,
}

fn kept_chars(words: &[(String, u64)], rule: &AlphabetRule) -> FxHashSet<char> {
    let mut counts: FxHashMap<char, u64> = FxHashMap::default();
    for (w, f) in words {
        for c in w.chars() {
            let n = counts.entry(c).or_insert(0);
            *n = n.saturating_add(*f);
        }
    }
    for &c in rule.initial {
        counts.insert(c, u64::MAX);
    }
    match rule.limit {
        Some(limit) if counts.len() > limit => {
            let mut ranked: Vec<(char, u64)> = counts.into_iter().collect();
            ranked.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            ranked.truncate(limit);
            ranked.into_iter().map(|(c, _)| c).collect()
        }
        _ => counts.into_keys().collect(),
    }
}

pub fn engine(
    words: &[(String, u64)],
    eow: &str,
    max_merges: usize,
    min_frequency: u64,
    ties: Ties,
    rule: &AlphabetRule,
) -> MergeEngine {
    // Number the characters (and the marker) directly: a string per character
    // occurrence was most of the set-up time. The alphabet is sorted by string, as
    // `MergeEngine::new` sorts it; a marker that is itself a character shares its ID.
    let distinct = kept_chars(words, rule);
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
    // A character outside the kept alphabet is left out of its word, and the rest of
    // the word still trains, as in Hugging Face's BpeTrainer.
    let units = words
        .iter()
        .filter_map(|(w, f)| {
            let mut s: Vec<u32> = w
                .chars()
                .filter_map(|c| char_ids.get(&c).copied())
                .collect();
            if s.is_empty() {
                return None;
            }
            s.push(eow_id);
            Some((s, *f))
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
