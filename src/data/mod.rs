//! Corpus preparation engines: MinHash signatures over shingles and LSH clustering.

pub mod lsh;
pub mod minhash;
pub mod permute;
pub mod shingle_hash;
pub mod shingles;
