//! `cargo xtask bench --fuzz`: a campaign's speed with a bug present, side by side with the
//! same campaign on the clean backend. The CPU backend at every level (as `fuzz --backend cpu`
//! runs it) against the same backend with one planted execution bug, in rounds: each round
//! runs the clean campaign and the buggy one on the same seed (the seed changes from round to
//! round), so each round gives one ratio. Reported: cases per second of each, the per-round
//! ratio buggy / clean as median [min-max], the same ratio of the processor time the two took
//! (on a shared machine the wall clock also counts other processes' turns), and the buggy
//! campaigns' buckets and shrink time.
//!
//! First the campaign profile (`profile`): where a case's time goes, by stage and tier.
//!
//! Then a backend that compiles slowly (the CPU backend after a 10 ms wait in each compile,
//! as a JIT or a compiler per module takes): the same campaign with one data set per
//! descriptor and with 8, side by side; cases per second and descriptors per second of each.

use super::error::BenchError;
use super::options::BenchArgs;
use super::report::{range_json, write_json};
use super::rounds::spread;
use dmlcts_backend_cpu::CpuBackend;
use dmlcts_fuzz::{CampaignOptions, CampaignOutcome, run_campaign_at_levels};
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, FeatureLevel, OperatorDesc, OutputBinding,
};

/// Cases per campaign: the measurement was a 3,000-case campaign.
const CASES: u64 = 3000;

/// A planted execution bug: which descriptors it touches, in words.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Bug {
    /// Slice1 with a negative window stride on a dimension whose output size is 3 or more:
    /// the first output byte comes out flipped.
    NegativeStride,
    /// Join of 3 or more inputs of 1- or 2-byte elements: the first output byte comes out
    /// flipped (a bug that needs an element size, so its buckets differ by element class).
    NarrowJoinOfThree,
}

impl Bug {
    const ALL: [Bug; 2] = [Bug::NegativeStride, Bug::NarrowJoinOfThree];

    fn name(self) -> &'static str {
        match self {
            Bug::NegativeStride => "slice1 negative stride, output >= 3",
            Bug::NarrowJoinOfThree => "join of 3+ inputs, 1- or 2-byte elements",
        }
    }

    fn touches(self, op: &OperatorDesc) -> bool {
        match (self, op) {
            (Bug::NegativeStride, OperatorDesc::Slice1(d)) => (d.input_window_strides.iter())
                .zip(&d.output_tensor.sizes)
                .any(|(&stride, &size)| stride < 0 && size >= 3),
            (Bug::NarrowJoinOfThree, OperatorDesc::Join(d)) => {
                d.input_tensors.len() >= 3 && d.output_tensor.data_type.element_size() <= 2
            }
            _ => false,
        }
    }
}

/// The CPU backend at one level, with at most one planted bug.
struct Planted {
    real: CpuBackend,
    bug: Option<Bug>,
}

struct Flipping<'a>(Box<dyn CompiledOperator + 'a>);

impl CompiledOperator for Flipping<'_> {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        self.0.execute(inputs, outputs)?;
        if let Some(byte) = outputs[0].bytes_mut().first_mut() {
            *byte ^= 0x01;
        }
        Ok(())
    }
}

impl Backend for Planted {
    fn name(&self) -> String {
        "cpu-planted".into()
    }
    fn feature_level(&self) -> FeatureLevel {
        self.real.feature_level()
    }
    fn device(&self) -> String {
        self.real.device()
    }
    fn implementation(&self) -> dmlcts_tensor::Implementation {
        self.real.implementation()
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        let compiled = self.real.compile(op)?;
        match self.bug {
            Some(bug) if bug.touches(op) => Ok(Box::new(Flipping(compiled))),
            _ => Ok(compiled),
        }
    }
}

/// A campaign, and the processor time it took.
fn timed_campaign(bug: Option<Bug>, seed: u64) -> (CampaignOutcome, Option<f64>) {
    let before = super::profile::processor_seconds();
    let outcome = campaign(bug, seed);
    let used = super::profile::processor_seconds()
        .zip(before)
        .map(|(after, before)| after - before);
    (outcome, used)
}

fn campaign(bug: Option<Bug>, seed: u64) -> CampaignOutcome {
    let devices: Vec<Planted> = FeatureLevel::ALL
        .into_iter()
        .map(|level| Planted {
            real: CpuBackend::at_level(level),
            bug,
        })
        .collect();
    let job: Vec<&dyn Backend> = devices.iter().map(|d| d as &dyn Backend).collect();
    let mut options = CampaignOptions::new("cpu-planted", seed);
    options.cases = Some(CASES);
    run_campaign_at_levels(&[job], &options, |_| {})
}

/// The CPU backend at one level, waiting `COMPILE_WAIT` in each compile.
struct SlowCompile {
    real: CpuBackend,
}

const COMPILE_WAIT: std::time::Duration = std::time::Duration::from_millis(10);
/// Descriptors per slow-compile campaign.
const SLOW_DESCRIPTORS: u64 = 300;

impl Backend for SlowCompile {
    fn name(&self) -> String {
        "cpu-slow-compile".into()
    }
    fn feature_level(&self) -> FeatureLevel {
        self.real.feature_level()
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        std::thread::sleep(COMPILE_WAIT);
        self.real.compile(op)
    }
}

fn slow_campaign(data_sets: usize, seed: u64) -> CampaignOutcome {
    let devices: Vec<SlowCompile> = FeatureLevel::ALL
        .into_iter()
        .map(|level| SlowCompile {
            real: CpuBackend::at_level(level),
        })
        .collect();
    let job: Vec<&dyn Backend> = devices.iter().map(|d| d as &dyn Backend).collect();
    let mut options = CampaignOptions::new("cpu-slow-compile", seed);
    options.cases = Some(SLOW_DESCRIPTORS);
    options.data_sets = data_sets;
    run_campaign_at_levels(&[job], &options, |_| {})
}

/// The slow-compile table: --data-sets 1 and 8, side by side, per round.
fn bench_data_sets(options: &BenchArgs) -> serde_json::Value {
    println!(
        "\ncompiles that take {} ms (a JIT, a compiler per module): {SLOW_DESCRIPTORS} descriptors \
         per campaign, one data set each or 8 on one compile; {} rounds",
        COMPILE_WAIT.as_millis(),
        options.runs
    );
    println!(
        "{:14} {:>22} {:>22} {:>22}",
        "data sets", "cases/s", "descriptors/s", "cases/s over 1 set's"
    );
    let (mut one, mut eight) = ((vec![], vec![]), (vec![], vec![]));
    let mut gains = Vec::new();
    for round in 0..options.runs {
        let seed = 2026 + round as u64;
        let a = slow_campaign(1, seed);
        let b = slow_campaign(8, seed);
        one.0.push(a.rate());
        one.1.push(a.descriptor_rate());
        eight.0.push(b.rate());
        eight.1.push(b.descriptor_rate());
        gains.push(b.rate() / a.rate());
    }
    let range = |v: (f64, f64, f64)| format!("{:.1} [{:.1}-{:.1}]", v.0, v.1, v.2);
    let (one, eight, gain) = (
        (spread(one.0), spread(one.1)),
        (spread(eight.0), spread(eight.1)),
        spread(gains),
    );
    println!(
        "{:14} {:>22} {:>22} {:>22}",
        "1",
        range(one.0),
        range(one.1),
        ""
    );
    println!(
        "{:14} {:>22} {:>22} {:>22}",
        "8",
        range(eight.0),
        range(eight.1),
        range(gain)
    );
    serde_json::json!({
        "compile_wait_ms": COMPILE_WAIT.as_millis() as u64,
        "descriptors_per_campaign": SLOW_DESCRIPTORS,
        "one_data_set": {"cases_per_second": range_json(one.0), "descriptors_per_second": range_json(one.1)},
        "eight_data_sets": {"cases_per_second": range_json(eight.0), "descriptors_per_second": range_json(eight.1)},
        "cases_per_second_gain": range_json(gain),
    })
}

pub(super) fn bench_fuzz(options: &BenchArgs) -> Result<(), BenchError> {
    // `--filter TEXT`: only the parts whose name contains TEXT (`profile`, a planted bug's
    // name, `data sets`).
    let profile =
        (!options.filtered_out("profile")).then(|| super::profile::bench_profile(options.runs));
    println!(
        "fuzz campaigns of {CASES} cases, CPU backend at every level, in process, 1 job; \
         {} rounds, each the clean backend and the buggy one on the round's seed",
        options.runs
    );
    println!(
        "{:44} {:>22} {:>22} {:>20} {:>20} {:>8} {:>9}",
        "planted bug",
        "clean cases/s",
        "buggy cases/s",
        "buggy / clean",
        "processor time ratio",
        "buckets",
        "shrink s"
    );
    let mut rows = Vec::new();
    let mut failed = false;
    for bug in Bug::ALL
        .into_iter()
        .filter(|b| !options.filtered_out(b.name()))
    {
        let (mut clean, mut buggy, mut ratios, mut shrink) = (vec![], vec![], vec![], vec![]);
        let mut processor_ratios = Vec::new();
        let mut buckets = Vec::new();
        for round in 0..options.runs {
            let seed = 2026 + round as u64;
            // Alternate which goes first, so neither always runs on a warmer machine.
            let ((c, c_cpu), (b, b_cpu)) = if round % 2 == 0 {
                let c = timed_campaign(None, seed);
                (c, timed_campaign(Some(bug), seed))
            } else {
                let b = timed_campaign(Some(bug), seed);
                (timed_campaign(None, seed), b)
            };
            // Clean processor time over buggy: the buggy campaign's speed relative to the clean.
            if let (Some(c_cpu), Some(b_cpu)) = (c_cpu, b_cpu) {
                processor_ratios.push(c_cpu / b_cpu.max(1e-9));
            }
            if c.new_buckets().next().is_some() || b.new_buckets().next().is_none() {
                eprintln!(
                    "error: seed {seed}: the clean campaign found {} bucket(s), the buggy one {}",
                    c.new_buckets().count(),
                    b.new_buckets().count()
                );
                failed = true;
            }
            clean.push(c.rate());
            buggy.push(b.rate());
            ratios.push(b.rate() / c.rate());
            shrink.push(b.shrink_time().as_secs_f64());
            buckets.push(b.new_buckets().map(|x| x.id.clone()).collect::<Vec<_>>());
        }
        let (clean, buggy, ratio, shrink) =
            (spread(clean), spread(buggy), spread(ratios), spread(shrink));
        let processor = (!processor_ratios.is_empty()).then(|| spread(processor_ratios));
        let range = |v: (f64, f64, f64), digits: usize| {
            format!("{:.*} [{:.*}-{:.*}]", digits, v.0, digits, v.1, digits, v.2)
        };
        let counts: Vec<usize> = buckets.iter().map(Vec::len).collect();
        println!(
            "{:44} {:>22} {:>22} {:>20} {:>20} {:>8} {:>9}",
            bug.name(),
            range(clean, 0),
            range(buggy, 0),
            range(ratio, 2),
            processor.map_or("-".to_string(), |p| range(p, 2)),
            format!(
                "{}-{}",
                counts.iter().min().unwrap_or(&0),
                counts.iter().max().unwrap_or(&0)
            ),
            format!("{:.2}", shrink.0),
        );
        rows.push(serde_json::json!({
            "bug": bug.name(),
            "clean_cases_per_second": range_json(clean),
            "buggy_cases_per_second": range_json(buggy),
            "buggy_over_clean": range_json(ratio),
            "buggy_over_clean_processor_time": processor.map(range_json),
            "buggy_shrink_seconds": range_json(shrink),
            "buggy_buckets": buckets,
        }));
    }
    println!("target: a campaign with one planted execution bug runs at >= 0.50 of its clean rate");
    let data_sets = (!options.filtered_out("data sets")).then(|| bench_data_sets(options));
    if let Some(path) = &options.json {
        let report = serde_json::json!({
            "bench": "fuzz",
            "cases_per_campaign": CASES,
            "rounds": options.runs,
            "rows": rows,
            "data_sets": data_sets,
            "profile": profile,
        });
        write_json(path, &report)?;
    }
    if failed {
        return Err(BenchError::PlantedBugMissed);
    }
    Ok(())
}
