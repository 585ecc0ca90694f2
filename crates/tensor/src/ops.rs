//! The three operator descriptors, field for field as in directml.h. Counts that the header
//! carries separately (`OutputCount`, `InputCount`) are the lengths of the arrays here;
//! Slice1 keeps its own `DimensionCount` because the page states rules about it.

use crate::TensorDesc;
use std::fmt;

/// `DML_SPLIT_OPERATOR_DESC`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitDesc {
    pub input_tensor: TensorDesc,
    /// `OutputCount` is `output_tensors.len()`.
    pub output_tensors: Vec<TensorDesc>,
    pub axis: u32,
}

/// `DML_JOIN_OPERATOR_DESC`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JoinDesc {
    /// `InputCount` is `input_tensors.len()`.
    pub input_tensors: Vec<TensorDesc>,
    pub output_tensor: TensorDesc,
    pub axis: u32,
}

/// `DML_SLICE1_OPERATOR_DESC`. Window strides are signed (`const INT*`, see specs/errata).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slice1Desc {
    pub input_tensor: TensorDesc,
    pub output_tensor: TensorDesc,
    pub dimension_count: u32,
    pub input_window_offsets: Vec<u32>,
    pub input_window_sizes: Vec<u32>,
    pub input_window_strides: Vec<i32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OperatorKind {
    Split,
    Join,
    Slice1,
}

impl OperatorKind {
    pub const ALL: [OperatorKind; 3] = [
        OperatorKind::Split,
        OperatorKind::Join,
        OperatorKind::Slice1,
    ];

    /// The short name used in rule ids, case files and command lines.
    pub fn name(self) -> &'static str {
        match self {
            OperatorKind::Split => "split",
            OperatorKind::Join => "join",
            OperatorKind::Slice1 => "slice1",
        }
    }

    pub fn from_name(text: &str) -> Option<OperatorKind> {
        OperatorKind::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(text.trim()))
    }

    /// The structure's name in directml.h.
    pub fn dml_name(self) -> &'static str {
        match self {
            OperatorKind::Split => "DML_SPLIT_OPERATOR_DESC",
            OperatorKind::Join => "DML_JOIN_OPERATOR_DESC",
            OperatorKind::Slice1 => "DML_SLICE1_OPERATOR_DESC",
        }
    }
}

impl fmt::Display for OperatorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OperatorDesc {
    Split(SplitDesc),
    Join(JoinDesc),
    Slice1(Slice1Desc),
}

impl OperatorDesc {
    pub fn kind(&self) -> OperatorKind {
        match self {
            OperatorDesc::Split(_) => OperatorKind::Split,
            OperatorDesc::Join(_) => OperatorKind::Join,
            OperatorDesc::Slice1(_) => OperatorKind::Slice1,
        }
    }

    /// Input tensors in binding order, without their names (`inputs` names them): for loops
    /// that run per case and need a name only to report a problem.
    pub fn input_tensors(&self) -> &[TensorDesc] {
        match self {
            OperatorDesc::Split(d) => std::slice::from_ref(&d.input_tensor),
            OperatorDesc::Join(d) => &d.input_tensors,
            OperatorDesc::Slice1(d) => std::slice::from_ref(&d.input_tensor),
        }
    }

    /// Output tensors in binding order, without their names (`outputs` names them).
    pub fn output_tensors(&self) -> &[TensorDesc] {
        match self {
            OperatorDesc::Split(d) => &d.output_tensors,
            OperatorDesc::Join(d) => std::slice::from_ref(&d.output_tensor),
            OperatorDesc::Slice1(d) => std::slice::from_ref(&d.output_tensor),
        }
    }

    /// Input tensors in binding order, with the field name each comes from.
    pub fn inputs(&self) -> Vec<(String, &TensorDesc)> {
        match self {
            OperatorDesc::Split(d) => vec![("InputTensor".to_string(), &d.input_tensor)],
            OperatorDesc::Join(d) => d
                .input_tensors
                .iter()
                .enumerate()
                .map(|(i, t)| (format!("InputTensors[{i}]"), t))
                .collect(),
            OperatorDesc::Slice1(d) => vec![("InputTensor".to_string(), &d.input_tensor)],
        }
    }

    /// Output tensors in binding order, with the field name each comes from.
    pub fn outputs(&self) -> Vec<(String, &TensorDesc)> {
        match self {
            OperatorDesc::Split(d) => d
                .output_tensors
                .iter()
                .enumerate()
                .map(|(i, t)| (format!("OutputTensors[{i}]"), t))
                .collect(),
            OperatorDesc::Join(d) => vec![("OutputTensor".to_string(), &d.output_tensor)],
            OperatorDesc::Slice1(d) => vec![("OutputTensor".to_string(), &d.output_tensor)],
        }
    }
}
