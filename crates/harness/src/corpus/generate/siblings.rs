//! Sibling groups (cases/generated/siblings_*.yaml): for every field a backend's compile
//! cache could leave out of its key, a group of two descriptors that differ in that field
//! alone, where the difference changes the verdict or the output, run back to back on one
//! backend as `A, B, A` (both orders; the repeat of `A` has new input data, being a step of
//! its own name): each input stride and output stride, each Slice1 window array, an input and
//! an output size, the feature level, each data type against one of equal element size,
//! TotalTensorSizeInBytes of an input and an output, the axis, the tensor count. Each pair
//! runs at one level (but the level's own pair), so a key that leaves the field out meets
//! both.

use super::{case, descriptor};
use crate::corpus::{Case, Expectation};
use dmlcts_oracle::{broken_rules, spec, validate};
use dmlcts_tensor::{
    DataType, FeatureLevel, JoinDesc, OperatorDesc, OperatorKind, Slice1Desc, SplitDesc, TensorDesc,
};

/// Each equal-element-size class: the type of `A`, and the type one tensor of `B` takes.
const EQUAL_SIZE_PAIRS: [(DataType, DataType, &str); 4] = [
    (DataType::Int32, DataType::Float32, "4_byte"),
    (DataType::Uint16, DataType::Int16, "2_byte"),
    (DataType::Int64, DataType::Uint64, "8_byte"),
    (DataType::Int8, DataType::Uint8, "1_byte"),
];

/// The base descriptor of `kind`'s groups, in `data_type`: Split and Join of parts 1 and 3
/// along the last of four dimensions ([2, 1, 1, 4]); Slice1 a window of 3 of the last
/// dimension's 4, stride -2 (so offsets, sizes and strides each change the output).
fn base(kind: OperatorKind, data_type: DataType) -> OperatorDesc {
    match kind {
        OperatorKind::Split | OperatorKind::Join => descriptor(kind, data_type, 4),
        OperatorKind::Slice1 => OperatorDesc::Slice1(Slice1Desc {
            input_tensor: TensorDesc::packed(data_type, &[2, 1, 1, 4]),
            output_tensor: TensorDesc::packed(data_type, &[2, 1, 1, 2]),
            dimension_count: 4,
            input_window_offsets: vec![0; 4],
            input_window_sizes: vec![2, 1, 1, 3],
            input_window_strides: vec![1, 1, 1, -2],
        }),
    }
}

/// The input tensor a group changes (Join's last, Split's and Slice1's only) and the output
/// (Split's last, Join's and Slice1's only): each with two dimensions past 1.
fn input_mut(op: &mut OperatorDesc) -> &mut TensorDesc {
    match op {
        OperatorDesc::Split(d) => &mut d.input_tensor,
        OperatorDesc::Join(d) => d.input_tensors.last_mut().expect("two inputs"),
        OperatorDesc::Slice1(d) => &mut d.input_tensor,
    }
}

fn output_mut(op: &mut OperatorDesc) -> &mut TensorDesc {
    match op {
        OperatorDesc::Split(d) => d.output_tensors.last_mut().expect("two outputs"),
        OperatorDesc::Join(d) => &mut d.output_tensor,
        OperatorDesc::Slice1(d) => &mut d.output_tensor,
    }
}

/// `tensor` with new strides, its total size the least they need.
fn restride(tensor: &mut TensorDesc, strides: &[u32]) {
    *tensor = TensorDesc::strided(tensor.data_type, &tensor.sizes, Some(strides));
}

/// `tensor` with new (smaller) sizes, packed, its TotalTensorSizeInBytes as it was: only
/// the sizes differ.
fn resize(tensor: &mut TensorDesc, sizes: &[u32]) {
    let total = tensor.total_tensor_size_in_bytes;
    *tensor = TensorDesc::packed(tensor.data_type, sizes);
    assert!(
        total >= tensor.total_tensor_size_in_bytes,
        "sizes {sizes:?} need more bytes"
    );
    tensor.total_tensor_size_in_bytes = total;
}

/// Strides that transpose a tensor of four dimensions (the first fastest), the same bytes in
/// all: what a cache keyed without strides (even with the total size) reads or writes as
/// packed.
fn transposed(sizes: &[u32]) -> Vec<u32> {
    let n = sizes[0];
    vec![1, n, n, n]
}

/// One pair: the field, in words and as an id, and its two descriptors.
struct Pair {
    id: String,
    field: String,
    a: OperatorDesc,
    b: OperatorDesc,
}

fn pair(id: &str, field: &str, a: &OperatorDesc, change: impl FnOnce(&mut OperatorDesc)) -> Pair {
    let mut b = a.clone();
    change(&mut b);
    Pair {
        id: id.to_string(),
        field: field.to_string(),
        a: a.clone(),
        b,
    }
}

/// Every pair of `kind` but the level's (`level_group` makes that one).
fn pairs(kind: OperatorKind) -> Vec<Pair> {
    let a = base(kind, DataType::Int32);
    let mut pairs = vec![
        pair("input_strides", "an input's strides", &a, |op| {
            let t = input_mut(op);
            let strides = transposed(&t.sizes);
            restride(t, &strides);
        }),
        pair("output_strides", "an output's strides", &a, |op| {
            let t = output_mut(op);
            let strides = transposed(&t.sizes);
            restride(t, &strides);
        }),
        pair(
            "input_total_size",
            "an input's TotalTensorSizeInBytes",
            &a,
            |op| input_mut(op).total_tensor_size_in_bytes -= 4,
        ),
        pair(
            "output_total_size",
            "an output's TotalTensorSizeInBytes",
            &a,
            |op| output_mut(op).total_tensor_size_in_bytes -= 4,
        ),
    ];
    match kind {
        OperatorKind::Join => {
            pairs.push(pair("input_sizes", "an input's sizes", &a, |op| {
                resize(input_mut(op), &[2, 1, 1, 2]);
            }));
            pairs.push(pair("output_sizes", "the output's sizes", &a, |op| {
                resize(output_mut(op), &[2, 1, 1, 3]);
            }));
            pairs.push(pair("axis", "the axis", &a, |op| {
                // Any other axis in range breaks two rules (the sizes along it and across it).
                if let OperatorDesc::Join(d) = op {
                    d.axis = 4;
                }
            }));
            let two = OperatorDesc::Join(JoinDesc {
                input_tensors: vec![TensorDesc::packed(DataType::Int32, &[2, 1, 1, 2]); 2],
                output_tensor: TensorDesc::packed(DataType::Int32, &[2, 1, 1, 4]),
                axis: 3,
            });
            pairs.push(pair("input_count", "the input count", &two, |op| {
                if let OperatorDesc::Join(d) = op {
                    d.input_tensors.push(d.input_tensors[0].clone());
                }
            }));
        }
        OperatorKind::Split => {
            pairs.push(pair("input_sizes", "the input's sizes", &a, |op| {
                resize(input_mut(op), &[2, 1, 1, 3]);
            }));
            pairs.push(pair("output_sizes", "an output's sizes", &a, |op| {
                resize(output_mut(op), &[2, 1, 1, 2]);
            }));
            pairs.push(pair("axis", "the axis", &a, |op| {
                // Any other axis in range breaks two rules (the sizes along it and across it).
                if let OperatorDesc::Split(d) = op {
                    d.axis = 4;
                }
            }));
            let two = OperatorDesc::Split(SplitDesc {
                input_tensor: TensorDesc::packed(DataType::Int32, &[2, 1, 1, 4]),
                output_tensors: vec![TensorDesc::packed(DataType::Int32, &[2, 1, 1, 2]); 2],
                axis: 3,
            });
            pairs.push(pair("output_count", "the output count", &two, |op| {
                if let OperatorDesc::Split(d) = op {
                    d.output_tensors.push(d.output_tensors[0].clone());
                }
            }));
        }
        OperatorKind::Slice1 => {
            pairs.push(pair("input_sizes", "the input's sizes", &a, |op| {
                resize(input_mut(op), &[2, 1, 1, 3]);
            }));
            pairs.push(pair("output_sizes", "the output's sizes", &a, |op| {
                resize(output_mut(op), &[2, 1, 1, 1]);
            }));
            let window = |op: &mut OperatorDesc| -> Slice1Desc {
                match op {
                    OperatorDesc::Slice1(d) => d.clone(),
                    _ => unreachable!("a Slice1 pair"),
                }
            };
            pairs.push(pair("window_offsets", "the window offsets", &a, |op| {
                let mut d = window(op);
                d.input_window_offsets[3] = 1;
                *op = OperatorDesc::Slice1(d);
            }));
            pairs.push(pair("window_sizes", "the window sizes", &a, |op| {
                let mut d = window(op);
                d.input_window_sizes[3] = 4;
                *op = OperatorDesc::Slice1(d);
            }));
            pairs.push(pair("window_strides", "the window strides", &a, |op| {
                let mut d = window(op);
                d.input_window_strides[3] = 2;
                *op = OperatorDesc::Slice1(d);
            }));
        }
    }
    for (of_a, of_b, id) in EQUAL_SIZE_PAIRS {
        let a = base(kind, of_a);
        pairs.push(pair(
            &format!("data_type_{id}"),
            &format!("an output's data type ({of_a} and {of_b}, both {id})"),
            &a,
            |op| output_mut(op).data_type = of_b,
        ));
    }
    pairs
}

/// The lowest level at which `a` is valid and `b` breaks at most one rule (its verdict then
/// stands for that rule alone).
fn common_level(a: &OperatorDesc, b: &OperatorDesc) -> Option<FeatureLevel> {
    FeatureLevel::ALL
        .into_iter()
        .find(|&level| validate(a, level).is_ok() && broken_rules(b, level).len() <= 1)
}

/// A step of `group`: a case at `level` with the oracle's verdict there, named `GROUP/STEP`
/// (its seeded inputs seeded from that whole name, so a repeat has new data).
fn step(group: &str, name: &str, file: &str, level: FeatureLevel, op: &OperatorDesc) -> Case {
    let expect = match validate(op, level) {
        Ok(()) => Expectation::Accept,
        Err(v) => Expectation::Reject { rule: v.rule },
    };
    let mut step = case(
        format!("{group}/{name}"),
        file,
        String::new(),
        level,
        op.clone(),
        expect,
    );
    step.description = None;
    step.tags = Vec::new();
    step
}

/// `A, B, A` as one group.
fn group(
    name: String,
    file: &str,
    description: String,
    (a, level_a): (&OperatorDesc, FeatureLevel),
    (b, level_b): (&OperatorDesc, FeatureLevel),
) -> Case {
    let steps = vec![
        step(&name, "a", file, level_a, a),
        step(&name, "b", file, level_b, b),
        step(&name, "a_again", file, level_a, a),
    ];
    let mut group = steps[0].clone();
    group.name = name;
    group.description = Some(description);
    group.tags = vec!["generated".to_string(), "siblings".to_string()];
    group.steps = steps;
    group
}

/// The level's pair: a descriptor valid from some level up and rejected by the table of the
/// level below it (that rule alone), the two steps at those two levels.
fn level_group(kind: OperatorKind, file: &str) -> Case {
    let introduced = spec::introduced(kind);
    for data_type in DataType::ALL {
        for dimensions in [4, 5, 1, 2, 3, 6, 7, 8] {
            let op = descriptor(kind, data_type, dimensions);
            let Some(valid) = FeatureLevel::ALL
                .into_iter()
                .find(|&l| validate(&op, l).is_ok())
            else {
                continue;
            };
            let below = FeatureLevel::ALL.into_iter().rev().find(|&l| {
                l < valid && l >= introduced && {
                    let broken = broken_rules(&op, l);
                    broken.len() == 1 && spec::depends_on_feature_level(&broken[0].rule)
                }
            });
            if let Some(below) = below {
                return group(
                    format!("siblings.{kind}.feature_level"),
                    file,
                    format!(
                        "the feature level: {data_type} with {dimensions} dimension(s) at \
                         {valid}, which lists it, and at {below}, whose table does not"
                    ),
                    (&op, valid),
                    (&op, below),
                );
            }
        }
    }
    panic!("no {kind} descriptor is valid at one level and rejected by the table below it")
}

/// The groups of one operator's file.
pub fn sibling_groups(kind: OperatorKind, file: &str) -> Vec<Case> {
    let mut groups = Vec::new();
    for pair in pairs(kind) {
        let name = format!("siblings.{kind}.{}", pair.id);
        let level = common_level(&pair.a, &pair.b)
            .unwrap_or_else(|| panic!("{name}: no level runs both siblings"));
        let verdict = |op: &OperatorDesc| validate(op, level).map_err(|v| v.rule);
        let says = match verdict(&pair.b) {
            Ok(()) => "both valid, the outputs differ".to_string(),
            Err(rule) => format!("the second rejected ({rule})"),
        };
        groups.push(group(
            name,
            file,
            format!(
                "only {} differs: {says}; A, B, A on one backend",
                pair.field
            ),
            (&pair.a, level),
            (&pair.b, level),
        ));
    }
    groups.push(level_group(kind, file));
    groups
}
