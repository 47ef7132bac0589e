//! Special-token matching with one Aho-Corasick automaton (leftmost-longest), built once
//! per allowed set and reused, never a regex rebuilt per call.

use aho_corasick::{AhoCorasick, MatchKind};

use crate::error::{CoreError, CoreResult};

pub struct SpecialMatcher {
    ac: AhoCorasick,
    pub ids: Vec<u32>,
    pub contents: Vec<String>,
}

impl SpecialMatcher {
    pub fn new(specials: Vec<(String, u32)>) -> CoreResult<SpecialMatcher> {
        let (contents, ids): (Vec<String>, Vec<u32>) = specials.into_iter().unzip();
        let ac = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&contents)
            .map_err(|e| CoreError::Config(format!("cannot build special-token matcher: {e}")))?;
        Ok(SpecialMatcher { ac, ids, contents })
    }

    /// Byte offset and index of the first (leftmost-longest) special spelling in `text`.
    pub fn find_first(&self, text: &str) -> Option<(usize, usize, usize)> {
        self.ac
            .find(text)
            .map(|m| (m.start(), m.end(), m.pattern().as_usize()))
    }

    /// Non-overlapping matches, left to right: (start, end, index).
    pub fn find_all<'a>(
        &'a self,
        text: &'a str,
    ) -> impl Iterator<Item = (usize, usize, usize)> + 'a {
        self.ac
            .find_iter(text)
            .map(|m| (m.start(), m.end(), m.pattern().as_usize()))
    }
}
