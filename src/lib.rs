//! tokenpact's Rust core: the tokenizer engines (normalizers, pre-tokenizers, BPE,
//! WordPiece, WordLevel, Unigram and SentencePiece models, decoders, added-token
//! matching) behind one `engine::Engine`; the trainers (BPE, Unigram, WordPiece,
//! character BPE); the serving runtime (incremental decode, stops, streaming encode,
//! prefix-cache keys); the chat-template engine; and the data engines (MinHash, LSH,
//! Parquet shards). docs/ARCHITECTURE.md maps every module.
//!
//! Core functions return `Result<_, CoreError>`; the PyO3 bindings live in `py/` behind
//! the `python` feature and only convert types, release the GIL and map errors.

pub mod bpe;
pub mod char_bpe;
pub mod chat_encode;
pub mod chat_template;
pub mod corpus;
pub mod data;
pub mod decoder;
pub mod engine;
pub mod error;
pub mod fork_guard;
pub mod hf_unigram;
pub mod id_space;
pub mod model;
pub mod normalize;
pub mod offsets;
pub mod pair_merge;
pub mod pipeline;
pub mod pretok;
pub mod rng;
pub mod runtime;
pub mod sentencepiece;
pub mod special;
pub mod thread_cache;
pub mod thread_regex;
pub mod tokenizer;
pub mod unigram;
pub mod wordpiece;
pub mod wordpiece_train;
pub mod words;

#[cfg(feature = "python")]
mod py;

#[cfg(feature = "python")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
