//! Bindings for BPE-dropout (`tokenpact.bpe_dropout`): the Rust engine of the replay
//! contract whose reference is `tokenpact.stochastic.bpe_dropout_reference`.

use std::cell::RefCell;

use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use rayon::prelude::*;

use super::{in_pool, to_py};
use crate::bpe::dropout::{DropoutBpe, DropoutScratch};
use crate::error::{CoreError, CoreResult};
use crate::pretok::Pretokenizer;

thread_local! {
    static SCRATCH: RefCell<DropoutScratch> = RefCell::new(DropoutScratch::default());
}

#[pyclass(frozen, module = "tokenpact._native")]
struct BpeDropoutCore {
    inner: DropoutBpe,
    pretok: Pretokenizer,
}

impl BpeDropoutCore {
    fn run(&self, text: &str, p: f64, stream: u64) -> CoreResult<Vec<u32>> {
        SCRATCH.with(|cell| {
            let mut scratch = cell.borrow_mut();
            self.inner
                .encode(&self.pretok, text, p, stream, &mut scratch)
        })
    }
}

fn check_p(p: f64) -> CoreResult<()> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(CoreError::Config(format!(
            "dropout probability p must be in [0, 1], got {p}"
        )))
    }
}

#[pymethods]
impl BpeDropoutCore {
    /// `merges[r]` is the pair that merge `r` joins into token `256 + r`; pre-tokens come
    /// from the regex `pattern` (or the built-in scanner `name`).
    #[new]
    #[pyo3(signature = (merges, pattern, name=None))]
    fn new(
        py: Python<'_>,
        merges: Vec<(u32, u32)>,
        pattern: &str,
        name: Option<&str>,
    ) -> PyResult<Self> {
        let inner = DropoutBpe::new(&merges).map_err(|e| to_py(py, e))?;
        let pretok = Pretokenizer::new(name, pattern).map_err(|e| to_py(py, e))?;
        Ok(BpeDropoutCore { inner, pretok })
    }

    /// IDs of `text` under dropout probability `p`, draws from stream key `stream`.
    fn encode(&self, py: Python<'_>, text: &str, p: f64, stream: u64) -> PyResult<Vec<u32>> {
        check_p(p).map_err(|e| to_py(py, e))?;
        py.detach(|| self.run(text, p, stream))
            .map_err(|e| to_py(py, e))
    }

    /// `encode` of each text with its own stream key, in parallel (GIL released); the
    /// result does not depend on `threads`.
    #[pyo3(signature = (texts, p, streams, threads=None))]
    fn encode_batch(
        &self,
        py: Python<'_>,
        texts: Vec<PyBackedStr>,
        p: f64,
        streams: Vec<u64>,
        threads: Option<usize>,
    ) -> PyResult<Vec<Vec<u32>>> {
        check_p(p).map_err(|e| to_py(py, e))?;
        if texts.len() != streams.len() {
            let msg = format!(
                "BPE-dropout batch: {} texts but {} stream keys; pass one key per text",
                texts.len(),
                streams.len()
            );
            return Err(to_py(py, CoreError::Config(msg)));
        }
        let out: CoreResult<Vec<Vec<u32>>> = py.detach(|| {
            in_pool(threads, || {
                texts
                    .par_iter()
                    .zip(streams.par_iter())
                    .map(|(t, &s)| self.run(t, p, s))
                    .collect()
            })
        })?;
        out.map_err(|e| to_py(py, e))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<BpeDropoutCore>()
}
