//! Core error type. Core functions return `Result<_, CoreError>`; `py.rs` maps the
//! variants onto the Python exception hierarchy in `tokenpact.errors`.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoreError {
    /// An option or argument is invalid.
    Config(String),
    /// Input data (text, files) cannot be processed.
    InvalidInput(String),
    /// Training cannot start or cannot produce the requested tokenizer.
    Training(String),
    /// A token ID is not in the vocabulary.
    UnknownToken(String),
    /// A model file or model description is inconsistent.
    Artifact(String),
    /// Reading an input file failed.
    Io(String),
}

impl fmt::Display for CoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CoreError::Config(m)
            | CoreError::InvalidInput(m)
            | CoreError::Training(m)
            | CoreError::UnknownToken(m)
            | CoreError::Artifact(m)
            | CoreError::Io(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for CoreError {}

pub type CoreResult<T> = Result<T, CoreError>;
