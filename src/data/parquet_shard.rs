//! A Parquet writer for encoded dataset shards, one fixed schema:
//!
//! ```text
//! required binary doc_id (STRING);
//! required group input_ids (LIST) { repeated group list {
//!     required int32 element (INTEGER(16|32, false)); } }
//! required int32 length (INTEGER(32, false));
//! required boolean truncated;
//! ```
//!
//! the schema pyarrow writes for `doc_id: string, input_ids: list<uint16|uint32>,
//! length: uint32, truncated: bool` (all non-null), so pyarrow reads it back as the same
//! Arrow table. One row group per call of [`ParquetShardWriter::write_chunk`], no
//! compression, min/max statistics for the per-document columns only (not over every
//! token). The per-document columns are PLAIN pages written by the `parquet` crate; the
//! token column is encoded by [`super::parquet_list_pages`] (a dictionary page and
//! bit-packed dictionary indices, or PLAIN when that does not pay) and spliced into the
//! row group. The SHA-256 of the file is computed as the bytes go out, like Megatron's
//! `.bin`, so the file is never read back.
//!
//! The output depends only on the arguments: the same documents give the same bytes.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use parquet::basic::Compression;
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, Int32Type};
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::file::reader::{ChunkReader, Length};
use parquet::file::writer::{SerializedFileWriter, SerializedRowGroupWriter};
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::ColumnDescPtr;
use sha2::{Digest, Sha256};

use super::corpus_records::push_hex;
use super::parquet_list_pages::{ListPageEncoder, ValueEncoding};
use crate::error::{CoreError, CoreResult};

/// Writes shorter than this are gathered in [`HashingFile`]'s buffer (of this size):
/// the row group writer splices the token column in with `io::copy`, 8 KiB at a time.
const WRITE_BUFFER: usize = 1 << 20;

/// Token IDs of one chunk, in the dataset's dtype.
pub enum TokenIds<'a> {
    U16(&'a [u16]),
    U32(&'a [u32]),
}

impl TokenIds<'_> {
    pub(crate) fn len(&self) -> usize {
        match self {
            TokenIds::U16(ids) => ids.len(),
            TokenIds::U32(ids) => ids.len(),
        }
    }
}

/// Forwards writes to the file and into a SHA-256 of everything written; small writes
/// are gathered into [`WRITE_BUFFER`]-sized ones (large ones go straight through).
struct HashingFile {
    file: File,
    sha: Sha256,
    buffer: Vec<u8>,
}

impl HashingFile {
    fn put(&mut self, data: &[u8]) -> io::Result<()> {
        self.file.write_all(data)?;
        self.sha.update(data);
        Ok(())
    }

    fn drain(&mut self) -> io::Result<()> {
        if !self.buffer.is_empty() {
            let buffer = std::mem::take(&mut self.buffer);
            let done = self.put(&buffer);
            self.buffer = buffer;
            self.buffer.clear();
            done?;
        }
        Ok(())
    }
}

impl Write for HashingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // Whatever is gathered goes out first: the file's bytes keep the write order.
        if buf.len() >= WRITE_BUFFER / 4 || self.buffer.len() + buf.len() > WRITE_BUFFER {
            self.drain()?;
        }
        if buf.len() >= WRITE_BUFFER / 4 {
            self.put(buf)?;
        } else {
            self.buffer.extend_from_slice(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.drain()?;
        self.file.flush()
    }
}

/// The encoded token column chunk as the row group writer reads it to splice it in.
struct StagedChunk<'a>(&'a [u8]);

impl Length for StagedChunk<'_> {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
}

impl<'a> ChunkReader for StagedChunk<'a> {
    type T = &'a [u8];

    fn get_read(&self, start: u64) -> Result<&'a [u8], ParquetError> {
        self.0
            .get(start as usize..)
            .ok_or_else(|| ParquetError::EOF(format!("offset {start} past the column chunk")))
    }

    fn get_bytes(&self, start: u64, length: usize) -> Result<Bytes, ParquetError> {
        let start = start as usize;
        self.0
            .get(start..start.saturating_add(length))
            .map(Bytes::copy_from_slice)
            .ok_or_else(|| ParquetError::EOF(format!("range {start}+{length} past the chunk")))
    }
}

fn pq_err(path: &Path, err: ParquetError) -> CoreError {
    CoreError::Io(format!("writing Parquet shard {}: {err}", path.display()))
}

/// The shard's document IDs, UTF-8 end to end in one buffer with the end of each: the
/// `doc_id` column's values are zero-copy slices of it (no allocation per document,
/// as a `String` per ID and a copy of each per row group cost).
pub struct DocIds {
    bytes: Bytes,
    ends: Vec<usize>,
}

impl DocIds {
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The IDs `range` as the column writer takes them (slices of the buffer).
    fn values(&self, range: std::ops::Range<usize>) -> Vec<ByteArray> {
        let mut start = if range.start == 0 {
            0
        } else {
            self.ends[range.start - 1]
        };
        self.ends[range]
            .iter()
            .map(|&end| {
                let value = ByteArray::from(self.bytes.slice(start..end));
                start = end;
                value
            })
            .collect()
    }
}

impl<S: AsRef<str>> FromIterator<S> for DocIds {
    fn from_iter<I: IntoIterator<Item = S>>(ids: I) -> Self {
        let (mut bytes, mut ends) = (Vec::new(), Vec::new());
        for id in ids {
            bytes.extend_from_slice(id.as_ref().as_bytes());
            ends.push(bytes.len());
        }
        Self {
            bytes: Bytes::from(bytes),
            ends,
        }
    }
}

/// Writes one Parquet shard row group by row group; [`Self::finish`] writes the footer
/// and returns the file's SHA-256 (hex).
pub struct ParquetShardWriter {
    path: std::path::PathBuf,
    writer: SerializedFileWriter<HashingFile>,
    doc_ids: DocIds,
    done: usize,
    /// The token column's descriptor.
    list_column: ColumnDescPtr,
    /// The token column's encoder, its buffers kept across chunks: fresh multi-MiB
    /// buffers per chunk cost page faults (the allocator maps and unmaps them each time).
    lists: ListPageEncoder,
    /// How each row group's token values were encoded (for tests and reports).
    encodings: Vec<ValueEncoding>,
}

impl ParquetShardWriter {
    /// Creates (truncates) `path`. `id_bits` is 16 or 32 (the IDs' unsigned width);
    /// `metadata` goes into the footer's key-value metadata in the given order;
    /// `doc_ids` are the shard's documents in order, consumed by the chunks.
    pub fn create(
        path: &Path,
        id_bits: u8,
        metadata: Vec<(String, String)>,
        doc_ids: DocIds,
        created_by: &str,
    ) -> CoreResult<Self> {
        if id_bits != 16 && id_bits != 32 {
            return Err(CoreError::Config(format!(
                "Parquet shards store 16- or 32-bit token IDs, not {id_bits}-bit"
            )));
        }
        let message = format!(
            "message schema {{
                required binary doc_id (STRING);
                required group input_ids (LIST) {{
                    repeated group list {{ required int32 element (INTEGER({id_bits},false)); }}
                }}
                required int32 length (INTEGER(32,false));
                required boolean truncated;
            }}"
        );
        let schema = parse_message_type(&message).map_err(|e| pq_err(path, e))?;
        let kv = metadata
            .into_iter()
            .map(|(k, v)| KeyValue::new(k, v))
            .collect::<Vec<_>>();
        let props = WriterProperties::builder()
            .set_writer_version(WriterVersion::PARQUET_1_0)
            .set_compression(Compression::UNCOMPRESSED)
            // The per-document columns: PLAIN pages with min/max statistics. (The token
            // column is encoded by `parquet_list_pages`, without statistics.)
            .set_dictionary_enabled(false)
            .set_statistics_enabled(EnabledStatistics::Chunk)
            // Whole min/max values, as pyarrow writes them (doc IDs may be long).
            .set_statistics_truncate_length(None)
            // pyarrow writes no page index by default; neither do we.
            .set_offset_index_disabled(true)
            .set_created_by(created_by.to_string())
            .set_key_value_metadata((!kv.is_empty()).then_some(kv))
            .build();
        let file = File::create(path).map_err(|e| {
            CoreError::Io(format!(
                "cannot create Parquet shard {}: {e}",
                path.display()
            ))
        })?;
        let sink = HashingFile {
            file,
            sha: Sha256::new(),
            buffer: Vec::with_capacity(WRITE_BUFFER),
        };
        let writer = SerializedFileWriter::new(sink, Arc::new(schema), Arc::new(props))
            .map_err(|e| pq_err(path, e))?;
        let list_column = writer.schema_descr().column(1);
        Ok(Self {
            path: path.to_path_buf(),
            writer,
            doc_ids,
            done: 0,
            list_column,
            lists: ListPageEncoder::default(),
            encodings: Vec::new(),
        })
    }

    /// How each row group's token values were encoded so far.
    pub fn value_encodings(&self) -> &[ValueEncoding] {
        &self.encodings
    }

    /// Documents written so far.
    pub fn written(&self) -> usize {
        self.done
    }

    /// Writes the next documents as one row group: `offsets` `[n + 1]` from 0 into
    /// `ids`, `truncated` `[n]`; their doc IDs are the next `n` of the shard's.
    pub fn write_chunk(
        &mut self,
        ids: TokenIds<'_>,
        offsets: &[i64],
        truncated: &[bool],
    ) -> CoreResult<()> {
        let n = offsets
            .len()
            .checked_sub(1)
            .ok_or_else(|| CoreError::InvalidInput("offsets need at least one entry (0)".into()))?;
        check_chunk(offsets, ids.len(), truncated.len(), n)?;
        if n == 0 {
            return Ok(()); // no documents, no row group
        }
        if self.done + n > self.doc_ids.len() {
            return Err(CoreError::InvalidInput(format!(
                "{}: more encoded records than documents ({} > {})",
                self.path.display(),
                self.done + n,
                self.doc_ids.len()
            )));
        }
        let path = self.path.clone();
        let err = |e| pq_err(&path, e);
        let mut rg = self.writer.next_row_group().map_err(err)?;
        let names = self.doc_ids.values(self.done..self.done + n);
        write_column::<ByteArrayType>(&mut rg, &names).map_err(err)?;
        let chunk = self
            .lists
            .encode(self.list_column.clone(), &ids, offsets)
            .map_err(err)?;
        self.encodings.push(chunk.encoding);
        rg.append_column(&StagedChunk(chunk.bytes), chunk.close)
            .map_err(err)?;
        let lengths: Vec<i32> = offsets.windows(2).map(|w| (w[1] - w[0]) as i32).collect();
        write_column::<Int32Type>(&mut rg, &lengths).map_err(err)?;
        write_column::<BoolType>(&mut rg, truncated).map_err(err)?;
        rg.close().map_err(err)?;
        self.done += n;
        Ok(())
    }

    /// Writes the footer, flushes and closes the file; returns its SHA-256 (hex).
    /// Fails unless every document was written.
    pub fn finish(self) -> CoreResult<String> {
        if self.done != self.doc_ids.len() {
            return Err(CoreError::InvalidInput(format!(
                "{}: {} of {} documents encoded",
                self.path.display(),
                self.done,
                self.doc_ids.len()
            )));
        }
        let path = self.path.clone();
        // `into_inner` writes the footer (metadata) before handing the sink back.
        let mut sink = self.writer.into_inner().map_err(|e| pq_err(&path, e))?;
        sink.flush()
            .map_err(|e| CoreError::Io(format!("closing {}: {e}", path.display())))?;
        Ok(hex(&sink.sha.finalize()))
    }
}

fn check_chunk(offsets: &[i64], n_ids: usize, n_truncated: usize, n: usize) -> CoreResult<()> {
    if n_truncated != n {
        return Err(CoreError::InvalidInput(format!(
            "{n} documents but {n_truncated} truncation flags"
        )));
    }
    if offsets[0] != 0 || offsets[n] != n_ids as i64 {
        return Err(CoreError::InvalidInput(format!(
            "offsets must run from 0 to the number of IDs ({n_ids})"
        )));
    }
    if offsets
        .windows(2)
        .any(|w| w[1] < w[0] || w[1] - w[0] > i64::from(i32::MAX))
    {
        return Err(CoreError::InvalidInput(
            "offsets must not decrease (and a document holds < 2^31 IDs)".into(),
        ));
    }
    Ok(())
}

fn write_column<T: parquet::data_type::DataType>(
    rg: &mut SerializedRowGroupWriter<'_, HashingFile>,
    values: &[T::T],
) -> Result<(), ParquetError> {
    let mut col = rg
        .next_column()?
        .ok_or_else(|| ParquetError::General("schema has fewer columns than written".into()))?;
    col.typed::<T>().write_batch(values, None, None)?;
    col.close()
}

fn hex(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len() * 2);
    push_hex(&mut out, bytes);
    String::from_utf8(out).unwrap_or_default() // ASCII hex digits only
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_inconsistent_chunks() {
        let dir = std::env::temp_dir().join(format!("tp-pq-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.parquet");
        let mut w =
            ParquetShardWriter::create(&path, 16, vec![], ["a", "b"].into_iter().collect(), "t")
                .unwrap();
        let ids = [1u16, 2, 3];
        assert!(w
            .write_chunk(TokenIds::U16(&ids), &[0, 2, 4], &[false, false])
            .is_err());
        assert!(w
            .write_chunk(TokenIds::U16(&ids), &[0, 2, 1, 3], &[false; 3])
            .is_err());
        w.write_chunk(TokenIds::U16(&ids), &[0, 3], &[true])
            .unwrap();
        assert_eq!(w.written(), 1);
        assert!(w
            .write_chunk(TokenIds::U16(&[]), &[0, 0, 0], &[false; 2])
            .is_err());
        w.write_chunk(TokenIds::U16(&[]), &[0, 0], &[false])
            .unwrap();
        let digest = w.finish().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(digest, hex(&Sha256::digest(&bytes)));
        assert_eq!(&bytes[..4], b"PAR1");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_sink_keeps_the_order_of_small_and_large_writes() {
        let path = std::env::temp_dir().join(format!("tp-pq-sink-{}", std::process::id()));
        let mut sink = HashingFile {
            file: File::create(&path).unwrap(),
            sha: Sha256::new(),
            buffer: Vec::new(),
        };
        let mut expected = Vec::new();
        for (i, size) in [
            10,
            WRITE_BUFFER / 4,
            3,
            8192,
            WRITE_BUFFER,
            1,
            WRITE_BUFFER - 2,
            5,
        ]
        .into_iter()
        .enumerate()
        {
            let piece = vec![i as u8; size];
            sink.write_all(&piece).unwrap();
            expected.extend_from_slice(&piece);
        }
        sink.flush().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), expected);
        assert_eq!(
            sink.sha.finalize().as_slice(),
            Sha256::digest(&expected).as_slice()
        );
        std::fs::remove_file(&path).unwrap();
    }

    fn write_shard(path: &Path, chunks: &[(Vec<u32>, Vec<i64>)]) -> (Vec<ValueEncoding>, String) {
        let n: usize = chunks.iter().map(|(_, o)| o.len() - 1).sum();
        let names = (0..n).map(|i| format!("d{i}")).collect();
        let mut w = ParquetShardWriter::create(path, 32, vec![], names, "t").unwrap();
        for (ids, offsets) in chunks {
            let flags = vec![false; offsets.len() - 1];
            w.write_chunk(TokenIds::U32(ids), offsets, &flags).unwrap();
        }
        let encodings = w.value_encodings().to_vec();
        (encodings, w.finish().unwrap())
    }

    #[test]
    fn chooses_per_row_group_and_repeats_its_bytes() {
        let dir = std::env::temp_dir().join(format!("tp-pq-forms-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let chunks = vec![
            (
                (0..4000).map(|i| i % 300).collect(),
                vec![0, 1000, 1000, 4000],
            ),
            ((0..50).collect(), vec![0, 50]),  // distinct IDs: PLAIN
            (vec![], vec![0, 0, 0]),           // no token: PLAIN
            (vec![u32::MAX; 64], vec![0, 64]), // past the table: PLAIN
            (vec![3; 64], vec![0, 10, 64]),    // one distinct ID: 1-bit indices
        ];
        let (a, b) = (dir.join("a.parquet"), dir.join("b.parquet"));
        let (forms, digest) = write_shard(&a, &chunks);
        assert_eq!(
            forms,
            [
                ValueEncoding::Dictionary { bit_width: 9 },
                ValueEncoding::Plain,
                ValueEncoding::Plain,
                ValueEncoding::Plain,
                ValueEncoding::Dictionary { bit_width: 1 },
            ]
        );
        assert_eq!(write_shard(&b, &chunks).1, digest);
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
