//! A chain of split steps, as in Hugging Face's `Sequence` of `Split` pre-tokenizers.
//!
//! Each step splits every current piece by a pattern and keeps parts according to a
//! behaviour. `MatchesOnly` is tiktoken's `findall` (text between matches is dropped);
//! the others follow Hugging Face's `SplitDelimiterBehavior` exactly, including how
//! `MergedWithPrevious`, `MergedWithNext` and `Contiguous` fold neighbouring parts.

use super::rewrite::Rewrite;
use super::Pretokenizer;
use crate::error::{CoreError, CoreResult};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behavior {
    MatchesOnly,
    Isolated,
    Removed,
    MergedWithPrevious,
    MergedWithNext,
    Contiguous,
}

impl Behavior {
    pub fn parse(s: &str) -> CoreResult<Behavior> {
        Ok(match s {
            "matches_only" => Behavior::MatchesOnly,
            "isolated" | "Isolated" => Behavior::Isolated,
            "removed" | "Removed" => Behavior::Removed,
            "merged_with_previous" | "MergedWithPrevious" => Behavior::MergedWithPrevious,
            "merged_with_next" | "MergedWithNext" => Behavior::MergedWithNext,
            "contiguous" | "Contiguous" => Behavior::Contiguous,
            _ => {
                return Err(CoreError::Config(format!(
                    "unknown split behaviour {s:?}; use isolated, removed, merged_with_previous, \
                     merged_with_next, contiguous or matches_only"
                )))
            }
        })
    }
}

pub struct SplitStep {
    pub pattern: Pretokenizer,
    pub behavior: Behavior,
    pub invert: bool,
}

/// Pre-tokenization as a list of steps; an empty chain keeps the text whole. An
/// optional text rewrite (Metaspace, ByteLevel's prefix space) runs on each special-token
/// segment before the split steps (`CoreTokenizer` applies it, see `rewrite.rs`).
pub struct PretokChain {
    pub rewrite: Option<Rewrite>,
    pub steps: Vec<SplitStep>,
}

/// One step as the Python side describes it: (pattern, name, behaviour, invert).
pub type StepSpec = (String, Option<String>, String, bool);

impl PretokChain {
    pub fn single(pattern: Pretokenizer) -> PretokChain {
        PretokChain {
            rewrite: None,
            steps: vec![SplitStep {
                pattern,
                behavior: Behavior::MatchesOnly,
                invert: false,
            }],
        }
    }

    /// A chain from step descriptions; a rewrite step (`Rewrite::from_step` names) may
    /// only come first, where its piece is a whole segment as in HF.
    pub fn from_specs(specs: Vec<StepSpec>) -> CoreResult<PretokChain> {
        let mut rewrite = None;
        let mut steps = Vec::with_capacity(specs.len());
        for (i, (source, name, behavior, invert)) in specs.into_iter().enumerate() {
            if let Some(r) = Rewrite::from_step(name.as_deref().unwrap_or(""), &source)? {
                if i > 0 {
                    return Err(CoreError::Config(format!(
                        "pre-tokenizer step {i}: {r:?} rewrites text and is supported only \
                         as the first step"
                    )));
                }
                rewrite = Some(r);
                continue;
            }
            steps.push(SplitStep {
                pattern: Pretokenizer::new(name.as_deref(), &source)?,
                behavior: Behavior::parse(&behavior)?,
                invert,
            });
        }
        Ok(PretokChain { rewrite, steps })
    }

    /// Byte spans of all final pieces.
    pub fn spans(&self, text: &str) -> CoreResult<Vec<(usize, usize)>> {
        let mut out = Vec::new();
        self.split(text, |s, e| out.push((s, e)))?;
        Ok(out)
    }

    /// Calls `emit(start, end)` for each final piece of `text` (byte offsets, in order).
    pub fn split(&self, text: &str, mut emit: impl FnMut(usize, usize)) -> CoreResult<()> {
        if text.is_empty() {
            return Ok(());
        }
        match self.steps.as_slice() {
            [] => {
                emit(0, text.len());
                Ok(())
            }
            [only] if only.behavior == Behavior::MatchesOnly && !only.invert => {
                only.pattern.split(text, emit)
            }
            steps => {
                let mut pieces = vec![(0usize, text.len())];
                let mut next = Vec::new();
                for step in steps {
                    next.clear();
                    for &(s, e) in &pieces {
                        step.apply(text, s, e, &mut next)?;
                    }
                    std::mem::swap(&mut pieces, &mut next);
                }
                for (s, e) in pieces {
                    emit(s, e);
                }
                Ok(())
            }
        }
    }
}

impl SplitStep {
    fn apply(
        &self,
        text: &str,
        s: usize,
        e: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> CoreResult<()> {
        let piece = &text[s..e];
        // Segments covering the piece: (start, end, is_match).
        let mut segs: Vec<(usize, usize, bool)> = Vec::new();
        let mut prev = 0usize;
        self.pattern.split(piece, |a, b| {
            if prev != a {
                segs.push((prev, a, false));
            }
            segs.push((a, b, true));
            prev = b;
        })?;
        if prev != piece.len() {
            segs.push((prev, piece.len(), false));
        }
        if self.invert {
            for seg in segs.iter_mut() {
                seg.2 = !seg.2;
            }
        }
        let kept: Vec<(usize, usize)> = match self.behavior {
            Behavior::MatchesOnly => segs.iter().filter(|g| g.2).map(|g| (g.0, g.1)).collect(),
            Behavior::Isolated => segs.iter().map(|g| (g.0, g.1)).collect(),
            Behavior::Removed => segs.iter().filter(|g| !g.2).map(|g| (g.0, g.1)).collect(),
            Behavior::MergedWithPrevious => {
                let mut acc: Vec<(usize, usize)> = Vec::new();
                let mut previous_match = false;
                for &(a, b, m) in &segs {
                    match acc.last_mut() {
                        Some(last) if m && !previous_match => last.1 = b,
                        _ => acc.push((a, b)),
                    }
                    previous_match = m;
                }
                acc
            }
            Behavior::MergedWithNext => {
                let mut acc: Vec<(usize, usize)> = Vec::new();
                let mut previous_match = false;
                for &(a, b, m) in segs.iter().rev() {
                    match acc.last_mut() {
                        Some(last) if m && !previous_match => last.0 = a,
                        _ => acc.push((a, b)),
                    }
                    previous_match = m;
                }
                acc.reverse();
                acc
            }
            Behavior::Contiguous => {
                let mut acc: Vec<(usize, usize)> = Vec::new();
                let mut previous_match = false;
                for (i, &(a, b, m)) in segs.iter().enumerate() {
                    match acc.last_mut() {
                        Some(last) if i > 0 && m == previous_match => last.1 = b,
                        _ => acc.push((a, b)),
                    }
                    previous_match = m;
                }
                acc
            }
        };
        out.extend(
            kept.into_iter()
                .filter(|(a, b)| b > a)
                .map(|(a, b)| (s + a, s + b)),
        );
        Ok(())
    }
}
