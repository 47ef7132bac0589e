//! Decoders: turn the pieces of a sequence of IDs back into bytes.

pub enum Decoder {
    /// Concatenate the byte pieces (byte-level BPE: pieces are raw bytes).
    Bytes,
    /// Hugging Face's WordPiece decoder: continuation pieces lose `prefix` and join the
    /// previous piece, others get a space; `cleanup` undoes tokenization spaces per token.
    WordPiece { prefix: String, cleanup: bool },
}

/// HF's `cleanup` for one token string (a space before punctuation and English clitics).
fn cleanup(token: &str) -> String {
    token
        .replace(" .", ".")
        .replace(" ?", "?")
        .replace(" !", "!")
        .replace(" ,", ",")
        .replace(" ' ", "'")
        .replace(" n't", "n't")
        .replace(" 'm", "'m")
        .replace(" do not", " don't")
        .replace(" 's", "'s")
        .replace(" 've", "'ve")
        .replace(" 're", "'re")
}

impl Decoder {
    pub fn decode<'a>(&self, pieces: impl Iterator<Item = &'a [u8]>, out: &mut Vec<u8>) {
        match self {
            Decoder::Bytes => pieces.for_each(|p| out.extend_from_slice(p)),
            Decoder::WordPiece {
                prefix,
                cleanup: clean,
            } => {
                for (i, piece) in pieces.enumerate() {
                    let token = String::from_utf8_lossy(piece);
                    let mut token = if i == 0 {
                        token.into_owned()
                    } else if let Some(rest) = token.strip_prefix(prefix.as_str()) {
                        rest.to_owned()
                    } else {
                        format!(" {token}")
                    };
                    if *clean {
                        token = cleanup(&token);
                    }
                    out.extend_from_slice(token.as_bytes());
                }
            }
        }
    }
}
