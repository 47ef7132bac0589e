//! Unicode normalization forms as HF `(char, change)` streams.
//!
//! The data come from the `unicode-normalization` crate (Unicode 16), gated by the sets
//! measured from HF (whose normalization fork predates Unicode 10): a char decomposes
//! only if HF decomposes it, and a pair composes only if HF knows the composite. What
//! the gate cannot express (combining classes of marks added after HF's version) is
//! listed in docs/PIPELINE.md.
//!
//! Change accounting follows the HF fork: the first char of a decomposition replaces
//! its source char (0), the rest are inserted (+1); a composite carries the changes of
//! its parts minus one per absorbed char.

use unicode_normalization::char::{
    canonical_combining_class, compose, decompose_canonical, decompose_compatible,
};

use super::tables::tables;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    Nfd,
    Nfkd,
    Nfc,
    Nfkc,
}

impl Form {
    fn compatible(self) -> bool {
        matches!(self, Form::Nfkd | Form::Nfkc)
    }
    fn composed(self) -> bool {
        matches!(self, Form::Nfc | Form::Nfkc)
    }
}

/// Decomposed chars of `text` with their changes, in canonical order.
pub fn decomposed(text: &str, compatible: bool) -> Vec<(char, isize)> {
    let t = tables();
    let gate = if compatible {
        &t.nfkd_changes
    } else {
        &t.nfd_changes
    };
    let mut items: Vec<(char, isize)> = Vec::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_ascii() || !gate.contains(c) {
            items.push((c, 0));
            continue;
        }
        let first = items.len();
        let mut push = |d: char| {
            let change = if items.len() == first { 0 } else { 1 };
            items.push((d, change));
        };
        if compatible {
            decompose_compatible(c, &mut push);
        } else {
            decompose_canonical(c, &mut push);
        }
    }
    reorder(&mut items);
    items
}

/// Canonical ordering: stable sort of each run of non-starters by combining class.
fn reorder(items: &mut [(char, isize)]) {
    let mut i = 0;
    while i < items.len() {
        if items[i].0.is_ascii() || canonical_combining_class(items[i].0) == 0 {
            i += 1;
            continue;
        }
        let start = i;
        while i < items.len()
            && !items[i].0.is_ascii()
            && canonical_combining_class(items[i].0) != 0
        {
            i += 1;
        }
        if i - start > 1 {
            items[start..i].sort_by_key(|&(c, _)| canonical_combining_class(c));
        }
    }
}

/// Canonical composition of a decomposed stream.
fn composed(items: Vec<(char, isize)>) -> Vec<(char, isize)> {
    let known = &tables().nfd_changes;
    let mut out: Vec<(char, isize)> = Vec::with_capacity(items.len());
    let mut starter: Option<usize> = None;
    // Combining class of the last char kept after the starter; None if none yet.
    let mut last_class: Option<u8> = None;
    for (c, change) in items {
        let class = if c.is_ascii() {
            0
        } else {
            canonical_combining_class(c)
        };
        if let Some(s) = starter {
            let blocked = matches!(last_class, Some(l) if l == 0 || l >= class);
            if !blocked {
                if let Some(comp) = compose(out[s].0, c).filter(|&k| known.contains(k)) {
                    out[s].0 = comp;
                    out[s].1 += change - 1;
                    continue;
                }
            }
        }
        if class == 0 {
            starter = Some(out.len());
            last_class = None;
        } else {
            last_class = Some(class);
        }
        out.push((c, change));
    }
    out
}

/// The `(char, change)` stream of a normalization form applied to `text`.
pub fn normalize_items(text: &str, form: Form) -> Vec<(char, isize)> {
    let items = decomposed(text, form.compatible());
    if form.composed() {
        composed(items)
    } else {
        items
    }
}
