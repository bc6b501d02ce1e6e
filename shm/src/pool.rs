//! The publisher's pool: segments cut into power-of-two slots, one free list per size, reused
//! last-freed-first (its pages are already faulted in, here and in readers' mappings).

use std::os::fd::BorrowedFd;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::segment::{Memory, Recycle, Retire, Segment, SegmentId};

/// Bounds of a pool.
#[derive(Clone, Copy, Debug)]
pub struct PoolConfig {
    /// Smallest slot (a power of two); smaller samples still take one.
    pub min_slot: usize,
    /// Largest slot; a larger sample gets a segment of its own (`Pool::alloc`).
    pub max_slot: usize,
    /// Bytes of all segments together: when reached, `alloc` returns None. Segments made for
    /// one sample each have a bound of their own, twice this (`Pool::alloc`).
    pub max_bytes: usize,
    /// Target size of one segment (a segment holds at least one slot).
    pub segment_bytes: usize,
}

impl Default for PoolConfig {
    /// 512 MiB of segments, slots of 64 KiB to 128 MiB ([`PoolConfig::bounded`]).
    fn default() -> Self {
        PoolConfig::bounded(512 << 20)
    }
}

/// The smallest largest slot: what a pool's slots went up to before they scaled with it.
const SLOT_FLOOR: usize = 64 << 20;
/// No slot above 2 GiB: a reference's length is 32 bits on the wire (SHM_REF). A message above
/// the largest slot gets a segment of its own, of at most `u32::MAX` bytes for the same reason.
const SLOT_CEILING: usize = 1 << 31;
/// A segment made for one sample is a whole number of pages.
const PAGE: usize = 4096;

impl PoolConfig {
    /// A pool of `max_bytes` of segments (64 KiB slots and up, 16 MiB segments) whose largest
    /// slot is [`largest_slot`]`(max_bytes)`.
    pub fn bounded(max_bytes: usize) -> PoolConfig {
        PoolConfig {
            min_slot: 64 * 1024,
            max_slot: largest_slot(max_bytes),
            max_bytes,
            segment_bytes: 16 * 1024 * 1024,
        }
    }
}

/// The largest slot of a pool of `max_bytes`: the largest power of two within a quarter of it,
/// at least 64 MiB and at most 2 GiB (128 MiB for the default 512 MiB, so that an 8K image,
/// 100 MB, is one slot). A pool's segments are never retired (a reader keeps them as long as
/// the link), so a slot, once made, is the pool's for the process's life: the quarter bounds
/// what one large message can take of it for good. Its pages are only those its messages
/// wrote (segments are sparse), so a message just above a power of two takes twice its size
/// of the bound, not of memory. A larger message gets a segment of its own, retired when it
/// goes (`Pool::alloc`).
pub fn largest_slot(max_bytes: usize) -> usize {
    let pow = match (max_bytes / 4).checked_ilog2() {
        Some(b) => 1usize << b,
        None => 0,
    };
    pow.clamp(SLOT_FLOOR, SLOT_CEILING)
}

/// What a pool holds now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    pub segments: usize,
    /// Bytes of all segments.
    pub bytes: usize,
    /// Slots handed out and not yet returned.
    pub slots_in_use: usize,
    /// Bytes of those slots.
    pub bytes_in_use: usize,
    /// Segments made for one sample each (above the largest slot), alive now.
    pub alone: usize,
    /// Memory of such segments kept for the next one (its segment retired).
    pub alone_spare: usize,
    /// Bytes of both.
    pub alone_bytes: usize,
}

/// A bounded pool of shared-memory slots. Cheap `Clone`.
#[derive(Clone)]
pub struct Pool {
    inner: Arc<PoolInner>,
}

struct PoolInner {
    cfg: PoolConfig,
    state: Mutex<State>,
    /// Cells of frozen slots whose last holder dropped them (`Slot::drop`): the next `freeze`
    /// fills one instead of allocating.
    spare: Mutex<Vec<Arc<SlotInner>>>,
}

/// Spare cells kept at most.
const MAX_SPARE: usize = 1024;

#[derive(Default)]
struct State {
    /// Free slots per size class (index = log2(slot size / min_slot)).
    free: Vec<Vec<(Arc<Segment>, usize)>>,
    /// Memory of retired segments made for one sample, oldest first.
    spare_alone: Vec<Memory>,
    stats: PoolStats,
}

impl Pool {
    /// A pool, or an error when this process cannot make segments (no memfd, sealing or mmap).
    pub fn new(cfg: PoolConfig) -> std::io::Result<Pool> {
        if !cfg.min_slot.is_power_of_two() || cfg.max_slot < cfg.min_slot {
            return Err(std::io::ErrorKind::InvalidInput.into());
        }
        if !crate::can_map() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "this process cannot map shared memory (or TRACER_SHM=off)",
            ));
        }
        Ok(Pool {
            inner: Arc::new(PoolInner {
                cfg,
                state: Mutex::new(State::default()),
                spare: Mutex::new(Vec::new()),
            }),
        })
    }

    pub fn config(&self) -> PoolConfig {
        self.inner.cfg
    }

    pub fn stats(&self) -> PoolStats {
        self.inner.lock().stats
    }

    /// A slot of `len` bytes to fill, or None: `len` is 0, the pool is at `max_bytes`, or a
    /// segment could not be made. The caller then uses ordinary memory.
    ///
    /// Above `max_slot` the slot is a segment made for this sample alone, page-rounded, at most
    /// `u32::MAX` bytes (SHM_REF's length). It is retired when its last `Slot` goes: every link
    /// that announced it is told ([`Slot::on_retire`]) and tells its reader, whose mapping then
    /// goes with its last view. Its memory is kept for the next such sample (under a new
    /// segment number: its pages are faulted in already here, a fresh segment's are not), up to
    /// `max_bytes` of kept memory. Such segments and the memory kept take at most twice
    /// `max_bytes`: a stream of them has one in flight and the next being written, and kept
    /// memory goes first when a new one needs room.
    pub fn alloc(&self, len: usize) -> Option<SlotMut> {
        let cfg = &self.inner.cfg;
        if len == 0 {
            return None;
        }
        if len > cfg.max_slot {
            return self.alloc_alone(len);
        }
        let size = len.max(cfg.min_slot).next_power_of_two();
        let class = (size / cfg.min_slot).trailing_zeros() as usize;
        let mut st = self.inner.lock();
        if st.free.len() <= class {
            st.free.resize_with(class + 1, Vec::new);
        }
        if st.free[class].is_empty() {
            self.inner.grow(&mut st, class, size)?;
        }
        let (segment, offset) = st.free[class].pop()?;
        st.stats.slots_in_use += 1;
        st.stats.bytes_in_use += size;
        drop(st);
        Some(SlotMut(SlotInner {
            pool: Arc::downgrade(&self.inner),
            segment,
            offset,
            start: 0,
            cap: size,
            len,
            live: true,
        }))
    }

    fn alloc_alone(&self, len: usize) -> Option<SlotMut> {
        if len > u32::MAX as usize {
            return None;
        }
        let size = len.div_ceil(PAGE) * PAGE;
        let bound = self.inner.cfg.max_bytes.saturating_mul(2);
        let mut evicted = Vec::new();
        let kept = {
            let mut st = self.inner.lock();
            // The smallest kept memory that holds it, if at most twice its size.
            let fits = st
                .spare_alone
                .iter()
                .enumerate()
                .filter(|(_, m)| m.size() >= size && m.size() <= size.saturating_mul(2))
                .min_by_key(|(_, m)| m.size())
                .map(|(i, _)| i);
            match fits {
                Some(i) => {
                    st.stats.alone += 1;
                    st.stats.alone_spare -= 1;
                    Ok(st.spare_alone.remove(i))
                }
                None => {
                    // Room for new memory: kept memory goes first, the oldest first.
                    while st.stats.alone_bytes + size > bound && !st.spare_alone.is_empty() {
                        let m = st.spare_alone.remove(0);
                        st.stats.alone_spare -= 1;
                        st.stats.alone_bytes -= m.size();
                        evicted.push(m);
                    }
                    let room = st.stats.alone_bytes + size <= bound;
                    if room {
                        st.stats.alone += 1;
                        st.stats.alone_bytes += size;
                    }
                    Err(room)
                }
            }
        };
        // Unmapped outside the lock.
        drop(evicted);
        let memory = match kept {
            Ok(m) => m,
            Err(false) => return None,
            Err(true) => match Memory::create(size) {
                Ok(m) => m,
                Err(_) => {
                    let mut st = self.inner.lock();
                    st.stats.alone -= 1;
                    st.stats.alone_bytes -= size;
                    return None;
                }
            },
        };
        let cap = memory.size();
        let home = Arc::downgrade(&self.inner) as Weak<dyn Recycle>;
        Some(SlotMut(SlotInner {
            pool: Arc::downgrade(&self.inner),
            segment: Arc::new(Segment::alone(SegmentId::next(), memory, home)),
            offset: 0,
            start: 0,
            cap,
            len,
            live: true,
        }))
    }
}

/// A lock that a panic elsewhere cannot poison for good.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl PoolInner {
    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// One more segment of `size`-byte slots for `class`, within `max_bytes`.
    fn grow(&self, st: &mut State, class: usize, size: usize) -> Option<()> {
        let room = self.cfg.max_bytes.saturating_sub(st.stats.bytes);
        let want = (self.cfg.segment_bytes / size).clamp(1, 64) * size;
        let seg_bytes = if want <= room {
            want
        } else {
            (room / size) * size
        };
        if seg_bytes == 0 {
            return None;
        }
        let seg = Arc::new(Segment::create(SegmentId::next(), seg_bytes).ok()?);
        st.stats.segments += 1;
        st.stats.bytes += seg_bytes;
        // Pushed high to low, so the first slot handed out is at offset 0.
        for k in (0..seg_bytes / size).rev() {
            st.free[class].push((seg.clone(), k * size));
        }
        Some(())
    }

    fn give_back(&self, segment: Arc<Segment>, offset: usize, cap: usize) {
        if segment.is_alone() {
            // Not a slot of a free list: the segment goes with its last holder (`Slot::drop`
            // keeps no spare cell of it), and its memory comes back through `recycle`.
            return;
        }
        let class = (cap / self.cfg.min_slot).trailing_zeros() as usize;
        let mut st = self.lock();
        st.stats.slots_in_use -= 1;
        st.stats.bytes_in_use -= cap;
        st.free[class].push((segment, offset));
    }
}

impl Recycle for PoolInner {
    /// A segment made for one sample is gone (retired): its memory is kept for the next, up to
    /// `max_bytes` kept.
    fn recycle(&self, memory: Memory) {
        let mut st = self.lock();
        st.stats.alone -= 1;
        let kept: usize = st.spare_alone.iter().map(Memory::size).sum();
        if kept + memory.size() <= self.cfg.max_bytes {
            st.stats.alone_spare += 1;
            st.spare_alone.push(memory);
            return;
        }
        st.stats.alone_bytes -= memory.size();
        drop(st);
        drop(memory);
    }
}

struct SlotInner {
    /// Weak: a spare cell sits in its pool, which must not keep itself alive. A slot that
    /// outlives every handle to its pool goes back nowhere (the segments stay mapped as long as
    /// a slot holds them).
    pool: Weak<PoolInner>,
    segment: Arc<Segment>,
    /// Where the slot is in the segment (what goes back to the free list).
    offset: usize,
    /// Where the sample starts in the slot (`SlotMut::skip_front`).
    start: usize,
    cap: usize,
    /// The sample's length, from `start`.
    len: usize,
    /// The slot is this cell's (false: a spare cell, its slot given back).
    live: bool,
}

impl SlotInner {
    fn at(&self) -> usize {
        self.offset + self.start
    }

    /// Give the slot back to the free list (once).
    fn vacate(&mut self) {
        if std::mem::take(&mut self.live) {
            if let Some(pool) = self.pool.upgrade() {
                pool.give_back(self.segment.clone(), self.offset, self.cap);
            }
        }
    }
}

impl Drop for SlotInner {
    fn drop(&mut self) {
        self.vacate();
    }
}

/// A slot being filled: the only handle to it, so writing is exclusive.
pub struct SlotMut(SlotInner);

impl SlotMut {
    pub fn len(&self) -> usize {
        self.0.len
    }
    pub fn is_empty(&self) -> bool {
        self.0.len == 0
    }
    /// Start the sample `n` bytes into the slot (a loan puts its header where the struct that
    /// follows is 8-aligned; docs/loans.md). The skipped bytes are no longer part of it.
    pub fn skip_front(&mut self, n: usize) {
        let n = n.min(self.0.len);
        self.0.start += n;
        self.0.len -= n;
    }
    /// Shorten the sample (a serializer that wrote less than it reserved).
    pub fn truncate(&mut self, len: usize) {
        self.0.len = self.0.len.min(len);
    }
    /// The sample's bytes, to fill. Memory reused from an earlier sample keeps its old bytes:
    /// write all of it.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: the range is inside the segment (the pool cut it there), and this `SlotMut` is
        // the only handle to the slot: it left the free list in `alloc` and no `Slot` exists yet.
        unsafe { self.0.segment.bytes_mut(self.0.at(), self.0.len) }
    }
    /// Done writing: an immutable sample that can be shared (in a spare cell of the pool when
    /// there is one: no allocation on the steady path).
    pub fn freeze(self) -> Slot {
        let spare = self.0.pool.upgrade().and_then(|p| lock(&p.spare).pop());
        let cell = match spare {
            Some(mut cell) => match Arc::get_mut(&mut cell) {
                Some(c) => {
                    // The spare's own slot was given back when it became spare.
                    *c = self.0;
                    cell
                }
                None => Arc::new(self.0),
            },
            None => Arc::new(self.0),
        };
        Slot(Some(cell))
    }
}

/// A filled slot. Cheap `Clone`; the slot is free again when the last clone is dropped.
#[derive(Clone)]
pub struct Slot(Option<Arc<SlotInner>>);

impl Drop for Slot {
    fn drop(&mut self) {
        let Some(mut cell) = self.0.take() else {
            return;
        };
        // The last holder (no other clone can appear: cloning needs a holder): the slot goes
        // back now and the cell is kept for the next freeze. Two last clones dropped at once
        // may both see the other: then the cell is simply freed, and its slot given back then.
        let Some(inner) = Arc::get_mut(&mut cell) else {
            return;
        };
        inner.vacate();
        if inner.segment.is_alone() {
            // A spare cell would keep the segment, and so its readers' mappings, alive: it goes
            // now, and the links that announced it retire it.
            return;
        }
        if let Some(pool) = inner.pool.upgrade() {
            let mut spare = lock(&pool.spare);
            if spare.len() < MAX_SPARE {
                spare.push(cell);
            }
        }
    }
}

impl Slot {
    fn inner(&self) -> &SlotInner {
        self.0.as_ref().expect("a slot until dropped")
    }

    pub fn segment(&self) -> SegmentId {
        self.inner().segment.id
    }
    /// Size of the slot's segment (announced with its descriptor).
    pub fn segment_size(&self) -> u64 {
        self.inner().segment.size() as u64
    }
    /// The segment's descriptor, to pass to a reader once.
    pub fn segment_fd(&self) -> BorrowedFd<'_> {
        self.inner().segment.fd()
    }
    /// Whether the segment was made for this sample alone, and is retired when it goes.
    pub fn retires(&self) -> bool {
        self.inner().segment.is_alone()
    }
    /// `hook` is told once the segment is gone (a link that announced it; nothing for a pool's
    /// segment, which is never retired). Called once per link that announces it.
    pub fn on_retire(&self, hook: Weak<dyn Retire>) {
        self.inner().segment.on_retire(hook);
    }
    /// Where the sample starts in the segment.
    pub fn offset(&self) -> u64 {
        self.inner().at() as u64
    }
    pub fn len(&self) -> usize {
        self.inner().len
    }
    pub fn is_empty(&self) -> bool {
        self.inner().len == 0
    }
}

impl AsRef<[u8]> for Slot {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: inside the segment; the writer (`SlotMut`) was consumed by `freeze`, and the
        // slot is not on the free list (so not rewritten) while this `Slot` lives.
        unsafe {
            self.inner()
                .segment
                .bytes(self.inner().at(), self.inner().len)
        }
    }
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Slot(segment {}, offset {}, {} bytes)",
            self.inner().segment.id.0,
            self.inner().at(),
            self.inner().len
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_slot_is_a_quarter_of_the_pool_as_a_power_of_two_within_its_bounds() {
        const MIB: usize = 1 << 20;
        // The default pool: an 8K image (100 MB) fits a slot.
        assert_eq!(largest_slot(512 * MIB), 128 * MIB);
        assert_eq!(PoolConfig::default().max_slot, 128 * MIB);
        assert!(largest_slot(512 * MIB) >= 100_000_000);
        assert_eq!(largest_slot(2048 * MIB), 512 * MIB);
        // Not a power of two: the power below its quarter.
        assert_eq!(largest_slot(1000 * MIB), 128 * MIB);
        // Small pools keep the floor (such a slot only fits an empty pool: then copies).
        assert_eq!(largest_slot(64 * MIB), 64 * MIB);
        assert_eq!(largest_slot(0), 64 * MIB);
        // However large the pool, a slot's length fits SHM_REF's 32 bits.
        assert_eq!(largest_slot(usize::MAX), 2048 * MIB);
        assert_eq!(largest_slot(64 << 30), 2048 * MIB);
    }

    fn pool(max_bytes: usize) -> Pool {
        Pool::new(PoolConfig {
            min_slot: 4096,
            max_slot: 1 << 20,
            max_bytes,
            segment_bytes: 64 * 1024,
        })
        .expect("memfd works here")
    }

    #[test]
    fn a_slot_is_reused_once_every_clone_is_gone() {
        let p = pool(1 << 20);
        let mut s = p.alloc(5000).unwrap();
        s.as_mut_slice().fill(7);
        let a = s.freeze();
        let b = a.clone();
        assert_eq!(a.as_ref(), &[7u8; 5000][..]);
        assert_eq!(p.stats().slots_in_use, 1);
        drop(a);
        assert_eq!(p.stats().slots_in_use, 1);
        let (seg, off) = (b.segment(), b.offset());
        drop(b);
        assert_eq!(p.stats().slots_in_use, 0);
        let again = p.alloc(6000).unwrap().freeze();
        assert_eq!((again.segment(), again.offset()), (seg, off));
    }

    #[test]
    fn a_frozen_slots_cell_is_reused_and_its_slot_given_back() {
        let p = pool(1 << 20);
        let a = p.alloc(5000).unwrap().freeze();
        let cell = Arc::as_ptr(a.0.as_ref().unwrap());
        let b = a.clone();
        drop(a);
        drop(b);
        assert_eq!(p.stats().slots_in_use, 0);
        let again = p.alloc(5000).unwrap().freeze();
        assert_eq!(Arc::as_ptr(again.0.as_ref().unwrap()), cell);
        assert_eq!(p.stats().slots_in_use, 1);
        drop(again);
        assert_eq!(p.stats().slots_in_use, 0);
        // A slot that outlives its pool's handles goes back nowhere, and nothing breaks.
        let last = p.alloc(100).unwrap().freeze();
        drop(p);
        assert_eq!(last.len(), 100);
    }

    #[test]
    fn a_sample_can_start_inside_its_slot() {
        let p = pool(1 << 20);
        let mut s = p.alloc(100).unwrap();
        s.skip_front(4);
        assert_eq!(s.len(), 96);
        s.as_mut_slice().fill(9);
        let s = s.freeze();
        assert_eq!(s.offset() % 4096, 4);
        assert_eq!(s.as_ref(), &[9u8; 96][..]);
        let fd = s.segment_fd().try_clone_to_owned().unwrap();
        let m = Arc::new(crate::Mapping::map(fd, s.segment_size()).unwrap());
        struct Nop;
        impl crate::Release for Nop {
            fn release(&self, _: u64) {}
        }
        let nop = Arc::new(Nop);
        let weak: std::sync::Weak<dyn crate::Release> = Arc::downgrade(&nop) as _;
        let v = m.view(s.offset(), s.len() as u64, weak, 1).unwrap();
        assert_eq!(v.as_ref(), s.as_ref());
        let (seg, off) = (s.segment(), s.offset() - 4);
        drop((v, s));
        assert_eq!(p.stats().slots_in_use, 0);
        let again = p.alloc(100).unwrap().freeze();
        assert_eq!(
            (again.segment(), again.offset()),
            (seg, off),
            "the whole slot came back"
        );
    }

    #[test]
    fn the_pool_is_bounded() {
        let p = pool(64 * 1024);
        let held: Vec<Slot> = (0..8).map(|_| p.alloc(8192).unwrap().freeze()).collect();
        assert!(p.alloc(1).is_none());
        assert_eq!(p.stats().bytes, 64 * 1024);
        drop(held);
        assert!(p.alloc(8192).is_some());
    }

    /// Counts what it is told.
    #[derive(Default)]
    struct Retired(Mutex<Vec<(SegmentId, u64)>>);
    impl Retire for Retired {
        fn retire(&self, segment: SegmentId, size: u64) {
            lock(&self.0).push((segment, size));
        }
    }

    #[test]
    fn a_sample_above_the_largest_slot_gets_a_segment_that_is_retired_when_it_goes() {
        let p = pool(4 << 20);
        let len = (1 << 20) + 10;
        let size = (1 << 20) + 4096;
        let mut s = p.alloc(len).expect("a segment of its own");
        s.as_mut_slice().fill(3);
        let a = s.freeze();
        assert!(a.retires());
        assert_eq!(
            (a.len(), a.offset(), a.segment_size()),
            (len, 0, size as u64)
        );
        assert_eq!((p.stats().alone, p.stats().alone_bytes), (1, size));
        assert_eq!(p.stats().bytes, 0, "not the pool's");
        // Two links announce it; one of them goes first.
        let (one, two) = (Arc::new(Retired::default()), Arc::new(Retired::default()));
        let gone = Arc::new(Retired::default());
        for hook in [&one, &two, &gone] {
            a.on_retire(Arc::downgrade(hook) as Weak<dyn Retire>);
        }
        drop(gone);
        let b = a.clone();
        drop(a);
        assert!(lock(&one.0).is_empty(), "a clone still holds it");
        let id = b.segment();
        drop(b);
        let told = vec![(id, size as u64)];
        assert_eq!(*lock(&one.0), told);
        assert_eq!(*lock(&two.0), told);
        // Its memory is kept for the next one...
        let st = p.stats();
        assert_eq!((st.alone, st.alone_spare, st.alone_bytes), (0, 1, size));
        // ...which takes it under a new number, its bytes as they were (a sample writes all
        // of its slot).
        let mut next = p.alloc(len - 5).unwrap();
        assert_eq!(next.as_mut_slice()[0], 3, "the same memory");
        let next = next.freeze();
        assert_ne!(next.segment(), id, "a retired number is never used again");
        assert_eq!(next.segment_size(), size as u64);
        let st = p.stats();
        assert_eq!((st.alone, st.alone_spare, st.alone_bytes), (1, 0, size));
        // A pool's slot is never retired.
        let pooled = p.alloc(100).unwrap().freeze();
        assert!(!pooled.retires());
        let never = Arc::new(Retired::default());
        pooled.on_retire(Arc::downgrade(&never) as Weak<dyn Retire>);
        drop(pooled);
        assert!(lock(&never.0).is_empty());
    }

    #[test]
    fn segments_of_their_own_and_their_kept_memory_are_bounded() {
        const MIB: usize = 1 << 20;
        let p = pool(4 * MIB);
        // Alive at once: at most twice max_bytes.
        let a = p.alloc(5 * MIB).unwrap().freeze();
        assert!(
            p.alloc(4 * MIB).is_none(),
            "9 MiB alive would pass the 8 MiB bound"
        );
        assert!(
            p.alloc(MIB).is_some(),
            "1 MiB is a pool slot, not bounded by them"
        );
        let b = p.alloc(3 * MIB).unwrap().freeze();
        // Kept: at most max_bytes; the 5 MiB one is let go, the 3 MiB one kept.
        drop(a);
        drop(b);
        let st = p.stats();
        assert_eq!((st.alone, st.alone_spare, st.alone_bytes), (0, 1, 3 * MIB));
        // Kept memory more than twice a sample's size is not taken for it, and goes first
        // when a new segment needs the room.
        let small = p.alloc(MIB + 1).unwrap().freeze();
        assert_eq!(small.segment_size(), (MIB + 4096) as u64);
        let big = p.alloc(7 * MIB - 8192).unwrap().freeze();
        let st = p.stats();
        assert_eq!(
            (st.alone, st.alone_spare),
            (2, 0),
            "the kept 3 MiB gave way"
        );
        drop((small, big));
        assert!(p.alloc(usize::MAX).is_none());
        // Kept memory goes with the pool.
        drop(p);
    }

    #[test]
    fn a_reader_maps_the_segment_read_only_and_sees_the_bytes() {
        let p = pool(1 << 20);
        let mut s = p.alloc(10_000).unwrap();
        for (i, b) in s.as_mut_slice().iter_mut().enumerate() {
            *b = i as u8;
        }
        let s = s.freeze();
        let fd = s.segment_fd().try_clone_to_owned().unwrap();
        let m = Arc::new(crate::Mapping::map(fd, s.segment_size()).unwrap());
        struct Count(std::sync::atomic::AtomicU64);
        impl crate::Release for Count {
            fn release(&self, token: u64) {
                self.0
                    .fetch_add(token, std::sync::atomic::Ordering::Relaxed);
            }
        }
        let c = Arc::new(Count(Default::default()));
        let weak: std::sync::Weak<dyn crate::Release> = Arc::downgrade(&c) as _;
        let v = m.view(s.offset(), s.len() as u64, weak.clone(), 5).unwrap();
        assert_eq!(v.as_ref(), s.as_ref());
        assert!(m.view(s.segment_size() - 1, 2, weak, 1).is_none());
        drop(v);
        assert_eq!(c.0.load(std::sync::atomic::Ordering::Relaxed), 5);
        // A writable mapping of the sealed descriptor is refused.
        let fd = s.segment_fd();
        // SAFETY: a mapping we only try to create (and unmap) in this test.
        let w = unsafe {
            nix::sys::mman::mmap(
                None,
                std::num::NonZeroUsize::new(4096).unwrap(),
                nix::sys::mman::ProtFlags::PROT_WRITE,
                nix::sys::mman::MapFlags::MAP_SHARED,
                fd,
                0,
            )
        };
        assert!(w.is_err(), "F_SEAL_FUTURE_WRITE refuses writable mappings");
    }

    #[test]
    fn an_unsealed_or_wrongly_sized_descriptor_is_refused() {
        let fd =
            nix::sys::memfd::memfd_create(c"t", nix::sys::memfd::MemFdCreateFlag::empty()).unwrap();
        nix::unistd::ftruncate(&fd, 8192).unwrap();
        assert!(matches!(
            crate::Mapping::map(fd.try_clone().unwrap(), 8192),
            Err(crate::MapError::NotSealed)
        ));
        let p = pool(1 << 20);
        let s = p.alloc(100).unwrap().freeze();
        let fd = s.segment_fd().try_clone_to_owned().unwrap();
        assert!(matches!(
            crate::Mapping::map(fd, s.segment_size() + 4096),
            Err(crate::MapError::SizeMismatch { .. })
        ));
    }
}
