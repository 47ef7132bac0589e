//! SentencePiece's precompiled charsmap as Hugging Face's `Precompiled` normalizer
//! applies it (`tokenizers/src/normalizers/precompiled.rs` over the `spm_precompiled`
//! crate), with its offsets.
//!
//! HF differs from SentencePiece's own normalizer (`crate::sentencepiece::normalizer`):
//! it walks extended grapheme clusters; a cluster shorter than 6 bytes is rewritten
//! whole by the *shortest* rule matching a prefix of it (the rest of the cluster is
//! dropped), otherwise each char is rewritten on its own. The alignment protocol is
//! HF's too, including its odd changes: the first new char of a rewrite gets change
//! `new_count - old_count` (so a longer output *inserts* its first char and the old
//! chars are consumed by later items) and the i-th next char change `i`.

use base64::Engine as _;
use unicode_segmentation::UnicodeSegmentation;

use super::NormalizedString;
use crate::error::{CoreError, CoreResult};
use crate::sentencepiece::normalizer::Charsmap;

pub struct Precompiled {
    charsmap: Charsmap,
}

fn broken(what: &str) -> CoreError {
    CoreError::Artifact(format!(
        "normalizer.precompiled_charsmap: {what}; the charsmap is damaged, convert the \
         tokenizer again"
    ))
}

impl Precompiled {
    /// From the base64 `precompiled_charsmap` of a `tokenizer.json` node.
    pub fn from_base64(text: &str) -> CoreResult<Precompiled> {
        let blob = base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| broken(&format!("not base64 ({e})")))?;
        // Charsmap's own message names SentencePiece's field; name the JSON one first.
        let charsmap = Charsmap::from_blob(&blob)
            .map_err(|e| CoreError::Artifact(format!("normalizer.precompiled_charsmap: {e}")))?;
        // spm_precompiled refuses a rule pool that is not UTF-8.
        if std::str::from_utf8(charsmap.outputs()).is_err() {
            return Err(broken("the rule outputs are not UTF-8"));
        }
        Ok(Precompiled { charsmap })
    }

    fn transform(&self, chunk: &str) -> Option<&str> {
        // Outputs are UTF-8 (checked at load); a rule pointing inside a char is no rule.
        std::str::from_utf8(self.charsmap.first_rewrite(chunk.as_bytes())?).ok()
    }

    pub fn apply(&self, s: &mut NormalizedString) {
        let mut items: Vec<(char, isize)> = Vec::with_capacity(s.text.len());
        let mut modified = false;
        let push = |old: &str, new: &str, items: &mut Vec<(char, isize)>| {
            let old_count = old.chars().count() as isize;
            let new_count = new.chars().count() as isize;
            for (i, c) in new.chars().enumerate() {
                let change = if i == 0 {
                    new_count - old_count
                } else {
                    i as isize
                };
                items.push((c, change));
            }
        };
        for grapheme in s.text.graphemes(true) {
            if grapheme.len() < 6 {
                if let Some(norm) = self.transform(grapheme) {
                    modified = true;
                    push(grapheme, norm, &mut items);
                    continue;
                }
            }
            for (i, c) in grapheme.char_indices() {
                let part = &grapheme[i..i + c.len_utf8()];
                match self.transform(part) {
                    Some(norm) => {
                        modified = true;
                        push(part, norm, &mut items);
                    }
                    None => items.push((c, 0)),
                }
            }
        }
        if modified {
            s.transform(items, 0);
        }
    }
}
