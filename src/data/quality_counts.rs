//! The integer counts behind the Gopher and C4 quality rules, for many documents at
//! once. Python's `tokenpact.data.cleaning.quality_stats` is the readable reference
//! (words are `str.split()` tokens, lines split on `\n`, paragraphs on `\n\s*\n`); this
//! engine returns the counts the rule fractions are made of, so the Python side divides
//! the same integers and both sides reach the same decision bit for bit
//! (tests/data/test_clean_engine.py).

use rustc_hash::{FxHashMap, FxHashSet};

use super::py_text::{char_len, lstrip, rstrip, strip, CharTable, CodePoints};

/// What `stop_word_count` strips from both ends of a lowered word.
const STOP_STRIP: &[u8] = b".,;:!?\"'()";
const BULLETS: [&str; 15] = [
    "\u{2022}", "\u{2023}", "\u{25e6}", "\u{2043}", "\u{2219}", "\u{b7}", "-", "*", "\u{2013}",
    "\u{2014}", "\u{25aa}", "\u{25cf}", "\u{25cb}", "\u{25a0}", "\u{25a1}",
];
const ELLIPSES: [&str; 2] = ["...", "\u{2026}"];
const SENTENCE_END: [u32; 6] = [0x2E, 0x21, 0x3F, 0x3002, 0xFF01, 0xFF1F];

/// The rule set's fixed inputs: lowered stop words and the n-gram sizes (in words).
#[derive(Debug, Clone, Default)]
pub struct QualityRules {
    pub stop_words: FxHashSet<Vec<u8>>,
    pub top_ns: Vec<usize>,
    pub dup_ns: Vec<usize>,
}

/// How one document is read: no-space text counts characters as n-gram units, `scale`
/// of them standing for one word (0: no n-gram rules).
#[derive(Debug, Clone, Copy)]
pub struct DocPolicy {
    pub no_space: bool,
    pub scale: usize,
}

/// Names of the counts, in the order [`document_counts`] returns them; the n-gram
/// counts follow: `(count, chars)` per top size, then covered chars per duplicate size.
pub const COUNT_NAMES: [&str; 20] = [
    "words",
    "word_chars",
    "symbols",
    "alpha_words",
    "stop_words",
    "lines",
    "bullet_lines",
    "ellipsis_lines",
    "dup_lines",
    "dup_line_chars",
    "line_chars",
    "paragraphs",
    "dup_paragraphs",
    "dup_paragraph_chars",
    "paragraph_chars",
    "nonspace_chars",
    "sentences",
    "lorem_ipsum",
    "curly_bracket",
    "unit_chars",
];

/// Python's `str.lower()` of `bytes` (Rust's case tables; see the module docs of
/// the Python reference for the Unicode-version caveat).
fn lower(bytes: &[u8]) -> Vec<u8> {
    match std::str::from_utf8(bytes) {
        Ok(s) if s.is_ascii() => s.to_ascii_lowercase().into_bytes(),
        Ok(s) => s.to_lowercase().into_bytes(),
        Err(_) => {
            // Lone surrogates: lower the valid runs, keep the rest.
            let mut out = Vec::with_capacity(bytes.len());
            for (at, cp, len) in CodePoints::new(bytes) {
                match char::from_u32(cp) {
                    Some(c) => {
                        for l in c.to_lowercase() {
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(l.encode_utf8(&mut buf).as_bytes());
                        }
                    }
                    None => out.extend_from_slice(&bytes[at..at + len]),
                }
            }
            out
        }
    }
}

fn strip_bytes<'a>(mut s: &'a [u8], chars: &[u8]) -> &'a [u8] {
    while let Some((first, rest)) = s.split_first() {
        if chars.contains(first) {
            s = rest;
        } else {
            break;
        }
    }
    while let Some((last, rest)) = s.split_last() {
        if chars.contains(last) {
            s = rest;
        } else {
            break;
        }
    }
    s
}

fn count_non_overlapping(hay: &[u8], needle: &[u8]) -> u64 {
    let mut n = 0;
    let mut i = 0;
    while i + needle.len() <= hay.len() {
        if &hay[i..i + needle.len()] == needle {
            n += 1;
            i += needle.len();
        } else {
            i += 1;
        }
    }
    n
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// `str.split()`: the maximal runs of non-space code points.
fn split_words<'a>(table: &CharTable, bytes: &'a [u8]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    for (at, cp, _) in CodePoints::new(bytes) {
        if table.is_space(cp) {
            if let Some(s) = start.take() {
                out.push(&bytes[s..at]);
            }
        } else if start.is_none() {
            start = Some(at);
        }
    }
    if let Some(s) = start {
        out.push(&bytes[s..]);
    }
    out
}

/// `re.split(r"\n\s*\n", text)`: a break runs from a `\n` to the last `\n` of the
/// whitespace that follows it (greedy `\s*`, backing off to a `\n`).
fn split_paragraphs<'a>(table: &CharTable, bytes: &'a [u8]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut last = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\n' {
            i += 1;
            continue;
        }
        let mut end = None;
        let mut j = i + 1;
        while j < bytes.len() {
            let (cp, len) = super::py_text::decode_at(bytes, j);
            if !table.is_space(cp) {
                break;
            }
            if cp == 0x0A {
                end = Some(j + 1);
            }
            j += len;
        }
        match end {
            Some(e) => {
                out.push(&bytes[last..i]);
                last = e;
                i = e;
            }
            None => i += 1,
        }
    }
    out.push(&bytes[last..]);
    out
}

/// (items repeating an earlier one, characters in those repeats, all characters).
fn duplicates(items: &[&[u8]]) -> (u64, u64, u64) {
    let mut seen: FxHashSet<&[u8]> = FxHashSet::default();
    let (mut dup, mut dup_chars, mut total) = (0, 0, 0);
    for item in items {
        let n = char_len(item) as u64;
        total += n;
        if !seen.insert(item) {
            dup += 1;
            dup_chars += n;
        }
    }
    (dup, dup_chars, total)
}

fn sentences(table: &CharTable, bytes: &[u8]) -> u64 {
    let mut n = 0;
    let mut in_run = false;
    for (_, cp, _) in CodePoints::new(bytes) {
        if SENTENCE_END.contains(&cp) {
            in_run = true;
        } else {
            if in_run && table.is_space(cp) {
                n += 1;
            }
            in_run = false;
        }
    }
    n + u64::from(in_run)
}

/// N-gram statistics over `units` (dense unit IDs) with `lens` characters each:
/// `(count, chars)` of the most frequent n-gram per top size (ties: the most
/// characters) and the characters covered by repeated n-grams per duplicate size.
fn ngram_counts(ids: &[u32], lens: &[u64], top: &[usize], dup: &[usize]) -> Vec<u64> {
    let max_n = top.iter().chain(dup).copied().max().unwrap_or(0);
    let mut prefix = Vec::with_capacity(lens.len() + 1);
    prefix.push(0u64);
    for l in lens {
        prefix.push(prefix.last().copied().unwrap_or(0) + l);
    }
    let mut tops = vec![(0u64, 0u64); top.len()];
    let mut dups = vec![0u64; dup.len()];
    let mut level: Vec<u32> = ids.to_vec();
    let mut index: FxHashMap<u64, u32> = FxHashMap::default();
    index.reserve(ids.len());
    let mut counts: Vec<u64> = Vec::new();
    let mut n = 1;
    while n <= max_n && !level.is_empty() {
        if n > 1 {
            index.clear();
            let next: Vec<u32> = (0..level.len() - 1)
                .map(|i| {
                    let key = (u64::from(level[i]) << 32) | u64::from(ids[i + n - 1]);
                    let fresh = index.len() as u32;
                    *index.entry(key).or_insert(fresh)
                })
                .collect();
            level = next;
            if level.is_empty() {
                break;
            }
        }
        let wanted_top: Vec<usize> = (0..top.len()).filter(|&k| top[k] == n).collect();
        let wanted_dup: Vec<usize> = (0..dup.len()).filter(|&k| dup[k] == n).collect();
        if !wanted_top.is_empty() || !wanted_dup.is_empty() {
            let distinct = level.iter().copied().max().map_or(0, |m| m as usize + 1);
            counts.clear();
            counts.resize(distinct, 0);
            for &g in &level {
                counts[g as usize] += 1;
            }
            if !wanted_top.is_empty() {
                let best = counts.iter().copied().max().unwrap_or(0);
                let chars = level
                    .iter()
                    .enumerate()
                    .filter(|(_, g)| counts[**g as usize] == best)
                    .map(|(i, _)| prefix[i + n] - prefix[i])
                    .max()
                    .unwrap_or(0);
                for k in wanted_top {
                    tops[k] = (best, chars);
                }
            }
            if !wanted_dup.is_empty() {
                let mut covered = 0u64;
                let mut reach = 0usize; // units before `reach` are covered
                for (i, &g) in level.iter().enumerate() {
                    if counts[g as usize] > 1 {
                        let from = i.max(reach);
                        let to = i + n;
                        if to > from {
                            covered += prefix[to] - prefix[from];
                            reach = to;
                        }
                    }
                }
                for k in wanted_dup {
                    dups[k] = covered;
                }
            }
        }
        n += 1;
    }
    let mut out = Vec::with_capacity(2 * top.len() + dup.len());
    for (c, ch) in tops {
        out.push(c);
        out.push(ch);
    }
    out.extend(dups);
    out
}

/// The counts of one document (see [`COUNT_NAMES`]).
pub fn document_counts(
    table: &CharTable,
    rules: &QualityRules,
    policy: DocPolicy,
    text: &[u8],
) -> Vec<u64> {
    let ws = split_words(table, text);
    let word_chars: u64 = ws.iter().map(|w| char_len(w) as u64).sum();
    let symbols = count_non_overlapping(text, b"#")
        + count_non_overlapping(text, b"...")
        + count_non_overlapping(text, "\u{2026}".as_bytes());
    let alpha_words = ws
        .iter()
        .filter(|w| CodePoints::new(w).any(|(_, cp, _)| table.is_alpha(cp)))
        .count() as u64;
    let max_stop = rules.stop_words.iter().map(Vec::len).max().unwrap_or(0);
    let stop_words = if rules.stop_words.is_empty() {
        0
    } else {
        ws.iter()
            .filter(|w| {
                if w.is_ascii() {
                    // ASCII: the stripped characters are not letters, so strip first and
                    // lower in place (the same string as lower-then-strip).
                    let s = strip_bytes(w, STOP_STRIP);
                    if s.len() > max_stop {
                        return false;
                    }
                    let mut buf = [0u8; 64];
                    if s.len() > buf.len() {
                        return rules.stop_words.contains(&s.to_ascii_lowercase());
                    }
                    let low = &mut buf[..s.len()];
                    low.copy_from_slice(s);
                    low.make_ascii_lowercase();
                    return rules.stop_words.contains(&*low);
                }
                let lowered = lower(w);
                rules.stop_words.contains(strip_bytes(&lowered, STOP_STRIP))
            })
            .count() as u64
    };
    let lines: Vec<&[u8]> = text
        .split(|b| *b == b'\n')
        .filter(|l| !strip(table, l).is_empty())
        .collect();
    let bullet_lines = lines
        .iter()
        .filter(|l| {
            let s = lstrip(table, l);
            BULLETS.iter().any(|b| s.starts_with(b.as_bytes()))
        })
        .count() as u64;
    let ellipsis_lines = lines
        .iter()
        .filter(|l| {
            let s = rstrip(table, l);
            ELLIPSES.iter().any(|e| s.ends_with(e.as_bytes()))
        })
        .count() as u64;
    let (dup_lines, dup_line_chars, line_chars) = duplicates(&lines);
    let paragraphs: Vec<&[u8]> = split_paragraphs(table, text)
        .into_iter()
        .filter(|p| !strip(table, p).is_empty())
        .collect();
    let (dup_paragraphs, dup_paragraph_chars, paragraph_chars) = duplicates(&paragraphs);
    let nonspace: Vec<(usize, usize)> = CodePoints::new(text)
        .filter(|(_, cp, _)| !table.is_space(*cp))
        .map(|(at, _, len)| (at, len))
        .collect();
    let lorem = if text.is_ascii() {
        text.windows(11)
            .any(|w| w.eq_ignore_ascii_case(b"lorem ipsum"))
    } else {
        contains(&lower(text), b"lorem ipsum")
    };
    let curly = text.contains(&b'{');

    let units: Vec<(&[u8], u64)> = if policy.scale == 0 {
        Vec::new()
    } else if policy.no_space {
        nonspace
            .iter()
            .map(|&(at, len)| (&text[at..at + len], 1u64))
            .collect()
    } else {
        ws.iter().map(|w| (*w, char_len(w) as u64)).collect()
    };
    let mut index: FxHashMap<&[u8], u32> = FxHashMap::default();
    let mut unit_ids = Vec::with_capacity(units.len());
    let mut unit_lens = Vec::with_capacity(units.len());
    for (u, len) in units {
        let fresh = index.len() as u32;
        unit_ids.push(*index.entry(u).or_insert(fresh));
        unit_lens.push(len);
    }
    let unit_chars: u64 = unit_lens.iter().sum();
    let scale = policy.scale.max(1);
    let top: Vec<usize> = rules.top_ns.iter().map(|n| n * scale).collect();
    let dup: Vec<usize> = rules.dup_ns.iter().map(|n| n * scale).collect();
    let grams = ngram_counts(&unit_ids, &unit_lens, &top, &dup);

    let mut out = vec![
        ws.len() as u64,
        word_chars,
        symbols,
        alpha_words,
        stop_words,
        lines.len() as u64,
        bullet_lines,
        ellipsis_lines,
        dup_lines,
        dup_line_chars,
        line_chars,
        paragraphs.len() as u64,
        dup_paragraphs,
        dup_paragraph_chars,
        paragraph_chars,
        nonspace.len() as u64,
        sentences(table, text),
        u64::from(lorem),
        u64::from(curly),
        unit_chars,
    ];
    out.extend(grams);
    out
}

#[cfg(test)]
mod tests {
    use super::super::py_text::{CharTable, CODE_POINTS, LETTER, SPACE};
    use super::*;

    fn table() -> CharTable {
        let mut t = vec![0u16; CODE_POINTS];
        for cp in [0x20u32, 0x0A, 0x09, 0x0D] {
            t[cp as usize] |= SPACE;
        }
        for cp in (0x41..=0x5Au32).chain(0x61..=0x7A) {
            t[cp as usize] |= LETTER | 1;
        }
        CharTable::new(t).unwrap()
    }

    #[test]
    fn paragraphs_split_like_the_regex() {
        let t = table();
        let parts = split_paragraphs(&t, b"a\n \n\nb\nc\n\n");
        assert_eq!(parts, vec![&b"a"[..], &b"b\nc"[..], &b""[..]]);
    }

    #[test]
    fn sentences_end_before_space_or_end() {
        let t = table();
        assert_eq!(sentences(&t, b"A. b.c d!? e."), 3);
        assert_eq!(sentences(&t, b"e.g.x"), 0);
    }

    #[test]
    fn ngram_counts_top_and_covered() {
        // a b a b c: bigram "a b" twice (chars 2 each), covered units 0..4.
        let ids = [0, 1, 0, 1, 2];
        let lens = [1, 1, 1, 1, 1];
        assert_eq!(ngram_counts(&ids, &lens, &[2], &[2]), vec![2, 2, 4]);
        assert_eq!(ngram_counts(&ids, &lens, &[6], &[6]), vec![0, 0, 0]);
    }

    #[test]
    fn counts_words_and_stop_words() {
        let t = table();
        let rules = QualityRules {
            stop_words: [b"the".to_vec()].into_iter().collect(),
            top_ns: vec![2],
            dup_ns: vec![5],
        };
        let policy = DocPolicy {
            no_space: false,
            scale: 1,
        };
        let c = document_counts(&t, &rules, policy, b"The cat, (the) 42 ...\n- x");
        assert_eq!(c[0], 7); // words
        assert_eq!(c[4], 2); // stop words
        assert_eq!(c[2], 1); // symbols
        assert_eq!(c[3], 4); // alphabetic words
        assert_eq!(c[6], 1); // bullet lines
    }
}
