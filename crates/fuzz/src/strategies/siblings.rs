//! Sibling pairs for campaigns (issue 39, item 5): from a generated case `A`, a descriptor
//! `B` that differs from it in one field of one kind, where the difference changes the
//! verdict (B breaks one rule, A none or another) or, both valid, the layout read or written;
//! and the group `A, B, A` (the repeat with new data) that runs them back to back on one
//! backend session. A campaign makes one every `SIBLINGS_EVERY` cases; the group is one case
//! everywhere after that (checked, bucketed, shrunk through its `A`, saved, replayed).

use super::random_inputs;
use dmlcts_harness::{Case, Expectation};
use dmlcts_oracle::{broken_rules, spec, validate};
use dmlcts_tensor::{DataType, FeatureLevel, OperatorDesc, TensorDesc};
use proptest::strategy::ValueTree;

/// One case in this many is a sibling group (none in the large tier).
pub const SIBLINGS_EVERY: u64 = 16;

/// The field kinds a pair can differ in, as named in a group's name
/// (`fuzz.siblings.KIND`).
pub const FIELD_KINDS: [&str; 11] = [
    "input_strides",
    "output_strides",
    "sizes",
    "feature_level",
    "data_type",
    "total_size",
    "axis",
    "tensor_count",
    "window_offsets",
    "window_sizes",
    "window_strides",
];

/// The group name's prefix.
pub const GROUP_PREFIX: &str = "fuzz.siblings.";

/// Whether campaign case `index` is a sibling group (before knowing whether `A` allows one).
pub fn is_sibling_index(index: u64) -> bool {
    index % SIBLINGS_EVERY == SIBLINGS_EVERY - 5
}

/// The field kind (and new data) of campaign case `index`'s group, from the seed and `index`.
pub fn pick(seed: u64, index: u64) -> u64 {
    crate::cases::case_seed(seed ^ 0x7369_626c_696e_6773, index)
}

/// The group `A, B, A` for `a` and a field kind picked by `pick` (the next kind that applies
/// to `a` when that one does not); None where none applies.
pub fn sibling_group(a: &Case, pick: u64) -> Option<Case> {
    if !well_formed(&a.op) {
        return None;
    }
    let n = FIELD_KINDS.len();
    (0..n).find_map(|k| {
        let kind = (pick as usize + k) % n;
        let (b, b_level) = sibling(a, kind)?;
        Some(group(a, FIELD_KINDS[kind], b, b_level, pick))
    })
}

/// Whether every array has the length the rest of the descriptor gives it (a near miss of
/// those rules gets no sibling: its fields do not line up to change one).
fn well_formed(op: &OperatorDesc) -> bool {
    let tensors = op.inputs().into_iter().chain(op.outputs());
    let strides_fit = tensors
        .into_iter()
        .all(|(_, t)| t.strides.as_ref().is_none_or(|s| s.len() == t.sizes.len()));
    let window_fits = match op {
        OperatorDesc::Slice1(d) => {
            let rank = d.input_tensor.sizes.len();
            [
                d.input_window_offsets.len(),
                d.input_window_sizes.len(),
                d.input_window_strides.len(),
                d.output_tensor.sizes.len(),
                d.dimension_count as usize,
            ]
            .iter()
            .all(|&n| n == rank)
        }
        _ => true,
    };
    strides_fit && window_fits
}

/// The field kind a group's name names.
pub fn field_kind(group: &Case) -> Option<&str> {
    if !group.is_group() {
        return None;
    }
    group.name.strip_prefix(GROUP_PREFIX)
}

fn group(a: &Case, field: &str, b: OperatorDesc, b_level: FeatureLevel, pick: u64) -> Case {
    let name = format!("{GROUP_PREFIX}{field}");
    let step = |step: &str, op: &OperatorDesc, level: FeatureLevel, inputs| {
        let expect = match validate(op, level) {
            Ok(()) => Expectation::Accept,
            Err(v) => Expectation::Reject { rule: v.rule },
        };
        let mut case = a.clone();
        case.name = format!("{name}/{step}");
        case.tags = Vec::new();
        case.op = op.clone();
        case.feature_level = level;
        case.expected = vec![None; op.outputs().len()];
        case.inputs = inputs;
        case.expect = expect;
        case
    };
    let seed = pick.rotate_left(17) ^ 0x5eed_5151;
    let steps = vec![
        step("a", &a.op, a.feature_level, a.inputs.clone()),
        step("b", &b, b_level, random_inputs(&b, seed)),
        step(
            "a_again",
            &a.op,
            a.feature_level,
            random_inputs(&a.op, seed ^ 0xa5a5),
        ),
    ];
    let mut group = steps[0].clone();
    group.name = name;
    group.tags = vec!["fuzz".to_string(), "siblings".to_string()];
    group.steps = steps;
    group
}

/// The verdict at `level` stands for one rule at most, and differs from `a`'s (or both are
/// valid and the descriptors differ).
fn acceptable(a: &Case, b: &OperatorDesc, level: FeatureLevel) -> bool {
    let broken = broken_rules(b, level);
    if broken.len() > 1 || *b == a.op && level == a.feature_level {
        return false;
    }
    match (&a.expect, broken.first()) {
        (Expectation::Accept, _) => true,
        (Expectation::Reject { rule }, Some(v)) => v.rule != *rule,
        (Expectation::Reject { .. }, None) => true,
    }
}

fn inputs_mut(op: &mut OperatorDesc) -> Vec<&mut TensorDesc> {
    match op {
        OperatorDesc::Split(d) => vec![&mut d.input_tensor],
        OperatorDesc::Join(d) => d.input_tensors.iter_mut().collect(),
        OperatorDesc::Slice1(d) => vec![&mut d.input_tensor],
    }
}

fn outputs_mut(op: &mut OperatorDesc) -> Vec<&mut TensorDesc> {
    match op {
        OperatorDesc::Split(d) => d.output_tensors.iter_mut().collect(),
        OperatorDesc::Join(d) => vec![&mut d.output_tensor],
        OperatorDesc::Slice1(d) => vec![&mut d.output_tensor],
    }
}

/// New strides for `t`: packed where it has its own, else the packed strides of its
/// dimensions in reverse order (the same bytes, another layout). None where they equal its
/// own (at most one dimension past 1).
fn other_strides(t: &TensorDesc) -> Option<Option<Vec<u32>>> {
    if t.strides.is_some() {
        let packed = TensorDesc::packed(t.data_type, &t.sizes);
        return (packed.effective_strides() != t.effective_strides()).then_some(None);
    }
    let mut strides = vec![0u32; t.sizes.len()];
    let mut step: u64 = 1;
    for (i, &n) in t.sizes.iter().enumerate() {
        strides[i] = u32::try_from(step).ok()?;
        step = step.checked_mul(u64::from(n))?;
    }
    let ours: Vec<u64> = strides.iter().map(|&s| u64::from(s)).collect();
    // Dimensions of size 1 do not move anything.
    let moved = (t.sizes.iter().zip(ours.iter().zip(t.effective_strides())))
        .any(|(&n, (&a, b))| n > 1 && a != b);
    moved.then_some(Some(strides))
}

fn restrided(t: &TensorDesc, strides: Option<Vec<u32>>) -> TensorDesc {
    TensorDesc::strided(t.data_type, &t.sizes, strides.as_deref())
}

/// `B` and its level for field kind `kind`, or None where it does not apply to `a`.
fn sibling(a: &Case, kind: usize) -> Option<(OperatorDesc, FeatureLevel)> {
    let level = a.feature_level;
    let mut b = a.op.clone();
    let ok = |b: OperatorDesc| acceptable(a, &b, level).then_some((b, level));
    match FIELD_KINDS[kind] {
        "input_strides" => {
            for t in inputs_mut(&mut b) {
                if let Some(strides) = other_strides(t) {
                    *t = restrided(t, strides);
                    return ok(b);
                }
            }
            None
        }
        "output_strides" => {
            for t in outputs_mut(&mut b).into_iter().rev() {
                if let Some(strides) = other_strides(t) {
                    *t = restrided(t, strides);
                    return ok(b);
                }
            }
            None
        }
        "sizes" => {
            // One dimension past 1 of the last output one smaller, its total size kept.
            let t = outputs_mut(&mut b).pop()?;
            let d = t.sizes.iter().rposition(|&n| n > 1)?;
            t.sizes[d] -= 1;
            ok(b)
        }
        "feature_level" => {
            if a.expect != Expectation::Accept {
                return None;
            }
            let below = FeatureLevel::ALL.into_iter().rev().find(|&l| {
                l < level && {
                    let broken = broken_rules(&a.op, l);
                    broken.len() == 1 && spec::depends_on_feature_level(&broken[0].rule)
                }
            })?;
            Some((b, below))
        }
        "data_type" => {
            let t = outputs_mut(&mut b).pop()?;
            let size = t.data_type.element_size();
            let other = DataType::ALL
                .into_iter()
                .find(|&d| d != t.data_type && d.element_size() == size)?;
            t.data_type = other;
            ok(b)
        }
        "total_size" => {
            let t = outputs_mut(&mut b).pop()?;
            let minimum = u64::try_from(t.minimum_size_in_bytes()).ok()?;
            t.total_tensor_size_in_bytes = minimum.checked_sub(4)?;
            ok(b)
        }
        "axis" => {
            let rank = a.op.inputs().first()?.1.sizes.len() as u32;
            match &mut b {
                OperatorDesc::Split(d) => d.axis = rank,
                OperatorDesc::Join(d) => d.axis = rank,
                OperatorDesc::Slice1(_) => return None,
            }
            ok(b)
        }
        "tensor_count" => {
            match &mut b {
                OperatorDesc::Split(d) => d.output_tensors.push(d.output_tensors.last()?.clone()),
                OperatorDesc::Join(d) => d.input_tensors.push(d.input_tensors.last()?.clone()),
                OperatorDesc::Slice1(_) => return None,
            }
            ok(b)
        }
        "window_offsets" | "window_sizes" | "window_strides" => {
            let OperatorDesc::Slice1(d) = &mut b else {
                return None;
            };
            let dims = d.input_window_offsets.len().min(d.input_tensor.sizes.len());
            for i in (0..dims).rev() {
                let mut e = d.clone();
                match FIELD_KINDS[kind] {
                    "window_offsets" => {
                        e.input_window_offsets[i] = e.input_window_offsets[i].checked_add(1)?
                    }
                    "window_sizes" => {
                        e.input_window_sizes[i] = e.input_window_sizes[i].checked_add(1)?
                    }
                    _ => {
                        if e.input_window_sizes.get(i).copied().unwrap_or(0) < 2 {
                            continue;
                        }
                        e.input_window_strides[i] = e.input_window_strides[i].checked_neg()?
                    }
                }
                let e = OperatorDesc::Slice1(e);
                if acceptable(a, &e, level) {
                    return Some((e, level));
                }
            }
            None
        }
        _ => None,
    }
}

/// A value tree whose value is the sibling group of its inner tree's case (a campaign's
/// sibling case): shrinking shrinks `A` and makes the group again, so a group shrinks as a
/// unit. Where the shrunk `A` allows no sibling of any kind, its value is `A` alone, which
/// the shrinker then sees fail otherwise (or pass) and backs out of.
pub struct GroupTree {
    pub inner: Box<dyn ValueTree<Value = Case>>,
    pub pick: u64,
}

impl ValueTree for GroupTree {
    type Value = Case;
    fn current(&self) -> Case {
        let a = self.inner.current();
        sibling_group(&a, self.pick).unwrap_or(a)
    }
    fn simplify(&mut self) -> bool {
        self.inner.simplify()
    }
    fn complicate(&mut self) -> bool {
        self.inner.complicate()
    }
}
