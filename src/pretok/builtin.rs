//! Hand-written scanners for the named patterns (gpt2, gpt4/cl100k, o200k, llama3).
//!
//! Each scanner tries the pattern's alternatives in order at the current position and
//! returns the end of the first one that matches, mirroring a backtracking regex engine.
//! Every alternative is decided by a bounded look at character classes, so a scan is
//! linear in the input. The regex sources in `tokenpact/patterns.py` are the contract;
//! `tests/properties/test_pretokenize_vs_regex.py` checks span equality against `regex`.

use std::cell::Cell;

use super::classes::{classes, Classes, L, LL, LM, LO, LT, LU, M, N, WS};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    Gpt2,
    Gpt4,
    O200k,
    Llama3,
}

impl Builtin {
    pub fn from_name(name: &str) -> Option<Builtin> {
        match name {
            "gpt2" => Some(Builtin::Gpt2),
            "gpt4" | "cl100k" => Some(Builtin::Gpt4),
            "o200k" => Some(Builtin::O200k),
            "llama3" => Some(Builtin::Llama3),
            _ => None,
        }
    }

    /// The end of the longest run of leading pre-tokens of `text` that no continuation
    /// of `text` can change: a pre-token is final when the scan that found it never
    /// looked at the end of the text (every byte it read is in `text`, and the scanner is
    /// a function of the bytes it reads). Streaming encoders commit up to here.
    pub fn final_prefix(self, text: &str) -> usize {
        self.final_pretokens(text, &mut Vec::new(), &mut Vec::new())
    }

    /// `final_prefix`, also leaving in `ends` the end offsets of the pre-tokens it covers
    /// (the last one is the returned cut; empty when it is 0). `reach` is scratch space
    /// (a caller scanning often keeps both allocations).
    pub fn final_pretokens(
        self,
        text: &str,
        ends: &mut Vec<usize>,
        reach: &mut Vec<usize>,
    ) -> usize {
        let s = Scanner::<true>::new(text.as_bytes());
        ends.clear();
        // The furthest byte offset each pre-token's scan asked about.
        reach.clear();
        let mut i = 0;
        while i < s.b.len() {
            s.max_read.set(i);
            let end = self.next_end(&s, i);
            if s.end_seen.get() {
                break;
            }
            ends.push(end);
            reach.push(s.max_read.get());
            i = end;
        }
        // Committing means encoding `text[..cut]` alone, where the end of the text can
        // change how its last pre-tokens split (`\s+(?!\S)` at the end takes the whole
        // run). Keep the longest cut whose own split reproduces the final pre-tokens.
        // A pre-token whose scan read only bytes before `cut` splits the same in
        // `text[..cut]`, so the split of `text[..cut]` is rechecked only from the first
        // pre-token whose scan reached `cut`.
        for k in (0..ends.len()).rev().take(4) {
            let cut = ends[k];
            let Some(m) = reach[..=k].iter().position(|&r| r >= cut) else {
                ends.truncate(k + 1);
                return cut;
            };
            let alone = Scanner::<true>::new(&text.as_bytes()[..cut]);
            let mut at = if m == 0 { 0 } else { ends[m - 1] };
            let mut same = true;
            for &want in &ends[m..=k] {
                if at >= cut {
                    same = false;
                    break;
                }
                at = self.next_end(&alone, at);
                if at != want {
                    same = false;
                    break;
                }
            }
            if same && at == cut {
                ends.truncate(k + 1);
                return cut;
            }
        }
        ends.clear();
        0
    }

    /// The ends of the leading pre-tokens of `text` that no continuation can change (each
    /// one's scan never looked at the end of the text), found with the plain scanner (no
    /// look-ahead tracking); returns the last end, 0 if none. The scanners read no byte
    /// before the position they start from, so the pre-tokens of `text[cut..]` plus any
    /// continuation are the whole text's after `cut`. Unlike `final_pretokens`, the cut
    /// is not checked to split the same when `text[..cut]` is encoded alone: callers
    /// encode these pre-tokens as they are (the native streaming encoder), never the
    /// prefix as a new text.
    pub fn final_pretoken_ends(self, text: &str, ends: &mut Vec<usize>) -> usize {
        let s = Scanner::<false>::new(text.as_bytes());
        ends.clear();
        let mut i = 0;
        while i < s.b.len() {
            let end = self.next_end(&s, i);
            if s.end_seen.get() {
                break;
            }
            ends.push(end);
            i = end;
        }
        ends.last().copied().unwrap_or(0)
    }

    #[inline]
    fn next_end<const TRACK: bool>(self, s: &Scanner<'_, TRACK>, i: usize) -> usize {
        let end = match self {
            Builtin::Gpt2 => s.gpt2(i),
            Builtin::Gpt4 => s.gpt4(i),
            Builtin::O200k => s.o200k(i),
            Builtin::Llama3 => s.llama3(i),
        };
        // Every character matches some alternative; the max() guards progress anyway.
        end.max(i + s.len_at(i))
    }

    /// Calls `emit(start, end)` (byte offsets) for every pre-token of `text`, in order.
    pub fn split(self, text: &str, mut emit: impl FnMut(usize, usize)) {
        let s = Scanner::<false>::new(text.as_bytes());
        let mut i = 0;
        while i < s.b.len() {
            let end = self.next_end(&s, i);
            emit(i, end);
            i = end;
        }
    }
}

const U_SET: u16 = LU | LT | LM | LO | M; // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
const W_SET: u16 = LL | LM | LO | M; // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
const UW_SET: u16 = LM | LO | M;

/// `TRACK`: record `max_read` (only `final_pretokens` needs it; plain splits skip it).
struct Scanner<'a, const TRACK: bool> {
    b: &'a [u8],
    c: &'static Classes,
    /// Set when a scan asks about a position at or past the end of the text: its result
    /// may then depend on text that has not arrived yet (see `final_prefix`).
    end_seen: Cell<bool>,
    /// The furthest byte offset asked about (bytes are read only at offsets that were
    /// asked about, or backwards from them): what a scan's result can depend on.
    max_read: Cell<usize>,
}

impl<'a, const TRACK: bool> Scanner<'a, TRACK> {
    fn new(b: &'a [u8]) -> Scanner<'a, TRACK> {
        Scanner {
            b,
            c: classes(),
            end_seen: Cell::new(false),
            max_read: Cell::new(0),
        }
    }

    #[inline(always)]
    fn asked(&self, i: usize) {
        if TRACK && i > self.max_read.get() {
            self.max_read.set(i);
        }
    }

    /// Decodes the char at byte offset `i` (text is valid UTF-8).
    #[inline(always)]
    fn ch(&self, i: usize) -> Option<(char, usize)> {
        self.asked(i);
        let Some(&b0) = self.b.get(i) else {
            self.end_seen.set(true);
            return None;
        };
        if b0 < 0x80 {
            return Some((b0 as char, 1));
        }
        let (len, init) = if b0 < 0xE0 {
            (2, (b0 & 0x1F) as u32)
        } else if b0 < 0xF0 {
            (3, (b0 & 0x0F) as u32)
        } else {
            (4, (b0 & 0x07) as u32)
        };
        let mut cp = init;
        for k in 1..len {
            cp = (cp << 6) | (self.b[i + k] & 0x3F) as u32;
        }
        // Safe: the input came from a &str, so every sequence is a valid scalar value.
        Some((char::from_u32(cp).unwrap_or('\u{FFFD}'), len))
    }

    /// `i == len`, recorded: the answer depends on whether more text follows.
    #[inline(always)]
    fn at_end(&self, i: usize) -> bool {
        self.asked(i);
        let end = i >= self.b.len();
        if end {
            self.end_seen.set(true);
        }
        end
    }

    #[inline(always)]
    fn len_at(&self, i: usize) -> usize {
        if let Some(&b) = self.b.get(i) {
            if b < 0x80 {
                self.asked(i);
                return 1;
            }
        }
        self.ch(i).map_or(1, |(_, l)| l)
    }

    /// Flags of the char at `i` (0 past the end) and its byte length.
    ///
    /// Inlined with an ASCII fast path (most of the text in most corpora); other
    /// characters and the end of the text take the out-of-line `cls_slow`.
    #[inline(always)]
    fn cls(&self, i: usize) -> (u16, usize, char) {
        if let Some(&b) = self.b.get(i) {
            if b < 0x80 {
                self.asked(i);
                return (self.c.ascii[b as usize], 1, b as char);
            }
        }
        self.cls_slow(i)
    }

    #[inline(never)]
    fn cls_slow(&self, i: usize) -> (u16, usize, char) {
        match self.ch(i) {
            Some((c, l)) => (self.c.flags(c), l, c),
            None => (0, 0, '\0'),
        }
    }

    #[inline]
    fn run(&self, mut i: usize, set: u16) -> usize {
        loop {
            let (f, l, _) = self.cls(i);
            if l == 0 || f & set == 0 {
                return i;
            }
            i += l;
        }
    }

    /// `[^\s\p{L}\p{N}]`: neither whitespace, letter nor number.
    #[inline]
    fn is_other(f: u16, l: usize) -> bool {
        l > 0 && f & (WS | L | N) == 0
    }

    #[inline]
    fn run_other(&self, mut i: usize) -> usize {
        loop {
            let (f, l, _) = self.cls(i);
            if !Self::is_other(f, l) {
                return i;
            }
            i += l;
        }
    }

    /// `[^\r\n\p{L}\p{N}]`.
    #[inline]
    fn is_prefix(f: u16, l: usize, c: char) -> bool {
        l > 0 && c != '\r' && c != '\n' && f & (L | N) == 0
    }

    #[inline]
    fn run_chars(&self, mut i: usize, accept: impl Fn(char) -> bool) -> usize {
        while let Some((c, l)) = self.ch(i) {
            if !accept(c) {
                break;
            }
            i += l;
        }
        i
    }

    /// Up to three `\p{N}`.
    #[inline]
    fn numbers3(&self, i: usize) -> usize {
        let mut end = i;
        for _ in 0..3 {
            let (f, l, _) = self.cls(end);
            if l == 0 || f & N == 0 {
                break;
            }
            end += l;
        }
        end
    }

    /// Contractions `'s|'t|'re|'ve|'m|'ll|'d` at `i` (which holds `'`).
    /// Case-insensitive matching follows simple case folding, where `s` also matches
    /// U+017F LATIN SMALL LETTER LONG S.
    fn contraction(&self, i: usize, ignore_case: bool) -> Option<usize> {
        self.asked(i);
        if self.b.get(i) != Some(&b'\'') {
            self.end_seen.set(self.end_seen.get() || i >= self.b.len());
            return None;
        }
        let fold = |c: char| -> char {
            if !ignore_case {
                return c;
            }
            match c {
                '\u{17F}' => 's',
                c if c.is_ascii_uppercase() => c.to_ascii_lowercase(),
                c => c,
            }
        };
        let (c1, l1) = self.ch(i + 1)?;
        let c1 = fold(c1);
        match c1 {
            's' | 't' | 'm' | 'd' => Some(i + 1 + l1),
            'r' | 'v' | 'l' => {
                let (c2, l2) = self.ch(i + 1 + l1)?;
                let want = if c1 == 'l' { 'l' } else { 'e' };
                (fold(c2) == want).then_some(i + 1 + l1 + l2)
            }
            _ => None,
        }
    }

    /// Whitespace run starting at `i` and the position just after its last `\r`/`\n`.
    #[inline]
    fn ws_run(&self, i: usize) -> (usize, Option<usize>) {
        let mut j = i;
        let mut after_newline = None;
        loop {
            let (f, l, c) = self.cls(j);
            if l == 0 || f & WS == 0 {
                return (j, after_newline);
            }
            j += l;
            if c == '\r' || c == '\n' {
                after_newline = Some(j);
            }
        }
    }

    /// `\s+(?!\S)` then `\s+` for a whitespace run [i, j): the last whitespace char is
    /// left for the next token unless the run ends the text.
    #[inline]
    fn ws_tail(&self, i: usize, j: usize) -> usize {
        if self.at_end(j) {
            return j;
        }
        let last = self.last_char_start(j);
        if last > i {
            last
        } else {
            j
        }
    }

    #[inline]
    fn last_char_start(&self, mut j: usize) -> usize {
        j -= 1;
        while self.b[j] & 0xC0 == 0x80 {
            j -= 1;
        }
        j
    }

    // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
    fn gpt2(&self, i: usize) -> usize {
        if let Some(e) = self.contraction(i, false) {
            return e;
        }
        let (f, l, c) = self.cls(i);
        let (start, f) = if c == ' ' {
            let (f2, l2, _) = self.cls(i + 1);
            if l2 > 0 && f2 & (L | N) != 0 || Self::is_other(f2, l2) {
                (i + 1, f2)
            } else {
                (i, f)
            }
        } else {
            (i, f)
        };
        if f & L != 0 {
            return self.run(start, L);
        }
        if f & N != 0 {
            return self.run(start, N);
        }
        if Self::is_other(f, l) || (start > i) {
            return self.run_other(start);
        }
        let (j, _) = self.ws_run(i);
        self.ws_tail(i, j)
    }

    // '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+
    // |\s++$|\s*[\r\n]|\s+(?!\S)|\s
    fn gpt4(&self, i: usize) -> usize {
        self.cl100k_family(i, true)
    }

    // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*
    // |\s*[\r\n]+|\s+(?!\S)|\s+
    fn llama3(&self, i: usize) -> usize {
        self.cl100k_family(i, false)
    }

    fn cl100k_family(&self, i: usize, ws_to_end_first: bool) -> usize {
        if let Some(e) = self.contraction(i, true) {
            return e;
        }
        let (f, l, c) = self.cls(i);
        if f & L != 0 {
            return self.run(i, L);
        }
        let (f2, l2, _) = self.cls(i + l);
        if Self::is_prefix(f, l, c) && l2 > 0 && f2 & L != 0 {
            return self.run(i + l, L);
        }
        if f & N != 0 {
            return self.numbers3(i);
        }
        let punct_start = if c == ' ' && Self::is_other(f2, l2) {
            i + l
        } else {
            i
        };
        let (pf, pl, _) = self.cls(punct_start);
        if Self::is_other(pf, pl) {
            let e = self.run_other(punct_start);
            return self.run_chars(e, |c| c == '\r' || c == '\n');
        }
        // Whitespace.
        let (j, after_newline) = self.ws_run(i);
        if ws_to_end_first && self.at_end(j) {
            return j;
        }
        if let Some(e) = after_newline {
            return e;
        }
        self.ws_tail(i, j)
    }

    fn o200k(&self, i: usize) -> usize {
        let (f, l, c) = self.cls(i);
        let with_prefix = Self::is_prefix(f, l, c);
        // Alternative 1: prefix? U* W+ contraction?
        for start in [with_prefix.then_some(i + l), Some(i)]
            .into_iter()
            .flatten()
        {
            if let Some(e) = self.o200k_lower(start) {
                return self.o200k_suffix(e);
            }
        }
        // Alternative 2: prefix? U+ W* contraction?
        for start in [with_prefix.then_some(i + l), Some(i)]
            .into_iter()
            .flatten()
        {
            let (fs, ls, _) = self.cls(start);
            if ls > 0 && fs & U_SET != 0 {
                let u_end = self.run(start, U_SET);
                let w_end = self.run(u_end, W_SET);
                return self.o200k_suffix(w_end);
            }
        }
        if f & N != 0 {
            return self.numbers3(i);
        }
        let (f2, l2, _) = self.cls(i + l);
        let punct_start = if c == ' ' && Self::is_other(f2, l2) {
            i + l
        } else {
            i
        };
        let (pf, pl, _) = self.cls(punct_start);
        if Self::is_other(pf, pl) {
            let e = self.run_other(punct_start);
            return self.run_chars(e, |c| c == '\r' || c == '\n' || c == '/');
        }
        let (j, after_newline) = self.ws_run(i);
        if let Some(e) = after_newline {
            return e;
        }
        self.ws_tail(i, j)
    }

    /// `[U]*[W]+` from `start` with backtracking: U* takes its longest run, then gives
    /// back characters until a W character can start W+.
    fn o200k_lower(&self, start: usize) -> Option<usize> {
        let mut u_end = start;
        let mut last_uw: Option<(usize, usize)> = None;
        loop {
            let (f, l, _) = self.cls(u_end);
            if l == 0 || f & U_SET == 0 {
                break;
            }
            if f & UW_SET != 0 {
                last_uw = Some((u_end, l));
            }
            u_end += l;
        }
        let (f, l, _) = self.cls(u_end);
        if l > 0 && f & W_SET != 0 {
            return Some(self.run(u_end, W_SET));
        }
        // Chars after the last U∩W char are Lu/Lt, and the char at u_end is not in W,
        // so W+ starting at the last U∩W char consumes exactly that char.
        last_uw.map(|(k, lk)| k + lk)
    }

    fn o200k_suffix(&self, e: usize) -> usize {
        self.contraction(e, true).unwrap_or(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(b: Builtin, t: &str) -> Vec<String> {
        let mut out = vec![];
        b.split(t, |s, e| out.push(t[s..e].to_string()));
        out
    }

    #[test]
    fn llama3_basic() {
        assert_eq!(
            pieces(Builtin::Llama3, "Hello world's 12345  x\n\n  y"),
            vec!["Hello", " world", "'s", " ", "123", "45", " ", " x", "\n\n", " ", " y"]
        );
    }

    #[test]
    fn gpt4_ws_to_end() {
        assert_eq!(pieces(Builtin::Gpt4, "a\n  "), vec!["a", "\n  "]);
        assert_eq!(pieces(Builtin::Llama3, "a\n  "), vec!["a", "\n", "  "]);
    }
}
