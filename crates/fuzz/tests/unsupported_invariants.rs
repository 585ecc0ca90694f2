//! A backend that cannot run some descriptors says `unsupported`, and a case it cannot run is
//! skipped, never failed. The invariants (join of split, reversing twice) run derived
//! descriptors of their own; one the backend cannot run leaves its invariant unchecked.
//! (On main a derived descriptor answered `unsupported` was an invariant failure: a GPU
//! delegate that refuses reversing slices gave 22 such buckets in a 2,000-case campaign.)

use dmlcts_backend_cpu::CpuBackend;
use dmlcts_fuzz::{CampaignOptions, Mix, run_campaign};
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, FeatureLevel, OperatorDesc, OperatorKind,
};

/// The CPU backend at 4_1, except that a Slice1 with every window stride negative, or a Join,
/// is `unsupported` (as a library that cannot express them would say).
struct NoReverseNoJoin(CpuBackend);

impl Backend for NoReverseNoJoin {
    fn name(&self) -> String {
        "no-reverse-no-join".into()
    }
    fn feature_level(&self) -> FeatureLevel {
        FeatureLevel::L4_1
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        match op {
            OperatorDesc::Slice1(s) if s.input_window_strides.iter().all(|&w| w < 0) => Err(
                CompileError::Unsupported("no reversing slices here".to_string()),
            ),
            OperatorDesc::Join(_) => Err(CompileError::Unsupported("no joins here".to_string())),
            _ => self.0.compile(op),
        }
    }
}

#[test]
fn invariants_whose_derived_descriptor_is_unsupported_are_unchecked_never_failed() {
    for op in [OperatorKind::Slice1, OperatorKind::Split] {
        let backend = NoReverseNoJoin(CpuBackend::new());
        let mut options = CampaignOptions::new("no-reverse-no-join", 3);
        options.cases = Some(400);
        options.op = Some(op);
        options.mix = Mix::ValidOnly;
        let outcome = run_campaign(&[&backend], &options, |_| {});
        assert_eq!(outcome.cases_run, 400, "{op}");
        let new: Vec<String> = outcome
            .new_buckets()
            .map(|b| format!("{}\n{}", b.id, b.report))
            .collect();
        assert!(new.is_empty(), "{op}: {new:#?}");
    }
}
