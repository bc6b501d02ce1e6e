//! The reader's side: a segment descriptor received from a peer, checked and mapped read-only,
//! and views into it that tell a release hook when they are dropped.

use std::ffi::c_void;
use std::num::NonZeroUsize;
use std::os::fd::{AsRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use nix::fcntl::{fcntl, FcntlArg, SealFlag};
use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};

/// Why a received segment is not mapped. The caller falls back (the peer is told).
#[derive(Debug, thiserror::Error)]
pub enum MapError {
    #[error("segment size {0} is zero or beyond this platform's address space")]
    BadSize(u64),
    #[error("segment is {actual} bytes, announced {announced}")]
    SizeMismatch { announced: u64, actual: u64 },
    #[error("segment is not sealed against shrinking and growing")]
    NotSealed,
    #[error("segment descriptor: {0}")]
    Os(#[from] nix::errno::Errno),
}

/// A peer's segment, mapped read-only. Views hold it (`Arc`), so it stays mapped while any is
/// alive, after the link or the peer process is gone.
pub struct Mapping {
    ptr: NonNull<u8>,
    size: usize,
    _fd: OwnedFd,
    /// Cells of views no longer held, for the next views (as many as were held at once, at
    /// most: a peer bounds the references it sends).
    free_views: Mutex<Vec<Arc<ViewCell>>>,
}

// SAFETY: a read-only mapping; the pointer is only read, through bounds-checked views.
unsafe impl Send for Mapping {}
// SAFETY: as for Send: shared reads only.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Map `fd` (announced as `size` bytes) read-only, after checking that it is that large and
    /// sealed against shrinking and growing: otherwise the owner could truncate it under our
    /// mapping and a read would fault (SIGBUS).
    pub fn map(fd: OwnedFd, size: u64) -> Result<Mapping, MapError> {
        let len = usize::try_from(size)
            .ok()
            .and_then(NonZeroUsize::new)
            .ok_or(MapError::BadSize(size))?;
        let seals = SealFlag::from_bits_truncate(fcntl(fd.as_raw_fd(), FcntlArg::F_GET_SEALS)?);
        if !seals.contains(SealFlag::F_SEAL_SHRINK | SealFlag::F_SEAL_GROW) {
            return Err(MapError::NotSealed);
        }
        let actual = nix::sys::stat::fstat(fd.as_raw_fd())?.st_size as u64;
        if actual != size {
            return Err(MapError::SizeMismatch {
                announced: size,
                actual,
            });
        }
        // SAFETY: a new read-only shared mapping of `len` bytes of a file that is exactly that
        // large and can no longer change size (checked above), so every page stays backed.
        let p = unsafe {
            mmap(
                None,
                len,
                ProtFlags::PROT_READ,
                MapFlags::MAP_SHARED,
                &fd,
                0,
            )
        }?;
        Ok(Mapping {
            ptr: p.cast(),
            size: len.get(),
            _fd: fd,
            free_views: Mutex::new(Vec::new()),
        })
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// A view of `offset..offset + len`, or None when the range is not inside the segment.
    /// `release` is told `token` when the last clone of the view is dropped. The view's state
    /// is a cell recycled from this mapping's earlier views: no allocation on the steady path.
    pub fn view(
        self: &Arc<Self>,
        offset: u64,
        len: u64,
        release: Weak<dyn Release>,
        token: u64,
    ) -> Option<View> {
        let off = usize::try_from(offset).ok()?;
        let n = usize::try_from(len).ok()?;
        if off.checked_add(n)? > self.size {
            return None;
        }
        let cell = lock(&self.free_views).pop().unwrap_or_default();
        cell.offset.store(off, Ordering::Relaxed);
        cell.len.store(n, Ordering::Relaxed);
        cell.token.store(token, Ordering::Relaxed);
        *lock(&cell.release) = release;
        cell.holders.store(1, Ordering::Release);
        Some(View {
            map: self.clone(),
            cell,
        })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: our own mapping of `size` bytes; views hold an `Arc<Mapping>`, so none is left.
        let _ = unsafe { munmap(self.ptr.cast::<c_void>(), self.size) };
    }
}

/// Told when a view is dropped (the link sends the owner a release).
pub trait Release: Send + Sync {
    fn release(&self, token: u64);
}

/// The state of one view, shared by its clones and recycled by its mapping once the last clone
/// is gone (`holders` counts the clones; the fields are atomics so that a recycled cell is set
/// without exclusive access: a clone still dropping its `Arc` reads nothing after it stopped
/// being a holder).
struct ViewCell {
    holders: AtomicUsize,
    offset: AtomicUsize,
    len: AtomicUsize,
    token: AtomicU64,
    release: Mutex<Weak<dyn Release>>,
}

/// Nobody to tell: the state of a cell not in use.
struct NoRelease;
impl Release for NoRelease {
    fn release(&self, _token: u64) {}
}

impl Default for ViewCell {
    fn default() -> Self {
        ViewCell {
            holders: AtomicUsize::new(0),
            offset: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
            token: AtomicU64::new(0),
            release: Mutex::new(Weak::<NoRelease>::new()),
        }
    }
}

/// A read-only window on a peer's segment: one sample's bytes. Cheap `Clone` (no allocation);
/// the owner is told (`Release`) when the last clone is dropped.
pub struct View {
    map: Arc<Mapping>,
    cell: Arc<ViewCell>,
}

impl Clone for View {
    fn clone(&self) -> Self {
        self.cell.holders.fetch_add(1, Ordering::Relaxed);
        View {
            map: self.map.clone(),
            cell: self.cell.clone(),
        }
    }
}

impl AsRef<[u8]> for View {
    fn as_ref(&self) -> &[u8] {
        let off = self.cell.offset.load(Ordering::Relaxed);
        let len = self.cell.len.load(Ordering::Relaxed);
        // SAFETY: the range was checked against the mapping's size in `Mapping::view` (and the
        // cell is not recycled while this view holds it), and the mapping lives as long as
        // `self.map`. The owner does not reuse the slot before we release it; an owner that
        // broke that rule could change the bytes we read, never make the read leave the
        // mapping (it cannot shrink the sealed file).
        unsafe { std::slice::from_raw_parts(self.map.ptr.as_ptr().add(off), len) }
    }
}

impl Drop for View {
    fn drop(&mut self) {
        if self.cell.holders.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        let token = self.cell.token.load(Ordering::Relaxed);
        let release = std::mem::replace(&mut *lock(&self.cell.release), Weak::<NoRelease>::new());
        lock(&self.map.free_views).push(self.cell.clone());
        if let Some(r) = release.upgrade() {
            r.release(token);
        }
    }
}

/// A lock that a panic elsewhere cannot poison for good (the data are plain values).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
