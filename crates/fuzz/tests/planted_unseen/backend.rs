//! A backend around the oracle's validation and execution with one bug planted, written from
//! issue 39's list of bugs that escaped (not from the cases meant to catch them). It keeps a
//! compile cache for the whole run, as a backend process does across requests: one `Planted`
//! serves every level, each level a `View` of it. With `Bug::None` the cache's key is the
//! whole descriptor and the level, and the backend is correct.
//!
//! A backend whose bug is not about state answers `unsupported` where its bug cannot show (a
//! valid descriptor its bug does not reach), which keeps runs short and changes no verdict; a
//! cache bug runs everything, since it shows only through sequences.

use dmlcts_oracle::spec::{row_level, support_row};
use dmlcts_oracle::{broken_rules, execute};
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, DataType, FeatureLevel, OperatorDesc, OutputBinding,
    Rejected, TensorDesc, read_element, write_element,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bug {
    None,
    // State across requests: a compile cache whose key leaves out one field.
    /// The key leaves out the input tensors' strides.
    CacheKeyWithoutInputStrides,
    /// The key leaves out Slice1's window offsets.
    CacheKeyWithoutWindowOffsets,
    /// The key leaves out the feature level the compile names.
    CacheKeyWithoutLevel,
    /// The key records each data type by its element size (FLOAT32, INT32, UINT32 share).
    CacheKeyByElementSize,
    /// The key leaves out Split's and Join's axis.
    CacheKeyWithoutAxis,
    /// The key lists the split outputs or joined inputs once per distinct descriptor (a run of
    /// equal ones is one entry), so their count is lost.
    CacheKeyWithoutTensorCount,
    /// The key leaves out Slice1's window sizes (the output's sizes are in it).
    CacheKeyWithoutWindowSizes,
    /// The key leaves out Slice1's window strides (the output's sizes are in it).
    CacheKeyWithoutWindowStrides,
    /// The key leaves out the output tensors' strides (a field the corpus has pairs for).
    CacheKeyWithoutOutputStrides,
    /// The key leaves out every TotalTensorSizeInBytes (a field the corpus has pairs for).
    CacheKeyWithoutTotalSize,
    // Value edges.
    /// INT64 and UINT64 outputs staged through a double when every value is at most 2^54 in
    /// magnitude (the "safe" bound one bit too wide: 2^53 + 1 comes back as 2^53).
    Int64ThroughDouble,
    /// INT64 narrowed to 32 bits when every value is at most 2^31 - 1 (the lower side never
    /// checked: values below -2^31 truncated).
    Int64NarrowedOneSided,
    /// Float values copied through a broadcast input (a 0 stride on a dimension of 2 or more)
    /// go through the float unit: every NaN comes out as the type's canonical quiet NaN.
    NanCanonicalisedWhenBroadcast,
    /// Float values read by a reversed Slice1 (a negative window stride) have subnormals
    /// flushed to zero (sign kept).
    SubnormalsFlushedWhenReversed,
    /// Float values written into an output with explicit strides other than packed ones lose
    /// the sign of zero (-0 written as +0).
    NegativeZeroLostWhenStrided,
    // Sizes.
    /// Output coordinates held in 16 bits: elements whose coordinate in a dimension is past
    /// 65,535 are written wrong.
    Dimension16Bit,
    /// An element-wise (not contiguous) copy computes the output element index in f32: past
    /// 2^24, odd indices round to the even one before them.
    ElementwiseIndexInF32,
    /// Slice1 computes the input's logical (row-major) element index in i32: an element read
    /// from past 2^31 is read from the wrong place.
    LogicalIndexInI32,
    // Chunk boundaries.
    /// A reversed-row Slice1 kernel working in chunks of this many output elements restarts
    /// the row when a chunk starts inside one.
    ReversedRowChunkElements(u64),
    /// The same in chunks of this many output bytes.
    ReversedRowChunkBytes(u64),
    // Validation edges one side of which the corpus covers.
    /// The element-count limit computed on bytes (element count times element size).
    ElementLimitOnBytes,
    /// Split's non-axis sizes compared with the first output instead of the input.
    SplitSizesAgainstFirstOutput,
    /// The axis read as a signed 32-bit integer: an axis of 2^31 or more is negative, and
    /// passes the `axis < rank` check.
    AxisPast2To31Negative,
    /// An empty strides array read as "no strides" (packed).
    EmptyStridesAsNone,
    /// A TotalTensorSizeInBytes of 0 read as "not given" (the minimum computed instead).
    ZeroTotalSizeAsNotGiven,
    /// Slice1's window arrays, all three empty, read as "not given": the whole input, forwards.
    WindowArraysEmptyAsWhole,
    /// Join's data types compared among the inputs only, never with the output (the last
    /// tensor).
    JoinOutputDataTypeUnchecked,
    /// A level between the table's rows (say 2_0, 3_1, 4_0) looked up as the top row.
    LevelBetweenRowsAsTop,
    // Protocol order.
    /// Split's outputs returned in string order of their index ("10" before "2").
    OutputsInStringOrder,
}

impl Bug {
    fn is_cache(self) -> bool {
        matches!(
            self,
            Bug::None
                | Bug::CacheKeyWithoutInputStrides
                | Bug::CacheKeyWithoutWindowOffsets
                | Bug::CacheKeyWithoutLevel
                | Bug::CacheKeyByElementSize
                | Bug::CacheKeyWithoutAxis
                | Bug::CacheKeyWithoutTensorCount
                | Bug::CacheKeyWithoutWindowSizes
                | Bug::CacheKeyWithoutWindowStrides
                | Bug::CacheKeyWithoutOutputStrides
                | Bug::CacheKeyWithoutTotalSize
        )
    }
}

/// A compiled descriptor or a rejection, as the cache keeps it.
#[derive(Clone)]
enum Verdict {
    Accepted(OperatorDesc),
    Rejected(String),
}

/// The backend process: its bug and its compile cache, for the whole run.
pub struct Planted {
    bug: Bug,
    cache: Mutex<HashMap<String, Verdict>>,
}

/// The process acting at one level.
pub struct View {
    shared: Arc<Planted>,
    level: FeatureLevel,
}

impl Planted {
    pub fn new(bug: Bug) -> Arc<Planted> {
        Arc::new(Planted {
            bug,
            cache: Mutex::new(HashMap::new()),
        })
    }

    pub fn at(self: &Arc<Planted>, level: FeatureLevel) -> View {
        View {
            shared: self.clone(),
            level,
        }
    }
}

fn reject(message: &str) -> CompileError {
    CompileError::Rejected(Rejected {
        rule: None,
        message: message.to_string(),
    })
}

fn all_tensors_mut(op: &mut OperatorDesc) -> Vec<&mut TensorDesc> {
    match op {
        OperatorDesc::Split(d) => std::iter::once(&mut d.input_tensor)
            .chain(d.output_tensors.iter_mut())
            .collect(),
        OperatorDesc::Join(d) => (d.input_tensors.iter_mut())
            .chain(std::iter::once(&mut d.output_tensor))
            .collect(),
        OperatorDesc::Slice1(d) => vec![&mut d.input_tensor, &mut d.output_tensor],
    }
}

fn input_tensors_mut(op: &mut OperatorDesc) -> Vec<&mut TensorDesc> {
    match op {
        OperatorDesc::Split(d) => vec![&mut d.input_tensor],
        OperatorDesc::Join(d) => d.input_tensors.iter_mut().collect(),
        OperatorDesc::Slice1(d) => vec![&mut d.input_tensor],
    }
}

/// The cache key: the descriptor and level, less what the bug leaves out.
fn cache_key(bug: Bug, op: &OperatorDesc, level: FeatureLevel) -> String {
    let mut op = op.clone();
    let mut level = Some(level);
    match (bug, &mut op) {
        (Bug::CacheKeyWithoutInputStrides, op) => {
            for t in input_tensors_mut(op) {
                t.strides = None;
            }
        }
        (Bug::CacheKeyWithoutOutputStrides, op) => {
            let inputs = op.inputs().len();
            for t in all_tensors_mut(op).into_iter().skip(inputs) {
                t.strides = None;
            }
        }
        (Bug::CacheKeyWithoutTotalSize, op) => {
            for t in all_tensors_mut(op) {
                t.total_tensor_size_in_bytes = 0;
            }
        }
        (Bug::CacheKeyWithoutWindowOffsets, OperatorDesc::Slice1(d)) => {
            d.input_window_offsets.clear();
        }
        (Bug::CacheKeyWithoutLevel, _) => level = None,
        (Bug::CacheKeyByElementSize, op) => {
            for t in all_tensors_mut(op) {
                t.data_type = match t.data_type.element_size() {
                    1 => DataType::Uint8,
                    2 => DataType::Uint16,
                    4 => DataType::Uint32,
                    _ => DataType::Uint64,
                };
            }
        }
        (Bug::CacheKeyWithoutAxis, OperatorDesc::Split(d)) => d.axis = 0,
        (Bug::CacheKeyWithoutAxis, OperatorDesc::Join(d)) => d.axis = 0,
        (Bug::CacheKeyWithoutTensorCount, OperatorDesc::Split(d)) => d.output_tensors.dedup(),
        (Bug::CacheKeyWithoutTensorCount, OperatorDesc::Join(d)) => d.input_tensors.dedup(),
        (Bug::CacheKeyWithoutWindowSizes, OperatorDesc::Slice1(d)) => {
            d.input_window_sizes.clear();
        }
        (Bug::CacheKeyWithoutWindowStrides, OperatorDesc::Slice1(d)) => {
            d.input_window_strides.clear();
        }
        _ => {}
    }
    format!("{level:?} {op:?}")
}

/// The rules the bug's own validation finds broken at `level`.
fn buggy_broken(bug: Bug, op: &OperatorDesc, level: FeatureLevel) -> Vec<String> {
    let rules = |op: &OperatorDesc, level| -> Vec<String> {
        broken_rules(op, level)
            .into_iter()
            .map(|v| v.rule)
            .collect()
    };
    let mut broken = rules(op, level);
    match bug {
        Bug::ElementLimitOnBytes => {
            let mut op = op.clone();
            if all_tensors_mut(&mut op).iter().any(|t| {
                t.element_count() * t.data_type.element_size() as u128 > u128::from(u32::MAX)
            }) {
                broken.push("tensor.element_count_limit".to_string());
            }
        }
        Bug::SplitSizesAgainstFirstOutput => {
            if let OperatorDesc::Split(d) = op
                && let Some(first) = d.output_tensors.first()
            {
                let axis = d.axis as usize;
                let first = &first.sizes;
                let alike = d.output_tensors.iter().all(|t| {
                    t.sizes.len() == first.len()
                        && (t.sizes.iter().zip(first).enumerate())
                            .all(|(i, (a, b))| i == axis || a == b)
                });
                if alike {
                    broken.retain(|r| r != "split.non_axis_sizes_match");
                }
            }
        }
        Bug::AxisPast2To31Negative => {
            let axis = match op {
                OperatorDesc::Split(d) => d.axis,
                OperatorDesc::Join(d) => d.axis,
                OperatorDesc::Slice1(_) => 0,
            };
            if (axis as i32) < 0 {
                broken.retain(|r| !r.ends_with(".axis_in_range"));
            }
        }
        Bug::EmptyStridesAsNone => broken = rules(&empty_strides_as_none(op), level),
        Bug::WindowArraysEmptyAsWhole => broken = rules(&empty_window_as_whole(op), level),
        Bug::JoinOutputDataTypeUnchecked => {
            if let OperatorDesc::Join(d) = op
                && (d.input_tensors.iter()).all(|t| t.data_type == d.input_tensors[0].data_type)
            {
                broken.retain(|r| r != "join.same_data_type");
            }
        }
        Bug::ZeroTotalSizeAsNotGiven => broken = rules(&zero_total_as_minimum(op), level),
        Bug::LevelBetweenRowsAsTop => {
            let between = support_row(op.kind(), level).is_some_and(|r| row_level(r) != level);
            if between {
                let table = |r: &String| {
                    r.ends_with(".dimension_count_supported") || r.ends_with(".data_type_supported")
                };
                broken.retain(|r| !table(r));
                let top = rules(op, FeatureLevel::LATEST);
                broken.extend(top.into_iter().filter(|r| table(r)));
            }
        }
        _ => {}
    }
    broken
}

fn empty_strides_as_none(op: &OperatorDesc) -> OperatorDesc {
    let mut op = op.clone();
    for t in all_tensors_mut(&mut op) {
        if t.strides.as_ref().is_some_and(Vec::is_empty) {
            t.strides = None;
        }
    }
    op
}

fn empty_window_as_whole(op: &OperatorDesc) -> OperatorDesc {
    let mut op = op.clone();
    if let OperatorDesc::Slice1(d) = &mut op
        && d.input_window_offsets.is_empty()
        && d.input_window_sizes.is_empty()
        && d.input_window_strides.is_empty()
    {
        let n = d.input_tensor.sizes.len();
        d.input_window_offsets = vec![0; n];
        d.input_window_sizes = d.input_tensor.sizes.clone();
        d.input_window_strides = vec![1; n];
    }
    op
}

fn zero_total_as_minimum(op: &OperatorDesc) -> OperatorDesc {
    let mut op = op.clone();
    for t in all_tensors_mut(&mut op) {
        if t.total_tensor_size_in_bytes == 0 {
            let minimum = t.minimum_size_in_bytes().div_ceil(4) * 4;
            t.total_tensor_size_in_bytes = u64::try_from(minimum).unwrap_or(u64::MAX);
        }
    }
    op
}

fn packed_strides(sizes: &[u32]) -> Vec<u64> {
    let mut strides = vec![1u64; sizes.len()];
    for i in (0..sizes.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * u64::from(sizes[i + 1]);
    }
    strides
}

fn is_packed(t: &TensorDesc) -> bool {
    t.effective_strides() == packed_strides(&t.sizes)
}

fn is_broadcast(t: &TensorDesc) -> bool {
    (t.sizes.iter().zip(t.effective_strides())).any(|(&n, s)| n > 1 && s == 0)
}

fn reversed_rows(op: &OperatorDesc) -> bool {
    matches!(op, OperatorDesc::Slice1(d) if d.input_window_strides.last().is_some_and(|&s| s < 0))
}

/// The chunk size in output elements of a chunked bug, if the bug is one.
fn chunk_elements(bug: Bug, op: &OperatorDesc) -> Option<u64> {
    let size = op.outputs()[0].1.data_type.element_size() as u64;
    match bug {
        Bug::ReversedRowChunkElements(n) => Some(n),
        Bug::ReversedRowChunkBytes(bytes) => Some((bytes / size).max(1)),
        _ => None,
    }
}

/// Whether an execution bug can change the outputs of the valid `op`.
fn reaches(bug: Bug, op: &OperatorDesc) -> bool {
    let outputs = op.outputs();
    let inputs = op.inputs();
    let any_output = |f: &dyn Fn(&TensorDesc) -> bool| outputs.iter().any(|(_, t)| f(t));
    let float = outputs[0].1.data_type.is_float();
    match bug {
        Bug::Int64ThroughDouble => {
            any_output(&|t| matches!(t.data_type, DataType::Int64 | DataType::Uint64))
        }
        Bug::Int64NarrowedOneSided => any_output(&|t| t.data_type == DataType::Int64),
        Bug::NanCanonicalisedWhenBroadcast => float && inputs.iter().any(|(_, t)| is_broadcast(t)),
        Bug::SubnormalsFlushedWhenReversed => {
            float
                && matches!(op, OperatorDesc::Slice1(d) if d.input_window_strides.iter().any(|&s| s < 0))
        }
        Bug::NegativeZeroLostWhenStrided => {
            float && any_output(&|t| t.strides.is_some() && !is_packed(t))
        }
        Bug::Dimension16Bit => any_output(&|t| t.sizes.iter().any(|&n| n > 0xffff)),
        Bug::ElementwiseIndexInF32 => {
            elementwise(op) && any_output(&|t| t.element_count() > (1 << 24) + 1)
        }
        Bug::LogicalIndexInI32 => matches!(op, OperatorDesc::Slice1(d)
            if d.input_tensor.element_count() > i32::MAX as u128),
        Bug::ReversedRowChunkElements(_) | Bug::ReversedRowChunkBytes(_) => {
            let Some(chunk) = chunk_elements(bug, op) else {
                return false;
            };
            let output = outputs[0].1;
            let row = u128::from(*output.sizes.last().unwrap_or(&1));
            reversed_rows(op)
                && output.element_count() > u128::from(chunk)
                && u128::from(chunk) % row != 0
        }
        Bug::OutputsInStringOrder => outputs.len() >= 11,
        _ => false,
    }
}

/// Whether the copy goes element by element: some tensor not packed, or a Slice1 window that
/// is not the whole input read forwards.
fn elementwise(op: &OperatorDesc) -> bool {
    let mut op = op.clone();
    let window = match &op {
        OperatorDesc::Slice1(d) => {
            d.input_window_strides.iter().any(|&s| s != 1)
                || d.input_window_sizes != d.input_tensor.sizes
        }
        _ => false,
    };
    window || all_tensors_mut(&mut op).iter().any(|t| !is_packed(t))
}

impl Backend for View {
    fn name(&self) -> String {
        "planted".to_string()
    }
    fn feature_level(&self) -> FeatureLevel {
        self.level
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        let bug = self.shared.bug;
        if bug.is_cache() {
            let key = cache_key(bug, op, self.level);
            let mut cache = self.shared.cache.lock().unwrap_or_else(|e| e.into_inner());
            let verdict = cache
                .entry(key)
                .or_insert_with(|| match broken_rules(op, self.level).first() {
                    Some(v) => Verdict::Rejected(v.to_string()),
                    None => Verdict::Accepted(op.clone()),
                })
                .clone();
            return match verdict {
                Verdict::Rejected(message) => Err(reject(&message)),
                Verdict::Accepted(plan) => Ok(Box::new(Compiled { bug, plan })),
            };
        }
        let correct = broken_rules(op, self.level);
        let buggy = buggy_broken(bug, op, self.level);
        if let Some(rule) = buggy.first() {
            return Err(reject(&format!("E_INVALIDARG ({rule})")));
        }
        let plan = match bug {
            Bug::EmptyStridesAsNone => empty_strides_as_none(op),
            Bug::ZeroTotalSizeAsNotGiven => zero_total_as_minimum(op),
            Bug::WindowArraysEmptyAsWhole => empty_window_as_whole(op),
            _ => op.clone(),
        };
        if !correct.is_empty() {
            // Accepted by the bug: what it runs is beside the point.
            return Ok(Box::new(Compiled { bug, plan }));
        }
        if !reaches(bug, op) {
            return Err(CompileError::Unsupported(
                "outside the planted bug".to_string(),
            ));
        }
        Ok(Box::new(Compiled { bug, plan }))
    }
}

struct Compiled {
    bug: Bug,
    /// The descriptor it was compiled for (a cache hit's may not be the one asked for).
    plan: OperatorDesc,
}

/// The byte offset of the element at row-major position `index` of `t`.
fn byte_of_element(t: &TensorDesc, index: u128) -> usize {
    let mut rest = index;
    let mut offset: u128 = 0;
    for (&n, s) in t.sizes.iter().zip(t.effective_strides()).rev() {
        offset += (rest % u128::from(n)) * u128::from(s);
        rest /= u128::from(n);
    }
    (offset * t.data_type.element_size() as u128) as usize
}

fn element_offsets(t: &TensorDesc) -> impl Iterator<Item = usize> + '_ {
    (0..t.element_count()).map(move |i| byte_of_element(t, i))
}

/// Rewrites every element of an output of `t` through `f`.
fn map_elements(t: &TensorDesc, bytes: &mut [u8], f: impl Fn(u64) -> u64) {
    let offsets: Vec<usize> = element_offsets(t).collect();
    for offset in offsets {
        if let Some(bits) = read_element(bytes, offset, t.data_type) {
            write_element(bytes, offset, t.data_type, f(bits));
        }
    }
}

fn values(t: &TensorDesc, bytes: &[u8]) -> Vec<u64> {
    element_offsets(t)
        .filter_map(|o| read_element(bytes, o, t.data_type))
        .collect()
}

/// (sign bit, exponent mask, mantissa mask, quiet bit) of a float type.
fn float_layout(t: DataType) -> (u64, u64, u64, u64) {
    match t {
        DataType::Float16 => (0x8000, 0x7c00, 0x03ff, 0x0200),
        DataType::Float32 => (0x8000_0000, 0x7f80_0000, 0x007f_ffff, 0x0040_0000),
        _ => (
            1 << 63,
            0x7ff0_0000_0000_0000,
            0x000f_ffff_ffff_ffff,
            0x0008_0000_0000_0000,
        ),
    }
}

/// Flips the first byte of the element at row-major `index`: a wrong write stands in.
fn spoil(t: &TensorDesc, bytes: &mut [u8], index: u128) {
    let offset = byte_of_element(t, index);
    if let Some(b) = bytes.get_mut(offset) {
        *b ^= 0xff;
    }
}

fn apply_value_bug(bug: Bug, op: &OperatorDesc, t: &TensorDesc, bytes: &mut [u8]) {
    let float = t.data_type.is_float();
    match bug {
        Bug::Int64ThroughDouble
            if t.data_type == DataType::Int64
                && (values(t, bytes).iter()).all(|&v| (v as i64).unsigned_abs() <= 1 << 54) =>
        {
            map_elements(t, bytes, |v| (v as i64 as f64) as i64 as u64);
        }
        Bug::Int64ThroughDouble
            if t.data_type == DataType::Uint64
                && values(t, bytes).iter().all(|&v| v <= 1 << 54) =>
        {
            map_elements(t, bytes, |v| (v as f64) as u64);
        }
        Bug::Int64NarrowedOneSided
            if t.data_type == DataType::Int64
                && (values(t, bytes).iter()).all(|&v| v as i64 <= i64::from(i32::MAX)) =>
        {
            map_elements(t, bytes, |v| i64::from(v as i64 as i32) as u64);
        }
        Bug::NanCanonicalisedWhenBroadcast if float => {
            let (_, exponent, mantissa, quiet) = float_layout(t.data_type);
            map_elements(t, bytes, |v| {
                if v & exponent == exponent && v & mantissa != 0 {
                    exponent | quiet
                } else {
                    v
                }
            });
        }
        Bug::SubnormalsFlushedWhenReversed if float => {
            let (sign, exponent, _, _) = float_layout(t.data_type);
            map_elements(t, bytes, |v| if v & exponent == 0 { v & sign } else { v });
        }
        Bug::NegativeZeroLostWhenStrided if float && t.strides.is_some() && !is_packed(t) => {
            let (sign, _, _, _) = float_layout(t.data_type);
            map_elements(t, bytes, |v| if v == sign { 0 } else { v });
        }
        Bug::Dimension16Bit => {
            // Every element with a coordinate past 65,535 lands on another's address.
            let strides = packed_strides(&t.sizes);
            for index in 0..t.element_count() {
                let big = (t.sizes.iter().zip(&strides))
                    .any(|(&n, &s)| (index / u128::from(s)) % u128::from(n) > 0xffff);
                if big {
                    spoil(t, bytes, index);
                }
            }
        }
        Bug::ElementwiseIndexInF32 if t.element_count() > (1 << 24) + 1 => {
            // Element 2^24 + 1 is written where 2^24 is ((2^24 + 1) as f32 == 2^24).
            let (lost, kept) = (
                byte_of_element(t, (1 << 24) + 1),
                byte_of_element(t, 1 << 24),
            );
            if let Some(bits) = read_element(bytes, lost, t.data_type) {
                write_element(bytes, kept, t.data_type, bits);
            }
            spoil(t, bytes, (1 << 24) + 1);
        }
        Bug::LogicalIndexInI32 => {
            if let OperatorDesc::Slice1(d) = op {
                let input_strides = packed_strides(&d.input_tensor.sizes);
                let output_strides = packed_strides(&t.sizes);
                for index in 0..t.element_count() {
                    let mut logical: i128 = 0;
                    for i in 0..t.sizes.len() {
                        let o = (index / u128::from(output_strides[i])) % u128::from(t.sizes[i]);
                        let stride = i128::from(d.input_window_strides[i]);
                        let start = i128::from(d.input_window_offsets[i])
                            + if stride < 0 {
                                i128::from(d.input_window_sizes[i]) - 1
                            } else {
                                0
                            };
                        logical += (start + stride * o as i128) * i128::from(input_strides[i]);
                    }
                    if logical > i128::from(i32::MAX) {
                        spoil(t, bytes, index);
                    }
                }
            }
        }
        Bug::ReversedRowChunkElements(_) | Bug::ReversedRowChunkBytes(_) => {
            let Some(chunk) = chunk_elements(bug, op).map(u128::from) else {
                return;
            };
            let row = u128::from(*t.sizes.last().unwrap_or(&1));
            let correct = bytes.to_vec();
            for index in 0..t.element_count() {
                let start = index / chunk * chunk;
                let row_start = start / row * row;
                if start % row != 0 && index < row_start + row {
                    let from = row_start + (index - start);
                    if let Some(bits) =
                        read_element(&correct, byte_of_element(t, from), t.data_type)
                    {
                        write_element(bytes, byte_of_element(t, index), t.data_type, bits);
                    }
                }
            }
        }
        _ => {}
    }
}

impl CompiledOperator for Compiled {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        let plan = &self.plan;
        // Buffers as the plan expects them (a cache hit may have been compiled for others).
        let sized: Vec<Vec<u8>> = (plan.inputs().iter().zip(inputs))
            .map(|((_, t), bytes)| {
                let mut buffer = bytes.to_vec();
                buffer.resize(t.total_tensor_size_in_bytes as usize, 0);
                buffer
            })
            .collect();
        if sized.len() != plan.inputs().len() {
            return Err("planted: wrong number of inputs for the plan".to_string());
        }
        let refs: Vec<&[u8]> = sized.iter().map(Vec::as_slice).collect();
        let Ok(mut results) = execute(plan, &refs) else {
            // Accepted by a validation bug: nothing is written.
            return Ok(());
        };
        let descs = plan.outputs();
        for ((_, t), result) in descs.iter().zip(results.iter_mut()) {
            apply_value_bug(self.bug, plan, t, &mut result.bytes);
        }
        let mut order: Vec<usize> = (0..results.len()).collect();
        if self.bug == Bug::OutputsInStringOrder {
            order.sort_by_key(|i| i.to_string());
        }
        for (binding, &from) in outputs.iter_mut().zip(&order) {
            let result = &results[from];
            result.write_addressed_into(binding.bytes_mut());
        }
        Ok(())
    }
}
