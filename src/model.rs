//! The segmentation model of a tokenizer: one enum over the engines, so the pipeline
//! (normalizer, pre-tokenizer, specials, offsets) is written once.

use rustc_hash::FxHashSet;

use crate::bpe::hf_chars::HfCharBpe;
use crate::bpe::model::BpeModel;
use crate::error::CoreResult;
use crate::hf_unigram::HfUnigram;
use crate::wordpiece::{WordLevel, WordPiece};

pub enum Model {
    // Boxed: the BPE model carries a 1 KB byte table inline.
    Bpe(Box<BpeModel>),
    /// Hugging Face BPE over characters (UTF-8 pieces, byte fallback, unk).
    HfBpe(Box<HfCharBpe>),
    WordPiece(WordPiece),
    WordLevel(WordLevel),
    Unigram(HfUnigram),
}

impl Model {
    /// Piece of every model ID: raw bytes for byte-level BPE, the token string (UTF-8)
    /// otherwise.
    pub fn vocab(&self) -> &[Vec<u8>] {
        match self {
            Model::Bpe(m) => &m.vocab,
            Model::HfBpe(m) => &m.vocab,
            Model::WordPiece(m) => &m.vocab,
            Model::WordLevel(m) => &m.vocab,
            Model::Unigram(m) => &m.vocab,
        }
    }

    /// Makes the model IDs in `controls` (the tokenizer's control tokens) unreachable from
    /// text: a vocabulary may spell a control as an ordinary piece (`</s>` in a Unigram
    /// file converted from SentencePiece), and segmentation must never emit it from
    /// content. Each model then treats the spelling as text it has no single piece for.
    /// The unknown-token fallback still emits `unk` for text the vocabulary cannot spell.
    pub fn forbid(&mut self, controls: &FxHashSet<u32>) {
        match self {
            Model::Bpe(m) => m.forbid(controls),
            Model::HfBpe(m) => m.forbid(controls),
            Model::WordPiece(m) => m.forbid(controls),
            Model::WordLevel(m) => m.forbid(controls),
            Model::Unigram(m) => m.forbid(controls),
        }
    }

    pub fn as_bpe(&self) -> Option<&BpeModel> {
        match self {
            Model::Bpe(m) => Some(m),
            _ => None,
        }
    }

    /// IDs of one pre-token. Only Unigram can fail (an uncovered character and no
    /// `unk_id`, which `tokenizers` reports as an error too).
    #[inline]
    pub fn encode_piece(&self, piece: &[u8], ids: &mut Vec<u32>) -> CoreResult<()> {
        match self {
            Model::Bpe(m) => m.encode_piece(piece, ids),
            Model::HfBpe(m) => m.encode_piece(piece, ids),
            Model::WordPiece(m) => {
                let mut spans = Vec::new();
                m.encode_spans(piece, ids, &mut spans);
            }
            Model::WordLevel(m) => {
                let mut spans = Vec::new();
                m.encode_spans(piece, ids, &mut spans);
            }
            Model::Unigram(m) => return m.encode_spans(piece, ids, &mut Vec::new()),
        }
        Ok(())
    }

    /// IDs of one pre-token with each token's byte span relative to the pre-token.
    #[inline]
    pub fn encode_spans(
        &self,
        piece: &[u8],
        ids: &mut Vec<u32>,
        spans: &mut Vec<(u32, u32)>,
    ) -> CoreResult<()> {
        match self {
            Model::Bpe(m) => {
                let first = ids.len();
                m.encode_piece(piece, ids);
                let mut at = 0u32;
                for &id in &ids[first..] {
                    let len = m.token_len(id) as u32;
                    spans.push((at, at + len));
                    at += len;
                }
            }
            Model::HfBpe(m) => m.encode_spans(piece, ids, spans),
            Model::WordPiece(m) => m.encode_spans(piece, ids, spans),
            Model::WordLevel(m) => m.encode_spans(piece, ids, spans),
            Model::Unigram(m) => return m.encode_spans(piece, ids, spans),
        }
        Ok(())
    }
}
