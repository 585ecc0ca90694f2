use std::fmt;

/// The eleven `DML_TENSOR_DATA_TYPE`s that Split, Join and Slice1 may list.
/// Discriminants are the header's enum values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DataType {
    Float32 = 1,
    Float16 = 2,
    Uint32 = 3,
    Uint16 = 4,
    Uint8 = 5,
    Int32 = 6,
    Int16 = 7,
    Int8 = 8,
    Float64 = 9,
    Uint64 = 10,
    Int64 = 11,
}

impl DataType {
    /// In the order the pages list them.
    pub const ALL: [DataType; 11] = [
        DataType::Float64,
        DataType::Float32,
        DataType::Float16,
        DataType::Int64,
        DataType::Int32,
        DataType::Int16,
        DataType::Int8,
        DataType::Uint64,
        DataType::Uint32,
        DataType::Uint16,
        DataType::Uint8,
    ];

    /// The name the pages use, without the `DML_TENSOR_DATA_TYPE_` prefix.
    pub fn name(self) -> &'static str {
        match self {
            DataType::Float32 => "FLOAT32",
            DataType::Float16 => "FLOAT16",
            DataType::Uint32 => "UINT32",
            DataType::Uint16 => "UINT16",
            DataType::Uint8 => "UINT8",
            DataType::Int32 => "INT32",
            DataType::Int16 => "INT16",
            DataType::Int8 => "INT8",
            DataType::Float64 => "FLOAT64",
            DataType::Uint64 => "UINT64",
            DataType::Int64 => "INT64",
        }
    }

    /// Accepts `FLOAT32` or `DML_TENSOR_DATA_TYPE_FLOAT32`, in any case.
    pub fn from_name(text: &str) -> Option<DataType> {
        let upper = text.trim().to_ascii_uppercase();
        let short = upper
            .strip_prefix("DML_TENSOR_DATA_TYPE_")
            .unwrap_or(&upper);
        DataType::ALL.into_iter().find(|dt| dt.name() == short)
    }

    #[inline]
    pub fn element_size(self) -> usize {
        match self {
            DataType::Uint8 | DataType::Int8 => 1,
            DataType::Float16 | DataType::Uint16 | DataType::Int16 => 2,
            DataType::Float32 | DataType::Uint32 | DataType::Int32 => 4,
            DataType::Float64 | DataType::Uint64 | DataType::Int64 => 8,
        }
    }

    #[inline]
    pub fn is_float(self) -> bool {
        matches!(
            self,
            DataType::Float16 | DataType::Float32 | DataType::Float64
        )
    }

    pub fn is_signed_integer(self) -> bool {
        matches!(
            self,
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64
        )
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_accept_the_header_prefix() {
        for dt in DataType::ALL {
            assert_eq!(DataType::from_name(dt.name()), Some(dt));
            let long = format!("DML_TENSOR_DATA_TYPE_{}", dt.name());
            assert_eq!(DataType::from_name(&long), Some(dt));
        }
        assert_eq!(DataType::from_name("float16"), Some(DataType::Float16));
        assert_eq!(DataType::from_name("UINT4"), None);
    }

    #[test]
    fn element_sizes_match_the_header() {
        let sizes: Vec<usize> = DataType::ALL.iter().map(|d| d.element_size()).collect();
        assert_eq!(sizes, vec![8, 4, 2, 8, 4, 2, 1, 8, 4, 2, 1]);
    }
}
