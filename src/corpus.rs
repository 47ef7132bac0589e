//! Reading training files directly in Rust: plain text (one document per line, newline
//! kept) and JSON Lines (a string field per record), either optionally gzip-compressed.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};

use flate2::read::MultiGzDecoder;

use crate::error::{CoreError, CoreResult};

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    Text,
    Jsonl,
}

fn open(path: &str) -> CoreResult<Box<dyn BufRead>> {
    let mut file = File::open(path)
        .map_err(|e| CoreError::Io(format!("cannot open training file {path}: {e}")))?;
    let mut magic = [0u8; 2];
    let n = file
        .read(&mut magic)
        .map_err(|e| CoreError::Io(format!("cannot read {path}: {e}")))?;
    let file = File::open(path)
        .map_err(|e| CoreError::Io(format!("cannot open training file {path}: {e}")))?;
    if n == 2 && magic == [0x1f, 0x8b] {
        Ok(Box::new(BufReader::with_capacity(
            1 << 20,
            MultiGzDecoder::new(file),
        )))
    } else {
        Ok(Box::new(BufReader::with_capacity(1 << 20, file)))
    }
}

/// Streams the documents of one file to `sink` in batches of about `batch_bytes`.
pub fn read_file(
    path: &str,
    format: FileFormat,
    text_field: &str,
    batch_bytes: usize,
    mut sink: impl FnMut(Vec<String>) -> CoreResult<()>,
) -> CoreResult<()> {
    let mut reader = open(path)?;
    let mut batch: Vec<String> = Vec::new();
    let mut batch_size = 0usize;
    let mut line = Vec::new();
    let mut line_no = 0usize;
    let mut offset = 0usize;
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| CoreError::Io(format!("cannot read {path}: {e}")))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let text = String::from_utf8(std::mem::take(&mut line)).map_err(|e| {
            CoreError::InvalidInput(format!(
                "{path}: line {line_no} is not valid UTF-8 (byte offset {}); \
                 re-encode the file as UTF-8",
                offset + e.utf8_error().valid_up_to()
            ))
        })?;
        offset += n;
        let doc = match format {
            FileFormat::Text => text,
            FileFormat::Jsonl => {
                if text.trim().is_empty() {
                    continue;
                }
                let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                    CoreError::Config(format!("{path}: line {line_no} is not valid JSON: {e}"))
                })?;
                match value.get(text_field) {
                    Some(serde_json::Value::String(s)) => s.clone(),
                    _ => {
                        return Err(CoreError::Config(format!(
                            "{path}: line {line_no} has no string field {text_field:?}; \
                             pass the right text_field"
                        )))
                    }
                }
            }
        };
        batch_size += doc.len();
        batch.push(doc);
        if batch_size >= batch_bytes {
            sink(std::mem::take(&mut batch))?;
            batch_size = 0;
        }
    }
    if !batch.is_empty() {
        sink(batch)?;
    }
    Ok(())
}
