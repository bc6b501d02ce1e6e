//! Copying a run of bytes into memory a serialization writes: the one copy a large sequence
//! makes into a shared-memory slot or a buffer on publish. (A take copies out of the sample
//! with plain `memcpy`, `decode.rs` says why.) docs/cdr.md has the measurements in full.
//!
//! **Into a slot other processes read** ([`to_shared`]): runs of at least [`STREAM_MIN`] bytes
//! are written with non-temporal stores on x86-64, which go to memory without first reading
//! each line into this core's cache. With ordinary stores the writer first fetches every line
//! of the slot from the reader that last held it, and leaves the bytes modified in its own
//! cache for the reader to fetch back. Measured on this project's 2-core AMD EPYC machine,
//! two processes on the two CPUs handing 1 MiB through four shared slots (median of 7): 131
//! µs per message with `rep movsb` both sides, 64 with non-temporal stores and `memcpy` out
//! (94 with `rep movsb` out); one message at a time, 269 against 114. Below 256 KiB the rmw's
//! own benchmark measured no gain (64 KiB: the slot's lines stay in the writer's 512 KiB L2).
//! SSE2's 16-byte stores measure the same as AVX2's 32-byte ones, and SSE2 is in every
//! x86-64, so no feature check.
//!
//! **Into ordinary memory** ([`bytes`]): runs of at least [`LARGE`] bytes are copied with `rep
//! movsb` on x86-64. glibc's `memcpy` does the same on Intel up to its non-temporal threshold,
//! but on AMD (Zen 3 on) it stops using `rep movsb` above the L2 cache size and falls back to a
//! vector loop with ordinary stores. Measured on the same machine (glibc 2.36, a 4 MiB copy
//! whose source and destination are not in the cache): p50 186-226 µs with `memcpy`, 140 µs
//! with `rep movsb`; 1 MiB 44-51 µs against 41-49 µs; hot, both are alike (71-73 µs at 4 MiB).
//! Below [`LARGE`] (and on other architectures) it is `copy_from_slice`, i.e. `memcpy`.

/// The smallest run [`to_shared`] writes with non-temporal stores.
pub const STREAM_MIN: usize = 256 << 10;

/// The smallest run copied with `rep movsb`.
pub const LARGE: usize = 1 << 20;

/// `dst.copy_from_slice(src)`: panics when the lengths differ (callers size `dst` from `src`).
pub fn bytes(dst: &mut [u8], src: &[u8]) {
    assert_eq!(
        dst.len(),
        src.len(),
        "copy between runs of different lengths"
    );
    #[cfg(target_arch = "x86_64")]
    if src.len() >= LARGE {
        let (d, s, n) = (dst.as_mut_ptr(), src.as_ptr(), src.len());
        // SAFETY: `d` and `s` are valid for `n` bytes (two slices of that length), and do not
        // overlap (one is borrowed mutably, the other shared). `rep movsb` copies `rcx` bytes
        // from `rsi` to `rdi` upwards (the ABI guarantees a clear direction flag at a call),
        // touches no other memory, leaves the flags as they were and uses no stack.
        unsafe {
            std::arch::asm!(
                "rep movsb",
                inout("rcx") n => _,
                inout("rdi") d => _,
                inout("rsi") s => _,
                options(nostack, preserves_flags)
            );
        }
        return;
    }
    dst.copy_from_slice(src);
}

/// `dst.copy_from_slice(src)` for a `dst` that another process reads next (a shared-memory
/// slot): from [`STREAM_MIN`] bytes on x86-64 the stores bypass this core's cache, and they are
/// all visible before any store the caller makes after this returns (the sample's hand-off).
pub fn to_shared(dst: &mut [u8], src: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    if src.len() >= STREAM_MIN && dst.len() == src.len() {
        // Ordinary copy up to dst's first 16-byte boundary, streamed 64 bytes at a time after it,
        // the last partial 64 bytes ordinary again.
        let head = dst.as_ptr().align_offset(16).min(src.len());
        let body = (src.len() - head) & !63;
        let (d_head, d_rest) = dst.split_at_mut(head);
        let (s_head, s_rest) = src.split_at(head);
        let (d_body, d_tail) = d_rest.split_at_mut(body);
        let (s_body, s_tail) = s_rest.split_at(body);
        d_head.copy_from_slice(s_head);
        stream(d_body, s_body);
        d_tail.copy_from_slice(s_tail);
        return;
    }
    bytes(dst, src);
}

/// Non-temporal copy of `src` (a multiple of 64 bytes long) into `dst` (as long, 16-aligned).
#[cfg(target_arch = "x86_64")]
fn stream(dst: &mut [u8], src: &[u8]) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
    debug_assert!(dst.len() == src.len() && src.len().is_multiple_of(64));
    debug_assert!(dst.as_ptr().align_offset(16) == 0);
    for (d, s) in dst.chunks_exact_mut(64).zip(src.chunks_exact(64)) {
        let d = d.as_mut_ptr().cast::<__m128i>();
        let s = s.as_ptr().cast::<__m128i>();
        // SAFETY: SSE2 is part of x86-64. `s` and `d` each point to 64 valid bytes (a chunk of
        // the slices), `d` is 16-aligned (dst is, and chunks are 64 long) as `_mm_stream_si128`
        // requires, and `_mm_loadu_si128` takes any alignment.
        unsafe {
            let (a, b, c, e) = (
                _mm_loadu_si128(s),
                _mm_loadu_si128(s.add(1)),
                _mm_loadu_si128(s.add(2)),
                _mm_loadu_si128(s.add(3)),
            );
            _mm_stream_si128(d, a);
            _mm_stream_si128(d.add(1), b);
            _mm_stream_si128(d.add(2), c);
            _mm_stream_si128(d.add(3), e);
        }
    }
    // Non-temporal stores are weakly ordered: without the fence, the store that hands the sample
    // to its reader could become visible before the bytes do.
    // SAFETY: SSE is part of x86-64; the fence touches no memory.
    unsafe { _mm_sfence() };
}

#[cfg(test)]
mod tests {
    #[test]
    fn copies_small_and_large_runs_exactly() {
        for n in [
            0,
            1,
            63,
            4096,
            super::LARGE - 1,
            super::LARGE,
            super::LARGE + 13,
            3 << 20,
        ] {
            let src: Vec<u8> = (0..n).map(|i| (i * 131 + 7) as u8).collect();
            let mut dst = vec![0xeeu8; n + 2];
            super::bytes(&mut dst[1..n + 1], &src);
            assert_eq!(&dst[1..n + 1], &src[..], "{n} bytes");
            assert_eq!(
                (dst[0], dst[n + 1]),
                (0xee, 0xee),
                "{n} bytes: nothing around it written"
            );
        }
    }

    #[test]
    fn copies_to_shared_memory_exactly_at_every_alignment() {
        let n_max = super::STREAM_MIN * 3 + 77;
        let src: Vec<u8> = (0..n_max + 64).map(|i| (i * 37 + 11) as u8).collect();
        for n in [
            0,
            5,
            super::STREAM_MIN - 1,
            super::STREAM_MIN,
            super::STREAM_MIN + 63,
            n_max,
        ] {
            for (d_off, s_off) in [(0, 0), (1, 0), (0, 3), (7, 9), (15, 1), (16, 16)] {
                let mut dst = vec![0xeeu8; n + 32];
                let s = &src[s_off..s_off + n];
                super::to_shared(&mut dst[d_off..d_off + n], s);
                assert_eq!(&dst[d_off..d_off + n], s, "{n} bytes at {d_off}/{s_off}");
                assert!(
                    dst[..d_off]
                        .iter()
                        .chain(&dst[d_off + n..])
                        .all(|&b| b == 0xee),
                    "{n} bytes at {d_off}/{s_off}: nothing around it written"
                );
            }
        }
    }

    #[test]
    #[should_panic(expected = "different lengths")]
    fn different_lengths_panic_like_copy_from_slice() {
        super::bytes(&mut [0u8; 4], &[1u8; 5]);
    }
}
