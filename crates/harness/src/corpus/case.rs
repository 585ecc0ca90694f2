//! One conformance case, as the runner takes it, and the error a file or case that cannot be
//! loaded becomes.

use super::data::TensorData;
use dmlcts_oracle::spec;
use dmlcts_tensor::{DataType, FeatureLevel, OperatorDesc};
use std::fmt;

/// One conformance case, ready to run.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    pub name: String,
    /// The file it came from, as given (e.g. `cases/doc/split.yaml`), and the line where its
    /// mapping starts (its `- ` in block style, its `{` in flow style and JSON).
    pub file: String,
    pub line: usize,
    pub description: Option<String>,
    pub tags: Vec<String>,
    /// The level at which the stored expectation holds: for accepted cases and for
    /// level-independent rejections, the lowest level that runs it; for rejections by a
    /// feature-level table, the level whose table rejects it.
    pub feature_level: FeatureLevel,
    pub op: OperatorDesc,
    /// One per input tensor, in `OperatorDesc::inputs` order.
    pub inputs: Vec<TensorData>,
    /// The case's own expected values per output (logical order, raw bits), when given.
    pub expected: Vec<Option<Vec<u64>>>,
    pub expect: Expectation,
    /// A sibling group's steps, in order (empty for a plain case): descriptors that differ
    /// in one field, run back to back on one backend session as one unit (one result, one
    /// id, one replay). Each step is a whole case named `GROUP/STEP`; the group's own
    /// descriptor, inputs, level and expectation are its first step's, so whatever looks at
    /// a case (filters, level choice, skips known in advance) sees one.
    pub steps: Vec<Case>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expectation {
    Accept,
    Reject { rule: String },
}

impl Case {
    /// The same case with its inputs given as buffers.
    pub fn with_inputs(mut self, inputs: Vec<Vec<u8>>) -> Case {
        self.inputs = inputs.into_iter().map(TensorData::Bytes).collect();
        self
    }

    /// Whether the stored rejection comes from a feature-level table (and so holds only at
    /// this case's level).
    pub fn rejection_depends_on_level(&self) -> bool {
        match &self.expect {
            Expectation::Reject { rule } => spec::depends_on_feature_level(rule),
            Expectation::Accept => false,
        }
    }

    /// Whether this is a sibling group (its steps run as one unit).
    pub fn is_group(&self) -> bool {
        !self.steps.is_empty()
    }

    /// Every data type the case's tensors use.
    pub fn data_types(&self) -> Vec<DataType> {
        let mut types: Vec<DataType> = (self.op.input_tensors().iter())
            .chain(self.op.output_tensors())
            .map(|t| t.data_type)
            .collect();
        types.sort();
        types.dedup();
        types
    }
}

/// A file or case that could not be loaded. It is reported as a failure of the run; the
/// other files and cases still load and run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    pub file: String,
    pub line: Option<usize>,
    pub case: Option<String>,
    pub message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(case) = &self.case {
            write!(f, ": case `{case}`")?;
        }
        write!(f, ": {}", self.message)
    }
}
