//! WordPiece: likelihood-ratio vocabulary training (seed 000, 0x08). Its vocabularies
//! are encoded by the pipeline's model (`crate::wordpiece::WordPiece`), not a copy.

use rustc_hash::FxHashMap;

use crate::error::{CoreError, CoreResult};
use crate::pair_merge::{MergeConfig, MergeEngine, Scoring, Ties};
use crate::wordpiece::WordPiece;

pub struct WordPieceConfig {
    /// Final size: specials + alphabet + learned pieces.
    pub vocab_size: usize,
    pub specials: Vec<String>,
    pub prefix: String,
    pub min_frequency: u64,
    pub limit_alphabet: Option<usize>,
    pub scoring: Scoring,
}

pub struct WordPieceTraining {
    pub vocab: Vec<String>,
    pub alphabet: usize,
    pub merges: usize,
    /// Occurrences of words with a character outside the kept alphabet.
    pub unknown_char_words: u64,
    pub stop_reason: &'static str,
}

/// The engine for `words` (sorted by string): first character, then `prefix` + char;
/// the second value counts word occurrences that hold a character outside the alphabet.
pub fn engine(words: &[(String, u64)], cfg: &WordPieceConfig) -> CoreResult<(MergeEngine, u64)> {
    let mut chars: FxHashMap<char, u64> = FxHashMap::default();
    for (w, f) in words {
        for c in w.chars() {
            *chars.entry(c).or_insert(0) += f;
        }
    }
    let mut ranked: Vec<(char, u64)> = chars.into_iter().collect();
    ranked.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    if let Some(limit) = cfg.limit_alphabet {
        ranked.truncate(limit);
    }
    let allowed: FxHashMap<char, ()> = ranked.iter().map(|&(c, _)| (c, ())).collect();
    // Hugging Face's BpeTrainer (which its WordPieceTrainer is): a character outside the
    // kept alphabet is left out of its word and the rest of the word still trains (its
    // neighbours become adjacent). Dropping such words whole starved scripts with large
    // alphabets: a Japanese "word" runs from punctuation to punctuation, so most held a
    // rare kanji, and ja needed 2.8% more held-out tokens than HF's vocabulary.
    let mut unknown_char_words = 0u64;
    let mut units = Vec::new();
    for (w, f) in words {
        let mut symbols = Vec::new();
        for (i, c) in w.chars().enumerate() {
            if !allowed.contains_key(&c) {
                continue;
            }
            // Word-initial by position in the word, not among the kept characters.
            symbols.push(if i == 0 {
                c.to_string()
            } else {
                format!("{}{c}", cfg.prefix)
            });
        }
        if symbols.len() < w.chars().count() {
            unknown_char_words += f; // such words still encode to the unknown token
        }
        if !symbols.is_empty() {
            units.push((symbols, *f));
        }
    }
    let alphabet: rustc_hash::FxHashSet<&String> = units.iter().flat_map(|u| u.0.iter()).collect();
    let base = cfg.specials.len() + alphabet.len();
    drop(alphabet);
    if base > cfg.vocab_size {
        return Err(CoreError::Training(format!(
            "vocab_size={} cannot hold the {} special tokens and the {} alphabet pieces; \
             raise vocab_size or set limit_alphabet",
            cfg.vocab_size,
            cfg.specials.len(),
            base - cfg.specials.len()
        )));
    }
    let engine = MergeEngine::new(
        units,
        MergeConfig {
            max_new: cfg.vocab_size - base,
            count_merges: false,
            min_frequency: cfg.min_frequency,
            scoring: cfg.scoring,
            ties: Ties::Smallest,
            strip_prefix: Some(cfg.prefix.clone()),
        },
    );
    Ok((engine, unknown_char_words))
}

pub fn finish(
    engine: MergeEngine,
    cfg: &WordPieceConfig,
    unknown_char_words: u64,
) -> WordPieceTraining {
    let mut vocab: Vec<String> = cfg.specials.clone();
    let mut seen: FxHashMap<String, ()> = vocab.iter().map(|s| (s.clone(), ())).collect();
    for p in &engine.pieces {
        if seen.insert(p.to_string(), ()).is_none() {
            vocab.push(p.to_string());
        }
    }
    WordPieceTraining {
        vocab,
        alphabet: engine.alphabet,
        merges: engine.merges.len(),
        unknown_char_words,
        stop_reason: engine.stop.unwrap_or("vocab_size_reached"),
    }
}

/// The trainer's text decoder over the encoder's model: pieces joined with spaces,
/// continuation pieces (prefix stripped) glued to the text before them. None for an ID
/// outside the vocabulary.
pub fn decode(model: &WordPiece, ids: &[u32]) -> Option<String> {
    let mut s = String::new();
    for &id in ids {
        let piece = String::from_utf8_lossy(model.vocab.get(id as usize)?);
        match piece.strip_prefix(model.prefix.as_str()) {
            Some(rest) if !s.is_empty() => s.push_str(rest),
            _ => {
                if !s.is_empty() {
                    s.push(' ');
                }
                s.push_str(&piece);
            }
        }
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_outside_the_alphabet_leaves_the_rest_of_its_word_training() {
        // q is the rarest character; limit 4 leaves it out of "aqb", whose a and ##b
        // still pair up into "ab".
        let words: Vec<(String, u64)> = [("a", 1), ("aqb", 5), ("b", 1), ("cd", 7)]
            .iter()
            .map(|&(w, f)| (w.to_string(), f))
            .collect();
        let cfg = WordPieceConfig {
            vocab_size: 30,
            specials: vec!["[UNK]".into()],
            prefix: "##".into(),
            min_frequency: 2,
            limit_alphabet: Some(4),
            scoring: Scoring::Count,
        };
        let (mut engine, unknown_char_words) = engine(&words, &cfg).unwrap();
        assert_eq!(unknown_char_words, 5);
        engine.step(usize::MAX);
        let out = finish(engine, &cfg, unknown_char_words);
        assert_eq!(
            out.vocab,
            ["[UNK]", "##b", "##d", "a", "b", "c", "cd", "ab"]
        );
        assert_eq!(out.stop_reason, "no_pairs_left");
    }

    #[test]
    fn seed_unwanted_with_the_pipeline_model() {
        let vocab = [
            "[UNK]", "un", "##want", "##ed", "runn", "play", ",", "##ing", "##er",
        ];
        let vocab = vocab.iter().map(|s| s.as_bytes().to_vec()).collect();
        let m = WordPiece::with_unk_id(vocab, 0, "##", 100).unwrap();
        let enc = |w: &str| {
            let (mut ids, mut spans) = (Vec::new(), Vec::new());
            m.encode_spans(w.as_bytes(), &mut ids, &mut spans);
            ids
        };
        assert_eq!(enc("unwanted"), [1, 2, 3]);
        assert_eq!(enc("want"), [0]);
        assert_eq!(enc("playingx"), [0]);
        assert_eq!(enc("Unwanted"), [0]);
        assert_eq!(
            decode(&m, &[1, 2, 3, 5, 7]).as_deref(),
            Some("unwanted playing")
        );
        assert_eq!(decode(&m, &[99]), None);
        assert!(WordPiece::with_unk_id(Vec::new(), 0, "##", 100).is_err());
    }
}
