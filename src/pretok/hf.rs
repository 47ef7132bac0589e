//! Hugging Face's character-class pre-tokenizers as scanners over normalized text.
//!
//! Each scanner reports "matches" for the chain in `chain.rs`: the word-like ones
//! (Whitespace, WhitespaceSplit, BertPreTokenizer) report the pieces HF keeps, so they
//! run as a single matches-only step; the char-predicate ones (Digits, Punctuation,
//! CharDelimiterSplit) report every matching char as its own match, as HF's
//! `Fn(char) -> bool` pattern does, and the step's behaviour decides what is kept.
//! Character classes come from the sets measured from HF (`normalize::tables`).

use crate::normalize::tables::tables;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HfScanner {
    /// `\w+|[^\w\s]+` with Oniguruma's classes.
    Whitespace,
    /// Runs of non-whitespace (`char::is_whitespace`).
    WhitespaceSplit,
    /// Whitespace removed, then each punctuation char isolated.
    Bert,
    /// Each punctuation char (BERT's definition).
    Punct,
    /// Each numeric char (`char::is_numeric`).
    Numeric,
    /// Each occurrence of one char.
    Delim(char),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Space,
    Word,
    Other,
}

impl HfScanner {
    pub fn split(&self, text: &str, mut emit: impl FnMut(usize, usize)) {
        let t = tables();
        match *self {
            HfScanner::Whitespace => {
                let kind = |c: char| {
                    if c.is_ascii() {
                        if c.is_ascii_alphanumeric() || c == '_' {
                            Kind::Word
                        } else if matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r') {
                            Kind::Space
                        } else {
                            Kind::Other
                        }
                    } else if t.onig_word.contains(c) {
                        Kind::Word
                    } else if t.onig_space.contains(c) {
                        Kind::Space
                    } else {
                        Kind::Other
                    }
                };
                runs(text, kind, |k| k != Kind::Space, &mut emit);
            }
            HfScanner::WhitespaceSplit => {
                let space = |c: char| {
                    if c.is_ascii() {
                        c.is_ascii_whitespace() || c == '\x0b'
                    } else {
                        t.rust_space.contains(c)
                    }
                };
                runs(text, space, |s| !s, &mut emit);
            }
            HfScanner::Bert => {
                let mut word: Option<usize> = None;
                for (i, c) in text.char_indices() {
                    let (is_space, is_punct) = if c.is_ascii() {
                        (
                            c.is_ascii_whitespace() || c == '\x0b',
                            c.is_ascii_punctuation(),
                        )
                    } else {
                        (t.rust_space.contains(c), t.bert_punct.contains(c))
                    };
                    if is_space || is_punct {
                        if let Some(s) = word.take() {
                            emit(s, i);
                        }
                        if is_punct {
                            emit(i, i + c.len_utf8());
                        }
                    } else if word.is_none() {
                        word = Some(i);
                    }
                }
                if let Some(s) = word {
                    emit(s, text.len());
                }
            }
            HfScanner::Punct | HfScanner::Numeric | HfScanner::Delim(_) => {
                for (i, c) in text.char_indices() {
                    let hit = match *self {
                        HfScanner::Punct => {
                            c.is_ascii_punctuation() || (!c.is_ascii() && t.bert_punct.contains(c))
                        }
                        HfScanner::Numeric => {
                            c.is_ascii_digit() || (!c.is_ascii() && t.numeric.contains(c))
                        }
                        HfScanner::Delim(d) => c == d,
                        _ => false,
                    };
                    if hit {
                        emit(i, i + c.len_utf8());
                    }
                }
            }
        }
    }
}

/// Emits maximal runs of chars with equal `class` for which `keep` holds.
fn runs<K: PartialEq + Copy>(
    text: &str,
    class: impl Fn(char) -> K,
    keep: impl Fn(K) -> bool,
    emit: &mut impl FnMut(usize, usize),
) {
    let mut current: Option<(usize, K)> = None;
    for (i, c) in text.char_indices() {
        let k = class(c);
        match current {
            Some((_, ck)) if ck == k => {}
            Some((s, ck)) => {
                if keep(ck) {
                    emit(s, i);
                }
                current = Some((i, k));
            }
            None => current = Some((i, k)),
        }
    }
    if let Some((s, k)) = current {
        if keep(k) {
            emit(s, text.len());
        }
    }
}
