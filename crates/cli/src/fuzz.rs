//! `fuzz`: options and printing around `dmlcts_fuzz::run_campaign`. Kept thin: the
//! campaign, its buckets and its report live in crates/fuzz.

use crate::backends::{BackendRequest, Resolved, Resolver, resolve};
use crate::conformance::BackendOptions;
use crate::error::{CommandError, CommandResult, Verdict};
use crate::{Host, parse_feature_level, parse_seconds};
use clap::{ArgGroup, Args, Subcommand};
use dmlcts_fuzz::report::{campaign_command, json_report};
use dmlcts_fuzz::{
    Bucket, BucketStatus, CampaignOptions, CampaignOutcome, Mix, Progress, Shard,
    run_campaign_announcing,
};
use dmlcts_harness::expectations::Expectations;
use dmlcts_harness::run::replay::dmlcts_env;
use dmlcts_harness::text;
use dmlcts_tensor::{Backend, FeatureLevel, OperatorKind};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A campaign: runs its whole budget, buckets every failure by the signature of its shrunk
/// minimal case, saves one case per bucket, and exits 1 when there is a new finding. A
/// backend that offers several feature levels is fuzzed at every one of them: each case is
/// judged at one, picked from the seed.
#[derive(Clone, Debug, Args)]
#[command(group = ArgGroup::new("mix").args(["valid_only", "invalid_only"]))]
#[command(args_conflicts_with_subcommands = true)]
pub struct FuzzArgs {
    #[command(subcommand)]
    pub command: Option<FuzzCommand>,
    #[command(flatten)]
    pub backend: BackendOptions,
    /// Case budget [default: 10000, or none when --time is given]
    #[arg(long, value_name = "N")]
    pub cases: Option<u64>,
    /// Time budget in seconds; with --cases, whichever ends first
    #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
    pub time: Option<Duration>,
    /// The campaign's seed [default: from the clock; printed, so any run can be repeated]
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Only this operator
    #[arg(long, value_name = "OP", value_parser = parse_operator)]
    pub op: Option<OperatorKind>,
    /// Only valid descriptors
    #[arg(long)]
    pub valid_only: bool,
    /// Only near misses (valid descriptors with one rule broken)
    #[arg(long)]
    pub invalid_only: bool,
    /// Judge every case at this level only [default: every level the backend offers, each
    /// case at one of them, picked from the seed]
    #[arg(long, value_name = "X_Y", value_parser = parse_feature_level)]
    pub feature_level: Option<FeatureLevel>,
    /// Data sets per valid descriptor, all on one compile: for backends that compile slowly
    /// (each data set counts as a case)
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub data_sets: u16,
    /// Backend instances run in parallel (processes for out-of-process backends); the same
    /// seed gives the same cases whatever N is
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: u16,
    /// Run the cases whose index % N == I (shards are disjoint and merge into the whole)
    #[arg(long, value_name = "I/N", value_parser = Shard::parse)]
    pub shard: Option<Shard>,
    /// Known differences (known_differences, not_enforced) counted as known or
    /// informational instead of new
    #[arg(long, value_name = "FILE")]
    pub expectations: Option<PathBuf>,
    /// New buckets after which further failures are only counted
    #[arg(long, value_name = "K", default_value_t = dmlcts_fuzz::campaign::DEFAULT_MAX_FINDINGS)]
    pub max_findings: usize,
    /// Seconds to shrink one failure
    #[arg(long, value_name = "SECS", value_parser = parse_seconds,
          default_value = "20")]
    pub shrink_time: Duration,
    /// Where each bucket's minimal case is saved [default: dmlcts-regressions; in a dmlcts
    /// checkout, `cargo xtask fuzz`: cases/regressions]
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Write the campaign report (JSON) here; `-`: to stdout, alone
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Fail unless the campaign checked these assertions (as conformance's
    /// --require-coverage: ids, `PREFIX*`, `all`)
    #[arg(long, value_name = "RULES|all", value_delimiter = ',')]
    pub require_coverage: Vec<String>,
}

/// `fuzz merge`: what a campaign spread over machines ends with.
#[derive(Clone, Debug, Subcommand)]
pub enum FuzzCommand {
    /// Merge the --json reports of a campaign's shards (--shard I/N) into one: buckets
    /// deduplicated by signature, hits summed, the earliest case kept; exit status 1 when it
    /// has a new finding
    Merge(MergeArgs),
}

#[derive(Clone, Debug, Args)]
pub struct MergeArgs {
    /// The shards' reports (of one campaign: the same seed, suite and backend)
    #[arg(value_name = "REPORT.json", required = true)]
    pub reports: Vec<PathBuf>,
    /// Write the merged report (JSON) here; `-`: to stdout, alone
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

fn parse_operator(text: &str) -> Result<OperatorKind, String> {
    OperatorKind::from_name(text)
        .ok_or_else(|| format!("unknown operator `{text}` (split, join, slice1)"))
}

fn duration_text(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, s % 3600 / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

fn progress_line(p: &Progress) -> String {
    let left = p
        .left
        .map(|l| format!(", {} left", duration_text(l)))
        .unwrap_or_default();
    format!(
        "fuzz: {} cases, {:.0} cases/s, {} new, {} known ({} hits), {}{left}",
        p.cases,
        p.rate(),
        p.new,
        p.known,
        p.known_hits,
        duration_text(p.elapsed)
    )
}

pub fn fuzz_main(args: &FuzzArgs, host: &Host) -> CommandResult {
    fuzz_with(args, host, &|request| resolve(host, request))
}

/// `fuzz` with a resolver of its own (a test's planted backends; `fuzz_main` resolves as the
/// host does).
pub fn fuzz_with(args: &FuzzArgs, host: &Host, resolver: Resolver<'_>) -> CommandResult {
    if let Some(FuzzCommand::Merge(merge)) = &args.command {
        return merge_main(merge);
    }
    crate::conformance::check_floor_names(&args.require_coverage)?;
    if args.json.as_deref().is_some_and(crate::closing::is_stdout) {
        crate::out::human_text_to_stderr();
    }
    let backend_name = args.backend.backend.clone();
    let mut options = campaign_options(args, host)?;
    // Held until the campaign's report is written.
    let _out_lock = check_before_run(args, &options)?;
    let jobs = usize::from(args.jobs);
    let (instances, startup) = start_instances(args, resolver, jobs)?;
    let first = instances[0][0].clone();
    if let Some(reason) = first.unavailable_reason() {
        return Err(CommandError::Backend(format!(
            "fuzz: backend {backend_name} is unavailable here: {reason}"
        )));
    }
    options.device = first.device();
    options.implementation = first.implementation();
    let command = campaign_command(&options, jobs, None).render();
    let budget = budget_text(&options);
    crate::say!(
        "fuzz: {budget} on backend {backend_name} ({}), seed {}, {jobs} job(s), shard {}/{}",
        options.device,
        options.seed,
        options.shard.index,
        options.shard.count
    );
    let levels: Vec<String> = instances[0]
        .iter()
        .map(|d| d.feature_level().to_string())
        .collect();
    crate::say!(
        "fuzz: {} (each case at one, picked from the seed)",
        match levels.len() {
            1 => format!("at feature level {}", levels[0]),
            _ => format!("at feature levels {}", levels.join(", ")),
        }
    );
    crate::say!("fuzz: repeat this run with: {command}");
    let jobs_devices: Vec<Vec<&dyn Backend>> = instances
        .iter()
        .map(|devices| devices.iter().map(|d| d.as_ref()).collect())
        .collect();
    let outcome = run_campaign_announcing(
        &jobs_devices,
        &options,
        progress_printer(),
        announce_new_bucket,
    );
    crate::say!(
        "fuzz: backend start-up {:.3} s; {} cases ({} descriptors) in {:.2} s ({:.0} cases/s, \
         {:.0} descriptors/s, {} job(s))",
        startup.as_secs_f64(),
        outcome.cases_run,
        outcome.descriptors_run,
        outcome.elapsed.as_secs_f64(),
        outcome.rate(),
        outcome.descriptor_rate(),
        outcome.jobs
    );
    print_skip_reasons(&outcome);
    print_buckets(&outcome);
    crate::say!("\nfuzz: {}", outcome.summary_line());
    crate::say!("fuzz: {}", text::line(&outcome.coverage.line()));
    if let Some(out) = &options.out_dir {
        let saved = (outcome.buckets.iter())
            .filter(|b| b.saved.is_some())
            .count();
        crate::say!(
            "fuzz: {} saved in {}",
            crate::out::count(saved, "minimal case", "minimal cases"),
            text::line(&out.display().to_string())
        );
    }
    // A `--time` campaign is repeated by the cases it ran.
    let command = campaign_command(&options, jobs, Some(&outcome)).render();
    if options.time.is_some() {
        crate::say!("fuzz: repeat these cases with: {command}");
    }
    if let Some(path) = &args.json {
        write_json(path, &options, &outcome, &command, startup)
            .map_err(|e| CommandError::Output(format!("--json {}: {e}", path.display())))?;
    }
    if outcome.skipped_everything() {
        crate::say_err!(
            "fuzz: FAILED: none of the {} descriptors ran (each was skipped: see the reasons \
             above), so nothing was checked",
            outcome.descriptors_run
        );
        return Ok(Verdict::Failed);
    }
    let below_floor = crate::conformance::below_coverage_floor(
        &outcome.coverage,
        &args.require_coverage,
        "fuzz: ",
    );
    Ok(Verdict::failed_if(
        outcome.new_buckets().next().is_some() || below_floor,
    ))
}

/// The descriptors the backend could not run, by reason (the backend's text, escaped).
fn print_skip_reasons(outcome: &dmlcts_fuzz::CampaignOutcome) {
    if outcome.skipped == 0 {
        return;
    }
    crate::say!(
        "fuzz: {} of {} descriptors skipped (not run), by reason:",
        outcome.skipped,
        outcome.descriptors_run
    );
    for (reason, n) in outcome.skip_reasons.iter().take(12) {
        crate::say!("  {n:5}  {}", text::line(reason));
    }
    if outcome.skip_reasons.len() > 12 {
        let more = outcome.skip_reasons.len() - 12;
        let noun = if more == 1 { "reason" } else { "reasons" };
        crate::say!("  ... and {more} more {noun} (see --json)");
    }
}

/// The campaign's options from the command line (the backend's device, the replay settings
/// and the program are filled in once it runs); an expectations file that does not load is
/// an error.
fn campaign_options(args: &FuzzArgs, host: &Host) -> Result<CampaignOptions, CommandError> {
    let backend_name = args.backend.backend.clone();
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    });
    let mut options = CampaignOptions::new(&backend_name, seed);
    options.cases = match (args.cases, args.time) {
        (Some(cases), _) => Some(cases),
        (None, Some(_)) => None,
        (None, None) => Some(10_000),
    };
    options.time = args.time;
    options.op = args.op;
    options.mix = if args.valid_only {
        Mix::ValidOnly
    } else if args.invalid_only {
        Mix::InvalidOnly
    } else {
        Mix::Both
    };
    options.shard = args.shard.unwrap_or(Shard::WHOLE);
    options.pinned_level = args.feature_level;
    options.data_sets = usize::from(args.data_sets);
    options.max_findings = args.max_findings;
    options.shrink_time = args.shrink_time;
    options.out_dir = Some(
        args.out
            .clone()
            .unwrap_or_else(|| host.default_fuzz_out.clone()),
    );
    options.program = host.program.to_string();
    options.env = dmlcts_env();
    // Every option that shaped how the backend ran, for the replay commands.
    options.run_options = args.backend.replay_words();
    if let Some(path) = &args.expectations {
        options
            .run_options
            .extend(["--expectations".to_string(), path.display().to_string()]);
    }
    if let Some(path) = &args.expectations {
        let e = Expectations::load(path)
            .map_err(|e| CommandError::Input(format!("--expectations: {e}")))?;
        options.known_differences = e.known_differences;
        options.not_enforced = e.not_enforced;
    }
    Ok(options)
}

/// Before any backend starts: the `--json` file can be written, and the `--out` folder can be
/// written in and is this campaign's alone (its lock, held by the returned guard); an error
/// if not, so a campaign never loses its cases or its report at the end.
fn check_before_run(
    args: &FuzzArgs,
    options: &CampaignOptions,
) -> Result<Option<dmlcts_fuzz::save::OutFolderLock>, CommandError> {
    if let Some(json) = &args.json {
        let inputs: Vec<(&str, &Path)> = (args.expectations.iter())
            .map(|e| ("--expectations", e.as_path()))
            .chain((args.backend.backend_config.iter()).map(|b| ("--backend-config", b.as_path())))
            .collect();
        crate::preflight::check_distinct(&[("--json", json)], &inputs)?;
    }
    crate::preflight::check_report_files(&[("--json", args.json.as_deref())])?;
    let Some(out) = &options.out_dir else {
        return Ok(None);
    };
    dmlcts_fuzz::save::OutFolderLock::acquire(out)
        .map(Some)
        .map_err(|e| CommandError::Output(format!("--out {}: {e}", out.display())))
}

/// A job's devices: the backend at each level the campaign runs at.
type JobDevices = Vec<Arc<dyn Backend>>;

/// One backend instance per job (out-of-process backends start one process each), each as a
/// device per level the campaign runs at, and the time starting them took; a backend that
/// cannot be made, or not at `--feature-level`, is an error.
fn start_instances(
    args: &FuzzArgs,
    resolver: Resolver<'_>,
    jobs: usize,
) -> Result<(Vec<JobDevices>, Duration), CommandError> {
    let backend_name = args.backend.backend.clone();
    let request = BackendRequest {
        name: backend_name.clone(),
        adapter: args.backend.adapter.clone(),
        directml_dll: args.backend.directml_dll.clone(),
        process_timeout: args.backend.process_timeout,
        backend_config: args.backend.backend_config.clone(),
        ..Default::default()
    };
    let mut instances = Vec::with_capacity(jobs);
    // Starting them (processes, a Python import, a GPU device) is timed apart from the cases.
    let starting = Instant::now();
    for _ in 0..jobs {
        let backend_error = |e| CommandError::Backend(format!("--backend {backend_name}: {e}"));
        let resolved = resolver(&request).map_err(backend_error)?;
        instances.push(devices(resolved, args.feature_level).map_err(backend_error)?);
    }
    let startup = starting.elapsed();
    Ok((instances, startup))
}

/// A backend's devices for a campaign: one at each level it offers (a backend that can act at
/// several: every level where its factory gives a device at that level), or the one asked for
/// with `--feature-level`; a backend that exists at one level only is its own device.
pub fn devices(
    resolved: Resolved,
    pinned: Option<FeatureLevel>,
) -> Result<Vec<Arc<dyn Backend>>, String> {
    let Some(at_level) = resolved.at_level else {
        let own = resolved.backend.feature_level();
        return match pinned {
            Some(level) if level != own => Err(format!(
                "it exists at feature level {own} only; --feature-level {level} cannot be run"
            )),
            _ => Ok(vec![resolved.backend]),
        };
    };
    let wanted = pinned.map_or(FeatureLevel::ALL.to_vec(), |level| vec![level]);
    let offered: Vec<Arc<dyn Backend>> = wanted
        .into_iter()
        .map(|level| (level, at_level(level)))
        .filter(|(level, device)| device.feature_level() == *level)
        .map(|(_, device)| device)
        .collect();
    match (offered.is_empty(), pinned) {
        (false, _) => Ok(offered),
        (true, Some(level)) => Err(format!("it does not offer feature level {level}")),
        (true, None) => Ok(vec![resolved.backend]),
    }
}

/// The campaign's budget, in words.
fn budget_text(options: &CampaignOptions) -> String {
    match (options.cases, options.time) {
        (Some(c), Some(t)) => format!("{c} cases or {} s", t.as_secs_f64()),
        (Some(c), None) => format!("{c} cases"),
        (None, Some(t)) => format!("{} s", t.as_secs_f64()),
        (None, None) => "no budget (until stopped)".to_string(),
    }
}

/// Progress on stderr: one line rewritten in place on a terminal (at most every 200 ms), a
/// line every 10 s otherwise (CI logs).
fn progress_printer() -> impl FnMut(&Progress) {
    let terminal = std::io::stderr().is_terminal();
    let mut last = Instant::now();
    move |p| {
        let mut err = std::io::stderr();
        if terminal {
            if p.finished || last.elapsed() >= Duration::from_millis(200) {
                last = Instant::now();
                let _ = write!(err, "\r\x1b[2K{}", progress_line(p));
                if p.finished {
                    let _ = writeln!(err);
                }
            }
        } else if !p.finished && last.elapsed() >= Duration::from_secs(10) {
            last = Instant::now();
            let _ = writeln!(err, "{}", progress_line(p));
        }
    }
}

/// A new bucket as it is found: its heading, report, saved case and replay (the progress line
/// on a terminal is cleared first).
fn announce_new_bucket(bucket: &Bucket) {
    if std::io::stderr().is_terminal() {
        let _ = write!(std::io::stderr(), "\r\x1b[2K");
    }
    crate::say!("\nfuzz: found a new bucket");
    print_bucket(bucket);
}

/// Each bucket at the end: new ones again (with their hits counted), known, informational.
fn print_buckets(outcome: &CampaignOutcome) {
    if !outcome.buckets.is_empty() {
        crate::say!(
            "\nfuzz: {}:",
            crate::out::count(outcome.buckets.len(), "bucket", "buckets")
        );
    }
    for bucket in &outcome.buckets {
        print_bucket(bucket);
    }
}

/// A bucket: its status, signature, check, operator and level, hits and first case; a new
/// one's report; where its case was saved and how to replay it.
fn print_bucket(bucket: &Bucket) {
    let status = match &bucket.status {
        BucketStatus::New => "NEW".to_string(),
        BucketStatus::Known { name, .. } => format!("known: {}", text::line(name)),
        BucketStatus::Informational { .. } => "informational".to_string(),
    };
    crate::say!(
        "\n[{status}] {} x {}: {} check, {} at feature level {} (first: case {})",
        text::line(&bucket.id),
        bucket.count,
        bucket.kind.name(),
        bucket.case.op.kind(),
        bucket.case.feature_level,
        bucket.first_index,
    );
    if bucket.status == BucketStatus::New {
        if !bucket.reproduced {
            crate::say!("  did not fail again when re-run (flaky?), so it was not shrunk");
        }
        crate::say!("{}", bucket.report);
    }
    if let Some(path) = &bucket.saved {
        crate::say!("  saved: {}", text::line(&path.display().to_string()));
    }
    if let Some(replay) = &bucket.replay {
        crate::say!("  replay: {replay}");
    }
}

/// `--json`: the campaign's report, with the backends' start-up time added.
fn write_json(
    path: &Path,
    options: &CampaignOptions,
    outcome: &CampaignOutcome,
    command: &str,
    startup: Duration,
) -> std::io::Result<()> {
    let mut text = json_report(options, outcome, command);
    if let Ok(mut report) = serde_json::from_str::<serde_json::Value>(&text) {
        report["startup_s"] = serde_json::json!(startup.as_secs_f64());
        report["suite"] = fuzz_suite();
        text = serde_json::to_string_pretty(&report).unwrap_or(text);
    }
    if crate::closing::is_stdout(path) {
        crate::out::report_to_stdout(&text)
    } else {
        dmlcts_harness::report::write::write_report(path, text.as_bytes())
    }
}

/// Which suite made a campaign's cases: its version and commit (the strategies are code).
fn fuzz_suite() -> serde_json::Value {
    serde_json::json!({
        "name": "dmlcts",
        "version": env!("CARGO_PKG_VERSION"),
        "commit": crate::suite::COMMIT,
    })
}

/// `fuzz merge`: the shards' reports into one; its summary and buckets printed, the JSON
/// written where asked. An error for reports that cannot be merged, failed for a new finding.
fn merge_main(args: &MergeArgs) -> CommandResult {
    if args.json.as_deref().is_some_and(crate::closing::is_stdout) {
        crate::out::human_text_to_stderr();
    }
    if let Some(json) = &args.json {
        let inputs: Vec<(&str, &Path)> = (args.reports.iter())
            .map(|r| ("a shard report", r.as_path()))
            .collect();
        crate::preflight::check_distinct(&[("--json", json)], &inputs)?;
    }
    crate::preflight::check_report_files(&[("--json", args.json.as_deref())])?;
    let paths: Vec<&Path> = args.reports.iter().map(PathBuf::as_path).collect();
    let merged = dmlcts_fuzz::merge::merge_reports(&paths)
        .map_err(|e| CommandError::Input(format!("fuzz merge: {e}")))?;
    let buckets = merged["buckets"].as_array().cloned().unwrap_or_default();
    crate::say!(
        "fuzz merge: {} of seed {}: {} cases ({} descriptors)",
        crate::out::count(paths.len(), "shard report", "shard reports"),
        merged["seed"],
        merged["cases_run"],
        merged["descriptors_run"]
    );
    for bucket in &buckets {
        let field = |name: &str| text::line(bucket[name].as_str().unwrap_or("?")).into_owned();
        crate::say!(
            "[{}] {} x {}: {} check, {} at feature level {} (first: case {})",
            field("status"),
            field("signature"),
            bucket["count"],
            field("check"),
            field("operator"),
            field("feature_level"),
            bucket["first_case_index"]
        );
        // Rebuilt by the merge from checked fields; what a shard's report said is only text.
        if bucket["replay"].is_string() {
            crate::say!("  replay: {}", field("replay"));
        }
        if bucket["replay_runs"].is_string() {
            crate::say!("  note: that replay runs {}", field("replay_runs"));
        }
        if let Some(reported) = bucket["reported_replay"].as_str()
            && bucket["replay"].as_str() != Some(reported)
        {
            crate::say!(
                "  the shard's report said (unverified text, not a command): `{}`",
                dmlcts_harness::corpus::read::quoted(reported)
            );
        }
    }
    crate::say!(
        "fuzz merge: {}",
        text::line(merged["summary"].as_str().unwrap_or(""))
    );
    if let Some(line) = merged["coverage"]["line"].as_str() {
        crate::say!("fuzz merge: {}", text::line(line));
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&merged).unwrap_or_default();
        let written = if crate::closing::is_stdout(path) {
            crate::out::report_to_stdout(&text)
        } else {
            dmlcts_harness::report::write::write_report(path, text.as_bytes())
        };
        written.map_err(|e| CommandError::Output(format!("--json {}: {e}", path.display())))?;
    }
    if merged["skipped_everything"] == true {
        crate::say_err!(
            "fuzz merge: FAILED: none of the {} descriptors ran (each was skipped), so nothing \
             was checked",
            merged["descriptors_run"]
        );
        return Ok(Verdict::Failed);
    }
    Ok(Verdict::failed_if(
        merged["new_findings"].as_u64().unwrap_or(0) > 0,
    ))
}
