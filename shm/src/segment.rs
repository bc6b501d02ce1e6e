//! One memfd segment of a pool, owned and mapped read-write by the publishing process.
//!
//! Created with `MFD_ALLOW_SEALING`, sized, mapped read-write, then sealed against shrinking
//! and growing (a reader's mapping can never lose its pages, so it never faults with SIGBUS),
//! against new writable mappings and writes (`F_SEAL_FUTURE_WRITE`: a reader, holding the same
//! descriptor, can only map it read-only; our own mapping made before the seal stays
//! writable), and against more sealing.

use std::ffi::c_void;
use std::num::NonZeroUsize;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;

use nix::fcntl::{fcntl, FcntlArg, SealFlag};
use nix::sys::memfd::{memfd_create, MemFdCreateFlag};
use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};

/// A segment's number within its pool, unique for the pool's life (the wire names segments by it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SegmentId(pub u32);

pub(crate) struct Segment {
    pub(crate) id: SegmentId,
    fd: OwnedFd,
    ptr: NonNull<u8>,
    size: usize,
}

// SAFETY: the segment owns its mapping; the pointer is only dereferenced through slots, which
// the pool hands to one writer (`SlotMut`) or to readers after that writer is gone (`Slot`).
unsafe impl Send for Segment {}
// SAFETY: as for Send: shared access goes only through `bytes`, whose callers (the pool) keep
// the writer/reader discipline per slot.
unsafe impl Sync for Segment {}

impl Segment {
    pub(crate) fn create(id: SegmentId, size: usize) -> std::io::Result<Segment> {
        let len = NonZeroUsize::new(size).ok_or(std::io::ErrorKind::InvalidInput)?;
        let fd = memfd_create(
            c"tracer-shm",
            MemFdCreateFlag::MFD_CLOEXEC | MemFdCreateFlag::MFD_ALLOW_SEALING,
        )?;
        nix::unistd::ftruncate(&fd, size as i64)?;
        // SAFETY: a fresh shared mapping of our own memfd, `size` bytes long as just set; no Rust
        // reference exists to that memory yet, and the mapping lives until `drop` unmaps it.
        let p = unsafe {
            mmap(
                None,
                len,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                &fd,
                0,
            )
        }?;
        let seg = Segment {
            id,
            fd,
            ptr: p.cast(),
            size,
        };
        let seals = SealFlag::F_SEAL_SHRINK
            | SealFlag::F_SEAL_GROW
            | SealFlag::F_SEAL_FUTURE_WRITE
            | SealFlag::F_SEAL_SEAL;
        fcntl(seg.fd.as_raw_fd(), FcntlArg::F_ADD_SEALS(seals))?;
        Ok(seg)
    }

    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// The descriptor to pass to readers (sealed: they can map it read-only only).
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// A duplicate of the descriptor (the probe maps it as a reader would).
    pub(crate) fn share_fd(&self) -> std::io::Result<OwnedFd> {
        self.fd.try_clone()
    }

    /// The bytes at `offset..offset + len`.
    ///
    /// # Safety
    /// The range is inside the segment, and nobody writes it while the returned slice lives.
    pub(crate) unsafe fn bytes(&self, offset: usize, len: usize) -> &[u8] {
        debug_assert!(offset + len <= self.size);
        // SAFETY: the caller's contract: in bounds of our live mapping, and not written meanwhile.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(offset), len) }
    }

    /// The bytes at `offset..offset + len`, to fill.
    ///
    /// # Safety
    /// The range is inside the segment, and nothing else reads or writes it while the returned
    /// slice lives.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn bytes_mut(&self, offset: usize, len: usize) -> &mut [u8] {
        debug_assert!(offset + len <= self.size);
        // SAFETY: the caller's contract: in bounds of our live writable mapping, and exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(offset), len) }
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: our own mapping of `size` bytes; every slot (and so every slice into it) holds
        // an `Arc<Segment>`, so none is left when this runs.
        let _ = unsafe { munmap(self.ptr.cast::<c_void>(), self.size) };
    }
}
