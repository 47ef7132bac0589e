//! Corpus preparation engines: MinHash signatures over shingles and LSH clustering.

pub mod lsh;
pub mod minhash;
