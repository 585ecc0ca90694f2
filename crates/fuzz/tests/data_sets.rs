//! `--data-sets K`: each valid descriptor is compiled once and checked on K data sets (its own
//! inputs and K - 1 more from its seed); cases and descriptors are counted apart; the
//! descriptors do not depend on K; a bug that only some data shows is found on the data set
//! that shows it, shrunk with that data, and its saved case fails again when replayed.

use dmlcts_backend_cpu::CpuBackend;
use dmlcts_fuzz::{CampaignOptions, CampaignOutcome, Mix, run_campaign};
use dmlcts_harness::{Corpus, RunOptions, Status, run_case};
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, FeatureLevel, OperatorDesc, OperatorKind,
    OutputBinding,
};
use std::sync::Mutex;
use std::time::Duration;

/// The CPU backend at 4_1, recording what it compiles; with `bug`, a Join whose first
/// input's first byte is below 0x20 gets its first output byte flipped (about one data set
/// in 8 shows it).
struct Recording {
    real: CpuBackend,
    bug: bool,
    compiled: Mutex<Vec<String>>,
}

struct Flipping<'a>(Box<dyn CompiledOperator + 'a>);

impl CompiledOperator for Flipping<'_> {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        self.0.execute(inputs, outputs)?;
        if inputs[0].first().is_some_and(|&b| b < 0x20) {
            outputs[0].bytes_mut()[0] ^= 0x01;
        }
        Ok(())
    }
}

impl Backend for Recording {
    fn name(&self) -> String {
        "recording".into()
    }
    fn feature_level(&self) -> FeatureLevel {
        FeatureLevel::L4_1
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        self.compiled.lock().unwrap().push(format!("{op:?}"));
        let compiled = self.real.compile(op)?;
        if self.bug && matches!(op, OperatorDesc::Join(_)) {
            return Ok(Box::new(Flipping(compiled)));
        }
        Ok(compiled)
    }
}

fn recording(bug: bool) -> Recording {
    Recording {
        real: CpuBackend::new(),
        bug,
        compiled: Mutex::new(Vec::new()),
    }
}

fn joins(
    backend: &Recording,
    data_sets: usize,
    out: Option<std::path::PathBuf>,
) -> CampaignOutcome {
    let mut options = CampaignOptions::new("recording", 11);
    options.cases = Some(200);
    options.op = Some(OperatorKind::Join);
    options.mix = Mix::ValidOnly;
    options.data_sets = data_sets;
    // Data sets are for one descriptor: a sibling group runs its own data on each step.
    options.siblings = false;
    // Shrinking (only where cases are saved) runs the shrunk descriptors on the data set
    // that failed.
    options.shrink_time = Duration::from_secs(if out.is_some() { 20 } else { 0 });
    options.out_dir = out;
    run_campaign(&[backend], &options, |_| {})
}

#[test]
fn data_sets_share_one_compile_per_descriptor_and_leave_the_descriptors_as_they_were() {
    let one = recording(false);
    let outcome = joins(&one, 1, None);
    assert_eq!((outcome.descriptors_run, outcome.cases_run), (200, 200));
    let eight = recording(false);
    let outcome = joins(&eight, 8, None);
    assert_eq!(outcome.descriptors_run, 200);
    // Every valid Join passes, so each runs all 8 (the large tier has none in 200 cases).
    assert_eq!(outcome.cases_run, 1600);
    assert_eq!(outcome.new_buckets().count(), 0);
    // One compile per descriptor (a Join has no invariant), the same descriptors either way.
    assert_eq!(
        *eight.compiled.lock().unwrap(),
        *one.compiled.lock().unwrap()
    );
    assert_eq!(one.compiled.lock().unwrap().len(), 200);
}

#[test]
fn a_bug_only_some_data_shows_is_found_on_that_data_set_and_its_case_replays() {
    let dir = std::env::temp_dir().join(format!("dmlcts-data-sets-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let with_one = joins(&recording(true), 1, None);
    let with_eight = joins(&recording(true), 8, Some(dir.clone()));
    let found = |o: &CampaignOutcome| o.buckets.iter().map(|b| b.count).sum::<u64>();
    assert!(
        found(&with_eight) > 2 * found(&with_one),
        "8 data sets find more: {} vs {}",
        found(&with_eight),
        found(&with_one)
    );
    let bucket = with_eight.new_buckets().next().expect("found");
    let saved = bucket.saved.as_ref().expect("saved");
    let corpus = Corpus::load_path(saved);
    assert!(corpus.errors.is_empty(), "{:?}", corpus.errors);
    let case = &corpus.cases[0];
    assert!(bucket.reproduced);
    assert!(
        case.op.outputs()[0].1.sizes.len() <= 2,
        "shrunk: {:?}",
        case.op
    );
    let options = RunOptions {
        strict_level: true,
        ..RunOptions::default()
    };
    assert_eq!(
        run_case(&recording(true), case, &options).status,
        Status::Failed
    );
    assert_eq!(
        run_case(&recording(false), case, &options).status,
        Status::Passed
    );
    let _ = std::fs::remove_dir_all(&dir);
}
