//! Seeded random bit patterns for input data. Floats are biased toward the values a copy
//! most often mangles: NaNs with payloads, -0.0, infinities and subnormals.

use crate::DataType;

/// splitmix64: tiny, seedable, and the same on every platform.
#[derive(Clone, Debug)]
pub struct BitPatternRng {
    state: u64,
}

impl BitPatternRng {
    pub fn new(seed: u64) -> BitPatternRng {
        BitPatternRng { state: seed }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// One element's bits: one time in four a special value for floats, otherwise uniform.
    #[inline]
    pub fn element(&mut self, data_type: DataType) -> u64 {
        let raw = self.next_u64();
        let width = data_type.element_size() * 8;
        let mask = if width == 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        if !data_type.is_float() || !raw.is_multiple_of(4) {
            return self.next_u64() & mask;
        }
        // (sign bit, exponent mask, mantissa mask)
        let (sign, exponent, mantissa) = match data_type {
            DataType::Float16 => (0x8000u64, 0x7c00u64, 0x03ffu64),
            DataType::Float32 => (0x8000_0000, 0x7f80_0000, 0x007f_ffff),
            _ => (1 << 63, 0x7ff0_0000_0000_0000, 0x000f_ffff_ffff_ffff),
        };
        let payload = self.next_u64();
        let sign_bit = if payload & 1 == 1 { sign } else { 0 };
        match (raw >> 2) % 4 {
            // NaN with a random non-zero payload (quiet or signalling).
            0 => sign_bit | exponent | ((payload >> 1) & mantissa).max(1),
            // +-0.0
            1 => sign_bit,
            // +-infinity
            2 => sign_bit | exponent,
            // subnormal
            _ => sign_bit | ((payload >> 1) & mantissa).max(1),
        }
    }
}

/// Fills every whole element slot of `bytes` with random bits for `data_type`; trailing
/// bytes that do not make a whole element get random bytes too.
pub fn fill_random_bits(data_type: DataType, bytes: &mut [u8], seed: u64) {
    let mut rng = BitPatternRng::new(seed);
    // One loop per element size, so that each slot is a copy of a fixed length (a copy of a
    // run-time length is a call to memcpy, per element).
    let rest = match data_type.element_size() {
        1 => fill_slots::<1>(data_type, bytes, &mut rng),
        2 => fill_slots::<2>(data_type, bytes, &mut rng),
        4 => fill_slots::<4>(data_type, bytes, &mut rng),
        _ => fill_slots::<8>(data_type, bytes, &mut rng),
    };
    for byte in rest {
        *byte = rng.next_u64() as u8;
    }
}

/// Fills every whole `SIZE`-byte slot with an element's bits, little-endian, in order; the
/// bytes left over that do not make a whole slot.
fn fill_slots<'a, const SIZE: usize>(
    data_type: DataType,
    bytes: &'a mut [u8],
    rng: &mut BitPatternRng,
) -> &'a mut [u8] {
    let mut slots = bytes.chunks_exact_mut(SIZE);
    for slot in &mut slots {
        let bits = rng.element(data_type).to_le_bytes();
        slot.copy_from_slice(&bits[..SIZE]);
    }
    slots.into_remainder()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_bits_and_floats_get_specials() {
        let mut a = vec![0u8; 2000];
        let mut b = vec![0u8; 2000];
        fill_random_bits(DataType::Float16, &mut a, 7);
        fill_random_bits(DataType::Float16, &mut b, 7);
        assert_eq!(a, b);
        let halves: Vec<u16> = a
            .chunks(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        assert!(
            halves
                .iter()
                .any(|&h| h & 0x7c00 == 0x7c00 && h & 0x3ff != 0)
        );
        assert!(halves.contains(&0x8000));
        assert!(halves.iter().any(|&h| h & 0x7c00 == 0 && h & 0x3ff != 0));
    }

    #[test]
    fn each_slot_holds_the_next_element_and_the_tail_the_next_bytes() {
        for data_type in DataType::ALL {
            let size = data_type.element_size();
            let mut bytes = vec![0u8; 10 * size + size - 1];
            fill_random_bits(data_type, &mut bytes, 11);
            let mut rng = BitPatternRng::new(11);
            let mut expected = Vec::new();
            for _ in 0..10 {
                expected.extend_from_slice(&rng.element(data_type).to_le_bytes()[..size]);
            }
            for _ in 0..size - 1 {
                expected.push(rng.next_u64() as u8);
            }
            assert_eq!(bytes, expected, "{data_type}");
        }
    }
}
