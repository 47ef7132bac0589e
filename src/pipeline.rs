//! Builds the pipeline components (normalizer, model, decoder) from one JSON config,
//! whose nodes follow Hugging Face `tokenizer.json` (the Python loader validates and
//! passes them through).

use serde_json::Value;

use crate::bpe::hf_chars::{HfBpeOptions, HfCharBpe};
use crate::bpe::model::BpeModel;
use crate::decoder::Decoder;
use crate::error::{CoreError, CoreResult};
use crate::hf_unigram::HfUnigram;
use crate::model::Model;
use crate::normalize::Normalizer;
use crate::wordpiece::{WordLevel, WordPiece};

pub struct Components {
    pub model: Model,
    pub normalizer: Option<Normalizer>,
    pub decoder: Decoder,
}

fn flag(node: &Value, key: &str) -> bool {
    node.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn optional(node: &Value, key: &str) -> Option<String> {
    node.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn hf_bpe_options(m: &Value) -> HfBpeOptions {
    HfBpeOptions {
        continuing_subword_prefix: optional(m, "continuing_subword_prefix"),
        end_of_word_suffix: optional(m, "end_of_word_suffix"),
        unk_token: optional(m, "unk_token"),
        fuse_unk: flag(m, "fuse_unk"),
        byte_fallback: flag(m, "byte_fallback"),
        ignore_merges: flag(m, "ignore_merges"),
        dropout: m.get("dropout").and_then(Value::as_f64),
    }
}

fn string(node: &Value, key: &str, default: &str) -> String {
    node.get(key)
        .and_then(Value::as_str)
        .unwrap_or(default)
        .to_owned()
}

/// A Unigram model node: `scores` (one per piece, in ID order, as decimal strings),
/// `unk_id` (null or an ID) and `byte_fallback`. The loader moves the file's `[[piece, score], ...]` into
/// `vocab` and `scores`.
///
/// Scores are parsed by serde_json's default float parser, as `tokenizers` parses them:
/// it can be one ulp off the correctly rounded value, and Viterbi ties between equal
/// piece sequences in a different order are decided by those last bits. The loader
/// writes each score with its shortest digits (Python `repr`), which is how HF saves
/// them, so both parsers see the same significand and exponent (the `float_roundtrip` feature would
/// make tokenpact pick other, equally good, segmentations).
fn unigram(m: &Value, vocab: Vec<Vec<u8>>) -> CoreResult<HfUnigram> {
    let bad = |what: &str| CoreError::Artifact(format!("model (Unigram): {what}"));
    let scores = m
        .get("scores")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("needs a list of piece scores"))?
        .iter()
        .map(|v| {
            // A decimal string (the canonical form, which allows no floats) or a number.
            let parsed = match v {
                Value::String(s) => serde_json::from_str::<f64>(s).ok(),
                other => other.as_f64(),
            };
            parsed.ok_or_else(|| bad(&format!("score {v} is not a number")))
        })
        .collect::<CoreResult<Vec<f64>>>()?;
    let unk_id = match m.get("unk_id") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|u| u32::try_from(u).ok())
                .ok_or_else(|| bad(&format!("unk_id {v} is not an ID")))?,
        ),
    };
    let byte_fallback = m
        .get("byte_fallback")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    HfUnigram::new(vocab, scores, unk_id, byte_fallback)
}

/// `config`: `{"normalizer": node | null, "model": node, "decoder": node | null,
/// "byte_level": bool}` (`byte_level: false` selects BPE over characters);
/// `vocab[id]` is each model piece (raw bytes for byte-level BPE, the token string
/// otherwise) and `records` the BPE merges `(left, right, new_id)`.
pub fn build(
    config: &str,
    vocab: Vec<Vec<u8>>,
    records: &[(u32, u32, u32)],
) -> CoreResult<Components> {
    let config: Value = serde_json::from_str(config)
        .map_err(|e| CoreError::Config(format!("pipeline config is not JSON: {e}")))?;
    let normalizer = match config.get("normalizer") {
        None | Some(Value::Null) => None,
        Some(node) => Some(Normalizer::from_json(node)?),
    };
    let m = config.get("model").unwrap_or(&Value::Null);
    let model = match m.get("type").and_then(Value::as_str).unwrap_or("") {
        // The loader marks a BPE without ByteLevel (pieces are strings, not bytes).
        "BPE" if config.get("byte_level") == Some(&Value::Bool(false)) => {
            Model::HfBpe(Box::new(HfCharBpe::new(vocab, records, hf_bpe_options(m))?))
        }
        "BPE" => {
            let ignore = flag(m, "ignore_merges");
            Model::Bpe(Box::new(BpeModel::from_records(vocab, records, ignore)?))
        }
        "WordPiece" => Model::WordPiece(WordPiece::new(
            vocab,
            &string(m, "unk_token", "[UNK]"),
            &string(m, "continuing_subword_prefix", "##"),
            m.get("max_input_chars_per_word")
                .and_then(Value::as_u64)
                .unwrap_or(100) as usize,
        )?),
        "WordLevel" => Model::WordLevel(WordLevel::new(vocab, &string(m, "unk_token", "<unk>"))?),
        "Unigram" => Model::Unigram(unigram(m, vocab)?),
        other => {
            return Err(CoreError::Artifact(format!(
                "model type {other:?} is not supported; supported: BPE, WordPiece, WordLevel, \
                 Unigram"
            )))
        }
    };
    let d = config.get("decoder").unwrap_or(&Value::Null);
    let decoder = match (&model, d.get("type").and_then(Value::as_str)) {
        // Byte-level pieces are raw bytes: ByteLevel (or no decoder) concatenates them.
        (Model::Bpe(_), None | Some("ByteLevel")) => Decoder::Bytes,
        (Model::Bpe(_), Some(other)) => {
            return Err(CoreError::Artifact(format!(
                "decoder type {other:?} is not supported with a byte-level BPE model; \
                 supported: ByteLevel"
            )))
        }
        _ => Decoder::from_json(d)?,
    };
    Ok(Components {
        model,
        normalizer,
        decoder,
    })
}
