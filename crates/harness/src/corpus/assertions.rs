//! What a case checks, derived from its descriptor alone (no case is tagged by hand): a
//! must-reject case checks the rule it names; a valid case checks the execution properties of
//! specs/execution-properties.yaml its descriptor exercises. Each property's `derived_from`
//! sentence there is what `exercised` decides here; a test holds the two to the same ids.

use super::{Case, Expectation};
use dmlcts_tensor::{OperatorDesc, TensorDesc};

/// The assertions `case` checks: its rule, or the execution properties it exercises.
pub fn assertions(case: &Case) -> Vec<String> {
    match &case.expect {
        Expectation::Reject { rule } => vec![rule.clone()],
        Expectation::Accept => exercised(&case.op)
            .into_iter()
            .map(str::to_string)
            .collect(),
    }
}

/// The execution properties a valid descriptor exercises, as specs/execution-properties.yaml
/// defines them (its `derived_from`).
pub(crate) fn exercised(op: &OperatorDesc) -> Vec<&'static str> {
    let mut found = Vec::new();
    match op {
        OperatorDesc::Split(d) => {
            found.push("split.copy");
            if d.output_tensors.len() == 1 {
                found.push("split.single_output");
            }
        }
        OperatorDesc::Join(d) => {
            found.push("join.copy");
            if d.input_tensors.len() == 1 {
                found.push("join.single_input");
            }
        }
        OperatorDesc::Slice1(d) => {
            found.push("slice1.copy");
            let dims = (d.input_window_strides.iter())
                .zip(&d.input_window_sizes)
                .zip(&d.output_tensor.sizes);
            let mut negative = false;
            let mut skips = false;
            let mut larger = false;
            for ((&stride, &window), &output) in dims {
                let magnitude = u64::from(stride.unsigned_abs());
                negative |= stride < 0;
                skips |= magnitude >= 2 && output >= 2;
                if magnitude > 0 && window > 0 {
                    let max_copied = 1 + (u64::from(window) - 1) / magnitude;
                    larger |= u64::from(output) < max_copied;
                }
            }
            if negative {
                found.push("slice1.negative_stride");
            }
            if skips {
                found.push("slice1.stride_skips");
            }
            if larger {
                found.push("slice1.window_larger_than_output");
            }
        }
    }
    let (inputs, outputs) = (op.input_tensors(), op.output_tensors());
    if inputs.iter().any(|t| layout(t) == Layout::Strided) {
        found.push("input.strided");
    }
    if inputs.iter().any(|t| layout(t) == Layout::Broadcast) {
        found.push("input.broadcast");
    }
    if outputs.iter().any(|t| layout(t) != Layout::Packed) {
        found.push("output.strided");
    }
    if outputs.iter().any(|t| {
        u128::from(t.total_tensor_size_in_bytes)
            > t.element_count() * t.data_type.element_size() as u128
    }) {
        found.push("output.unaddressed_bytes");
    }
    if let Some(first) = inputs.first() {
        found.push(bits_id(first.data_type));
    }
    found
}

/// The id of a data type's bit-pattern property: `bits.FLOAT16`.
pub(crate) fn bits_id(data_type: dmlcts_tensor::DataType) -> &'static str {
    use dmlcts_tensor::DataType::*;
    match data_type {
        Float64 => "bits.FLOAT64",
        Float32 => "bits.FLOAT32",
        Float16 => "bits.FLOAT16",
        Int64 => "bits.INT64",
        Int32 => "bits.INT32",
        Int16 => "bits.INT16",
        Int8 => "bits.INT8",
        Uint64 => "bits.UINT64",
        Uint32 => "bits.UINT32",
        Uint16 => "bits.UINT16",
        Uint8 => "bits.UINT8",
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    Packed,
    /// Strides not the packed ones on the dimensions of size 2 or more, none of them 0.
    Strided,
    /// A 0 stride on a dimension of size 2 or more.
    Broadcast,
}

/// How a tensor is laid out, looking only at its dimensions of size 2 or more (a size-1
/// dimension's stride never moves the address).
fn layout(t: &TensorDesc) -> Layout {
    let Some(strides) = &t.strides else {
        return Layout::Packed;
    };
    let mut packed = 1u64;
    let mut is_packed = true;
    for (&size, &stride) in t.sizes.iter().zip(strides).rev() {
        if size < 2 {
            continue;
        }
        if stride == 0 {
            return Layout::Broadcast;
        }
        is_packed &= u64::from(stride) == packed;
        packed = packed.saturating_mul(u64::from(size));
    }
    if is_packed {
        Layout::Packed
    } else {
        Layout::Strided
    }
}

/// The rank (dimension count) a case runs at: its first input's.
pub fn rank(case: &Case) -> usize {
    (case.op.input_tensors().first()).map_or(0, |t| t.dimension_count())
}

#[cfg(test)]
mod tests {
    use super::*;
    use dmlcts_oracle::spec;
    use dmlcts_tensor::{DataType, OperatorKind};

    #[test]
    fn every_property_in_specs_is_derived_here_and_nothing_else() {
        let corpus = crate::Corpus::embedded();
        let mut derived: Vec<&str> = (corpus.cases.iter())
            .filter(|c| c.expect == Expectation::Accept)
            .flat_map(|c| exercised(&c.op))
            .collect();
        derived.extend(DataType::ALL.map(bits_id));
        derived.sort();
        derived.dedup();
        let mut listed: Vec<&str> = (spec::execution_properties().iter())
            .map(|p| p.id.as_str())
            .collect();
        listed.sort();
        assert_eq!(derived, listed);
        for p in spec::execution_properties() {
            if let Some(dt) = p.data_type() {
                assert_eq!(bits_id(dt), p.id);
            }
        }
    }

    #[test]
    fn a_property_is_derived_only_for_the_operators_specs_give_it() {
        for case in crate::Corpus::embedded().cases {
            if case.expect != Expectation::Accept {
                continue;
            }
            let kind: OperatorKind = case.op.kind();
            for id in exercised(&case.op) {
                let p = (spec::execution_properties().iter())
                    .find(|p| p.id == id)
                    .unwrap();
                assert!(p.applies_to(kind), "{id} on {kind}");
            }
        }
    }

    #[test]
    fn layouts_read_only_the_dimensions_that_move() {
        let t = |sizes: &[u32], strides: Option<&[u32]>| {
            TensorDesc::strided(DataType::Uint8, sizes, strides)
        };
        assert_eq!(layout(&t(&[2, 3], None)), Layout::Packed);
        assert_eq!(layout(&t(&[2, 3], Some(&[3, 1]))), Layout::Packed);
        assert_eq!(layout(&t(&[1, 3], Some(&[7, 1]))), Layout::Packed);
        assert_eq!(layout(&t(&[2, 3], Some(&[4, 1]))), Layout::Strided);
        assert_eq!(layout(&t(&[2, 3], Some(&[1, 2]))), Layout::Strided);
        assert_eq!(layout(&t(&[2, 3], Some(&[0, 1]))), Layout::Broadcast);
        assert_eq!(layout(&t(&[1, 3], Some(&[0, 1]))), Layout::Packed);
    }
}
