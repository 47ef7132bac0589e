//! SentencePiece decoding: IDs back to text with SentencePiece's rules (byte pieces
//! joined and validated as UTF-8, `▁` as a space, the leading-space rule, the
//! denormalizer). The runtime's incremental decoder follows the same rules piece by piece.

use super::normalizer::{char_len, SPACE_SYMBOL};
use super::{find, PieceType, SentencePieceCore};
use crate::error::{CoreError, CoreResult};

/// One ID as `SentencePieceCore::decode` sees it.
pub enum DecodePiece<'a> {
    /// A `<0xXX>` byte piece.
    Byte(u8),
    /// A control piece: no text.
    Control,
    /// The unknown piece: the model's unknown surface.
    Unknown(&'a [u8]),
    /// Any other piece: its text, with `▁` meaning a space.
    Text(&'a [u8]),
}

impl SentencePieceCore {
    /// SentencePiece's decoder. `lossy` replaces each byte of an ill-formed byte-piece
    /// sequence with U+FFFD as SentencePiece does; otherwise byte pieces stay raw bytes.
    pub fn decode(&self, ids: &[u32], lossy: bool) -> CoreResult<Vec<u8>> {
        let mut text: Vec<u8> = Vec::with_capacity(ids.len() * 4);
        let mut bytes: Vec<u8> = Vec::new();
        let flush = |bytes: &mut Vec<u8>, text: &mut Vec<u8>| {
            if !lossy {
                text.append(bytes);
                return;
            }
            let mut i = 0;
            while i < bytes.len() {
                let (n, ok) = char_len(&bytes[i..]);
                text.extend_from_slice(if ok {
                    &bytes[i..i + n]
                } else {
                    "\u{fffd}".as_bytes()
                });
                i += n;
            }
            bytes.clear();
        };
        let (mut is_bos_ws, mut bos_ws_seen) = (true, false);
        for &id in ids {
            let Some(kind) = self.types.get(id as usize) else {
                return Err(CoreError::UnknownToken(format!(
                    "token ID {id} is not in this SentencePiece model (IDs are 0..{}); check \
                     that the IDs come from this tokenizer",
                    self.pieces.len()
                )));
            };
            let piece = &self.pieces[id as usize];
            if *kind == PieceType::Byte {
                bytes.push(byte_value(piece));
                continue;
            }
            flush(&mut bytes, &mut text);
            if bos_ws_seen || !text.is_empty() {
                is_bos_ws = false;
            }
            bos_ws_seen = false;
            match kind {
                PieceType::Control => {}
                PieceType::Unknown => text.extend_from_slice(&self.unk_surface),
                _ => {
                    let mut p: &[u8] = piece;
                    if is_bos_ws && (self.add_dummy_prefix || self.remove_extra_whitespaces) {
                        if let Some(rest) = p.strip_prefix(SPACE_SYMBOL) {
                            p = rest;
                            bos_ws_seen = !self.remove_extra_whitespaces;
                        }
                    }
                    push_unescaped(&mut text, p);
                }
            }
        }
        flush(&mut bytes, &mut text);
        if let Some(d) = &self.denormalizer {
            let mut out = Vec::with_capacity(text.len());
            d.normalize(&text, &mut out, None);
            return Ok(out);
        }
        Ok(text)
    }

    /// How `decode` treats one ID, for decoders that run token by token (the runtime's
    /// incremental decoder follows exactly the rules of `decode`).
    pub fn decode_piece(&self, id: u32) -> Option<DecodePiece<'_>> {
        let kind = self.types.get(id as usize)?;
        let piece = &self.pieces[id as usize];
        Some(match kind {
            PieceType::Byte => DecodePiece::Byte(byte_value(piece)),
            PieceType::Control => DecodePiece::Control,
            PieceType::Unknown => DecodePiece::Unknown(&self.unk_surface),
            _ => DecodePiece::Text(piece),
        })
    }

    /// (add_dummy_prefix, remove_extra_whitespaces): the flags of `decode`'s leading-space rule.
    pub fn decode_flags(&self) -> (bool, bool) {
        (self.add_dummy_prefix, self.remove_extra_whitespaces)
    }

    /// Applies the denormalizer to decoded text; None when the model has none.
    pub fn denormalize(&self, text: &[u8]) -> Option<Vec<u8>> {
        let d = self.denormalizer.as_ref()?;
        let mut out = Vec::with_capacity(text.len());
        d.normalize(text, &mut out, None);
        Some(out)
    }
}

fn byte_value(piece: &[u8]) -> u8 {
    // Validated at load: byte pieces are "<0xXX>".
    std::str::from_utf8(&piece[3..5])
        .ok()
        .and_then(|h| u8::from_str_radix(h, 16).ok())
        .unwrap_or(0)
}

/// Appends a piece with each `▁` written as a space.
pub(crate) fn push_unescaped(out: &mut Vec<u8>, piece: &[u8]) {
    let mut rest = piece;
    while let Some(i) = find(rest, SPACE_SYMBOL) {
        out.extend_from_slice(&rest[..i]);
        out.push(b' ');
        rest = &rest[i + SPACE_SYMBOL.len()..];
    }
    out.extend_from_slice(rest);
}
