//! `cargo xtask crosscheck`: the oracle against references nobody here wrote. Each reference
//! (by default ONNX's `onnx.reference.ReferenceEvaluator`, OpenVINO's `Model.evaluate()` and
//! LiteRT's builtin reference kernels, each a backend in backends.yaml) is just a backend run
//! against the oracle: the corpus through a run session (`dmlcts_harness::Session`, as every
//! command runs it), then a campaign of valid cases through the fuzzer (`run_campaign`,
//! valid only), both bit for bit, in every type the reference claims. A disagreement the
//! reference's expectations file explains (expectations/NAME.yaml: a recorded finding against
//! it) is counted apart; any other is unexplained and fails the command: either a finding
//! against that reference to record, or an oracle bug to fix.

use dmlcts_cli::{BackendRequest, Host, Resolver, resolve};
use dmlcts_fuzz::{BucketStatus, CampaignOptions, Mix, run_campaign};
use dmlcts_harness::expectations::Expectations;
use dmlcts_harness::report::Summary;
use dmlcts_harness::run::replay::dmlcts_env;
use dmlcts_harness::session::SessionOptions;
use dmlcts_harness::{Corpus, ReplayRecipe, Status};
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
    #[arg(
        long,
        value_name = "DIR",
        default_value = "reports/crosscheck-regressions"
    )]
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
    let (_, status) = crosscheck_with(
        args,
        &names,
        &|request| resolve(host, request),
        &root.join("expectations"),
        &Corpus::embedded(),
    );
    status
}

/// Runs each named reference (made by `resolve`) against the oracle on `corpus` and, unless
/// `--corpus-only`, a campaign; prints the table. Returns each reference's tally and the exit
/// status: 1 when a reference could not run or disagreed where nothing explains it.
fn crosscheck_with(
    args: &CrosscheckArgs,
    names: &[String],
    resolve: Resolver<'_>,
    expectations_dir: &Path,
    corpus: &Corpus,
) -> (Vec<Tally>, i32) {
    let tallies: Vec<Tally> = (names.iter())
        .map(|name| crosscheck_one(name, args, resolve, expectations_dir, corpus))
        .collect();
    dmlcts_cli::say!(
        "\ncrosscheck: the oracle against {} references",
        tallies.len()
    );
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
    (tallies, status)
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
    resolve: Resolver<'_>,
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
    let resolved = match resolve(&request) {
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

    // The corpus, through the session every command runs.
    let mut options = Vec::new();
    if let Some((_, path)) = &expectations {
        options.extend(["--expectations".to_string(), path.display().to_string()]);
    }
    let recipe = ReplayRecipe::Conformance {
        program: vec!["cargo".to_string(), "xtask".to_string()],
        backend: name.to_string(),
        options,
        cases_from_files: false,
        env: dmlcts_env(),
    };
    let session = resolved.session(SessionOptions {
        expectations: expectations.as_ref().map(|(e, _)| e.clone()),
        replay: Some(recipe),
        ..SessionOptions::default()
    });
    let report = session.run(&corpus.cases, &[], &mut ());
    for case in &report.stale {
        tally.unexplained.push(format!(
            "the expectations file names `{case}`, which did not run"
        ));
    }
    // The run's own check (its result is the last) is counted apart, as a disagreement, not
    // as a case.
    let cases = report.results.len() - usize::from(report.skipped_everything.is_some());
    let results = &report.results[..cases];
    for r in results.iter().filter(|r| r.status == Status::Failed) {
        dmlcts_cli::say!("{}", r.failure_report());
        tally
            .unexplained
            .push(format!("corpus {}: {}", r.name, r.reason));
    }
    if let Some(failure) = report.skipped_everything {
        tally.unexplained.push(failure);
    }
    tally.corpus = Summary::of(results);
    dmlcts_cli::say!("  corpus: {}", tally.corpus.line());
    if args.corpus_only {
        return tally;
    }

    // A campaign of valid cases, through the fuzzer.
    let mut options = CampaignOptions::new(name, args.seed);
    options.program = "cargo xtask".to_string();
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use dmlcts_backend_cpu::CpuBackend;
    use dmlcts_cli::Resolved;
    use dmlcts_tensor::{
        Backend, CompileError, CompiledOperator, DataType, FeatureLevel, OperatorDesc,
        OutputBinding, ValidationProfile,
    };
    use std::sync::Arc;

    /// The CPU backend as a "reference" with a planted bug: the first output byte of every
    /// operator with a tensor of the planted type is flipped.
    struct Reference {
        cpu: CpuBackend,
        planted: Option<DataType>,
    }

    struct Flipping<'a>(Box<dyn CompiledOperator + 'a>);

    impl CompiledOperator for Flipping<'_> {
        fn execute(
            &self,
            inputs: &[&[u8]],
            outputs: &mut [OutputBinding<'_>],
        ) -> Result<(), String> {
            self.0.execute(inputs, outputs)?;
            outputs[0].bytes_mut()[0] ^= 0x01;
            Ok(())
        }
    }

    impl Backend for Reference {
        fn name(&self) -> String {
            "planted".into()
        }
        fn feature_level(&self) -> FeatureLevel {
            FeatureLevel::L4_1
        }
        fn device(&self) -> String {
            "the CPU backend, version 1.0.0".into()
        }
        fn validation_profile(&self) -> ValidationProfile {
            ValidationProfile::ValuesOnly
        }
        fn compile(
            &self,
            op: &OperatorDesc,
        ) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
            let compiled = self.cpu.compile(op)?;
            let planted = (op.inputs().into_iter().chain(op.outputs()))
                .any(|(_, t)| Some(t.data_type) == self.planted);
            Ok(if planted {
                Box::new(Flipping(compiled))
            } else {
                compiled
            })
        }
    }

    #[derive(Parser)]
    struct Words {
        #[command(flatten)]
        args: CrosscheckArgs,
    }

    /// The doc and edge cases and a 300-case campaign against the reference, with
    /// `expectations` (YAML) as its expectations file.
    fn crosscheck(planted: Option<DataType>, expectations: Option<&str>) -> (Tally, i32) {
        let dir = std::env::temp_dir().join(format!(
            "dmlcts-crosscheck-{}-{planted:?}-{}",
            std::process::id(),
            expectations.is_some()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        if let Some(text) = expectations {
            std::fs::write(dir.join("planted.yaml"), text).unwrap();
        }
        let out = dir.join("out");
        let out = out.to_str().unwrap();
        let args = Words::parse_from(["crosscheck", "--cases", "300", "--out", out]).args;
        let mut corpus = Corpus::embedded();
        corpus
            .cases
            .retain(|c| c.name.starts_with("doc.") || c.name.starts_with("edge."));
        let (mut tallies, status) = crosscheck_with(
            &args,
            &["planted".to_string()],
            &|_| {
                Ok(Resolved::single(Arc::new(Reference {
                    cpu: CpuBackend::at_level(FeatureLevel::L4_1),
                    planted,
                })))
            },
            &dir,
            &corpus,
        );
        let _ = std::fs::remove_dir_all(&dir);
        (tallies.remove(0), status)
    }

    #[test]
    fn a_reference_that_agrees_with_the_oracle_passes_with_nothing_unexplained() {
        let (tally, status) = crosscheck(None, None);
        assert_eq!(status, 0, "{:?}", tally.unexplained);
        assert!(tally.unexplained.is_empty());
        assert!(tally.corpus.passed > 0);
        assert_eq!(tally.corpus.failed, 0);
        assert_eq!(tally.campaign_cases, 300);
    }

    #[test]
    fn a_planted_bug_is_an_unexplained_disagreement_in_the_corpus_and_the_campaign() {
        let (tally, status) = crosscheck(Some(DataType::Float32), None);
        assert_eq!(status, 1);
        assert!(tally.corpus.failed > 0);
        assert!(
            tally
                .unexplained
                .iter()
                .any(|u| u.starts_with("corpus doc.")),
            "{:?}",
            tally.unexplained
        );
        assert!(
            (tally.unexplained.iter()).any(|u| u.starts_with("campaign bucket values.")),
            "{:?}",
            tally.unexplained
        );
    }

    #[test]
    fn disagreements_the_reference_s_expectations_file_describes_are_explained_not_failures() {
        // First without a file: the FLOAT16 corpus cases the planted bug fails.
        let (tally, status) = crosscheck(Some(DataType::Float16), None);
        assert_eq!(status, 1);
        let failed: Vec<&str> = (tally.unexplained.iter())
            .filter_map(|u| u.strip_prefix("corpus ")?.split(':').next())
            .collect();
        assert!(!failed.is_empty(), "{:?}", tally.unexplained);
        let mut file = String::from("expected_failures:\n");
        for case in &failed {
            file.push_str(&format!(
                "  - backend: planted\n    case: {case}\n    reason: planted\n"
            ));
        }
        file.push_str(
            "known_differences:\n  - name: planted float16\n    backend: planted\n    \
             check: values\n    predicate: tensor.float16\n    reason: planted\n",
        );
        let (tally, status) = crosscheck(Some(DataType::Float16), Some(&file));
        assert_eq!(status, 0, "{:?}", tally.unexplained);
        assert_eq!(tally.corpus.expected_failures, failed.len());
        assert!(
            (tally.explained.iter()).any(|e| e.starts_with("planted float16 x ")),
            "{:?}",
            tally.explained
        );
    }
}
