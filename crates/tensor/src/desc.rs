use crate::DataType;

/// A buffer tensor description, modelled on `DML_BUFFER_TENSOR_DESC`.
///
/// `DimensionCount` is `sizes.len()`. `strides`, when present, count elements (not bytes)
/// and must have one entry per dimension; `None` means packed row-major, exactly like a
/// null `Strides` pointer. Nothing here is validated: a description may be malformed, and
/// every method is total (no panic, no overflow) so the oracle can judge it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorDesc {
    pub data_type: DataType,
    pub sizes: Vec<u32>,
    pub strides: Option<Vec<u32>>,
    pub total_tensor_size_in_bytes: u64,
}

impl TensorDesc {
    /// A packed tensor whose TotalTensorSizeInBytes is what `DMLCalcBufferTensorSize` gives.
    pub fn packed(data_type: DataType, sizes: &[u32]) -> TensorDesc {
        TensorDesc::strided(data_type, sizes, None)
    }

    /// A tensor with the given strides (or packed) and the minimum TotalTensorSizeInBytes.
    pub fn strided(data_type: DataType, sizes: &[u32], strides: Option<&[u32]>) -> TensorDesc {
        let total = calc_buffer_tensor_size(data_type, sizes, strides);
        TensorDesc {
            data_type,
            sizes: sizes.to_vec(),
            strides: strides.map(<[u32]>::to_vec),
            total_tensor_size_in_bytes: u64::try_from(total).unwrap_or(u64::MAX),
        }
    }

    pub fn dimension_count(&self) -> usize {
        self.sizes.len()
    }

    /// The product of the sizes, exact (u128 cannot overflow for 8 dimensions of u32,
    /// and saturates beyond that).
    pub fn element_count(&self) -> u128 {
        self.sizes
            .iter()
            .fold(1u128, |acc, &s| acc.saturating_mul(u128::from(s)))
    }

    /// The strides the tensor is addressed with: its own, or the packed row-major ones.
    /// Packed stride of dimension i = product of the sizes after i. Saturates at u64::MAX,
    /// which only a description with more than 2^64 elements can reach.
    pub fn effective_strides(&self) -> Vec<u64> {
        if let Some(strides) = &self.strides {
            return strides.iter().map(|&s| u64::from(s)).collect();
        }
        let mut strides = vec![0u64; self.sizes.len()];
        let mut running = 1u64;
        for i in (0..self.sizes.len()).rev() {
            strides[i] = running;
            running = running.saturating_mul(u64::from(self.sizes[i]));
        }
        strides
    }

    /// The minimum TotalTensorSizeInBytes for this description (`DMLCalcBufferTensorSize`).
    pub fn minimum_size_in_bytes(&self) -> u128 {
        calc_buffer_tensor_size(self.data_type, &self.sizes, self.strides.as_deref())
    }

    /// Byte offset of the element at `coordinates` (one per dimension), or None when it
    /// does not fit in u64 or the coordinate count is wrong.
    #[inline]
    pub fn byte_offset(&self, coordinates: &[u32], strides: &[u64]) -> Option<u64> {
        if coordinates.len() != strides.len() {
            return None;
        }
        let mut element_index: u128 = 0;
        for (&c, &s) in coordinates.iter().zip(strides) {
            element_index += u128::from(c) * u128::from(s);
        }
        let bytes = element_index * self.data_type.element_size() as u128;
        u64::try_from(bytes).ok()
    }
}

/// `DMLCalcBufferTensorSize` from the DirectML helper functions, computed in u128 so that it
/// can neither wrap (the published helper accumulates in 32 bits) nor underflow on a zero size:
///
/// - without strides: product(sizes) * element size;
/// - with strides: `(sum((sizes[i] - 1) * strides[i]) + 1) * element size`;
/// - then rounded up to a multiple of 4 bytes.
///
/// A zero size gives 0 elements. A strides array of the wrong length is read as far as both go.
pub fn calc_buffer_tensor_size(
    data_type: DataType,
    sizes: &[u32],
    strides: Option<&[u32]>,
) -> u128 {
    let element_size = data_type.element_size() as u128;
    let elements: u128 = match strides {
        None => sizes
            .iter()
            .fold(1u128, |acc, &s| acc.saturating_mul(u128::from(s))),
        Some(strides) => {
            if sizes.contains(&0) {
                0
            } else {
                let last_index: u128 = sizes
                    .iter()
                    .zip(strides)
                    .map(|(&size, &stride)| u128::from(size - 1) * u128::from(stride))
                    .sum();
                last_index + 1
            }
        }
    };
    let bytes = elements.saturating_mul(element_size);
    bytes.saturating_add(3) / 4 * 4
}

/// Row-major walk over every coordinate of a tensor with the given sizes: the last
/// dimension moves fastest. A zero size yields nothing; zero dimensions yield one empty
/// coordinate (a scalar). `advance` reuses one buffer; the `Iterator` yields copies.
pub struct Coordinates {
    sizes: Vec<u32>,
    current: Vec<u32>,
    started: bool,
    done: bool,
}

impl Coordinates {
    pub fn new(sizes: &[u32]) -> Coordinates {
        Coordinates {
            sizes: sizes.to_vec(),
            current: vec![0; sizes.len()],
            started: false,
            done: sizes.contains(&0),
        }
    }

    /// The next coordinate, or None when every one has been visited.
    #[inline]
    pub fn advance(&mut self) -> Option<&[u32]> {
        if self.done {
            return None;
        }
        if !self.started {
            self.started = true;
            return Some(&self.current);
        }
        let mut dim = self.current.len();
        loop {
            if dim == 0 {
                // Every dimension wrapped around: the walk is over.
                self.done = true;
                return None;
            }
            dim -= 1;
            self.current[dim] += 1;
            if self.current[dim] < self.sizes[dim] {
                return Some(&self.current);
            }
            self.current[dim] = 0;
        }
    }
}

impl Iterator for Coordinates {
    type Item = Vec<u32>;

    fn next(&mut self) -> Option<Vec<u32>> {
        self.advance().map(<[u32]>::to_vec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_size_rounds_up_to_four_bytes() {
        assert_eq!(calc_buffer_tensor_size(DataType::Uint8, &[3], None), 4);
        assert_eq!(calc_buffer_tensor_size(DataType::Float16, &[1, 3], None), 8);
        assert_eq!(
            calc_buffer_tensor_size(DataType::Float32, &[1, 1, 6, 2], None),
            48
        );
    }

    #[test]
    fn strided_size_counts_to_the_last_addressed_element() {
        // Last element at index (2-1)*10 + (3-1)*1 = 12, so 13 elements of 2 bytes = 26 -> 28.
        assert_eq!(
            calc_buffer_tensor_size(DataType::Int16, &[2, 3], Some(&[10, 1])),
            28
        );
        // Broadcast: every coordinate reads element 0.
        assert_eq!(
            calc_buffer_tensor_size(DataType::Float64, &[4, 4], Some(&[0, 0])),
            8
        );
    }

    #[test]
    fn size_does_not_wrap_where_the_published_helper_would() {
        let sizes = [u32::MAX; 8];
        let strides = [u32::MAX; 8];
        let size = calc_buffer_tensor_size(DataType::Float64, &sizes, Some(&strides));
        assert!(size > u128::from(u64::MAX));
        assert_eq!(
            calc_buffer_tensor_size(DataType::Int8, &[0, 5], Some(&[5, 1])),
            0
        );
    }

    #[test]
    fn coordinates_walk_row_major() {
        let all: Vec<Vec<u32>> = Coordinates::new(&[2, 3]).collect();
        assert_eq!(all.len(), 6);
        assert_eq!(all[0], vec![0, 0]);
        assert_eq!(all[1], vec![0, 1]);
        assert_eq!(all[3], vec![1, 0]);
        assert_eq!(all[5], vec![1, 2]);
        assert_eq!(Coordinates::new(&[2, 0]).count(), 0);
        assert_eq!(Coordinates::new(&[]).count(), 1);
    }

    #[test]
    fn effective_strides_default_to_packed() {
        let desc = TensorDesc::packed(DataType::Float32, &[2, 3, 4]);
        assert_eq!(desc.effective_strides(), vec![12, 4, 1]);
        assert_eq!(desc.byte_offset(&[1, 2, 3], &[12, 4, 1]), Some(92));
        assert_eq!(desc.total_tensor_size_in_bytes, 96);
    }
}
