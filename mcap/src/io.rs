//! Positional reads. The reader only ever asks for byte ranges, so the same code serves a
//! local file, a buffer, or (later) HTTP range requests, and `Counting` can measure how much
//! of a file a query touched.

use std::sync::atomic::{AtomicU64, Ordering};

pub trait ReadAt {
    /// Total size of the source in bytes.
    fn size(&self) -> std::io::Result<u64>;
    /// Fills `buf` from `offset`; a short source is an `UnexpectedEof` error.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()>;
}

impl ReadAt for [u8] {
    fn size(&self) -> std::io::Result<u64> {
        Ok(self.len() as u64)
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let start = usize::try_from(offset).ok().filter(|s| *s <= self.len());
        match start.and_then(|s| self.get(s..s.checked_add(buf.len())?)) {
            Some(src) => {
                buf.copy_from_slice(src);
                Ok(())
            }
            None => Err(std::io::ErrorKind::UnexpectedEof.into()),
        }
    }
}

impl ReadAt for Vec<u8> {
    fn size(&self) -> std::io::Result<u64> {
        self.as_slice().size()
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        self.as_slice().read_exact_at(offset, buf)
    }
}

impl ReadAt for std::fs::File {
    fn size(&self) -> std::io::Result<u64> {
        Ok(self.metadata()?.len())
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(self, buf, offset)
    }
}

impl<T: ReadAt + ?Sized> ReadAt for &T {
    fn size(&self) -> std::io::Result<u64> {
        (**self).size()
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        (**self).read_exact_at(offset, buf)
    }
}

/// Wraps a source and counts the bytes and calls of every read.
pub struct Counting<R> {
    inner: R,
    bytes: AtomicU64,
    reads: AtomicU64,
}

impl<R: ReadAt> Counting<R> {
    pub fn new(inner: R) -> Self {
        Counting {
            inner,
            bytes: AtomicU64::new(0),
            reads: AtomicU64::new(0),
        }
    }
    pub fn bytes_read(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }
    pub fn reset(&self) {
        self.bytes.store(0, Ordering::Relaxed);
        self.reads.store(0, Ordering::Relaxed);
    }
}

impl<R: ReadAt> ReadAt for Counting<R> {
    fn size(&self) -> std::io::Result<u64> {
        self.inner.size()
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        self.bytes.fetch_add(buf.len() as u64, Ordering::Relaxed);
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.inner.read_exact_at(offset, buf)
    }
}
