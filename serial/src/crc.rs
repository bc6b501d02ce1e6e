//! The two checks of the serial wire (docs/serial.md section 2): CRC-16/CCITT-FALSE on every
//! frame but CDATA, CRC-8/SMBUS on CDATA. Bitwise like the MCU's, which has no room for
//! tables; the host's frames are a few bytes, so the speed does not matter.

/// CRC-16/CCITT-FALSE: polynomial 0x1021, init 0xFFFF, no reflection, no final xor.
pub fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0xFFFF;
    for &b in bytes {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// CRC-8/SMBUS: polynomial 0x07, init 0, no reflection, no final xor.
pub fn crc8(bytes: &[u8]) -> u8 {
    let mut crc: u8 = 0;
    for &b in bytes {
        crc ^= b;
        for _ in 0..8 {
            crc = if crc & 0x80 != 0 {
                (crc << 1) ^ 0x07
            } else {
                crc << 1
            };
        }
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_values() {
        // The catalogue's check values over "123456789".
        assert_eq!(crc16(b"123456789"), 0x29B1);
        assert_eq!(crc8(b"123456789"), 0xF4);
        assert_eq!(crc16(b""), 0xFFFF);
        assert_eq!(crc8(b""), 0);
    }
}
