//! A backend with one planted bug on an edge the generated cases cover is caught by the corpus
//! (every case at its own level, strictly, as `cargo xtask conformance` runs a multi-level
//! backend), and by a generated case. The validation bugs check every other rule, in any
//! order: a must-reject case passes them only if it breaks something besides its own rule.
//!
//! A planted backend answers `unsupported` (a skip) where its bug cannot show: valid
//! descriptors for a validation bug, descriptors outside the bug's reach for an execution
//! bug. That keeps the run short and changes no verdict.

use dmlcts_harness::{Case, Corpus, RunOptions, Status, run_case};
use dmlcts_oracle::{broken_rules, execute, validate};
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, FeatureLevel, OperatorDesc, OutputBinding, Rejected,
    TensorDesc,
};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Bug {
    /// TotalTensorSizeInBytes compared with the minimum before its rounding up to 4 bytes.
    MinimumNotRounded,
    /// The minimum computed in 32-bit unsigned arithmetic, wrapping.
    MinimumIn32Bits,
    /// Distinct output addresses never checked.
    OutputAddressesUnchecked,
    /// Shared output addresses found only where a stride is 0.
    OnlyZeroStridesChecked,
    /// At most 2^32 elements (accepts exactly 2^32).
    ElementLimitOneOver,
    /// Split outputs or Join inputs past the last whole batch of 4 are not copied.
    BatchOf4DropsTheRest,
    /// A single-output Split, single-input Join or whole-window Slice1 copies the input's
    /// bytes into the output, whatever their layouts.
    SinglePartCopiesBytes,
    /// Inputs of 5 or more dimensions are read as if packed.
    HighDimensionsReadPacked,
    /// Elements past 2^20 of an output of this element size are not written.
    Past2To20Elements(usize),
}

impl Bug {
    fn is_validation(self) -> bool {
        matches!(
            self,
            Bug::MinimumNotRounded
                | Bug::MinimumIn32Bits
                | Bug::OutputAddressesUnchecked
                | Bug::OnlyZeroStridesChecked
                | Bug::ElementLimitOneOver
        )
    }
}

fn tensors(op: &OperatorDesc) -> Vec<&TensorDesc> {
    op.inputs()
        .into_iter()
        .chain(op.outputs())
        .map(|(_, t)| t)
        .collect()
}

fn unrounded_minimum(t: &TensorDesc) -> u128 {
    let strides = t.effective_strides();
    let last: u128 = t
        .sizes
        .iter()
        .zip(&strides)
        .map(|(&n, &s)| u128::from(n.saturating_sub(1)) * u128::from(s))
        .sum();
    (last + 1) * t.data_type.element_size() as u128
}

fn minimum_in_32_bits(t: &TensorDesc) -> u128 {
    let mut index: u32 = 0;
    for (&n, &s) in t.sizes.iter().zip(&t.effective_strides()) {
        index = index.wrapping_add(n.saturating_sub(1).wrapping_mul(s as u32));
    }
    let bytes = index
        .wrapping_add(1)
        .wrapping_mul(t.data_type.element_size() as u32);
    u128::from(bytes).div_ceil(4) * 4
}

/// Whether the bug's own check of `rule` lets `op` through.
fn misses(bug: Bug, rule: &str, op: &OperatorDesc) -> bool {
    let total = |t: &TensorDesc| u128::from(t.total_tensor_size_in_bytes);
    match (bug, rule) {
        (Bug::MinimumNotRounded, "tensor.total_size_minimum") => {
            tensors(op).iter().all(|t| total(t) >= unrounded_minimum(t))
        }
        (Bug::MinimumIn32Bits, "tensor.total_size_minimum") => tensors(op)
            .iter()
            .all(|t| total(t) >= minimum_in_32_bits(t)),
        (Bug::OutputAddressesUnchecked, "tensor.output_addresses_distinct") => true,
        (Bug::OnlyZeroStridesChecked, "tensor.output_addresses_distinct") => {
            op.outputs().iter().all(|(_, t)| {
                t.sizes
                    .iter()
                    .zip(t.effective_strides())
                    .all(|(&n, s)| n <= 1 || s != 0)
            })
        }
        (Bug::ElementLimitOneOver, "tensor.element_count_limit") => {
            tensors(op).iter().all(|t| t.element_count() <= 1 << 32)
        }
        _ => false,
    }
}

struct Planted {
    bug: Bug,
    level: FeatureLevel,
}

struct Faulty {
    bug: Bug,
    op: OperatorDesc,
}

impl Backend for Planted {
    fn name(&self) -> String {
        "planted".to_string()
    }
    fn feature_level(&self) -> FeatureLevel {
        self.level
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        let reject = |message: &str| {
            CompileError::Rejected(Rejected {
                rule: None,
                message: message.to_string(),
            })
        };
        let unsupported = || CompileError::Unsupported("outside the planted bug".to_string());
        let broken = broken_rules(op, self.level);
        if self.bug.is_validation() {
            if broken.is_empty() {
                return Err(unsupported());
            }
            if broken.iter().all(|v| misses(self.bug, &v.rule, op)) {
                return Ok(Box::new(Faulty {
                    bug: self.bug,
                    op: op.clone(),
                }));
            }
            return Err(reject("E_INVALIDARG"));
        }
        if let Err(v) = validate(op, self.level) {
            return Err(reject(&v.to_string()));
        }
        if !reaches(self.bug, op) {
            return Err(unsupported());
        }
        Ok(Box::new(Faulty {
            bug: self.bug,
            op: op.clone(),
        }))
    }
}

/// Whether an execution bug changes anything for `op`.
fn reaches(bug: Bug, op: &OperatorDesc) -> bool {
    match (bug, op) {
        (Bug::BatchOf4DropsTheRest, OperatorDesc::Split(d)) => {
            d.output_tensors.len() > 4 && d.output_tensors.len() % 4 != 0
        }
        (Bug::BatchOf4DropsTheRest, OperatorDesc::Join(d)) => {
            d.input_tensors.len() > 4 && d.input_tensors.len() % 4 != 0
        }
        (Bug::SinglePartCopiesBytes, OperatorDesc::Split(d)) => d.output_tensors.len() == 1,
        (Bug::SinglePartCopiesBytes, OperatorDesc::Join(d)) => d.input_tensors.len() == 1,
        (Bug::SinglePartCopiesBytes, OperatorDesc::Slice1(d)) => {
            d.input_window_strides.iter().all(|&s| s == 1)
                && d.input_window_offsets.iter().all(|&o| o == 0)
                && d.input_tensor.sizes == d.output_tensor.sizes
        }
        (Bug::HighDimensionsReadPacked, op) => op
            .inputs()
            .iter()
            .any(|(_, t)| t.dimension_count() >= 5 && t.strides.is_some()),
        (Bug::Past2To20Elements(size), op) => op
            .outputs()
            .iter()
            .any(|(_, t)| t.data_type.element_size() == size && t.element_count() > 1 << 20),
        _ => false,
    }
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

impl CompiledOperator for Faulty {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        if self.bug == Bug::SinglePartCopiesBytes {
            let target = outputs[0].bytes_mut();
            let n = target.len().min(inputs[0].len());
            target[..n].copy_from_slice(&inputs[0][..n]);
            return Ok(());
        }
        let results = if self.bug == Bug::HighDimensionsReadPacked {
            // The inputs' strides dropped: each buffer read as packed.
            let mut packed_op = self.op.clone();
            let descs: Vec<&mut TensorDesc> = match &mut packed_op {
                OperatorDesc::Split(d) => vec![&mut d.input_tensor],
                OperatorDesc::Join(d) => d.input_tensors.iter_mut().collect(),
                OperatorDesc::Slice1(d) => vec![&mut d.input_tensor],
            };
            let mut buffers = Vec::new();
            for (desc, bytes) in descs.into_iter().zip(inputs) {
                if desc.dimension_count() >= 5 {
                    *desc = TensorDesc::packed(desc.data_type, &desc.sizes);
                }
                let mut buffer = bytes.to_vec();
                buffer.resize(desc.total_tensor_size_in_bytes as usize, 0);
                buffers.push(buffer);
            }
            let refs: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
            execute(&packed_op, &refs)
        } else {
            execute(&self.op, inputs)
        }
        .map_err(|e| e.to_string())?;
        for (result, binding) in results.iter().zip(outputs.iter_mut()) {
            result.write_addressed_into(binding.bytes_mut());
        }
        let outputs_desc = self.op.outputs();
        match (self.bug, &self.op) {
            // Not copied: left as the harness filled it (its first byte flipped stands in).
            (Bug::BatchOf4DropsTheRest, OperatorDesc::Split(d)) => {
                for binding in outputs.iter_mut().skip(d.output_tensors.len() / 4 * 4) {
                    binding.bytes_mut()[0] ^= 0xff;
                }
            }
            (Bug::BatchOf4DropsTheRest, OperatorDesc::Join(d)) => {
                let first_dropped = d.input_tensors.len() / 4 * 4;
                let axis = d.axis as usize;
                let before: u32 = d.input_tensors[..first_dropped]
                    .iter()
                    .map(|t| t.sizes[axis])
                    .sum();
                let output = &d.output_tensor;
                let strides = output.effective_strides();
                let byte = u128::from(before)
                    * u128::from(strides[axis])
                    * output.data_type.element_size() as u128;
                outputs[0].bytes_mut()[byte as usize] ^= 0xff;
            }
            (Bug::Past2To20Elements(size), _) => {
                for ((_, desc), binding) in outputs_desc.iter().zip(outputs.iter_mut()) {
                    if desc.data_type.element_size() == size && desc.element_count() > 1 << 20 {
                        binding.bytes_mut()[byte_of_element(desc, 1 << 20)] ^= 0xff;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// The cases a planted bug fails, each run at its own level, strictly.
fn caught_by(bug: Bug, cases: &[Case]) -> Vec<String> {
    let options = RunOptions {
        strict_level: true,
        ..RunOptions::default()
    };
    cases
        .iter()
        .filter_map(|case| {
            let backend = Planted {
                bug,
                level: case.feature_level,
            };
            let result = run_case(&backend, case, &options);
            (result.status == Status::Failed).then(|| case.name.clone())
        })
        .collect()
}

/// Whether `name` is one of the cases this generators added.
fn generated_edge(name: &str) -> bool {
    name.starts_with("buffers.") || name.starts_with("shapes.") || name.contains("past_2_20")
}

#[test]
fn every_planted_bug_on_a_generated_edge_is_caught_by_a_generated_case() {
    let cases = Corpus::embedded().cases;
    let bugs = [
        Bug::MinimumNotRounded,
        Bug::MinimumIn32Bits,
        Bug::OutputAddressesUnchecked,
        Bug::OnlyZeroStridesChecked,
        Bug::ElementLimitOneOver,
        Bug::BatchOf4DropsTheRest,
        Bug::SinglePartCopiesBytes,
        Bug::HighDimensionsReadPacked,
        Bug::Past2To20Elements(1),
        Bug::Past2To20Elements(2),
        Bug::Past2To20Elements(4),
        Bug::Past2To20Elements(8),
    ];
    let mut missed = Vec::new();
    for bug in bugs {
        let caught = caught_by(bug, &cases);
        let generated = caught.iter().filter(|n| generated_edge(n)).count();
        eprintln!(
            "{bug:?}: {} case(s) fail, {generated} of them generated edges; others: {:?}",
            caught.len(),
            caught
                .iter()
                .filter(|n| !generated_edge(n))
                .collect::<Vec<_>>()
        );
        if generated == 0 {
            missed.push(bug);
        }
    }
    assert!(
        missed.is_empty(),
        "not caught by a generated case: {missed:?}"
    );
}

#[test]
fn a_planted_backend_without_reach_fails_nothing() {
    // The same backend on cases its bug cannot reach: every case passes or is skipped, so a
    // failure above is the bug's, not the harness's.
    let cases: Vec<Case> = Corpus::embedded()
        .cases
        .into_iter()
        .filter(|c| c.name.starts_with("doc.") || c.name.starts_with("reject.split."))
        .collect();
    assert!(cases.len() > 10);
    for bug in [Bug::MinimumNotRounded, Bug::BatchOf4DropsTheRest] {
        assert_eq!(caught_by(bug, &cases), Vec::<String>::new(), "{bug:?}");
    }
}
