//! SentencePiece's normalizer: precompiled charsmap rewriting, dummy prefix, extra
//! whitespace removal and whitespace escaping to U+2581, with a map from every
//! normalized byte back to the original byte offset (SentencePiece's `norm_to_orig`).

use std::sync::OnceLock;

mod resume;
pub use resume::Resume;

use super::trie::{DartsArray, PieceTrie};
use crate::error::{CoreError, CoreResult};

pub const SPACE_SYMBOL: &[u8] = "\u{2581}".as_bytes();
const REPLACEMENT: &[u8] = "\u{fffd}".as_bytes();

/// The precompiled charsmap: `<u32 trie size><Darts double array><NUL-separated outputs>`.
pub struct Charsmap {
    trie: DartsArray,
    normalized: Vec<u8>,
}

impl Charsmap {
    pub fn from_blob(blob: &[u8]) -> CoreResult<Charsmap> {
        let broken = |what: &str| {
            CoreError::Artifact(format!(
                "normalizer_spec.precompiled_charsmap: {what}; the charsmap is damaged, \
                 re-export the model with SentencePiece"
            ))
        };
        if blob.len() <= 4 {
            return Err(broken("the blob is shorter than its 4-byte header"));
        }
        let size = u32::from_le_bytes([blob[0], blob[1], blob[2], blob[3]]) as usize;
        if 4 + size > blob.len() {
            return Err(broken("the trie size exceeds the blob"));
        }
        Ok(Charsmap {
            trie: DartsArray::from_bytes(&blob[4..4 + size])?,
            normalized: blob[4 + size..].to_vec(),
        })
    }

    /// The output of the shortest rule matching a prefix of `input` (Hugging Face's
    /// `Precompiled::transform`; see `normalize::precompiled`).
    pub fn first_rewrite(&self, input: &[u8]) -> Option<&[u8]> {
        let start = self.trie.first_prefix(input)? as usize;
        let tail = self.normalized.get(start..)?;
        let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
        Some(&tail[..end])
    }

    /// Whether every rule writes well-formed UTF-8 (then so does the normalizer, given
    /// well-formed input); false when the trie cannot be walked (damaged).
    pub fn outputs_well_formed(&self) -> bool {
        let Some(values) = self.trie.values(1 << 20) else {
            return false;
        };
        values.iter().all(|&v| {
            let start = (v as usize).min(self.normalized.len());
            let tail = &self.normalized[start..];
            let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
            std::str::from_utf8(&tail[..end]).is_ok()
        })
    }

    /// The pool of NUL-terminated rule outputs.
    pub fn outputs(&self) -> &[u8] {
        &self.normalized
    }

    /// The rewrite of the longest rule matching a prefix of `input`: (output, consumed).
    #[inline]
    fn rewrite(&self, input: &[u8]) -> Option<(&[u8], usize)> {
        let (len, value) = self.trie.longest_prefix(input)?;
        let start = (value as usize).min(self.normalized.len());
        let tail = &self.normalized[start..];
        // Outputs are NUL-terminated strings inside one blob.
        let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
        Some((&tail[..end], len))
    }
}

pub struct NormalizerConfig {
    pub add_dummy_prefix: bool,
    pub remove_extra_whitespaces: bool,
    pub escape_whitespaces: bool,
    pub treat_whitespace_as_suffix: bool,
}

pub struct Normalizer {
    charsmap: Option<Charsmap>,
    cfg: NormalizerConfig,
    /// User-defined pieces: matched before the charsmap and copied unchanged.
    user: Option<PieceTrie>,
    /// Per byte: PLAIN when no rule or user piece starts with it (copy it as is),
    /// PLAIN_BEFORE_ASCII when rules start with it but each continues with a non-ASCII
    /// byte (a combining mark, say: copy it when an ASCII byte follows), SPACE for a
    /// space no rule or user piece touches (the usual case), GENERAL otherwise (every
    /// non-ASCII byte). Runs of such bytes skip the per-character lookups.
    class: [u8; 256],
    /// The longest charsmap rule (`stream_reach`), found once on first use: walking the
    /// trie takes tens of milliseconds, too much for every streaming encoder.
    longest_rule: OnceLock<Option<usize>>,
}

// Byte classes of `Normalizer::class`.
const GENERAL: u8 = 0;
const PLAIN: u8 = 1;
const PLAIN_BEFORE_ASCII: u8 = 2;
const SPACE: u8 = 3;

/// Length of the UTF-8 character at the start of `s` and whether it is well formed
/// (SentencePiece replaces a malformed byte with U+FFFD and consumes one byte).
#[inline]
pub fn char_len(s: &[u8]) -> (usize, bool) {
    let cont = |i: usize, lo: u8, hi: u8| s.get(i).is_some_and(|&b| (lo..=hi).contains(&b));
    // The well-formed UTF-8 table (Unicode 3.9, table 3-7), without a library call:
    // this runs once per non-ASCII character.
    let ok = |n: usize, lo: u8, hi: u8| {
        let mut ok = cont(1, lo, hi);
        for i in 2..n {
            ok &= cont(i, 0x80, 0xBF);
        }
        if ok {
            (n, true)
        } else {
            (1, false)
        }
    };
    match s[0] {
        0x00..=0x7F => (1, true),
        0xC2..=0xDF => ok(2, 0x80, 0xBF),
        0xE0 => ok(3, 0xA0, 0xBF),
        0xED => ok(3, 0x80, 0x9F),
        0xE1..=0xEF => ok(3, 0x80, 0xBF),
        0xF0 => ok(4, 0x90, 0xBF),
        0xF4 => ok(4, 0x80, 0x8F),
        0xF1..=0xF3 => ok(4, 0x80, 0xBF),
        _ => (1, false),
    }
}

/// SentencePiece's `OneCharLen`: a length from the lead byte alone.
#[inline(always)]
pub fn one_char_len(b: u8) -> usize {
    // A static table: a local array literal gets rebuilt on the stack per call.
    static LEN: [u8; 16] = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4];
    LEN[(b >> 4) as usize] as usize
}

impl Normalizer {
    pub fn new(
        charsmap: Option<&[u8]>,
        cfg: NormalizerConfig,
        user_pieces: &[&[u8]],
    ) -> CoreResult<Normalizer> {
        let charsmap = match charsmap {
            Some(b) if !b.is_empty() => Some(Charsmap::from_blob(b)?),
            _ => None,
        };
        let user = (!user_pieces.is_empty()).then(|| {
            let keys: Vec<(&[u8], i32)> = user_pieces.iter().map(|p| (*p, 0)).collect();
            PieceTrie::new(&keys)
        });
        let starts = |key: &[u8]| {
            charsmap.as_ref().is_some_and(|m| m.trie.has_prefix(key))
                || user.as_ref().is_some_and(|u| {
                    let mut node = 0;
                    key.iter().all(|&b| match u.step(node, b) {
                        Some(n) => {
                            node = n;
                            true
                        }
                        None => false,
                    })
                })
        };
        let mut class = [GENERAL; 256];
        for (b, slot) in class.iter_mut().enumerate().take(128) {
            let b = b as u8;
            *slot = if b == b' ' {
                if starts(b" ") {
                    GENERAL
                } else {
                    SPACE
                }
            } else if !starts(&[b]) {
                PLAIN
            } else if charsmap.as_ref().is_none_or(|m| m.rewrite(&[b]).is_none())
                && user.as_ref().is_none_or(|u| u.get(&[b]).is_none())
                && (0..128u8).all(|c| !starts(&[b, c]))
            {
                PLAIN_BEFORE_ASCII
            } else {
                GENERAL
            };
        }
        Ok(Normalizer {
            charsmap,
            cfg,
            user,
            class,
            longest_rule: OnceLock::new(),
        })
    }

    /// For streaming encoders (`runtime::stream_encode`): the most bytes one normalizer
    /// step can read from where it starts (a rule or user piece match, a character, the
    /// byte after a combining-mark lead), given the longest user piece; None unless spaces
    /// are escaped to U+2581 as a prefix and a plain ASCII space is its own step that no
    /// rule or user piece starts with (then a cut before it is understood, see there).
    pub fn stream_reach(&self, longest_user_piece: usize) -> Option<usize> {
        let cfg = &self.cfg;
        if !cfg.escape_whitespaces || cfg.treat_whitespace_as_suffix {
            return None;
        }
        if self.class[b' ' as usize] != SPACE {
            return None;
        }
        let rules = self
            .longest_rule
            .get_or_init(|| match &self.charsmap {
                Some(map) => map.trie.max_key_len(64, 1 << 20),
                None => Some(0),
            })
            .as_ref()
            .copied()?;
        Some(rules.max(longest_user_piece).max(4))
    }

    /// Whether well-formed input always normalizes to well-formed UTF-8: characters are
    /// copied, spaces escaped to `▁`, user pieces kept, ill-formed bytes replaced by
    /// U+FFFD, so only a damaged charsmap rule can write ill-formed text.
    pub fn writes_well_formed(&self) -> bool {
        self.charsmap
            .as_ref()
            .is_none_or(|map| map.outputs_well_formed())
    }

    /// SentencePiece's `NormalizePrefix`: (replacement, bytes consumed) for the start.
    #[inline]
    fn prefix<'a>(&'a self, input: &'a [u8]) -> (&'a [u8], usize) {
        if let Some(user) = &self.user {
            let n = user.longest_prefix(input);
            if n > 0 {
                return (&input[..n], n);
            }
        }
        if let Some(map) = &self.charsmap {
            if let Some(hit) = map.rewrite(input) {
                return hit;
            }
        }
        match char_len(input) {
            (n, true) => (&input[..n], n),
            (_, false) => (REPLACEMENT, 1),
        }
    }

    /// Writes one matched step's replacement `sp` through `push` as SentencePiece does:
    /// without its leading spaces right after a space (`prev_space`), each space as U+2581
    /// when spaces are escaped. Returns the new `prev_space` (unchanged when nothing is
    /// left to write). Shared by `normalize` and the stream's resume, which must agree
    /// byte for byte.
    fn emit_step(&self, mut sp: &[u8], prev_space: bool, mut push: impl FnMut(&[u8])) -> bool {
        if prev_space {
            while let [b' ', tail @ ..] = sp {
                sp = tail;
            }
        }
        if sp.is_empty() {
            return prev_space;
        }
        if self.cfg.escape_whitespaces && sp.contains(&b' ') {
            for b in sp.chunks(1) {
                push(if b == b" " { SPACE_SYMBOL } else { b });
            }
        } else {
            push(sp);
        }
        sp.last() == Some(&b' ')
    }

    fn push(&self, out: &mut Vec<u8>, map: &mut Option<&mut Vec<u32>>, bytes: &[u8], orig: usize) {
        out.extend_from_slice(bytes);
        if let Some(m) = map {
            m.extend(std::iter::repeat_n(orig as u32, bytes.len()));
        }
    }

    fn push_space(&self, out: &mut Vec<u8>, map: &mut Option<&mut Vec<u32>>, orig: usize) {
        let ws: &[u8] = if self.cfg.escape_whitespaces {
            SPACE_SYMBOL
        } else {
            b" "
        };
        self.push(out, map, ws, orig);
    }

    /// Copies the longest prefix of `rest` made of bytes no rule rewrites, plain spaces
    /// included (escaped, and collapsed under remove_extra_whitespaces): the fast path
    /// for most text, one table lookup per byte and no break at word boundaries. Returns
    /// the bytes consumed; what follows needs the general rewrite.
    #[inline]
    fn copy_plain(
        &self,
        rest: &[u8],
        consumed: usize,
        out: &mut Vec<u8>,
        map: &mut Option<&mut Vec<u32>>,
        prev_space: &mut bool,
    ) -> usize {
        // Copies rest[from..to], plain bytes (never spaces).
        let flush = |out: &mut Vec<u8>, map: &mut Option<&mut Vec<u32>>, from, to| {
            out.extend_from_slice(&rest[from..to]);
            if let Some(m) = map.as_deref_mut() {
                m.extend((consumed + from..consumed + to).map(|i| i as u32));
            }
        };
        let (mut i, mut from) = (0, 0);
        while i < rest.len() {
            match self.class[rest[i] as usize] {
                PLAIN => {}
                PLAIN_BEFORE_ASCII if rest.get(i + 1).is_none_or(|&c| c < 0x80) => {}
                SPACE => {
                    if from < i {
                        flush(out, map, from, i);
                        *prev_space = false;
                    }
                    // What the general path does with a lone " " rule result.
                    if !*prev_space {
                        let ws: &[u8] = if self.cfg.escape_whitespaces {
                            SPACE_SYMBOL
                        } else {
                            b" "
                        };
                        out.extend_from_slice(ws);
                        if let Some(m) = map.as_deref_mut() {
                            m.extend(std::iter::repeat_n((consumed + i) as u32, ws.len()));
                        }
                        *prev_space = self.cfg.remove_extra_whitespaces;
                    }
                    from = i + 1;
                }
                _ => break,
            }
            i += 1;
        }
        if from < i {
            flush(out, map, from, i);
            *prev_space = false;
        }
        i
    }

    /// Normalizes `input` into `out`; `map` (when given) receives, for each output byte,
    /// the original byte offset it came from, plus one final entry (len(out) + 1 items).
    pub fn normalize(&self, input: &[u8], out: &mut Vec<u8>, mut map: Option<&mut Vec<u32>>) {
        out.clear();
        if let Some(m) = map.as_deref_mut() {
            m.clear();
        }
        let cfg = &self.cfg;
        let mut rest = input;
        let mut consumed = 0usize;
        if cfg.remove_extra_whitespaces {
            while !rest.is_empty() {
                let (sp, n) = self.prefix(rest);
                if sp != b" " {
                    break;
                }
                rest = &rest[n..];
                consumed += n;
            }
        }
        if rest.is_empty() {
            // SentencePiece returns an empty map for an all-space input.
            return;
        }
        out.reserve(rest.len() * 3 / 2 + 4);
        if !cfg.treat_whitespace_as_suffix && cfg.add_dummy_prefix {
            self.push_space(out, &mut map, consumed);
        }
        let mut prev_space = cfg.remove_extra_whitespaces;
        while !rest.is_empty() {
            let copied = self.copy_plain(rest, consumed, out, &mut map, &mut prev_space);
            consumed += copied;
            rest = &rest[copied..];
            if rest.is_empty() {
                break;
            }
            let (sp, n) = self.prefix(rest);
            prev_space = self.emit_step(sp, prev_space, |bytes| {
                self.push(out, &mut map, bytes, consumed)
            });
            consumed += n;
            rest = &rest[n..];
            if !cfg.remove_extra_whitespaces {
                prev_space = false;
            }
        }
        if cfg.remove_extra_whitespaces {
            let ws: &[u8] = if cfg.escape_whitespaces {
                SPACE_SYMBOL
            } else {
                b" "
            };
            while out.ends_with(ws) {
                let len = out.len() - ws.len();
                if let Some(m) = map.as_deref_mut() {
                    consumed = m[len] as usize;
                    m.truncate(len);
                }
                out.truncate(len);
            }
        }
        if cfg.treat_whitespace_as_suffix && cfg.add_dummy_prefix {
            self.push_space(out, &mut map, consumed);
        }
        if let Some(m) = map {
            m.push(consumed as u32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(remove: bool) -> Normalizer {
        let cfg = NormalizerConfig {
            add_dummy_prefix: true,
            remove_extra_whitespaces: remove,
            escape_whitespaces: true,
            treat_whitespace_as_suffix: false,
        };
        Normalizer::new(None, cfg, &[]).unwrap()
    }

    #[test]
    fn char_len_agrees_with_std() {
        for c in ['a', 'é', '€', '😀', '\u{ffff}', '\u{10ffff}'] {
            let mut buf = [0u8; 4];
            let e = c.encode_utf8(&mut buf).as_bytes();
            assert_eq!(char_len(e), (e.len(), true));
        }
        for bad in [
            &b"\x80"[..],
            b"\xc0\x80",
            b"\xe0\x80\x80",
            b"\xed\xa0\x80",
            b"\xf4\x90\x80\x80",
            b"\xe2\x82",
        ] {
            assert_eq!(char_len(bad), (1, false));
        }
    }

    #[test]
    fn dummy_prefix_escape_and_map() {
        let (mut out, mut map) = (Vec::new(), Vec::new());
        plain(true).normalize(b"  a  b ", &mut out, Some(&mut map));
        assert_eq!(out, "\u{2581}a\u{2581}b".as_bytes());
        assert_eq!(map, vec![2, 2, 2, 2, 3, 3, 3, 5, 6]);
        plain(false).normalize(b" a", &mut out, None);
        assert_eq!(out, "\u{2581}\u{2581}a".as_bytes());
    }
}
