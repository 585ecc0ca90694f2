//! An in-process fuzz campaign on the example backend, as a backend author runs one from
//! their own tests: generated valid and near-miss descriptors, the same checks as the
//! corpus, failures shrunk and bucketed. The same campaign on a copy of the backend with a
//! planted bug shows that it finds one.

use dmlcts_example_backend::ExampleBackend;
use dmlcts_fuzz::{CampaignOptions, run_campaign};
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, FeatureLevel, OperatorDesc, OutputBinding,
};
use std::time::Duration;

fn campaign(backend: &dyn Backend) -> dmlcts_fuzz::CampaignOutcome {
    let mut options = CampaignOptions::new("example", 2026);
    options.cases = Some(1_000);
    // Shrinking a failure takes up to 20 s by default; a planted bug needs far less.
    options.shrink_time = Duration::from_secs(5);
    options.device = backend.device();
    run_campaign(&[backend], &options, |_progress| {})
}

fn new_buckets(outcome: &dmlcts_fuzz::CampaignOutcome) -> Vec<String> {
    outcome.new_buckets().map(|b| b.id.clone()).collect()
}

#[test]
fn a_campaign_on_the_example_backend_finds_nothing_new() {
    let backend = ExampleBackend::at_level(FeatureLevel::L4_1);
    let outcome = campaign(&backend);
    assert_eq!(outcome.cases_run, 1_000);
    assert_eq!(new_buckets(&outcome), Vec::<String>::new());
}

/// The example backend with a bug: the last byte of every Join output flipped.
struct PlantedBug(ExampleBackend);

struct Flipped<'a>(Box<dyn CompiledOperator + 'a>, bool);

impl CompiledOperator for Flipped<'_> {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        self.0.execute(inputs, outputs)?;
        if self.1 {
            for output in outputs.iter_mut() {
                if let Some(last) = output.bytes_mut().last_mut() {
                    *last ^= 0xff;
                }
            }
        }
        Ok(())
    }
}

impl Backend for PlantedBug {
    fn name(&self) -> String {
        self.0.name()
    }
    fn feature_level(&self) -> FeatureLevel {
        self.0.feature_level()
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        let join = matches!(op, OperatorDesc::Join(_));
        Ok(Box::new(Flipped(self.0.compile(op)?, join)))
    }
}

#[test]
fn the_same_campaign_finds_a_planted_bug() {
    let outcome = campaign(&PlantedBug(ExampleBackend::at_level(FeatureLevel::L4_1)));
    let found = new_buckets(&outcome);
    assert!(
        found.iter().any(|s| s.contains(".join.")),
        "no join bucket among {found:?}"
    );
}
