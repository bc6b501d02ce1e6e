//! COBS (Consistent Overhead Byte Stuffing) for frames of at most [`MAX_DECODED`] bytes, where
//! it adds exactly one byte (docs/serial.md section 2).

use crate::error::FrameError;

/// The largest decoded frame (packet + check): every COBS block then fits one code byte.
pub const MAX_DECODED: usize = 254;

/// Appends the COBS encoding of `data` to `out`, without the 0x00 delimiter. For at most
/// [`MAX_DECODED`] bytes the encoding is exactly one byte longer.
pub fn encode(data: &[u8], out: &mut Vec<u8>) {
    let mut code_at = out.len();
    out.push(0);
    let mut code: u8 = 1;
    // Closes the current block with its code byte and opens the next one.
    fn close(out: &mut Vec<u8>, code_at: &mut usize, code: &mut u8) {
        out[*code_at] = *code;
        *code_at = out.len();
        out.push(0);
        *code = 1;
    }
    for &b in data {
        if code == 0xFF {
            // A full block implies no zero after it: close it before the next byte, so a
            // 254-byte run at the end takes no trailing empty block.
            close(out, &mut code_at, &mut code);
        }
        if b == 0 {
            close(out, &mut code_at, &mut code);
        } else {
            out.push(b);
            code += 1;
        }
    }
    out[code_at] = code;
}

/// Decodes `encoded` (one frame, no 0x00 in it) into `out` (cleared first). Errors: a 0x00
/// inside, or a block running past the end.
pub fn decode(encoded: &[u8], out: &mut Vec<u8>) -> Result<(), FrameError> {
    out.clear();
    let mut i = 0;
    while i < encoded.len() {
        let code = encoded[i] as usize;
        if code == 0 {
            return Err(FrameError::Cobs);
        }
        i += 1;
        let end = i + code - 1;
        if end > encoded.len() {
            return Err(FrameError::Cobs);
        }
        let run = &encoded[i..end];
        if run.contains(&0) {
            return Err(FrameError::Cobs);
        }
        out.extend_from_slice(run);
        i = end;
        if code < 0xFF && i < encoded.len() {
            out.push(0);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(data: &[u8]) -> Vec<u8> {
        let mut enc = Vec::new();
        encode(data, &mut enc);
        assert!(!enc.contains(&0), "{data:?} -> {enc:?}");
        assert_eq!(
            enc.len(),
            data.len() + 1,
            "one byte of overhead for {data:?}"
        );
        let mut dec = Vec::new();
        decode(&enc, &mut dec).unwrap();
        assert_eq!(dec, data);
        enc
    }

    #[test]
    fn known_vectors() {
        // From Cheshire and Baker / the usual examples.
        assert_eq!(round(&[0]), [1, 1]);
        assert_eq!(round(&[0, 0]), [1, 1, 1]);
        assert_eq!(round(&[0x11, 0x22, 0, 0x33]), [3, 0x11, 0x22, 2, 0x33]);
        assert_eq!(round(&[0x11, 0, 0, 0]), [2, 0x11, 1, 1, 1]);
        let full: Vec<u8> = (1..=254).collect();
        let enc = round(&full);
        assert_eq!(enc[0], 0xFF);
    }

    #[test]
    fn every_length_and_zero_pattern() {
        let mut x: u32 = 0x1234_5678;
        for len in 0..=MAX_DECODED {
            for _ in 0..20 {
                let data: Vec<u8> = (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 17;
                        x ^= x << 5;
                        if x & 3 == 0 {
                            0
                        } else {
                            x as u8
                        }
                    })
                    .collect();
                round(&data);
            }
        }
    }

    #[test]
    fn rejects_bad_blocks() {
        let mut out = Vec::new();
        assert!(decode(&[5, 1, 2], &mut out).is_err());
        assert!(decode(&[2, 0], &mut out).is_err());
        assert!(decode(&[0], &mut out).is_err());
        assert!(decode(&[], &mut out).is_ok());
    }
}
