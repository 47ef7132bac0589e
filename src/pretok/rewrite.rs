//! Pre-tokenizers that change the text before splitting: Hugging Face's `Metaspace`
//! (spaces become the replacement char, which is also prepended) and
//! `ByteLevel(add_prefix_space=true)` (a space is prepended).
//!
//! HF applies them to each piece the pre-tokenizer receives; tokenpact supports them as
//! the first step of the chain, where that piece is one whole special-token segment.
//! The rewrite runs on the segment's `NormalizedString`, so offsets map back through
//! it exactly as HF's: a prepended char takes the alignment of the first char.

use crate::error::{CoreError, CoreResult};
use crate::normalize::normalizer::{Normalizer, Pattern};
use crate::normalize::NormalizedString;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrependScheme {
    Always,
    /// Only for the segment that starts the input (HF: original offset 0), so not for
    /// text right after an added token.
    First,
    Never,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rewrite {
    Metaspace {
        replacement: char,
        prepend: PrependScheme,
    },
    /// ByteLevel's `add_prefix_space`: a space before a segment not starting with one.
    PrefixSpace,
}

/// Step names that select a rewrite: `hf:metaspace_always`, `hf:metaspace_first`,
/// `hf:metaspace_never` (the step's pattern is the replacement char) and
/// `hf:prefix_space`. The split that follows Metaspace is an ordinary step.
impl Rewrite {
    pub fn from_step(name: &str, pattern: &str) -> CoreResult<Option<Rewrite>> {
        let prepend = match name {
            "hf:prefix_space" => return Ok(Some(Rewrite::PrefixSpace)),
            "hf:metaspace_always" => PrependScheme::Always,
            "hf:metaspace_first" => PrependScheme::First,
            "hf:metaspace_never" => PrependScheme::Never,
            _ => return Ok(None),
        };
        let mut chars = pattern.chars();
        match (chars.next(), chars.next()) {
            (Some(replacement), None) => Ok(Some(Rewrite::Metaspace {
                replacement,
                prepend,
            })),
            _ => Err(CoreError::Config(format!(
                "Metaspace needs exactly one replacement char, got {pattern:?}"
            ))),
        }
    }

    /// Rewrites one segment; `first`: the segment starts the input.
    pub fn apply(&self, s: &mut NormalizedString, first: bool) -> CoreResult<()> {
        match *self {
            Rewrite::PrefixSpace => {
                if !s.text.starts_with(' ') {
                    s.prepend(" ");
                }
            }
            Rewrite::Metaspace {
                replacement,
                prepend,
            } => {
                // HF: `normalized.replace(' ', replacement)`, then the prepend scheme.
                if s.text.contains(' ') {
                    Normalizer::Replace {
                        pattern: Pattern::String(" ".to_owned()),
                        content: replacement.to_string(),
                    }
                    .apply(s)?;
                }
                let wanted = match prepend {
                    PrependScheme::Always => true,
                    PrependScheme::First => first,
                    PrependScheme::Never => false,
                };
                if wanted && !s.text.starts_with(replacement) {
                    s.prepend(replacement.encode_utf8(&mut [0u8; 4]));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(r: &Rewrite, text: &str, first: bool) -> NormalizedString {
        let mut s = NormalizedString::new(text);
        r.apply(&mut s, first).unwrap();
        s
    }

    #[test]
    fn metaspace_prepends_per_scheme_onto_the_first_char() {
        let first = Rewrite::from_step("hf:metaspace_first", "\u{2581}")
            .unwrap()
            .unwrap();
        let s = rewrite(&first, "ab c", true);
        assert_eq!(s.text, "\u{2581}ab\u{2581}c");
        assert_eq!(s.original_span(0, 4), (0, 1)); // "▁a" covers "a"
        assert_eq!(s.original_span(5, 8), (2, 3)); // the replaced space
        assert_eq!(rewrite(&first, "ab", false).text, "ab");
        assert_eq!(rewrite(&first, " x", true).text, "\u{2581}x");
        assert_eq!(rewrite(&first, "", true).text, "");
    }

    #[test]
    fn prefix_space_only_when_missing() {
        let r = Rewrite::from_step("hf:prefix_space", "").unwrap().unwrap();
        assert_eq!(rewrite(&r, "hi", false).text, " hi");
        assert_eq!(rewrite(&r, " hi", true).text, " hi");
        assert!(Rewrite::from_step("hf:metaspace_always", "ab").is_err());
        assert!(Rewrite::from_step("gpt2", "").unwrap().is_none());
    }
}
