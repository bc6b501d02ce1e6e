//! Recycled payload buffers: the memory of small and medium samples on the steady path.
//!
//! A message's bytes are written once (serialized by the rmw, or read from a socket by a link)
//! into a block of this pool and then shared by every holder (rings, edges, the recorder) as a
//! [`Payload`] that counts its holders. When the last holder drops it the block is free again,
//! and the next sample of its size class is written into it: no allocation, no page faults and
//! no zeroing on the steady path (docs/architecture.md, "Payload buffers").
//!
//! - **Size classes.** Blocks are `256 << 2i` bytes plus [`HEADROOM`] for `i` in `0..CLASSES`
//!   (768 B to 4 MiB + 512 B): a power-of-two payload with its CDR and frame headers fits the
//!   class of its size.
//! - **Bounded.** A class keeps at most `CLASS_BYTES / size` blocks (between 4 and 1024). Taking a
//!   buffer when every block of its class is held, or one larger than the largest class, is a
//!   plain allocation, counted in [`PoolStats::fallbacks`]: never a wait.
//! - **Refcounted.** A block is an `Arc`: the pool keeps one reference to every block it lent;
//!   a block whose only reference is the pool's (`Arc::get_mut` succeeds) has no holder left and
//!   is taken back. Writing needs the only reference, so a block is never written while shared.
//! - **Not zeroed.** A block is initialized once, when it is made (`calloc`: fresh pages need no
//!   memset); a reused one keeps the bytes of its earlier sample, which the writer overwrites
//!   up to the length it freezes: nothing past that length is ever read.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use super::Payload;

/// Size classes.
pub const CLASSES: usize = 8;
/// Bytes added to each class's power of two, for the headers around a power-of-two payload.
pub const HEADROOM: usize = 512;
/// The most bytes one class keeps in blocks...
const CLASS_BYTES: usize = 8 << 20;
/// ...but at least this many blocks: a 4 MiB ping-pong without shared memory holds the topic's
/// last sample, the one being published and the one being received.
const MIN_BLOCKS: usize = 4;
/// Lent blocks looked at for a free one per take when the free list is empty: the cost of a
/// take stays bounded however many samples the process holds.
const RECLAIM_SCAN: usize = 32;

/// The capacity of class `i`.
pub const fn class_size(i: usize) -> usize {
    (256 << (2 * i)) + HEADROOM
}

/// The largest buffer the pool serves; past it, [`BufferPool::take`] allocates.
pub const LARGEST: usize = class_size(CLASSES - 1);

/// One block: its bytes, initialized once.
pub(crate) struct Block {
    data: Box<[u8]>,
}

impl Block {
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.data
    }
}

#[derive(Default)]
struct Lists {
    /// Blocks with no holder, ready to be written.
    free: Vec<Arc<Block>>,
    /// The pool's reference to each block out: free again when it is the only one.
    lent: Vec<Arc<Block>>,
    /// Where the next reclaim scan starts in `lent`.
    cursor: usize,
    /// Blocks made: free, lent, or being written.
    made: usize,
}

struct Class {
    size: usize,
    max: usize,
    lists: Mutex<Lists>,
}

impl Class {
    fn new(size: usize) -> Class {
        let max = (CLASS_BYTES / size).clamp(MIN_BLOCKS, 1024);
        Class {
            size,
            max,
            lists: Mutex::new(Lists {
                free: Vec::with_capacity(max),
                lent: Vec::with_capacity(max),
                cursor: 0,
                made: 0,
            }),
        }
    }

    /// A block nobody holds: a free one, one taken back from `lent`, or a new one while the
    /// class is below its bound. None: every block is held.
    fn take(&self) -> Option<Arc<Block>> {
        let mut l = self.lists.lock();
        if let Some(b) = l.free.pop() {
            return Some(b);
        }
        let n = l.lent.len();
        let mut i = l.cursor.min(n);
        for _ in 0..n.min(RECLAIM_SCAN) {
            if i >= l.lent.len() {
                i = 0;
            }
            if Arc::get_mut(&mut l.lent[i]).is_some() {
                let b = l.lent.swap_remove(i);
                l.cursor = i;
                return Some(b);
            }
            i += 1;
        }
        l.cursor = i;
        if l.made < self.max {
            l.made += 1;
            return Some(Arc::new(Block {
                data: vec![0u8; self.size].into_boxed_slice(),
            }));
        }
        None
    }

    /// A block written and shared: the pool keeps a reference to know when it is free again.
    fn lend(&self, b: &Arc<Block>) {
        self.lists.lock().lent.push(b.clone());
    }

    /// A block taken and never shared (its writer gave up): free at once.
    fn give_back(&self, b: Arc<Block>) {
        self.lists.lock().free.push(b);
    }
}

/// What a pool holds and how often it could not serve.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Blocks made (they are kept: free, lent, or being written).
    pub blocks: usize,
    /// Bytes in those blocks.
    pub bytes: usize,
    /// Takes served by a plain allocation: the class was full, or the size past [`LARGEST`].
    pub fallbacks: u64,
}

/// A pool of recycled blocks in size classes. One per process ([`global`]); tests make their own.
pub struct BufferPool {
    classes: [Class; CLASSES],
    fallbacks: AtomicU64,
}

impl Default for BufferPool {
    fn default() -> Self {
        BufferPool {
            classes: std::array::from_fn(|i| Class::new(class_size(i))),
            fallbacks: AtomicU64::new(0),
        }
    }
}

/// The process's pool.
pub fn global() -> &'static BufferPool {
    static POOL: OnceLock<BufferPool> = OnceLock::new();
    POOL.get_or_init(BufferPool::default)
}

impl BufferPool {
    /// A buffer of `len` bytes to fill. Its bytes are whatever an earlier sample left (or zero):
    /// write all of what you freeze.
    pub fn take(&'static self, len: usize) -> BufMut {
        if let Some(c) = (0..CLASSES).find(|&i| class_size(i) >= len) {
            if let Some(block) = self.classes[c].take() {
                return BufMut {
                    inner: Inner::Pooled {
                        block: Some(block),
                        class: &self.classes[c],
                    },
                    len,
                };
            }
        }
        self.fallbacks.fetch_add(1, Ordering::Relaxed);
        BufMut {
            inner: Inner::Plain(vec![0u8; len]),
            len,
        }
    }

    pub fn stats(&self) -> PoolStats {
        let mut s = PoolStats {
            fallbacks: self.fallbacks.load(Ordering::Relaxed),
            ..PoolStats::default()
        };
        for c in &self.classes {
            let n = c.lists.lock().made;
            s.blocks += n;
            s.bytes += n * c.size;
        }
        s
    }
}

enum Inner {
    Pooled {
        /// Always Some until `freeze` or drop takes it.
        block: Option<Arc<Block>>,
        class: &'static Class,
    },
    Plain(Vec<u8>),
}

/// A buffer being written: the only handle to its memory. [`BufMut::freeze`] makes the
/// [`Payload`]; dropped unfrozen, the block is free again.
pub struct BufMut {
    inner: Inner,
    len: usize,
}

impl BufMut {
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Whether the memory is a pool block (not a fallback allocation).
    pub fn is_pooled(&self) -> bool {
        matches!(self.inner, Inner::Pooled { .. })
    }
    /// The buffer's `len` bytes, to write.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        match &mut self.inner {
            Inner::Pooled { block, .. } => {
                let b = block.as_mut().expect("a block until frozen");
                let data = &mut Arc::get_mut(b).expect("a taken block is ours alone").data;
                &mut data[..self.len]
            }
            Inner::Plain(v) => &mut v[..],
        }
    }
    /// Done writing: the first `n` bytes (at most `len`) as a payload to share.
    pub fn freeze(mut self, n: usize) -> Payload {
        let n = n.min(self.len);
        match &mut self.inner {
            Inner::Pooled { block, class } => {
                let b = block.take().expect("a block until frozen");
                class.lend(&b);
                Payload::from_block(b, 0..n)
            }
            Inner::Plain(v) => {
                let mut v = std::mem::take(v);
                v.truncate(n);
                Payload::from(v)
            }
        }
    }
}

impl Drop for BufMut {
    fn drop(&mut self) {
        if let Inner::Pooled { block, class } = &mut self.inner {
            if let Some(b) = block.take() {
                class.give_back(b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool() -> &'static BufferPool {
        Box::leak(Box::default())
    }

    #[test]
    fn a_block_is_reused_once_its_last_holder_drops_it() {
        let p = pool();
        let mut b = p.take(100);
        b.as_mut_slice().fill(7);
        let one = b.freeze(60);
        assert_eq!(one.as_ref(), &[7u8; 60][..]);
        let ptr = one.as_ref().as_ptr();
        let two = one.clone();
        drop(one);
        // Still held by `two`: another block.
        let other = p.take(100);
        assert!(other.is_pooled());
        let other = other.freeze(0);
        drop(two);
        let mut again = p.take(50);
        assert_eq!(again.as_mut_slice().as_ptr(), ptr);
        // Not zeroed: the earlier sample's bytes are there until overwritten.
        assert_eq!(again.as_mut_slice()[0], 7);
        drop(other);
        assert_eq!(p.stats().blocks, 2);
        assert_eq!(p.stats().fallbacks, 0);
    }

    #[test]
    fn an_unfrozen_buffer_goes_back_free() {
        let p = pool();
        let ptr = p.take(10).as_mut_slice().as_ptr();
        assert_eq!(p.take(10).as_mut_slice().as_ptr(), ptr);
        assert_eq!(p.stats().blocks, 1);
    }

    #[test]
    fn a_full_class_and_an_oversized_take_fall_back_and_are_counted() {
        let p = pool();
        let big = class_size(CLASSES - 1);
        let held: Vec<Payload> = (0..MIN_BLOCKS).map(|_| p.take(big).freeze(big)).collect();
        // The largest class keeps MIN_BLOCKS blocks: the next is a plain allocation.
        let next = p.take(big);
        assert!(!next.is_pooled());
        assert!(!p.take(LARGEST + 1).is_pooled());
        assert_eq!(p.stats().fallbacks, 2);
        assert_eq!(p.stats().blocks, MIN_BLOCKS);
        assert!(p.stats().bytes <= MIN_BLOCKS * big);
        drop(held);
        assert!(p.take(big).is_pooled());
    }

    #[test]
    fn classes_fit_power_of_two_payloads_with_their_headers() {
        for i in 0..CLASSES {
            let pow = 256usize << (2 * i);
            assert!(class_size(i) >= pow + 64);
        }
        const { assert!(LARGEST >= (4 << 20) + 64) };
    }
}
