//! Added-token matching with Aho-Corasick automata (leftmost-longest), built once per
//! allowed set and reused, never a regex rebuilt per call.
//!
//! Hugging Face's added tokens carry four flags (tokenizers' `added_vocabulary.rs`):
//! `single_word` (a match touching a word character on either side is discarded),
//! `lstrip` / `rstrip` (the match absorbs the whitespace on its left / right) and
//! `normalized` (the token is matched in the normalized text, its spelling normalized by
//! the same normalizer). A matcher whose tokens carry none of them is *plain*: one
//! automaton over the raw text, the fast path every other caller uses.

use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, MatchKind};
use fancy_regex::Regex;

use crate::error::{CoreError, CoreResult};
use crate::normalize::{NormalizedString, Normalizer};

/// Hugging Face's per-token matching flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AddedFlags {
    pub single_word: bool,
    pub lstrip: bool,
    pub rstrip: bool,
    pub normalized: bool,
}

/// What one added token may become in one call: the trust rule per pattern.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Gate {
    /// An ordinary (non-special) added token: content, matched everywhere, untrusted
    /// bytes included, exactly as Hugging Face's added vocabulary matches it.
    Ordinary,
    /// A control token the call allows: matched outside untrusted bytes only.
    #[default]
    Control,
    /// A control token the call does not allow. It stays in the automaton, so a spelling
    /// that overlaps it resolves as in Hugging Face's added vocabulary, but a match is
    /// skipped in place and its text stays ordinary text (HF's `encode_special_tokens`).
    Blocked,
}

impl Gate {
    /// Whether a match of bytes `a..b` becomes the token (`allows`: the trust gate).
    #[inline]
    fn admits(self, allows: impl FnOnce() -> bool) -> bool {
        match self {
            Gate::Ordinary => true,
            Gate::Control => allows(),
            Gate::Blocked => false,
        }
    }
}

/// One automaton and, per pattern, its token ID, spelling, flags and gate.
struct PatternSet {
    ac: AhoCorasick,
    ids: Vec<u32>,
    contents: Vec<String>,
    flags: Vec<AddedFlags>,
    gates: Vec<Gate>,
}

fn automaton(patterns: &[String]) -> CoreResult<AhoCorasick> {
    AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostLongest)
        .build(patterns)
        .map_err(|e| CoreError::Config(format!("cannot build special-token matcher: {e}")))
}

pub struct SpecialMatcher {
    /// Tokens matched in the raw text (HF's `normalized: false`).
    ac: AhoCorasick,
    pub ids: Vec<u32>,
    pub contents: Vec<String>,
    flags: Vec<AddedFlags>,
    gates: Vec<Gate>,
    /// Tokens matched in the normalized text of each remaining segment (second pass).
    normalized: Option<PatternSet>,
    plain: bool,
}

impl SpecialMatcher {
    /// A plain matcher of allowed control tokens: matched in the raw text, no flags.
    pub fn new(specials: Vec<(String, u32)>) -> CoreResult<SpecialMatcher> {
        let flagged = specials
            .into_iter()
            .map(|(c, i)| (c, i, AddedFlags::default(), Gate::Control))
            .collect();
        SpecialMatcher::with_flags(flagged, None)
    }

    /// Tokens with Hugging Face's flags. `normalizer` is the tokenizer's: it normalizes
    /// the spellings of `normalized` tokens, as HF's `refresh_added_tokens` does. Without
    /// a normalizer, or when every token is `normalized`, HF's two passes find what one
    /// pass over the raw text finds, so the tokens are matched in one pass.
    pub fn with_flags(
        tokens: Vec<(String, u32, AddedFlags, Gate)>,
        normalizer: Option<&Normalizer>,
    ) -> CoreResult<SpecialMatcher> {
        let two_pass = normalizer.is_some() || tokens.iter().any(|t| !t.2.normalized);
        let (mut raw, mut norm) = (Vec::new(), Vec::new());
        for (content, id, flags, gate) in tokens {
            if content.is_empty() {
                return Err(CoreError::Artifact(format!(
                    "added token with ID {id} has an empty spelling; remove it"
                )));
            }
            if flags.normalized && two_pass {
                norm.push((content, id, flags, gate));
            } else {
                raw.push((content, id, flags, gate));
            }
        }
        let normalized = if norm.is_empty() {
            None
        } else {
            let mut patterns = Vec::with_capacity(norm.len());
            for (content, _, _, _) in &norm {
                let mut s = NormalizedString::new(content);
                if let Some(n) = normalizer {
                    n.apply(&mut s)?;
                }
                if s.text.is_empty() {
                    return Err(CoreError::Artifact(format!(
                        "added token {content:?} is normalized to the empty string, so it \
                         would match everywhere; set its normalized flag to false"
                    )));
                }
                patterns.push(s.text);
            }
            Some(PatternSet {
                ac: automaton(&patterns)?,
                ids: norm.iter().map(|t| t.1).collect(),
                flags: norm.iter().map(|t| t.2).collect(),
                gates: norm.iter().map(|t| t.3).collect(),
                contents: norm.into_iter().map(|t| t.0).collect(),
            })
        };
        let contents: Vec<String> = raw.iter().map(|t| t.0.clone()).collect();
        let flags: Vec<AddedFlags> = raw.iter().map(|t| t.2).collect();
        let plain = normalized.is_none() && flags.iter().all(|f| !f.single_word && !f.strips());
        Ok(SpecialMatcher {
            ac: automaton(&contents)?,
            ids: raw.iter().map(|t| t.1).collect(),
            gates: raw.iter().map(|t| t.3).collect(),
            contents,
            flags,
            normalized,
            plain,
        })
    }

    /// True when no token has a flag that changes matching: `find_all` is then exact.
    #[inline]
    pub fn is_plain(&self) -> bool {
        self.plain
    }

    /// Whether some tokens are matched in normalized text (HF's second pass).
    pub fn has_normalized(&self) -> bool {
        self.normalized.is_some()
    }

    /// Whether any pattern can become a token (a matcher of blocked controls only
    /// changes nothing and can be skipped).
    pub fn admits_any(&self) -> bool {
        let raw = self.gates.iter();
        let norm = self.normalized.iter().flat_map(|set| set.gates.iter());
        raw.chain(norm).any(|&g| g != Gate::Blocked)
    }

    /// Byte offset and index of the first (leftmost-longest) raw spelling in `text` that
    /// is not blocked.
    pub fn find_first(&self, text: &str) -> Option<(usize, usize, usize)> {
        self.find_all(text).next()
    }

    /// Spelling of the first normalized token in `normalized` (text already normalized).
    pub fn find_first_normalized(&self, normalized: &str) -> Option<&str> {
        let set = self.normalized.as_ref()?;
        set.ac
            .find_iter(normalized)
            .map(|m| m.pattern().as_usize())
            .find(|&i| set.gates[i] != Gate::Blocked)
            .map(|i| set.contents[i].as_str())
    }

    /// Non-overlapping raw matches, left to right: (start, end, index), blocked controls
    /// skipped in place. Flags ignored: only for plain matchers (see `is_plain`).
    pub fn find_all<'a>(
        &'a self,
        text: &'a str,
    ) -> impl Iterator<Item = (usize, usize, usize)> + 'a {
        self.ac
            .find_iter(text)
            .map(|m| (m.start(), m.end(), m.pattern().as_usize()))
            .filter(move |&(_, _, i)| self.gates[i] != Gate::Blocked)
    }

    /// The trust gate for plain matchers: non-overlapping raw matches, left to right,
    /// minus every control match that overlaps an untrusted byte range (ordinary added
    /// tokens are content and match there too). A dropped match stays ordinary text, so
    /// content spans never produce control IDs. Every encoder that honours untrusted
    /// spans goes through this or `Untrusted::allows`, nothing else.
    pub fn trusted_matches<'a>(
        &'a self,
        text: &'a str,
        untrusted: &'a Untrusted,
    ) -> impl Iterator<Item = (usize, usize, usize)> + 'a {
        self.find_all(text)
            .filter(move |&(s, e, i)| self.gates[i].admits(|| untrusted.allows(s, e)))
    }

    /// HF's first pass: raw-text tokens of `text` as (start, end, id), flags applied.
    /// `trusted(a, b)` says whether bytes `a..b` may belong to a token.
    pub fn raw_matches(
        &self,
        text: &str,
        trusted: &impl Fn(usize, usize) -> bool,
        out: &mut Vec<(usize, usize, u32)>,
    ) {
        let set = (&self.ac, self.ids.as_slice(), self.flags.as_slice());
        find_matches(set, &self.gates, text, trusted, out);
    }

    /// HF's second pass over the normalized text of one segment.
    pub fn normalized_matches(
        &self,
        text: &str,
        trusted: &impl Fn(usize, usize) -> bool,
        out: &mut Vec<(usize, usize, u32)>,
    ) {
        if let Some(set) = &self.normalized {
            let patterns = (&set.ac, set.ids.as_slice(), set.flags.as_slice());
            find_matches(patterns, &set.gates, text, trusted, out);
        }
    }
}

/// Untrusted byte ranges of one text, in the form the trust gate reads: sorted by start,
/// overlapping ranges merged. Built only by `Untrusted::new`, so no caller can hand the
/// gate ranges that break its binary search (a range nested in another, or given out of
/// order, would otherwise let a special spelling inside it through).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Untrusted(Vec<(usize, usize)>);

impl Untrusted {
    /// Normalizes caller ranges (any order, possibly overlapping). Ranges that only touch
    /// stay apart, so an empty query at their shared edge is judged exactly as before.
    pub fn new(mut ranges: Vec<(usize, usize)>) -> CoreResult<Untrusted> {
        if let Some(&(a, b)) = ranges.iter().find(|&&(a, b)| a > b) {
            return Err(CoreError::Config(format!(
                "untrusted span ({a}, {b}) ends before it starts; give (start, end) with \
                 start <= end"
            )));
        }
        ranges.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
        for (a, b) in ranges {
            match merged.last_mut() {
                Some(last) if a < last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        Ok(Untrusted(merged))
    }

    /// No untrusted ranges: every match is trusted.
    pub fn none() -> Untrusted {
        Untrusted(Vec::new())
    }

    pub fn ranges(&self) -> &[(usize, usize)] {
        &self.0
    }

    /// Whether raw bytes `a..b` may belong to a special token (see `trusted_span`).
    #[inline]
    pub fn allows(&self, a: usize, b: usize) -> bool {
        trusted_span(&self.0, a, b)
    }
}

/// Whether raw bytes `a..b` avoid every untrusted range (sorted by start, overlapping
/// ranges merged: `Untrusted`): the one definition of the project's trust rule (a
/// control ID never comes from content).
fn trusted_span(untrusted: &[(usize, usize)], a: usize, b: usize) -> bool {
    let i = untrusted.partition_point(|&(_, end)| end <= a);
    i == untrusted.len() || untrusted[i].0 >= b
}

impl AddedFlags {
    fn strips(&self) -> bool {
        self.lstrip || self.rstrip
    }
}

/// Rust `regex`'s `\w` (what HF's `^\w` / `\w$` test), applied to one character.
fn is_word_char(c: char) -> bool {
    static WORD: OnceLock<Option<Regex>> = OnceLock::new();
    let Some(re) = WORD.get_or_init(|| Regex::new(r"\A\w").ok()) else {
        return false;
    };
    let mut buf = [0u8; 4];
    re.is_match(c.encode_utf8(&mut buf)).unwrap_or(false)
}

/// HF's `find_matches`: the automaton's leftmost-longest matches, each then discarded
/// (`single_word` next to a word character) or widened over whitespace (`lstrip`,
/// never back past the previous token; `rstrip`). A widened token may overlap the next
/// match, which HF keeps as it is; so does this. A blocked control is skipped in place
/// (HF's `encode_special_tokens`). Untrusted bytes (`trusted` false) never become part
/// of a control token: a control match on them is skipped, and its stripping stops
/// there; ordinary added tokens are content and ignore the gate.
fn find_matches(
    (ac, ids, flags): (&AhoCorasick, &[u32], &[AddedFlags]),
    gates: &[Gate],
    text: &str,
    trusted: &impl Fn(usize, usize) -> bool,
    out: &mut Vec<(usize, usize, u32)>,
) {
    let mut start_offset = 0;
    for m in ac.find_iter(text) {
        let (mut start, mut stop) = (m.start(), m.end());
        let index = m.pattern().as_usize();
        let gate = gates[index];
        if !gate.admits(|| trusted(start, stop)) {
            continue;
        }
        let trusted = |a: usize, b: usize| gate == Gate::Ordinary || trusted(a, b);
        let f = flags[index];
        if f.single_word {
            let before = text[..start].chars().next_back().is_some_and(is_word_char);
            let after = text[stop..].chars().next().is_some_and(is_word_char);
            if before || after {
                continue;
            }
        }
        if f.lstrip {
            // `\s*$` on the text before: the start of its trailing whitespace run.
            let mut s = start;
            for (j, c) in text[..start].char_indices().rev() {
                if !c.is_whitespace() || !trusted(j, s) {
                    break;
                }
                s = j;
            }
            start = s.max(start_offset);
        }
        if f.rstrip {
            for c in text[stop..].chars() {
                let next = stop + c.len_utf8();
                if !c.is_whitespace() || !trusted(stop, next) {
                    break;
                }
                stop = next;
            }
        }
        out.push((start, stop, ids[index]));
        start_offset = stop;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(single_word: bool, lstrip: bool, rstrip: bool) -> AddedFlags {
        AddedFlags {
            single_word,
            lstrip,
            rstrip,
            normalized: false,
        }
    }

    fn matches(m: &SpecialMatcher, text: &str) -> Vec<(usize, usize, u32)> {
        let mut out = Vec::new();
        m.raw_matches(text, &|_, _| true, &mut out);
        out
    }

    #[test]
    fn trusted_span_checks_overlap_with_sorted_ranges() {
        let u = [(2, 4), (8, 9)];
        assert!(trusted_span(&u, 0, 2));
        assert!(!trusted_span(&u, 1, 3));
        assert!(trusted_span(&u, 4, 8));
        assert!(!trusted_span(&u, 8, 9));
        assert!(trusted_span(&u, 9, 12));
        assert!(trusted_span(&[], 0, 5));
    }

    /// The gate's answer by definition: does `a..b` meet any range (an empty range
    /// counts when it lies strictly inside).
    fn overlaps_any(ranges: &[(usize, usize)], a: usize, b: usize) -> bool {
        ranges.iter().any(|&(x, y)| y > a && x < b)
    }

    #[test]
    fn nested_and_unsorted_ranges_still_block_every_overlapping_match() {
        // A range nested in another (or given out of order) broke the binary search of
        // raw sorted ranges: a match inside the outer range passed the gate.
        let cases: [&[(usize, usize)]; 5] = [
            &[(0, 30), (1, 2)],
            &[(1, 2), (0, 30)],
            &[(0, 30), (1, 2), (20, 21)],
            &[(5, 5), (0, 5), (5, 10), (3, 3), (12, 20), (14, 15)],
            &[(4, 9), (2, 6), (8, 8), (9, 9)],
        ];
        for ranges in cases {
            let gate = Untrusted::new(ranges.to_vec()).unwrap();
            for a in 0..32 {
                for b in a..33 {
                    assert_eq!(
                        gate.allows(a, b),
                        !overlaps_any(ranges, a, b),
                        "{ranges:?} {a}..{b}"
                    );
                }
            }
        }
        assert!(Untrusted::new(vec![(3, 1)]).is_err());
        assert_eq!(
            Untrusted::new(vec![(0, 5), (5, 9)]).unwrap().ranges(),
            &[(0, 5), (5, 9)]
        );
    }

    #[test]
    fn trusted_matches_skip_spellings_inside_nested_untrusted_ranges() {
        let m = SpecialMatcher::new(vec![("<|eot|>".into(), 9)]).unwrap();
        let text = "aaaa<|eot|>bbbb<|eot|>";
        let gate = Untrusted::new(vec![(0, 15), (1, 2)]).unwrap();
        let kept: Vec<usize> = m.trusted_matches(text, &gate).map(|t| t.0).collect();
        assert_eq!(kept, vec![15]);
    }

    #[test]
    fn single_word_discards_matches_inside_words() {
        // HF's test_single_word_is_correct / _unicode_correct.
        let m = SpecialMatcher::with_flags(
            vec![("<mask>".into(), 0, flags(true, false, false), Gate::Control)],
            None,
        )
        .unwrap();
        let text = "<mask> My name <mask> A<mask> <mask>ony <mask>";
        let starts: Vec<usize> = matches(&m, text).iter().map(|t| t.0).collect();
        assert_eq!(starts, vec![0, 15, text.len() - 6]);
        let text = "<mask>, <mask>- \u{25cc}\u{330}<mask>";
        assert_eq!(matches(&m, text).len(), 2);
    }

    #[test]
    fn strips_absorb_unicode_whitespace_without_overlapping_the_previous_token() {
        let m = SpecialMatcher::with_flags(
            vec![("<mask>".into(), 7, flags(true, true, true), Gate::Control)],
            None,
        )
        .unwrap();
        let text = "Hi <mask> there\t<mask>\t<mask>\u{2000}";
        let spans: Vec<&str> = matches(&m, text)
            .iter()
            .map(|&(s, e, _)| &text[s..e])
            .collect();
        assert_eq!(spans, vec![" <mask> ", "\t<mask>\t", "<mask>\u{2000}"]);
    }

    #[test]
    fn untrusted_bytes_are_never_absorbed() {
        let m = SpecialMatcher::with_flags(
            vec![("<m>".into(), 1, flags(false, true, true), Gate::Control)],
            None,
        )
        .unwrap();
        let text = "a  <m>  b";
        let mut out = Vec::new();
        // Bytes 0..2 and 7..9 are untrusted: only the inner spaces are absorbed.
        let trusted = |a: usize, b: usize| a >= 2 && b <= 7;
        m.raw_matches(text, &trusted, &mut out);
        assert_eq!(out, vec![(2, 7, 1)]);
        assert!(!m.is_plain());
    }

    #[test]
    fn plain_tokens_keep_the_fast_path_and_empty_spellings_are_refused() {
        let m = SpecialMatcher::new(vec![("<a>".into(), 1)]).unwrap();
        assert!(m.is_plain());
        let normalized_only = AddedFlags {
            normalized: true,
            ..AddedFlags::default()
        };
        // Without a normalizer, all-normalized tokens are one raw pass.
        let m = SpecialMatcher::with_flags(
            vec![("<a>".into(), 1, normalized_only, Gate::Control)],
            None,
        )
        .unwrap();
        assert!(m.is_plain());
        let mixed = vec![
            ("<a>".into(), 1, normalized_only, Gate::Control),
            ("<b>".into(), 2, AddedFlags::default(), Gate::Control),
        ];
        let m = SpecialMatcher::with_flags(mixed, None).unwrap();
        assert!(!m.is_plain() && m.has_normalized());
        assert!(SpecialMatcher::new(vec![(String::new(), 1)]).is_err());
    }

    #[test]
    fn gates_decide_per_pattern_what_a_match_becomes() {
        let plain = AddedFlags::default();
        let m = SpecialMatcher::with_flags(
            vec![
                ("<think>".into(), 5, plain, Gate::Ordinary),
                ("<|eot|>".into(), 9, plain, Gate::Control),
                ("<|end|>".into(), 7, plain, Gate::Blocked),
            ],
            None,
        )
        .unwrap();
        assert!(m.is_plain() && m.admits_any());
        let text = "<think>a<|eot|>b<|end|>";
        let all: Vec<usize> = m.find_all(text).map(|t| t.2).collect();
        // The blocked control is skipped in place; the other two match.
        assert_eq!(all.len(), 2);
        // Content over the whole text: the ordinary token still matches, the control not.
        let gate = Untrusted::new(vec![(0, text.len())]).unwrap();
        let kept: Vec<u32> = m.trusted_matches(text, &gate).map(|t| m.ids[t.2]).collect();
        assert_eq!(kept, vec![5]);
        let only_blocked =
            SpecialMatcher::with_flags(vec![("<x>".into(), 1, plain, Gate::Blocked)], None)
                .unwrap();
        assert!(!only_blocked.admits_any());
        assert_eq!(only_blocked.find_first("a<x>"), None);
    }

    #[test]
    fn a_blocked_control_hides_an_overlapping_ordinary_token_as_hf_does() {
        // HF's automaton holds every added token and skips a special it may not emit;
        // the leftmost-longest match it skipped still hides what overlaps it.
        let plain = AddedFlags::default();
        let m = SpecialMatcher::with_flags(
            vec![
                ("<|im_end|>".into(), 9, plain, Gate::Blocked),
                ("end|>".into(), 4, plain, Gate::Ordinary),
            ],
            None,
        )
        .unwrap();
        assert_eq!(m.find_all("<|im_end|>").count(), 0);
        assert_eq!(m.find_all("x end|>").count(), 1);
    }

    #[test]
    fn ordinary_tokens_strip_over_untrusted_whitespace_but_controls_do_not() {
        let strip = flags(false, true, true);
        let text = "a  <o>  <c>  b";
        let m = SpecialMatcher::with_flags(
            vec![
                ("<o>".into(), 1, strip, Gate::Ordinary),
                ("<c>".into(), 2, strip, Gate::Control),
            ],
            None,
        )
        .unwrap();
        let mut out = Vec::new();
        // Everything but the control's own bytes is untrusted.
        let trusted = |a: usize, b: usize| a >= 8 && b <= 11;
        m.raw_matches(text, &trusted, &mut out);
        assert_eq!(out, vec![(1, 8, 1), (8, 11, 2)]);
    }
}
