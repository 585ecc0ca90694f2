//! Near misses: a valid descriptor within a level's tables with one rule of specs/ broken
//! just past its boundary (on either side where the rule has two), and nothing else broken at
//! that level, so a backend that checks the rules in any order must reject it for that rule.
//!
//! The rules are specs/'s, listed through the oracle (`spec::all_constraints`); each has an
//! edit here that breaks it. A rule with no edit is never aimed at, which the test that walks
//! every rule id shows.

use super::descs::{Within, desc_in};
use super::edit::{
    cover_minimum, emptied, is_nested, remade, resized, retyped, strides_u32, unrounded_minimum,
    with_unit_dimension, without_dimension,
};
use super::tables::Tables;
use dmlcts_oracle::spec;
use dmlcts_tensor::{FeatureLevel, OperatorDesc, OperatorKind, Slice1Desc, TensorDesc};
use proptest::prelude::*;

/// A near miss as generated: the descriptor, the level it is judged at, and the rule and edge
/// it aims at (`rule` is empty where no edit applied, which no test lets happen).
#[derive(Clone, Debug)]
pub struct NearMiss {
    pub op: OperatorDesc,
    pub level: FeatureLevel,
    pub rule: &'static str,
    pub edge: &'static str,
}

/// The random choices an edit makes (each taken modulo what it picks from).
#[derive(Clone, Copy, Debug)]
pub struct Picks {
    pub rule: u16,
    pub edge: u8,
    pub tensor: u16,
    pub dim: u16,
    pub value: u32,
}

fn picks() -> impl Strategy<Value = Picks> {
    (
        any::<u16>(),
        any::<u8>(),
        any::<u16>(),
        any::<u16>(),
        any::<u32>(),
    )
        .prop_map(|(rule, edge, tensor, dim, value)| Picks {
            rule,
            edge,
            tensor,
            dim,
            value,
        })
}

/// The rules of specs/ a near miss of `kind` at `level` can aim at: below the level the
/// operator was introduced at, only that; else every tensor rule and every rule of its page.
pub fn rules_for(kind: OperatorKind, level: FeatureLevel) -> Vec<&'static str> {
    let ids = spec::all_constraints().into_iter().map(|c| c.id.as_str());
    if level < spec::introduced(kind) {
        return ids.filter(|id| *id == INTRODUCED).collect();
    }
    let own = format!("{}.", kind.name());
    ids.filter(|id| id.starts_with("tensor.") || id.starts_with(&own))
        .collect()
}

const INTRODUCED: &str = "operator.introduced_at_level";

/// Near misses of `kind` (or any operator) judged at `level`.
pub fn near_miss_at(kind: Option<OperatorKind>, level: FeatureLevel) -> BoxedStrategy<NearMiss> {
    let kinds = kind.map_or(OperatorKind::ALL.to_vec(), |k| vec![k]);
    prop::sample::select(kinds)
        .prop_flat_map(move |kind| {
            let within = Within::tables(kind, level);
            let tables = within.tables.clone();
            (desc_in(&within), picks())
                .prop_map(move |(op, picks)| break_one_rule(op, level, &tables, picks))
        })
        .boxed()
}

/// Breaks the rule `picks.rule` chooses, or the next one that an edit can break on this
/// descriptor.
pub fn break_one_rule(
    op: OperatorDesc,
    level: FeatureLevel,
    tables: &Tables,
    picks: Picks,
) -> NearMiss {
    let rules = rules_for(op.kind(), level);
    let start = usize::from(picks.rule);
    for k in 0..rules.len() {
        let rule = rules[(start + k) % rules.len()];
        if let Some((broken, edge)) = break_rule(rule, &op, tables, picks) {
            return NearMiss {
                op: broken,
                level,
                rule,
                edge,
            };
        }
    }
    NearMiss {
        op,
        level,
        rule: "",
        edge: "",
    }
}

/// `op` with `rule` broken just past its edge, and the edge's name; None where this
/// descriptor or level has no such edge (a table that lists every type, one dimension).
pub fn break_rule(
    rule: &str,
    op: &OperatorDesc,
    tables: &Tables,
    p: Picks,
) -> Option<(OperatorDesc, &'static str)> {
    let mut op = op.clone();
    let edge = match rule {
        INTRODUCED => (!tables.available).then_some("below the level it was introduced at")?,
        "tensor.strides_count" => strides_count(&mut op, p),
        "tensor.sizes_nonzero" => sizes_nonzero(&mut op, p),
        "tensor.element_count_limit" => element_count_limit(&mut op, p)?,
        "tensor.total_size_minimum" => total_size_minimum(&mut op, p),
        "tensor.output_addresses_distinct" => output_addresses_distinct(&mut op, p)?,
        _ => match &mut op {
            OperatorDesc::Slice1(d) => slice1_rule(rule, d, tables, p)?,
            _ => split_join_rule(rule, &mut op, tables, p)?,
        },
    };
    Some((op, edge))
}

/// Every tensor, inputs first, and whether each is an output.
fn tensors_mut(op: &mut OperatorDesc) -> Vec<(&mut TensorDesc, bool)> {
    match op {
        OperatorDesc::Split(d) => std::iter::once((&mut d.input_tensor, false))
            .chain(d.output_tensors.iter_mut().map(|t| (t, true)))
            .collect(),
        OperatorDesc::Join(d) => d
            .input_tensors
            .iter_mut()
            .map(|t| (t, false))
            .chain(std::iter::once((&mut d.output_tensor, true)))
            .collect(),
        OperatorDesc::Slice1(d) => vec![(&mut d.input_tensor, false), (&mut d.output_tensor, true)],
    }
}

fn pick<T>(items: Vec<T>, at: u16) -> Option<T> {
    let n = items.len();
    items.into_iter().nth(usize::from(at) % n.max(1))
}

fn strides_count(op: &mut OperatorDesc, p: Picks) -> &'static str {
    let (tensor, is_output) = pick(tensors_mut(op), p.tensor).expect("an operator has tensors");
    let mut strides = strides_u32(tensor);
    // Without its last stride, an interleaved output's last dimension would not move its
    // address, and its addresses would overlap.
    let can_drop = !strides.is_empty() && (!is_output || is_nested(tensor));
    let edge = if p.edge % 3 == 2 && can_drop {
        // Zero as well as too few: an array that is there but empty, not "no strides".
        strides.clear();
        "an empty strides array"
    } else if p.edge.is_multiple_of(2) && can_drop {
        strides.pop();
        "one stride fewer than dimensions"
    } else {
        strides.push(1);
        "one stride more than dimensions"
    };
    tensor.strides = Some(strides);
    edge
}

fn sizes_nonzero(op: &mut OperatorDesc, p: Picks) -> &'static str {
    match op {
        OperatorDesc::Slice1(d) => {
            let dims = d.output_tensor.sizes.len();
            let mut sizes = d.output_tensor.sizes.clone();
            sizes[usize::from(p.dim) % dims] = 0;
            d.output_tensor = emptied(&d.output_tensor, &sizes);
            "an output dimension of size 0"
        }
        _ => {
            // A part of size 0 along the axis: the sizes still sum to the whole.
            let (_, parts, axis, _) = whole_and_parts(op).expect("Split or Join");
            let at = usize::from(p.tensor) % parts.len().max(1);
            let Some(model) = parts.get(at) else {
                return "an empty part";
            };
            let mut sizes = model.sizes.clone();
            sizes[*axis as usize] = 0;
            parts.insert(at, emptied(model, &sizes));
            "a part of size 0 along the axis"
        }
    }
}

/// 2^32 elements or just past: the whole of a Split or Join (and one part, to keep the sum),
/// or a Slice1's input, grown along one dimension; inputs broadcast (stride 0) so their
/// buffers stay small.
fn element_count_limit(op: &mut OperatorDesc, p: Picks) -> Option<&'static str> {
    const LIMIT: u128 = 1 << 32;
    let broadcast = |t: &TensorDesc| {
        let zeros = vec![0u32; t.sizes.len()];
        remade(t, t.data_type, &t.sizes, Some(&zeros))
    };
    match op {
        OperatorDesc::Slice1(d) => {
            let dims = d.input_tensor.sizes.len();
            let product_without = |k: usize| -> u128 {
                (0..dims)
                    .filter(|&i| i != k)
                    .map(|i| u128::from(d.input_tensor.sizes[i]))
                    .product()
            };
            let k = (0..dims)
                .map(|i| (usize::from(p.dim) + i) % dims)
                .find(|&k| product_without(k) >= 2)?;
            let grown = LIMIT.div_ceil(product_without(k));
            let mut sizes = d.input_tensor.sizes.clone();
            sizes[k] = u32::try_from(grown).ok()?;
            d.input_tensor = broadcast(&TensorDesc::packed(d.input_tensor.data_type, &sizes));
        }
        _ => {
            let (whole, parts, axis, parts_are_outputs) = whole_and_parts(op)?;
            let axis = *axis as usize;
            let others: u128 = (0..whole.sizes.len())
                .filter(|&i| i != axis)
                .map(|i| u128::from(whole.sizes[i]))
                .product();
            if others < 2 || parts.is_empty() {
                return None;
            }
            let grown = u32::try_from(LIMIT.div_ceil(others)).ok()?;
            let at = usize::from(p.tensor) % parts.len();
            let rest: u32 = (parts.iter().enumerate())
                .filter(|&(i, _)| i != at)
                .map(|(_, t)| t.sizes[axis])
                .sum();
            let mut sizes = whole.sizes.clone();
            sizes[axis] = grown;
            let packed = TensorDesc::packed(whole.data_type, &sizes);
            *whole = if parts_are_outputs {
                broadcast(&packed)
            } else {
                packed
            };
            let mut sizes = parts[at].sizes.clone();
            sizes[axis] = grown.checked_sub(rest)?;
            let packed = TensorDesc::packed(parts[at].data_type, &sizes);
            parts[at] = if parts_are_outputs {
                packed
            } else {
                broadcast(&packed)
            };
        }
    }
    Some("2^32 elements")
}

/// TotalTensorSizeInBytes one byte short of the rounded minimum (inside the rounding gap
/// when the tensor's bytes are not a multiple of 4), below the unrounded minimum, or, with a
/// stride that takes the minimum past 2^32 bytes, the minimum's low 32 bits.
fn total_size_minimum(op: &mut OperatorDesc, p: Picks) -> &'static str {
    let (tensor, is_output) = pick(tensors_mut(op), p.tensor).expect("an operator has tensors");
    let rounded = u64::try_from(tensor.minimum_size_in_bytes()).unwrap_or(u64::MAX);
    let exact = u64::try_from(unrounded_minimum(tensor)).unwrap_or(u64::MAX);
    match p.edge % 4 {
        3 => {
            // Zero as well as too small: 0 is not "not given".
            tensor.total_tensor_size_in_bytes = 0;
            "TotalTensorSizeInBytes 0"
        }
        1 if exact >= 1 && exact < rounded => {
            tensor.total_tensor_size_in_bytes = exact - 1;
            "below the unrounded minimum"
        }
        2 if widen_outermost_stride(tensor, is_output) => {
            let minimum = tensor.minimum_size_in_bytes();
            tensor.total_tensor_size_in_bytes = (minimum % (1 << 32)) as u64;
            "a minimum past 2^32 bytes, its low 32 bits given"
        }
        _ => {
            tensor.total_tensor_size_in_bytes = rounded.saturating_sub(1);
            if exact < rounded {
                "inside the rounding to 4 bytes"
            } else {
                "one byte short"
            }
        }
    }
}

/// Gives the moving dimension with the largest stride a stride that takes the minimum size
/// past 2^32 bytes, still outside the others' reach (an output stays distinct).
fn widen_outermost_stride(tensor: &mut TensorDesc, is_output: bool) -> bool {
    let mut strides = strides_u32(tensor);
    let moving = (0..tensor.sizes.len()).filter(|&d| tensor.sizes[d] > 1);
    let Some(outer) = moving.max_by_key(|&d| strides[d]) else {
        return false;
    };
    let reach: u64 = (0..tensor.sizes.len())
        .filter(|&d| d != outer && tensor.sizes[d] > 1)
        .map(|d| u64::from(tensor.sizes[d] - 1) * u64::from(strides[d]))
        .sum();
    let steps = u64::from(tensor.sizes[outer] - 1) * tensor.data_type.element_size() as u64;
    let wide = (1u64 << 32).div_ceil(steps).max(reach + 1);
    strides[outer] = u32::try_from(wide).unwrap_or(u32::MAX);
    if is_output && u64::from(strides[outer]) <= reach {
        return false;
    }
    tensor.strides = Some(strides);
    true
}

/// An output with a 0 stride on a dimension of size > 1, or with one dimension's stride
/// brought down to what the smaller-stride dimensions reach, so exactly one element is shared.
fn output_addresses_distinct(op: &mut OperatorDesc, p: Picks) -> Option<&'static str> {
    let outputs: Vec<&mut TensorDesc> = tensors_mut(op)
        .into_iter()
        .filter(|(_, is_output)| *is_output)
        .map(|(t, _)| t)
        .collect();
    let output = pick(outputs, p.tensor)?;
    let mut strides = strides_u32(output);
    let mut moving: Vec<usize> = (0..output.sizes.len())
        .filter(|&d| output.sizes[d] > 1)
        .collect();
    if moving.is_empty() {
        return None;
    }
    moving.sort_by_key(|&d| (strides[d], d));
    let edge = if p.edge.is_multiple_of(2) || moving.len() < 2 {
        strides[moving[usize::from(p.dim) % moving.len()]] = 0;
        "a 0 stride on a dimension of size > 1"
    } else {
        let j = 1 + usize::from(p.dim) % (moving.len() - 1);
        let reach: u64 = moving[..j]
            .iter()
            .map(|&d| u64::from(output.sizes[d] - 1) * u64::from(strides[d]))
            .sum();
        strides[moving[j]] = u32::try_from(reach).ok()?;
        "rows that overlap by one element"
    };
    output.strides = Some(strides);
    cover_minimum(output);
    Some(edge)
}

/// Split's input or Join's output, the parts on the other side, the axis, and whether the
/// parts are outputs.
fn whole_and_parts(
    op: &mut OperatorDesc,
) -> Option<(&mut TensorDesc, &mut Vec<TensorDesc>, &mut u32, bool)> {
    match op {
        OperatorDesc::Split(d) => Some((
            &mut d.input_tensor,
            &mut d.output_tensors,
            &mut d.axis,
            true,
        )),
        OperatorDesc::Join(d) => Some((
            &mut d.output_tensor,
            &mut d.input_tensors,
            &mut d.axis,
            false,
        )),
        OperatorDesc::Slice1(_) => None,
    }
}

fn split_join_rule(
    rule: &str,
    op: &mut OperatorDesc,
    tables: &Tables,
    p: Picks,
) -> Option<&'static str> {
    let name = op.kind().name();
    let local = rule.strip_prefix(name)?.strip_prefix('.')?;
    let (whole, parts, axis, parts_are_outputs) = whole_and_parts(op)?;
    let whole_is_output = !parts_are_outputs;
    let dims = whole.sizes.len();
    let a = *axis as usize;
    let counts = tables.dims.clone();
    let edge = match local {
        "output_count_nonzero" | "input_count_nonzero" => {
            parts.clear();
            "no parts"
        }
        "same_dimension_count" => {
            let at = usize::from(p.tensor) % parts.len();
            if p.edge.is_multiple_of(2) && counts.contains(&(dims + 1)) {
                // One dimension more on the whole or on a part (the axis stays in range).
                if p.dim.is_multiple_of(2) {
                    *whole = with_unit_dimension(whole, dims);
                } else {
                    parts[at] = with_unit_dimension(&parts[at], dims);
                }
                "one dimension more"
            } else if dims >= 2 && counts.contains(&(dims - 1)) {
                parts[at] = without_dimension(&parts[at], dims - 1);
                "one dimension fewer"
            } else if counts.contains(&(dims + 1)) {
                parts[at] = with_unit_dimension(&parts[at], dims);
                "one dimension more"
            } else {
                return None;
            }
        }
        "same_data_type" => {
            let at = usize::from(p.tensor) % (parts.len() + 1);
            let target = if at == parts.len() {
                whole
            } else {
                &mut parts[at]
            };
            let others: Vec<_> = (tables.data_types.iter())
                .filter(|&&dt| dt != target.data_type)
                .copied()
                .collect();
            let other = pick(others, p.value as u16)?;
            *target = retyped(target, other);
            "another listed type"
        }
        "dimension_count_supported" => {
            let below = *counts.start() - 1;
            let above = *counts.end() + 1;
            if (p.edge.is_multiple_of(2) || above > 9) && below >= 1 && below < dims {
                // Drop non-axis dimensions from every tensor, down to one fewer than the row.
                let mut candidates: Vec<usize> = (0..dims).filter(|&d| d != a).collect();
                let turn = usize::from(p.dim) % candidates.len();
                candidates.rotate_left(turn);
                let mut dropped: Vec<usize> = candidates.into_iter().take(dims - below).collect();
                dropped.sort_unstable_by(|x, y| y.cmp(x));
                for &d in &dropped {
                    *whole = without_dimension(whole, d);
                    for part in parts.iter_mut() {
                        *part = without_dimension(part, d);
                    }
                }
                *axis = (a - dropped.iter().filter(|&&d| d < a).count()) as u32;
                "one dimension fewer than the table allows"
            } else if above <= 9 && dims < above {
                let at = usize::from(p.dim) % (dims + 1);
                for _ in dims..above {
                    *whole = with_unit_dimension(whole, at);
                    for part in parts.iter_mut() {
                        *part = with_unit_dimension(part, at);
                    }
                }
                if at <= a {
                    *axis += (above - dims) as u32;
                }
                "one dimension more than the table allows"
            } else {
                return None;
            }
        }
        "data_type_supported" => {
            let other = pick(tables.other_data_types(), p.value as u16)?;
            *whole = retyped(whole, other);
            for part in parts.iter_mut() {
                *part = retyped(part, other);
            }
            "a type the table does not list"
        }
        "axis_in_range" => {
            if p.edge % 3 == 2 {
                *axis = u32::MAX;
                "Axis 2^32 - 1 (-1 as a signed integer)"
            } else if p.edge % 3 == 1 {
                // Past 2^31 as well as past the rank.
                *axis = 1 << 31;
                "Axis 2^31 (negative as a signed integer)"
            } else {
                *axis = dims as u32;
                "Axis = DimensionCount"
            }
        }
        "non_axis_sizes_match" => {
            if dims < 2 {
                return None;
            }
            let d = (a + 1 + usize::from(p.dim) % (dims - 1)) % dims;
            let at = usize::from(p.tensor) % (parts.len() + 1);
            let (target, is_output) = if at == parts.len() {
                (whole, whole_is_output)
            } else {
                (&mut parts[at], parts_are_outputs)
            };
            let mut sizes = target.sizes.clone();
            let edge = if p.edge.is_multiple_of(2) || sizes[d] < 2 {
                sizes[d] += 1;
                "one larger off the axis"
            } else {
                sizes[d] -= 1;
                "one smaller off the axis"
            };
            *target = resized(target, &sizes, is_output);
            edge
        }
        "output_sizes_sum_to_input" | "input_sizes_sum_to_output" => {
            let on_whole = p.tensor.is_multiple_of(2);
            let (target, is_output) = if on_whole {
                (whole, whole_is_output)
            } else {
                let at = usize::from(p.tensor / 2) % parts.len();
                (&mut parts[at], parts_are_outputs)
            };
            let mut sizes = target.sizes.clone();
            let edge = match (on_whole, p.edge.is_multiple_of(2) || sizes[a] < 2) {
                (true, true) => "the whole one larger along the axis",
                (true, false) => "the whole one smaller along the axis",
                (false, true) => "a part one larger along the axis",
                (false, false) => "a part one smaller along the axis",
            };
            if p.edge.is_multiple_of(2) || sizes[a] < 2 {
                sizes[a] += 1;
            } else {
                sizes[a] -= 1;
            }
            *target = resized(target, &sizes, is_output);
            edge
        }
        _ => return None,
    };
    Some(edge)
}

fn slice1_rule(rule: &str, d: &mut Slice1Desc, tables: &Tables, p: Picks) -> Option<&'static str> {
    let local = rule.strip_prefix("slice1.")?;
    let dims = d.input_tensor.sizes.len();
    let counts = tables.dims.clone();
    let i = usize::from(p.dim) % dims.max(1);
    let edge = match local {
        "window_arrays_length" if p.edge % 3 == 2 => {
            // Empty as well as short.
            match p.tensor % 3 {
                0 => d.input_window_offsets.clear(),
                1 => d.input_window_sizes.clear(),
                _ => d.input_window_strides.clear(),
            }
            "an empty array"
        }
        "window_arrays_length" => {
            let longer = p.edge.is_multiple_of(2);
            match p.tensor % 3 {
                0 if longer => d.input_window_offsets.push(0),
                1 if longer => d.input_window_sizes.push(1),
                _ if longer => d.input_window_strides.push(1),
                0 => drop(d.input_window_offsets.pop()),
                1 => drop(d.input_window_sizes.pop()),
                _ => drop(d.input_window_strides.pop()),
            }
            if longer {
                "an array one entry longer than DimensionCount"
            } else {
                "an array one entry shorter than DimensionCount"
            }
        }
        "same_dimension_count" => {
            // The output's last dimension: the windows of the others still fit it.
            let more = counts.contains(&(dims + 1));
            let fewer = dims >= 2 && counts.contains(&(dims - 1));
            if more && (p.edge.is_multiple_of(2) || !fewer) {
                d.output_tensor = with_unit_dimension(&d.output_tensor, dims);
                "an output with one dimension more"
            } else if fewer {
                d.output_tensor = without_dimension(&d.output_tensor, dims - 1);
                "an output with one dimension fewer"
            } else {
                return None;
            }
        }
        "dimension_count_matches_tensors" => {
            if p.edge.is_multiple_of(2) || dims == 0 {
                d.dimension_count += 1;
                d.input_window_offsets.push(0);
                d.input_window_sizes.push(1);
                d.input_window_strides.push(1);
                "DimensionCount one more than the tensors'"
            } else {
                d.dimension_count -= 1;
                d.input_window_offsets.pop();
                d.input_window_sizes.pop();
                d.input_window_strides.pop();
                "DimensionCount one fewer than the tensors'"
            }
        }
        "same_data_type" => {
            let others: Vec<_> = (tables.data_types.iter())
                .filter(|&&dt| dt != d.output_tensor.data_type)
                .copied()
                .collect();
            d.output_tensor = retyped(&d.output_tensor, pick(others, p.value as u16)?);
            "an output of another listed type"
        }
        "dimension_count_supported" => {
            let below = counts.start().checked_sub(1);
            let above = *counts.end() + 1;
            match below {
                Some(below) if (p.edge.is_multiple_of(2) || above > 9) && below < dims => {
                    for _ in below..dims {
                        let k = usize::from(p.dim) % d.input_tensor.sizes.len();
                        remove_slice1_dimension(d, k);
                    }
                    "one dimension fewer than the table allows"
                }
                _ if above <= 9 && dims < above => {
                    for _ in dims..above {
                        insert_slice1_unit_dimension(d, usize::from(p.dim) % (dims + 1));
                    }
                    "one dimension more than the table allows"
                }
                _ => return None,
            }
        }
        "data_type_supported" => {
            let other = pick(tables.other_data_types(), p.value as u16)?;
            d.input_tensor = retyped(&d.input_tensor, other);
            d.output_tensor = retyped(&d.output_tensor, other);
            "a type the table does not list"
        }
        "window_nonempty" => {
            d.input_window_sizes[i] = 0;
            "a window of size 0"
        }
        "window_inside_input" => {
            let (input, size) = (d.input_tensor.sizes[i], d.input_window_sizes[i]);
            match p.edge % 3 {
                0 => {
                    d.input_window_offsets[i] = input - size + 1;
                    "a window offset one past"
                }
                1 => {
                    d.input_window_sizes[i] = input - d.input_window_offsets[i] + 1;
                    "a window one element too large"
                }
                _ => {
                    // Offset + size = 2^32 + r: r <= the input size after 32-bit wrapping.
                    let r = p.value % size.min(input.saturating_add(1));
                    let offset = (1u64 << 32) - u64::from(size) + u64::from(r);
                    d.input_window_offsets[i] = u32::try_from(offset).ok()?;
                    "offset + size past 2^32 (wraps to inside)"
                }
            }
        }
        "window_stride_nonzero" => {
            d.input_window_strides[i] = 0;
            "a window stride of 0"
        }
        "output_size_within_max_copied" => {
            let stride = d.input_window_strides[i].unsigned_abs();
            let max = 1 + (d.input_window_sizes[i] - 1) / stride;
            let mut sizes = d.output_tensor.sizes.clone();
            sizes[i] = max + 1;
            d.output_tensor = resized(&d.output_tensor, &sizes, true);
            "an output one more than MaxCopiedElements"
        }
        _ => return None,
    };
    Some(edge)
}

fn remove_slice1_dimension(d: &mut Slice1Desc, k: usize) {
    d.input_tensor = without_dimension(&d.input_tensor, k);
    d.output_tensor = without_dimension(&d.output_tensor, k);
    for array in [&mut d.input_window_offsets, &mut d.input_window_sizes] {
        array.remove(k);
    }
    d.input_window_strides.remove(k);
    d.dimension_count -= 1;
}

fn insert_slice1_unit_dimension(d: &mut Slice1Desc, k: usize) {
    d.input_tensor = with_unit_dimension(&d.input_tensor, k);
    d.output_tensor = with_unit_dimension(&d.output_tensor, k);
    d.input_window_offsets.insert(k, 0);
    d.input_window_sizes.insert(k, 1);
    d.input_window_strides.insert(k, 1);
    d.dimension_count += 1;
}
