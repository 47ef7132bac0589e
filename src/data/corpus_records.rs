//! The corpus manifest's per-document records, with the SHA-256 of each text.
//!
//! A corpus manifest lists every document as a canonical JSON record (keys sorted,
//! compact) holding the hex SHA-256 of its UTF-8 text. One call formats all of them
//! straight from the strings' UTF-8: no bytes object, digest object or formatted string
//! per document in Python. Beside the encoder on a 2-core machine, the Python loop that
//! did this cost as much CPU as the Parquet writer.

use sha2::{Digest, Sha256};

use crate::error::CoreError;

/// Appends the lowercase hex spelling of `bytes` (digests in manifests).
pub fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for &byte in bytes {
        out.push(HEX[usize::from(byte >> 4)]);
        out.push(HEX[usize::from(byte & 0x0f)]);
    }
}

/// Appends `s` as a JSON string literal exactly as Python's
/// `json.encoder.encode_basestring` spells it (`ensure_ascii=False`): serde_json's
/// escaping is the same (`"` and `\` escaped, `\n \r \t \b \f` short, other controls
/// below 0x20 as `\u00xx` in lowercase hex, DEL and non-ASCII as is).
pub fn push_json_string(out: &mut Vec<u8>, s: &str) {
    // Writing a str into a Vec cannot fail (no I/O error, no unsupported value).
    let _ = serde_json::to_writer(&mut *out, s);
}

/// The columns of a corpus manifest's document records, one entry per document.
pub struct RecordColumns<'a, T: AsRef<str>> {
    pub texts: &'a [T],
    pub doc_ids: &'a [T],
    pub license_classes: &'a [T],
    pub sources: &'a [T],
    pub splits: &'a [T],
}

/// The records joined by `,` (no brackets), each
/// `{"clean_sha256":"sha256:<hex>","document_id":..,"license_class":..,
/// "raw_sha256":"sha256:<hex>","source_id":..,"split":..}` with the text's SHA-256 as
/// both digests (no cleanup step), and the UTF-8 size of each text.
pub fn corpus_records_json<T: AsRef<str>>(
    cols: &RecordColumns<'_, T>,
) -> Result<(Vec<u8>, Vec<i64>), CoreError> {
    let n = cols.texts.len();
    let lens = [
        cols.doc_ids.len(),
        cols.license_classes.len(),
        cols.sources.len(),
        cols.splits.len(),
    ];
    if lens.iter().any(|&k| k != n) {
        return Err(CoreError::InvalidInput(format!(
            "record columns differ in length: {n} texts, {lens:?} IDs/licences/sources/splits"
        )));
    }
    let mut out = Vec::with_capacity(n * 300);
    let mut sizes = Vec::with_capacity(n);
    let mut digest = Vec::with_capacity(64);
    for i in 0..n {
        let text = cols.texts[i].as_ref().as_bytes();
        sizes.push(i64::try_from(text.len()).unwrap_or(i64::MAX));
        digest.clear();
        push_hex(&mut digest, &Sha256::digest(text));
        if i > 0 {
            out.push(b',');
        }
        push_record(&mut out, &digest, cols, i);
    }
    Ok((out, sizes))
}

/// The same records for texts already hashed: `digests` holds the 32-byte SHA-256 of
/// each text in order (the encoder computes them while each text is in cache), and
/// `cols.texts` is not read (it may be empty).
pub fn corpus_records_json_digested<T: AsRef<str>>(
    digests: &[u8],
    cols: &RecordColumns<'_, T>,
) -> Result<Vec<u8>, CoreError> {
    let n = cols.doc_ids.len();
    let lens = [
        cols.license_classes.len(),
        cols.sources.len(),
        cols.splits.len(),
    ];
    if digests.len() != n * 32 || lens.iter().any(|&k| k != n) {
        return Err(CoreError::InvalidInput(format!(
            "record columns differ in length: {} digest bytes for {n} IDs, {lens:?} \
             licences/sources/splits",
            digests.len()
        )));
    }
    let mut out = Vec::with_capacity(n * 300);
    let mut hex = Vec::with_capacity(64);
    for (i, digest) in digests.chunks_exact(32).enumerate() {
        hex.clear();
        push_hex(&mut hex, digest);
        if i > 0 {
            out.push(b',');
        }
        push_record(&mut out, &hex, cols, i);
    }
    Ok(out)
}

/// Record `i` with the hex digest `hex` as both digests.
fn push_record<T: AsRef<str>>(
    out: &mut Vec<u8>,
    hex: &[u8],
    cols: &RecordColumns<'_, T>,
    i: usize,
) {
    out.extend_from_slice(b"{\"clean_sha256\":\"sha256:");
    out.extend_from_slice(hex);
    out.extend_from_slice(b"\",\"document_id\":");
    push_json_string(out, cols.doc_ids[i].as_ref());
    out.extend_from_slice(b",\"license_class\":");
    push_json_string(out, cols.license_classes[i].as_ref());
    out.extend_from_slice(b",\"raw_sha256\":\"sha256:");
    out.extend_from_slice(hex);
    out.extend_from_slice(b"\",\"source_id\":");
    push_json_string(out, cols.sources[i].as_ref());
    out.extend_from_slice(b",\"split\":");
    push_json_string(out, cols.splits[i].as_ref());
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_digest_and_record() {
        let cols = RecordColumns {
            texts: &["abc"],
            doc_ids: &["d\"1\n\u{1}é"],
            license_classes: &["unknown"],
            sources: &["web"],
            splits: &["train"],
        };
        let (json, sizes) = corpus_records_json(&cols).unwrap();
        // FIPS 180-2 test vector for "abc".
        let h = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        let expected = format!(
            "{{\"clean_sha256\":\"sha256:{h}\",\"document_id\":\"d\\\"1\\n\\u0001é\",\
             \"license_class\":\"unknown\",\"raw_sha256\":\"sha256:{h}\",\
             \"source_id\":\"web\",\"split\":\"train\"}}"
        );
        assert_eq!(String::from_utf8(json).unwrap(), expected);
        assert_eq!(sizes, vec![3]);
    }

    #[test]
    fn digested_records_equal_hashed_ones() {
        let texts = ["abc", "", "naïve café"];
        let cols = RecordColumns {
            texts: &texts,
            doc_ids: &["a", "b", "c"],
            license_classes: &["x", "y", "z"],
            sources: &["s", "t", "u"],
            splits: &["train", "test", "validation"],
        };
        let digests: Vec<u8> = texts.iter().flat_map(Sha256::digest).collect();
        let (json, _) = corpus_records_json(&cols).unwrap();
        assert_eq!(corpus_records_json_digested(&digests, &cols).unwrap(), json);
        assert!(corpus_records_json_digested(&digests[..64], &cols).is_err());
    }

    #[test]
    fn columns_must_agree() {
        let cols = RecordColumns {
            texts: &["a", "b"],
            doc_ids: &["a"],
            license_classes: &["x", "x"],
            sources: &["s", "s"],
            splits: &["train", "train"],
        };
        assert!(corpus_records_json(&cols).is_err());
        let empty: RecordColumns<'_, &str> = RecordColumns {
            texts: &[],
            doc_ids: &[],
            license_classes: &[],
            sources: &[],
            splits: &[],
        };
        assert_eq!(corpus_records_json(&empty).unwrap(), (vec![], vec![]));
    }
}
