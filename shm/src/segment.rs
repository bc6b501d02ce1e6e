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
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, Weak};

use nix::fcntl::{fcntl, FcntlArg, SealFlag};
use nix::sys::memfd::{memfd_create, MemFdCreateFlag};
use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};

/// A segment's number, unique in the process for its life (the wire names segments by it, and
/// every pool of a process, a context's and a C API's, may send through the same link).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SegmentId(pub u32);

impl SegmentId {
    /// The next unused number of this process.
    pub(crate) fn next() -> SegmentId {
        static NEXT: AtomicU32 = AtomicU32::new(1);
        SegmentId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// Told when a segment made for one message is gone: its last slot was dropped, so no
/// reference into it is out anywhere. A link that announced it sends RETIRE (docs/wire.md).
pub trait Retire: Send + Sync {
    fn retire(&self, segment: SegmentId, size: u64);
}

/// Where the memory of a segment made for one message goes when the segment does: its pool
/// keeps it for the next such message (its pages stay faulted in here), or lets it go.
pub(crate) trait Recycle: Send + Sync {
    fn recycle(&self, memory: Memory);
}

/// A sealed memfd, mapped read-write here.
pub(crate) struct Memory {
    fd: OwnedFd,
    ptr: NonNull<u8>,
    size: usize,
}

// SAFETY: the memory owns its mapping; the pointer is only dereferenced through a segment's
// slots, which the pool hands to one writer (`SlotMut`) or to readers after that writer is gone
// (`Slot`).
unsafe impl Send for Memory {}
// SAFETY: as for Send: shared access goes only through `Segment::bytes`, whose callers (the
// pool) keep the writer/reader discipline per slot.
unsafe impl Sync for Memory {}

impl Memory {
    /// New memory of `size` bytes (for a pool's segment, or one made for one message).
    pub(crate) fn create(size: usize) -> std::io::Result<Memory> {
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
        let mem = Memory {
            fd,
            ptr: p.cast(),
            size,
        };
        let seals = SealFlag::F_SEAL_SHRINK
            | SealFlag::F_SEAL_GROW
            | SealFlag::F_SEAL_FUTURE_WRITE
            | SealFlag::F_SEAL_SEAL;
        fcntl(mem.fd.as_raw_fd(), FcntlArg::F_ADD_SEALS(seals))?;
        Ok(mem)
    }

    pub(crate) fn size(&self) -> usize {
        self.size
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        // SAFETY: our own mapping of `size` bytes; every slot (and so every slice into it) holds
        // an `Arc<Segment>` that owns this memory, so none is left when this runs.
        let _ = unsafe { munmap(self.ptr.cast::<c_void>(), self.size) };
    }
}

pub(crate) struct Segment {
    pub(crate) id: SegmentId,
    /// None only while the segment is dropped.
    memory: Option<Memory>,
    /// Made for one message (`Pool::alloc` above the largest slot): who to tell when it goes.
    /// None for a pool's segments, which live as long as the pool.
    alone: Option<Alone>,
}

struct Alone {
    retire: Mutex<Vec<Weak<dyn Retire>>>,
    home: Weak<dyn Recycle>,
}

impl Segment {
    pub(crate) fn create(id: SegmentId, size: usize) -> std::io::Result<Segment> {
        Ok(Segment {
            id,
            memory: Some(Memory::create(size)?),
            alone: None,
        })
    }

    /// A segment for one message, in `memory` (new, or recycled by `home`), retired when its
    /// last slot goes ([`Retire`]), its memory then given to `home`.
    pub(crate) fn alone(id: SegmentId, memory: Memory, home: Weak<dyn Recycle>) -> Segment {
        Segment {
            id,
            memory: Some(memory),
            alone: Some(Alone {
                retire: Mutex::new(Vec::new()),
                home,
            }),
        }
    }

    pub(crate) fn is_alone(&self) -> bool {
        self.alone.is_some()
    }

    /// `hook` is told when this segment goes; nothing for a pool's segment, which never does.
    pub(crate) fn on_retire(&self, hook: Weak<dyn Retire>) {
        if let Some(alone) = &self.alone {
            let mut hooks = alone.retire.lock().unwrap_or_else(|e| e.into_inner());
            // Links that went meanwhile leave nothing behind: the list stays as long as the
            // links that announced the segment.
            hooks.retain(|h| h.strong_count() > 0);
            hooks.push(hook);
        }
    }

    fn mem(&self) -> &Memory {
        self.memory
            .as_ref()
            .expect("a segment's memory until it is dropped")
    }

    pub(crate) fn size(&self) -> usize {
        self.mem().size
    }

    /// The descriptor to pass to readers (sealed: they can map it read-only only).
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.mem().fd.as_fd()
    }

    /// A duplicate of the descriptor (the probe maps it as a reader would).
    pub(crate) fn share_fd(&self) -> std::io::Result<OwnedFd> {
        self.mem().fd.try_clone()
    }

    /// The bytes at `offset..offset + len`.
    ///
    /// # Safety
    /// The range is inside the segment, and nobody writes it while the returned slice lives.
    pub(crate) unsafe fn bytes(&self, offset: usize, len: usize) -> &[u8] {
        let mem = self.mem();
        debug_assert!(offset + len <= mem.size);
        // SAFETY: the caller's contract: in bounds of our live mapping, and not written meanwhile.
        unsafe { std::slice::from_raw_parts(mem.ptr.as_ptr().add(offset), len) }
    }

    /// The bytes at `offset..offset + len`, to fill.
    ///
    /// # Safety
    /// The range is inside the segment, and nothing else reads or writes it while the returned
    /// slice lives.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn bytes_mut(&self, offset: usize, len: usize) -> &mut [u8] {
        let mem = self.mem();
        debug_assert!(offset + len <= mem.size);
        // SAFETY: the caller's contract: in bounds of our live writable mapping, and exclusive.
        unsafe { std::slice::from_raw_parts_mut(mem.ptr.as_ptr().add(offset), len) }
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        let (Some(memory), Some(alone)) = (self.memory.take(), self.alone.take()) else {
            // A pool's segment: its memory is unmapped with it.
            return;
        };
        // No reference into it is out: the links that announced it retire it, and its memory
        // may take the next message under a new number.
        let hooks = alone.retire.into_inner().unwrap_or_else(|e| e.into_inner());
        for hook in hooks.iter().filter_map(Weak::upgrade) {
            hook.retire(self.id, memory.size as u64);
        }
        if let Some(home) = alone.home.upgrade() {
            home.recycle(memory);
        }
    }
}
