//! WordPiece: likelihood-ratio vocabulary training and a minimal longest-match encoder
//! (seed 000, 0x08). The encoder will be unified with the pipeline's WordPiece model.

use rustc_hash::FxHashMap;

use crate::error::{CoreError, CoreResult};
use crate::pair_merge::{MergeConfig, MergeEngine, Scoring, Ties};

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
    pub dropped_words: u64,
    pub stop_reason: &'static str,
}

/// The engine for `words` (sorted by string): first character, then `prefix` + char.
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
    let mut dropped = 0u64;
    let mut units = Vec::new();
    for (w, f) in words {
        if w.chars().any(|c| !allowed.contains_key(&c)) {
            dropped += f; // such words encode to the unknown token
            continue;
        }
        let symbols: Vec<String> = w
            .chars()
            .enumerate()
            .map(|(i, c)| {
                if i == 0 {
                    c.to_string()
                } else {
                    format!("{}{c}", cfg.prefix)
                }
            })
            .collect();
        units.push((symbols, *f));
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
    Ok((engine, dropped))
}

pub fn finish(engine: MergeEngine, cfg: &WordPieceConfig, dropped: u64) -> WordPieceTraining {
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
        dropped_words: dropped,
        stop_reason: engine.stop.unwrap_or("vocab_size_reached"),
    }
}

pub struct WordPieceModel {
    ids: FxHashMap<String, u32>,
    pub vocab: Vec<String>,
    pub unk_id: u32,
    pub prefix: String,
    pub max_chars: usize,
}

impl WordPieceModel {
    pub fn new(vocab: Vec<String>, unk_id: u32, prefix: String, max_chars: usize) -> Self {
        let ids = vocab
            .iter()
            .enumerate()
            .map(|(i, s)| (s.clone(), i as u32))
            .collect();
        WordPieceModel {
            ids,
            vocab,
            unk_id,
            prefix,
            max_chars,
        }
    }

    /// Longest match first; one unknown ID for the whole word if any position fails.
    pub fn encode_word(&self, word: &str, out: &mut Vec<u32>) {
        let bounds: Vec<usize> = word
            .char_indices()
            .map(|(i, _)| i)
            .chain([word.len()])
            .collect();
        let n = bounds.len() - 1;
        if n > self.max_chars {
            out.push(self.unk_id);
            return;
        }
        let mark = out.len();
        let mut buf = String::new();
        let mut start = 0;
        while start < n {
            let mut found = None;
            for end in (start + 1..=n).rev() {
                let surface = &word[bounds[start]..bounds[end]];
                let id = if start == 0 {
                    self.ids.get(surface)
                } else {
                    buf.clear();
                    buf.push_str(&self.prefix);
                    buf.push_str(surface);
                    self.ids.get(buf.as_str())
                };
                if let Some(&id) = id {
                    found = Some((end, id));
                    break;
                }
            }
            match found {
                Some((end, id)) => {
                    out.push(id);
                    start = end;
                }
                None => {
                    out.truncate(mark);
                    out.push(self.unk_id);
                    return;
                }
            }
        }
    }

    /// Joins pieces with spaces, gluing continuation pieces to their predecessor.
    pub fn decode(&self, ids: &[u32]) -> Option<String> {
        let mut s = String::new();
        for &id in ids {
            let piece = self.vocab.get(id as usize)?;
            match piece.strip_prefix(self.prefix.as_str()) {
                Some(rest) if !s.is_empty() => s.push_str(rest),
                _ => {
                    if !s.is_empty() {
                        s.push(' ');
                    }
                    s.push_str(piece);
                }
            }
        }
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_unwanted() {
        let vocab = [
            "[UNK]", "un", "##want", "##ed", "runn", "play", ",", "##ing", "##er",
        ];
        let m = WordPieceModel::new(
            vocab.iter().map(|s| s.to_string()).collect(),
            0,
            "##".into(),
            100,
        );
        let enc = |w: &str| {
            let mut out = Vec::new();
            m.encode_word(w, &mut out);
            out
        };
        assert_eq!(enc("unwanted"), [1, 2, 3]);
        assert_eq!(enc("want"), [0]);
        assert_eq!(enc("playingx"), [0]);
        assert_eq!(enc("Unwanted"), [0]);
    }
}
