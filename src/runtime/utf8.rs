//! Incremental UTF-8 decoding whose output, concatenated, equals decoding all the bytes
//! at once: `String::from_utf8_lossy` (and Python's `bytes.decode("utf-8", "replace")`,
//! which follows the same maximal-subpart rule) in replace mode, a strict decode
//! otherwise. At most 3 bytes (an incomplete but still valid character prefix) are held.

/// Bytes that are not UTF-8, reported by a strict stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidUtf8 {
    /// The offending bytes (one maximal ill-formed subsequence, or a truncated character).
    pub bytes: Vec<u8>,
    /// Offset of those bytes in the whole stream.
    pub offset: usize,
}

#[derive(Default, Clone)]
pub struct Utf8Stream {
    pending: Vec<u8>,
    strict: bool,
    /// Bytes consumed so far (for error offsets).
    seen: usize,
}

impl Utf8Stream {
    pub fn new(strict: bool) -> Utf8Stream {
        Utf8Stream {
            pending: Vec::with_capacity(4),
            strict,
            seen: 0,
        }
    }

    /// Bytes held back (an incomplete character).
    pub fn pending(&self) -> &[u8] {
        &self.pending
    }

    fn bad(&self, bytes: &[u8], at: usize) -> Result<(), InvalidUtf8> {
        if self.strict {
            return Err(InvalidUtf8 {
                bytes: bytes.to_vec(),
                offset: at,
            });
        }
        Ok(())
    }

    /// Decodes `input`, appending every character that is now complete to `out`.
    pub fn push(&mut self, mut input: &[u8], out: &mut String) -> Result<(), InvalidUtf8> {
        // First complete (or reject) the held character one byte at a time: it needs at
        // most 3 more bytes, so this stays constant work per push.
        while !self.pending.is_empty() && !input.is_empty() {
            self.pending.push(input[0]);
            input = &input[1..];
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    out.push_str(s);
                    self.seen += self.pending.len();
                    self.pending.clear();
                }
                Err(e) => match e.error_len() {
                    None => {}
                    Some(n) => {
                        // The held bytes were a valid prefix, so the error starts at 0.
                        let pending = std::mem::take(&mut self.pending);
                        self.bad(&pending[..n], self.seen)?;
                        out.push('\u{FFFD}');
                        self.seen += n;
                        self.feed(&pending[n..], out)?;
                    }
                },
            }
        }
        self.feed(input, out)
    }

    /// Decodes `input` when nothing is held before it.
    fn feed(&mut self, mut input: &[u8], out: &mut String) -> Result<(), InvalidUtf8> {
        loop {
            match std::str::from_utf8(input) {
                Ok(s) => {
                    out.push_str(s);
                    self.seen += input.len();
                    return Ok(());
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    // SAFETY-free: the prefix was just validated.
                    out.push_str(std::str::from_utf8(&input[..valid]).unwrap_or_default());
                    self.seen += valid;
                    match e.error_len() {
                        None => {
                            self.pending.extend_from_slice(&input[valid..]);
                            return Ok(());
                        }
                        Some(n) => {
                            self.bad(&input[valid..valid + n], self.seen)?;
                            out.push('\u{FFFD}');
                            self.seen += n;
                            input = &input[valid + n..];
                        }
                    }
                }
            }
        }
    }

    /// Ends the stream: a held incomplete character is one U+FFFD (or an error).
    pub fn finish(&mut self, out: &mut String) -> Result<(), InvalidUtf8> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        self.bad(&pending, self.seen)?;
        self.seen += pending.len();
        out.push('\u{FFFD}');
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunked(data: &[u8], sizes: &[usize]) -> String {
        let mut s = Utf8Stream::new(false);
        let mut out = String::new();
        let mut at = 0;
        let mut i = 0;
        while at < data.len() {
            let n = sizes[i % sizes.len()].max(1).min(data.len() - at);
            s.push(&data[at..at + n], &mut out).unwrap();
            at += n;
            i += 1;
        }
        s.finish(&mut out).unwrap();
        out
    }

    #[test]
    fn equals_lossy_for_every_chunking() {
        let cases: [&[u8]; 6] = [
            "a€b😀c".as_bytes(),
            b"\xe2\x82",
            b"\xe2\x41\xf0\x9f\x98",
            b"\xf0\x80\x80\xff\xc3\xa9",
            b"\xed\xa0\x80x",
            "\u{FFFD}literal".as_bytes(),
        ];
        for data in cases {
            for sizes in [[1usize].as_slice(), &[2], &[3], &[1, 2, 5], &[100]] {
                assert_eq!(chunked(data, sizes), String::from_utf8_lossy(data));
            }
        }
    }

    #[test]
    fn strict_reports_the_first_bad_bytes() {
        let mut s = Utf8Stream::new(true);
        let mut out = String::new();
        s.push(b"ab\xe2\x82", &mut out).unwrap();
        assert_eq!(out, "ab");
        let err = s.push(b"A", &mut out).unwrap_err();
        assert_eq!((err.bytes, err.offset), (b"\xe2\x82".to_vec(), 2));
    }
}
