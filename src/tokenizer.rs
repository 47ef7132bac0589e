//! The core tokenizer: pre-tokenizer + BPE model + special tokens. Encodes text to IDs
//! and IDs back to bytes. No Python types here.

use rustc_hash::FxHashMap;

use crate::bpe::model::BpeModel;
use crate::error::{CoreError, CoreResult};
use crate::pretok::Pretokenizer;
use crate::special::SpecialMatcher;

pub struct CoreTokenizer {
    pub model: BpeModel,
    pub pretok: Pretokenizer,
    pub specials: FxHashMap<u32, Vec<u8>>,
}

impl CoreTokenizer {
    pub fn new(
        model: BpeModel,
        pretok: Pretokenizer,
        specials: Vec<(String, u32)>,
    ) -> CoreResult<CoreTokenizer> {
        let mut map = FxHashMap::default();
        for (content, id) in specials {
            if (id as usize) < model.vocab.len() {
                return Err(CoreError::Artifact(format!(
                    "special token {content:?} has ID {id}, which belongs to the model \
                     vocabulary (0..{}); give special tokens IDs after the vocabulary",
                    model.vocab.len()
                )));
            }
            if map.insert(id, content.clone().into_bytes()).is_some() {
                return Err(CoreError::Artifact(format!(
                    "special token ID {id} is used twice; give each special token its own ID"
                )));
            }
        }
        Ok(CoreTokenizer {
            model,
            pretok,
            specials: map,
        })
    }

    /// Encodes text with no special-token recognition.
    pub fn encode_ordinary(&self, text: &str, out: &mut Vec<u32>) -> CoreResult<()> {
        let bytes = text.as_bytes();
        let model = &self.model;
        self.pretok
            .split(text, |s, e| model.encode_piece(&bytes[s..e], out))
    }

    /// Encodes text, turning spellings found by `allowed` into their special IDs.
    pub fn encode(
        &self,
        text: &str,
        allowed: Option<&SpecialMatcher>,
        out: &mut Vec<u32>,
    ) -> CoreResult<()> {
        let Some(matcher) = allowed else {
            return self.encode_ordinary(text, out);
        };
        let mut pos = 0;
        for (s, e, idx) in matcher.find_all(text) {
            self.encode_ordinary(&text[pos..s], out)?;
            out.push(matcher.ids[idx]);
            pos = e;
        }
        self.encode_ordinary(&text[pos..], out)
    }

    pub fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        match self.model.vocab.get(id as usize) {
            Some(b) => Some(b),
            None => self.specials.get(&id).map(|v| v.as_slice()),
        }
    }

    pub fn decode_bytes(&self, ids: &[u32]) -> CoreResult<Vec<u8>> {
        let mut out = Vec::with_capacity(ids.len() * 4);
        for &id in ids {
            match self.token_bytes(id) {
                Some(b) => out.extend_from_slice(b),
                None => {
                    return Err(CoreError::UnknownToken(format!(
                        "token ID {id} is not in this tokenizer (vocabulary has IDs 0..{} \
                         plus {} special IDs); check that the IDs come from this tokenizer",
                        self.model.vocab.len(),
                        self.specials.len()
                    )))
                }
            }
        }
        Ok(out)
    }
}
