//! The recognized spellings of a stream: where a held-back tail may start (a proper
//! prefix of a spelling) and when a spelling at the start of the rest is decided.

use std::sync::Arc;

use crate::error::{CoreError, CoreResult};
use crate::special::SpecialMatcher;

/// The recognized spellings: the matcher `encode` uses, plus what finding the earliest
/// position where a spelling may still complete needs.
pub(super) struct Guards {
    pub(super) matcher: Arc<SpecialMatcher>,
    /// Indices of the spellings in byte order: the spellings that extend a text form
    /// the run right after it, so "is this a proper prefix of a spelling" is a binary
    /// search. (A hash set of every proper prefix answered the same, but building it
    /// cost a stream with all 256 Llama 3.2 specials about 2M instructions per stream,
    /// more than encoding 10 kB; sorting is a few thousand.)
    sorted: Vec<usize>,
    /// Bytes a spelling starts with: only there can a held-back tail begin.
    first: [bool; 256],
    /// Bytes of the longest spelling.
    longest: usize,
    /// Whether the text after a committed spelling may be committed too (not for
    /// Metaspace's `first` scheme, which would prepend to the tail encoded alone).
    pub(super) through: bool,
}

impl Guards {
    pub(super) fn new(matcher: Arc<SpecialMatcher>, through: bool) -> CoreResult<Guards> {
        if !matcher.is_plain() {
            return Err(CoreError::Config(
                "native streaming needs special tokens without lstrip/rstrip/single_word/\
                 normalized flags; use StreamingEncoder, which holds such text"
                    .into(),
            ));
        }
        let mut first = [false; 256];
        let mut longest = 0;
        for c in &matcher.contents {
            let b = c.as_bytes();
            // A spelling is never empty (`SpecialMatcher::new` refuses one); `get` keeps
            // a panic out of the stream either way.
            if let Some(&b0) = b.first() {
                first[b0 as usize] = true;
            }
            longest = longest.max(b.len());
        }
        let contents = &matcher.contents;
        let mut sorted: Vec<usize> = (0..contents.len()).collect();
        // Usually sorted already (Python passes the spellings in order): one linear pass.
        sorted.sort_by(|&a, &b| contents[a].as_bytes().cmp(contents[b].as_bytes()));
        Ok(Guards {
            matcher,
            sorted,
            first,
            longest,
            through,
        })
    }

    /// The earliest char boundary from which the rest of `buf` is a proper prefix of a
    /// spelling (a spelling may start there and complete later), or `buf.len()`.
    pub(super) fn held_tail(&self, buf: &str) -> usize {
        let bytes = buf.as_bytes();
        let lo = bytes.len().saturating_sub(self.longest.saturating_sub(1));
        (lo..bytes.len())
            .find(|&p| {
                self.first[bytes[p] as usize]
                    && buf.is_char_boundary(p)
                    && self.proper_prefix(&bytes[p..])
            })
            .unwrap_or(bytes.len())
    }

    /// Whether `text` is a proper prefix of a spelling: the first spelling after `text`
    /// in byte order (a spelling equal to `text` sorts before it) starts with it.
    fn proper_prefix(&self, text: &[u8]) -> bool {
        let contents = &self.matcher.contents;
        let after = self
            .sorted
            .partition_point(|&k| contents[k].as_bytes() <= text);
        self.sorted
            .get(after)
            .is_some_and(|&k| contents[k].as_bytes().starts_with(text))
    }

    /// At `start`, where a complete spelling was found: its end when it is the only
    /// spelling consistent with the text from `start` on (no longer one may still match).
    pub(super) fn decided(&self, rest: &[u8]) -> Option<usize> {
        let mut candidates = 0;
        let mut complete = None;
        for c in &self.matcher.contents {
            let c = c.as_bytes();
            let n = c.len().min(rest.len());
            if rest[..n] == c[..n] {
                candidates += 1;
                if c.len() <= rest.len() {
                    complete = Some(c.len());
                }
            }
        }
        if candidates == 1 {
            complete
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guards(spellings: &[&str]) -> Guards {
        let specials = spellings
            .iter()
            .enumerate()
            .map(|(i, s)| (s.to_string(), 1000 + i as u32))
            .collect();
        Guards::new(Arc::new(SpecialMatcher::new(specials).unwrap()), true).unwrap()
    }

    #[test]
    fn held_tail_starts_at_the_longest_possible_spelling() {
        let g = guards(&["<|end|>", "<|endoftext|>"]);
        assert_eq!(g.held_tail("abc <|en"), 4);
        assert_eq!(g.held_tail("abc <"), 4);
        assert_eq!(g.held_tail("abc"), 3);
        // A complete spelling is no proper prefix here: the matcher finds it.
        assert_eq!(g.held_tail("x<|end|>"), 8);
        // One that is also a prefix of a longer spelling stays held.
        let nested = guards(&["<|end|>", "<|end|>!"]);
        assert_eq!(nested.held_tail("x<|end|>"), 1);
        assert_eq!(g.held_tail("é<|"), "é".len());
    }

    #[test]
    fn proper_prefixes_match_the_set_of_every_prefix() {
        // Out of order, nested, sharing prefixes, multi-byte: the binary search agrees
        // with the set of every proper prefix on every substring of the spellings.
        let spellings = [
            "<|end|>!", "<|eot|>", "<|end|>", "<s>", "</s>", "éa", "é", "<",
        ];
        let g = guards(&spellings);
        let prefixes: std::collections::HashSet<&[u8]> = spellings
            .iter()
            .flat_map(|s| (1..s.len()).map(move |k| &s.as_bytes()[..k]))
            .collect();
        for s in spellings {
            let b = s.as_bytes();
            for i in 0..b.len() {
                for j in i + 1..=b.len() {
                    let text = &b[i..j];
                    assert_eq!(g.proper_prefix(text), prefixes.contains(text), "{text:?}");
                }
            }
        }
        assert!(!g.proper_prefix(b"<|x"));
        assert!(!g.proper_prefix(b"zz"));
    }

    #[test]
    fn a_spelling_is_decided_when_no_longer_one_can_match() {
        let g = guards(&["<|end|>", "<|endoftext|>"]);
        assert_eq!(g.decided(b"<|end|>x"), Some(7));
        assert_eq!(g.decided(b"<|endoftext|>"), Some(13));
        assert_eq!(g.decided(b"<|end"), None);
        let g = guards(&["ab", "abc"]);
        assert_eq!(g.decided(b"ab"), None); // "abc" may still complete
        assert_eq!(g.decided(b"abd"), Some(2));
    }
}
