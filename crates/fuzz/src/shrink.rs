//! Time-bounded shrinking. proptest's own shrinking stops after a number of iterations, not
//! a time, which through a slow out-of-process backend can take minutes; this loop walks the
//! same value tree but stops at a deadline. Then `normalize` tries structural
//! simplifications proptest cannot make (drop a dimension, a 4-byte element type, packed
//! layouts, zero offsets, unit strides, full-size outputs) and keeps each one under which the
//! failure stays the same: what is left is what the failure needs, which the signature names.
//! Both stop early where `enough` holds for the simplest case so far (it fits a bucket
//! already found, so shrinking it further would only find that bucket again).

use crate::signature::max_copied;
use crate::strategies::case_at;
use crate::strategies::edit::{remade, retyped, without_dimension};
use dmlcts_harness::Case;
use dmlcts_tensor::{DataType, OperatorDesc, TensorDesc};
use proptest::strategy::ValueTree;
use std::time::Instant;

/// Steps of the value tree at most: enough to take the big steps (proptest's flat-mapped
/// trees can otherwise take hundreds of thousands of steps polishing seeds and indices, each
/// a run of the case); `normalize` does the rest, in steps that each remove a feature, a part
/// or half a dimension.
pub const MAX_SHRINK_STEPS: u32 = 512;

/// Walks `tree` towards simpler cases while `still_fails` holds, until the tree has nothing
/// simpler, `MAX_SHRINK_STEPS`, the deadline, or a case for which `enough` holds. Returns the
/// simplest failing case and what `still_fails` gave for it. `first` is what `still_fails`
/// gave for `start`, the case `tree.current()` stands for.
pub fn shrink<F>(
    tree: &mut dyn ValueTree<Value = Case>,
    start: Case,
    first: F,
    deadline: Instant,
    mut still_fails: impl FnMut(&Case) -> Option<F>,
    enough: impl Fn(&Case, &F) -> bool,
) -> (Case, F) {
    let mut best = (start, first);
    if enough(&best.0, &best.1) || !tree.simplify() {
        return best;
    }
    for _ in 0..MAX_SHRINK_STEPS {
        if Instant::now() >= deadline {
            break;
        }
        let candidate = tree.current();
        match still_fails(&candidate) {
            Some(found) => {
                best = (candidate, found);
                if enough(&best.0, &best.1) || !tree.simplify() {
                    break;
                }
            }
            None => {
                if !tree.complicate() {
                    break;
                }
            }
        }
    }
    best
}

/// Applies structural simplifications while `still_fails` holds, until none applies, the
/// deadline passes, `max_checks` candidates were tried, or `enough` holds.
pub fn normalize<F>(
    case: Case,
    found: F,
    deadline: Instant,
    max_checks: usize,
    mut still_fails: impl FnMut(&Case) -> Option<F>,
    enough: impl Fn(&Case, &F) -> bool,
) -> (Case, F) {
    let mut best = (case, found);
    let mut checks = 0;
    'again: while Instant::now() < deadline && !enough(&best.0, &best.1) {
        for op in simplifications(&best.0.op) {
            if Instant::now() >= deadline || checks >= max_checks {
                break 'again;
            }
            checks += 1;
            let candidate = rebuild(&best.0, op);
            if let Some(found) = still_fails(&candidate) {
                best = (candidate, found);
                continue 'again;
            }
        }
        break;
    }
    best
}

/// The case with another descriptor: the same name and input seeds, the expectation the
/// oracle gives for the new descriptor at the case's level.
fn rebuild(case: &Case, op: OperatorDesc) -> Case {
    let seed = match case.inputs.first() {
        Some(dmlcts_harness::corpus::data::TensorData::Random { seed }) => *seed,
        _ => 0,
    };
    case_at(&case.name, op, seed, case.feature_level)
}

fn packed(tensor: &TensorDesc) -> TensorDesc {
    remade(tensor, tensor.data_type, &tensor.sizes, None)
}

fn minimal_total(tensor: &TensorDesc) -> TensorDesc {
    TensorDesc::strided(tensor.data_type, &tensor.sizes, tensor.strides.as_deref())
}

fn resized(tensor: &TensorDesc, d: usize, size: u32) -> TensorDesc {
    let mut sizes = tensor.sizes.clone();
    sizes[d] = size;
    remade(tensor, tensor.data_type, &sizes, tensor.strides.as_deref())
}

/// Every tensor of the descriptor, mutably.
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

fn map_tensors(op: &OperatorDesc, f: impl Fn(&TensorDesc) -> TensorDesc) -> OperatorDesc {
    let mut op = op.clone();
    for tensor in tensors_mut(&mut op) {
        *tensor = f(tensor);
    }
    op
}

/// Candidate simplifications of a descriptor, the boldest first.
fn simplifications(op: &OperatorDesc) -> Vec<OperatorDesc> {
    let mut candidates = Vec::new();
    let dims = op.outputs().first().map_or(0, |(_, t)| t.sizes.len());
    // Drop a dimension (never the Split/Join axis, never the last one).
    if dims > 1 {
        for d in 0..dims {
            let mut candidate = op.clone();
            let ok = match &mut candidate {
                OperatorDesc::Split(s) if d != s.axis as usize => {
                    if (d as u32) < s.axis {
                        s.axis -= 1;
                    }
                    true
                }
                OperatorDesc::Join(j) if d != j.axis as usize => {
                    if (d as u32) < j.axis {
                        j.axis -= 1;
                    }
                    true
                }
                OperatorDesc::Slice1(s) => {
                    for array in [&mut s.input_window_offsets, &mut s.input_window_sizes] {
                        if d < array.len() {
                            array.remove(d);
                        }
                    }
                    if d < s.input_window_strides.len() {
                        s.input_window_strides.remove(d);
                    }
                    s.dimension_count = s.dimension_count.saturating_sub(1);
                    true
                }
                _ => false,
            };
            if ok {
                for tensor in tensors_mut(&mut candidate) {
                    *tensor = without_dimension(tensor, d);
                }
                candidates.push(candidate);
            }
        }
    }
    // A 4-byte element type everywhere (only when every tensor has one type, so a type
    // mismatch stays one).
    let types: Vec<DataType> = op
        .inputs()
        .iter()
        .chain(&op.outputs())
        .map(|(_, t)| t.data_type)
        .collect();
    if types.windows(2).all(|w| w[0] == w[1])
        && types.first().is_some_and(|t| t.element_size() != 4)
    {
        candidates.push(map_tensors(op, |t| retyped(t, DataType::Uint32)));
    }
    // Packed layouts and minimal totals: all at once, then one tensor at a time.
    candidates.push(map_tensors(op, packed));
    candidates.push(map_tensors(op, minimal_total));
    let count = op.inputs().len() + op.outputs().len();
    for i in 0..count {
        let mut candidate = op.clone();
        if let Some(tensor) = tensors_mut(&mut candidate).into_iter().nth(i) {
            *tensor = packed(tensor);
        }
        candidates.push(candidate);
    }
    if let OperatorDesc::Slice1(s) = op {
        for d in 0..s.input_window_strides.len().min(s.input_window_sizes.len()) {
            let mut zero_offset = s.clone();
            if let Some(o) = zero_offset.input_window_offsets.get_mut(d) {
                *o = 0;
            }
            let stride = s.input_window_strides[d];
            let mut positive = s.clone();
            // i32::MIN has no positive counterpart: the largest positive stride stands in.
            positive.input_window_strides[d] = stride.checked_abs().unwrap_or(i32::MAX);
            let mut unit = s.clone();
            unit.input_window_strides[d] = stride.signum();
            let mut full_output = s.clone();
            if d < s.output_tensor.sizes.len() {
                full_output.output_tensor = resized(
                    &s.output_tensor,
                    d,
                    max_copied(s.input_window_sizes[d], stride),
                );
            }
            let mut tight_input = s.clone();
            let offset = s.input_window_offsets.get(d).copied().unwrap_or(0);
            // A window past 2^32 (a near miss of window_inside_input) has no tight input.
            if let Some(end) = offset.checked_add(s.input_window_sizes[d])
                && d < s.input_tensor.sizes.len()
            {
                tight_input.input_tensor = resized(&s.input_tensor, d, end);
            }
            for candidate in [zero_offset, positive, unit, full_output, tight_input] {
                if candidate != *s {
                    candidates.push(OperatorDesc::Slice1(candidate));
                }
            }
        }
    }
    candidates.extend(fewer_parts_and_axis_first(op));
    candidates.extend(halved_dimensions(op));
    candidates.retain(|c| c != op);
    candidates
}

/// Split's input or Join's output, the parts, the axis.
fn whole_and_parts(
    op: &mut OperatorDesc,
) -> Option<(&mut TensorDesc, &mut Vec<TensorDesc>, &mut u32)> {
    match op {
        OperatorDesc::Split(d) => Some((&mut d.input_tensor, &mut d.output_tensors, &mut d.axis)),
        OperatorDesc::Join(d) => Some((&mut d.output_tensor, &mut d.input_tensors, &mut d.axis)),
        OperatorDesc::Slice1(_) => None,
    }
}

/// Split and Join: the axis moved to dimension 0 (dimensions 0 and Axis swapped in every
/// tensor), and each part dropped (the whole one part shorter along the axis).
fn fewer_parts_and_axis_first(op: &OperatorDesc) -> Vec<OperatorDesc> {
    let mut candidates = Vec::new();
    let mut first = op.clone();
    if let Some((_, _, axis)) = whole_and_parts(&mut first)
        && *axis > 0
    {
        let a = *axis as usize;
        *axis = 0;
        for tensor in tensors_mut(&mut first) {
            if a < tensor.sizes.len() {
                tensor.sizes.swap(0, a);
            }
            if let Some(strides) = &mut tensor.strides
                && a < strides.len()
            {
                strides.swap(0, a);
            }
        }
        candidates.push(first);
    }
    let parts = whole_and_parts(&mut op.clone()).map_or(0, |(_, parts, _)| parts.len());
    for k in 0..parts {
        let mut candidate = op.clone();
        let Some((whole, parts, axis)) = whole_and_parts(&mut candidate) else {
            break;
        };
        let a = *axis as usize;
        if parts.len() < 2 || a >= whole.sizes.len() || a >= parts[k].sizes.len() {
            break;
        }
        let dropped = parts.remove(k);
        let mut sizes = whole.sizes.clone();
        sizes[a] = sizes[a].saturating_sub(dropped.sizes[a]).max(1);
        *whole = remade(whole, whole.data_type, &sizes, whole.strides.as_deref());
        candidates.push(candidate);
    }
    candidates
}

/// Each dimension of size > 1 halved (rounded up): every tensor's, off a Split's or Join's
/// axis; a Slice1's input, with its window and output brought inside it.
fn halved_dimensions(op: &OperatorDesc) -> Vec<OperatorDesc> {
    let half = |size: u32| size.div_ceil(2);
    let mut candidates = Vec::new();
    match op {
        OperatorDesc::Slice1(s) => {
            for d in 0..s.input_tensor.sizes.len() {
                let input = s.input_tensor.sizes[d];
                if input < 2 || d >= s.input_window_sizes.len() || d >= s.output_tensor.sizes.len()
                {
                    continue;
                }
                let mut c = s.clone();
                let new_input = half(input);
                c.input_tensor = resized(&s.input_tensor, d, new_input);
                let offset = s.input_window_offsets.get(d).copied().unwrap_or(0);
                let offset = offset.min(new_input - 1);
                if let Some(o) = c.input_window_offsets.get_mut(d) {
                    *o = offset;
                }
                let window = s.input_window_sizes[d].min(new_input - offset);
                c.input_window_sizes[d] = window;
                let stride = s.input_window_strides.get(d).copied().unwrap_or(1);
                let output = s.output_tensor.sizes[d].min(max_copied(window, stride).max(1));
                c.output_tensor = resized(&s.output_tensor, d, output);
                candidates.push(OperatorDesc::Slice1(c));
            }
        }
        _ => {
            let mut probe = op.clone();
            let Some((whole, _, axis)) = whole_and_parts(&mut probe) else {
                return candidates;
            };
            let (dims, axis) = (whole.sizes.len(), *axis as usize);
            for d in (0..dims).filter(|&d| d != axis) {
                let mut candidate = op.clone();
                let mut changed = false;
                for tensor in tensors_mut(&mut candidate) {
                    if let Some(&size) = tensor.sizes.get(d)
                        && size > 1
                    {
                        *tensor = resized(tensor, d, half(size));
                        changed = true;
                    }
                }
                if changed {
                    candidates.push(candidate);
                }
            }
        }
    }
    candidates
}

#[cfg(test)]
mod tests {
    use super::*;
    use dmlcts_tensor::{DataType, Slice1Desc};

    /// The edges a near miss reaches: a stride of i32::MIN and a window past 2^32. Simplifying
    /// them makes candidates, never an overflow (a panic here once hung a campaign).
    #[test]
    fn simplifying_a_slice_at_the_integer_edges_makes_candidates_without_overflow() {
        let op = OperatorDesc::Slice1(Slice1Desc {
            input_tensor: TensorDesc::packed(DataType::Float32, &[1, 4]),
            output_tensor: TensorDesc::packed(DataType::Float32, &[1, 1]),
            dimension_count: 2,
            input_window_offsets: vec![0, u32::MAX],
            input_window_sizes: vec![1, 4],
            input_window_strides: vec![1, i32::MIN],
        });
        let candidates = simplifications(&op);
        let OperatorDesc::Slice1(positive) = candidates
            .iter()
            .find(|c| matches!(c, OperatorDesc::Slice1(s) if s.input_window_strides.get(1) == Some(&i32::MAX)))
            .expect("the positive-stride candidate")
        else {
            unreachable!()
        };
        assert_eq!(positive.input_window_offsets, [0, u32::MAX]);
    }
}
