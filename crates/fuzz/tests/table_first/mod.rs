//! A test backend that offers every feature level and checks the rules in another order than
//! the oracle: the level tables first (`*.dimension_count_supported`, `*.data_type_supported`,
//! `operator.introduced_at_level`), then the rest. It rejects with the first broken rule in
//! that order, and executes with the oracle's loops. A must-reject case that breaks its rule
//! and a table rule too is rejected here for the table, whatever else is wrong.
//!
//! Each planted bug is a mistake at one rule's edge, as an implementation written from the
//! pages might make it (a 32-bit sum, a missing rounding, a one-sided comparison): where the
//! descriptor is on the wrong side of that edge, the rule is not seen broken. Everything else
//! is as the oracle says, so a bug is caught only by a case that breaks its rule at that edge
//! and nothing else at the level it runs.
//!
//! In process, through the `Backend` trait: the campaign's and the corpus's level paths are
//! the same as for a protocol server that offers `feature_levels` (one device per level,
//! each `compile` judged at its level), and 33 corpora and 33 campaigns run in seconds.

#![allow(dead_code)]

use dmlcts_oracle::spec::{self, depends_on_feature_level};
use dmlcts_oracle::{execute, validate_enforced};
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, DataType, FeatureLevel, OperatorDesc, OutputBinding,
    Rejected, TensorDesc,
};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// A planted bug: the rule it is about, and when its check misses a break.
#[derive(Clone, Copy)]
pub struct Bug {
    pub rule: &'static str,
    pub what: &'static str,
    /// Whether the buggy check fails to see `rule` broken on this descriptor at this level.
    misses: fn(&OperatorDesc, FeatureLevel) -> bool,
    /// With no parts at all, validation returns before any check ("nothing to do").
    accepts_no_parts: bool,
}

fn tensors(op: &OperatorDesc) -> Vec<(TensorDesc, bool)> {
    let inputs = op.inputs().into_iter().map(|(_, t)| (t.clone(), false));
    inputs
        .chain(op.outputs().into_iter().map(|(_, t)| (t.clone(), true)))
        .collect()
}

/// Split's input or Join's output, and the parts on the other side, and the axis.
fn whole_and_parts(op: &OperatorDesc) -> Option<(&TensorDesc, &[TensorDesc], usize)> {
    match op {
        OperatorDesc::Split(d) => Some((&d.input_tensor, &d.output_tensors, d.axis as usize)),
        OperatorDesc::Join(d) => Some((&d.output_tensor, &d.input_tensors, d.axis as usize)),
        OperatorDesc::Slice1(_) => None,
    }
}

fn unrounded_minimum(t: &TensorDesc) -> u128 {
    if t.sizes.contains(&0) {
        return 0;
    }
    let elements = match &t.strides {
        None => t.element_count(),
        Some(strides) => {
            (t.sizes.iter().zip(strides))
                .map(|(&size, &stride)| u128::from(size - 1) * u128::from(stride))
                .sum::<u128>()
                + 1
        }
    };
    elements * t.data_type.element_size() as u128
}

fn element_sizes_agree(op: &OperatorDesc) -> bool {
    let sizes: Vec<usize> = (tensors(op).iter())
        .map(|(t, _)| t.data_type.element_size())
        .collect();
    sizes.windows(2).all(|w| w[0] == w[1])
}

fn table_dims(op: &OperatorDesc, level: FeatureLevel) -> Option<[u32; 2]> {
    let row = spec::support_row(op.kind(), level)?;
    Some(row.tensors[0].dimension_counts)
}

/// One bug per rule id in specs/, in the order `spec::all_constraints` lists them.
pub fn bugs() -> Vec<Bug> {
    let bug = |rule, what, misses| Bug {
        rule,
        what,
        misses,
        accepts_no_parts: false,
    };
    let mut bugs = vec![
        bug(
            "operator.introduced_at_level",
            "Slice1 offered from 2_0, one level early",
            |_, level| level >= FeatureLevel::L2_0,
        ),
        bug(
            "tensor.strides_count",
            "only too few strides are refused",
            |op, _| {
                tensors(op)
                    .iter()
                    .all(|(t, _)| t.strides.as_ref().is_none_or(|s| s.len() >= t.sizes.len()))
            },
        ),
        bug(
            "tensor.sizes_nonzero",
            "only inputs' sizes are checked",
            |op, _| op.inputs().iter().all(|(_, t)| !t.sizes.contains(&0)),
        ),
        bug(
            "tensor.element_count_limit",
            "the element count is a 32-bit product",
            |op, _| {
                tensors(op).iter().all(|(t, _)| {
                    let wrapped = t.sizes.iter().fold(1u32, |a, &s| a.wrapping_mul(s));
                    u64::from(wrapped) <= u64::from(u32::MAX)
                })
            },
        ),
        bug(
            "tensor.total_size_minimum",
            "the minimum is not rounded up to 4 bytes",
            |op, _| {
                tensors(op)
                    .iter()
                    .all(|(t, _)| u128::from(t.total_tensor_size_in_bytes) >= unrounded_minimum(t))
            },
        ),
        bug(
            "tensor.output_addresses_distinct",
            "only 0 strides are looked for, not overlapping rows",
            |op, _| {
                tensors(op).iter().filter(|(_, out)| *out).all(|(t, _)| {
                    let strides = t.effective_strides();
                    !(t.sizes.iter().zip(&strides)).any(|(&size, &stride)| size > 1 && stride == 0)
                })
            },
        ),
    ];
    for op in ["split", "join"] {
        let rule = |name: &str| -> &'static str {
            spec::all_constraints()
                .into_iter()
                .map(|c| c.id.as_str())
                .find(|id| *id == format!("{op}.{name}"))
                .expect("a rule of the page")
        };
        let count = if op == "split" {
            "output_count_nonzero"
        } else {
            "input_count_nonzero"
        };
        bugs.push(Bug {
            rule: rule(count),
            what: "no parts: returns before checking anything",
            misses: |_, _| true,
            accepts_no_parts: true,
        });
        bugs.extend([
            bug(
                rule("same_dimension_count"),
                "only the first part's dimension count is compared",
                |op, _| {
                    let (whole, parts, _) = whole_and_parts(op).expect("Split or Join");
                    parts
                        .first()
                        .is_none_or(|p| p.sizes.len() == whole.sizes.len())
                },
            ),
            bug(
                rule("same_data_type"),
                "element sizes are compared, not types",
                |op, _| element_sizes_agree(op),
            ),
            bug(
                rule("dimension_count_supported"),
                "one dimension more than the table is accepted",
                |op, level| {
                    let Some([low, high]) = table_dims(op, level) else {
                        return false;
                    };
                    (tensors(op).iter())
                        .all(|(t, _)| (low..=high + 1).contains(&(t.sizes.len() as u32)))
                },
            ),
            bug(
                rule("data_type_supported"),
                "the newest table's types are accepted at every level",
                |_, _| true,
            ),
            bug(
                rule("axis_in_range"),
                "Axis = DimensionCount is accepted",
                |op, _| {
                    let (whole, _, axis) = whole_and_parts(op).expect("Split or Join");
                    axis <= whole.sizes.len()
                },
            ),
            bug(
                rule("non_axis_sizes_match"),
                "only parts larger than the whole are refused",
                |op, _| {
                    let (whole, parts, axis) = whole_and_parts(op).expect("Split or Join");
                    parts.iter().all(|p| {
                        (0..whole.sizes.len().min(p.sizes.len()))
                            .filter(|&d| d != axis)
                            .all(|d| p.sizes[d] <= whole.sizes[d])
                    })
                },
            ),
        ]);
        let sum = if op == "split" {
            "output_sizes_sum_to_input"
        } else {
            "input_sizes_sum_to_output"
        };
        bugs.push(bug(
            rule(sum),
            "only parts that fall short of the whole are refused",
            |op, _| {
                let (whole, parts, axis) = whole_and_parts(op).expect("Split or Join");
                let sum: u64 = parts.iter().map(|p| u64::from(p.sizes[axis])).sum();
                sum >= u64::from(whole.sizes[axis])
            },
        ));
    }
    bugs.extend([
        bug(
            "slice1.window_arrays_length",
            "only InputWindowOffsets' length is checked",
            |op, _| match op {
                OperatorDesc::Slice1(d) => {
                    d.input_window_offsets.len() == d.dimension_count as usize
                }
                _ => false,
            },
        ),
        bug(
            "slice1.same_dimension_count",
            "only the input's dimension count is compared with DimensionCount",
            |op, _| match op {
                OperatorDesc::Slice1(d) => d.input_tensor.sizes.len() == d.dimension_count as usize,
                _ => false,
            },
        ),
        bug(
            "slice1.dimension_count_matches_tensors",
            "DimensionCount is compared with the arrays only",
            |op, _| match op {
                OperatorDesc::Slice1(d) => {
                    let n = d.dimension_count as usize;
                    d.input_window_sizes.len() == n && d.input_window_strides.len() == n
                }
                _ => false,
            },
        ),
        bug(
            "slice1.same_data_type",
            "element sizes are compared, not types",
            |op, _| element_sizes_agree(op),
        ),
        bug(
            "slice1.dimension_count_supported",
            "one dimension more than the table is accepted",
            |op, level| {
                let Some([low, high]) = table_dims(op, level) else {
                    return false;
                };
                (tensors(op).iter())
                    .all(|(t, _)| (low..=high + 1).contains(&(t.sizes.len() as u32)))
            },
        ),
        bug(
            "slice1.data_type_supported",
            "the newest table's types are accepted at every level",
            |_, _| true,
        ),
        bug(
            "slice1.window_nonempty",
            "an empty window is not looked for (its MaxCopiedElements wraps)",
            |_, _| true,
        ),
        bug(
            "slice1.window_inside_input",
            "offset + size is a 32-bit sum",
            |op, _| match op {
                OperatorDesc::Slice1(d) => (0..d.input_tensor.sizes.len()).all(|i| {
                    let (Some(&o), Some(&s)) =
                        (d.input_window_offsets.get(i), d.input_window_sizes.get(i))
                    else {
                        return true;
                    };
                    o.wrapping_add(s) <= d.input_tensor.sizes[i]
                }),
                _ => false,
            },
        ),
        bug(
            "slice1.window_stride_nonzero",
            "a 0 window stride is read as 1",
            |_, _| true,
        ),
        bug(
            "slice1.output_size_within_max_copied",
            "one more than MaxCopiedElements is accepted",
            |op, _| match op {
                OperatorDesc::Slice1(d) => (0..d.output_tensor.sizes.len()).all(|i| {
                    let (Some(&size), Some(&stride)) =
                        (d.input_window_sizes.get(i), d.input_window_strides.get(i))
                    else {
                        return true;
                    };
                    if size == 0 || stride == 0 {
                        return true;
                    }
                    let max = 1 + (u64::from(size) - 1) / u64::from(stride.unsigned_abs());
                    u64::from(d.output_tensor.sizes[i]) <= max + 1
                }),
                _ => false,
            },
        ),
    ]);
    bugs
}

/// The backend at one level, with at most one planted bug; `largest` records, per element
/// size, the most elements a tensor it accepted had.
pub struct TableFirst {
    pub level: FeatureLevel,
    pub bug: Option<Bug>,
    pub largest: Arc<Mutex<BTreeMap<usize, u128>>>,
}

impl TableFirst {
    pub fn new(level: FeatureLevel, bug: Option<Bug>) -> TableFirst {
        TableFirst {
            level,
            bug,
            largest: Arc::default(),
        }
    }
}

struct Compiled(OperatorDesc);

impl CompiledOperator for Compiled {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        let results = execute(&self.0, inputs).map_err(|e| e.to_string())?;
        for (result, binding) in results.iter().zip(outputs.iter_mut()) {
            result.write_addressed_into(binding.bytes_mut());
        }
        Ok(())
    }
}

impl TableFirst {
    /// The rules this descriptor breaks at this level, as this backend sees them, tables first.
    pub fn broken_rules(&self, op: &OperatorDesc) -> Vec<String> {
        if let Some(bug) = &self.bug
            && bug.accepts_no_parts
            && bug.rule.starts_with(op.kind().name())
            && whole_and_parts(op).is_some_and(|(_, parts, _)| parts.is_empty())
        {
            return Vec::new();
        }
        let broken = match validate_enforced(op, self.level, |_| false) {
            Ok(broken) => broken,
            Err(violation) => vec![violation],
        };
        let mut rules: Vec<String> = broken
            .into_iter()
            .map(|v| v.rule)
            .filter(|rule| {
                !self
                    .bug
                    .as_ref()
                    .is_some_and(|bug| bug.rule == rule && (bug.misses)(op, self.level))
            })
            .collect();
        rules.sort_by_key(|rule| !depends_on_feature_level(rule));
        rules
    }
}

impl Backend for TableFirst {
    fn name(&self) -> String {
        "table-first".into()
    }
    fn feature_level(&self) -> FeatureLevel {
        self.level
    }
    fn data_types(&self) -> Vec<DataType> {
        DataType::ALL.to_vec()
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        match self.broken_rules(op).first() {
            Some(rule) => Err(CompileError::Rejected(Rejected {
                rule: Some(rule.clone()),
                message: "refused (tables first)".into(),
            })),
            None => {
                let mut largest = self.largest.lock().unwrap_or_else(|e| e.into_inner());
                for (t, _) in tensors(op) {
                    let most = largest.entry(t.data_type.element_size()).or_default();
                    *most = (*most).max(t.element_count());
                }
                Ok(Box::new(Compiled(op.clone())))
            }
        }
    }
}
