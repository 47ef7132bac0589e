//! Byte offsets to codepoint offsets.

/// Byte offsets -> codepoint offsets in one forward walk (`spans` sorted by start and
/// by end).
pub fn char_spans(text: &str, spans: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut out = Vec::with_capacity(spans.len());
    let (mut byte, mut chars) = (0usize, 0usize);
    let bytes = text.as_bytes();
    let advance = |target: usize, byte: &mut usize, chars: &mut usize| {
        while *byte < target {
            if bytes[*byte] & 0xC0 != 0x80 {
                *chars += 1;
            }
            *byte += 1;
        }
    };
    for &(s, e) in spans {
        advance(s, &mut byte, &mut chars);
        let cs = chars;
        advance(e, &mut byte, &mut chars);
        out.push((cs, chars));
    }
    out
}

/// Rewrites UTF-8 byte ranges of `text` as codepoint ranges, in place. A range holding
/// part of a char covers that whole char (as Hugging Face reports byte-level offsets);
/// an empty range stays empty. Ranges need not be sorted.
pub fn bytes_to_chars(text: &str, spans: &mut [(u32, u32)]) {
    if spans.is_empty() {
        return;
    }
    if text.is_ascii() {
        return;
    }
    // Char index of every byte, plus one entry for the end of the text.
    let mut char_of = Vec::with_capacity(text.len() + 1);
    let mut n = 0u32;
    for &b in text.as_bytes() {
        if b & 0xC0 != 0x80 {
            n += 1;
        }
        char_of.push(n - 1);
    }
    char_of.push(n);
    let at = |i: u32| char_of.get(i as usize).copied().unwrap_or(n);
    for span in spans.iter_mut() {
        let (s, e) = *span;
        let cs = at(s);
        let ce = if e > s { at(e - 1) + 1 } else { cs };
        *span = (cs, ce);
    }
}
