//! WordPiece (greedy longest-match-first with a continuation prefix and whole-word UNK)
//! and WordLevel (whole pre-token lookup), as in Hugging Face `tokenizers`.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::{CoreError, CoreResult};

fn index(vocab: &[Vec<u8>]) -> FxHashMap<Box<[u8]>, u32> {
    let mut map = FxHashMap::default();
    map.reserve(vocab.len());
    for (id, piece) in vocab.iter().enumerate() {
        map.entry(piece.as_slice().into()).or_insert(id as u32);
    }
    map
}

fn unk_id(map: &FxHashMap<Box<[u8]>, u32>, unk: &str, model: &str) -> CoreResult<u32> {
    map.get(unk.as_bytes()).copied().ok_or_else(|| {
        CoreError::Artifact(format!(
            "{model}: unk_token {unk:?} is not in the vocabulary; add it or fix unk_token"
        ))
    })
}

pub struct WordPiece {
    /// Token string of every ID (continuation pieces keep their prefix).
    pub vocab: Vec<Vec<u8>>,
    initial: FxHashMap<Box<[u8]>, u32>,
    /// Pieces that start with the prefix, keyed without it: the lookup at a non-initial
    /// position then needs no string concatenation.
    continuation: FxHashMap<Box<[u8]>, u32>,
    pub unk: u32,
    pub prefix: String,
    pub max_input_chars_per_word: usize,
    /// Longest key in bytes: the search starts no further than this from the cursor.
    longest: usize,
}

impl WordPiece {
    pub fn new(
        vocab: Vec<Vec<u8>>,
        unk_token: &str,
        prefix: &str,
        max_input_chars_per_word: usize,
    ) -> CoreResult<WordPiece> {
        let unk = unk_id(&index(&vocab), unk_token, "WordPiece")?;
        WordPiece::with_unk_id(vocab, unk, prefix, max_input_chars_per_word)
    }

    /// The same model with the unknown token given by ID (the trainer's vocabulary knows
    /// its IDs, not only spellings).
    pub fn with_unk_id(
        vocab: Vec<Vec<u8>>,
        unk: u32,
        prefix: &str,
        max_input_chars_per_word: usize,
    ) -> CoreResult<WordPiece> {
        if unk as usize >= vocab.len() {
            return Err(CoreError::Config(format!(
                "WordPiece: unknown-token ID {unk} is outside the vocabulary of {} pieces",
                vocab.len()
            )));
        }
        let initial = index(&vocab);
        let mut continuation = FxHashMap::default();
        for (id, piece) in vocab.iter().enumerate() {
            if let Some(rest) = piece.strip_prefix(prefix.as_bytes()) {
                continuation.entry(rest.into()).or_insert(id as u32);
            }
        }
        let longest = vocab.iter().map(Vec::len).max().unwrap_or(0);
        Ok(WordPiece {
            vocab,
            initial,
            continuation,
            unk,
            prefix: prefix.to_owned(),
            max_input_chars_per_word,
            longest,
        })
    }

    /// Makes the IDs in `controls` unreachable from text (`Model::forbid`): the longest
    /// match skips them; the whole-word unknown token is still emitted for words the
    /// vocabulary cannot spell.
    pub fn forbid(&mut self, controls: &FxHashSet<u32>) {
        self.initial.retain(|_, id| !controls.contains(id));
        self.continuation.retain(|_, id| !controls.contains(id));
    }

    /// Appends the IDs of one pre-token and their byte spans relative to it.
    pub fn encode_spans(&self, word: &[u8], ids: &mut Vec<u32>, spans: &mut Vec<(u32, u32)>) {
        if word.is_empty() {
            return;
        }
        let chars = word.iter().filter(|&&b| b & 0xC0 != 0x80).count();
        let (first, first_span) = (ids.len(), spans.len());
        if chars <= self.max_input_chars_per_word {
            let mut start = 0;
            while start < word.len() {
                let map = if start == 0 {
                    &self.initial
                } else {
                    &self.continuation
                };
                let mut end = word.len().min(start + self.longest);
                let mut found = None;
                while end > start {
                    // Only char boundaries: a vocabulary of valid UTF-8 could not match
                    // elsewhere anyway, and skipping saves lookups.
                    if end == word.len() || word[end] & 0xC0 != 0x80 {
                        if let Some(&id) = map.get(&word[start..end]) {
                            found = Some(id);
                            break;
                        }
                    }
                    end -= 1;
                }
                match found {
                    Some(id) => {
                        ids.push(id);
                        spans.push((start as u32, end as u32));
                        start = end;
                    }
                    None => break,
                }
            }
            if start == word.len() {
                return;
            }
        }
        // Whole-word UNK: partial matches are discarded.
        ids.truncate(first);
        spans.truncate(first_span);
        ids.push(self.unk);
        spans.push((0, word.len() as u32));
    }
}

pub struct WordLevel {
    pub vocab: Vec<Vec<u8>>,
    map: FxHashMap<Box<[u8]>, u32>,
    pub unk: u32,
}

impl WordLevel {
    pub fn new(vocab: Vec<Vec<u8>>, unk_token: &str) -> CoreResult<WordLevel> {
        let map = index(&vocab);
        let unk = unk_id(&map, unk_token, "WordLevel")?;
        Ok(WordLevel { vocab, map, unk })
    }

    /// Makes the IDs in `controls` unreachable from text: such a word maps to `unk`.
    pub fn forbid(&mut self, controls: &FxHashSet<u32>) {
        self.map.retain(|_, id| !controls.contains(id));
    }

    pub fn encode_spans(&self, word: &[u8], ids: &mut Vec<u32>, spans: &mut Vec<(u32, u32)>) {
        if word.is_empty() {
            return;
        }
        ids.push(self.map.get(word).copied().unwrap_or(self.unk));
        spans.push((0, word.len() as u32));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> WordPiece {
        let vocab = ["[UNK]", "un", "##want", "##ed", "runn", "##ing"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        WordPiece::new(vocab, "[UNK]", "##", 100).unwrap()
    }

    #[test]
    fn seed_unwanted() {
        let (mut ids, mut spans) = (Vec::new(), Vec::new());
        model().encode_spans(b"unwanted", &mut ids, &mut spans);
        assert_eq!(ids, vec![1, 2, 3]);
        assert_eq!(spans, vec![(0, 2), (2, 6), (6, 8)]);
    }

    #[test]
    fn uncovered_suffix_is_one_unk_for_the_word() {
        let (mut ids, mut spans) = (vec![9], vec![(0, 1)]);
        model().encode_spans(b"unwantedx", &mut ids, &mut spans);
        assert_eq!(ids, vec![9, 0]);
        assert_eq!(spans, vec![(0, 1), (0, 9)]);
    }
}
