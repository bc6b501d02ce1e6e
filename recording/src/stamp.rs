//! `sensor_time`: the `header.stamp` of a message, read straight from its CDR bytes.
//!
//! Definition: a type has a sensor time when one of its **top-level** fields is a
//! `std_msgs/Header` and every field before it has a fixed CDR size (primitives, fixed arrays
//! of primitives, `builtin_interfaces/Time` / `Duration`). Then the stamp sits at one offset
//! in every message of the type, computed once from the `ros2msg` definition text, and reading
//! it costs two loads: no deserialization. The first such Header wins; a Header after a string
//! or a sequence has no fixed offset and gives no sensor time (those types are rare: every
//! sensor_msgs / geometry_msgs `*Stamped` type has the Header first).
//!
//! A `std_msgs/msg/Header` message is its own header: its stamp is its first field.
//!
//! The offset follows XCDR1 as Fast DDS writes it (docs/cdr.md): alignment relative to the
//! byte after the 4-byte encapsulation header, a primitive of size n aligned to n. The stamp
//! is `int32 sec, uint32 nanosec`, aligned to 4.

/// Where the stamp lives in the CDR of one type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StampLocator {
    /// Offset of `sec` relative to the start of the body (after the encapsulation header).
    body_offset: usize,
}

impl StampLocator {
    /// For a type: `std_msgs/msg/Header` itself, else [`StampLocator::from_definition`].
    pub fn for_type(type_name: &str, definition: &str) -> Option<StampLocator> {
        if is_header(type_name) {
            return Some(StampLocator { body_offset: 0 });
        }
        StampLocator::from_definition(definition)
    }

    /// From the type's `ros2msg` definition (the top-level text, before the first `====`
    /// line); `None` when the type has no Header at a fixed offset.
    pub fn from_definition(definition: &str) -> Option<StampLocator> {
        let mut off = 0usize;
        for line in definition.lines() {
            if line.starts_with("====") {
                break;
            }
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let mut parts = line.split_whitespace();
            let (Some(ty), Some(name)) = (parts.next(), parts.next()) else {
                continue;
            };
            if name.contains('=') || parts.next().is_some_and(|t| t.starts_with('=')) {
                continue; // a constant: not in the wire format
            }
            if is_header(ty) {
                return Some(StampLocator {
                    body_offset: align(off, 4),
                });
            }
            let (elem, count) = match ty.split_once('[') {
                None => (ty, 1usize),
                Some((e, rest)) => {
                    let n = rest.strip_suffix(']')?;
                    // `T[]` and `T[<=N]` are sequences: their size varies.
                    (e, n.parse::<usize>().ok()?)
                }
            };
            let (size, alignment) = fixed_size(elem)?;
            off = align(off, alignment) + size * count;
        }
        None
    }

    /// The stamp as nanoseconds since the epoch; `None` when the bytes are too short, the
    /// encapsulation is not plain CDR, or the time is negative.
    pub fn read(&self, cdr: &[u8]) -> Option<u64> {
        let little = match cdr.get(..2)? {
            [0x00, 0x01] => true,
            [0x00, 0x00] => false,
            _ => return None,
        };
        let at = 4 + self.body_offset;
        let sec: [u8; 4] = cdr.get(at..at + 4)?.try_into().ok()?;
        let nsec: [u8; 4] = cdr.get(at + 4..at + 8)?.try_into().ok()?;
        let (sec, nsec) = if little {
            (i32::from_le_bytes(sec), u32::from_le_bytes(nsec))
        } else {
            (i32::from_be_bytes(sec), u32::from_be_bytes(nsec))
        };
        let sec = u64::try_from(sec).ok()?;
        Some(sec * 1_000_000_000 + u64::from(nsec))
    }
}

fn is_header(ty: &str) -> bool {
    matches!(ty, "Header" | "std_msgs/Header" | "std_msgs/msg/Header")
}

fn align(off: usize, n: usize) -> usize {
    off.div_ceil(n) * n
}

/// (size, alignment) of a field type whose CDR size never varies.
fn fixed_size(ty: &str) -> Option<(usize, usize)> {
    Some(match ty {
        "bool" | "byte" | "char" | "int8" | "uint8" => (1, 1),
        "int16" | "uint16" => (2, 2),
        "int32" | "uint32" | "float32" => (4, 4),
        "int64" | "uint64" | "float64" => (8, 8),
        "builtin_interfaces/Time"
        | "builtin_interfaces/msg/Time"
        | "builtin_interfaces/Duration"
        | "builtin_interfaces/msg/Duration" => (8, 4),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const IMU: &str = "# comment\nstd_msgs/Header header\n\ngeometry_msgs/Quaternion orientation\n";

    #[test]
    fn header_first_is_at_body_offset_zero() {
        let l = StampLocator::from_definition(IMU).unwrap();
        let mut cdr = vec![0, 1, 0, 0];
        cdr.extend_from_slice(&12i32.to_le_bytes());
        cdr.extend_from_slice(&345u32.to_le_bytes());
        cdr.extend_from_slice(&[1, 0, 0, 0, 0]); // frame_id ""
        assert_eq!(l.read(&cdr), Some(12_000_000_345));
    }

    #[test]
    fn header_after_fixed_fields_is_aligned() {
        // uint8 (1) -> pad to 8 for float64 (8 bytes) -> int16[3] (6) = 22 -> Header at 24.
        let d = "uint8 a\nint32 K=3\nfloat64 b\nint16[3] c\nstd_msgs/msg/Header header\n";
        let l = StampLocator::from_definition(d).unwrap();
        assert_eq!(l.body_offset, 24);
        let mut cdr = vec![0u8; 4 + 24];
        cdr[1] = 1;
        cdr.extend_from_slice(&1i32.to_le_bytes());
        cdr.extend_from_slice(&2u32.to_le_bytes());
        assert_eq!(l.read(&cdr), Some(1_000_000_002));
        // Big-endian encapsulation.
        let mut be = cdr.clone();
        be[1] = 0;
        be[28..32].copy_from_slice(&1i32.to_be_bytes());
        be[32..36].copy_from_slice(&2u32.to_be_bytes());
        assert_eq!(l.read(&be), Some(1_000_000_002));
    }

    #[test]
    fn a_header_is_its_own_header() {
        let l = StampLocator::for_type(
            "std_msgs/msg/Header",
            "builtin_interfaces/Time stamp\nstring frame_id\n",
        );
        assert_eq!(l, Some(StampLocator { body_offset: 0 }));
        assert!(StampLocator::for_type("std_msgs/msg/String", "string data\n").is_none());
    }

    #[test]
    fn no_fixed_offset_no_sensor_time() {
        assert!(StampLocator::from_definition("string data\n").is_none());
        assert!(StampLocator::from_definition("string a\nstd_msgs/Header header\n").is_none());
        assert!(StampLocator::from_definition("uint8[] a\nstd_msgs/Header header\n").is_none());
        assert!(StampLocator::from_definition("uint8[<=3] a\nHeader header\n").is_none());
        // A Header only inside a dependency does not count.
        let d = format!(
            "Foo foo\n{}\nMSG: pkg/Foo\nstd_msgs/Header header\n",
            "=".repeat(80)
        );
        assert!(StampLocator::from_definition(&d).is_none());
    }

    #[test]
    fn short_or_foreign_bytes_give_none() {
        let l = StampLocator::from_definition(IMU).unwrap();
        assert_eq!(l.read(&[0, 1, 0, 0, 1, 2]), None);
        assert_eq!(l.read(&[0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), None); // PL_CDR
        let mut neg = vec![0, 1, 0, 0];
        neg.extend_from_slice(&(-1i32).to_le_bytes());
        neg.extend_from_slice(&0u32.to_le_bytes());
        assert_eq!(l.read(&neg), None);
    }
}
