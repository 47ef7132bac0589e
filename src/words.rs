//! Word splitting and counting for the character-based trainers (Unigram, WordPiece,
//! character BPE). Like the byte-level pre-token counter, memory grows with distinct
//! words and the result is a sum, so thread count and document order cannot change it.

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::bpe::count::merge_counts;
use crate::pretok::classes::{classes, L, M, N, WS};
use crate::sentencepiece::normalizer::Normalizer;

/// The SentencePiece whitespace marker (U+2581).
pub const METASPACE: char = '\u{2581}';

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// SentencePiece style: spaces become `▁`, one `▁` is prepended, and every word
    /// starts at a `▁`. Joining the words and mapping `▁` back to spaces recovers the
    /// text exactly (minus the dummy prefix).
    Metaspace,
    /// Whitespace-separated words (Sennrich character BPE); whitespace is discarded.
    Whitespace,
    /// BERT basic tokenizer: whitespace-separated, and every punctuation character is
    /// a word of its own.
    Bert,
    /// Text already normalized by a SentencePiece normalizer (dummy prefix and `▁` in
    /// place, runs of spaces collapsed or not as its spec says): a word starts at every
    /// `▁`, exactly the cuts SentencePiece's trainer makes (`SplitIntoWords`).
    Normalized,
}

impl Split {
    pub fn parse(s: &str) -> Option<Split> {
        match s {
            "metaspace" => Some(Split::Metaspace),
            "whitespace" => Some(Split::Whitespace),
            "bert" => Some(Split::Bert),
            "normalized" => Some(Split::Normalized),
            _ => None,
        }
    }
}

/// BERT's punctuation test: the ASCII symbol ranges, plus any non-ASCII character that
/// is not a letter, number, mark or space (the Unicode tables here lack the P class,
/// so non-ASCII symbols count as punctuation too; documented divergence).
pub fn is_bert_punct(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_punctuation();
    }
    classes().flags(c) & (L | N | WS | M) == 0
}

/// Cuts `text` before every `▁` (except at its start).
fn split_at_metaspace(text: &str, mut sink: impl FnMut(&str)) {
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if c == METASPACE && i > start {
            sink(&text[start..i]);
            start = i;
        }
    }
    if start < text.len() {
        sink(&text[start..]);
    }
}

/// Calls `sink` with each word of `text` under `split`.
pub fn split_words(text: &str, split: Split, mut sink: impl FnMut(&str)) {
    match split {
        Split::Metaspace => {
            let mut buf = String::with_capacity(text.len() + 3);
            metaspace_into(text, &mut buf);
            split_at_metaspace(&buf, sink);
        }
        Split::Normalized => split_at_metaspace(text, sink),
        Split::Whitespace => text.split_whitespace().for_each(sink),
        Split::Bert => {
            for word in text.split_whitespace() {
                let mut start = 0;
                for (i, c) in word.char_indices() {
                    if is_bert_punct(c) {
                        if i > start {
                            sink(&word[start..i]);
                        }
                        sink(&word[i..i + c.len_utf8()]);
                        start = i + c.len_utf8();
                    }
                }
                if start < word.len() {
                    sink(&word[start..]);
                }
            }
        }
    }
}

/// `▁` + text with every space replaced by `▁`.
pub fn metaspace_into(text: &str, out: &mut String) {
    out.clear();
    out.push(METASPACE);
    for c in text.chars() {
        out.push(if c == ' ' { METASPACE } else { c });
    }
}

#[derive(Default)]
pub struct WordCounts {
    pub counts: FxHashMap<String, u64>,
    pub documents: u64,
    pub bytes: u64,
}

impl WordCounts {
    fn merge(mut self, other: WordCounts) -> WordCounts {
        self.counts = merge_counts(std::mem::take(&mut self.counts), other.counts);
        self.documents += other.documents;
        self.bytes += other.bytes;
        self
    }

    fn count_one(
        &mut self,
        text: &str,
        split: Split,
        lowercase: bool,
        normalizer: Option<&Normalizer>,
        buf: &mut Vec<u8>,
    ) {
        self.documents += 1;
        self.bytes += text.len() as u64;
        let lowered;
        let mut text = if lowercase {
            lowered = text.to_lowercase();
            lowered.as_str()
        } else {
            text
        };
        let normalized;
        if let Some(n) = normalizer {
            // The trainer sees exactly what the written model's encoder will see.
            n.normalize(text.as_bytes(), buf, None);
            normalized = String::from_utf8_lossy(buf);
            text = &normalized;
        }
        let counts = &mut self.counts;
        split_words(text, split, |w| {
            if let Some(c) = counts.get_mut(w) {
                *c += 1;
            } else {
                counts.insert(w.to_owned(), 1);
            }
        });
    }

    /// Counts the words of `texts` in parallel (in the current rayon pool).
    /// With a `normalizer`, each text is normalized by it before splitting.
    pub fn add_texts<S: AsRef<str> + Sync>(
        &mut self,
        texts: &[S],
        split: Split,
        lowercase: bool,
        normalizer: Option<&Normalizer>,
    ) {
        if texts.is_empty() {
            return;
        }
        let chunk = texts
            .len()
            .div_ceil(rayon::current_num_threads().max(1) * 4);
        let partial = texts
            .par_chunks(chunk.max(1))
            .map(|docs| {
                let mut local = WordCounts::default();
                let mut buf = Vec::new();
                for d in docs {
                    local.count_one(d.as_ref(), split, lowercase, normalizer, &mut buf);
                }
                local
            })
            .reduce(WordCounts::default, WordCounts::merge);
        let this = std::mem::take(self);
        *self = this.merge(partial);
    }

    /// Words sorted by string: a layout independent of hash order.
    pub fn into_sorted(self) -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = self.counts.into_iter().collect();
        v.sort_unstable();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str, split: Split) -> Vec<String> {
        let mut out = Vec::new();
        split_words(text, split, |w| out.push(w.to_owned()));
        out
    }

    #[test]
    fn splits() {
        assert_eq!(words("New York", Split::Metaspace), ["▁New", "▁York"]);
        assert_eq!(words(" a  b", Split::Metaspace), ["▁", "▁a", "▁", "▁b"]);
        assert_eq!(
            words("un-wanted, x", Split::Bert),
            ["un", "-", "wanted", ",", "x"]
        );
        assert_eq!(words(" low  lower\n", Split::Whitespace), ["low", "lower"]);
    }
}
