//! Output transport engine: generated IDs -> exact text -> stop-safe visible text.
//!
//! The same rules as `tokenpact/runtime/output.py` (its docstrings are the spec), run
//! per ID in Rust: stop IDs, exact ID sequences (Aho-Corasick over IDs), stop strings
//! (`StopScanner` over the decoded text), a budget, and hold-back of only the live
//! prefixes. IDs are processed one at a time, so results do not depend on grouping.

use std::collections::VecDeque;

use rustc_hash::{FxHashMap, FxHashSet};

use super::decode::{DecodeFailure, IncrementalDecoder};
use super::stops::StopScanner;
use crate::engine::Engine;

/// Aho-Corasick over ID sequences: after each ID, the longest sequence ending here and
/// the depth of the longest live prefix.
struct IdMatcher {
    goto: FxHashMap<(u32, u32), u32>,
    fail: Vec<u32>,
    depth: Vec<u32>,
    out: Vec<u32>,
    state: u32,
    longest: usize,
}

const NONE: u32 = u32::MAX;

impl IdMatcher {
    fn new(patterns: &[Vec<u32>]) -> IdMatcher {
        let mut goto = FxHashMap::default();
        let (mut depth, mut out) = (vec![0u32], vec![NONE]);
        let mut children: Vec<Vec<(u32, u32)>> = vec![Vec::new()];
        for (index, p) in patterns.iter().enumerate() {
            let mut s = 0u32;
            for &id in p {
                s = match goto.get(&(s, id)) {
                    Some(&n) => n,
                    None => {
                        let n = depth.len() as u32;
                        goto.insert((s, id), n);
                        children[s as usize].push((id, n));
                        children.push(Vec::new());
                        depth.push(depth[s as usize] + 1);
                        out.push(NONE);
                        n
                    }
                };
            }
            if s != 0 && out[s as usize] == NONE {
                out[s as usize] = index as u32;
            }
        }
        let mut fail = vec![0u32; depth.len()];
        let mut queue: VecDeque<u32> = children[0].iter().map(|&(_, s)| s).collect();
        while let Some(s) = queue.pop_front() {
            if out[s as usize] == NONE {
                out[s as usize] = out[fail[s as usize] as usize];
            }
            for &(id, n) in &children[s as usize] {
                queue.push_back(n);
                let mut f = fail[s as usize];
                fail[n as usize] = loop {
                    if let Some(&t) = goto.get(&(f, id)) {
                        if t != n {
                            break t;
                        }
                    }
                    if f == 0 {
                        break 0;
                    }
                    f = fail[f as usize];
                };
            }
        }
        IdMatcher {
            goto,
            fail,
            depth,
            out,
            state: 0,
            longest: patterns.iter().map(Vec::len).max().unwrap_or(0),
        }
    }

    fn step(&mut self, id: u32) -> Option<usize> {
        let mut s = self.state;
        self.state = loop {
            if let Some(&n) = self.goto.get(&(s, id)) {
                break n;
            }
            if s == 0 {
                break 0;
            }
            s = self.fail[s as usize];
        };
        let hit = self.out[self.state as usize];
        (hit != NONE).then_some(hit as usize)
    }
}

/// How generation ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finish {
    StopId(u32),
    StopSequence(usize),
    StopString(usize),
    Length,
    End,
}

pub struct OutputEngine {
    decoder: IncrementalDecoder,
    stop_ids: FxHashSet<u32>,
    sequences: Option<IdMatcher>,
    strings: Option<StopScanner>,
    string_lens: Vec<usize>,
    sequence_lens: Vec<usize>,
    budget: Option<usize>,
    include: bool,
    window: Option<usize>,
    /// Window mode: text length after the last ID that left the decoder holding
    /// nothing. vLLM's `DecodeStream` adds a token's text only once it no longer ends in
    /// an incomplete character, so its window counts back from there.
    settled: usize,
    prompt_left: usize,
    /// Prompt IDs pushed so far (they prime the decoder once the boundary is reached).
    prompt: Vec<u32>,
    /// Decoded, not yet visible.
    pending: String,
    /// Byte length of all text decoded so far, and of the visible part.
    text_len: usize,
    visible_len: usize,
    /// Text length before each of the last IDs (where a sequence match starts).
    offsets: VecDeque<usize>,
    pub processed: Vec<u32>,
    pub finish: Option<Finish>,
}

pub struct EngineSpec {
    pub stop_ids: Vec<u32>,
    pub sequences: Vec<Vec<u32>>,
    pub strings: Vec<String>,
    pub budget: Option<usize>,
    pub include: bool,
    pub prompt_boundary: usize,
    /// Prompt IDs known up front (primes the decoder before any push).
    pub prompt: Vec<u32>,
    /// IDs the decoder drops (skip_special_tokens).
    pub skip: Vec<u32>,
    /// Stop-string ties (several end on the same character): the first listed wins
    /// (vLLM's rule) instead of the longest.
    pub first_listed: bool,
    /// Hold back the last this many characters whatever they are (vLLM's
    /// `max(len(stop)) - 1` window) instead of only the live stop prefix.
    pub window: Option<usize>,
}

impl OutputEngine {
    pub fn new(source: Engine, spec: EngineSpec) -> Result<OutputEngine, DecodeFailure> {
        let mut decoder = IncrementalDecoder::new(source, false, spec.skip.into_iter().collect());
        if !spec.prompt.is_empty() {
            decoder.prime(&spec.prompt)?;
        }
        Ok(OutputEngine {
            decoder,
            stop_ids: spec.stop_ids.into_iter().collect(),
            sequence_lens: spec.sequences.iter().map(Vec::len).collect(),
            sequences: (!spec.sequences.is_empty()).then(|| IdMatcher::new(&spec.sequences)),
            string_lens: spec.strings.iter().map(|s| s.len()).collect(),
            strings: (!spec.strings.is_empty())
                .then(|| StopScanner::new(&spec.strings, spec.first_listed)),
            budget: spec.budget,
            include: spec.include,
            window: spec.window,
            settled: 0,
            prompt_left: spec.prompt_boundary,
            prompt: Vec::new(),
            pending: String::new(),
            text_len: 0,
            visible_len: 0,
            offsets: VecDeque::new(),
            processed: Vec::new(),
            finish: None,
        })
    }

    /// Processes IDs until a stop; appends newly visible text to `out`; returns how many
    /// IDs were consumed.
    pub fn push(&mut self, ids: &[u32], out: &mut String) -> Result<usize, DecodeFailure> {
        let mut consumed = 0;
        for &id in ids {
            if self.finish.is_some() {
                break;
            }
            consumed += 1;
            if self.prompt_left > 0 {
                self.prompt_left -= 1;
                self.prompt.push(id);
                if self.prompt_left == 0 {
                    let prompt = std::mem::take(&mut self.prompt);
                    self.decoder.prime(&prompt)?;
                }
                continue;
            }
            self.step(id, out)?;
        }
        if self.finish.is_none() {
            self.release_safe(out);
        }
        Ok(consumed)
    }

    /// The source ran out: flush everything held.
    pub fn end(&mut self, out: &mut String) -> Result<(), DecodeFailure> {
        if self.finish.is_none() {
            let mut tail = String::new();
            self.decoder.finish(&mut tail)?;
            if !self.scan(&tail, out) {
                let cut = self.pending.len();
                self.stop(Finish::End, cut, out);
            }
        }
        Ok(())
    }

    fn step(&mut self, id: u32, out: &mut String) -> Result<(), DecodeFailure> {
        self.processed.push(id);
        if self.stop_ids.contains(&id) {
            // With include_stop_in_output the stop ID is decoded like any other ID (as
            // vLLM does): a special ID under skip_special_tokens adds no text. Its text is
            // scanned too, so a stop string completing in it names the stop (vLLM's
            // stop_reason). Without it, the text of the IDs before it is final.
            let mut tail = String::new();
            if self.include {
                self.decoder.push(&[id], &mut tail)?;
            }
            self.decoder.finish(&mut tail)?;
            if self.scan(&tail, out) {
                return Ok(());
            }
            let cut = self.pending.len();
            self.stop(Finish::StopId(id), cut, out);
            return Ok(());
        }
        let mut text = String::new();
        self.decoder.push(&[id], &mut text)?;
        if let Some(matcher) = self.sequences.as_mut() {
            if self.offsets.len() == matcher.longest.max(1) {
                self.offsets.pop_front();
            }
            self.offsets.push_back(self.text_len);
            if let Some(index) = matcher.step(id) {
                self.pending.push_str(&text);
                let cut = if self.include {
                    let mut tail = String::new();
                    self.decoder.finish(&mut tail)?;
                    self.pending.push_str(&tail);
                    self.pending.len()
                } else {
                    let start = self.offsets[self.offsets.len() - self.sequence_lens[index]];
                    start - self.visible_len
                };
                self.stop(Finish::StopSequence(index), cut, out);
                return Ok(());
            }
        }
        if self.scan(&text, out) {
            return Ok(());
        }
        if self.window.is_some() && self.decoder.held() == 0 {
            self.settled = self.text_len;
        }
        if self.budget.is_some_and(|b| self.processed.len() >= b) {
            let mut tail = String::new();
            self.decoder.finish(&mut tail)?;
            if !self.scan(&tail, out) {
                let cut = self.pending.len();
                self.stop(Finish::Length, cut, out);
            }
        }
        Ok(())
    }

    /// Feeds decoded text to the stop strings; true when one completed (and stopped).
    fn scan(&mut self, text: &str, out: &mut String) -> bool {
        if text.is_empty() {
            return false;
        }
        let found = self.strings.as_mut().and_then(|s| s.feed(text));
        let Some((chars, index)) = found else {
            self.pending.push_str(text);
            self.text_len += text.len();
            return false;
        };
        let used = text
            .char_indices()
            .nth(chars)
            .map_or(text.len(), |(i, _)| i);
        self.pending.push_str(&text[..used]);
        self.text_len += used;
        let mut cut = self.pending.len();
        if !self.include {
            cut -= self.string_lens[index];
        }
        self.stop(Finish::StopString(index), cut, out);
        true
    }

    fn release_safe(&mut self, out: &mut String) {
        let mut boundary = self.text_len;
        if let Some(n) = self.window {
            // The last `n` characters of the settled text, whatever they are. Everything
            // before them is already visible or pending, so they lie in `pending` unless
            // it is shorter (then nothing more is released).
            let settled = &self.pending[..self.settled.saturating_sub(self.visible_len)];
            let kept = if n == 0 {
                settled.len()
            } else {
                settled
                    .char_indices()
                    .rev()
                    .nth(n - 1)
                    .map_or(0, |(i, _)| i)
            };
            boundary = self.visible_len + kept;
        } else if let Some(s) = &self.strings {
            // The live prefix is `depth` characters: walk back over them.
            let depth = s.depth();
            if depth > 0 {
                let held = self
                    .pending
                    .char_indices()
                    .rev()
                    .nth(depth - 1)
                    .map_or(0, |(i, _)| i);
                boundary = self.text_len - (self.pending.len() - held);
            }
        }
        if let Some(m) = &self.sequences {
            let live = m.depth[m.state as usize] as usize;
            if live > 0 {
                boundary = boundary.min(self.offsets[self.offsets.len() - live]);
            }
        }
        let n = boundary.saturating_sub(self.visible_len);
        if n > 0 {
            out.push_str(&self.pending[..n]);
            self.pending.drain(..n);
            self.visible_len += n;
        }
    }

    fn stop(&mut self, finish: Finish, cut: usize, out: &mut String) {
        let cut = cut.min(self.pending.len());
        out.push_str(&self.pending[..cut]);
        self.visible_len += cut;
        self.pending.clear();
        self.finish = Some(finish);
    }

    /// Text held back right now (a possible stop).
    pub fn held(&self) -> &str {
        &self.pending
    }
}
