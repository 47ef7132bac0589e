//! Bindings for the BPE trainer: streaming input (Python batches counted in the
//! background, or files read in Rust), then merges in GIL-free steps.

use std::sync::Arc;

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyBytes, PyDict};

use super::{in_pool, to_py};
use crate::bpe::count::PretokenCounts;
use crate::bpe::train::{TieBreak, TrainConfig, Trainer};
use crate::corpus::{read_file, FileFormat};
use crate::error::CoreError;
use crate::pretok::Pretokenizer;

type CountJob = std::thread::JoinHandle<(PretokenCounts, Result<(), CoreError>)>;

#[pyclass(module = "tokenpact._native")]
struct BpeTrainer {
    pretok: Arc<Pretokenizer>,
    counts: Option<PretokenCounts>,
    /// Counting of the previous batch, running while Python prepares the next one.
    pending: Option<CountJob>,
    trainer: Option<Trainer>,
    max_merges: usize,
    min_frequency: u64,
    max_token_length: Option<usize>,
    tie_break: TieBreak,
    threads: Option<usize>,
}

#[pymethods]
impl BpeTrainer {
    #[new]
    #[pyo3(signature = (pattern, name, max_merges, min_frequency, max_token_length, tie_break, threads))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        pattern: &str,
        name: Option<&str>,
        max_merges: usize,
        min_frequency: u64,
        max_token_length: Option<usize>,
        tie_break: &str,
        threads: Option<usize>,
    ) -> PyResult<Self> {
        Ok(BpeTrainer {
            pretok: Arc::new(Pretokenizer::new(name, pattern).map_err(|e| to_py(py, e))?),
            counts: Some(PretokenCounts::default()),
            pending: None,
            trainer: None,
            max_merges,
            min_frequency,
            max_token_length,
            tie_break: TieBreak::parse(tie_break).map_err(|e| to_py(py, e))?,
            threads,
        })
    }

    /// Counts a batch in the background; returns as soon as the batch is handed over.
    fn add_texts(&mut self, py: Python<'_>, texts: Vec<PyBackedStr>) -> PyResult<()> {
        self.finish_pending(py)?;
        let mut counts = self
            .counts
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("training already started; add input before"))?;
        let owned: Vec<String> = py.detach(|| texts.iter().map(|t| t.to_string()).collect());
        let (threads, pretok) = (self.threads, self.pretok.clone());
        self.pending = Some(std::thread::spawn(move || {
            let result = match in_pool(threads, || counts.add_texts(&pretok, &owned)) {
                Ok(r) => r,
                Err(e) => Err(CoreError::InvalidInput(e.to_string())),
            };
            (counts, result)
        }));
        Ok(())
    }

    fn finish_pending(&mut self, py: Python<'_>) -> PyResult<()> {
        if let Some(job) = self.pending.take() {
            let joined = py.detach(|| job.join());
            let (counts, result) = joined
                .map_err(|_| PyRuntimeError::new_err("pre-token counting thread panicked"))?;
            self.counts = Some(counts);
            result.map_err(|e| to_py(py, e))?;
        }
        Ok(())
    }

    /// Adds pre-token counts made elsewhere (`count_pretokens` on another worker).
    fn add_counts(
        &mut self,
        py: Python<'_>,
        pieces: Vec<Vec<u8>>,
        counts: PyReadonlyArray1<'_, u64>,
        documents: u64,
        bytes: u64,
        digest_hex: &str,
    ) -> PyResult<()> {
        self.finish_pending(py)?;
        let counts = counts.as_slice()?;
        let mine = self
            .counts
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("training already started; add input before"))?;
        let parts =
            py.detach(|| PretokenCounts::from_parts(pieces, counts, documents, bytes, digest_hex));
        match parts {
            Ok(other) => {
                self.counts = Some(py.detach(|| mine.merge(other)));
                Ok(())
            }
            Err(e) => {
                self.counts = Some(mine);
                Err(to_py(py, e))
            }
        }
    }

    /// Reads files in Rust; `formats[i]` is "text" or "jsonl".
    fn add_files(
        &mut self,
        py: Python<'_>,
        paths: Vec<String>,
        formats: Vec<String>,
        text_field: &str,
    ) -> PyResult<()> {
        let threads = self.threads;
        let pretok = &self.pretok;
        let counts = self
            .counts
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("training already started; add input before"))?;
        py.detach(|| {
            for (path, fmt) in paths.iter().zip(formats.iter()) {
                let format = if fmt == "jsonl" {
                    FileFormat::Jsonl
                } else {
                    FileFormat::Text
                };
                read_file(path, format, text_field, 4 << 20, |batch| {
                    in_pool(threads, || counts.add_texts(pretok, &batch))
                        .map_err(|e| CoreError::Io(e.to_string()))?
                })?;
            }
            Ok(())
        })
        .map_err(|e| to_py(py, e))
    }

    /// (documents, bytes, multiset digest hex, distinct pre-tokens).
    fn corpus_stats(&mut self, py: Python<'_>) -> PyResult<(u64, u64, String, usize)> {
        self.finish_pending(py)?;
        let c = self
            .counts
            .as_ref()
            .ok_or_else(|| PyRuntimeError::new_err("corpus statistics are gone after start()"))?;
        Ok((c.documents, c.bytes, c.digest_hex(), c.counts.len()))
    }

    fn start(&mut self, py: Python<'_>) -> PyResult<()> {
        self.finish_pending(py)?;
        let counts = self
            .counts
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("start() was already called"))?;
        let cfg = TrainConfig {
            max_merges: self.max_merges,
            min_frequency: self.min_frequency,
            max_token_length: self.max_token_length,
            tie_break: self.tie_break,
        };
        self.trainer = Some(py.detach(|| Trainer::new(counts, cfg)));
        Ok(())
    }

    /// Applies an existing tokenizer's merges (rank order) before new ones are learned.
    fn seed_merges(&mut self, py: Python<'_>, merges: Vec<(u32, u32)>) -> PyResult<()> {
        let t = self
            .trainer
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("call start() before seed_merges()"))?;
        py.detach(|| t.replay(&merges)).map_err(|e| to_py(py, e))
    }

    /// Runs up to `steps` merges; returns the stop reason once finished.
    fn step(&mut self, py: Python<'_>, steps: usize) -> PyResult<Option<&'static str>> {
        let t = self
            .trainer
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("call start() before step()"))?;
        Ok(py.detach(|| t.step(steps)).map(|s| s.as_str()))
    }

    fn merges_done(&self) -> usize {
        self.trainer.as_ref().map_or(0, |t| t.merges.len())
    }

    fn result<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let t = self
            .trainer
            .as_ref()
            .ok_or_else(|| PyRuntimeError::new_err("call start() and step() first"))?;
        let d = PyDict::new(py);
        d.set_item("merges", t.merges.clone())?;
        d.set_item("merge_scores", t.merge_scores.clone())?;
        d.set_item("merge_replacements", t.merge_replacements.clone())?;
        d.set_item("initial_length", t.initial_length)?;
        d.set_item("distinct_pretokens", t.units)?;
        d.set_item("stop_reason", t.stop.map(|s| s.as_str()))?;
        Ok(d)
    }
}

/// Pre-token counts of `texts`, sorted by piece: (pieces, counts, documents, bytes,
/// multiset digest hex). Counts from several workers add up to the counts of the union.
#[pyfunction]
#[pyo3(signature = (texts, pattern, name, threads=None))]
#[allow(clippy::type_complexity)]
fn count_pretokens<'py>(
    py: Python<'py>,
    texts: Vec<PyBackedStr>,
    pattern: &str,
    name: Option<&str>,
    threads: Option<usize>,
) -> PyResult<(
    Vec<Bound<'py, PyBytes>>,
    Bound<'py, PyArray1<u64>>,
    u64,
    u64,
    String,
)> {
    let pretok = Pretokenizer::new(name, pattern).map_err(|e| to_py(py, e))?;
    let counted = py.detach(|| {
        in_pool(threads, || {
            let mut c = PretokenCounts::default();
            c.add_texts(&pretok, &texts).map(|_| c)
        })
    })?;
    let c = counted.map_err(|e| to_py(py, e))?;
    let digest = c.digest_hex();
    let mut entries: Vec<(Vec<u8>, u64)> = py.detach(|| {
        let mut e: Vec<(Vec<u8>, u64)> = c.counts.into_iter().collect();
        e.sort_unstable();
        e
    });
    let values: Vec<u64> = entries.iter().map(|e| e.1).collect();
    let pieces = entries
        .drain(..)
        .map(|(p, _)| PyBytes::new(py, &p))
        .collect();
    Ok((
        pieces,
        values.into_pyarray(py),
        c.documents,
        c.bytes,
        digest,
    ))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<BpeTrainer>()?;
    m.add_function(wrap_pyfunction!(count_pretokens, m)?)?;
    Ok(())
}
