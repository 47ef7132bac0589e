//! Binding for the added-token matcher (`crate::special::SpecialMatcher`): the allowed
//! spellings of one encode call, with Hugging Face's flags.

use std::sync::Arc;

use pyo3::prelude::*;

use super::engine::PyEngine;
use super::to_py;
use crate::engine::Engine;
use crate::error::CoreError;
use crate::special::{AddedFlags, Gate, SpecialMatcher};

#[pyclass(frozen, module = "tokenpact._native", name = "SpecialMatcher")]
pub(crate) struct PySpecialMatcher {
    pub(crate) inner: Arc<SpecialMatcher>,
    /// The tokenizer whose normalizer `find_first` applies for `normalized` tokens.
    engine: Option<Engine>,
}

#[pymethods]
impl PySpecialMatcher {
    /// `flags[i]` = (single_word, lstrip, rstrip, normalized) of `specials[i]` (Hugging
    /// Face's added-token flags; all false when omitted). `gates[i]` is "ordinary" (an
    /// added token that is content: matched everywhere), "control" (an allowed control
    /// token: never matched in untrusted spans) or "blocked" (a control the call does
    /// not allow: its text stays text); all "control" when omitted. `core` supplies the
    /// normalizer that `normalized` spellings and texts go through.
    #[new]
    #[pyo3(signature = (specials, flags=None, core=None, gates=None))]
    fn new(
        py: Python<'_>,
        specials: Vec<(String, u32)>,
        flags: Option<Vec<(bool, bool, bool, bool)>>,
        core: Option<&PyEngine>,
        gates: Option<Vec<String>>,
    ) -> PyResult<Self> {
        let n = specials.len();
        let flags = flags.unwrap_or_else(|| vec![(false, false, false, false); n]);
        let gates = gates.unwrap_or_else(|| vec!["control".to_owned(); n]);
        if flags.len() != n || gates.len() != n {
            return Err(to_py(
                py,
                CoreError::Config(format!(
                    "{} flag tuples and {} gates for {n} added tokens; give one of each per \
                     token",
                    flags.len(),
                    gates.len(),
                )),
            ));
        }
        let mut tokens = Vec::with_capacity(n);
        for (((content, id), (single_word, lstrip, rstrip, normalized)), gate) in
            specials.into_iter().zip(flags).zip(gates)
        {
            let gate = match gate.as_str() {
                "ordinary" => Gate::Ordinary,
                "control" => Gate::Control,
                "blocked" => Gate::Blocked,
                other => {
                    return Err(to_py(
                        py,
                        CoreError::Config(format!(
                            "gate {other:?} of added token {content:?} is not one of \
                             \"ordinary\", \"control\", \"blocked\""
                        )),
                    ))
                }
            };
            let f = AddedFlags {
                single_word,
                lstrip,
                rstrip,
                normalized,
            };
            tokens.push((content, id, f, gate));
        }
        let engine = core.map(|c| c.engine.clone());
        let normalizer = engine.as_ref().and_then(Engine::added_token_normalizer);
        let inner = SpecialMatcher::with_flags(tokens, normalizer).map_err(|e| to_py(py, e))?;
        Ok(PySpecialMatcher {
            inner: inner.into(),
            engine,
        })
    }

    /// (byte start, spelling) of the first special spelling in `text`, or None. A
    /// `normalized` token is also looked for in the normalized text (start 0 then).
    fn find_first(&self, py: Python<'_>, text: &str) -> PyResult<Option<(usize, String)>> {
        self.first_spelling(py, text)
    }

    /// Whether any token can match (False for a matcher of blocked controls only).
    fn admits_any(&self) -> bool {
        self.inner.admits_any()
    }
}

impl PySpecialMatcher {
    /// `find_first` for Rust callers (the native message wrapping).
    pub(crate) fn first_spelling(
        &self,
        py: Python<'_>,
        text: &str,
    ) -> PyResult<Option<(usize, String)>> {
        if let Some((s, _, i)) = self.inner.find_first(text) {
            return Ok(Some((s, self.inner.contents[i].clone())));
        }
        if !self.inner.has_normalized() {
            return Ok(None);
        }
        let mut n = crate::normalize::NormalizedString::new(text);
        if let Some(normalizer) = self
            .engine
            .as_ref()
            .and_then(Engine::added_token_normalizer)
        {
            normalizer.apply(&mut n).map_err(|e| to_py(py, e))?;
        }
        Ok(self
            .inner
            .find_first_normalized(&n.text)
            .map(|c| (0, c.to_owned())))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySpecialMatcher>()
}
