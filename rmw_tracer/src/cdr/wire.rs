//! The CDR byte format: encapsulation header, alignment, primitive encodings. No ROS, no unsafe.
//!
//! ```text
//!  0      1      2      3      4 ...
//! +------+------+------+------+---------------------------------------------+
//! | 0x00 | 0x01 | 0x00 | 0x00 | body: fields in declaration order           |
//! +------+------+------+------+---------------------------------------------+
//!   encapsulation  options      each primitive of size n (1, 2, 4, 8) starts at a body offset
//!   CDR_LE (XCDR1)              that is a multiple of n (XCDR1: 8-byte types align to 8);
//!                               padding bytes are zero. Offsets count from byte 4.
//! string:   u32 length incl. NUL | bytes | 0x00
//! wstring:  u32 code units (no terminator) | each UTF-16 code unit as a u32
//! sequence: u32 element count | elements        array: elements only
//! ```
//!
//! This is what Fast DDS 2.14 / fastcdr 2.2 (XCDRv1) writes for ROS 2 Jazzy, checked byte for
//! byte by `ros_tests/test_cdr.py`.

use super::CdrError;

/// Length of the encapsulation header in front of every serialized message.
pub const HEADER_LEN: usize = 4;
/// The header this serializer writes: CDR little endian, options zero.
pub const HEADER_CDR_LE: [u8; 4] = [0x00, 0x01, 0x00, 0x00];

/// Where encoded bytes go: a buffer, or a counter that only measures (the size pass).
pub trait Sink {
    /// Bytes written since the start of the body (after the header).
    fn body_pos(&self) -> usize;
    /// Appends `n` zero bytes.
    fn zeros(&mut self, n: usize);
    fn put(&mut self, bytes: &[u8]);

    /// Pads with zeros so that the next byte starts at a body offset that is a multiple of `n`.
    fn align(&mut self, n: usize) {
        let pad = padding(self.body_pos(), n);
        if pad != 0 {
            self.zeros(pad);
        }
    }
    fn u8(&mut self, v: u8) {
        self.put(&[v]);
    }
    fn u16(&mut self, v: u16) {
        self.align(2);
        self.put(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.align(4);
        self.put(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.align(8);
        self.put(&v.to_le_bytes());
    }
    /// A length or count prefix; CDR has 32 bits for it.
    fn len_prefix(&mut self, len: usize, what: &str) -> Result<(), CdrError> {
        let v = u32::try_from(len).map_err(|_| CdrError::TooLong {
            what: what.to_string(),
            len,
        })?;
        self.u32(v);
        Ok(())
    }
    /// A CDR string: length including the terminating NUL, the bytes, the NUL.
    fn string(&mut self, bytes: &[u8], what: &str) -> Result<(), CdrError> {
        self.len_prefix(bytes.len() + 1, what)?;
        self.put(bytes);
        self.u8(0);
        Ok(())
    }
    /// A CDR wstring as fastcdr writes it: code-unit count, then each unit widened to 32 bits.
    fn wstring(&mut self, units: &[u16], what: &str) -> Result<(), CdrError> {
        self.len_prefix(units.len(), what)?;
        for &u in units {
            self.u32(u32::from(u));
        }
        Ok(())
    }
}

/// Padding needed at body offset `pos` before an item aligned to `n` (a power of two).
pub fn padding(pos: usize, n: usize) -> usize {
    debug_assert!(n.is_power_of_two());
    pos.wrapping_neg() & (n - 1)
}

/// Writes into a `Vec<u8>` that already holds the header (or anything: `origin` marks the body).
pub struct VecSink<'a> {
    buf: &'a mut Vec<u8>,
    origin: usize,
}

impl<'a> VecSink<'a> {
    /// Clears `buf` and writes the encapsulation header.
    pub fn with_header(buf: &'a mut Vec<u8>) -> Self {
        buf.clear();
        buf.extend_from_slice(&HEADER_CDR_LE);
        VecSink {
            buf,
            origin: HEADER_LEN,
        }
    }
}

impl Sink for VecSink<'_> {
    fn body_pos(&self) -> usize {
        self.buf.len() - self.origin
    }
    fn zeros(&mut self, n: usize) {
        self.buf.resize(self.buf.len() + n, 0);
    }
    fn put(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }
}

/// Where a serialization's bytes are read next, which decides how large runs are copied
/// (`copy.rs` has the measurements).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Destination {
    /// Memory this thread, or the kernel on its behalf, reads next (a buffer the socket's send
    /// copies at once): ordinary stores, so the bytes are in this core's cache.
    Local,
    /// A shared-memory slot that subscribers read from other cores: large runs bypass this
    /// core's cache.
    Shared,
}

/// Writes into a slice sized beforehand by the size pass (a shared-memory slot, a block of the
/// buffer pool): header, then body. Writing past the end is refused (`overflowed`), never a
/// panic.
pub struct SliceSink<'a> {
    buf: &'a mut [u8],
    pos: usize,
    overflowed: bool,
    destination: Destination,
}

impl<'a> SliceSink<'a> {
    /// Writes the encapsulation header at the start of `buf`.
    pub fn with_header(buf: &'a mut [u8], destination: Destination) -> Self {
        let mut s = SliceSink {
            buf,
            pos: 0,
            overflowed: false,
            destination,
        };
        s.put(&HEADER_CDR_LE);
        s
    }
    /// Bytes written, header included.
    pub fn written(&self) -> usize {
        self.pos
    }
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }
    fn take(&mut self, n: usize) -> Option<&mut [u8]> {
        match self.buf.get_mut(self.pos..self.pos + n) {
            Some(dst) if !self.overflowed => {
                self.pos += n;
                Some(dst)
            }
            _ => {
                self.overflowed = true;
                None
            }
        }
    }
}

impl Sink for SliceSink<'_> {
    fn body_pos(&self) -> usize {
        self.pos - HEADER_LEN
    }
    fn zeros(&mut self, n: usize) {
        if let Some(dst) = self.take(n) {
            dst.fill(0);
        }
    }
    fn put(&mut self, bytes: &[u8]) {
        let destination = self.destination;
        if let Some(dst) = self.take(bytes.len()) {
            match destination {
                Destination::Local => super::copy::bytes(dst, bytes),
                Destination::Shared => super::copy::to_shared(dst, bytes),
            }
        }
    }
}

/// Counts the bytes a serialization would write.
#[derive(Default)]
pub struct SizeSink {
    pos: usize,
}

impl SizeSink {
    /// The total size, header included.
    pub fn total(&self) -> usize {
        HEADER_LEN + self.pos
    }
}

impl Sink for SizeSink {
    fn body_pos(&self) -> usize {
        self.pos
    }
    fn zeros(&mut self, n: usize) {
        self.pos += n;
    }
    fn put(&mut self, bytes: &[u8]) {
        self.pos += bytes.len();
    }
}

/// Reads a CDR body, every read bounds-checked against the input.
pub struct Reader<'a> {
    body: &'a [u8],
    pos: usize,
    little_endian: bool,
}

macro_rules! read_prim {
    ($name:ident, $t:ty) => {
        pub fn $name(&mut self) -> Result<$t, CdrError> {
            const N: usize = std::mem::size_of::<$t>();
            let b: [u8; N] = self.take_aligned(N, N)?.try_into().expect("N bytes");
            Ok(if self.little_endian {
                <$t>::from_le_bytes(b)
            } else {
                <$t>::from_be_bytes(b)
            })
        }
    };
}

impl<'a> Reader<'a> {
    /// Checks the encapsulation header: plain CDR (XCDR1) in either byte order. Bytes after the
    /// message are allowed (Fast DDS's rmw_serialize leaves its size estimate's slack there).
    pub fn new(input: &'a [u8]) -> Result<Self, CdrError> {
        if input.len() < HEADER_LEN {
            return Err(CdrError::Truncated {
                need: HEADER_LEN,
                at: 0,
                have: input.len(),
            });
        }
        let little_endian = match [input[0], input[1]] {
            [0x00, 0x01] => true,
            [0x00, 0x00] => false,
            [a, b] => return Err(CdrError::Encapsulation(u16::from_be_bytes([a, b]))),
        };
        Ok(Reader {
            body: &input[HEADER_LEN..],
            pos: 0,
            little_endian,
        })
    }

    /// Bytes left after the current position.
    pub fn remaining(&self) -> usize {
        self.body.len() - self.pos
    }

    /// Current offset in the whole input, header included (for error messages).
    pub fn offset(&self) -> usize {
        HEADER_LEN + self.pos
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], CdrError> {
        if n > self.remaining() {
            return Err(CdrError::Truncated {
                need: n,
                at: self.offset(),
                have: self.remaining(),
            });
        }
        let s = &self.body[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Skips the padding before an item aligned to `align`, then takes `n` bytes; a shortfall
    /// reports padding and item together.
    pub fn take_aligned(&mut self, n: usize, align: usize) -> Result<&'a [u8], CdrError> {
        let pad = padding(self.pos, align);
        let need = pad.saturating_add(n);
        if need > self.remaining() {
            return Err(CdrError::Truncated {
                need,
                at: self.offset(),
                have: self.remaining(),
            });
        }
        self.pos += pad;
        self.take(n)
    }

    /// A run of `count` primitives of `size` bytes (aligned to `size`).
    pub fn take_run(&mut self, count: usize, size: usize) -> Result<&'a [u8], CdrError> {
        if count == 0 {
            return Ok(&[]);
        }
        self.take_aligned(count.saturating_mul(size), size)
    }

    pub fn is_little_endian(&self) -> bool {
        self.little_endian
    }

    pub fn u8(&mut self) -> Result<u8, CdrError> {
        Ok(self.take(1)?[0])
    }
    read_prim!(u16, u16);
    read_prim!(u32, u32);
    read_prim!(u64, u64);

    /// A bool: fastcdr accepts only 0 and 1.
    pub fn bool(&mut self) -> Result<bool, CdrError> {
        let at = self.offset();
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(CdrError::Malformed {
                at,
                what: format!("bool byte {v:#04x} (must be 0 or 1)"),
            }),
        }
    }

    /// A length or count prefix, checked against the bytes left: at least `min_item` bytes per
    /// item must follow, so a garbled length never leads to a large allocation.
    pub fn count(&mut self, min_item: usize) -> Result<usize, CdrError> {
        let at = self.offset();
        let n = self.u32()? as usize;
        let need = n.saturating_mul(min_item.max(1));
        if need > self.remaining() {
            return Err(CdrError::Malformed {
                at,
                what: format!(
                    "length {n} needs at least {need} more bytes, only {} left",
                    self.remaining()
                ),
            });
        }
        Ok(n)
    }

    /// A CDR string's bytes without the terminator. Like fastcdr, a length of 0 is the empty
    /// string and a missing final NUL is tolerated.
    pub fn string(&mut self) -> Result<&'a [u8], CdrError> {
        let len = self.count(1)?;
        let s = self.take(len)?;
        Ok(match s.split_last() {
            Some((0, rest)) => rest,
            _ => s,
        })
    }

    /// A CDR wstring (32-bit code units) into `out` as UTF-16 code units.
    pub fn wstring(&mut self, out: &mut Vec<u16>) -> Result<(), CdrError> {
        let len = self.count(4)?;
        out.clear();
        out.reserve(len);
        for _ in 0..len {
            let at = self.offset();
            let u = self.u32()?;
            let unit = u16::try_from(u).map_err(|_| CdrError::Malformed {
                at,
                what: format!("wstring code unit {u:#x} does not fit UTF-16"),
            })?;
            out.push(unit);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(f: impl FnOnce(&mut VecSink)) -> Vec<u8> {
        let mut v = Vec::new();
        let mut s = VecSink::with_header(&mut v);
        f(&mut s);
        v
    }

    #[test]
    fn header_is_cdr_le_xcdr1() {
        assert_eq!(encode(|_| {}), vec![0, 1, 0, 0]);
    }

    #[test]
    fn alignment_is_relative_to_the_body_and_8_byte_types_align_to_8() {
        // bool, then a u64: XCDR1 pads to body offset 8 (XCDR2 would use 4).
        let b = encode(|s| {
            s.u8(1);
            s.u64(0x0102_0304_0506_0708);
        });
        assert_eq!(&b[4..], &[1, 0, 0, 0, 0, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1]);
        // u8, u16, u8, u32: 2-byte and 4-byte alignment with zero padding.
        let b = encode(|s| {
            s.u8(0xaa);
            s.u16(0x1122);
            s.u8(0xbb);
            s.u32(0x3344_5566);
        });
        assert_eq!(
            &b[4..],
            &[0xaa, 0, 0x22, 0x11, 0xbb, 0, 0, 0, 0x66, 0x55, 0x44, 0x33]
        );
    }

    #[test]
    fn strings_count_the_terminator_wstrings_do_not() {
        let b = encode(|s| {
            s.string(b"hi", "f").unwrap();
            s.wstring(&[0x61, 0xd83d], "g").unwrap();
        });
        assert_eq!(
            &b[4..],
            &[3, 0, 0, 0, b'h', b'i', 0, 0, 2, 0, 0, 0, 0x61, 0, 0, 0, 0x3d, 0xd8, 0, 0]
        );
        let empty = encode(|s| s.string(b"", "f").unwrap());
        assert_eq!(&empty[4..], &[1, 0, 0, 0, 0]);
    }

    #[test]
    fn size_sink_agrees_with_vec_sink() {
        let body = |s: &mut dyn Sink| {
            s.u8(1);
            s.string(b"abc", "x").unwrap();
            s.u64(7);
            s.u16(3);
            s.wstring(&[1, 2, 3], "y").unwrap();
        };
        let mut v = Vec::new();
        body(&mut VecSink::with_header(&mut v));
        let mut n = SizeSink::default();
        body(&mut n);
        assert_eq!(n.total(), v.len());
    }

    #[test]
    fn reader_round_trips_and_checks_padding_positions() {
        let b = encode(|s| {
            s.u8(1);
            s.u64(u64::MAX - 1);
            s.string(b"hello", "s").unwrap();
            s.u16(0xbeef);
            s.wstring(&[0x30cf, 0x30ed], "w").unwrap();
        });
        let mut r = Reader::new(&b).unwrap();
        assert!(r.bool().unwrap());
        assert_eq!(r.u64().unwrap(), u64::MAX - 1);
        assert_eq!(r.string().unwrap(), b"hello");
        assert_eq!(r.u16().unwrap(), 0xbeef);
        let mut w = Vec::new();
        r.wstring(&mut w).unwrap();
        assert_eq!(w, vec![0x30cf, 0x30ed]);
        assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn big_endian_input_is_read() {
        let b = [0, 0, 0, 0, 0x12, 0x34, 0, 0, 0, 0, 0, 5];
        let mut r = Reader::new(&b).unwrap();
        assert_eq!(r.u16().unwrap(), 0x1234);
        assert_eq!(r.u32().unwrap(), 5);
    }

    #[test]
    fn malformed_inputs_are_errors() {
        // Header too short, unknown encapsulation (PL_CDR_LE, XCDR2).
        assert!(matches!(
            Reader::new(&[0, 1]),
            Err(CdrError::Truncated { .. })
        ));
        assert!(matches!(
            Reader::new(&[0, 3, 0, 0]),
            Err(CdrError::Encapsulation(3))
        ));
        assert!(matches!(
            Reader::new(&[0, 7, 0, 0]),
            Err(CdrError::Encapsulation(7))
        ));
        // Truncated primitive.
        let mut r = Reader::new(&[0, 1, 0, 0, 1, 2]).unwrap();
        assert!(matches!(
            r.u32(),
            Err(CdrError::Truncated {
                need: 4,
                at: 4,
                have: 2
            })
        ));
        // A bool that is neither 0 nor 1.
        let mut r = Reader::new(&[0, 1, 0, 0, 2]).unwrap();
        assert!(matches!(r.bool(), Err(CdrError::Malformed { at: 4, .. })));
        // A string length far beyond the input: refused before anything is allocated.
        let mut r = Reader::new(&[0, 1, 0, 0, 0xff, 0xff, 0xff, 0xff, b'a']).unwrap();
        assert!(matches!(r.string(), Err(CdrError::Malformed { at: 4, .. })));
        // A sequence count whose minimal element size does not fit.
        let mut r = Reader::new(&[0, 1, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).unwrap();
        assert!(r.count(8).is_err());
        // A wstring unit above 0xffff.
        let mut r = Reader::new(&[0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0]).unwrap();
        assert!(matches!(
            r.wstring(&mut Vec::new()),
            Err(CdrError::Malformed { at: 8, .. })
        ));
    }

    #[test]
    fn every_one_byte_truncation_of_a_message_fails_cleanly() {
        let b = encode(|s| {
            s.u8(1);
            s.string(b"abc", "s").unwrap();
            s.u64(9);
            s.wstring(&[1, 2], "w").unwrap();
        });
        for cut in 0..b.len() {
            let read = |input: &[u8]| -> Result<(), CdrError> {
                let mut r = Reader::new(input)?;
                r.bool()?;
                r.string()?;
                r.u64()?;
                r.wstring(&mut Vec::new())?;
                Ok(())
            };
            assert!(read(&b[..cut]).is_err(), "cut at {cut} must fail");
            assert!(read(&b).is_ok());
        }
    }
}
