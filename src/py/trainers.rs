//! Bindings for the character-based trainers (Unigram, WordPiece, character BPE). Their
//! results run on the pipeline's models (WordPiece, BPE over characters) and the
//! SentencePiece engine; the Unigram lattice (n-best, sampling, lattice statistics) is
//! the one trainer-side structure left, for what the engines lack.

use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::PyDict;

use super::{in_pool, to_py};
use crate::char_bpe;
use crate::corpus::{read_file, FileFormat};
use crate::error::CoreError;
use crate::pair_merge::{Scoring, Ties};
use crate::rng;
use crate::sentencepiece::normalizer::Normalizer;
use crate::unigram::train::{train, MStep, UnigramConfig};
use crate::unigram::UnigramLattice;
use crate::wordpiece::WordPiece;
use crate::wordpiece_train::{self as wordpiece, WordPieceConfig};
use crate::words::{Split, WordCounts};

use super::sentencepiece::{norm, NormSpec};

fn config_err(msg: String) -> CoreError {
    CoreError::Config(msg)
}

/// Word counts for one trainer: fed in batches (texts or files), then consumed.
#[pyclass(module = "tokenpact._native")]
struct WordCounter {
    counts: Option<WordCounts>,
    split: Split,
    lowercase: bool,
    threads: Option<usize>,
    /// SentencePiece normalizer applied to every text first (Unigram training).
    normalizer: Option<Normalizer>,
}

#[pymethods]
impl WordCounter {
    #[new]
    #[pyo3(signature = (split, lowercase=false, threads=None, normalizer=None))]
    fn new(
        py: Python<'_>,
        split: &str,
        lowercase: bool,
        threads: Option<usize>,
        normalizer: Option<NormSpec>,
    ) -> PyResult<Self> {
        let split = Split::parse(split)
            .ok_or_else(|| to_py(py, config_err(format!("unknown word split {split:?}"))))?;
        let normalizer = match normalizer {
            Some(spec) => {
                let (cfg, map) = norm(spec);
                Some(Normalizer::new(Some(&map), cfg, &[]).map_err(|e| to_py(py, e))?)
            }
            None => None,
        };
        Ok(WordCounter {
            counts: Some(WordCounts::default()),
            split,
            lowercase,
            threads,
            normalizer,
        })
    }

    fn add_texts(&mut self, py: Python<'_>, texts: Vec<PyBackedStr>) -> PyResult<()> {
        let (split, lowercase, threads) = (self.split, self.lowercase, self.threads);
        let counts = self.counts.as_mut().ok_or_else(|| used(py))?;
        let normalizer = self.normalizer.as_ref();
        py.detach(|| {
            in_pool(threads, || {
                counts.add_texts(&texts, split, lowercase, normalizer)
            })
        })
    }

    fn add_files(
        &mut self,
        py: Python<'_>,
        paths: Vec<String>,
        formats: Vec<String>,
        text_field: &str,
    ) -> PyResult<()> {
        let (split, lowercase, threads) = (self.split, self.lowercase, self.threads);
        let counts = self.counts.as_mut().ok_or_else(|| used(py))?;
        let normalizer = self.normalizer.as_ref();
        let result = py.detach(|| {
            for (path, format) in paths.iter().zip(&formats) {
                let format = if format == "jsonl" {
                    FileFormat::Jsonl
                } else {
                    FileFormat::Text
                };
                read_file(path, format, text_field, 4 << 20, |batch| {
                    in_pool(threads, || {
                        counts.add_texts(&batch, split, lowercase, normalizer)
                    })
                    .map_err(|e| CoreError::Io(e.to_string()))
                })?;
            }
            Ok(())
        });
        result.map_err(|e| to_py(py, e))
    }

    /// (documents, UTF-8 bytes, distinct words)
    fn stats(&self) -> (u64, u64, usize) {
        self.counts
            .as_ref()
            .map_or((0, 0, 0), |c| (c.documents, c.bytes, c.counts.len()))
    }
}

fn used(py: Python<'_>) -> PyErr {
    to_py(
        py,
        CoreError::Training("this word counter was already used for training".into()),
    )
}

impl WordCounter {
    fn take_words(&mut self, py: Python<'_>) -> PyResult<Vec<(String, u64)>> {
        let counts = self.counts.take().ok_or_else(|| {
            to_py(
                py,
                CoreError::Training("this word counter was already used".into()),
            )
        })?;
        Ok(py.detach(|| counts.into_sorted()))
    }
}

/// Returns (pieces with log probabilities, info dict).
#[pyfunction]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
#[pyo3(signature = (counter, vocab_size, max_piece_length, seed_size, character_coverage,
                    shrinking_factor, em_sub_iterations, m_step, threads=None,
                    split_by_unicode_script=true))]
fn train_unigram<'py>(
    py: Python<'py>,
    counter: &mut WordCounter,
    vocab_size: usize,
    max_piece_length: usize,
    seed_size: usize,
    character_coverage: f64,
    shrinking_factor: f64,
    em_sub_iterations: usize,
    m_step: &str,
    threads: Option<usize>,
    split_by_unicode_script: bool,
) -> PyResult<(Vec<(String, f64)>, Bound<'py, PyDict>)> {
    let m_step = match m_step {
        "simple" => MStep::Simple,
        "digamma" => MStep::Digamma,
        other => {
            return Err(to_py(
                py,
                config_err(format!(
                    "unknown m_step {other:?}; use \"digamma\" or \"simple\""
                )),
            ))
        }
    };
    let cfg = UnigramConfig {
        vocab_size,
        max_piece_length,
        seed_size,
        character_coverage,
        shrinking_factor,
        em_sub_iterations,
        m_step,
        split_by_script: split_by_unicode_script,
    };
    let words = counter.take_words(py)?;
    let result = py
        .detach(|| in_pool(threads, || train(words, &cfg)))?
        .map_err(|e| to_py(py, e))?;
    let info = PyDict::new(py);
    info.set_item("required_chars", result.required_chars)?;
    info.set_item("dropped_chars", result.dropped_chars)?;
    info.set_item("seed_pieces", result.seed_pieces)?;
    info.set_item("rounds", result.rounds)?;
    info.set_item("em_trace", result.em_trace)?;
    info.set_item("stop_reason", result.stop_reason)?;
    Ok((result.pieces, info))
}

/// Returns (vocab, info dict).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (counter, vocab_size, specials, prefix, min_frequency, limit_alphabet=None,
                    scoring="count", threads=None))]
fn train_wordpiece<'py>(
    py: Python<'py>,
    counter: &mut WordCounter,
    vocab_size: usize,
    specials: Vec<String>,
    prefix: String,
    min_frequency: u64,
    limit_alphabet: Option<usize>,
    scoring: &str,
    threads: Option<usize>,
) -> PyResult<(Vec<String>, Bound<'py, PyDict>)> {
    let scoring = match scoring {
        "likelihood_ratio" => Scoring::LikelihoodRatio,
        "likelihood_gain" => Scoring::LikelihoodGain,
        "count" => Scoring::Count,
        other => {
            return Err(to_py(
                py,
                config_err(format!(
                    "unknown scoring {other:?}; use \"likelihood_gain\", \"likelihood_ratio\" \
                     or \"count\""
                )),
            ))
        }
    };
    let cfg = WordPieceConfig {
        scoring,
        vocab_size,
        specials,
        prefix,
        min_frequency,
        limit_alphabet,
    };
    let words = counter.take_words(py)?;
    let result = py.detach(|| {
        in_pool(threads, || {
            let (mut engine, unknown_char_words) = wordpiece::engine(&words, &cfg)?;
            drop(words);
            engine.step(usize::MAX);
            Ok::<_, CoreError>(wordpiece::finish(engine, &cfg, unknown_char_words))
        })
    })?;
    let result = result.map_err(|e| to_py(py, e))?;
    let info = PyDict::new(py);
    info.set_item("alphabet", result.alphabet)?;
    info.set_item("merges", result.merges)?;
    info.set_item("unknown_char_word_occurrences", result.unknown_char_words)?;
    info.set_item("stop_reason", result.stop_reason)?;
    Ok((result.vocab, info))
}

/// Returns (alphabet pieces, merges as (left, right) strings, merge counts, stop reason).
/// Exactly one of `max_merges` and `piece_room` (vocab_size minus specials) is given.
#[pyfunction]
#[pyo3(signature = (counter, eow, max_merges, piece_room, min_frequency, tie_break, threads=None,
                    initial_alphabet=Vec::new(), limit_alphabet=None))]
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
fn train_char_bpe(
    py: Python<'_>,
    counter: &mut WordCounter,
    eow: String,
    max_merges: Option<usize>,
    piece_room: Option<usize>,
    min_frequency: u64,
    tie_break: &str,
    threads: Option<usize>,
    initial_alphabet: Vec<char>,
    limit_alphabet: Option<usize>,
) -> PyResult<(Vec<String>, Vec<(String, String)>, Vec<u64>, String)> {
    let ties = match tie_break {
        "smallest" => Ties::Smallest,
        "largest" => Ties::Largest,
        other => {
            return Err(to_py(
                py,
                config_err(format!(
                    "unknown tie_break {other:?}; use \"smallest\" or \"largest\""
                )),
            ))
        }
    };
    let words = counter.take_words(py)?;
    let engine = py.detach(|| {
        in_pool(threads, || {
            let rule = char_bpe::AlphabetRule {
                initial: &initial_alphabet,
                limit: limit_alphabet,
            };
            let mut e = char_bpe::engine(
                &words,
                &eow,
                max_merges.unwrap_or(0),
                min_frequency,
                ties,
                &rule,
            );
            if let Some(room) = piece_room {
                if room < e.alphabet {
                    return Err(CoreError::Training(format!(
                        "vocab_size leaves room for {room} pieces after the special tokens, \
                         but the alphabet (characters and the end-of-word marker) has {}; \
                         raise vocab_size",
                        e.alphabet
                    )));
                }
                e.set_budget(room - e.alphabet, false);
            }
            e.step(usize::MAX);
            Ok(e)
        })
    })?;
    let engine = engine.map_err(|e| to_py(py, e))?;
    let alphabet = engine.pieces[..engine.alphabet]
        .iter()
        .map(|p| p.to_string())
        .collect();
    let merges = engine
        .merges
        .iter()
        .map(|&(a, b, _)| {
            (
                engine.pieces[a as usize].to_string(),
                engine.pieces[b as usize].to_string(),
            )
        })
        .collect();
    let stop = engine.stop.unwrap_or("vocab_size_reached").to_string();
    Ok((alphabet, merges, engine.merge_counts.clone(), stop))
}

fn decode_err(py: Python<'_>, id_count: usize) -> PyErr {
    to_py(
        py,
        CoreError::UnknownToken(format!(
            "an ID is outside this vocabulary of {id_count}; pass IDs from this tokenizer"
        )),
    )
}

/// The lattice of a trained Unigram model (`crate::unigram::UnigramLattice`): exact
/// likelihoods, n-best lists and samples; `encode` is its Viterbi path.
#[pyclass(frozen, module = "tokenpact._native")]
struct UnigramCore {
    inner: UnigramLattice,
}

#[pymethods]
impl UnigramCore {
    #[new]
    #[pyo3(signature = (pieces, logp, unk_id, byte_base=None))]
    fn new(pieces: Vec<String>, logp: Vec<f64>, unk_id: u32, byte_base: Option<u32>) -> Self {
        UnigramCore {
            inner: UnigramLattice::new(pieces, logp, unk_id, byte_base),
        }
    }

    fn encode(&self, py: Python<'_>, text: &str) -> Vec<u32> {
        py.detach(|| self.inner.encode(text))
    }

    fn log_likelihood(&self, py: Python<'_>, text: &str) -> f64 {
        py.detach(|| self.inner.log_likelihood(text))
    }

    fn nbest(&self, py: Python<'_>, text: &str, n: usize) -> Vec<(Vec<u32>, f64)> {
        py.detach(|| self.inner.nbest(text, n))
    }

    fn sample(
        &self,
        py: Python<'_>,
        text: &str,
        alpha: f64,
        key: (u64, u64, u64, u64),
    ) -> Vec<u32> {
        py.detach(|| self.inner.sample(text, alpha, key))
    }

    /// (log P(x), expected count per ID, Viterbi IDs, n best (IDs, log score)) of `text`
    /// as one raw string; unknown edges appear as ID 2**32 - 1.
    #[allow(clippy::type_complexity)]
    fn lattice_stats(
        &self,
        text: &str,
        n: usize,
    ) -> (f64, Vec<f64>, Vec<u32>, Vec<(Vec<u32>, f64)>) {
        let s = self.inner.lattice_stats(text, n);
        (s.log_marginal, s.expected, s.viterbi, s.nbest)
    }

    fn sample_raw(&self, text: &str, alpha: f64, key: (u64, u64, u64, u64)) -> Vec<u32> {
        self.inner.sample_raw(text, alpha, key)
    }
}

/// A trained WordPiece vocabulary under the trainer's word split: the pipeline's
/// WordPiece model (`crate::wordpiece`), so trainer and tokenizer share one encoder.
#[pyclass(frozen, module = "tokenpact._native")]
struct WordPieceCore {
    inner: WordPiece,
    split: Split,
    lowercase: bool,
}

#[pymethods]
impl WordPieceCore {
    #[new]
    fn new(
        py: Python<'_>,
        vocab: Vec<String>,
        unk_id: u32,
        prefix: String,
        max_chars: usize,
        lowercase: bool,
    ) -> PyResult<Self> {
        let vocab = vocab.into_iter().map(String::into_bytes).collect();
        let inner =
            WordPiece::with_unk_id(vocab, unk_id, &prefix, max_chars).map_err(|e| to_py(py, e))?;
        Ok(WordPieceCore {
            inner,
            split: Split::Bert,
            lowercase,
        })
    }

    fn encode(&self, text: &str) -> Vec<u32> {
        let text = cased(text, self.lowercase);
        let (mut out, mut spans) = (Vec::new(), Vec::new());
        crate::words::split_words(&text, self.split, |w| {
            self.inner.encode_spans(w.as_bytes(), &mut out, &mut spans)
        });
        out
    }

    fn decode(&self, py: Python<'_>, ids: Vec<u32>) -> PyResult<String> {
        wordpiece::decode(&self.inner, &ids).ok_or_else(|| decode_err(py, self.inner.vocab.len()))
    }
}

/// The text the trainer saw: lowercased when it trained with `lowercase` (no copy otherwise).
fn cased(text: &str, lowercase: bool) -> std::borrow::Cow<'_, str> {
    if lowercase {
        std::borrow::Cow::Owned(text.to_lowercase())
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// Counter-based uniform draw (the Rust side of the replay contract; tests compare it
/// with the Python twin).
#[pyfunction]
fn rng_uniform(seed: u64, epoch: u64, sample: u64, view: u64, occurrence: u64) -> f64 {
    rng::uniform(rng::stream_key(seed, epoch, sample, view), occurrence)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<WordCounter>()?;
    m.add_class::<UnigramCore>()?;
    m.add_class::<WordPieceCore>()?;
    m.add_function(wrap_pyfunction!(train_unigram, m)?)?;
    m.add_function(wrap_pyfunction!(train_wordpiece, m)?)?;
    m.add_function(wrap_pyfunction!(train_char_bpe, m)?)?;
    m.add_function(wrap_pyfunction!(rng_uniform, m)?)?;
    m.add("RNG_NAME", rng::RNG_NAME)?;
    Ok(())
}
