//! Hugging Face BPE tables: vocabulary strings (over GPT-2's byte alphabet for byte-level
//! BPE, decoded to bytes; plain UTF-8 for BPE over characters) and merge strings
//! resolved to `(left, right, new)` ID records. Done here because a Python loop over
//! ~10^5 tokens and merges dominated load time.

use rustc_hash::FxHashMap;

use crate::error::{CoreError, CoreResult};

/// GPT-2's `bytes_to_unicode`: the printable character that spells each byte (the
/// printable Latin-1 bytes spell themselves, the others take U+0100 onwards in byte
/// order). The one definition of the table: Python reads it through
/// `_native.gpt2_byte_alphabet`.
pub fn bytes_to_unicode() -> [char; 256] {
    let printable = |b: u32| matches!(b, 0x21..=0x7E | 0xA1..=0xAC | 0xAE..=0xFF);
    let mut table = ['\0'; 256];
    let mut next = 256u32;
    for b in 0..256u32 {
        let code = if printable(b) {
            b
        } else {
            next += 1;
            next - 1
        };
        table[b as usize] = char::from_u32(code).unwrap_or('\u{FFFD}');
    }
    table
}

/// The bytes Hugging Face's `ByteLevel` decoder makes of one token string: each
/// character's byte when every character is in GPT-2's alphabet, else None (the decoder
/// then keeps the string's own UTF-8). `decoders::ByteLevel::decode_chain` applies this
/// to every token it decodes, added tokens included.
pub fn byte_level_string_bytes(token: &str) -> Option<Vec<u8>> {
    unbyte(&byte_decoder(), token)
}

/// Each character of `token` mapped through `dec` (a `byte_decoder`), or None when one
/// is outside GPT-2's alphabet.
fn unbyte(dec: &FxHashMap<char, u8>, token: &str) -> Option<Vec<u8>> {
    token.chars().map(|c| dec.get(&c).copied()).collect()
}

/// GPT-2's map from printable characters back to bytes (`bytes_to_unicode` inverted).
fn byte_decoder() -> FxHashMap<char, u8> {
    bytes_to_unicode()
        .iter()
        .enumerate()
        .map(|(b, &c)| (c, b as u8))
        .collect()
}

/// Piece of every ID: with `byte_level`, the bytes of GPT-2 alphabet strings (tokens that
/// are not byte-level strings must be added tokens; they keep their UTF-8 spelling);
/// otherwise each token's UTF-8 spelling. Fails on a hole or a duplicate ID.
pub fn pieces(
    vocab: &[(&str, u32)],
    added: &FxHashMap<&str, u32>,
    byte_level: bool,
) -> CoreResult<Vec<Vec<u8>>> {
    let dec = byte_decoder();
    let size = vocab
        .iter()
        .map(|&(_, i)| i as usize + 1)
        .max()
        .unwrap_or(0);
    // Holes may be filled by added tokens, so they count as entries here.
    crate::id_space::check(
        vocab.len() + added.len(),
        size.saturating_sub(1) as u32,
        "model.vocab",
    )?;
    let mut pieces: Vec<Option<Vec<u8>>> = vec![None; size];
    for &(token, id) in vocab {
        let piece: Option<Vec<u8>> = if byte_level {
            unbyte(&dec, token)
        } else {
            Some(token.as_bytes().to_vec())
        };
        let piece = match piece {
            Some(p) => p,
            None if added.contains_key(token) => token.as_bytes().to_vec(),
            None => {
                return Err(CoreError::Artifact(format!(
                    "model.vocab[{token:?}]: not a byte-level piece; check the file"
                )))
            }
        };
        let slot = &mut pieces[id as usize];
        if slot.is_some() {
            return Err(CoreError::Artifact(format!(
                "model.vocab: ID {id} is used twice; give each piece one ID"
            )));
        }
        *slot = Some(piece);
    }
    for (&content, &id) in added {
        if let Some(slot) = pieces.get_mut(id as usize) {
            match slot {
                None => *slot = Some(content.as_bytes().to_vec()),
                Some(p) if p.as_slice() != content.as_bytes() => {
                    return Err(CoreError::Artifact(format!(
                        "added_tokens[{content:?}]: ID {id} is a different vocabulary piece \
                         {p:?}; give the added token its own ID"
                    )))
                }
                Some(_) => {}
            }
        }
    }
    pieces
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            p.ok_or_else(|| {
                CoreError::Artifact(format!(
                    "model.vocab: ID {i} has no piece; fill the vocabulary"
                ))
            })
        })
        .collect()
}

/// Merge `(left, right)` strings to `(left_id, right_id, id of left+right)` records. A
/// BPE over characters joins `left + right[strip..]`: HF cuts the byte length of
/// `continuing_subword_prefix` off the right piece, whatever it starts with.
pub fn merge_records(
    vocab: &[(&str, u32)],
    merges: &[(&str, &str)],
    strip: usize,
) -> CoreResult<Vec<(u32, u32, u32)>> {
    let ids: FxHashMap<&str, u32> = vocab.iter().copied().collect();
    let mut joined = String::new();
    merges
        .iter()
        .enumerate()
        .map(|(rank, &(left, right))| {
            joined.clear();
            joined.push_str(left);
            match right.get(strip.min(right.len())..) {
                Some(rest) if right.len() >= strip => joined.push_str(rest),
                _ => {
                    return Err(CoreError::Artifact(format!(
                        "model.merges[{rank}] {left:?} {right:?}: cutting the {strip}-byte \
                         continuing_subword_prefix off {right:?} splits a character; the \
                         merges and continuing_subword_prefix do not belong together"
                    )))
                }
            }
            let find = |s: &str| {
                ids.get(s).copied().ok_or_else(|| {
                    CoreError::Artifact(format!(
                        "model.merges[{rank}] {left:?} {right:?}: {s:?} is not in the \
                         vocabulary; the merges and the vocabulary do not belong together"
                    ))
                })
            };
            Ok((find(left)?, find(right)?, find(&joined)?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_level_strings_decode_like_hf() {
        // Every character in the alphabet: its byte (0xF8 is never UTF-8).
        assert_eq!(byte_level_string_bytes("ø"), Some(vec![0xF8]));
        assert_eq!(byte_level_string_bytes("Ġhi"), Some(b" hi".to_vec()));
        assert_eq!(
            byte_level_string_bytes("<|im_end|>"),
            Some(b"<|im_end|>".to_vec())
        );
        // A space or a character outside the alphabet: HF keeps the UTF-8 spelling.
        assert_eq!(byte_level_string_bytes("a b"), None);
        assert_eq!(byte_level_string_bytes("<｜end▁of▁sentence｜>"), None);
    }

    #[test]
    fn gpt2_alphabet() {
        let t = bytes_to_unicode();
        assert_eq!((t[b'!' as usize], t[0xFF]), ('!', '\u{FF}'));
        // Non-printable bytes take U+0100.. in byte order: 0x00, 0x01, ..., then ' '.
        assert_eq!(
            (t[0], t[1], t[b' ' as usize]),
            ('\u{100}', '\u{101}', '\u{120}')
        );
        assert_eq!((t[0xAD], t[0x7F]), ('\u{143}', '\u{121}'));
        assert_eq!(byte_decoder().len(), 256);
    }
}
