//! `cargo xtask crosscheck`: the oracle against references nobody here wrote. Each reference
//! (by default ONNX's `onnx.reference.ReferenceEvaluator`, OpenVINO's `Model.evaluate()` and
//! LiteRT's builtin reference kernels, each a backend in backends.yaml) is just a backend run
//! against the oracle: the corpus through the conformance runner (`prepare` +
//! `PreparedRun::run`), then a campaign of valid cases through the fuzzer (`run_campaign`,
//! valid only), both bit for bit, in every type the reference claims. A disagreement the
//! reference's expectations file explains (expectations/NAME.yaml: a recorded finding against
//! it) is counted apart; any other is unexplained and fails the command: either a finding
//! against that reference to record, or an oracle bug to fix.

use dmlcts_cli::Host;
use dmlcts_cli::backends::{BackendRequest, resolve};
use dmlcts_cli::conformance::{apply_expectations, prepare};
use dmlcts_fuzz::{BucketStatus, CampaignOptions, Mix, run_campaign};
use dmlcts_harness::expectations::Expectations;
use dmlcts_harness::report::Summary;
use dmlcts_harness::{CaseResult, Corpus, Status};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The three references the command runs by default.
pub const REFERENCES: &[&str] = &["onnx-reference", "openvino-reference", "litert-ref"];

#[derive(Clone, Debug, clap::Args)]
pub struct CrosscheckArgs {
    /// A reference backend (a name in backends.yaml); repeatable [default: onnx-reference,
    /// openvino-reference, litert-ref]
    #[arg(long = "reference", value_name = "NAME")]
    pub references: Vec<String>,
    /// The corpus only, no campaign (what CI runs)
    #[arg(long)]
    pub corpus_only: bool,
    /// Valid cases in each reference's campaign
    #[arg(long, value_name = "N", default_value_t = 2000)]
    pub cases: u64,
    /// Each campaign's time budget in seconds; with --cases, whichever ends first
    #[arg(long, value_name = "SECS", value_parser = dmlcts_cli::parse_seconds)]
    pub time: Option<Duration>,
    /// The campaigns' seed
    #[arg(long, value_name = "S", default_value_t = 2027)]
    pub seed: u64,
    /// Where a campaign saves each disagreement's minimal case
    #[arg(long, value_name = "DIR", default_value = "reports/crosscheck-regressions")]
    pub out: PathBuf,
}

/// What one reference did.
#[derive(Debug, Default)]
struct Tally {
    name: String,
    device: String,
    unavailable: Option<String>,
    corpus: Summary,
    /// Corpus failures no expectation explains, and the campaign's new buckets.
    unexplained: Vec<String>,
    campaign_cases: u64,
    campaign_time: Duration,
    /// Known buckets (explained by the reference's expectations file): name x hits.
    explained: Vec<String>,
}

pub fn crosscheck_main(args: &CrosscheckArgs, host: &Host, root: &Path) -> i32 {
    let names: Vec<String> = if args.references.is_empty() {
        REFERENCES.iter().map(|n| n.to_string()).collect()
    } else {
        args.references.clone()
    };
    let corpus = Corpus::embedded();
    let mut tallies = Vec::new();
    for name in &names {
        let tally = crosscheck_one(name, args, host, &root.join("expectations"), &corpus);
        tallies.push(tally);
    }
    dmlcts_cli::say!("\ncrosscheck: the oracle against {} references", tallies.len());
    let mut status = 0;
    for t in &tallies {
        if let Some(reason) = &t.unavailable {
            dmlcts_cli::say!("  {:20} not available: {reason}", t.name);
            status = 1;
            continue;
        }
        let campaign = if args.corpus_only {
            String::new()
        } else {
            format!(
                "; campaign: {} valid cases in {:.1} s",
                t.campaign_cases,
                t.campaign_time.as_secs_f64()
            )
        };
        dmlcts_cli::say!(
            "  {:20} corpus: {}, {} explained{campaign}; {} unexplained disagreements{}",
            t.name,
            t.corpus.line(),
            t.corpus.expected_failures,
            t.unexplained.len(),
            if t.explained.is_empty() {
                String::new()
            } else {
                format!(" (explained: {})", t.explained.join(", "))
            }
        );
        for line in &t.unexplained {
            dmlcts_cli::say!("      unexplained: {line}");
        }
        if !t.unexplained.is_empty() {
            status = 1;
        }
    }
    status
}

/// The reference's expectations file, where it has one.
fn expectations_of(dir: &Path, name: &str) -> Result<Option<(Expectations, PathBuf)>, String> {
    let path = dir.join(format!("{name}.yaml"));
    if !path.is_file() {
        return Ok(None);
    }
    Expectations::load(&path).map(|e| Some((e, path)))
}

fn crosscheck_one(
    name: &str,
    args: &CrosscheckArgs,
    host: &Host,
    expectations_dir: &Path,
    corpus: &Corpus,
) -> Tally {
    let mut tally = Tally {
        name: name.to_string(),
        ..Tally::default()
    };
    let expectations = match expectations_of(expectations_dir, name) {
        Ok(e) => e,
        Err(e) => {
            tally.unavailable = Some(format!("its expectations file: {e}"));
            return tally;
        }
    };
    let request = BackendRequest {
        name: name.to_string(),
        ..BackendRequest::default()
    };
    let resolved = match resolve(host, &request) {
        Ok(resolved) => resolved,
        Err(e) => {
            tally.unavailable = Some(e);
            return tally;
        }
    };
    let backend = resolved.backend.clone();
    tally.device = backend.device();
    if let Some(reason) = (resolved.not_ready.clone()).or_else(|| backend.unavailable_reason()) {
        tally.unavailable = Some(reason);
        return tally;
    }
    dmlcts_cli::say!("crosscheck: {name} ({})", tally.device);

    // The corpus, through the conformance runner.
    let mut run = prepare(resolved, None, false, expectations.as_ref().map(|(e, _)| e));
    let mut results: Vec<CaseResult> = Vec::new();
    let skip_check = run.run(&corpus.cases, "cargo xtask", name, &mut |r| {
        results.push(r.clone())
    });
    if let Some((e, path)) = &expectations {
        for case in apply_expectations(e, path, &run.info, "cargo xtask", name, &mut results) {
            tally
                .unexplained
                .push(format!("the expectations file names `{case}`, which did not run"));
        }
    }
    for r in results.iter().filter(|r| r.status == Status::Failed) {
        dmlcts_cli::say!("{}", r.failure_report());
        tally
            .unexplained
            .push(format!("corpus {}: {}", r.name, r.reason));
    }
    if let Some(failure) = skip_check.failure(&run.info.backend) {
        tally.unexplained.push(failure);
    }
    tally.corpus = Summary::of(&results);
    dmlcts_cli::say!("  corpus: {}", tally.corpus.line());
    if args.corpus_only {
        return tally;
    }

    // A campaign of valid cases, through the fuzzer.
    let mut options = CampaignOptions::new(name, args.seed);
    options.cases = Some(args.cases);
    options.time = args.time;
    options.mix = Mix::ValidOnly;
    options.device = tally.device.clone();
    options.out_dir = Some(args.out.join(name));
    if let Some((e, _)) = &expectations {
        options.known_differences = e.known_differences.clone();
        options.not_enforced = e.not_enforced.clone();
    }
    let started = Instant::now();
    let outcome = run_campaign(&[backend.as_ref()], &options, |_| {});
    tally.campaign_cases = outcome.cases_run;
    tally.campaign_time = started.elapsed();
    for bucket in &outcome.buckets {
        match &bucket.status {
            BucketStatus::New => {
                dmlcts_cli::say!("{}", bucket.report);
                tally.unexplained.push(format!(
                    "campaign bucket {} x {} (first: case {}{})",
                    bucket.id,
                    bucket.count,
                    bucket.first_index,
                    bucket
                        .saved
                        .as_ref()
                        .map(|p| format!(", saved: {}", p.display()))
                        .unwrap_or_default()
                ));
            }
            BucketStatus::Known { name, .. } => {
                tally.explained.push(format!("{name} x {}", bucket.count))
            }
            // Valid cases only: nothing is a must-reject, so nothing is informational.
            BucketStatus::Informational { .. } => {}
        }
    }
    if outcome.unclassified > 0 {
        tally.unexplained.push(format!(
            "{} more campaign failures not shrunk (too many new buckets)",
            outcome.unclassified
        ));
    }
    dmlcts_cli::say!(
        "  campaign: {} valid cases in {:.1} s ({:.0} cases/s), {}",
        outcome.cases_run,
        outcome.elapsed.as_secs_f64(),
        outcome.rate(),
        outcome.summary_line()
    );
    tally
}
