//! Corpus preparation engines: MinHash signatures over shingles, LSH clustering, and the
//! corpus manifest's document records (a SHA-256 per text).

pub mod corpus_records;
pub mod langid_nb;
pub mod lsh;
pub mod minhash;
pub mod packed_rows;
pub mod parquet_bit_pack;
pub mod parquet_list_pages;
pub mod parquet_shard;
pub mod permute;
pub mod py_text;
pub mod quality_counts;
pub mod shingle_hash;
pub mod shingles;
pub mod text_block;
