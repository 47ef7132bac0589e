//! Builds the pipeline components (normalizer, model, decoder) from one JSON config,
//! whose nodes follow Hugging Face `tokenizer.json` (the Python loader validates and
//! passes them through).

use serde_json::Value;

use crate::bpe::model::BpeModel;
use crate::decoder::Decoder;
use crate::error::{CoreError, CoreResult};
use crate::model::Model;
use crate::normalize::Normalizer;
use crate::wordpiece::{WordLevel, WordPiece};

pub struct Components {
    pub model: Model,
    pub normalizer: Option<Normalizer>,
    pub decoder: Decoder,
}

fn string(node: &Value, key: &str, default: &str) -> String {
    node.get(key)
        .and_then(Value::as_str)
        .unwrap_or(default)
        .to_owned()
}

/// `config`: `{"normalizer": node | null, "model": node, "decoder": node | null}`;
/// `vocab[id]` is each model piece (raw bytes for BPE, the token string otherwise) and
/// `records` the BPE merges `(left, right, new_id)`.
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
        "BPE" => {
            let ignore = m
                .get("ignore_merges")
                .and_then(Value::as_bool)
                .unwrap_or(false);
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
        other => {
            return Err(CoreError::Artifact(format!(
                "model type {other:?} is not supported; supported: BPE, WordPiece, WordLevel"
            )))
        }
    };
    let d = config.get("decoder").unwrap_or(&Value::Null);
    let decoder = match d.get("type").and_then(Value::as_str) {
        None | Some("ByteLevel") => Decoder::Bytes,
        Some("WordPiece") => Decoder::WordPiece {
            prefix: string(d, "prefix", "##"),
            cleanup: d.get("cleanup").and_then(Value::as_bool).unwrap_or(true),
        },
        Some(other) => {
            return Err(CoreError::Artifact(format!(
                "decoder type {other:?} is not supported; supported: ByteLevel, WordPiece"
            )))
        }
    };
    Ok(Components {
        model,
        normalizer,
        decoder,
    })
}
