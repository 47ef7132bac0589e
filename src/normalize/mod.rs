//! Normalization with alignment tracking, with Hugging Face `tokenizers` semantics.
//!
//! A `NormalizedString` holds the normalized text and, for every normalized byte, the
//! byte range of the original text it came from. Token offsets map back to the raw
//! string as `(align[first byte].0, align[last byte].1)`, exactly as HF reports them.
//! Every normalizer is expressed through `transform_range`, which reproduces HF's
//! `(char, change)` protocol, so offsets agree even where HF's alignment is surprising
//! (an inserted char inherits the alignment of the char before it).

pub mod normalizer;
pub mod precompiled;
pub mod tables;
pub mod unicode;

pub use normalizer::Normalizer;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NormalizedString {
    pub text: String,
    /// Original byte range of each normalized byte (relative to the original string).
    pub align: Vec<(u32, u32)>,
}

impl NormalizedString {
    pub fn new(original: &str) -> NormalizedString {
        let mut align = Vec::with_capacity(original.len());
        for (i, c) in original.char_indices() {
            let span = (i as u32, (i + c.len_utf8()) as u32);
            align.extend(std::iter::repeat_n(span, c.len_utf8()));
        }
        NormalizedString {
            text: original.to_owned(),
            align,
        }
    }

    /// Original byte range covered by normalized bytes `start..end` (non-empty).
    #[inline]
    pub fn original_span(&self, start: usize, end: usize) -> (u32, u32) {
        match (
            self.align.get(start),
            end.checked_sub(1).and_then(|e| self.align.get(e)),
        ) {
            (Some(a), Some(b)) if end > start => (a.0, b.1),
            _ => (0, 0),
        }
    }

    /// Replaces normalized bytes `start..end` with `items`, HF's protocol: each item is a
    /// new char with `change` 0 (replaces the next old char), `n > 0` (inserted; takes the
    /// alignment of the byte before) or `-n` (replaces the next old char and removes the
    /// `n` after it). `skip` old chars at the start of the range are removed first.
    pub fn transform_range(
        &mut self,
        start: usize,
        end: usize,
        items: impl IntoIterator<Item = (char, isize)>,
        skip: usize,
    ) {
        let mut old = self.text[start..end].chars();
        let mut offset = start;
        for c in old.by_ref().take(skip) {
            offset += c.len_utf8();
        }
        let mut text = String::with_capacity(end - start);
        let mut align = Vec::with_capacity(end - start);
        for (c, change) in items {
            let a = if change > 0 {
                if offset == 0 {
                    (0, 0)
                } else {
                    self.align[offset - 1]
                }
            } else {
                self.align.get(offset).copied().unwrap_or((0, 0))
            };
            if change <= 0 {
                offset += old.next().map_or(0, char::len_utf8);
            }
            for _ in 0..(-change).max(0) {
                offset += old.next().map_or(0, char::len_utf8);
            }
            align.extend(std::iter::repeat_n(a, c.len_utf8()));
            text.push(c);
        }
        self.align.splice(start..end, align);
        self.text.replace_range(start..end, &text);
    }

    /// `transform_range` over the whole string.
    pub fn transform(&mut self, items: impl IntoIterator<Item = (char, isize)>, skip: usize) {
        let len = self.text.len();
        self.transform_range(0, len, items, skip);
    }

    /// Keeps the chars for which `keep` holds (HF `filter`: a kept char absorbs the
    /// removed chars after it, so it keeps its own alignment).
    pub fn filter(&mut self, keep: impl Fn(char) -> bool) {
        if self.text.chars().all(&keep) {
            return;
        }
        let mut items: Vec<(char, isize)> = Vec::with_capacity(self.text.len());
        let mut removed = 0isize;
        for c in self.text.chars().rev() {
            if keep(c) {
                items.push((c, -removed));
                removed = 0;
            } else {
                removed += 1;
            }
        }
        items.reverse();
        self.transform(items, removed as usize);
    }

    /// Puts `p` in front of a non-empty string (HF `prepend`): every new char takes the
    /// alignment of the first char, so a token made of the prefix and the first char
    /// covers that char's original range.
    pub fn prepend(&mut self, p: &str) {
        if let Some(first) = self.text.chars().next() {
            let items: Vec<(char, isize)> = p
                .chars()
                .enumerate()
                .map(|(i, c)| (c, if i == 0 { 0 } else { 1 }))
                .chain(std::iter::once((first, 1)))
                .collect();
            self.transform_range(0, first.len_utf8(), items, 0);
        }
    }

    /// Maps every char to one char (alignments unchanged).
    pub fn map(&mut self, f: impl Fn(char) -> char) {
        let items: Vec<(char, isize)> = self.text.chars().map(|c| (f(c), 0)).collect();
        self.transform(items, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserted_chars_inherit_the_previous_alignment() {
        let mut s = NormalizedString::new("ab");
        s.transform([('x', 0), ('y', 1), ('b', 0)], 0);
        assert_eq!(s.text, "xyb");
        assert_eq!(s.align, vec![(0, 1), (0, 1), (1, 2)]);
    }

    #[test]
    fn removal_keeps_the_kept_chars_alignment() {
        let mut s = NormalizedString::new("\u{0}a\u{1}b");
        s.filter(|c| !c.is_control());
        assert_eq!(s.text, "ab");
        assert_eq!(s.align, vec![(1, 2), (3, 4)]);
        assert_eq!(s.original_span(0, 2), (1, 4));
    }

    #[test]
    fn nfc_composite_points_at_its_base() {
        let mut s = NormalizedString::new("e\u{301}x");
        Normalizer::Unicode(unicode::Form::Nfc)
            .apply(&mut s)
            .unwrap();
        assert_eq!(s.text, "\u{e9}x");
        assert_eq!(s.original_span(0, 2), (0, 1));
        assert_eq!(s.original_span(2, 3), (3, 4));
    }
}
