//! Both sides of validation edges (cases/generated/validation_edges_*.yaml): for fields an
//! implementation reads, the value that is there but empty or zero as well as the one that is
//! short or too small, a value past 2^31 as well as past the rank, the first tensor as well as
//! the last; and every feature level between two table rows, where the row below applies.
//! Each must-reject case breaks its rule alone.

use super::{accepted, descriptor, rejected_alone};
use crate::corpus::Case;
use dmlcts_oracle::{spec, validate};
use dmlcts_tensor::{DataType, FeatureLevel, OperatorDesc, OperatorKind, TensorDesc};

/// Every tensor of `op`, inputs first.
fn tensors_mut(op: &mut OperatorDesc) -> Vec<&mut TensorDesc> {
    match op {
        OperatorDesc::Split(d) => std::iter::once(&mut d.input_tensor)
            .chain(d.output_tensors.iter_mut())
            .collect(),
        OperatorDesc::Join(d) => d
            .input_tensors
            .iter_mut()
            .chain(std::iter::once(&mut d.output_tensor))
            .collect(),
        OperatorDesc::Slice1(d) => vec![&mut d.input_tensor, &mut d.output_tensor],
    }
}

/// The cases of one operator's file.
pub fn validation_edge_cases(kind: OperatorKind, file: &str) -> Vec<Case> {
    let base = descriptor(kind, DataType::Float32, 4);
    let count = tensors_mut(&mut base.clone()).len();
    let mut cases = Vec::new();
    for (at, which) in [(0, "first"), (count - 1, "last")] {
        let mut op = base.clone();
        tensors_mut(&mut op)[at].strides = Some(Vec::new());
        cases.push(rejected_alone(
            format!("edges.{kind}.{which}_tensor.strides_empty"),
            file,
            format!("the {which} tensor with an empty strides array (not \"no strides\")"),
            op,
            "tensor.strides_count",
        ));
        let mut op = base.clone();
        tensors_mut(&mut op)[at].total_tensor_size_in_bytes = 0;
        cases.push(rejected_alone(
            format!("edges.{kind}.{which}_tensor.total_size_0"),
            file,
            format!("the {which} tensor with TotalTensorSizeInBytes 0 (not \"not given\")"),
            op,
            "tensor.total_size_minimum",
        ));
    }
    match kind {
        OperatorKind::Split | OperatorKind::Join => {
            for (axis, what, id) in [
                (1u32 << 31, "2^31", "2_31"),
                ((1 << 31) - 1, "2^31 - 1", "2_31_minus_1"),
            ] {
                let mut op = base.clone();
                match &mut op {
                    OperatorDesc::Split(d) => d.axis = axis,
                    OperatorDesc::Join(d) => d.axis = axis,
                    OperatorDesc::Slice1(_) => unreachable!(),
                }
                cases.push(rejected_alone(
                    format!("edges.{kind}.axis_{id}"),
                    file,
                    format!("Axis {what}: past the rank, and past 2^31 as well"),
                    op,
                    &format!("{kind}.axis_in_range"),
                ));
            }
            // The whole off by one against every part (which all agree with each other).
            let mut op = base.clone();
            let whole = match &mut op {
                OperatorDesc::Split(d) => &mut d.input_tensor,
                OperatorDesc::Join(d) => &mut d.output_tensor,
                OperatorDesc::Slice1(_) => unreachable!(),
            };
            let mut sizes = whole.sizes.clone();
            sizes[0] += 1;
            *whole = TensorDesc::packed(whole.data_type, &sizes);
            cases.push(rejected_alone(
                format!("edges.{kind}.whole.non_axis_size"),
                file,
                "the whole one larger off the axis than every part (the parts agree with the first)"
                    .to_string(),
                op,
                &format!("{kind}.non_axis_sizes_match"),
            ));
            // A non-axis size off by one on the first part as well as the last (the whole is
            // what the parts are compared with).
            let parts = count - 1;
            for (at, which) in [(0, "first"), (parts - 1, "last")] {
                let mut op = base.clone();
                let part = match &mut op {
                    OperatorDesc::Split(d) => &mut d.output_tensors[at],
                    OperatorDesc::Join(d) => &mut d.input_tensors[at],
                    OperatorDesc::Slice1(_) => unreachable!(),
                };
                let mut sizes = part.sizes.clone();
                sizes[0] += 1;
                *part = TensorDesc::packed(part.data_type, &sizes);
                cases.push(rejected_alone(
                    format!("edges.{kind}.{which}_part.non_axis_size"),
                    file,
                    format!("the {which} part one larger off the axis than the whole"),
                    op,
                    &format!("{kind}.non_axis_sizes_match"),
                ));
            }
        }
        OperatorKind::Slice1 => {
            // Every non-empty set of the three arrays empty at once: one empty array, and
            // all of them, which a backend may read as "the whole input".
            let arrays = ["offsets", "sizes", "strides"];
            for set in 1..(1u32 << arrays.len()) {
                let chosen: Vec<&str> = (0..arrays.len())
                    .filter(|i| set & (1 << i) != 0)
                    .map(|i| arrays[i])
                    .collect();
                let mut op = base.clone();
                if let OperatorDesc::Slice1(d) = &mut op {
                    for array in &chosen {
                        match *array {
                            "offsets" => d.input_window_offsets.clear(),
                            "sizes" => d.input_window_sizes.clear(),
                            _ => d.input_window_strides.clear(),
                        }
                    }
                }
                let described: Vec<String> = (chosen.iter())
                    .map(|a| format!("InputWindow{}", capitalized(a)))
                    .collect();
                let description = match described.as_slice() {
                    [one] => format!("an empty {one} array"),
                    many => format!("empty {} arrays", many.join(", ")),
                };
                cases.push(rejected_alone(
                    format!("edges.slice1.window_{}_empty", chosen.join("_")),
                    file,
                    description,
                    op,
                    "slice1.window_arrays_length",
                ));
            }
        }
    }
    cases.extend(between_rows(kind, file));
    cases
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

/// At each level between two table rows (the row below applies), one descriptor of each
/// data type and each dimension count whose verdict there differs from the verdict of the row
/// above: rejected where the row above would accept, so a backend that looks the level up as
/// the next row (or the top one) fails.
fn between_rows(kind: OperatorKind, file: &str) -> Vec<Case> {
    let op_spec = spec::operator(kind);
    let mut rows: Vec<FeatureLevel> = op_spec.tensor_support.iter().map(spec::row_level).collect();
    rows.sort();
    let mut cases = Vec::new();
    for level in FeatureLevel::ALL {
        if rows.contains(&level) || level < spec::introduced(kind) {
            continue;
        }
        let Some(&above) = rows.iter().find(|&&r| r > level) else {
            continue;
        };
        let below = rows.iter().rev().find(|&&r| r < level).copied();
        let mut seen_type = false;
        let mut seen_dims = false;
        for data_type in DataType::ALL {
            for dimensions in 1..=8 {
                let op = descriptor(kind, data_type, dimensions);
                let Err(violation) = validate(&op, level) else {
                    continue;
                };
                if validate(&op, above).is_err()
                    || dmlcts_oracle::broken_rules(&op, level).len() > 1
                {
                    continue;
                }
                let by_type = violation.rule.ends_with("data_type_supported");
                if (by_type && seen_type) || (!by_type && seen_dims) {
                    continue;
                }
                seen_type |= by_type;
                seen_dims |= !by_type;
                let dt = data_type.name().to_ascii_lowercase();
                let mut case = rejected_alone(
                    format!("edges.{kind}.at_{level}.{dt}.{dimensions}d.rejected"),
                    file,
                    format!(
                        "{level} lies between the {} and {above} rows: {data_type} with {dimensions} \
                         dimension(s) is listed from {above} only",
                        below.map_or("first".to_string(), |b| b.to_string())
                    ),
                    op,
                    &violation.rule,
                );
                // The level under test is the one between the rows.
                case.feature_level = level;
                cases.push(case);
            }
        }
        // And an accepted descriptor at the between level that its row below lists first.
        if let Some(below) = below {
            let listed_from_below = DataType::ALL.into_iter().find_map(|dt| {
                (1..=8).map(|n| descriptor(kind, dt, n)).find(|op| {
                    validate(op, below).is_ok()
                        && FeatureLevel::ALL
                            .into_iter()
                            .filter(|&l| l < below)
                            .all(|l| validate(op, l).is_err())
                })
            });
            if let Some(op) = listed_from_below {
                let mut case = accepted(
                    format!("edges.{kind}.at_{level}.listed_from_{below}"),
                    file,
                    format!(
                        "{level} lies between the {below} and {above} rows: the {below} row applies"
                    ),
                    op,
                );
                case.feature_level = level;
                cases.push(case);
            }
        }
    }
    cases
}
