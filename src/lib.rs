//! tokenpact core: pre-tokenization, byte-level BPE training and encoding.
//!
//! Core functions return `Result<_, CoreError>`; the PyO3 bindings live in `py.rs`
//! behind the `python` feature and only convert types, release the GIL and map errors.

pub mod bpe;
pub mod corpus;
pub mod error;
pub mod pretok;
pub mod sentencepiece;
pub mod special;
pub mod tokenizer;

#[cfg(feature = "python")]
mod py;
