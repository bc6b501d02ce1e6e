//! The SUBNET announcement: one small UDP datagram, sent by the holder of a host's role for its
//! domain, saying where that host's directory can be asked (docs/network.md section 2a). This
//! module is the codec only (no sockets); `subnet.rs` sends and receives.
//!
//! ```text
//!  0       4       5       6               8              10              12
//! +-------+-------+-------+-------+-------+-------+-------+-------+-------+------ - - -+
//! | "LTHA"| ver=1 | flags | domain u16    | dir port u16  | interval u16  | host u64     |
//! +-------+-------+-------+-------+-------+-------+-------+-------+-------+------ - - -+
//!   20 bytes exactly, integers little endian
//! ```
//!
//! - `flags` bit 0: the host's directory asks for a certificate of its keystore's CA (SROS2
//!   Enforce). Every other bit is 0 in version 1; a datagram with one set is rejected.
//! - `domain`: the ROS domain id (a datagram of another domain is not ours; ports can overlap
//!   when `RMW_TRACER_PORT_BASE` differs).
//! - `dir port`: the UDP port of the host directory on the sender's address (not 0).
//! - `interval`: milliseconds until the next announcement (100..=60000); a receiver forgets a
//!   host not heard for four intervals.
//! - `host`: the host's id for this domain (not 0), stable across holders: a takeover changes
//!   nothing a receiver keeps.
//!
//! A datagram that is not exactly this is rejected whole (no partial reads, no trailing bytes).

/// The first four bytes of every announcement.
pub const MAGIC: [u8; 4] = *b"LTHA";
/// The one version defined.
pub const VERSION: u8 = 1;
/// Length of an announcement, exactly.
pub const LEN: usize = 20;
/// Flag bit 0: the directory requires an authenticated client (SROS2 Enforce).
pub const FLAG_AUTHENTICATED: u8 = 1;
/// Bounds on the announced interval, in milliseconds.
pub const INTERVAL_MS: (u16, u16) = (100, 60_000);

/// One host's announcement for one domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Announcement {
    pub domain: u16,
    pub directory_port: u16,
    pub interval_ms: u16,
    pub host: u64,
    pub authenticated: bool,
}

/// Why a datagram is not an announcement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AnnounceError {
    #[error("announcement of {0} bytes, not {LEN}")]
    Length(usize),
    #[error("not an announcement (bad magic)")]
    Magic,
    #[error("announcement version {0} (this node speaks 1)")]
    Version(u8),
    #[error("announcement flags {0:#04x} set bits version 1 does not define")]
    Flags(u8),
    #[error("announcement names directory port 0")]
    Port,
    #[error("announcement interval {0} ms out of 100..=60000")]
    Interval(u16),
    #[error("announcement host id 0")]
    Host,
}

/// The datagram for `a`.
pub fn encode(a: &Announcement) -> [u8; LEN] {
    let mut b = [0u8; LEN];
    b[0..4].copy_from_slice(&MAGIC);
    b[4] = VERSION;
    b[5] = if a.authenticated {
        FLAG_AUTHENTICATED
    } else {
        0
    };
    b[6..8].copy_from_slice(&a.domain.to_le_bytes());
    b[8..10].copy_from_slice(&a.directory_port.to_le_bytes());
    b[10..12].copy_from_slice(&a.interval_ms.to_le_bytes());
    b[12..20].copy_from_slice(&a.host.to_le_bytes());
    b
}

/// The announcement in `b`, or why it is not one.
pub fn decode(b: &[u8]) -> Result<Announcement, AnnounceError> {
    let b: &[u8; LEN] = b.try_into().map_err(|_| AnnounceError::Length(b.len()))?;
    if b[0..4] != MAGIC {
        return Err(AnnounceError::Magic);
    }
    if b[4] != VERSION {
        return Err(AnnounceError::Version(b[4]));
    }
    let flags = b[5];
    if flags & !FLAG_AUTHENTICATED != 0 {
        return Err(AnnounceError::Flags(flags));
    }
    let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
    let directory_port = u16_at(8);
    if directory_port == 0 {
        return Err(AnnounceError::Port);
    }
    let interval_ms = u16_at(10);
    if !(INTERVAL_MS.0..=INTERVAL_MS.1).contains(&interval_ms) {
        return Err(AnnounceError::Interval(interval_ms));
    }
    let mut host = [0u8; 8];
    host.copy_from_slice(&b[12..20]);
    let host = u64::from_le_bytes(host);
    if host == 0 {
        return Err(AnnounceError::Host);
    }
    Ok(Announcement {
        domain: u16_at(6),
        directory_port,
        interval_ms,
        host,
        authenticated: flags & FLAG_AUTHENTICATED != 0,
    })
}

/// Any byte string: an announcement that encodes back to exactly those bytes, or an error;
/// never a panic. The fuzz target `fuzz/fuzz_targets/announce.rs` and
/// `tests/link_quic_subnet.rs` call it (the directory's answers have their own,
/// `exercise_directory_answer`). True when the bytes were an announcement.
pub fn exercise_announce(data: &[u8]) -> bool {
    match decode(data) {
        Ok(a) => {
            assert_eq!(encode(&a)[..], data[..], "an announcement has one encoding");
            true
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Announcement {
        Announcement {
            domain: 7,
            directory_port: 24657,
            interval_ms: 3000,
            host: 0x0123_4567_89ab_cdef,
            authenticated: true,
        }
    }

    #[test]
    fn round_trip() {
        let a = sample();
        assert_eq!(decode(&encode(&a)), Ok(a));
        let plain = Announcement {
            authenticated: false,
            ..a
        };
        assert_eq!(decode(&encode(&plain)), Ok(plain));
    }

    #[test]
    fn rejects_what_is_not_exactly_an_announcement() {
        let good = encode(&sample());
        assert_eq!(decode(&good[..19]), Err(AnnounceError::Length(19)));
        let mut long = good.to_vec();
        long.push(0);
        assert_eq!(decode(&long), Err(AnnounceError::Length(21)));
        assert_eq!(decode(&[]), Err(AnnounceError::Length(0)));
        let with = |i: usize, v: u8| {
            let mut b = good;
            b[i] = v;
            decode(&b)
        };
        assert_eq!(with(0, b'X'), Err(AnnounceError::Magic));
        assert_eq!(with(4, 2), Err(AnnounceError::Version(2)));
        assert_eq!(with(5, 3), Err(AnnounceError::Flags(3)));
        let mut b = good;
        b[8..10].copy_from_slice(&[0, 0]);
        assert_eq!(decode(&b), Err(AnnounceError::Port));
        b = good;
        b[10..12].copy_from_slice(&99u16.to_le_bytes());
        assert_eq!(decode(&b), Err(AnnounceError::Interval(99)));
        b[10..12].copy_from_slice(&60_001u16.to_le_bytes());
        assert_eq!(decode(&b), Err(AnnounceError::Interval(60_001)));
        b = good;
        b[12..20].copy_from_slice(&[0; 8]);
        assert_eq!(decode(&b), Err(AnnounceError::Host));
    }
}
