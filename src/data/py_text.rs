//! Python's view of text for the cleaning engines: code points decoded from the UTF-8
//! that `str.encode("utf-8", "surrogatepass")` writes (lone surrogates included), and a
//! per-code-point table of the properties the cleaning rules read (`str.isspace`,
//! `str.isalpha`, the script of a letter), built by Python from its own `unicodedata`
//! so both sides agree by construction.

use crate::error::{CoreError, CoreResult};

/// Number of Unicode code points (the table's length).
pub const CODE_POINTS: usize = 0x11_0000;
/// `str.isalpha()` of the code point (general category L*).
pub const LETTER: u16 = 1 << 15;
/// `str.isspace()` of the code point.
pub const SPACE: u16 = 1 << 14;
/// The low bits: the script ID of a letter (0: none).
pub const SCRIPT_MASK: u16 = 0x0fff;

/// One code point per entry (flags and script), indexed by code point.
#[derive(Debug, Clone)]
pub struct CharTable {
    entries: Vec<u16>,
}

impl CharTable {
    pub fn new(entries: Vec<u16>) -> CoreResult<Self> {
        if entries.len() != CODE_POINTS {
            return Err(CoreError::InvalidInput(format!(
                "the character table has {} entries, expected {CODE_POINTS}",
                entries.len()
            )));
        }
        Ok(Self { entries })
    }

    #[inline]
    pub fn get(&self, cp: u32) -> u16 {
        self.entries.get(cp as usize).copied().unwrap_or(0)
    }

    #[inline]
    pub fn is_space(&self, cp: u32) -> bool {
        self.get(cp) & SPACE != 0
    }

    #[inline]
    pub fn is_alpha(&self, cp: u32) -> bool {
        self.get(cp) & LETTER != 0
    }

    #[inline]
    pub fn script(&self, cp: u32) -> u16 {
        self.get(cp) & SCRIPT_MASK
    }
}

/// The code point starting at `bytes[i]` and its length in bytes. Decodes what Python's
/// `surrogatepass` encoder writes (surrogates as three-byte sequences); a malformed byte
/// (which that encoder never writes) reads as U+FFFD of one byte.
#[inline]
pub fn decode_at(bytes: &[u8], i: usize) -> (u32, usize) {
    let b0 = bytes[i];
    if b0 < 0x80 {
        return (u32::from(b0), 1);
    }
    let cont = |k: usize| -> Option<u32> {
        bytes
            .get(i + k)
            .filter(|b| (**b & 0xC0) == 0x80)
            .map(|b| u32::from(b & 0x3F))
    };
    let (len, init) = match b0 {
        0xC2..=0xDF => (2, u32::from(b0 & 0x1F)),
        0xE0..=0xEF => (3, u32::from(b0 & 0x0F)),
        0xF0..=0xF4 => (4, u32::from(b0 & 0x07)),
        _ => return (0xFFFD, 1),
    };
    let mut cp = init;
    for k in 1..len {
        match cont(k) {
            Some(c) => cp = (cp << 6) | c,
            None => return (0xFFFD, 1),
        }
    }
    (cp, len)
}

/// Iterates `(byte offset, code point, byte length)` over `bytes`.
pub struct CodePoints<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> CodePoints<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }
}

impl Iterator for CodePoints<'_> {
    type Item = (usize, u32, usize);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.bytes.len() {
            return None;
        }
        let at = self.pos;
        let (cp, len) = decode_at(self.bytes, at);
        self.pos += len;
        Some((at, cp, len))
    }
}

/// Number of code points (Python's `len`) of `bytes`.
#[inline]
pub fn char_len(bytes: &[u8]) -> usize {
    bytes.iter().filter(|b| (**b & 0xC0) != 0x80).count()
}

/// `bytes` without leading and trailing `str.isspace()` code points (`str.strip()`).
pub fn strip<'a>(table: &CharTable, bytes: &'a [u8]) -> &'a [u8] {
    let mut start = bytes.len();
    let mut end = 0;
    for (at, cp, len) in CodePoints::new(bytes) {
        if !table.is_space(cp) {
            if start == bytes.len() {
                start = at;
            }
            end = at + len;
        }
    }
    if start >= end {
        return &bytes[..0];
    }
    &bytes[start..end]
}

/// `bytes` without leading `str.isspace()` code points (`str.lstrip()`).
pub fn lstrip<'a>(table: &CharTable, bytes: &'a [u8]) -> &'a [u8] {
    for (at, cp, _) in CodePoints::new(bytes) {
        if !table.is_space(cp) {
            return &bytes[at..];
        }
    }
    &bytes[..0]
}

/// `bytes` without trailing `str.isspace()` code points (`str.rstrip()`).
pub fn rstrip<'a>(table: &CharTable, bytes: &'a [u8]) -> &'a [u8] {
    let mut end = 0;
    for (at, cp, len) in CodePoints::new(bytes) {
        if !table.is_space(cp) {
            end = at + len;
        }
    }
    &bytes[..end]
}

/// Per-script letter counts of the first `max_chars` code points: `(script ID, count)`
/// in ascending script ID order (letters without a script are not counted).
pub fn script_counts(table: &CharTable, bytes: &[u8], max_chars: usize) -> Vec<(u16, u32)> {
    let mut counts: Vec<u32> = Vec::new();
    for (_, cp, _) in CodePoints::new(bytes).take(max_chars) {
        let s = table.script(cp) as usize;
        if s != 0 {
            if counts.len() <= s {
                counts.resize(s + 1, 0);
            }
            counts[s] += 1;
        }
    }
    counts
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(s, n)| (s as u16, *n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> CharTable {
        let mut t = vec![0u16; CODE_POINTS];
        for cp in [0x20u32, 0x0A, 0x09, 0x3000] {
            t[cp as usize] |= SPACE;
        }
        for cp in 0x61..=0x7Au32 {
            t[cp as usize] |= LETTER | 1;
        }
        CharTable::new(t).unwrap()
    }

    #[test]
    fn decodes_surrogatepass_and_malformed_bytes() {
        let s = "a\u{e9}\u{4e00}\u{1F600}";
        let cps: Vec<u32> = CodePoints::new(s.as_bytes()).map(|(_, c, _)| c).collect();
        assert_eq!(cps, vec![0x61, 0xE9, 0x4E00, 0x1F600]);
        // A lone surrogate as Python's surrogatepass writes it.
        assert_eq!(decode_at(&[0xED, 0xA0, 0x80], 0), (0xD800, 3));
        assert_eq!(decode_at(&[0xFF], 0), (0xFFFD, 1));
        assert_eq!(decode_at(&[0xE4, 0x41], 0), (0xFFFD, 1));
        assert_eq!(char_len("a\u{e9}\u{4e00}".as_bytes()), 3);
    }

    #[test]
    fn strips_like_python() {
        let t = table();
        let s = "\u{3000} ab c\t\n".as_bytes();
        assert_eq!(strip(&t, s), b"ab c");
        assert_eq!(lstrip(&t, s), b"ab c\t\n");
        assert_eq!(rstrip(&t, s), "\u{3000} ab c".as_bytes());
        assert_eq!(strip(&t, b"  "), b"");
        assert_eq!(script_counts(&t, b"ab1c", 2), vec![(1, 2)]);
    }
}
