//! SentencePiece's precompiled charsmap as Hugging Face's `Precompiled` normalizer
//! applies it (`tokenizers/src/normalizers/precompiled.rs` over the `spm_precompiled`
//! crate), with its offsets.
//!
//! HF differs from SentencePiece's own normalizer (`crate::sentencepiece::normalizer`):
//! it walks extended grapheme clusters; a cluster shorter than 6 bytes is rewritten
//! whole by the *shortest* rule matching a prefix of it (the rest of the cluster is
//! dropped), otherwise each char is rewritten on its own. Alignments follow HF's
//! `replace` helper: the new chars take the old chars' alignments in order, extra new
//! chars are inserted (they inherit the alignment before them), and a shorter output's
//! last char absorbs the surplus old chars. Note that HF's `items.last_mut()` for an
//! empty output adjusts the previous grapheme's last item, which is reproduced.

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
        // `<u32 trie size><trie units><NUL-separated outputs>`, checked here so the
        // message names this file's field (Charsmap's names SentencePiece's).
        let size = match blob.get(..4) {
            Some(h) if blob.len() > 4 => u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize,
            _ => return Err(broken("shorter than its 4-byte header")),
        };
        if size == 0 || !size.is_multiple_of(4) || 4 + size > blob.len() {
            return Err(broken(&format!(
                "the trie size {size} is not a positive multiple of 4 within the {} bytes",
                blob.len()
            )));
        }
        let charsmap = Charsmap::from_blob(&blob).map_err(|e| broken(&e.to_string()))?;
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
        // HF's `replace`: every new char replaces an old one (change 0); a longer output
        // marks its last `diff` chars as inserted, a shorter one lets its last char
        // remove the surplus old chars.
        let push = |old: &str, new: &str, items: &mut Vec<(char, isize)>| {
            let first = items.len();
            items.extend(new.chars().map(|c| (c, 0)));
            let diff = new.chars().count() as isize - old.chars().count() as isize;
            if diff > 0 {
                for item in items[first..].iter_mut().rev().take(diff as usize) {
                    item.1 = 1;
                }
            } else if diff < 0 {
                if let Some(last) = items.last_mut() {
                    last.1 += diff;
                }
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
