//! Character sets measured from Hugging Face `tokenizers` (scripts/gen_hf_tables.py).
//!
//! HF classifies characters with tables of several Unicode ages (an old
//! `unicode_categories`, Oniguruma, Rust std, a Unicode-9-era normalization fork). Using
//! any one current database would disagree with it on some characters, so the exact
//! sets are probed from the peer once and embedded here.

use std::sync::OnceLock;

static RAW: &[u8] = include_bytes!("hf_unicode.bin");

/// A set of code points as sorted, disjoint inclusive ranges.
pub struct CharSet {
    ranges: Vec<(u32, u32)>,
}

impl CharSet {
    #[inline]
    pub fn contains(&self, c: char) -> bool {
        let c = c as u32;
        let i = self.ranges.partition_point(|&(_, last)| last < c);
        i < self.ranges.len() && self.ranges[i].0 <= c
    }
}

pub struct Tables {
    pub bert_control: CharSet,
    pub bert_space: CharSet,
    pub bert_chinese: CharSet,
    pub nonspacing_mark: CharSet,
    pub combining_mark: CharSet,
    pub nfd_changes: CharSet,
    pub nfkd_changes: CharSet,
    pub onig_word: CharSet,
    pub onig_space: CharSet,
    pub bert_punct: CharSet,
    pub numeric: CharSet,
    pub rust_space: CharSet,
    /// Non-ASCII code point -> one or two lowercase chars (second 0 when absent).
    lower: Vec<(u32, u32, u32)>,
}

impl Tables {
    /// HF's `Lowercase` of one char: up to two chars.
    #[inline]
    pub fn lowercase(&self, c: char) -> (char, Option<char>) {
        if c.is_ascii() {
            return (c.to_ascii_lowercase(), None);
        }
        match self.lower.binary_search_by_key(&(c as u32), |t| t.0) {
            Ok(i) => {
                let (_, a, b) = self.lower[i];
                let first = char::from_u32(a).unwrap_or(c);
                (first, char::from_u32(b).filter(|_| b != 0))
            }
            Err(_) => (c, None),
        }
    }
}

fn parse() -> Tables {
    let words: Vec<u32> = RAW
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect();
    // The file is generated and checked in; a malformed one is a build defect.
    assert_eq!(&RAW[..4], b"TPHF", "hf_unicode.bin: bad magic");
    let n_sets = words[2] as usize;
    let mut at = 3;
    let mut sets: Vec<(String, CharSet)> = Vec::with_capacity(n_sets);
    for _ in 0..n_sets {
        let name_len = words[at] as usize;
        at += 1;
        let name_words = name_len.div_ceil(4);
        let name = String::from_utf8_lossy(&RAW[at * 4..at * 4 + name_len]).into_owned();
        at += name_words;
        let n = words[at] as usize;
        at += 1;
        let ranges = (0..n)
            .map(|k| (words[at + 2 * k], words[at + 2 * k + 1]))
            .collect();
        at += 2 * n;
        sets.push((name, CharSet { ranges }));
    }
    let n_lower = words[at] as usize;
    at += 1;
    let lower = (0..n_lower)
        .map(|k| {
            (
                words[at + 3 * k],
                words[at + 3 * k + 1],
                words[at + 3 * k + 2],
            )
        })
        .collect();
    let mut take = |name: &str| -> CharSet {
        let i = sets
            .iter()
            .position(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("hf_unicode.bin lacks the set {name}"));
        sets.swap_remove(i).1
    };
    Tables {
        bert_control: take("bert_control"),
        bert_space: take("bert_space"),
        bert_chinese: take("bert_chinese"),
        nonspacing_mark: take("nonspacing_mark"),
        combining_mark: take("combining_mark"),
        nfd_changes: take("nfd_changes"),
        nfkd_changes: take("nfkd_changes"),
        onig_word: take("onig_word"),
        onig_space: take("onig_space"),
        bert_punct: take("bert_punct"),
        numeric: take("numeric"),
        rust_space: take("rust_space"),
        lower,
    }
}

pub fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(parse)
}
