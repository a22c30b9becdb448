//! Large entry values stored in chunks (docs/design/big-values.md, docs/design/storage.md "id2chunk"): the
//! `id2entry` record of such a value is a head listing its chunks, each a record of `id2chunk`, so that a
//! splice rewrites only the chunks at its edits. Reads put the pieces back together.

use std::ops::Range;
use std::sync::{Mutex, PoisonError};

use heed::{RoTxn, RwTxn};

use crate::error::StoreError;
use crate::tables::{Tables, ID2CHUNK, ID2ENTRY};

/// First byte of an `id2entry` record that is not the caller's value as it is: `00 01` begins a chunk
/// head, `00 00` a caller's value that itself begins with `00` (stored after one more `00`).
pub(crate) const MARK: u8 = 0x00;
const HEAD_KIND: u8 = 0x01;

/// Whether an `id2entry` record is a chunk head.
pub(crate) fn is_head(raw: &[u8]) -> bool {
    raw.first() == Some(&MARK) && raw.get(1) == Some(&HEAD_KIND)
}

/// The caller's value of a record that is not a chunk head.
pub(crate) fn unescape(raw: &[u8]) -> &[u8] {
    match raw.first() {
        Some(&MARK) => raw.get(1..).unwrap_or_default(),
        _ => raw,
    }
}
/// Values from this size on are stored in chunks.
pub(crate) const CHUNKED_MIN: usize = 256 * 1024;
/// The largest chunk: four 4 KiB pages of LMDB overflow, less the page header, so that a full chunk
/// fills its pages.
pub(crate) const CHUNK_SIZE: usize = 4 * 4096 - 16;

/// The chunks of one value, in order: (serial, length).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Head {
    pub chunks: Vec<(u32, u32)>,
}

impl Head {
    /// Head layout: `00 01`, u32 LE count, then per chunk u32 LE serial and u32 LE length.
    pub fn parse(raw: &[u8]) -> Result<Head, StoreError> {
        let corrupt = |detail: &str| StoreError::Corrupt {
            table: ID2ENTRY,
            detail: detail.into(),
        };
        let word = |at: usize| -> Result<u32, StoreError> {
            raw.get(at..at + 4)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map(u32::from_le_bytes)
                .ok_or_else(|| corrupt("chunk head truncated"))
        };
        if !is_head(raw) {
            return Err(corrupt("not a chunk head"));
        }
        let count = word(2)? as usize;
        if raw.len() != 6 + count * 8 {
            return Err(corrupt("chunk head of the wrong length"));
        }
        let chunks = (0..count)
            .map(|i| Ok((word(6 + i * 8)?, word(10 + i * 8)?)))
            .collect::<Result<_, StoreError>>()?;
        Ok(Head { chunks })
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(6 + self.chunks.len() * 8);
        out.extend_from_slice(&[MARK, HEAD_KIND]);
        out.extend_from_slice(&(self.chunks.len() as u32).to_le_bytes());
        for (serial, len) in &self.chunks {
            out.extend_from_slice(&serial.to_le_bytes());
            out.extend_from_slice(&len.to_le_bytes());
        }
        out
    }

    pub fn len(&self) -> usize {
        self.chunks.iter().map(|(_, n)| *n as usize).sum()
    }

    fn next_serial(&self) -> Option<u32> {
        match self.chunks.iter().map(|(s, _)| *s).max() {
            Some(max) => max.checked_add(1),
            None => Some(0),
        }
    }
}

pub(crate) fn chunk_key(id: u64, serial: u32) -> [u8; 12] {
    let mut key = [0u8; 12];
    key[..8].copy_from_slice(&id.to_be_bytes());
    key[8..].copy_from_slice(&serial.to_be_bytes());
    key
}

/// The whole value of the entry `id` whose head is `raw`.
pub(crate) fn assemble(
    txn: &RoTxn<'_>,
    tables: &Tables,
    id: u64,
    raw: &[u8],
) -> Result<Vec<u8>, StoreError> {
    let head = Head::parse(raw)?;
    let mut out = Vec::with_capacity(head.len());
    for (serial, len) in &head.chunks {
        let chunk = tables
            .id2chunk
            .get(txn, &chunk_key(id, *serial))?
            .filter(|c| c.len() == *len as usize)
            .ok_or_else(|| StoreError::Corrupt {
                table: ID2CHUNK,
                detail: format!("chunk {serial} of entry {id} missing or of the wrong length"),
            })?;
        out.extend_from_slice(chunk);
    }
    Ok(out)
}

/// Values put back together during one transaction, kept until it ends so that reads can hand out
/// slices as they do for values in the map.
#[derive(Default)]
pub struct Arena {
    values: Mutex<Vec<Box<[u8]>>>,
}

impl Arena {
    pub fn keep(&self, value: Vec<u8>) -> &[u8] {
        let boxed = value.into_boxed_slice();
        let ptr = boxed.as_ptr();
        let len = boxed.len();
        self.values
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(boxed);
        // SAFETY: the boxed slice is owned by `values`, which only ever grows (nothing is removed or
        // changed before the arena drops), and moving a `Box` does not move its heap contents: the
        // bytes stay valid and unchanged for as long as `&self`.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

/// Stores `value` for `id` as chunks under a new head (the old chunks must be gone already).
pub(crate) fn put_chunked(
    txn: &mut RwTxn<'_>,
    tables: &Tables,
    id: u64,
    pieces: &[&[u8]],
    first_serial: u32,
) -> Result<Vec<(u32, u32)>, StoreError> {
    // Pieces are joined before they are cut, so that small edits do not leave small chunks behind.
    let joined;
    let value: &[u8] = match pieces {
        [one] => one,
        _ => {
            joined = pieces.concat();
            &joined
        }
    };
    let mut chunks = Vec::new();
    let mut serial = first_serial;
    // Cut into equal chunks of at most CHUNK_SIZE: a piece a little over the size makes two halves,
    // not a full chunk and a sliver, so that edits that grow a piece do not leave slivers behind.
    let count = value.len().div_ceil(CHUNK_SIZE).max(1);
    for chunk in value.chunks(value.len().div_ceil(count).max(1)) {
        tables.id2chunk.put(txn, &chunk_key(id, serial), chunk)?;
        chunks.push((serial, chunk.len() as u32));
        serial = serial.checked_add(1).ok_or_else(|| StoreError::Corrupt {
            table: ID2CHUNK,
            detail: "chunk serials exhausted".into(),
        })?;
    }
    Ok(chunks)
}

/// Removes the chunks of `head` of entry `id`, except those in `keep`.
pub(crate) fn delete_chunks(
    txn: &mut RwTxn<'_>,
    tables: &Tables,
    id: u64,
    head: &Head,
    keep: &[u32],
) -> Result<(), StoreError> {
    for (serial, _) in &head.chunks {
        if !keep.contains(serial) {
            tables.id2chunk.delete(txn, &chunk_key(id, *serial))?;
        }
    }
    Ok(())
}

/// A splice of a chunked value: the new value is `head ++ old[keep] ++ tail`. Returns the new chunk
/// list, having written the new chunks and deleted the unused old ones; None when the splice keeps no
/// whole chunk (the caller then writes the value anew).
pub(crate) fn splice(
    txn: &mut RwTxn<'_>,
    tables: &Tables,
    id: u64,
    old: &Head,
    new_head: &[u8],
    keep: Range<usize>,
    new_tail: &[u8],
) -> Result<Option<Head>, StoreError> {
    // The chunks lying wholly inside `keep`, as a run of indexes.
    let mut offset = 0usize;
    let mut whole: Option<Range<usize>> = None;
    let mut starts = Vec::with_capacity(old.chunks.len());
    for (i, (_, len)) in old.chunks.iter().enumerate() {
        let (start, end) = (offset, offset + *len as usize);
        starts.push(start);
        if start >= keep.start && end <= keep.end {
            whole = Some(match whole {
                Some(r) => r.start..i + 1,
                None => i..i + 1,
            });
        }
        offset = end;
    }
    if keep.end > offset {
        return Err(StoreError::Corrupt {
            table: ID2CHUNK,
            detail: "splice range beyond the stored value".into(),
        });
    }
    let Some(whole) = whole else {
        return Ok(None);
    };
    // Splices leave short chunks where pieces were cut; past this many, the value is cut anew.
    if old.chunks.len() > 2 * offset.div_ceil(CHUNK_SIZE) + 16 {
        return Ok(None);
    }
    let Some(mut serial) = old.next_serial() else {
        return Ok(None);
    };
    let kept_start = starts[whole.start];
    let kept_end = starts.get(whole.end).copied().unwrap_or(offset);
    // The bytes of `keep` outside the whole chunks, read before anything is written.
    let read = |from: usize, to: usize| -> Result<Vec<u8>, StoreError> {
        let mut out = Vec::with_capacity(to - from);
        for (i, (serial, len)) in old.chunks.iter().enumerate() {
            let (start, end) = (starts[i], starts[i] + *len as usize);
            if end <= from || start >= to {
                continue;
            }
            let chunk = tables
                .id2chunk
                .get(txn, &chunk_key(id, *serial))?
                .ok_or_else(|| StoreError::Corrupt {
                    table: ID2CHUNK,
                    detail: format!("chunk {serial} of entry {id} missing"),
                })?;
            let (a, b) = (from.max(start) - start, to.min(end) - start);
            out.extend_from_slice(chunk.get(a..b).ok_or_else(|| StoreError::Corrupt {
                table: ID2CHUNK,
                detail: format!("chunk {serial} of entry {id} shorter than its head says"),
            })?);
        }
        Ok(out)
    };
    let before = read(keep.start, kept_start)?;
    let after = read(kept_end, keep.end)?;
    let kept: Vec<u32> = old.chunks[whole.clone()].iter().map(|(s, _)| *s).collect();
    delete_chunks(txn, tables, id, old, &kept)?;
    let mut chunks = put_chunked(txn, tables, id, &[new_head, &before], serial)?;
    serial = serial.saturating_add(chunks.len() as u32);
    chunks.extend_from_slice(&old.chunks[whole]);
    chunks.extend(put_chunked(txn, tables, id, &[&after, new_tail], serial)?);
    Ok(Some(Head { chunks }))
}
