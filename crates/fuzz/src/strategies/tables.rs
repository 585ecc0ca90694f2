//! What a level's tables allow an operator, read from specs/ through the oracle (never copied):
//! the dimension counts and data types every one of its tensors may have there, and what lies
//! just outside them.

use dmlcts_oracle::spec;
use dmlcts_tensor::{DataType, FeatureLevel, OperatorKind};
use std::ops::RangeInclusive;
use std::sync::OnceLock;

/// An operator's tables at a level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tables {
    pub kind: OperatorKind,
    pub level: FeatureLevel,
    /// Whether the operator exists at `level`. Where it does not, the other fields are those
    /// of the level it was introduced at (a descriptor valid there breaks only
    /// `operator.introduced_at_level` here).
    pub available: bool,
    /// The dimension counts every tensor's row allows.
    pub dims: RangeInclusive<usize>,
    /// The data types every tensor's row lists, in the pages' order.
    pub data_types: Vec<DataType>,
}

impl Tables {
    /// The tables of `kind` at `level` (read once per operator and level).
    pub fn of(kind: OperatorKind, level: FeatureLevel) -> Tables {
        static ALL: OnceLock<Vec<Tables>> = OnceLock::new();
        let all = ALL.get_or_init(|| {
            (OperatorKind::ALL.into_iter())
                .flat_map(|kind| FeatureLevel::ALL.map(|level| Tables::read(kind, level)))
                .collect()
        });
        all.iter()
            .find(|t| t.kind == kind && t.level == level)
            .cloned()
            .unwrap_or_else(|| Tables::read(kind, level))
    }

    fn read(kind: OperatorKind, level: FeatureLevel) -> Tables {
        let introduced = spec::introduced(kind);
        let row = spec::support_row(kind, level.max(introduced));
        let rows = row.map(|r| r.tensors.as_slice()).unwrap_or_default();
        let low = rows
            .iter()
            .map(|t| t.dimension_counts[0])
            .max()
            .unwrap_or(1);
        let high = rows
            .iter()
            .map(|t| t.dimension_counts[1])
            .min()
            .unwrap_or(8);
        let data_types = DataType::ALL
            .into_iter()
            .filter(|dt| rows.iter().all(|t| t.supported_data_types().contains(dt)))
            .collect();
        Tables {
            kind,
            level,
            available: level >= introduced,
            dims: (low.max(1) as usize)..=(high.max(low.max(1)) as usize),
            data_types,
        }
    }

    /// The data types the tables do not list (none from 4_1 on).
    pub fn other_data_types(&self) -> Vec<DataType> {
        DataType::ALL
            .into_iter()
            .filter(|dt| !self.data_types.contains(dt))
            .collect()
    }

    /// The listed data types of `element_size` bytes.
    pub fn data_types_of_size(&self, element_size: usize) -> Vec<DataType> {
        self.data_types
            .iter()
            .copied()
            .filter(|dt| dt.element_size() == element_size)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_are_the_pages_rows() {
        let split = Tables::of(OperatorKind::Split, FeatureLevel::L2_1);
        assert_eq!(split.dims, 4..=4);
        assert!(split.data_types.contains(&DataType::Int8));
        assert!(!split.data_types.contains(&DataType::Float64));
        let split = Tables::of(OperatorKind::Split, FeatureLevel::L1_0);
        assert!(!split.data_types.contains(&DataType::Int8));
        let join = Tables::of(OperatorKind::Join, FeatureLevel::L4_0);
        assert_eq!(join.dims, 4..=5);
        let slice = Tables::of(OperatorKind::Slice1, FeatureLevel::L2_0);
        assert!(!slice.available);
        assert_eq!(slice.dims, 4..=5);
        let latest = Tables::of(OperatorKind::Slice1, FeatureLevel::L6_4);
        assert_eq!(latest.dims, 1..=8);
        assert!(latest.other_data_types().is_empty());
    }
}
