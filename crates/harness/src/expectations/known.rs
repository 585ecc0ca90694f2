//! Known differences on generated cases (the expectations file's `known_differences` and
//! `not_enforced`), for fuzz campaigns: a failure they describe is counted as known, or as
//! informational, instead of new. Corpus cases use `expected_failures` instead.
//!
//! ```yaml
//! known_differences:
//!   - name: slice1 window shape          # how reports name the bucket
//!     implementation: directml           # which backends, as in expected_failures
//!     # backend: directml                # (`subject`: backend, implementation, device,
//!     versions: ">=1.12.1, <1.15"        # versions, adapter)
//!     check: values                      # optional: only failures of this check
//!     predicate: slice1.output_smaller_than_window   # a named predicate on the descriptor,
//!     # signature: values.slice1.e4.output_smaller_inner  # or a bucket signature
//!     reason: why, and where it is explained
//! not_enforced:                          # validation that differs by design
//!   - backend: onnx
//!     rules: [slice1.window_within_input] # acceptances of these near misses are informational
//!     reason: ONNX clamps windows
//! ```

use crate::expectations::subject::Key;
use crate::expectations::{AdapterMatch, Subject, VersionSpec};
use dmlcts_tensor::OperatorDesc;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnownDifference {
    pub name: String,
    #[serde(default)]
    pub backend: Option<String>,
    #[serde(default)]
    pub implementation: Option<String>,
    #[serde(default)]
    pub device: Option<String>,
    #[serde(default)]
    pub versions: Option<VersionSpec>,
    #[serde(default)]
    pub adapter: Option<AdapterMatch>,
    #[serde(default)]
    pub check: Option<String>,
    #[serde(default)]
    pub predicate: Option<String>,
    #[serde(default)]
    pub signature: Option<String>,
    pub reason: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotEnforced {
    #[serde(default)]
    pub backend: Option<String>,
    #[serde(default)]
    pub implementation: Option<String>,
    #[serde(default)]
    pub device: Option<String>,
    #[serde(default)]
    pub versions: Option<VersionSpec>,
    #[serde(default)]
    pub adapter: Option<AdapterMatch>,
    pub rules: Vec<String>,
    pub reason: String,
}

/// A named predicate on a descriptor.
pub struct Predicate {
    pub name: &'static str,
    pub description: &'static str,
    pub holds: fn(&OperatorDesc) -> bool,
}

/// Every predicate an expectations file may name.
pub const PREDICATES: &[Predicate] = &[
    Predicate {
        name: "slice1.output_smaller_than_window",
        description: "a Slice1 whose output is smaller than its window in a dimension other \
                  than the outermost, where that dimension and the one just outside it have \
                  window stride 1 (or a window of size 1) \
                  (docs/findings/directml-slice1-output-smaller-than-window.yaml)",
        holds: slice1_output_smaller_than_window,
    },
    Predicate {
        name: "slice1.zero_window_stride",
        description: "a Slice1 with a window stride of 0 in some dimension \
                  (docs/findings/tract-zero-step-panics.yaml)",
        holds: slice1_zero_window_stride,
    },
    Predicate {
        name: "slice1.empty_output",
        description: "a Slice1 whose output has a dimension of size 0 \
                  (docs/findings/tract-empty-slice-optimizer-error.yaml, \
                  docs/findings/litert-gpu-empty-strided-slice-crashes.yaml)",
        holds: slice1_empty_output,
    },
    Predicate {
        name: "slice1.negative_stride_unsigned",
        description: "a Slice1 of an unsigned type (UINT8 to UINT64) with a negative window \
                  stride in some dimension \
                  (docs/findings/iree-unsigned-reverse-does-not-compile.yaml)",
        holds: slice1_negative_stride_unsigned,
    },
    Predicate {
        name: "slice1.negative_stride",
        description: "a Slice1 with a negative window stride in some dimension \
                  (docs/findings/ort-webgpu-slice-negative-step.yaml)",
        holds: slice1_negative_stride,
    },
    Predicate {
        name: "tensor.narrow_integer_not_whole_words",
        description: "an operator on an 8- or 16-bit integer type (INT8, UINT8, INT16, \
                  UINT16) with an input or output whose packed size (its elements times the \
                  element size) is not a multiple of 4 bytes \
                  (docs/findings/iree-vulkan-narrow-integer-words-past-binding.yaml)",
        holds: narrow_integer_not_whole_words,
    },
    Predicate {
        name: "slice1.int32_min_window_stride",
        description: "a Slice1 with a window stride of -2^31 in some dimension \
                  (docs/findings/openvino-cpu-int-min-stride-crashes.yaml)",
        holds: slice1_int32_min_window_stride,
    },
    Predicate {
        name: "tensor.64_bit_type",
        description: "an operator with a tensor of INT64, UINT64 or FLOAT64 \
                  (docs/findings/openvino-cpu-64-bit-types-narrowed.yaml)",
        holds: has_64_bit_tensor,
    },
    Predicate {
        name: "tensor.float16",
        description: "an operator with a FLOAT16 tensor \
                  (docs/findings/openvino-cpu-float16-signalling-nan-quieted.yaml, \
                  docs/findings/iree-vulkan-float16-read-as-float32.yaml)",
        holds: has_float16_tensor,
    },
    Predicate {
        name: "tensor.float32",
        description: "an operator with a FLOAT32 tensor \
                  (docs/findings/litert-gpu-float32-held-as-float16-by-default.yaml)",
        holds: has_float32_tensor,
    },
    Predicate {
        name: "join.float_rank_7_or_8",
        description: "a Join of 7 or 8 dimensions with a FLOAT32 or FLOAT16 tensor \
                  (docs/findings/litert-xnnpack-concatenation-rank-7-8.yaml)",
        holds: join_float_rank_7_or_8,
    },
    Predicate {
        name: "tensor.output_overlap_without_zero_stride",
        description: "an output whose strides give two coordinates one address with no 0 stride \
                  on a dimension above size 1 (DirectML's partial check: \
                  docs/findings/directml-output-addresses-overlap-accepted.yaml)",
        holds: output_overlap_without_zero_stride,
    },
    Predicate {
        name: "join.one_input_outermost_size_1",
        description: "a Join of one input whose outermost size is 1 \
                  (docs/findings/litert-gpu-one-input-concatenation-outer-size-1-zeros.yaml)",
        holds: join_one_input_outermost_size_1,
    },
    Predicate {
        name: "slice1.no_dimensions",
        description: "a Slice1 whose input has no dimensions \
                  (docs/findings/litert-gpu-rank-0-strided-slice-crashes.yaml)",
        holds: slice1_no_dimensions,
    },
];

pub fn predicate(name: &str) -> Option<&'static Predicate> {
    PREDICATES.iter().find(|p| p.name == name)
}

fn slice1_output_smaller_than_window(op: &OperatorDesc) -> bool {
    let OperatorDesc::Slice1(slice) = op else {
        return false;
    };
    // A stride on a window of size 1 copies one element whatever it is; DirectML treats it as
    // a unit stride (found by a fuzz campaign: -1 and 2 there show the difference too).
    let unit = |d: usize| {
        slice.input_window_strides.get(d) == Some(&1) || slice.input_window_sizes.get(d) == Some(&1)
    };
    // The output is smaller than the window in a dimension whose stride, and the stride of
    // the dimension just outside it, are unit ones (probed on 1.15.4: [-1, 1, 1] with the
    // innermost output smaller shows it; [-1, 1] and [1, -1, 1] do not).
    (1..slice.input_window_sizes.len()).any(|d| {
        let output = slice.output_tensor.sizes.get(d).copied().unwrap_or(0);
        output < slice.input_window_sizes[d] && unit(d) && unit(d - 1)
    })
}

fn slice1_zero_window_stride(op: &OperatorDesc) -> bool {
    matches!(op, OperatorDesc::Slice1(slice) if slice.input_window_strides.contains(&0))
}

fn slice1_empty_output(op: &OperatorDesc) -> bool {
    matches!(op, OperatorDesc::Slice1(slice) if slice.output_tensor.sizes.contains(&0))
}

fn slice1_negative_stride(op: &OperatorDesc) -> bool {
    matches!(op, OperatorDesc::Slice1(slice) if slice.input_window_strides.iter().any(|&s| s < 0))
}

fn slice1_negative_stride_unsigned(op: &OperatorDesc) -> bool {
    use dmlcts_tensor::DataType::{Uint8, Uint16, Uint32, Uint64};
    slice1_negative_stride(op)
        && matches!(op, OperatorDesc::Slice1(slice)
            if matches!(slice.input_tensor.data_type, Uint8 | Uint16 | Uint32 | Uint64))
}

fn narrow_integer_not_whole_words(op: &OperatorDesc) -> bool {
    use dmlcts_tensor::DataType::{Int8, Int16, Uint8, Uint16};
    all_tensors(op).any(|t| {
        matches!(t.data_type, Int8 | Uint8 | Int16 | Uint16)
            && t.element_count()
                .saturating_mul(t.data_type.element_size() as u128)
                % 4
                != 0
    })
}

fn slice1_int32_min_window_stride(op: &OperatorDesc) -> bool {
    matches!(op, OperatorDesc::Slice1(slice) if slice.input_window_strides.contains(&i32::MIN))
}

/// Every tensor of the operator, inputs then outputs.
fn all_tensors(op: &OperatorDesc) -> impl Iterator<Item = &dmlcts_tensor::TensorDesc> {
    let mut tensors: Vec<&dmlcts_tensor::TensorDesc> =
        op.inputs().into_iter().map(|t| t.1).collect();
    tensors.extend(op.outputs().into_iter().map(|t| t.1));
    tensors.into_iter()
}

fn has_64_bit_tensor(op: &OperatorDesc) -> bool {
    use dmlcts_tensor::DataType::{Float64, Int64, Uint64};
    all_tensors(op).any(|t| matches!(t.data_type, Float64 | Int64 | Uint64))
}

fn has_float16_tensor(op: &OperatorDesc) -> bool {
    all_tensors(op).any(|t| t.data_type == dmlcts_tensor::DataType::Float16)
}

fn has_float32_tensor(op: &OperatorDesc) -> bool {
    all_tensors(op).any(|t| t.data_type == dmlcts_tensor::DataType::Float32)
}

fn join_float_rank_7_or_8(op: &OperatorDesc) -> bool {
    use dmlcts_tensor::DataType::{Float16, Float32};
    matches!(op, OperatorDesc::Join(join) if matches!(join.output_tensor.sizes.len(), 7 | 8))
        && all_tensors(op).any(|t| matches!(t.data_type, Float16 | Float32))
}

fn join_one_input_outermost_size_1(op: &OperatorDesc) -> bool {
    matches!(op, OperatorDesc::Join(join)
        if join.input_tensors.len() == 1 && join.input_tensors[0].sizes.first() == Some(&1))
}

fn slice1_no_dimensions(op: &OperatorDesc) -> bool {
    matches!(op, OperatorDesc::Slice1(slice) if slice.input_tensor.sizes.is_empty())
}

/// An output that breaks tensor.output_addresses_distinct through its strides' spans (rows,
/// inner strides), not through a 0 stride, which DirectML does reject. The oracle's own
/// search decides the sharing.
fn output_overlap_without_zero_stride(op: &OperatorDesc) -> bool {
    op.outputs().into_iter().any(|(_, t)| {
        let Some(strides) = t.strides.as_deref() else {
            return false;
        };
        strides.len() == t.sizes.len()
            && !(t.sizes.iter().zip(strides)).any(|(&size, &stride)| size > 1 && stride == 0)
            && dmlcts_oracle::overlap::shared_address(&t.sizes, strides).is_some()
    })
}

impl KnownDifference {
    fn key(&self) -> Key<'_> {
        Key {
            backend: self.backend.as_deref(),
            implementation: self.implementation.as_deref(),
            device: self.device.as_deref(),
            versions: self.versions.as_ref(),
            adapter: self.adapter.as_ref(),
        }
    }

    pub fn applies(&self, subject: &Subject) -> bool {
        self.key().applies(subject)
    }

    /// The entry's own problems, as `field: what` lines (checked on load).
    pub fn problems(&self) -> Vec<String> {
        let mut problems = self.key().problems();
        match (&self.predicate, &self.signature) {
            (None, None) => problems.push("needs a `predicate` or a `signature`".to_string()),
            (Some(_), Some(_)) => {
                problems.push("has both `predicate` and `signature`; give one".to_string())
            }
            _ => {}
        }
        if let Some(name) = &self.predicate
            && predicate(name).is_none()
        {
            problems.push(format!(
                "predicate: unknown `{name}`; known: {}",
                PREDICATES
                    .iter()
                    .map(|p| p.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        problems
    }
}

impl NotEnforced {
    fn key(&self) -> Key<'_> {
        Key {
            backend: self.backend.as_deref(),
            implementation: self.implementation.as_deref(),
            device: self.device.as_deref(),
            versions: self.versions.as_ref(),
            adapter: self.adapter.as_ref(),
        }
    }

    pub fn applies(&self, subject: &Subject) -> bool {
        self.key().applies(subject)
    }

    pub fn problems(&self) -> Vec<String> {
        let mut problems = self.key().problems();
        problems.extend(
            (self.rules.iter())
                .filter(|rule| dmlcts_oracle::spec::constraint(rule).is_none())
                .map(|rule| format!("rules: unknown rule `{rule}` (rule ids are in specs/)")),
        );
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dmlcts_tensor::{DataType, JoinDesc, Slice1Desc, SplitDesc, TensorDesc};

    fn slice(output: &[u32], strides: &[i32]) -> OperatorDesc {
        let input = TensorDesc::packed(DataType::Float32, &[3, 2, 4]);
        OperatorDesc::Slice1(Slice1Desc {
            input_tensor: input,
            output_tensor: TensorDesc::packed(DataType::Float32, output),
            dimension_count: 3,
            input_window_offsets: vec![0; 3],
            input_window_sizes: vec![3, 2, 4],
            input_window_strides: strides.to_vec(),
        })
    }

    #[test]
    fn negative_stride_predicates_hold_on_negative_strides_the_unsigned_one_on_unsigned_types() {
        let negative = predicate("slice1.negative_stride").unwrap().holds;
        let unsigned = predicate("slice1.negative_stride_unsigned").unwrap().holds;
        let of = |data_type, strides: &[i32]| {
            OperatorDesc::Slice1(Slice1Desc {
                input_tensor: TensorDesc::packed(data_type, &[3, 2]),
                output_tensor: TensorDesc::packed(data_type, &[3, 2]),
                dimension_count: 2,
                input_window_offsets: vec![0; 2],
                input_window_sizes: vec![3, 2],
                input_window_strides: strides.to_vec(),
            })
        };
        assert!(negative(&of(DataType::Float32, &[1, -1])));
        assert!(!negative(&of(DataType::Float32, &[1, 2])));
        for data_type in [
            DataType::Uint8,
            DataType::Uint16,
            DataType::Uint32,
            DataType::Uint64,
        ] {
            assert!(unsigned(&of(data_type, &[-2, 1])));
            assert!(!unsigned(&of(data_type, &[2, 1])));
        }
        for data_type in [
            DataType::Int8,
            DataType::Int64,
            DataType::Float16,
            DataType::Float64,
        ] {
            assert!(!unsigned(&of(data_type, &[-2, 1])));
        }
    }

    #[test]
    fn narrow_integer_predicate_holds_on_8_and_16_bit_integers_whose_size_is_not_whole_words() {
        let holds = predicate("tensor.narrow_integer_not_whole_words")
            .unwrap()
            .holds;
        let slice = |data_type, input: &[u32], output: &[u32]| {
            OperatorDesc::Slice1(Slice1Desc {
                input_tensor: TensorDesc::packed(data_type, input),
                output_tensor: TensorDesc::packed(data_type, output),
                dimension_count: 1,
                input_window_offsets: vec![1],
                input_window_sizes: vec![3],
                input_window_strides: vec![2],
            })
        };
        // The finding's case: 5 bytes in, 2 bytes out.
        assert!(holds(&slice(DataType::Int8, &[5], &[2])));
        // Only the output is short of a word, or only the input.
        assert!(holds(&slice(DataType::Uint8, &[8], &[2])));
        assert!(holds(&slice(DataType::Int16, &[5], &[2])));
        assert!(holds(&slice(DataType::Uint16, &[3], &[2])));
        // Whole words everywhere, or a type of 32 bits or more.
        assert!(!holds(&slice(DataType::Int8, &[8], &[4])));
        assert!(!holds(&slice(DataType::Uint16, &[6], &[2])));
        assert!(!holds(&slice(DataType::Float16, &[5], &[2])));
        assert!(!holds(&slice(DataType::Int32, &[5], &[2])));
        // A Join's inputs count as much as its output.
        let join = OperatorDesc::Join(JoinDesc {
            input_tensors: vec![
                TensorDesc::packed(DataType::Int8, &[2]),
                TensorDesc::packed(DataType::Int8, &[2]),
            ],
            output_tensor: TensorDesc::packed(DataType::Int8, &[4]),
            axis: 0,
        });
        assert!(holds(&join));
    }

    #[test]
    fn float32_predicate_holds_on_float32_operators_only() {
        let holds = predicate("tensor.float32").unwrap().holds;
        let join = |data_type| {
            OperatorDesc::Join(JoinDesc {
                input_tensors: vec![TensorDesc::packed(data_type, &[2])],
                output_tensor: TensorDesc::packed(data_type, &[2]),
                axis: 0,
            })
        };
        assert!(holds(&join(DataType::Float32)));
        assert!(!holds(&join(DataType::Float16)));
        assert!(!holds(&join(DataType::Int32)));
    }

    #[test]
    fn float16_predicate_holds_on_float16_operators_only() {
        let holds = predicate("tensor.float16").unwrap().holds;
        let split = |data_type| {
            OperatorDesc::Split(SplitDesc {
                input_tensor: TensorDesc::packed(data_type, &[4]),
                output_tensors: vec![
                    TensorDesc::packed(data_type, &[2]),
                    TensorDesc::packed(data_type, &[2]),
                ],
                axis: 0,
            })
        };
        assert!(holds(&split(DataType::Float16)));
        for data_type in [DataType::Float32, DataType::Float64, DataType::Int16] {
            assert!(!holds(&split(data_type)));
        }
    }

    #[test]
    fn the_window_shape_predicate_holds_for_a_smaller_inner_output_under_two_unit_strides() {
        let holds = predicate("slice1.output_smaller_than_window")
            .unwrap()
            .holds;
        assert!(holds(&slice(&[3, 2, 2], &[1, 1, 1])));
        assert!(holds(&slice(&[3, 1, 4], &[1, 1, 1])));
        // Only the outermost dimension smaller: the page's result.
        assert!(!holds(&slice(&[2, 2, 4], &[1, 1, 1])));
        assert!(!holds(&slice(&[3, 2, 4], &[1, 1, 1])));
        assert!(!holds(&slice(&[3, 2, 2], &[1, 1, 2])));
        assert!(!holds(&slice(&[3, 2, 2], &[1, -1, 1])));
        assert!(!holds(&slice(&[3, 2, 2], &[1, 1, -1])));
        // The two dimensions that matter have unit strides: the outermost one does not count.
        assert!(holds(&slice(&[3, 2, 2], &[-1, 1, 1])));
        assert!(holds(&slice(&[2, 2, 2], &[2, 1, 1])));
        assert!(!holds(&slice(&[2, 1, 4], &[2, 1, 1])));
    }

    #[test]
    fn the_zero_stride_and_empty_output_predicates_hold_only_for_slice1_with_them() {
        let zero_stride = predicate("slice1.zero_window_stride").unwrap().holds;
        let empty_output = predicate("slice1.empty_output").unwrap().holds;
        assert!(zero_stride(&slice(&[3, 1, 4], &[1, 0, 1])));
        assert!(!zero_stride(&slice(&[3, 1, 4], &[1, -1, 1])));
        assert!(empty_output(&slice(&[3, 0, 4], &[1, 1, 1])));
        assert!(!empty_output(&slice(&[3, 1, 4], &[1, 0, 1])));
        let split = OperatorDesc::Split(dmlcts_tensor::SplitDesc {
            input_tensor: TensorDesc::packed(DataType::Float32, &[2, 0]),
            output_tensors: vec![TensorDesc::packed(DataType::Float32, &[2, 0])],
            axis: 0,
        });
        assert!(!zero_stride(&split));
        assert!(!empty_output(&split));
    }

    #[test]
    fn the_type_and_rank_predicates_hold_only_for_operators_with_such_tensors() {
        let join = |data_type, rank: usize| {
            let part = vec![1; rank];
            let mut whole = part.clone();
            whole[0] = 2;
            OperatorDesc::Join(dmlcts_tensor::JoinDesc {
                input_tensors: vec![TensorDesc::packed(data_type, &part); 2],
                output_tensor: TensorDesc::packed(data_type, &whole),
                axis: 0,
            })
        };
        let wide = predicate("tensor.64_bit_type").unwrap().holds;
        let half = predicate("tensor.float16").unwrap().holds;
        let deep = predicate("join.float_rank_7_or_8").unwrap().holds;
        let int_min = predicate("slice1.int32_min_window_stride").unwrap().holds;
        for t in [DataType::Int64, DataType::Uint64, DataType::Float64] {
            assert!(wide(&join(t, 2)), "{t:?}");
        }
        assert!(!wide(&join(DataType::Int32, 2)));
        assert!(!wide(&slice(&[3, 2, 4], &[1, 1, 1])));
        assert!(half(&join(DataType::Float16, 2)));
        assert!(!half(&join(DataType::Int16, 2)));
        assert!(deep(&join(DataType::Float32, 7)));
        assert!(deep(&join(DataType::Float16, 8)));
        assert!(!deep(&join(DataType::Float32, 6)));
        assert!(!deep(&join(DataType::Int32, 8)));
        assert!(int_min(&slice(&[1, 2, 4], &[i32::MIN, 1, 1])));
        assert!(!int_min(&slice(&[1, 2, 4], &[-i32::MAX, 1, 1])));
        assert!(!int_min(&join(DataType::Float32, 7)));
    }

    #[test]
    fn the_overlap_predicate_holds_for_spans_that_meet_not_for_zero_strides_or_distinct_outputs() {
        let holds = predicate("tensor.output_overlap_without_zero_stride")
            .unwrap()
            .holds;
        let split = |sizes: &[u32], strides: Option<&[u32]>| {
            OperatorDesc::Split(dmlcts_tensor::SplitDesc {
                input_tensor: TensorDesc::packed(DataType::Uint32, sizes),
                output_tensors: vec![TensorDesc::strided(DataType::Uint32, sizes, strides)],
                axis: 0,
            })
        };
        // The campaign's find on DirectML 1.15.4: [0, 0, 1, 1] and [0, 1, 0, 0] share element 6.
        assert!(holds(&split(&[3, 2, 2, 2], Some(&[40, 6, 4, 2]))));
        // A 0 stride on a dimension of size 2 (DirectML rejects it): not this predicate.
        assert!(!holds(&split(&[3, 2, 2, 2], Some(&[40, 0, 4, 2]))));
        // Distinct, padded, packed.
        assert!(!holds(&split(&[3, 2, 2, 2], Some(&[40, 16, 8, 2]))));
        assert!(!holds(&split(&[3, 2, 2, 2], None)));
    }

    #[test]
    fn the_window_shape_predicate_ignores_strides_on_windows_of_size_one() {
        let holds = predicate("slice1.output_smaller_than_window")
            .unwrap()
            .holds;
        let op = OperatorDesc::Slice1(Slice1Desc {
            input_tensor: TensorDesc::packed(DataType::Uint32, &[2, 2, 1]),
            output_tensor: TensorDesc::packed(DataType::Uint32, &[2, 1, 1]),
            dimension_count: 3,
            input_window_offsets: vec![0; 3],
            input_window_sizes: vec![2, 2, 1],
            input_window_strides: vec![1, 1, -1],
        });
        assert!(holds(&op));
    }

    #[test]
    fn the_one_input_join_predicate_holds_for_one_input_of_outermost_size_1_only() {
        let holds = predicate("join.one_input_outermost_size_1").unwrap().holds;
        let join = |inputs: &[&[u32]], output: &[u32]| {
            OperatorDesc::Join(JoinDesc {
                input_tensors: inputs
                    .iter()
                    .map(|sizes| TensorDesc::packed(DataType::Float32, sizes))
                    .collect(),
                output_tensor: TensorDesc::packed(DataType::Float32, output),
                axis: 0,
            })
        };
        // The finding's sizes: [1], [1, 4] and [1, 1, 37, 41] give zeros; [4], [2, 4] and two
        // inputs are exact.
        assert!(holds(&join(&[&[1]], &[1])));
        assert!(holds(&join(&[&[1, 4]], &[1, 4])));
        assert!(holds(&join(&[&[1, 1, 37, 41]], &[1, 1, 37, 41])));
        assert!(!holds(&join(&[&[4]], &[4])));
        assert!(!holds(&join(&[&[2, 4]], &[2, 4])));
        assert!(!holds(&join(&[&[1, 4], &[1, 4]], &[2, 4])));
        assert!(!holds(&slice(&[3, 2, 4], &[1, 1, 1])));
    }

    #[test]
    fn the_no_dimensions_predicate_holds_for_a_slice1_without_dimensions_only() {
        let holds = predicate("slice1.no_dimensions").unwrap().holds;
        let rank_0 = OperatorDesc::Slice1(Slice1Desc {
            input_tensor: TensorDesc::packed(DataType::Float32, &[]),
            output_tensor: TensorDesc::packed(DataType::Float32, &[]),
            dimension_count: 0,
            input_window_offsets: vec![],
            input_window_sizes: vec![],
            input_window_strides: vec![],
        });
        assert!(holds(&rank_0));
        assert!(!holds(&slice(&[3, 2, 4], &[1, 1, 1])));
    }
}
