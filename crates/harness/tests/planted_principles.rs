//! The principles of issue 39 (value edges of every type, size edges through every layout,
//! both sides of every validation edge), each proved by bugs planted in a backend built on
//! the oracle: every bug is caught by a case its principle generated.
//!
//! A planted backend answers `unsupported` (a skip) where its bug cannot show, so a run
//! stays short and no verdict changes.

use dmlcts_harness::{Case, Corpus, RunOptions, Status, run_case};
use dmlcts_oracle::{execute, validate};
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, Coordinates, DataType, FeatureLevel, OperatorDesc,
    OperatorKind, OutputBinding, Rejected, TensorDesc, read_element, write_element,
};

/// How a backend with a staging bug changes an element of a type on its way through.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Staging {
    /// 64-bit integers moved through a double.
    ThroughDouble,
    /// Signed integers narrowed to half their width when the tensor's largest value fits
    /// (the smallest never checked).
    NarrowedWhenMaxFits,
    /// Signed integers narrowed to half their width when the smallest value fits.
    NarrowedWhenMinFits,
    /// Signalling NaNs come back quiet (a float register on the way).
    SignallingNansQuieted,
    /// Every NaN comes back as the default quiet NaN.
    NanPayloadsLost,
    /// Subnormals come back as zeros of their sign.
    SubnormalsFlushed,
    /// -0 comes back as +0.
    NegativeZeroLost,
    /// FLOAT64 moved through a FLOAT32.
    ThroughFloat32,
    /// Unsigned integers moved through the signed type of their width and back through a
    /// double of it (an unsigned value past the signed max turns negative and saturates).
    UnsignedThroughSigned,
}

/// Where a bug acts: on every descriptor, or only on those with a layout of one kind.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Path {
    Any,
    /// Some output is not packed.
    StridedOutput,
    /// Some output is packed.
    PackedOutput,
    /// Some input has a 0 stride on a dimension of size > 1.
    BroadcastInput,
    /// A Slice1 window with a negative stride.
    ReversedWindow,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct ValueBug {
    staging: Staging,
    data_type: DataType,
    kind: OperatorKind,
    path: Path,
}

fn half_narrow(data_type: DataType, bits: u64) -> u64 {
    let width = 8 * data_type.element_size() as u32;
    let half = width / 2;
    let low = bits & ((1u64 << half) - 1);
    // Sign-extend the low half back to the full width.
    let extended = ((low << (64 - half)) as i64 >> (64 - half)) as u64;
    if width == 64 {
        extended
    } else {
        extended & ((1u64 << width) - 1)
    }
}

fn as_signed(data_type: DataType, bits: u64) -> i64 {
    let width = 8 * data_type.element_size() as u32;
    ((bits << (64 - width)) as i64) >> (64 - width)
}

/// (exponent bits, mantissa bits).
fn float_format(data_type: DataType) -> (u32, u32) {
    match data_type {
        DataType::Float16 => (5, 10),
        DataType::Float32 => (8, 23),
        _ => (11, 52),
    }
}

fn stage(staging: Staging, data_type: DataType, values: &[u64]) -> Vec<u64> {
    let width = 8 * data_type.element_size() as u32;
    let half_max = (1i64 << (width / 2 - 1)) - 1;
    let half_min = -(1i64 << (width / 2 - 1));
    let signed = || values.iter().map(|&v| as_signed(data_type, v));
    let narrow = match staging {
        Staging::NarrowedWhenMaxFits => signed().max().is_some_and(|m| m <= half_max),
        Staging::NarrowedWhenMinFits => signed().min().is_some_and(|m| m >= half_min),
        _ => false,
    };
    let (e, m) = float_format(data_type);
    let exponent = ((1u64 << e) - 1) << m;
    let mantissa = (1u64 << m) - 1;
    let sign = 1u64 << (width - 1);
    let is_nan = |v: u64| v & exponent == exponent && v & mantissa != 0;
    let float_staging = matches!(
        staging,
        Staging::SignallingNansQuieted
            | Staging::NanPayloadsLost
            | Staging::SubnormalsFlushed
            | Staging::NegativeZeroLost
            | Staging::ThroughFloat32
    );
    if float_staging != data_type.is_float()
        || (staging == Staging::ThroughFloat32 && data_type != DataType::Float64)
    {
        return values.to_vec();
    }
    values
        .iter()
        .map(|&v| match staging {
            Staging::ThroughDouble => match data_type {
                DataType::Int64 => (v as i64 as f64) as i64 as u64,
                _ => (v as f64) as u64,
            },
            Staging::NarrowedWhenMaxFits | Staging::NarrowedWhenMinFits if narrow => {
                half_narrow(data_type, v)
            }
            Staging::SignallingNansQuieted if is_nan(v) => v | (1 << (m - 1)),
            Staging::NanPayloadsLost if is_nan(v) => exponent | (1 << (m - 1)),
            Staging::SubnormalsFlushed if v & exponent == 0 => v & sign,
            Staging::NegativeZeroLost if v == sign => 0,
            Staging::ThroughFloat32 => f64::from(f64::from_bits(v) as f32).to_bits(),
            Staging::UnsignedThroughSigned => {
                let signed = as_signed(data_type, v);
                let through = signed as f64;
                if through < 0.0 { 0 } else { v }
            }
            _ => v,
        })
        .collect()
}

fn layout_reaches(path: Path, op: &OperatorDesc) -> bool {
    let packed = |t: &TensorDesc| {
        t.strides.is_none()
            || t.effective_strides()
                == TensorDesc::packed(t.data_type, &t.sizes).effective_strides()
    };
    match path {
        Path::Any => true,
        Path::StridedOutput => op.outputs().iter().any(|(_, t)| !packed(t)),
        Path::PackedOutput => op.outputs().iter().any(|(_, t)| packed(t)),
        Path::BroadcastInput => op.inputs().iter().any(|(_, t)| {
            t.sizes
                .iter()
                .zip(t.effective_strides())
                .any(|(&n, s)| n > 1 && s == 0)
        }),
        Path::ReversedWindow => {
            matches!(op, OperatorDesc::Slice1(d) if d.input_window_strides.iter().any(|&s| s < 0))
        }
    }
}

fn unsupported() -> CompileError {
    CompileError::Unsupported("outside the planted bug".to_string())
}

fn rejected(message: String) -> CompileError {
    CompileError::Rejected(Rejected {
        rule: None,
        message,
    })
}

/// Writes the oracle's output bytes where the oracle addresses them.
fn oracle_outputs(
    op: &OperatorDesc,
    inputs: &[&[u8]],
    outputs: &mut [OutputBinding<'_>],
) -> Result<(), String> {
    let results = execute(op, inputs).map_err(|e| e.to_string())?;
    for (result, binding) in results.iter().zip(outputs.iter_mut()) {
        result.write_addressed_into(binding.bytes_mut());
    }
    Ok(())
}

/// Every element offset of `t`, in row-major order.
fn element_offsets(t: &TensorDesc) -> Vec<usize> {
    let strides = t.effective_strides();
    let mut walk = Coordinates::new(&t.sizes);
    let mut offsets = Vec::new();
    while let Some(c) = walk.advance() {
        offsets.push(t.byte_offset(c, &strides).expect("a valid tensor") as usize);
    }
    offsets
}

struct ValueBackend {
    bug: ValueBug,
    level: FeatureLevel,
}

struct Staged {
    bug: ValueBug,
    op: OperatorDesc,
}

impl Backend for ValueBackend {
    fn name(&self) -> String {
        "planted-values".to_string()
    }
    fn feature_level(&self) -> FeatureLevel {
        self.level
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        validate(op, self.level).map_err(|v| rejected(v.to_string()))?;
        let reaches = op.kind() == self.bug.kind
            && op.inputs()[0].1.data_type == self.bug.data_type
            && layout_reaches(self.bug.path, op);
        if !reaches {
            return Err(unsupported());
        }
        Ok(Box::new(Staged {
            bug: self.bug,
            op: op.clone(),
        }))
    }
}

impl CompiledOperator for Staged {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        oracle_outputs(&self.op, inputs, outputs)?;
        let dt = self.bug.data_type;
        for ((_, desc), binding) in self.op.outputs().iter().zip(outputs.iter_mut()) {
            let bytes = binding.bytes_mut();
            let offsets = element_offsets(desc);
            let values: Vec<u64> = offsets
                .iter()
                .map(|&o| read_element(bytes, o, dt).expect("inside the buffer"))
                .collect();
            for (&o, v) in offsets.iter().zip(stage(self.bug.staging, dt, &values)) {
                write_element(bytes, o, dt, v);
            }
        }
        Ok(())
    }
}

/// The names of the cases in `cases` that fail on `backend(level)`, each at its own level.
fn failing<B: Backend>(cases: &[Case], backend: impl Fn(FeatureLevel) -> B) -> Vec<String> {
    let options = RunOptions {
        strict_level: true,
        ..RunOptions::default()
    };
    cases
        .iter()
        .filter_map(|case| {
            let result = run_case(&backend(case.feature_level), case, &options);
            (result.status == Status::Failed).then(|| case.name.clone())
        })
        .collect()
}

fn cases_named(prefix: &str) -> Vec<Case> {
    Corpus::embedded()
        .cases
        .into_iter()
        .filter(|c| c.name.starts_with(prefix))
        .collect()
}

/// The staging bugs and the types each one changes values of.
fn value_bugs() -> Vec<(Staging, Vec<DataType>)> {
    use DataType::*;
    vec![
        (Staging::ThroughDouble, vec![Int64, Uint64]),
        (Staging::NarrowedWhenMaxFits, vec![Int16, Int32, Int64]),
        (Staging::NarrowedWhenMinFits, vec![Int16, Int32, Int64]),
        (
            Staging::SignallingNansQuieted,
            vec![Float16, Float32, Float64],
        ),
        (Staging::NanPayloadsLost, vec![Float16, Float32, Float64]),
        (Staging::SubnormalsFlushed, vec![Float16, Float32, Float64]),
        (Staging::NegativeZeroLost, vec![Float16, Float32, Float64]),
        (Staging::ThroughFloat32, vec![Float64]),
        (
            Staging::UnsignedThroughSigned,
            vec![Uint8, Uint16, Uint32, Uint64],
        ),
    ]
}

#[test]
fn every_staging_bug_of_every_type_and_operator_is_caught_by_a_value_edge_case() {
    let cases = cases_named("values.");
    assert!(cases.len() >= 33, "{} value-edge cases", cases.len());
    let mut missed = Vec::new();
    for (staging, types) in value_bugs() {
        for data_type in types {
            for kind in OperatorKind::ALL {
                let bug = ValueBug {
                    staging,
                    data_type,
                    kind,
                    path: Path::Any,
                };
                if failing(&cases, |level| ValueBackend { bug, level }).is_empty() {
                    missed.push(bug);
                }
            }
        }
    }
    assert!(missed.is_empty(), "not caught: {missed:#?}");
}

#[test]
fn a_staging_bug_on_any_one_copy_path_is_caught_by_a_value_edge_case() {
    let cases = cases_named("values.");
    let paths = [
        (OperatorKind::Split, Path::StridedOutput),
        (OperatorKind::Split, Path::PackedOutput),
        (OperatorKind::Join, Path::BroadcastInput),
        (OperatorKind::Join, Path::StridedOutput),
        (OperatorKind::Slice1, Path::ReversedWindow),
        (OperatorKind::Slice1, Path::BroadcastInput),
    ];
    let mut missed = Vec::new();
    for (kind, path) in paths {
        for data_type in [DataType::Int64, DataType::Uint64] {
            let bug = ValueBug {
                staging: Staging::ThroughDouble,
                data_type,
                kind,
                path,
            };
            if failing(&cases, |level| ValueBackend { bug, level }).is_empty() {
                missed.push(bug);
            }
        }
    }
    assert!(missed.is_empty(), "not caught: {missed:#?}");
}

#[test]
fn the_value_backend_without_its_bug_fails_nothing() {
    // The same backend with a staging that changes nothing on these types: every value-edge
    // case passes, so a failure above is the bug's.
    let cases = cases_named("values.");
    for kind in OperatorKind::ALL {
        let bug = ValueBug {
            staging: Staging::ThroughFloat32,
            data_type: DataType::Int8,
            kind,
            path: Path::Any,
        };
        assert_eq!(
            failing(&cases, |level| ValueBackend { bug, level }),
            Vec::<String>::new()
        );
    }
}

/// Bugs on sizes and coordinates past the narrow integers.
#[derive(Clone, Copy, Debug, PartialEq)]
enum SizeBug {
    /// Sizes counted in 16 bits: the last element of an output with a dimension past 65,535
    /// is not written right.
    Dimension16Bits,
    /// An element-wise write (an output that is not packed) indexes through a FLOAT32: element
    /// 2^24 + 1 lands on 2^24.
    ElementWiseIndexInFloat32,
    /// Slice1 input coordinates turned into a signed 32-bit logical index: a window reaching
    /// past index 2^31 - 1 reads the wrong element.
    LogicalIndexSigned32,
    /// The element limit computed on bytes: tensors of this element size with more than
    /// 2^32 - 1 bytes rejected.
    ElementLimitOnBytes(usize),
    /// Window offsets read as signed 32-bit integers: one past 2^31 rejected.
    WindowOffsetSigned,
    /// A reversed-row kernel working in chunks of this many bytes restarts a row where a
    /// chunk starts inside it.
    ReversedRowChunk(usize),
    /// This operator's kernel computes element offsets (stride times coordinate, summed) in
    /// FLOAT32: a tensor with an element at offset 2^24 + 1 or past it is read or written at the
    /// rounded offset.
    OffsetInFloat32(OperatorKind),
}

/// The largest element offset of `t` (its strides times its largest coordinates).
fn largest_offset(t: &TensorDesc) -> u128 {
    t.sizes
        .iter()
        .zip(t.effective_strides())
        .map(|(&n, s)| u128::from(n.saturating_sub(1)) * u128::from(s))
        .sum()
}

fn is_packed(t: &TensorDesc) -> bool {
    t.effective_strides() == TensorDesc::packed(t.data_type, &t.sizes).effective_strides()
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

/// The largest row-major index of the Slice1 input element the window reads.
fn largest_window_index(op: &OperatorDesc) -> u128 {
    let OperatorDesc::Slice1(d) = op else {
        return 0;
    };
    let mut index: u128 = 0;
    for (k, &n) in d.input_tensor.sizes.iter().enumerate() {
        let last = d.input_window_offsets[k] + d.input_window_sizes[k] - 1;
        index = index * u128::from(n) + u128::from(last);
    }
    index
}

/// Byte offsets of a packed output of a reversed-row Slice1 where a chunk of `chunk` bytes
/// starts inside a row.
fn chunk_starts_inside_rows(op: &OperatorDesc, chunk: usize) -> Vec<usize> {
    let OperatorDesc::Slice1(d) = op else {
        return Vec::new();
    };
    let out = &d.output_tensor;
    let reversed_rows = d.input_window_strides.last().is_some_and(|&s| s < 0);
    if !reversed_rows || !is_packed(out) {
        return Vec::new();
    }
    let size = out.data_type.element_size();
    let row = *out.sizes.last().expect("a dimension") as usize * size;
    let bytes = out.element_count() as usize * size;
    (1..)
        .map(|k| k * chunk)
        .take_while(|&b| b < bytes)
        .filter(|&b| b % row != 0)
        .collect()
}

struct SizeBackend {
    bug: SizeBug,
    level: FeatureLevel,
}

struct SizeFaulty {
    bug: SizeBug,
    op: OperatorDesc,
}

impl SizeBug {
    /// Whether the bug rejects `op` (valid: the oracle has validated it).
    fn rejects(self, op: &OperatorDesc) -> bool {
        match self {
            SizeBug::ElementLimitOnBytes(size) => {
                op.inputs().into_iter().chain(op.outputs()).any(|(_, t)| {
                    t.data_type.element_size() == size
                        && t.element_count() * size as u128 > u128::from(u32::MAX)
                })
            }
            SizeBug::WindowOffsetSigned => matches!(op, OperatorDesc::Slice1(d)
                if d.input_window_offsets.iter().any(|&o| o > i32::MAX as u32)),
            _ => false,
        }
    }

    fn reaches(self, op: &OperatorDesc) -> bool {
        match self {
            SizeBug::Dimension16Bits => op
                .outputs()
                .iter()
                .any(|(_, t)| t.sizes.iter().any(|&n| n > 65535)),
            SizeBug::ElementWiseIndexInFloat32 => op
                .outputs()
                .iter()
                .any(|(_, t)| !is_packed(t) && t.element_count() > (1 << 24) + 1),
            SizeBug::LogicalIndexSigned32 => largest_window_index(op) > i32::MAX as u128,
            SizeBug::ReversedRowChunk(chunk) => !chunk_starts_inside_rows(op, chunk).is_empty(),
            SizeBug::OffsetInFloat32(kind) => {
                op.kind() == kind
                    && op
                        .inputs()
                        .into_iter()
                        .chain(op.outputs())
                        .any(|(_, t)| largest_offset(t) > 1 << 24)
            }
            SizeBug::ElementLimitOnBytes(_) | SizeBug::WindowOffsetSigned => false,
        }
    }
}

impl Backend for SizeBackend {
    fn name(&self) -> String {
        "planted-sizes".to_string()
    }
    fn feature_level(&self) -> FeatureLevel {
        self.level
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        validate(op, self.level).map_err(|v| rejected(v.to_string()))?;
        if self.bug.rejects(op) {
            return Err(rejected("E_INVALIDARG".to_string()));
        }
        if !self.bug.reaches(op) {
            return Err(unsupported());
        }
        Ok(Box::new(SizeFaulty {
            bug: self.bug,
            op: op.clone(),
        }))
    }
}

impl CompiledOperator for SizeFaulty {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        oracle_outputs(&self.op, inputs, outputs)?;
        let descs = self.op.outputs();
        for ((_, t), binding) in descs.iter().zip(outputs.iter_mut()) {
            let bytes = binding.bytes_mut();
            match self.bug {
                SizeBug::Dimension16Bits if t.sizes.iter().any(|&n| n > 65535) => {
                    bytes[byte_of_element(t, t.element_count() - 1)] ^= 0xff;
                }
                SizeBug::ElementWiseIndexInFloat32
                    if !is_packed(t) && t.element_count() > (1 << 24) + 1 =>
                {
                    bytes[byte_of_element(t, (1 << 24) + 1)] ^= 0xff;
                }
                SizeBug::LogicalIndexSigned32 | SizeBug::OffsetInFloat32(_) => bytes[0] ^= 0xff,
                SizeBug::ReversedRowChunk(chunk) => {
                    for b in chunk_starts_inside_rows(&self.op, chunk) {
                        bytes[b] ^= 0xff;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

#[test]
fn every_size_bug_past_a_narrow_integer_is_caught_by_a_size_edge_case() {
    let cases = cases_named("sizes.");
    let mut bugs = vec![
        SizeBug::Dimension16Bits,
        SizeBug::ElementWiseIndexInFloat32,
        SizeBug::LogicalIndexSigned32,
        SizeBug::WindowOffsetSigned,
    ];
    bugs.extend([2, 4, 8].map(SizeBug::ElementLimitOnBytes));
    bugs.extend((4..=16).map(|k| SizeBug::ReversedRowChunk(1 << k)));
    let mut missed = Vec::new();
    for bug in bugs {
        let caught = failing(&cases, |level| SizeBackend { bug, level });
        if caught.is_empty() {
            missed.push(bug);
        }
    }
    assert!(missed.is_empty(), "not caught: {missed:?}");
}

#[test]
fn an_element_offset_computed_in_float32_is_caught_for_every_operator_and_only_past_2_24() {
    let cases = cases_named("sizes.");
    for kind in [
        OperatorKind::Split,
        OperatorKind::Join,
        OperatorKind::Slice1,
    ] {
        let bug = SizeBug::OffsetInFloat32(kind);
        let caught = failing(&cases, |level| SizeBackend { bug, level });
        assert!(!caught.is_empty(), "{bug:?} not caught");
        // The rest of the corpus has no offset past 2^24: without the size edges the
        // bug goes unseen.
        let others: Vec<Case> = Corpus::embedded()
            .cases
            .into_iter()
            .filter(|c| !c.name.starts_with("sizes.") && c.op.kind() == kind)
            .collect();
        assert_eq!(
            failing(&others, |level| SizeBackend { bug, level }),
            Vec::<String>::new()
        );
    }
}

#[test]
fn every_chunk_size_starts_inside_a_reversed_row_of_every_element_size() {
    // The chunk bug at every power of two up to 64 KiB, for each element size: a reversed
    // row of some size-edge case straddles it.
    let cases = cases_named("sizes.");
    for size in [1, 2, 4, 8] {
        for k in 4..=16 {
            let straddled = cases.iter().any(|c| {
                c.op.outputs()[0].1.data_type.element_size() == size
                    && !chunk_starts_inside_rows(&c.op, 1 << k).is_empty()
            });
            assert!(
                straddled,
                "no reversed row of {size}-byte elements straddles 2^{k} bytes"
            );
        }
    }
}

/// Validation bugs on the far side of an edge the corpus used to cover one-sided.
#[derive(Clone, Copy, Debug, PartialEq)]
enum ValidationBug {
    /// An empty strides array read as "no strides".
    EmptyStridesAsNone,
    /// TotalTensorSizeInBytes 0 read as "not given".
    TotalSizeZeroAsNotGiven,
    /// The axis read as a signed 32-bit integer: only -1 (2^32 - 1) is taken as out of range;
    /// other negative values pass `axis < rank`.
    AxisSigned,
    /// Split and Join parts' non-axis sizes compared with the first part, not the whole.
    NonAxisSizesAgainstFirstPart,
    /// A level between two table rows looked up as the row above it.
    LevelAsRowAbove,
}

fn misses(bug: ValidationBug, rule: &str, op: &OperatorDesc) -> bool {
    let tensors: Vec<&TensorDesc> = op
        .inputs()
        .into_iter()
        .chain(op.outputs())
        .map(|(_, t)| t)
        .collect();
    let axis = match op {
        OperatorDesc::Split(d) => d.axis,
        OperatorDesc::Join(d) => d.axis,
        OperatorDesc::Slice1(_) => 0,
    };
    match bug {
        ValidationBug::EmptyStridesAsNone => {
            rule == "tensor.strides_count"
                && tensors.iter().all(|t| {
                    t.strides
                        .as_ref()
                        .is_none_or(|s| s.len() == t.sizes.len() || s.is_empty())
                })
        }
        ValidationBug::TotalSizeZeroAsNotGiven => {
            rule == "tensor.total_size_minimum"
                && tensors.iter().all(|t| {
                    u128::from(t.total_tensor_size_in_bytes) >= t.minimum_size_in_bytes()
                        || t.total_tensor_size_in_bytes == 0
                })
        }
        ValidationBug::AxisSigned => {
            rule.ends_with(".axis_in_range") && axis != u32::MAX && axis >= 1 << 31
        }
        ValidationBug::NonAxisSizesAgainstFirstPart => {
            let parts: Vec<&TensorDesc> = match op {
                OperatorDesc::Split(d) => d.output_tensors.iter().collect(),
                OperatorDesc::Join(d) => d.input_tensors.iter().collect(),
                OperatorDesc::Slice1(_) => return false,
            };
            let a = axis as usize;
            let off_axis = |t: &TensorDesc| -> Vec<u32> {
                (t.sizes.iter().enumerate())
                    .filter(|&(d, _)| d != a)
                    .map(|(_, &s)| s)
                    .collect()
            };
            rule.ends_with(".non_axis_sizes_match")
                && parts.iter().all(|p| off_axis(p) == off_axis(parts[0]))
        }
        ValidationBug::LevelAsRowAbove => false,
    }
}

/// The level whose table a backend with `bug` uses at `level`.
fn table_level(bug: ValidationBug, kind: OperatorKind, level: FeatureLevel) -> FeatureLevel {
    if bug != ValidationBug::LevelAsRowAbove {
        return level;
    }
    let mut rows: Vec<FeatureLevel> = dmlcts_oracle::spec::operator(kind)
        .tensor_support
        .iter()
        .map(dmlcts_oracle::spec::row_level)
        .collect();
    rows.sort();
    if rows.contains(&level) {
        return level;
    }
    rows.into_iter().find(|&r| r > level).unwrap_or(level)
}

struct ValidationBackend {
    bug: ValidationBug,
    level: FeatureLevel,
}

/// Compiles and runs, writing nothing (it only ever runs what it should have rejected).
struct Accepted;

impl CompiledOperator for Accepted {
    fn execute(&self, _: &[&[u8]], _: &mut [OutputBinding<'_>]) -> Result<(), String> {
        Ok(())
    }
}

impl Backend for ValidationBackend {
    fn name(&self) -> String {
        "planted-validation".to_string()
    }
    fn feature_level(&self) -> FeatureLevel {
        self.level
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        let level = table_level(self.bug, op.kind(), self.level);
        let broken = dmlcts_oracle::broken_rules(op, level);
        if broken.is_empty() {
            // Valid as far as the bug's own checks go: where the real level rejects it, the
            // bug accepts it; otherwise nothing to show.
            return if validate(op, self.level).is_err() {
                Ok(Box::new(Accepted))
            } else {
                Err(unsupported())
            };
        }
        if broken.iter().all(|v| misses(self.bug, &v.rule, op)) {
            return Ok(Box::new(Accepted));
        }
        Err(rejected("E_INVALIDARG".to_string()))
    }
}

#[test]
fn every_validation_bug_on_the_far_side_of_an_edge_is_caught_by_an_edge_case() {
    let cases = cases_named("edges.");
    let bugs = [
        ValidationBug::EmptyStridesAsNone,
        ValidationBug::TotalSizeZeroAsNotGiven,
        ValidationBug::AxisSigned,
        ValidationBug::NonAxisSizesAgainstFirstPart,
        ValidationBug::LevelAsRowAbove,
    ];
    let mut missed = Vec::new();
    for bug in bugs {
        if failing(&cases, |level| ValidationBackend { bug, level }).is_empty() {
            missed.push(bug);
        }
    }
    assert!(missed.is_empty(), "not caught: {missed:?}");
}
