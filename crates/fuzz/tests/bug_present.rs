//! A campaign with a bug present spends its time on cases, not on shrinking the same bug
//! again: an acceptance is counted in its rule's bucket without a new shrink, a failure that
//! fits a bucket is counted there, and a re-shrink stops as soon as its case fits one, so each
//! bucket's shrinking (first and later, added up in it) stays a small share of the campaign.

mod table_first;

use dmlcts_backend_cpu::CpuBackend;
use dmlcts_fuzz::{CampaignOptions, CampaignOutcome, run_campaign, run_campaign_at_levels};
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, FeatureLevel, OperatorDesc, OutputBinding,
};
use table_first::{TableFirst, bugs};

fn summary(outcome: &CampaignOutcome) -> String {
    (outcome.buckets.iter())
        .map(|b| {
            format!(
                "{} x {}: {} shrink(s), {} runs, {:.2} s",
                b.id,
                b.count,
                b.shrinks,
                b.shrink_checks,
                b.shrink_time.as_secs_f64()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn an_acceptance_is_shrunk_once_per_rule_and_every_later_one_is_counted_as_it_comes() {
    // A tensor with one stride more than its dimensions is accepted: the bug shows in tensors
    // of every element size and operator, at every level.
    let bug = bugs()
        .into_iter()
        .find(|b| b.rule == "tensor.strides_count");
    let devices: Vec<TableFirst> = FeatureLevel::ALL
        .into_iter()
        .map(|level| TableFirst::new(level, bug))
        .collect();
    let job: Vec<&dyn Backend> = devices.iter().map(|d| d as &dyn Backend).collect();
    let mut options = CampaignOptions::new("table-first", 3);
    options.cases = Some(3000);
    let outcome = run_campaign_at_levels(&[job], &options, |_| {});
    let text = summary(&outcome);
    assert!(!outcome.buckets.is_empty(), "found");
    for bucket in &outcome.buckets {
        assert_eq!(
            bucket.id,
            format!(
                "acceptance.{}.tensor.strides_count",
                bucket.case.op.kind().name()
            ),
            "{text}"
        );
        // Its first hit shrunk (for the saved case), every later one counted as it came.
        assert_eq!(bucket.shrinks, 1, "{text}");
    }
    let hits: u64 = outcome.buckets.iter().map(|b| b.count).sum();
    assert!(hits >= 3 * outcome.buckets.len() as u64, "{text}");
}

/// The CPU backend; a Join of 3 or more inputs of 1- or 2-byte elements gets its first output
/// byte flipped (found in two element classes, so in two buckets).
struct NarrowJoin {
    real: CpuBackend,
}

struct Flipping<'a>(Box<dyn CompiledOperator + 'a>);

impl CompiledOperator for Flipping<'_> {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        self.0.execute(inputs, outputs)?;
        outputs[0].bytes_mut()[0] ^= 0x01;
        Ok(())
    }
}

impl Backend for NarrowJoin {
    fn name(&self) -> String {
        "narrow-join".into()
    }
    fn feature_level(&self) -> FeatureLevel {
        FeatureLevel::L4_1
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        let compiled = self.real.compile(op)?;
        match op {
            OperatorDesc::Join(d)
                if d.input_tensors.len() >= 3 && d.output_tensor.data_type.element_size() <= 2 =>
            {
                Ok(Box::new(Flipping(compiled)))
            }
            _ => Ok(compiled),
        }
    }
}

#[test]
fn an_execution_bug_is_shrunk_about_once_per_bucket_and_the_rest_is_counted() {
    for seed in [1, 2, 3] {
        let backend = NarrowJoin {
            real: CpuBackend::new(),
        };
        let mut options = CampaignOptions::new("narrow-join", seed);
        options.cases = Some(3000);
        let outcome = run_campaign(&[&backend], &options, |_| {});
        let text = summary(&outcome);
        let ids: Vec<&str> = outcome.buckets.iter().map(|b| b.id.as_str()).collect();
        assert!(
            ids.iter().all(|id| id.starts_with("values.join.e")),
            "seed {seed}: {text}"
        );
        let hits: u64 = outcome.buckets.iter().map(|b| b.count).sum();
        let shrinks: u64 = outcome.buckets.iter().map(|b| b.shrinks).sum();
        let runs: u64 = outcome.buckets.iter().map(|b| b.shrink_checks).sum();
        assert!(hits >= 20, "seed {seed}: {text}");
        // At most one re-shrink per bucket beside its first; every other hit counted as is.
        assert!(
            shrinks <= 2 * outcome.buckets.len() as u64,
            "seed {seed}: {text}"
        );
        // Shrinking runs fewer cases than the campaign itself.
        assert!(runs < 3000, "seed {seed}: {runs} runs shrinking\n{text}");
    }
}
