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
