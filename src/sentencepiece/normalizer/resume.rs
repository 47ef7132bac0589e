//! Resumable normalization for streaming encoders (`runtime::stream_sentencepiece`): the
//! normalizer's pass over a sentence that keeps arriving, run once over each byte instead
//! of once per scan over the whole undecided text.
//!
//! `Normalizer::normalize` is a sequence of steps, each reading from where the previous
//! one stopped and carrying only `prev_space` forward. A step is *final* when no byte
//! after the text that arrived (nor the sentence ending there) can change what it writes
//! or how far it reads:
//!
//! - a `PLAIN` byte (no rule or user piece starts with it) or a `SPACE` (a plain ASCII
//!   space) is a one-byte step whose output depends on `prev_space` alone;
//! - a `PLAIN_BEFORE_ASCII` byte is final once the byte after it arrived (that byte says
//!   whether a rule may start here);
//! - any other step reads at most `reach` bytes (`Normalizer::stream_reach`: the longest
//!   charsmap rule, user piece or UTF-8 character), so it is final once `reach` bytes
//!   from its start arrived: the longest-match walks of the tries then see the same bytes
//!   whatever follows.
//!
//! Since the steps before a final step are final too (each starts where the previous
//! one ended), the output of the final steps is a prefix of the normalized text of every
//! continuation, end-of-sentence rules aside (trailing whitespace removal touches only
//! the end, and `finish_normalize` applies it). `Resume` records where the final steps
//! end, so the next scan goes on from there.

use super::{Normalizer, PLAIN, PLAIN_BEFORE_ASCII, SPACE, SPACE_SYMBOL};

/// Where the normalization of a growing sentence stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Resume {
    /// Input bytes behind the final steps: the next step starts here.
    pub consumed: usize,
    /// Whether the sentence's leading spaces are behind (and the dummy prefix written).
    started: bool,
    /// The normalizer's `prev_space` after the last final step.
    prev_space: bool,
    /// The last `▁` written by a plain ASCII space right after another character (the
    /// output did not end with `▁`): (its offset in the output, the space's input
    /// offset). Streaming encoders cut the sentence there.
    pub cut: Option<(usize, usize)>,
}

impl Resume {
    /// At the start of a sentence (leading spaces stripped, dummy prefix to write).
    pub fn sentence_start() -> Resume {
        Resume::default()
    }

    /// At a `cut` of a sentence: the text starts with the plain space that wrote the
    /// `▁`, after a character that was not a space.
    pub fn at_cut() -> Resume {
        Resume {
            started: true,
            ..Resume::default()
        }
    }

    /// The text loses its first `input` bytes, the output its first bytes up to the
    /// recorded `cut` (a streaming encoder committed them): offsets move, the cut is used.
    pub fn rebase(&mut self, input: usize) {
        self.consumed -= input;
        self.cut = None;
    }
}

impl Normalizer {
    /// Appends to `out` what the final steps of `input[st.consumed..]` write (see the
    /// module documentation; `reach` is `stream_reach`), and moves `st` past them.
    /// `out` must hold what the steps before wrote (the normalized text so far).
    pub fn normalize_final_steps(
        &self,
        input: &[u8],
        reach: usize,
        st: &mut Resume,
        out: &mut Vec<u8>,
    ) {
        self.resume(input, Some(reach), st, out);
    }

    /// `input` is the whole sentence: appends what its remaining steps write and applies
    /// the end-of-sentence rules. From `Resume::sentence_start()` and an empty `out`,
    /// `out` ends as `normalize(input)`.
    pub fn finish_normalize(&self, input: &[u8], st: &mut Resume, out: &mut Vec<u8>) {
        self.resume(input, None, st, out);
        if !st.started {
            return; // nothing but spaces: SentencePiece writes nothing (no dummy prefix)
        }
        let cfg = &self.cfg;
        let ws = self.whitespace();
        if cfg.remove_extra_whitespaces {
            while out.ends_with(ws) {
                out.truncate(out.len() - ws.len());
            }
        }
        if cfg.treat_whitespace_as_suffix && cfg.add_dummy_prefix {
            out.extend_from_slice(ws);
        }
    }

    fn whitespace(&self) -> &'static [u8] {
        if self.cfg.escape_whitespaces {
            SPACE_SYMBOL
        } else {
            b" "
        }
    }

    /// The steps of `normalize` from `st` on: all of them when `reach` is None (the
    /// sentence ends with `input`), else only the final ones. Mirrors `normalize` step
    /// for step (the property tests compare them on every split).
    fn resume(&self, input: &[u8], reach: Option<usize>, st: &mut Resume, out: &mut Vec<u8>) {
        let len = input.len();
        // Whether a step of any kind starting at `at` is final.
        let reaches = |at: usize| reach.is_none_or(|r| at + r <= len);
        let cfg = &self.cfg;
        if !st.started {
            if cfg.remove_extra_whitespaces {
                // SentencePiece strips the steps that write a lone space at the start.
                while st.consumed < len {
                    let at = st.consumed;
                    if !self.one_byte_step(input, at, reach.is_some()) && !reaches(at) {
                        return;
                    }
                    let (sp, n) = self.prefix(&input[at..]);
                    if sp != b" " {
                        break;
                    }
                    st.consumed += n;
                }
            }
            if st.consumed == len {
                return; // nothing but spaces so far: no dummy prefix yet
            }
            if !cfg.treat_whitespace_as_suffix && cfg.add_dummy_prefix {
                out.extend_from_slice(self.whitespace());
            }
            st.prev_space = cfg.remove_extra_whitespaces;
            st.started = true;
        }
        while st.consumed < len {
            st.consumed += self.copy_final(input, st, out, reach.is_some());
            let at = st.consumed;
            if at == len || !reaches(at) {
                return;
            }
            let (sp, n) = self.prefix(&input[at..]);
            st.prev_space = self.emit_step(sp, st.prev_space, |bytes| out.extend_from_slice(bytes));
            st.consumed += n;
            if !cfg.remove_extra_whitespaces {
                st.prev_space = false;
            }
        }
    }

    /// Whether the step at `input[at]` is a byte copied as it is or a plain space (see
    /// `copy_final`, which takes the same decision).
    #[inline]
    fn one_byte_step(&self, input: &[u8], at: usize, streaming: bool) -> bool {
        match self.class[input[at] as usize] {
            PLAIN | SPACE => true,
            PLAIN_BEFORE_ASCII => match input.get(at + 1) {
                Some(&c) => c < 0x80,
                None => !streaming,
            },
            _ => false,
        }
    }

    /// `copy_plain` from `st.consumed` without the offset map, recording cuts (`Resume::
    /// cut`); `streaming`: stop before a `PLAIN_BEFORE_ASCII` byte whose next byte has
    /// not arrived. Returns the bytes consumed.
    ///
    /// The same steps as `copy_plain`, with the `PLAIN_BEFORE_ASCII` test moved out of
    /// the per-byte loop: such a byte is copied unless a non-ASCII byte follows, and every
    /// non-ASCII byte is `GENERAL`, so a run of copied bytes is scanned with one table
    /// lookup per byte and only its last byte is looked at again where the run stops.
    #[inline]
    fn copy_final(
        &self,
        input: &[u8],
        st: &mut Resume,
        out: &mut Vec<u8>,
        streaming: bool,
    ) -> usize {
        let rest = &input[st.consumed..];
        let class = &self.class;
        let copied = |b: u8| matches!(class[b as usize], PLAIN | PLAIN_BEFORE_ASCII);
        let ws = self.whitespace();
        let (mut prev_space, mut cut) = (st.prev_space, st.cut);
        let (mut i, mut from) = (0, 0);
        loop {
            while i < rest.len() && copied(rest[i]) {
                i += 1;
            }
            let Some(&b) = rest.get(i) else {
                // The run reaches the end: a last PLAIN_BEFORE_ASCII byte waits for the
                // byte after it (at the end of the sentence it is copied).
                if streaming && i > from && class[rest[i - 1] as usize] == PLAIN_BEFORE_ASCII {
                    i -= 1;
                }
                break;
            };
            if class[b as usize] != SPACE {
                // GENERAL: a rule may start at a PLAIN_BEFORE_ASCII byte before a
                // non-ASCII one, so that byte is a general step too.
                if b >= 0x80 && i > from && class[rest[i - 1] as usize] == PLAIN_BEFORE_ASCII {
                    i -= 1;
                }
                break;
            }
            if from < i {
                out.extend_from_slice(&rest[from..i]);
                prev_space = false;
            }
            if !prev_space {
                if !out.is_empty() && !out.ends_with(SPACE_SYMBOL) {
                    cut = Some((out.len(), st.consumed + i));
                }
                out.extend_from_slice(ws);
                prev_space = self.cfg.remove_extra_whitespaces;
            }
            i += 1;
            from = i;
        }
        if from < i {
            out.extend_from_slice(&rest[from..i]);
            prev_space = false;
        }
        (st.prev_space, st.cut) = (prev_space, cut);
        i
    }
}

#[cfg(test)]
mod tests {
    use super::super::NormalizerConfig;
    use super::*;

    fn normalizer(remove: bool, dummy: bool, user: &[&[u8]]) -> Normalizer {
        let cfg = NormalizerConfig {
            add_dummy_prefix: dummy,
            remove_extra_whitespaces: remove,
            escape_whitespaces: true,
            treat_whitespace_as_suffix: false,
        };
        Normalizer::new(None, cfg, user).unwrap()
    }

    /// Every split of `text` into a growing prefix then the rest gives `normalize`.
    fn check_every_split(n: &Normalizer, text: &[u8]) {
        let mut whole = Vec::new();
        n.normalize(text, &mut whole, None);
        let reach = n.stream_reach(8).unwrap();
        for split in 0..=text.len() {
            let (mut st, mut out) = (Resume::sentence_start(), Vec::new());
            n.normalize_final_steps(&text[..split], reach, &mut st, &mut out);
            assert!(st.consumed <= split);
            // A prefix of the whole, but for spaces the sentence's end may strip.
            let mut kept = &out[..];
            while let Some(rest) = kept.strip_suffix(SPACE_SYMBOL) {
                kept = rest;
            }
            assert!(whole.starts_with(kept), "split at {split}");
            n.finish_normalize(text, &mut st, &mut out);
            assert_eq!(
                out,
                whole,
                "{:?} split at {split}",
                String::from_utf8_lossy(text)
            );
        }
    }

    #[test]
    fn every_split_gives_the_whole_normalization() {
        for remove in [false, true] {
            for dummy in [false, true] {
                let n = normalizer(remove, dummy, &[b"ab c", b"\xc3\xa9t"]);
                for text in [
                    &b""[..],
                    b"   ",
                    b"  ab  c d ",
                    "caf\u{e9}t\u{e9}  na\u{ef}ve ab c\u{3000}x".as_bytes(),
                ] {
                    check_every_split(&n, text);
                }
            }
        }
    }

    #[test]
    fn cuts_are_spaces_after_a_character() {
        let n = normalizer(true, true, &[]);
        let (mut st, mut out) = (Resume::sentence_start(), Vec::new());
        n.normalize_final_steps(b" ab  cd e", 8, &mut st, &mut out);
        // "▁ab▁cd▁e": the last cut is the `▁` before "e", written by the space at 7.
        assert_eq!(st.cut, Some((10, 7)));
        assert_eq!(&out[..10], "\u{2581}ab\u{2581}cd".as_bytes());
    }
}
